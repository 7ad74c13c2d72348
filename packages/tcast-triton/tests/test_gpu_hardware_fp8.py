"""All 2**32 float32 inputs on the GPU: the shortcut encoders against the integer encoder.

The hardware conversion (``cvt.rn.satfinite`` for e4m3fn and e5m2) and the float32
nearest-even path (``_codec._rne_magnitude``) are used only where they give the integer
round-and-shift encoder's codes, which is itself checked against tcast_ref (the rest of
this suite). This proves it for every float32 input. GPU only: the interpreter would need
hours, and does not run the hardware conversion.
"""

from __future__ import annotations

import pytest
import torch

import tcast
from tcast import RoundMode
from tcast_triton._env import INTERPRETING
from tcast_triton._formats import ROUND_CODES, fmt
from tcast_triton._kernels import _cast_unscaled

pytestmark = pytest.mark.skipif(
    INTERPRETING or not torch.cuda.is_available(), reason="2**32 inputs: run on a GPU"
)

_CHUNK = 1 << 28
# fields of the format tuple: 18 the float fast path, 22 the hardware conversion
_FAST, _HW = 18, 22


def _codes(x: torch.Tensor, e: tuple, out: torch.Tensor) -> torch.Tensor:
    n = x.numel()
    _cast_unscaled[(triton_cdiv(n, 1024),)](
        x, x, out, n, 0, E=e, MODE=ROUND_CODES[RoundMode.EVEN], IN=0, RS=0, VIRTUAL=False,
        CB=1, NAN_KEEP=True, BLOCK=1024, I64=False, num_warps=4, enable_fp_fusion=False,
    )
    return out


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _mismatches(code: str, field: int, saturate: bool = True) -> tuple[int, int]:
    """(mismatching inputs, inputs) of the shortcut at ``field`` against the integer path."""
    spec = tcast.datatype(code).nspec
    fast = fmt(spec, RoundMode.EVEN, saturate)
    slow = list(fast)
    slow[_FAST] = 0
    slow[_HW] = 0
    slow = tuple(slow)
    if field == _FAST:
        fast = tuple(v if i != _HW else 0 for i, v in enumerate(fast))
    assert fast[field] != 0, f"{code}: the shortcut is not enabled"
    a = torch.empty(_CHUNK, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    bad = 0
    for start in range(0, 1 << 32, _CHUNK):
        bits = torch.arange(start, start + _CHUNK, device="cuda", dtype=torch.int64)
        x = bits.to(torch.int32).view(torch.float32)  # wraps to the negative patterns
        del bits
        bad += int((_codes(x, fast, a) != _codes(x, slow, b)).sum())
    return bad, 1 << 32


@pytest.mark.parametrize("code", ["e4m3fn", "e5m2"])
def test_hardware_conversion_equals_integer_path_on_every_float32(code):
    assert _mismatches(code, _HW) == (0, 1 << 32)


@pytest.mark.parametrize("code", ["e4m3fn", "e5m2", "e3m2f", "e2m3f", "e2m1f", "binary8p3"])
@pytest.mark.parametrize("saturate", [True, False])
def test_float_fast_path_equals_integer_path_on_every_float32(code, saturate):
    assert _mismatches(code, _FAST, saturate) == (0, 1 << 32)
