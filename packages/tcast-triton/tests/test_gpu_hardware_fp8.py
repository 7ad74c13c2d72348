"""All 2**32 float32 inputs on the GPU: the shortcut encoders against the integer encoder.

The hardware conversion (``cvt.rn.satfinite`` for e4m3fn and e5m2) and the float32
rounding paths (``_codec.fast_round`` for floats, ``_codec._encode_int_float`` for ints
of at most 22 bits, every round mode; ``_codec._int_even`` in ``test_interpreter_int_even.py``)
are used only where they give the integer
round-and-shift encoder's codes, which is itself checked against tcast_ref (the rest of
this suite). This proves it for every float32 input (stochastic rounding: with K random
bits per input, the same for both paths). GPU only: the interpreter would need hours, and
does not run the hardware conversion.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

import tcast
from tcast import RoundMode
from tcast_triton._codec import hw_bytes, hw_bytes_kept
from tcast_triton._env import INTERPRETING
from tcast_triton._formats import ROUND_CODES, fmt
from tcast_triton._kernels import _cast_unscaled

pytestmark = pytest.mark.skipif(
    INTERPRETING or not torch.cuda.is_available(), reason="2**32 inputs: run on a GPU"
)

_CHUNK = 1 << 28
# fields of the format tuple: the fast path, the hardware conversion, fast stochastic rounding
_FAST, _HW, _SRF = 18, 22, 28


def _codes(
    x: torch.Tensor, e: tuple, out: torch.Tensor, mode: RoundMode, rb: torch.Tensor
) -> torch.Tensor:
    n = x.numel()
    stochastic = mode is RoundMode.STOCHASTIC
    _cast_unscaled[(triton_cdiv(n, 1024),)](
        x,
        rb,
        out,
        n,
        0,  # seed
        0,  # stream
        E=e,
        MODE=ROUND_CODES[mode],
        IN=0,
        RS=2 if stochastic else 0,
        VIRTUAL=False,
        CB=out.element_size(),
        BLOCK=1024,
        I64=False,
        num_warps=4,
        enable_fp_fusion=False,
    )
    return out


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _mismatches(
    code: str, field: int, saturate: bool = True, mode: RoundMode = RoundMode.EVEN
) -> tuple[int, int]:
    """(mismatching inputs, inputs) of the shortcut at ``field`` against the integer path."""
    spec = tcast.number(code)
    fast = fmt(spec, mode, saturate)
    slow = list(fast)
    slow[_FAST] = 0
    slow[_HW] = 0
    slow = tuple(slow)
    if field == _FAST:
        fast = tuple(v if i != _HW else 0 for i, v in enumerate(fast))
    assert fast[field] != 0, f"{code}: the shortcut is not enabled"
    if mode is RoundMode.STOCHASTIC and spec.kind is tcast.Kind.FLOAT:
        assert fast[_SRF] != 0, f"{code}: stochastic rounding does not take the shortcut"
    dt = torch.uint8 if spec.bits <= 8 else torch.uint16 if spec.bits <= 16 else torch.uint32
    k = tcast.rbits_width(spec)
    rdt = torch.int8 if k == 8 else torch.int16
    a = torch.empty(_CHUNK, dtype=dt, device="cuda")
    b = torch.empty_like(a)
    gen = torch.Generator(device="cuda").manual_seed(1234)
    bad = 0
    for start in range(0, 1 << 32, _CHUNK):
        bits = torch.arange(start, start + _CHUNK, device="cuda", dtype=torch.int64)
        x = bits.to(torch.int32).view(torch.float32)  # wraps to the negative patterns
        del bits
        rb = x
        if mode is RoundMode.STOCHASTIC:
            # K random bits per input (SEMANTICS.md §3.3), as the engine passes them: int8
            # (the bits of uint8) for K = 8, int16 for K = 16; 0 and 2**K - 1 among them
            half = 1 << (k - 1)
            rb = torch.randint(-half, half, (_CHUNK,), generator=gen, device="cuda", dtype=rdt)
            rb[:4096] = torch.tensor([0, -1], dtype=rdt, device="cuda").repeat(2048)
        bad += int((_codes(x, fast, a, mode, rb) != _codes(x, slow, b, mode, rb)).sum())
    return bad, 1 << 32


@pytest.mark.parametrize("code", ["e4m3fn", "e5m2"])
def test_hardware_conversion_equals_integer_path_on_every_float32(code):
    assert _mismatches(code, _HW) == (0, 1 << 32)


@pytest.mark.parametrize("code", ["e4m3fn", "e5m2", "e3m2f", "e2m3f", "e2m1f", "binary8p3"])
@pytest.mark.parametrize("saturate", [True, False])
def test_float_fast_path_equals_integer_path_on_every_float32(code, saturate):
    assert _mismatches(code, _FAST, saturate) == (0, 1 << 32)


_MODES = [RoundMode.AWAY, RoundMode.ZERO, RoundMode.TRUNC, RoundMode.STOCHASTIC]


@pytest.mark.parametrize("mode", _MODES, ids=lambda m: m.value)
@pytest.mark.parametrize(
    "code", ["e4m3fn", "e5m2", "e3m2f", "e2m3f", "e2m1f", "binary8p3", "e4m3b8fnuz", "e5m7"]
)
def test_float_fast_path_in_every_round_mode_equals_integer_path_on_every_float32(code, mode):
    assert _mismatches(code, _FAST, True, mode) == (0, 1 << 32)


@pytest.mark.parametrize("mode", [RoundMode.EVEN, *_MODES], ids=lambda m: m.value)
@pytest.mark.parametrize("code", ["int8", "int4", "uint8", "int2", "int16", "uint22"])
def test_int_float_path_equals_shift_path_on_every_float32(code, mode):
    assert _mismatches(code, _FAST, True, mode) == (0, 1 << 32)


@triton.jit
def _kept(x_ptr, keep_ptr, kept_ptr, F: tl.constexpr, BR: tl.constexpr, BC: tl.constexpr,
          AXIS: tl.constexpr):  # fmt: skip
    """``hw_bytes_kept(x, keep)`` of one [BR, BC] block.

    ``keep`` per row (``AXIS`` 1, as row tiles) or per column (``AXIS`` 0, column tiles).
    """
    p = tl.program_id(0)
    offs = p * BR * BC + tl.arange(0, BR)[:, None] * BC + tl.arange(0, BC)[None, :]
    x = tl.load(x_ptr + offs)
    if AXIS == 1:
        keep = tl.expand_dims(tl.load(keep_ptr + p * BR + tl.arange(0, BR)), 1)
    else:
        keep = tl.expand_dims(tl.load(keep_ptr + p * BC + tl.arange(0, BC)), 0)
    tl.store(kept_ptr + offs, hw_bytes_kept(x, keep, F))


@triton.jit
def _converted(x_ptr, out_ptr, F: tl.constexpr, BLOCK: tl.constexpr):
    """``hw_bytes(x)`` of a flat block (the layout the 2**32 tests above prove)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, hw_bytes(tl.load(x_ptr + offs), F))


@pytest.mark.parametrize("code", ["e4m3fn", "e5m2"])
@pytest.mark.parametrize(
    ("rows", "cols", "axis", "warps"),
    [(128, 32, 1, 4), (32, 128, 0, 1), (8, 16, 0, 8), (2, 2, 1, 4), (1, 4, 1, 1)],
)
def test_packed_kept_codes_are_the_conversion_masked(code, rows, cols, axis, warps):
    """The inline PTX of ``hw_bytes_kept`` (four conversions and the keep mask to a word)
    gives the conversion's bytes in element order, zero where the keep byte is 0, for every
    float32 input and layouts of one to many elements per thread.

    The expected bytes come from a separate flat-layout kernel of ``hw_bytes``: computed
    beside the inline PTX in the [32, 128] one-warp kernel, Triton's own conversion leaves
    about a tenth of its bytes unwritten on an H200, while the PTX's bytes equal torch's
    conversion."""
    e = fmt(tcast.number(code), RoundMode.EVEN, True)
    assert e[_HW] != 0
    g = torch.Generator(device="cuda").manual_seed(1)
    bad = kept_nonzero = 0
    for start in range(0, 1 << 32, _CHUNK):
        x = torch.arange(start, start + _CHUNK, device="cuda", dtype=torch.int64)
        x = x.to(torch.int32).view(torch.float32)
        lanes = _CHUNK // (cols if axis == 1 else rows)
        keep = (torch.randint(0, 2, (lanes,), generator=g, device="cuda") * 255).to(torch.uint8)
        kept = torch.empty(_CHUNK, dtype=torch.uint8, device="cuda")
        conv = torch.empty_like(kept)
        _kept[(_CHUNK // (rows * cols),)](
            x, keep, kept, F=e, BR=rows, BC=cols, AXIS=axis, num_warps=warps
        )
        _converted[(_CHUNK // 1024,)](x, conv, F=e, BLOCK=1024)
        if axis == 1:
            per = keep.repeat_interleave(cols)
        else:
            per = keep.view(-1, 1, cols).expand(-1, rows, cols).reshape(-1)
        masked = conv & per
        bad += int((kept != masked).sum())
        kept_nonzero += int((kept != 0).sum())
    assert bad == 0
    assert kept_nonzero > 1 << 29  # about half of the kept half of 2**32 codes are nonzero
