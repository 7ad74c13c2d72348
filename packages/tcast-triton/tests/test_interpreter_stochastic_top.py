"""Stochastic codes of scaled casts built in the word's top bits (``_codec._stochastic_top``).

``encode_finite`` rounds sign-magnitude float formats with -0 (``_codec._top_signed``: FP8
e4m3fn and e5m2, FP6, FP4, and wider ones up to 15 bits, with 16 random bits)
stochastically by adding the random bits to the magnitude shifted so that the code lands in
the top bits of the word, where the sign joins it by one OR. It must give the integer
encoder's codes (``encode`` with the shortcuts off, itself checked against tcast_ref) for
every input but NaN and every K-bit random field. Everywhere, on a sample: random bit
patterns, grid points of the format (every one of the 8-bit formats, the ends and a sample
of the wider ones) and the points between them with the fractions the random bits decide
on, ±Inf, ±0 and subnormals, against random fields with 0 and 2**K - 1 among them; on a
GPU, for all 2**32 float32 inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import tcast
from tcast import RoundMode
from tcast_triton._codec import _top_signed, encode, encode_finite
from tcast_triton._env import INTERPRETING
from tcast_triton._formats import ROUND_CODES, fmt

_BLOCK = 1024
_STOCH_C = tl.constexpr(ROUND_CODES[RoundMode.STOCHASTIC])
# fields of the format tuple: the float shortcut, the hardware conversion
_FAST, _HW = 18, 22

#: The formats the top-bits encoder takes (8 random bits, and 16 for the widest two), and
#: two without -0 that it leaves to the magnitude path
TOP = ["e4m3fn", "e5m2", "e3m2f", "e2m3f", "e2m1f", "e5m7", "e7m7fn"]
OTHERS = ["e4m3b8fnuz", "binary8p3"]


@triton.jit
def _both(x_ptr, r_ptr, fin_ptr, full_ptr, F: tl.constexpr, G: tl.constexpr, BLOCK: tl.constexpr):
    """``encode_finite`` with format tuple ``F`` beside ``encode`` with ``G``."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    r = tl.load(r_ptr + offs)  # codec words: the K random bits at the top
    tl.store(fin_ptr + offs, encode_finite(x, r, F, _STOCH_C))
    tl.store(full_ptr + offs, encode(x, r, G, _STOCH_C))


def _formats(code: str) -> tuple[tuple, tuple]:
    """(the format tuple with its shortcuts, the same with the integer encoder only)."""
    fast = fmt(tcast.number(code), RoundMode.STOCHASTIC, True)
    slow = tuple(0 if i in (_FAST, _HW) else v for i, v in enumerate(fast))
    return fast, slow


def _inputs(code: str) -> np.ndarray:
    """Random patterns, the format's grid and the fractions between its points, specials."""
    spec = tcast.number(code)
    rng = np.random.default_rng(11)
    patterns = rng.integers(0, 1 << 32, 1 << 14, dtype=np.uint64).astype(np.uint32)
    values = (abs(tcast.exact.decode(c, spec)) for c in range(1 << spec.bits))
    grid = np.array(sorted({v for v in values if np.isfinite(v)}))
    if len(grid) > 512:  # the ends of a wide format's grid and a sample between them
        inner = rng.choice(np.arange(32, len(grid) - 32), 448, replace=False)
        keep = np.concatenate([np.arange(32), inner, np.arange(len(grid) - 32, len(grid))])
        grid_lo, grid_hi = grid[np.sort(keep)[:-1]], grid[np.sort(keep)[:-1] + 1]
    else:
        grid_lo, grid_hi = grid[:-1], grid[1:]
    # fractions of a grid step: those K random bits split, and the ones just beside them
    frac = np.concatenate([np.arange(0, 257) / 256.0, [1e-7, 0.5 - 1e-7, 0.5 + 1e-7, 1 - 1e-7]])
    between = (grid_lo[:, None] + (grid_hi - grid_lo)[:, None] * frac[None, :]).ravel()
    f32max = float(np.finfo(np.float32).max)
    beyond = np.minimum(grid[-1] * np.array([1.0, 1.0 + 1e-7, 1.01, 2.0, 1e30]), f32max)
    near = np.concatenate([between, beyond]).astype(np.float32)
    special = np.array([np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45, 1.17e-38, 3.4e38], np.float32)
    x = np.concatenate([patterns.view(np.float32), near, -near, special])
    x = x[~np.isnan(x)]
    pad = -len(x) % _BLOCK
    return np.concatenate([x, np.zeros(pad, np.float32)])


def _thresholds(code: str, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Points ``m / 2**K`` of a grid step above a grid point, each with the random fields
    ``2**K - m`` (the smallest that rounds up) and one less: every bit of the field decides.

    The points are exact in float32 for the formats of fast stochastic rounding (their
    rounding position leaves at least K bits below it); signs alternate.
    """
    spec = tcast.number(code)
    rng = np.random.default_rng(13)
    values = (abs(tcast.exact.decode(c, spec)) for c in range(1 << spec.bits))
    grid = np.array(sorted({v for v in values if np.isfinite(v)}))
    i = rng.integers(0, len(grid) - 1, 4096)
    m = rng.integers(1, 1 << k, 4096)
    x = grid[i] + (grid[i + 1] - grid[i]) * m / float(1 << k)
    assert np.all(x.astype(np.float32).astype(np.float64) == x)  # exact points
    x = np.repeat(x * np.resize([1.0, -1.0], len(x)), 2).astype(np.float32)
    r = np.stack([(1 << k) - m, (1 << k) - m - 1], axis=1).ravel()
    return x, (r.astype(np.int64) << (32 - k)).astype(np.uint32).view(np.int32)


def _words(n: int, k: int) -> np.ndarray:
    """Codec words of n random K-bit fields, 0 and 2**K - 1 among them."""
    rng = np.random.default_rng(12)
    r = rng.integers(0, 1 << k, n, dtype=np.int64)
    r[:64] = np.tile([0, (1 << k) - 1], 32)
    return (r << (32 - k)).astype(np.uint32).view(np.int32)


def test_the_top_bits_encoder_takes_exactly_the_sign_magnitude_formats_with_negative_zero():
    assert all(_top_signed(_formats(c)[0]) for c in TOP)
    assert not any(_top_signed(_formats(c)[0]) for c in OTHERS)


@pytest.mark.parametrize("code", TOP + OTHERS)
def test_stochastic_scaled_codes_equal_the_integer_encoder(code, device):
    fast, slow = _formats(code)
    k = tcast.rbits_width(code)
    xs = _inputs(code)
    xt, rt = _thresholds(code, k)
    x = torch.from_numpy(np.concatenate([xs, xt])).to(device)
    r = torch.from_numpy(np.concatenate([_words(len(xs), k), rt])).to(device)
    fin = torch.empty(x.numel(), dtype=torch.int32, device=device)
    full = torch.empty_like(fin)
    _both[(x.numel() // _BLOCK,)](x, r, fin, full, F=fast, G=slow, BLOCK=_BLOCK)
    bad = torch.nonzero(fin != full).flatten()[:5].cpu()
    assert bad.numel() == 0, [(float(x[i]), int(r[i]), int(fin[i]), int(full[i])) for i in bad]


_CHUNK = 1 << 28


@pytest.mark.skipif(
    INTERPRETING or not torch.cuda.is_available(), reason="2**32 inputs: run on a GPU"
)
@pytest.mark.parametrize("code", TOP)
def test_stochastic_scaled_codes_equal_the_integer_encoder_on_every_non_nan_float32(code):
    """The same on all 2**32 float32 patterns but the NaNs, each with a random K-bit field."""
    fast, slow = _formats(code)
    k = tcast.rbits_width(code)
    fin = torch.empty(_CHUNK, dtype=torch.int32, device="cuda")
    full = torch.empty_like(fin)
    gen = torch.Generator(device="cuda").manual_seed(99)
    bad = checked = 0
    for start in range(0, 1 << 32, _CHUNK):
        x = torch.arange(start, start + _CHUNK, device="cuda", dtype=torch.int64)
        x = x.to(torch.int32).view(torch.float32)  # wraps to the negative patterns
        r = torch.randint(0, 1 << k, (_CHUNK,), generator=gen, device="cuda", dtype=torch.int64)
        r = (r << (32 - k)).to(torch.int32)  # codec words (wrapping to int32)
        _both[(_CHUNK // _BLOCK,)](x, r, fin, full, F=fast, G=slow, BLOCK=_BLOCK)
        real = ~torch.isnan(x)
        bad += int(((fin != full) & real).sum())
        checked += int(real.sum())
    assert bad == 0
    assert checked == (1 << 32) - 2 * ((1 << 23) - 1)
