"""torch, NumPy and ml_dtypes dtype objects as tcast formats, checked bit for bit.

Every dtype object that maps to a tcast number format must decode every code (every code of
formats up to 16 bits; a sample of the 32-bit ones) to the value the library itself gives it;
every other dtype is refused with a SpecError naming it.
"""

from __future__ import annotations

import math
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import torch

import tcast
from tcast import SpecError
from tcast.exact import decode

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}


def _codes(bits: int) -> np.ndarray:
    if bits <= 16:
        return np.arange(1 << bits, dtype=np.uint64)
    rng = np.random.default_rng(bits)
    edges = [0, 1, (1 << (bits - 1)) - 1, 1 << (bits - 1), (1 << bits) - 1]
    return np.unique(np.concatenate([edges, rng.integers(0, 1 << bits, 1 << 14)])).astype(np.uint64)


def _same(got: float, want: float) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    return got == want and math.copysign(1, got) == math.copysign(1, want)


def _check(obj, values_of) -> None:
    """tcast's decode of every code equals the library's (``values_of(codes) -> floats``)."""
    n = tcast.number(obj)
    codes = _codes(n.bits)
    theirs = values_of(codes, n.bits)
    bad = [
        int(c) for c, v in zip(codes, theirs, strict=True) if not _same(float(v), decode(int(c), n))
    ]
    assert not bad, f"{obj} -> {n.code}: codes {bad[:8]} decode differently"


def _numpy_values(dtype):
    def values(codes, bits):
        width = max(1, np.dtype(dtype).itemsize)
        v = codes.astype(_UINT[width]).view(dtype)
        if np.dtype(dtype).name.startswith(("int", "uint")):
            return v.astype(np.int64)
        with np.errstate(invalid="ignore"):  # signaling NaN codes
            return v.astype(np.float64)

    return values


ML_DTYPES = [
    t
    for t in (getattr(ml_dtypes, n) for n in dir(ml_dtypes))
    if isinstance(t, type) and issubclass(t, np.generic)
]
NUMPY_TYPES = [np.float16, np.float32, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32]


@pytest.mark.parametrize("t", ML_DTYPES + NUMPY_TYPES, ids=lambda t: t.__name__)
def test_numpy_and_ml_dtypes_types_map_bit_exactly_or_are_refused(t):
    try:
        n = tcast.number(t)
    except SpecError as err:
        assert t.__name__ in str(err) and "no tcast number format" in str(err)
        # only complex types and 1-bit ints have no tcast format
        assert "complex" in t.__name__ or t.__name__ in ("int1", "uint1"), t
        return
    assert tcast.number(np.dtype(t)) == n  # the dtype object maps as its scalar type does
    _check(t, _numpy_values(t))


TORCH_FLOATS = [
    torch.float8_e4m3fn,
    torch.float8_e5m2,
    torch.float8_e4m3fnuz,
    torch.float8_e5m2fnuz,
    torch.float8_e8m0fnu,
    torch.float16,
    torch.bfloat16,
    torch.float32,
]
TORCH_INTS = [torch.int8, torch.uint8, torch.int16, torch.uint16, torch.int32, torch.uint32]


@pytest.mark.parametrize("dt", TORCH_FLOATS + TORCH_INTS, ids=str)
def test_torch_dtypes_map_bit_exactly(dt):
    signed = {1: torch.uint8, 2: torch.int16, 4: torch.int32}

    def values(codes, bits):
        width = torch.empty(0, dtype=dt).element_size()
        raw = torch.from_numpy(
            codes.astype(_UINT[width]).view({1: np.uint8, 2: np.int16, 4: np.int32}[width])
        )
        v = raw.view(signed[width]).view(dt)
        if dt.is_floating_point:
            return v.to(torch.float64).tolist()
        return (
            v.to(torch.int64).tolist()
            if width < 4 or dt == torch.int32
            else (v.view(torch.int32).to(torch.int64) & 0xFFFFFFFF).tolist()
        )

    _check(dt, values)


def test_torch_float4_x2_is_the_e2m1f_element_format_packed_two_per_byte():
    # torch has no float conversion of float4_e2m1fn_x2: its element format is e2m1fn, the
    # same as ml_dtypes.float4_e2m1fn, which the test above checks bit for bit
    assert tcast.number(torch.float4_e2m1fn_x2) == tcast.number(ml_dtypes.float4_e2m1fn)
    assert tcast.datatype(torch.float4_e2m1fn_x2).nspec.code == "e2m1f"


@pytest.mark.parametrize("k", range(2, 8))
def test_torch_sub_byte_int_names_map_to_the_int_formats_of_their_width(k):
    assert tcast.number(getattr(torch, f"int{k}")) == tcast.number(f"int{k}")
    assert tcast.number(getattr(torch, f"uint{k}")) == tcast.number(f"uint{k}")


@pytest.mark.parametrize(
    "dt",
    [
        torch.float64,
        torch.bool,
        torch.complex64,
        torch.int64,
        torch.uint64,
        torch.quint8,
        torch.qint8,
        torch.int1,
        torch.bits8,
        np.float64,
        np.dtype("float64"),
        np.bool_,
        np.complex64,
        np.longdouble,
    ],
    ids=str,
)
def test_dtypes_without_a_tcast_format_are_refused_naming_them(dt):
    with pytest.raises(SpecError, match="has no tcast number format") as info:
        tcast.number(dt)
    names = (
        {str(dt)}
        if isinstance(dt, torch.dtype)
        else {np.dtype(dt).name, getattr(dt, "__name__", "")} - {""}
    )
    assert any(n in str(info.value) for n in names), (names, str(info.value))
    with pytest.raises(SpecError):
        tcast.datatype(dt)


def test_datatype_and_cast_take_foreign_dtypes():
    assert tcast.datatype(torch.float8_e4m3fn) is tcast.CATALOG["float8_e4m3fn"]
    assert tcast.datatype(ml_dtypes.float8_e5m2) is tcast.CATALOG["float8_e5m2"]
    assert tcast.datatype(torch.int8, "float32_t32") == tcast.datatype("int8", "float32_t32")
    x = torch.randn(4, 32)
    got = tcast.cast(x, torch.float8_e4m3fn)
    want = x.to(torch.float8_e4m3fn).float()  # torch's own RNE, saturating at 448 here
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))
    xn = np.linspace(-3, 3, 64, dtype=np.float32)
    got_n = tcast.cast(xn, ml_dtypes.bfloat16)
    assert np.array_equal(
        got_n.view(np.uint32), xn.astype(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32)
    )


def test_import_tcast_still_imports_no_array_library():
    code = (
        "import sys, tcast; tcast.number('e4m3fn'); "
        "bad = [m for m in ('numpy', 'torch', 'ml_dtypes') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
