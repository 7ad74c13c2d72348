"""Input validation and range rules of the exact model (SEMANTICS.md §1.2, §4.3, §5.5-§5.7)."""

import itertools
import math
from fractions import Fraction

import gfloat
import numpy as np
import pytest
from gfloat.formats import format_info_p3109

import tcast
from tcast import SpecError, exact


def test_a_float_scale_needs_a_finite_float32_reciprocal():
    # e8m3b140's smallest normal is 2^-139: 1/2^-139 overflows float32, and 0 * Inf is NaN.
    with pytest.raises(SpecError, match="reciprocal"):
        tcast.scale("e8m3b140_t32")
    tcast.scale("bfloat16_t32")  # smallest normal 2^-126: fine


def test_a_tensor_scale_needs_a_nan_code():
    with pytest.raises(SpecError, match="NaN code"):
        tcast.datatype("e2m1f", "e4m3fn_e3m2f_t16")


def test_encode_rejects_non_numbers_and_accepts_numpy_scalars():
    for bad in ("1.0", None, [1.0], True):
        with pytest.raises(SpecError, match="not a real number"):
            exact.encode(bad, "int8")
    assert exact.encode(np.float32(1.5), "e2m1f") == 0x3
    assert exact.encode(np.float16(-2.0), "e2m1f") == 0xC
    assert exact.encode(Fraction(3, 2), "e2m1f") == 0x3


def test_cast_block_rejects_values_beyond_float_range_with_spec_error():
    with pytest.raises(SpecError, match="float32"):
        exact.cast_block([10**400], "mxfp8")
    with pytest.raises(SpecError, match="real numbers"):
        exact.cast_block(["1.0"], "mxfp8")
    res = exact.cast_block([np.float32(1.0), np.float16(2.0)], "mxfp8")
    assert res.values == (1.0, 2.0)


def test_tensor_amax_is_only_for_two_level_datatypes():
    with pytest.raises(SpecError, match="two-level"):
        exact.cast_block([1.0], "mxfp8", tensor_amax=4.0)


def test_exponent_scale_validates_its_arguments():
    assert exact.exponent_scale(1.0, 6.0, 2, "floor") == -2  # floor_log2(6) = 2
    for amax in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(SpecError, match="amax"):
            exact.exponent_scale(amax, Fraction(6), 2, "floor")
    with pytest.raises(SpecError, match="scale mode 'max'"):
        exact.exponent_scale(1.0, Fraction(6), 2, "max")


def test_catalog_and_name_tables_are_read_only():
    for table in (
        tcast.CATALOG,
        tcast.ALIASES,
        tcast.DESCRIPTIONS,
        tcast.NOT_YET_SUPPORTED,
        tcast.number.__globals__["NAMES"],
        exact.INPUT_DTYPES,
    ):
        with pytest.raises(TypeError):
            table["mxfp4"] = None


def test_exponent_type_encoding_rules():
    # §4.3: below the smallest power -> code 0 in every mode, 0/negative/NaN -> NaN code
    for mode in ("even", "trunc", "away", "zero"):
        assert exact.encode(2.0**-200, "e8m0", mode) == 0
    for v in (0.0, -1.0, math.nan):
        assert exact.encode(v, "e8m0") == 0xFF
    assert exact.encode(2.0**127 * 1.9, "e8m0") == 0xFE
    assert exact.encode(2.0**127 * 1.9, "e8m0", saturate=False) == 0xFF


def test_uint_exponent_scale_uses_the_float32_range():
    # §5.7: fl32(255 - (-2^-30)) = 255 exactly (2^-30 is below half an ulp of 255), and
    # 255 <= 255 * 2^0, so the scale is 2^0 (code 127), not 2^1.
    res = exact.cast_block([255.0, -(2.0**-30)], tcast.datatype("uint8", "e8m0_int8_t32"))
    assert res.scale == 127


def test_uint_range_beyond_float32_takes_the_largest_scale_and_overflows():
    f32max = float(np.finfo(np.float32).max)
    res = exact.cast_block([f32max, -f32max], tcast.datatype("uint8", "e8m0_int8_t32"))
    assert res.scale == 0xFE
    assert res.values == (math.inf, -math.inf)


@pytest.mark.parametrize("code", [f"binary8p{p}" for p in range(1, 8)] + ["e3m0fn", "e4m0fnuz"])
def test_ties_go_to_the_even_code_as_gfloat_rounds(code):
    # §3.2 'ties to even' means the even code; for formats with no mantissa bits that is the
    # exponent's parity (gfloat's RNE does the same). Every midpoint of adjacent positive
    # values, rounded by gfloat and by the exact model.
    spec = tcast.number(code)
    if code.startswith("binary8p"):
        fi = format_info_p3109(8, spec.mbits + 1)
    else:
        fi = gfloat.FormatInfo(
            code,
            k=spec.bits,
            precision=spec.mbits + 1,
            bias=spec.bias,
            has_nz=spec.has_negzero,
            domain=gfloat.Domain.Extended if spec.has_inf else gfloat.Domain.Finite,
            num_high_nans=(1 if spec.style.value == "fn" else 0),
            has_subnormals=True,
            is_signed=True,
            is_twos_complement=False,
        )
    values = sorted({exact.decode(c, spec) for c in range(spec.max_code + 1)})
    for lo, hi in itertools.pairwise(values):
        mid = (lo + hi) / 2
        ours = exact.decode(exact.encode(mid, spec, "even"), spec)
        theirs = gfloat.round_float(fi, mid, gfloat.RoundMode.TiesToEven)
        assert ours == theirs, (code, mid, ours, theirs)
