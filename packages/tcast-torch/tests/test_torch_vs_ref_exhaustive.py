"""tcast_torch against tcast_ref on every float16 and every bfloat16 bit pattern.

Every named float format of at most 8 bits in the catalog (and the unscaled 16-bit
datatypes), under every round mode (stochastic with explicit rbits and with a seed) and
both ``saturate`` settings: the codes (actual), the packed bytes (compress), the virtual
result in the input dtype and the float32 upcast, compared as raw bits. The elementwise
``encode``/``decode`` of int and exponent specs are swept the same way.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import tcast
import tcast_ref
import tcast_torch

_SMALL = {
    dt.nspec.code
    for dt in tcast.CATALOG.values()
    if dt.sspec is None and dt.nspec.is_float and dt.nspec.bits <= 8
}
FORMATS = [*sorted(_SMALL), "bfloat16", "float16"]
ROUND_MODES = [m.value for m in tcast.RoundMode]
SEED = 0xDEADBEEF12345678


def _all_patterns(dtype: str) -> tuple[np.ndarray, torch.Tensor]:
    """Every 16-bit pattern as a NumPy array (ml_dtypes for bfloat16) and a torch tensor."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    if dtype == "float16":
        return bits.view(np.float16), torch.from_numpy(bits.view(np.int16)).view(torch.float16)
    return (
        bits.view(ml_dtypes.bfloat16),
        torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16),
    )


def _u(t: torch.Tensor) -> np.ndarray:
    """Raw bits of a torch tensor as unsigned NumPy integers (uint16/32 via signed views)."""
    t = t.contiguous()
    signed = {
        torch.float32: torch.int32,
        torch.uint32: torch.int32,
        torch.float16: torch.int16,
        torch.bfloat16: torch.int16,
        torch.uint16: torch.int16,
    }
    if t.dtype in signed:
        a = t.view(signed[t.dtype]).numpy()
        return a.view(np.uint32 if a.itemsize == 4 else np.uint16)
    return t.numpy()


def _raw(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.itemsize])


def _rbits(rng: np.random.Generator, shape: tuple[int, ...], width: int) -> np.ndarray:
    """Random ``width``-bit integers (uint8 or uint16, SEMANTICS.md §3.3), the first two the
    extremes 0 and 2**width - 1."""
    r = rng.integers(0, 1 << width, size=shape).astype(np.uint8 if width == 8 else np.uint16)
    r[:2] = (0, (1 << width) - 1)
    return r


def _torch_rbits(rbits: np.ndarray, signed: bool = False) -> torch.Tensor:
    """NumPy uint8/uint16 bits as torch.uint8/uint16, or as the same bits int8/int16."""
    t = torch.from_numpy(rbits.view(np.int8 if rbits.itemsize == 1 else np.int16))
    return t if signed else t.view(torch.uint8 if rbits.itemsize == 1 else torch.uint16)


def _check(fmt, xn, xt, mode, saturate, rbits_np=None, seed=None):
    kw = {"roundmode": mode, "saturate": saturate, "seed": seed}
    rb_t = None if rbits_np is None else _torch_rbits(rbits_np)
    where = f"{fmt} {xn.dtype} {mode} saturate={saturate} seed={seed}"
    v_t = tcast_torch.cast(xt, fmt, rbits=rb_t, **kw)
    v_r = tcast_ref.cast(xn, fmt, rbits=rbits_np, **kw)
    assert v_t.dtype == xt.dtype
    np.testing.assert_array_equal(_u(v_t), _raw(v_r), err_msg=f"virtual {where}")
    a_t = tcast_torch.cast(xt, fmt, castmode="actual", rbits=rb_t, **kw)
    a_r = tcast_ref.cast(xn, fmt, castmode="actual", rbits=rbits_np, **kw)
    np.testing.assert_array_equal(_u(a_t.data), a_r.data, err_msg=f"codes {where}")
    up_t, up_r = tcast_torch.upcast(a_t), tcast_ref.upcast(a_r)
    assert up_t.dtype == torch.float32
    np.testing.assert_array_equal(_u(up_t), _raw(up_r), err_msg=f"upcast {where}")
    c_t = tcast_torch.cast(xt, fmt, castmode="compress", rbits=rb_t, **kw)
    c_r = tcast_ref.cast(xn, fmt, castmode="compress", rbits=rbits_np, **kw)
    assert c_t.data.dtype == torch.uint8 and c_t.data.dim() == 1
    assert c_t.data.numpy().tobytes() == c_r.data.tobytes(), f"compress {where}"
    np.testing.assert_array_equal(
        _u(tcast_torch.upcast(c_t)), _raw(up_r), err_msg=f"compress upcast {where}"
    )


# Fast tier (make test): every format under even and one other mode, the others rotated over
# the formats so that each meets a quarter of them; the full tier (-m full) runs every mode.
_OTHER_MODES = [m for m in ROUND_MODES if m != "even"]
_EXHAUSTIVE_CASES = [
    pytest.param(
        fmt,
        mode,
        id=f"{fmt}-{mode}",
        marks=() if mode in ("even", _OTHER_MODES[i % len(_OTHER_MODES)]) else pytest.mark.full,
    )
    for i, fmt in enumerate(FORMATS)
    for mode in ROUND_MODES
]


@pytest.mark.parametrize(("fmt", "mode"), _EXHAUSTIVE_CASES)
def test_every_16_bit_input_pattern_matches_the_reference(fmt, mode):
    rng = np.random.default_rng(7)
    for dtype in ("float16", "bfloat16"):
        xn, xt = _all_patterns(dtype)
        rbits = _rbits(rng, xn.shape, tcast.rbits_width(fmt))
        for saturate in (True, False):
            if mode == "stochastic":
                _check(fmt, xn, xt, mode, saturate, rbits_np=rbits)
                _check(fmt, xn, xt, mode, saturate, seed=SEED)
            else:
                _check(fmt, xn, xt, mode, saturate)


@pytest.mark.parametrize(
    "code",
    [
        "int8",
        "int4",
        "uint8",
        "uint4",
        "int2",
        "int16",
        "uint16",
        "int24",
        "int25",
        "int32",
        "uint32",
        "e8m0",
        "e5m0",
        "e6m0b40",
        "e4m3fn",
        "e8m3b140",
    ],
)
def test_elementwise_encode_and_decode_of_every_kind_match_the_reference(code):
    """Ints (narrow and wide), exponent types and floats below float32's normals."""
    spec = tcast.number(code)
    rng = np.random.default_rng(11)
    for dtype in ("float16", "bfloat16"):
        xn, _xt = _all_patterns(dtype)
        x32 = xn.astype(np.float32)
        with np.errstate(invalid="ignore", over="ignore"):  # NaN patterns, on purpose
            x32 = np.concatenate([x32, x32 * np.float32(2.0**20), x32 * np.float32(2.0**-60)])
        xt32 = torch.from_numpy(x32.copy())
        # both encodes take K-bit integers (spec.rbits_width); torch's as the unsigned
        # dtype, or (float16 inputs) the same bits signed
        rbits = _rbits(rng, x32.shape, spec.rbits_width)
        rb_t = _torch_rbits(rbits, signed=dtype == "float16")
        for mode in ROUND_MODES:
            for saturate in (True, False):
                rb = rbits if mode == "stochastic" else None
                got = tcast_torch.encode(
                    xt32, spec, mode, rb_t if rb is not None else None, saturate
                )
                with np.errstate(all="ignore"):  # the reference warns on signalling NaN
                    want = tcast_ref.encode(x32, spec, mode, rb, saturate)
                np.testing.assert_array_equal(
                    got.numpy().astype(np.int64) & ((1 << spec.bits) - 1),
                    want.astype(np.int64),
                    err_msg=f"{code} {mode} {saturate}",
                )
    codes = np.arange(min(1 << spec.bits, 1 << 16), dtype=np.int64)
    if spec.bits > 16:  # the extremes and a spread of wide codes
        codes = np.concatenate(
            [codes, (1 << spec.bits) - 1 - codes, rng.integers(0, 1 << spec.bits, 1 << 16)]
        )
    signed = np.where(codes >= 1 << 31, codes - (1 << 32), codes).astype(np.int32)
    got = tcast_torch.decode(torch.from_numpy(signed), spec)
    want = tcast_ref.decode(codes.astype(np.uint32), spec)
    np.testing.assert_array_equal(_u(got), _raw(want), err_msg=f"decode {code}")
