"""The ints' nearest-even encoder of scaled casts (``_codec._int_even``) against ``encode``.

``encode_finite`` takes ``_int_even`` (a float clamp and one add of ``1.5 * 2**23``) for int
and uint formats under ties to even; it must give ``encode``'s codes for every input but NaN
(which a finite block never holds). On a GPU, for all 2**32 float32 inputs; everywhere, on a
sample: random bit patterns, every kind of tie near the formats' ranges, ±Inf, ±0 and
subnormals.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import tcast
from tcast import RoundMode
from tcast_triton._codec import encode, encode_finite
from tcast_triton._env import INTERPRETING
from tcast_triton._formats import fmt

_BLOCK = 1024


@triton.jit
def _both(x_ptr, fin_ptr, full_ptr, F: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    r = tl.zeros(x.shape, tl.int32)  # no random bits: ties to even
    tl.store(fin_ptr + offs, encode_finite(x, r, F, 0))
    tl.store(full_ptr + offs, encode(x, r, F, 0))


def _inputs() -> np.ndarray:
    rng = np.random.default_rng(5)
    patterns = rng.integers(0, 1 << 32, 1 << 14, dtype=np.uint64).astype(np.uint32)
    k = np.arange(-300, 301, dtype=np.float64)
    big = np.float64(1 << 21) + np.arange(-40, 41)
    ties = np.concatenate([k + 0.5, k - 0.5, big + 0.5, -big - 0.5, 2 * big + 0.5])
    near = np.concatenate([ties, k, big, -big, 2 * big, 4 * big])
    special = [np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.17e-38, 3.4e38, -3.4e38]
    x = np.concatenate(
        [
            patterns.view(np.float32),
            near.astype(np.float32),
            np.nextafter(near.astype(np.float32), np.float32(np.inf)),
            np.nextafter(near.astype(np.float32), np.float32(-np.inf)),
            np.array(special, np.float32),
        ]
    )
    x = x[~np.isnan(x)]
    pad = -len(x) % _BLOCK
    return np.concatenate([x, np.zeros(pad, np.float32)])


@pytest.mark.parametrize("code", ["int8", "int4", "uint8", "int2", "uint2", "int16", "uint22"])
def test_int_even_equals_the_full_encoder(code, device):
    e = fmt(tcast.number(code), RoundMode.EVEN, True)
    x = torch.from_numpy(_inputs()).to(device)
    fin = torch.empty(x.numel(), dtype=torch.int32, device=device)
    full = torch.empty_like(fin)
    _both[(x.numel() // _BLOCK,)](x, fin, full, F=e, BLOCK=_BLOCK)
    bad = torch.nonzero(fin != full).flatten()[:5].cpu()
    assert bad.numel() == 0, [(float(x[i]), int(fin[i]), int(full[i])) for i in bad]


_CHUNK = 1 << 28


@pytest.mark.skipif(
    INTERPRETING or not torch.cuda.is_available(), reason="2**32 inputs: run on a GPU"
)
@pytest.mark.parametrize("code", ["int8", "int4", "uint8", "int2", "int16", "uint22", "int22"])
def test_int_even_equals_the_full_encoder_on_every_non_nan_float32(code):
    """The same on all 2**32 float32 patterns but the NaNs (±Inf, subnormals, -0 included)."""
    e = fmt(tcast.number(code), RoundMode.EVEN, True)
    fin = torch.empty(_CHUNK, dtype=torch.int32, device="cuda")
    full = torch.empty_like(fin)
    bad = checked = 0
    for start in range(0, 1 << 32, _CHUNK):
        x = torch.arange(start, start + _CHUNK, device="cuda", dtype=torch.int64)
        x = x.to(torch.int32).view(torch.float32)  # wraps to the negative patterns
        _both[(_CHUNK // _BLOCK,)](x, fin, full, F=e, BLOCK=_BLOCK)
        real = ~torch.isnan(x)
        bad += int(((fin != full) & real).sum())
        checked += int(real.sum())
    assert bad == 0
    assert checked == (1 << 32) - 2 * ((1 << 23) - 1)  # every pattern but the NaNs
