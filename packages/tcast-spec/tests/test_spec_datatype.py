"""DataType validation and the datatype() front door."""

from __future__ import annotations

import pytest

import tcast
from tcast import (
    CATALOG,
    NOT_YET_SUPPORTED,
    DataType,
    SpecError,
    datatype,
    number,
    scale,
)


# --------------------------------------------------------------- validation
@pytest.mark.parametrize("code", ["e8m0", "e4m0", "e5m0b10", "float8_e8m0fnu"])
def test_exponent_type_as_data_is_spec_error(code):
    with pytest.raises(SpecError):
        datatype(code)
    with pytest.raises(SpecError):
        datatype(code, "e8m0_t32")
    with pytest.raises(SpecError):
        DataType(number(code))


@pytest.mark.parametrize("code", ["int8", "int4", "int2", "uint8", "uint4", "int32"])
def test_integer_data_unscaled_is_spec_error(code):
    with pytest.raises(SpecError):
        datatype(code)
    with pytest.raises(SpecError):
        DataType(number(code))


@pytest.mark.parametrize("sspec", ["float32", "e8m0_t32", "float16_t0", "e4m3fn_t16"])
def test_uint_without_zero_point_is_spec_error(sspec):
    with pytest.raises(SpecError):
        datatype("uint8", sspec)


@pytest.mark.parametrize("zero", ["e8m0", "e4m0"])
def test_uint_zero_point_must_be_float_int_or_uint(zero):
    with pytest.raises(SpecError):
        datatype("uint8", f"float32_{zero}_t32")


@pytest.mark.parametrize(
    "zero", ["float32", "int8", "float16", "e4m3fn", "bfloat16", "int4", "uint8", "uint4"]
)
def test_uint_with_float_int_or_uint_zero_point(zero):
    dt = datatype("uint4", f"float32_{zero}_t32")
    assert dt.zero == number(zero)
    assert dt.tenscale is None and not dt.is_multiscale


@pytest.mark.parametrize(
    "sspec",
    [
        "e4m3fn_e8m0_t16",  # tensor scale must be a float, not an exponent type
        "e4m3fn_int8_t16",  # nor an int
        "e4m3fn_uint8_t16",
    ],
)
def test_tensor_scale_must_be_float(sspec):
    with pytest.raises(SpecError):
        datatype("e2m1f", sspec)
    with pytest.raises(SpecError):
        datatype("int8", sspec)


@pytest.mark.parametrize("sspec", ["e8m0_float32_t16", "e4m0_float32_t32", "e8m0_bfloat16_t0"])
def test_tile_scale_under_tensor_scale_must_be_float(sspec):
    with pytest.raises(SpecError):
        datatype("e2m1f", sspec)


@pytest.mark.parametrize("sspec", ["e4m3fn_float32", "float16_float32", "e4m3fn_bfloat16"])
def test_two_level_scaling_requires_tiles(sspec):
    with pytest.raises(SpecError):
        datatype("e2m1f", sspec)


def test_two_level_scaling_valid_forms():
    for data in ("e2m1f", "int8", "e4m3fn"):
        for tiles in ("t16", "t0", "t32_t32", "t0_t16", "t16n2m4"):
            dt = datatype(data, f"e4m3fn_float32_{tiles}")
            assert dt.is_multiscale and dt.tenscale == number("float32")
            assert dt.zero is None


@pytest.mark.parametrize("scode", ["e2m1f", "e3m2f", "e2m3f", "e4m3f"])
def test_scale_format_without_nan_is_spec_error(scode):
    # A block holding NaN/Inf must be able to store a NaN scale.
    with pytest.raises(SpecError):
        datatype("e4m3fn", f"{scode}_t32")
    with pytest.raises(SpecError):
        scale(f"{scode}_t32")


def test_int_scale_format_is_spec_error():
    with pytest.raises(SpecError):
        datatype("e4m3fn", "int8_t32")


@pytest.mark.parametrize("sspec", ["e8m0_t16s2", "e8m0_t32s4", "e8m0_t0s8", "e8m0_t32s4_t32"])
def test_subtile_without_codebook_or_offset_is_spec_error(sspec):
    with pytest.raises(SpecError, match="a subtile needs codebook data or an offset width"):
        datatype("int8", sspec)
    with pytest.raises(SpecError, match="a subtile needs codebook data or an offset width"):
        datatype("e2m1f", sspec)
    # ... and the code pair spelling takes the same route
    with pytest.raises(SpecError, match="a subtile needs codebook data or an offset width"):
        datatype(f"int8_{sspec}")


@pytest.mark.parametrize(
    ("name", "meta_bits"),
    [("mx9", 1), ("mx6", 1), ("mx4", 1), ("mxfi4", 1), ("mxfp4m", 1), ("mxfp4e", 2), ("nf4", 0)],
)
def test_named_msfp_and_codebook_datatypes_resolve(name, meta_bits):
    dt = datatype(name)
    assert dt.name == name and dt.meta_bits == meta_bits
    assert name not in CATALOG and name not in NOT_YET_SUPPORTED


def test_non_spec_inputs_are_spec_errors():
    for bad in (None, 3, 2.5, b"mxfp4"):
        with pytest.raises(SpecError):
            datatype(bad)
    with pytest.raises(SpecError):
        DataType("e4m3fn")
    with pytest.raises(SpecError):
        DataType(number("e4m3fn"), "e8m0_t32")
    with pytest.raises(SpecError):
        datatype(tcast.mxfp4, "e8m0_t32")  # a DataType already has its scale spec


# ------------------------------------------------------------- code pairs
def test_code_pair_string_builds_datatype():
    dt = datatype("e2m1f_e8m0_t32")
    assert dt == tcast.mxfp4
    assert dt == datatype("e2m1f", "e8m0_t32")
    assert dt.nspec == number("e2m1f") and dt.sspec == scale("e8m0_t32")
    assert dt.name == "e2m1f_e8m0_t32"  # no catalog name: the code pair
    assert datatype("uint8_float32_int8_t0") == tcast.uint8_Fic
    assert datatype("e2m1f_e4m3fn_float32_t16") == tcast.nvfp4


def test_code_of_datatype_round_trips():
    for dt in list(CATALOG.values()) + list(tcast.combinations()):
        again = datatype(dt.code)
        assert again == dt, dt.code
        assert again.code == dt.code
        assert datatype(dt.nspec.code, None if dt.sspec is None else dt.sspec.code) == dt


def test_bad_code_pairs_are_spec_errors():
    for bad in (
        "e2m1f_",
        "e2m1f_t32",
        "e2m1f_e8m0_t32_float32",
        "float8_e4m3fn_e8m0_t32",
        "mxfp4_e8m0_t32",
        "e2m1f_e8m0_t3",
        "_e8m0_t32",
        "e2m1f__e8m0",
    ):
        with pytest.raises(SpecError):
            datatype(bad)


def test_unscaled_number_names_with_underscore():
    assert datatype("torch.float8_e4m3fn") == DataType(number("e4m3fn"))
    assert datatype("float8_e5m2fnuz") == DataType(number("e5m2b16fnuz"))
    assert datatype("e4m3fn").is_unscaled


# ------------------------------------------------- equality and properties
def test_equality_ignores_name():
    a = datatype("e2m1f", "e8m0_t32", name="mine")
    assert a.name == "mine" and str(a) == "mine"
    assert a == tcast.mxfp4 and hash(a) == hash(tcast.mxfp4)
    assert a.code == tcast.mxfp4.code == "e2m1f_e8m0_t32"
    renamed = datatype("mxfp4", name="other")
    assert renamed == tcast.mxfp4 and renamed.name == "other"
    assert datatype(tcast.mxfp4) is tcast.mxfp4
    assert datatype(tcast.mxfp4, name="x").name == "x"
    assert datatype(tcast.mxfp4, name="x") == tcast.mxfp4
    assert len({a, tcast.mxfp4, renamed}) == 1
    assert datatype("e2m1f", "e8m0_t16") != tcast.mxfp4


def test_default_name_is_code():
    dt = datatype("e3m4", "bfloat16_t0")
    assert dt.name == dt.code == "e3m4_bfloat16_t0"
    assert datatype("e4m3fn", name=None).name in ("float8_e4m3fn", "e4m3fn")
    assert DataType(number("e5m2")).name == "e5m2"


def test_is_multiscale_zero_tenscale_properties():
    nv = tcast.nvfp4
    assert nv.is_multiscale and nv.tenscale == number("float32") and nv.zero is None
    assert not tcast.nvf4.is_multiscale and tcast.nvf4.tenscale is None
    mx = tcast.mxfp4
    assert not mx.is_multiscale and mx.tenscale is None and mx.zero is None
    assert not mx.is_unscaled
    u = tcast.uint8_Fi
    assert u.zero == number("int8") and u.tenscale is None and not u.is_multiscale
    assert tcast.uint8_FF.zero == number("float32")
    f = tcast.float8_e4m3fn
    assert f.is_unscaled and f.zero is None and f.tenscale is None and not f.is_multiscale
    i = datatype("int8", "e4m3fn_float32_t16")
    assert i.is_multiscale and i.zero is None


# -------------------------------------------------------------------------- repr
@pytest.mark.parametrize(
    ("code", "want"),
    [
        ("mxfp4", "DataType(mxfp4: e2m1f elements, e8m0 scale per 32)"),  # the README's comment
        (
            "nvfp4",
            "DataType(nvfp4: e2m1f elements, e4m3fn scale per 16 under a float32 tensor scale)",
        ),
        ("float8_e4m3fn", "DataType(float8_e4m3fn: e4m3fn elements, unscaled)"),
        (
            "uint8_float32_uint8_t0",
            "DataType(uint8_float32_uint8_t0: uint8 elements, float32 "
            "scale and uint8 zero point per channel)",
        ),
        ("int8_float32", "DataType(int8_float32: int8 elements, float32 scale per tensor)"),
        (
            "e4m3fn_e8m0_t32d0",
            "DataType(e4m3fn_e8m0_t32d0: e4m3fn elements, e8m0 scale per 32 along dim 0)",
        ),
        (
            "e2m1f_e8m0_t16n2m4",
            "DataType(e2m1f_e8m0_t16n2m4: e2m1f elements, e8m0 scale per 16, 2 of every 4 kept)",
        ),
        (
            "e4m3fn_e4m3fn_t0_t32",
            "DataType(e4m3fn_e4m3fn_t0_t32: e4m3fn elements, e4m3fn scale per *x32 tile)",
        ),
    ],
)
def test_datatype_repr_is_one_readable_line(code, want):
    assert repr(datatype(code)) == want


def test_spec_reprs_are_their_codes_and_every_catalog_repr_is_short():
    import tcast

    assert repr(number("float8_e4m3fnuz")) == "NumberSpec('e4m3b8fnuz')"
    assert repr(tcast.scale("e8m0_t32")) == "ScaleSpec('e8m0_t32')"
    assert repr(tcast.scale("e8m0_t32").tiles[0]) == "TileSpec('t32')"
    for dt in [*tcast.CATALOG.values(), *tcast.combinations()]:
        r = repr(dt)
        assert r.startswith(f"DataType({dt.name}: ") and "\n" not in r and len(r) < 160
