"""Given scales and zero points in the exact model (SEMANTICS.md §5.12).

Expected codes are worked by hand in the comment beside them (e8m0 code = e + 127; e4m3fn
code = s eeee mmm, bias 7) or come from the computed cast of the same block, whose scales are
given back: a given part equal to the computed one must reproduce the computed cast.
"""

from __future__ import annotations

import math
import random
import struct

import pytest

import tcast
from tcast.exact import (
    cast_array,
    cast_block,
    decode,
    given_scale_code,
    given_zero_code,
    hadamard_array,
)

NAN = math.nan
E8M0 = tcast.number("e8m0")
E4M3 = tcast.number("e4m3fn")


def f32(x: float) -> float:
    """float32 rounding through struct (independent of tcast.exact)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def _values(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [f32(rng.gauss(0, 1) * 2.0 ** rng.randint(-6, 6)) for _ in range(n)]


# --- encoding each part ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("v", "code"),
    [
        (1.0, 127),  # 2**0: a power of two is itself
        (3.0, 129),  # the smallest power of two >= 3 is 4 = 2**2
        (0.75, 127),  # -> 1
        (2.0**-127, 0),  # e8m0's smallest scale
        (2.0**-130, 0),  # below it: clamped to code 0
        (0.0, 0),  # as an all-zero block
        (2.0**127, 254),  # the largest finite code (255 is NaN)
        (f32(1.5 * 2.0**127), 254),  # 2**128 clamped to 254
        (f32(1 + 2.0**-23), 128),  # just above 1 -> 2
    ],
)
def test_a_given_exponent_scale_is_the_smallest_power_of_two_not_below_it(v, code):
    assert given_scale_code(v, E8M0) == code


@pytest.mark.parametrize(
    ("v", "code"),
    [
        (16.0, 0x58),  # 0 1011 000: represented, itself
        (17.0, 0x58),  # between 16 (mantissa 000) and 18 (001): a tie, to even
        (17.5, 0x59),  # nearer 18
        (0.0, 0x08),  # the smallest normal 2**-6 (0 0001 000), as an all-zero block
        (2.0**-9, 0x08),  # a subnormal value: clamped to the smallest normal
        (500.0, 0x7E),  # above 448 (0 1111 110): clamped to the max
    ],
)
def test_a_given_float_scale_is_clamped_to_the_normal_range_and_rounded_to_even(v, code):
    assert given_scale_code(v, E4M3) == code


def test_a_given_zero_point_is_encoded_with_even_and_saturation():
    u8, i8 = tcast.number("uint8"), tcast.number("int8")
    assert given_zero_code(2.5, u8) == 2  # tie to even
    assert given_zero_code(3.5, u8) == 4
    assert given_zero_code(300.0, u8) == 255  # saturates
    assert given_zero_code(-7.0, u8) == 0
    assert given_zero_code(-3.0, i8) == 0xFD  # two's complement byte
    assert given_zero_code(17.0, E4M3) == 0x58  # a float zero format: RNE
    assert given_zero_code(-0.0, tcast.number("float16")) == 0  # +0, never the -0 code 0x8000


# --- the cast with given parts -------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "shape", "transpose"),
    [
        ("mxfp8", (4, 64), False),
        ("mxfp4", (3, 40), False),  # a partial tile
        ("mxint8", (2, 32), False),
        ("e4m3fn_e8m0_t8_t8", (16, 12), True),  # 2-D tiles, transposed scales
        ("e2m1f_e4m3fn_t16", (2, 48), False),  # a float scale
        ("int8_float32_t0", (3, 20), False),  # a channel, float32 scale
        ("e2m1f_e8m0_t8n2m4", (2, 16), False),  # sparsity
        ("uint8_float32_uint8_t0", (4, 9), False),  # scale and zero point
        ("uint4_bfloat16_int8_t8", (2, 16), False),  # a signed zero point
        ("e3m2f_float32", (5, 7), False),  # one tensor scale
    ],
)
def test_giving_the_computed_scales_back_reproduces_the_computed_cast(code, shape, transpose):
    dt = tcast.datatype(code)
    vals = _values(math.prod(shape), 1)
    ref = cast_array(vals, shape, dt, transpose_scale=transpose)
    s = dt.sspec.scale
    scale = [decode(c, s) for c in ref.scale]
    zero = None if ref.zero is None else [decode(c, dt.zero) for c in ref.zero]
    got = cast_array(vals, shape, dt, transpose_scale=transpose, scale=scale, zero=zero)
    assert (got.codes, got.scale, got.zero, got.values) == (
        ref.codes,
        ref.scale,
        ref.zero,
        ref.values,
    )


def test_two_level_parts_given_alone_or_together_reproduce_the_computed_cast():
    vals = _values(64, 2)
    ref = cast_array(vals, (2, 32), "nvfp4")
    dt = tcast.datatype("nvfp4")
    t = decode(ref.tenscale, dt.tenscale)
    s = [decode(c, dt.sspec.scale) for c in ref.scale]
    for kw in ({"tensor_scale": t}, {"scale": s}, {"tensor_scale": t, "scale": s}):
        got = cast_array(vals, (2, 32), dt, **kw)
        assert (got.codes, got.scale, got.tenscale, got.values) == (
            ref.codes,
            ref.scale,
            ref.tenscale,
            ref.values,
        ), kw


def test_a_given_tensor_scale_sets_the_tile_scales_by_the_two_level_rule():
    # nvfp4, t = 0.5 given: tile scale RNE_e4m3(fl32(fl32(amax / 6) / 0.5)); amax 96 -> 32;
    # multiplier fl32(fl32(1 / 0.5) / 32) = 1/16: 96 -> 6 (0 11 1 = 7), 2 -> 0.125 -> 0
    # (below e2m1's 0.25 midpoint), values fl32(code * fl32(0.5 * 32))
    r = cast_array([96.0, 2.0] + [0.0] * 14, (16,), "nvfp4", tensor_scale=0.5)
    assert r.tenscale == 0x3F000000  # 0.5 as float32 bits
    assert decode(r.scale[0], E4M3) == 32.0
    assert r.codes[:2] == (7, 0)
    assert r.values[:2] == (96.0, 0.0)


def test_a_given_scale_of_uint_data_sets_the_zero_point_by_its_rule():
    # uint8 with a float32 scale and uint8 zero point, s = 0.5 given: r = 2, lo = -3 so
    # z = encode(fl32(3 * 2)) = 6; x = 1.25 -> round(2.5 + 6) = 8 (even), value (8 - 6) * 0.5
    r = cast_array([-3.0, 1.25, 0.0, 2.0], (4,), "uint8_float32_uint8_t0", scale=[0.5])
    assert r.zero == (6,)
    assert r.codes == (0, 8, 6, 10)
    assert r.values == (-3.0, 1.0, 0.0, 2.0)


def test_elements_saturate_under_a_given_scale_too_small():
    # mxfp8 (e4m3fn, max 448) with scale 1 given for a block holding 1000: saturates to 448
    r = cast_array([1000.0, -1.0] + [0.0] * 30, (32,), "mxfp8", scale=[1.0])
    assert r.scale == (127,)
    assert r.codes[:2] == (0x7E, 0xB8)  # 448 = 0 1111 110; -1 = 1 0111 000
    assert r.values[:2] == (448.0, -1.0)


def test_an_amax_over_m_given_to_an_exponent_scale_is_the_topbinade_scale():
    rng = random.Random(3)
    for code in ("mxfp4", "mxfp6e2", "mxfp8", "mxint8"):
        dt = tcast.datatype(code)
        big_m = tcast.kit.element_max(dt.nspec, True)
        for _ in range(20):
            # amax / M exactly a float32 value: q of 16 significant bits, amax = q * M
            q = f32(rng.randint(1 << 15, (1 << 16) - 1) * 2.0 ** rng.randint(-30, 10))
            amax = q * float(big_m)
            assert f32(amax) == amax  # 16 + at most 7 significant bits
            vals = [amax, *_values(31, rng.randint(0, 99))]
            vals = [max(min(v, amax), -amax) for v in vals]
            want = cast_array(vals, (32,), dt, scalemode="topbinade")
            got = cast_array(vals, (32,), dt, scale=[q])
            assert got.scale == want.scale and got.codes == want.codes, (code, q)


def test_a_non_finite_block_is_nan_whatever_scale_was_given():
    # two mxfp8 blocks, the first holding a NaN: its scale is e8m0's NaN code and its codes
    # 0; the second keeps the given scale
    r = cast_array([NAN] + [1.0] * 31 + [2.0] * 32, (64,), "mxfp8", scale=[1.0, 4.0])
    assert r.scale == (0xFF, 129)
    assert set(r.codes[:32]) == {0} and all(math.isnan(v) for v in r.values[:32])
    assert r.values[32:] == (2.0,) * 32


def test_a_given_tensor_scale_keeps_a_non_finite_block_to_itself():
    # nvfp4 with t given: no tensor amax, so an Inf in the first block leaves the second cast
    vals = [math.inf] + [1.0] * 15 + [3.0] * 16
    r = cast_array(vals, (32,), "nvfp4", tensor_scale=1.0)
    assert r.tenscale == 0x3F800000
    assert r.scale[0] == E4M3.nan_code and r.scale[1] != E4M3.nan_code
    assert r.values[16:] == (3.0,) * 16
    # computed, the Inf makes the tensor scale NaN and every block NaN (§5.6)
    assert all(math.isnan(v) for v in cast_array(vals, (32,), "nvfp4").values)


def test_given_scales_go_through_a_transform():
    h = tcast.Hadamard.te_wgrad()
    vals = _values(32, 4)
    ref = cast_array(vals, (2, 16), "nvfp4", transform=h)
    t = decode(ref.tenscale, tcast.datatype("nvfp4").tenscale)
    got = cast_array(vals, (2, 16), "nvfp4", transform=h, tensor_scale=t)
    assert (got.codes, got.scale, got.values, got.transform) == (
        ref.codes,
        ref.scale,
        ref.values,
        h,
    )


def test_an_empty_two_level_array_keeps_its_given_tensor_scale():
    assert cast_array([], (0, 16), "nvfp4", tensor_scale=2.0).tenscale == 0x40000000


# --- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "kw", "match"),
    [
        ("e4m3fn", {"scale": [1.0]}, "unscaled"),
        ("mx9", {"scale": [1.0]}, "not defined"),
        ("mxfp8", {"zero": [0.0]}, "no zero point"),
        ("mxfp8", {"tensor_scale": 1.0}, "one scale level"),
        ("mxfp8", {"scale": [1.0, 1.0]}, "2 values for the 1 blocks"),
        ("mxfp8", {"scale": [-1.0]}, "must not be negative"),
        ("mxfp8", {"scale": [NAN]}, "finite"),
        ("mxfp8", {"scale": [math.inf]}, "finite"),
        ("mxfp8", {"scale": [0.1]}, "not a float32 value"),
        ("mxfp8", {"scale": ["1"]}, "real number"),
        ("mxfp8", {"scale": 1.0}, "scale shape"),  # a number only for the shape ()
        ("mxfp8", {"scale": [[1.0, 2.0]]}, r"scale shape \(1,\)"),
        ("mxfi4", {"scale": [1.0]}, "not defined"),  # a codebook
        ("nf4", {"scale": [1.0]}, "not defined"),
        ("nvfp4", {"tensor_scale": -2.0}, "tensor_scale must not be negative"),
        ("uint8_float32_uint8_t0", {"zero": [NAN]}, "zero\\[0\\] must be finite"),
    ],
)
def test_given_parts_a_datatype_has_no_place_for_or_bad_values_are_refused(code, kw, match):
    with pytest.raises(tcast.SpecError, match=match):
        cast_array([1.0] * 32, (32,), code, **kw)


def test_a_block_takes_tensor_amax_or_a_given_tensor_scale_not_both():
    with pytest.raises(tcast.SpecError, match="not both"):
        cast_block([1.0] * 16, "nvfp4", tensor_amax=1.0, tensor_scale=1.0)


def test_a_given_zero_point_alone_is_used_with_the_computed_scale():
    # uint4 with an e5m0 scale and int4 zero point, block [0, 1, 2, 3]: range 3, the smallest
    # 2**e with 3 <= 15 * 2**e is 2**-2, r = 4; the computed zero point is 0 (lo = 0), the
    # given one 2: codes round(x * 4 + 2) = 2, 6, 10, 14, values (code - 2) * 0.25
    r = cast_array([0.0, 1.0, 2.0, 3.0], (4,), "uint4_e5m0_int4_t4", zero=[2.0])
    assert r.zero == (2,) and r.codes == (2, 6, 10, 14)
    assert r.values == (0.0, 1.0, 2.0, 3.0)
    assert cast_array([0.0, 1.0, 2.0, 3.0], (4,), "uint4_e5m0_int4_t4").codes == (0, 4, 8, 12)


def test_a_given_scale_is_used_for_an_all_zero_block_too():
    # computed, an all-zero block gets code 0; given 4 it keeps 2**2 (code 129)
    assert cast_array([0.0] * 32, (32,), "mxfp8", scale=[4.0]).scale == (129,)
    assert cast_array([0.0] * 32, (32,), "mxfp8").scale == (0,)


def test_a_non_finite_uint_block_takes_the_nan_rule_zero_point_not_the_given_one():
    # uint8 zero points have no NaN code: a NaN block's zero point is 0 (§5.2)
    r = cast_array([NAN, 1.0, 2.0], (3,), "uint8_float32_uint8_t0", scale=[0.5], zero=[7.0])
    assert r.zero == (0,) and r.scale == (tcast.number("float32").nan_code,)


def test_given_tile_scales_keep_a_non_finite_tensor_amax_nan_throughout():
    # only the tile scales given: the tensor scale is computed from a NaN tensor amax (§5.6)
    r = cast_array([NAN] + [1.0] * 31, (32,), "nvfp4", scale=[1.0, 1.0])
    assert r.tenscale == tcast.number("float32").nan_code
    assert all(math.isnan(v) for v in r.values)


def test_given_parts_that_differ_from_the_computed_ones_go_through_a_transform():
    # the cast with a transform equals the cast of the transformed values with the same
    # given parts (§5.11), and the given tensor scale changes the codes
    h = tcast.Hadamard.te_wgrad()
    vals = _values(32, 5)
    t = 2.0**-3
    got = cast_array(vals, (2, 16), "nvfp4", transform=h, tensor_scale=t)
    inner = cast_array(hadamard_array(vals, (2, 16), 1, h), (2, 16), "nvfp4", tensor_scale=t)
    assert (got.codes, got.scale, got.tenscale) == (inner.codes, inner.scale, inner.tenscale)
    assert got.codes != cast_array(vals, (2, 16), "nvfp4", transform=h).codes


@pytest.mark.parametrize(
    "scale", [[[0.5], [2.0]], (0.5, 2.0)], ids=["nested in the scale shape", "flat"]
)
def test_given_values_may_be_laid_out_in_the_scale_shape_or_flat(scale):
    assert cast_array([1.0] * 64, (2, 32), "mxfp8", scale=scale).scale == (126, 128)


def test_a_tensor_scale_of_one_level_is_given_as_a_number():
    # e3m2f with a float32 tensor scale: the scale shape is (), the value 2.0 itself
    r = cast_array([1.0, -3.0, 0.5, 2.0], (2, 2), "e3m2f_float32", scale=2.0)
    assert r.scale == (0x40000000,)
    assert r.values == (1.0, -3.0, 0.5, 2.0)
