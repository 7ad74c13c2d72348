"""tcast.native on NumPy results: codes viewed as ml_dtypes/NumPy dtypes of the same bits.

The proof that the name mapping is right is ml_dtypes' own decoding: every code of every
format with a twin, read by ml_dtypes, equals tcast's upcast of it, bit for bit.
"""

from __future__ import annotations

import dataclasses
import math
import struct

import ml_dtypes
import numpy as np
import pytest

import tcast
import tcast_ref

#: Element and scale codes with an ml_dtypes/NumPy twin, and its name (written out here, not
#: read from the package). e4m3 is spelled e4m3b7 where a datatype is built from it.
TWINS = {
    "e4m3fn": "float8_e4m3fn",
    "e5m2": "float8_e5m2",
    "e4m3b8fnuz": "float8_e4m3fnuz",
    "e5m2b16fnuz": "float8_e5m2fnuz",
    "e4m3b11fnuz": "float8_e4m3b11fnuz",
    "e4m3": "float8_e4m3",
    "e3m4": "float8_e3m4",
    "e8m0": "float8_e8m0fnu",
    "e2m3f": "float6_e2m3fn",
    "e3m2f": "float6_e3m2fn",
    "e2m1f": "float4_e2m1fn",
    "bfloat16": "bfloat16",
    "float16": "float16",
    "float32": "float32",
    "int2": "int2",
    "int4": "int4",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "uint2": "uint2",
    "uint4": "uint4",
    "uint8": "uint8",
    "uint16": "uint16",
    "uint32": "uint32",
}


def _specs(dt: tcast.DataType) -> dict[str, object]:
    specs = {
        "data": dt.nspec,
        "scale": dt.sspec.scale if dt.sspec else None,
        "zero": dt.zero,
        "tenscale": dt.tenscale,
    }
    return {k: v for k, v in specs.items() if v is not None}


@pytest.mark.parametrize("castmode", ["actual", "compress"])
def test_every_catalog_part_with_a_twin_is_a_view_of_its_codes_and_the_rest_keep_codes(castmode):
    x = np.random.default_rng(3).standard_normal((4, 64)).astype(np.float32) * 7
    viewed = kept = 0
    for name, dt in tcast.CATALOG.items():
        if dt.nspec.kind is tcast.Kind.UINT:
            r = tcast_ref.cast(np.abs(x), dt, castmode=castmode)
        else:
            r = tcast_ref.cast(x, dt, castmode=castmode)
        v = tcast.native(r)
        for part, spec in _specs(dt).items():
            codes, view = getattr(r, part), getattr(v, part)
            twin = TWINS.get(getattr(spec, "code", None))
            if castmode == "compress" and part == "data" and spec.bits % 8:
                twin = None  # no NumPy dtype packs sub-byte codes
            if twin is None:
                assert view is codes and v.dtype_names[part] is None, (name, part)
                assert spec.code in v.notes[part] or "stream" in v.notes[part], (name, part)
                kept += 1
                continue
            assert v.dtype_names[part] == twin, (name, part)
            assert view.dtype == np.dtype(getattr(ml_dtypes, twin, None) or twin), (name, part)
            assert np.shares_memory(view, codes), (name, part)  # zero-copy
            assert np.array_equal(view.view(codes.dtype), codes), (name, part)  # raw bits
            viewed += 1
        assert v.mask is r.mask and v.meta is r.meta
    assert viewed > 100 and kept > 5  # both outcomes are exercised


def _result(codes: np.ndarray, code: str, scale: str = "e8m0") -> tcast.CastResult:
    """An actual result of ``code`` data whose every scale is 1.0 (e8m0 127, float32 0x3F800000).

    Int data takes the float32 scale: under a power-of-two scale its codes are fixed point.
    """
    dt = tcast.datatype(f"{code}_{scale}_t32")
    data = codes.reshape(-1, 32)
    one = (np.uint8, 127) if scale == "e8m0" else (np.uint32, 0x3F800000)
    return tcast.CastResult(
        data=data,
        scale=np.full((data.shape[0], 1), one[1], one[0]),
        zero=None,
        tenscale=None,
        mask=None,
        meta=None,
        dtype=dt,
        shape=data.shape,
        castmode=tcast.CastMode.ACTUAL,
        engine="ref",
    )


@pytest.mark.parametrize(
    "code",
    [
        "e4m3fn",
        "e5m2",
        "e4m3b8fnuz",
        "e5m2b16fnuz",
        "e4m3b11fnuz",
        "e4m3b7",
        "e3m4",
        "e2m3f",
        "e3m2f",
        "e2m1f",
        "bfloat16",
        "float16",
        "int2",
        "int4",
        "int8",
        "int16",
    ],
)
def test_ml_dtypes_decodes_every_code_as_tcast_upcast_does(code):
    bits = tcast.number(code).bits
    dtype = {8: np.uint8, 16: np.uint16}.get(bits, np.uint8)
    every = np.arange(1 << bits, dtype=np.uint32).astype(dtype)
    codes = np.tile(every, max(1, 32 // every.size))  # whole blocks of 32
    r = _result(codes, code, "float32" if code.startswith("int") else "e8m0")
    ours = tcast.upcast(r)  # tcast's decode, times the scale 1.0
    theirs = tcast.native(r).data.astype(np.float32)  # ml_dtypes' decode
    nan = np.isnan(ours)
    assert np.array_equal(nan, np.isnan(theirs))
    assert np.array_equal(ours[~nan].view(np.uint32), theirs[~nan].view(np.uint32))


def test_float32_codes_decode_as_their_bits():
    patterns = [0, 1, 0x007FFFFF, 0x00800000, 0x3F800000, 0x7F7FFFFF, 0x7F800000, 0x80000001]
    codes = np.array(patterns * 4, np.uint32)
    r = _result(codes, "float32")
    ours = tcast.upcast(r)
    theirs = tcast.native(r).data.astype(np.float32)
    assert np.array_equal(ours.view(np.uint32), theirs.view(np.uint32))


@pytest.mark.parametrize("code", ["uint2", "uint4"])
def test_ml_dtypes_unsigned_sub_byte_codes_are_their_values(code):
    bits = tcast.number(code).bits
    every = np.arange(1 << bits, dtype=np.uint8)
    view = tcast_ref.engine.result_ops.native_view(every, tcast.kit.native_name(code))
    assert view.astype(np.float32).tolist() == list(range(1 << bits))


def test_e8m0_scales_are_float8_e8m0fnu_powers_of_two_and_255_is_nan():
    r = _result(np.zeros(256 * 32, np.uint8), "e4m3fn")
    r = dataclasses.replace(r, scale=np.arange(256, dtype=np.uint8).reshape(256, 1))
    scale = tcast.native(r).scale
    assert scale.dtype == np.dtype(ml_dtypes.float8_e8m0fnu)
    got = scale.astype(np.float32).reshape(-1)
    assert np.isnan(got[255])
    assert got[:255].tolist() == [math.ldexp(1.0, c - 127) for c in range(255)]


def test_nvfp4_tensor_scale_is_the_float32_of_its_bits():
    x = np.random.default_rng(1).standard_normal((2, 32)).astype(np.float32)
    r = tcast_ref.cast(x, "nvfp4", castmode="actual")
    v = tcast.native(r)
    assert r.tenscale.dtype == np.uint32 and v.dtype_names["tenscale"] == "float32"
    want = struct.unpack("<f", struct.pack("<I", int(r.tenscale)))[0]
    assert v.tenscale.dtype == np.float32 and float(v.tenscale) == want
    assert v.dtype_names["data"] == "float4_e2m1fn" and v.dtype_names["scale"] == "float8_e4m3fn"


def test_compress_stream_of_16_bit_codes_is_one_bfloat16_per_code():
    x = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    a = tcast_ref.cast(x, "bfloat16", castmode="actual")
    c = tcast_ref.cast(x, "bfloat16", castmode="compress")
    v = tcast.native(c)
    assert c.data.dtype == np.uint8 and v.data.dtype == np.dtype(ml_dtypes.bfloat16)
    assert np.shares_memory(v.data, c.data)
    assert np.array_equal(v.data.view(np.uint16), a.data.reshape(-1))


def test_formats_without_a_twin_keep_their_codes_and_say_so():
    x = np.linspace(-4, 4, 64, dtype=np.float32).reshape(2, 32)
    for name in ("e3m2fnuz", "e4m3b7fnuz_e8m0_t32", "int5_e8m0_t32", "e4m3fn_e5m0_t32"):
        r = tcast_ref.cast(x, name, castmode="actual")
        v = tcast.native(r)
        kept = v.codes_kept
        assert kept, name
        for part in kept:
            assert getattr(v, part) is getattr(r, part)
            assert "no dtype of torch, NumPy or ml_dtypes" in v.notes[part], name
    v = tcast.native(tcast_ref.cast(x, "mxfp6e3", castmode="compress"))
    assert v.codes_kept == ("data",) and "ml_dtypes.float6_e3m2fn" in v.notes["data"]


def test_mxint_codes_are_int8_and_the_note_gives_the_fixed_point_factor():
    x = np.random.default_rng(4).standard_normal((2, 64)).astype(np.float32)
    r = tcast_ref.cast(x, "mxint8", castmode="actual")
    v = tcast.native(r)
    assert v.data.dtype == np.int8 and "code * 2**-6 * scale" in v.notes["data"]
    scale = np.repeat(v.scale.astype(np.float32), 32, axis=-1)
    values = v.data.astype(np.float32) * np.float32(2.0**-6) * scale
    assert np.array_equal(values.view(np.uint32), tcast.upcast(r).view(np.uint32))


def test_native_refuses_virtual_results_and_invalid_ones():
    x = np.ones((2, 32), np.float32)
    with pytest.raises(tcast.SpecError, match="actual or compress"):
        tcast.native(tcast_ref.cast(x, "mxfp8"))
    r = tcast_ref.cast(x, "mxfp8", castmode="actual")
    bad = dataclasses.replace(r, scale=r.scale[:1])
    with pytest.raises(tcast.SpecError, match="scale"):
        tcast.native(bad)
