"""Which ecosystem dtype holds a format's codes (tcast.kit.native_name), and NativeParts.

Pure Python: the engines' tests (tcast_ref, tcast_torch) prove the names right by decoding
every code with ml_dtypes and torch.
"""

from __future__ import annotations

import dataclasses

import pytest

import tcast
from tcast.kit import NATIVE_NAMES, NativeParts, native_name, native_parts


@pytest.mark.parametrize(
    ("code", "name"),
    [
        ("e4m3fn", "float8_e4m3fn"),
        ("e5m2", "float8_e5m2"),
        ("e4m3b8fnuz", "float8_e4m3fnuz"),
        ("e5m2b16fnuz", "float8_e5m2fnuz"),
        ("e4m3b11fnuz", "float8_e4m3b11fnuz"),
        ("e4m3b7", "float8_e4m3"),
        ("e3m4", "float8_e3m4"),
        ("e8m0", "float8_e8m0fnu"),
        ("e2m3f", "float6_e2m3fn"),
        ("e3m2f", "float6_e3m2fn"),
        ("e2m1f", "float4_e2m1fn"),
        ("bfloat16", "bfloat16"),
        ("float16", "float16"),
        ("float32", "float32"),
        ("int8", "int8"),
        ("int4", "int4"),
        ("uint8", "uint8"),
    ],
)
def test_twin_names_are_the_ecosystem_dtype_with_the_same_bits(code, name):
    assert native_name(code) == name
    assert native_name(tcast.number(code)) == name


@pytest.mark.parametrize(
    "code",
    ["e4m3b7fnuz", "e5m2b15fnuz", "e3m2fnuz", "e2m1fnuz", "e2m3fnuz", "int5", "uint3", "e5m0"],
)
def test_formats_whose_bits_mean_other_values_in_every_library_have_no_twin(code):
    """Bare e4m3fnuz has bias 7; torch/ml_dtypes float8_e4m3fnuz has bias 8 (docs/names.md)."""
    assert native_name(code) is None


def test_codebook_data_has_no_twin():
    assert native_name(tcast.mxfi4.nspec) is None


@pytest.mark.parametrize(
    ("code", "packed"),
    [
        ("e2m1f", "float4_e2m1fn_x2"),  # torch: two codes a byte, element 2i low
        ("e4m3fn", "float8_e4m3fn"),  # whole-byte codes: the stream is their bytes
        ("bfloat16", "bfloat16"),
        ("int8", "int8"),
        ("int4", None),
        ("e3m2f", None),
        ("e3m2fnuz", None),
    ],
)
def test_a_compress_stream_has_a_twin_only_for_whole_bytes_or_a_packing_dtype(code, packed):
    assert native_name(code, packed=True) == packed


def test_every_twin_name_parses_back_to_its_format():
    for name in NATIVE_NAMES:
        assert native_name(tcast.number(name)) == name


class _Array:
    """A stand-in array: its dtype name and the array it views (None: an original)."""

    def __init__(self, dtype: str, base: _Array | None = None) -> None:
        self.dtype, self.base = dtype, base


class _Ops:
    """Result operations of a library that has the float8 dtypes and float32 only."""

    HAS = ("float8_e4m3fn", "float8_e8m0fnu", "float32")

    def native_view(self, a: _Array, name: str) -> _Array | None:
        return _Array(name, a) if name in self.HAS else None


def _result(dtype: str, castmode: str = "actual", **parts: _Array) -> tcast.CastResult:
    fields = {p: parts.get(p) for p in ("data", "scale", "zero", "tenscale", "mask", "meta")}
    return tcast.CastResult(
        **fields,
        dtype=tcast.datatype(dtype),
        shape=(2, 32),
        castmode=tcast.cast_mode(castmode),
    )


def test_native_parts_views_what_the_library_has_and_keeps_the_rest_with_a_reason():
    r = _result("nvfp4", data=_Array("uint8"), scale=_Array("uint8"), tenscale=_Array("uint32"))
    v = native_parts(r, _Ops(), "lib")
    assert isinstance(v, NativeParts)
    assert v.scale.dtype == "float8_e4m3fn" and v.scale.base is r.scale
    assert v.tenscale.dtype == "float32" and v.tenscale.base is r.tenscale
    assert v.data is r.data and v.codes_kept == ("data",)
    assert dict(v.dtype_names) == {
        "data": None,
        "scale": "float8_e4m3fn",
        "tenscale": "float32",
    }
    assert "lib has no float4_e2m1fn dtype" in v.notes["data"]
    assert "float4_e2m1fn_x2" in v.notes["data"]  # where to get FP4 in a dtype
    with pytest.raises(TypeError):
        v.dtype_names["data"] = "x"  # read-only


def test_native_parts_of_a_format_without_a_twin_names_its_code():
    r = _result("mxfp6e3", data=_Array("uint8"), scale=_Array("uint8"))
    v = native_parts(r, _Ops())
    assert v.codes_kept == ("data",) and v.scale.dtype == "float8_e8m0fnu"
    assert v.notes["data"].startswith("e3m2f codes:")


def test_native_parts_of_a_packed_stream_without_a_dtype_says_how_to_get_one():
    r = _result("mxfp6e3", "compress", data=_Array("uint8"), scale=_Array("uint8"))
    v = native_parts(r, _Ops())
    assert "compress stream packs 6-bit e3m2f" in v.notes["data"]
    assert "ml_dtypes.float6_e3m2fn" in v.notes["data"]


def test_native_parts_without_a_native_view_keeps_every_part():
    mask, meta = _Array("bool"), _Array("uint8")
    r = _result("mxfp8", data=_Array("uint8"), scale=_Array("uint8"), mask=mask, meta=meta)
    v = native_parts(r, object(), "eng")
    assert v.codes_kept == ("data", "scale") and v.data is r.data and v.scale is r.scale
    assert "eng gives no views" in v.notes["scale"]
    assert v.mask is mask and v.meta is meta  # flags and indices pass through


def test_mxint_data_view_notes_the_fixed_point_factor():
    r = _result("mxint8", data=_Array("uint8"), scale=_Array("uint8"))
    v = native_parts(r, type("Ops", (), {"native_view": lambda s, a, n: _Array(n, a)})())
    assert v.data.dtype == "int8" and v.codes_kept == ()
    assert "code * 2**-6 * scale" in v.notes["data"]
    r = _result("int8_float32_t32", data=_Array("uint8"), scale=_Array("uint32"))
    v = native_parts(r, type("Ops", (), {"native_view": lambda s, a, n: _Array(n, a)})())
    assert "data" not in v.notes  # under a float scale the codes are the integers


@pytest.mark.parametrize("bad", [None, 3, "mxfp8"])
def test_native_takes_only_a_cast_result(bad):
    with pytest.raises(tcast.SpecError, match="actual or compress"):
        tcast.native(bad)


def test_native_refuses_a_virtual_result():
    r = _result("mxfp8", data=_Array("uint8"), scale=_Array("uint8"))
    with pytest.raises(tcast.SpecError, match="castmode='actual'"):
        tcast.native(dataclasses.replace(r, castmode=tcast.CastMode.VIRTUAL))
