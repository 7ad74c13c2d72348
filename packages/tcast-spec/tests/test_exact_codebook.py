"""Named rules of codebook datatypes in the exact model (SEMANTICS.md §5.9, §8).

Every expected value is worked by hand from the rule (in the comment beside it, exact
fractions where arithmetic is needed); none is computed by the code under test. Tables are
written out literally: the e2m1 magnitudes {0, .5, 1, 1.5, 2, 3, 4, 6}, the int4 ones
{0, 1, ..., 7} (mxfi4's two mappings, cb41fi_e2m2fnuz), codes s * 8 + k for 4-bit symmetric
codebooks.
"""

from __future__ import annotations

import dataclasses
import math
import struct

import pytest

import tcast
from tcast.exact import (
    cast_array,
    cast_block,
    choose_mapping,
    mapping_error,
    pack_codes,
    round_to_table,
    subtile_indices,
    upcast,
)
from tcast.modes import RoundMode

EVEN, AWAY, ZERO, TRUNC = RoundMode.EVEN, RoundMode.AWAY, RoundMode.ZERO, RoundMode.TRUNC

FP4 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
INT4 = (0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)
# mxfp4m's offset-0 mapping (cb41f01_e2m2fnuz): e2m2fnuz magnitude codes 3, 5, 7, 9, 11, 13, 15
FP4M0 = (0.0, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0)


def bits(values) -> list[bytes]:
    """float32 bits of each value: a wrong sign of zero fails, as values == would not."""
    return [struct.pack("<f", v) for v in values]


def sym(mags: tuple[float, ...]) -> tuple[float, ...]:
    """A symmetric table in code order: +magnitudes, then -0.0 and the negatives."""
    return mags + tuple(-v for v in mags)


def neg(x: float) -> bool:
    return math.copysign(1.0, x) < 0


def f32(x: float) -> float:
    """float32 rounding through struct (independent of tcast.exact)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


# ---- rounding to a symmetric (implicit) table ---------------------------------------------


@pytest.mark.parametrize(
    ("t", "mode", "code"),
    [
        (1.25, EVEN, 2),  # tie 1.0 (k=2) / 1.5 (k=3): even k
        (1.25, AWAY, 3),  # ties to the larger magnitude
        (1.25, ZERO, 2),  # ties to the smaller magnitude
        (1.25, TRUNC, 2),
        (1.75, EVEN, 4),  # tie 1.5 (k=3) / 2.0 (k=4): even k is the upper one
        (1.75, ZERO, 3),
        (5.0, EVEN, 6),  # tie 4 (k=6) / 6 (k=7)
        (5.0, AWAY, 7),
        (5.0001, EVEN, 7),  # above the midpoint
        (5.99, TRUNC, 6),  # trunc: the largest magnitude <= |t|
        (0.25, EVEN, 0),  # tie 0 (k=0) / 0.5 (k=1)
        (0.25, AWAY, 1),
        (-1.25, EVEN, 8 + 2),  # the sign bit is the top code bit
        (-1.25, AWAY, 8 + 3),
        (-5.99, TRUNC, 8 + 6),
    ],
)
def test_symmetric_round_modes_tie_by_even_index(t, mode, code):
    assert round_to_table(t, sym(FP4), True, mode) == code


@pytest.mark.parametrize(
    ("t", "mode", "code"),
    [
        (1.0, EVEN, 2),  # tie 0.75 (k=1) / 1.25 (k=2): the even INDEX, not an even value
        (1.0, ZERO, 1),
        (1.0, AWAY, 2),
        (1.5, EVEN, 2),  # tie 1.25 (k=2) / 1.75 (k=3)
        (1.5, AWAY, 3),
        (0.375, EVEN, 0),  # tie 0 / 0.75
        (-0.375, EVEN, 8),  # ... to the -0 code
        (6.0, EVEN, 6),  # tie 5 (k=6) / 7 (k=7)
    ],
)
def test_symmetric_ties_go_to_the_even_index_of_an_uneven_table(t, mode, code):
    assert round_to_table(t, sym(FP4M0), True, mode) == code


@pytest.mark.parametrize("mode", [EVEN, AWAY, ZERO, TRUNC])
def test_symmetric_saturates_above_the_largest_magnitude(mode):
    assert round_to_table(6.5, sym(FP4), True, mode) == 7
    assert round_to_table(1e30, sym(FP4), True, mode) == 7
    assert round_to_table(-1e30, sym(FP4), True, mode) == 15
    assert round_to_table(7.0, sym(INT4), True, mode) == 7


@pytest.mark.parametrize("mode", [EVEN, AWAY, ZERO, TRUNC])
def test_symmetric_negative_zero_and_negatives_rounding_to_zero_take_the_minus_zero_code(mode):
    table = sym(FP4)
    assert round_to_table(0.0, table, True, mode) == 0
    assert round_to_table(-0.0, table, True, mode) == 8
    assert round_to_table(-0.125, table, True, mode) == 8  # |t| < 0.25: k = 0
    assert table[8] == 0.0 and neg(table[8])


def test_symmetric_every_midpoint_of_int4_ties_to_the_even_index():
    # int4 magnitudes k: the midpoint k + 1/2 goes to the even one of k, k + 1
    for k in range(7):
        t = k + 0.5
        want = k if k % 2 == 0 else k + 1
        assert round_to_table(t, sym(INT4), True, EVEN) == want
        assert round_to_table(t, sym(INT4), True, AWAY) == k + 1
        assert round_to_table(t, sym(INT4), True, ZERO) == k
        assert round_to_table(t, sym(INT4), True, TRUNC) == k


def test_stochastic_rounding_of_a_table_is_refused():
    with pytest.raises(tcast.SpecError, match="stochastic rounding is not defined for codebook"):
        round_to_table(1.0, sym(FP4), True, RoundMode.STOCHASTIC)


# ---- rounding to a given (ascending) table -------------------------------------------------

ASC = (-1.0, -0.25, 0.5, 1.0)


@pytest.mark.parametrize(
    ("t", "mode", "code"),
    [
        (0.125, EVEN, 2),  # tie -0.25 (i=1) / 0.5 (i=2): even index
        (0.125, AWAY, 2),  # the larger magnitude: 0.5
        (0.125, ZERO, 1),  # the smaller magnitude: -0.25
        (0.125, TRUNC, 1),  # t >= 0: the largest entry <= t
        (-0.625, EVEN, 0),  # tie -1 (i=0) / -0.25 (i=1)
        (-0.625, AWAY, 0),
        (-0.625, ZERO, 1),
        (-0.5, TRUNC, 1),  # t < 0: the smallest entry >= t
        (0.75, EVEN, 2),  # tie 0.5 (i=2) / 1.0 (i=3)
        (0.75, AWAY, 3),
        (0.7, EVEN, 2),
        (0.8, EVEN, 3),
        (-3.0, EVEN, 0),  # saturation below the first entry
        (-3.0, TRUNC, 0),
        (3.0, ZERO, 3),  # and above the last
        (0.5, TRUNC, 2),  # an entry is itself
    ],
)
def test_ascending_table_round_modes(t, mode, code):
    assert round_to_table(t, ASC, False, mode) == code


def test_ascending_table_negative_zero_input_takes_the_zero_entry():
    table = (-1.0, 0.0, 0.5, 1.0)
    assert round_to_table(-0.0, table, False, EVEN) == 1
    assert round_to_table(-0.1, table, False, EVEN) == 1  # nearer 0 than -1


# ---- the mapping error and the mapping choice ----------------------------------------------


def test_mapping_error_is_the_float32_sum_in_the_given_order():
    # terms fl32((q - t)**2): 2**24, then four 1s; 2**24 + 1 is a tie of float32 neighbours
    # 2**24 and 2**24 + 2 that goes to the even significand 2**24, four times
    ts = (-8192.0, 0.0, 0.0, 0.0, 0.0)
    qs = (-4096.0, 1.0, 1.0, 1.0, 1.0)
    assert mapping_error(ts, qs) == 2.0**24
    # the other order sums the small terms first: 4 + 2**24 is exact
    assert mapping_error(ts[::-1], qs[::-1]) == 2.0**24 + 4


def test_mapping_choice_depends_on_the_stated_summation_order():
    # B (index 0) meets t0 = -8192 at -4096 + 2**-11: (4096 + 2**-11)**2 = 2**24 + 4 + 2**-22,
    # fl32 -> 2**24 + 4 (spacing 2); the zeros at 0.0: error 2**24 + 4 in any order.
    # A (index 1) has the terms 2**24, 1, 1, 1, 1 (previous test): 2**24 in C order (chosen,
    # strictly lower), 2**24 + 4 in reverse order (equal to B's: the lower index, B, stays).
    b = (-4096.0 + 2.0**-11, 0.0)
    a = (-4096.0, 1.0)
    ts = (-8192.0, 0.0, 0.0, 0.0, 0.0)
    assert choose_mapping(ts, (b, a), False, EVEN) == (1, (0, 1, 1, 1, 1))
    assert choose_mapping(ts[::-1], (b, a), False, EVEN) == (0, (1, 1, 1, 1, 0))


def test_mapping_choice_ties_keep_the_lowest_index():
    # t = 0.25: {0, 0.5} ties to 0 (even k), error 1/16; {0, 0.75} rounds to 0, error 1/16
    half = sym((0.0, 0.5))
    three = sym((0.0, 0.75))
    assert choose_mapping((0.25,), (half, three), True, EVEN) == (0, (0,))
    assert choose_mapping((0.25,), (three, half), True, EVEN) == (0, (0,))
    # identical mappings: the first
    assert choose_mapping((1.3, -2.2), (sym(FP4), sym(FP4)), True, EVEN)[0] == 0


def test_mapping_choice_by_error_int_wins_over_fp():
    # mxfi4 subtile (t in the scaled domain) 5, 7, 3, -5:
    # fp4 rounds to 4 (tie 4/6 -> even k=6 is 4), 6, 3, -4: errors 1 + 1 + 0 + 1 = 3
    # int4 is exact: error 0 -> mapping 1 (i)
    ts = (5.0, 7.0, 3.0, -5.0)
    m, codes = choose_mapping(ts, (sym(FP4), sym(INT4)), True, EVEN)
    assert (m, codes) == (1, (5, 7, 3, 8 + 5))


def test_mapping_choice_by_error_fp_wins_over_int():
    # 0.5, 1.5, -0.5, 6: fp4 exact (error 0); int4 0 or 1 for 0.5 (tie -> even k=0), 2 for 1.5,
    # 6 exact: errors .25 + .25 + .25 + 0 -> mapping 0 (f)
    ts = (0.5, 1.5, -0.5, 6.0)
    m, codes = choose_mapping(ts, (sym(FP4), sym(INT4)), True, EVEN)
    assert (m, codes) == (0, (1, 3, 8 + 1, 7))


# ---- whole casts: worked examples of SEMANTICS §5.9 ----------------------------------------

MXFI4 = "cb41fi_e2m2fnuz_e8m0_t32s4"


def test_mxfi4_worked_tile_of_semantics_int_then_fp():
    # amax 7: E = 2, emax 2: scale code 127 (X = 1). Subtile 0 takes int4 (error 0 vs 3),
    # subtile 1 e2m1 (error 0 vs 0.75); codes s * 8 + k.
    r = cast_array([5.0, 7.0, 3.0, -5.0, 0.5, 1.5, -0.5, 6.0], (8,), MXFI4)
    assert r.scale == (127,)
    assert r.meta == (1, 0) and r.meta_shape == (2,) and r.meta_bits == 1
    assert r.codes == (5, 7, 3, 13, 1, 3, 9, 7)
    assert bits(r.values) == bits((5.0, 7.0, 3.0, -5.0, 0.5, 1.5, -0.5, 6.0))
    assert r.packed_meta() == b"\x01"
    assert r.packed() == bytes([0x75, 0xD3, 0x31, 0x79])  # code 2i in the low nibble


def test_mxfi4_tie_between_mappings_keeps_mapping_0():
    # subtile 1 = (2.5, 4, 1, 0): 2.5 is a tie of 2 and 3 in both tables and goes to 2
    # (even k: 4 in e2m1, 2 in int4); both errors 0.25: mapping 0 stays
    r = cast_array([7.0, 0.0, 0.0, 0.0, 2.5, 4.0, 1.0, 0.0], (8,), MXFI4)
    assert r.meta == (1, 0)
    assert r.codes[4:] == (4, 6, 2, 0)
    assert r.values[4:] == (2.0, 4.0, 1.0, 0.0)


@pytest.mark.parametrize(
    ("mode", "meta", "values"),
    [
        # subtile 1 (1.25, 2.5): ties in both tables, equal errors 5/16: mapping 0
        # subtile 2 (5.5): e2m1 6 / int4 tie 5|6 -> 6 (even), or 5 under trunc (error .25
        # against e2m1's 4, error 2.25)
        ("even", (1, 0, 0), (1.0, 2.0, 6.0)),
        ("away", (1, 0, 0), (1.5, 3.0, 6.0)),
        ("zero", (1, 0, 0), (1.0, 2.0, 6.0)),
        ("trunc", (1, 0, 1), (1.0, 2.0, 5.0)),
    ],
)
def test_codebook_round_modes_in_a_cast(mode, meta, values):
    xs = [7.0, 0.0, 0.0, 0.0, 1.25, 2.5, 0.0, 0.0, 5.5, 0.0, 0.0, 0.0]
    r = cast_array(xs, (12,), MXFI4, roundmode=mode)
    assert r.scale == (127,)
    assert r.meta == meta
    assert (r.values[4], r.values[5], r.values[8]) == values


def test_codebook_stochastic_rounding_is_a_spec_error_naming_the_datatype():
    with pytest.raises(tcast.SpecError, match=r"cb41fi_e2m2fnuz_e8m0_t32s4.*even, away"):
        cast_array([1.0, 2.0], (2,), MXFI4, roundmode="stochastic", seed=1)
    with pytest.raises(tcast.SpecError, match=r"cb41fi_e2m2fnuz_e8m0_t32s4"):
        cast_array([], (0,), MXFI4, roundmode="stochastic", seed=1)
    with pytest.raises(tcast.SpecError, match=r"not defined for codebook"):
        cast_block([1.0, 2.0], MXFI4, roundmode="stochastic", rbits=[0, 0])


def test_codebook_nonfinite_block_has_nan_scale_zero_codes_and_zero_meta():
    r = cast_array([1.0, 2.0, 0.0, 0.0, 3.0, math.nan, 0.0, 0.0], (8,), MXFI4)
    assert r.scale == (255,) and r.codes == (0,) * 8 and r.meta == (0, 0)
    assert all(math.isnan(v) for v in r.values)


def test_codebook_all_zero_block_keeps_the_sign_of_zero():
    r = cast_array([0.0, -0.0, -0.0, 0.0], (4,), MXFI4)
    assert r.scale == (0,) and r.meta == (0,)
    assert r.codes == (0, 8, 8, 0)
    assert [neg(v) for v in r.values] == [False, True, True, False]
    assert all(v == 0 for v in r.values)


def test_mxfp4e_two_meta_bits_pack_four_per_byte():
    # tables e2m1 * 4, * 2, * 1, / 2 (max 24: E = 4, emax 4, X = 1); subtiles of 8:
    # (24) -> 0; (12, 1): mapping 1 holds both; (0.5) -> 2; (0.25) -> 3 (mapping 2 ties
    # 0.25 between 0 and 0.5 to 0: error 1/16)
    xs = [0.0] * 32
    xs[0], xs[8], xs[9], xs[16], xs[24] = 24.0, 12.0, 1.0, 0.5, 0.25
    r = cast_array(xs, (32,), "cb42fe0123_e3m2fnuz_e8m0_t32s8")
    assert r.scale == (127,)
    assert r.meta == (0, 1, 2, 3) and r.meta_bits == 2
    assert r.packed_meta() == bytes([0b11100100])
    assert (r.values[0], r.values[8], r.values[9], r.values[16], r.values[24]) == (
        24.0,
        12.0,
        1.0,
        0.5,
        0.25,
    )


def test_codebook_spelling_of_mx6_differs_from_mx6():
    # SEMANTICS §5.9: cb51ie_e2m3 tables k/4 and k/8 (M 3.75, emax 1), mx6 = int5 offsets
    xs = [1.5, 0.0, 0.984375, 0.5] + [0.0] * 12
    cb = cast_array(xs, (16,), "cb51ie_e2m3_e8m0_t16s2")
    mx = cast_array(xs, (16,), "int5_e8m0_t16s2o1")
    assert cb.scale == (126,) and mx.scale == (127,)
    # the codebook: t = 2x = (3, 0, 1.96875, 1): mapping 0 (k/4) k = 12, 0, 8, 4
    assert cb.meta == (0,) * 8
    assert cb.codes[:4] == (12, 0, 8, 4)
    assert cb.values[:4] == (1.5, 0.0, 1.0, 0.5)
    # mx6: pair 1 below 1: d = 1, 0.984375 * 16 = 15.75 saturates to 15
    assert mx.meta == (0,) + (1,) * 7
    assert mx.codes[:4] == (12, 0, 15, 8)
    assert mx.values[:4] == (1.5, 0.0, 0.9375, 0.5)
    # 5-bit codebook codes: a dense bit stream, 16 codes in 10 bytes
    stream = sum(c << (5 * i) for i, c in enumerate(cb.codes))
    assert cb.packed() == stream.to_bytes(10, "little") == pack_codes(cb.codes, 5)


def test_codebook_3_bit_codes_pack_as_a_dense_stream():
    # cb31fi_e2m2fnuz (max 7): e2m0 {1, 2, 4} placed at 2**0; int3 {0.5, 1, 1.5} at 2**2:
    # {2, 4, 6}. M = 6, emax 2; amax 6 (X = 1); two subtiles of 4: int3 {2, 4, 6} holds
    # (6, 4, -2, 0) exactly, e2m0 (1, -2, 4, -0) (int3 would give 1 -> 0: error 1).
    r = cast_array([6.0, 4.0, -2.0, 0.0, 1.0, -2.0, 4.0, -0.0], (8,), "cb31fi_e2m2fnuz_e8m0_t32s4")
    assert r.scale == (127,)
    assert r.meta == (1, 0)
    assert r.codes == (3, 2, 4 + 1, 0, 1, 4 + 2, 3, 4)
    stream = sum(c << (3 * i) for i, c in enumerate(r.codes))
    assert r.packed() == stream.to_bytes(3, "little")


def test_nf4_rounds_to_the_nearest_entry_and_ties_to_the_even_index():
    # cb40_float32_nf4_float32_t64: amax 1 -> float32 scale 1 (r = 1). Entries used:
    # i3 -0.39491748809814453, i4 -0.28444138169288635, i7 0.0, i8 0.07958029955625534,
    # i12 0.44070982933044434, i13 0.5626170039176941, i15 1.0.
    # 0.5 is nearer i12 (0.0593) than i13 (0.0626); -0.3 nearer i4; the midpoint of i7 and
    # i8 (half of 0.07958029955625534, exact in float32) ties to the even index 8
    # (bitsandbytes: x > threshold, the lower code 7).
    mid = 0.07958029955625534 / 2
    r = cast_array([1.0, 0.5, f32(-0.3), mid], (4,), "cb40_float32_nf4_float32_t64")
    assert r.scale == (0x3F800000,)
    assert r.codes == (15, 12, 4, 8)
    assert bits(r.values) == bits(
        (1.0, 0.44070982933044434, -0.28444138169288635, 0.07958029955625534)
    )
    assert r.meta is None and r.meta_shape is None and r.meta_bits == 0


def test_codebook_two_level_scaling():
    # cb41fi with an e4m3fn tile scale under a float32 tensor scale (M = 7): tensor amax
    # 3136 = 448 * 7 -> t = 1; tile 0 s = 448; tile 1 (amax 14) s = 2, r = 0.5, X = 2:
    # t-values (7, 5, 3, 1) take int4, (0.5, 1.5, -0.5, 6) e2m1.
    xs = [3136.0] + [0.0] * 31 + [14.0, 10.0, 6.0, 2.0, 1.0, 3.0, -1.0, 12.0] + [0.0] * 24
    r = cast_array(xs, (64,), "cb41fi_e2m2fnuz_e4m3fn_float32_t32s4")
    assert r.tenscale == 0x3F800000 and r.scale == (0x7E, 0x40)
    assert r.meta[8:10] == (1, 0)
    assert r.values[32:40] == (14.0, 10.0, 6.0, 2.0, 1.0, 3.0, -1.0, 12.0)


def test_codebook_tensor_scale_has_one_mapping_for_the_tensor():
    r = cast_array([5.0, 7.0, 3.0, -5.0], (2, 2), "cb41fi_e2m2fnuz_e8m0")
    assert r.meta_shape == () and r.meta == (1,)
    assert bits(r.values) == bits((5.0, 7.0, 3.0, -5.0))


def test_codebook_2d_subtiles_meta_in_c_order():
    # t4s2_t4s2 on 4 x 4: one tile, four 2 x 2 subtiles; meta shape (2, 2).
    # (0, 0) = flat 0, 1, 4, 5 holds 7: int4; (0, 1) = flat 2, 3, 6, 7: e2m1 values;
    # (1, 0) = flat 8, 9, 12, 13: int values; (1, 1) zeros: mapping 0.
    xs = [0.0] * 16
    xs[0] = 7.0
    xs[2], xs[3], xs[6], xs[7] = 0.5, 1.5, -0.5, 6.0
    xs[8], xs[9], xs[12], xs[13] = 5.0, 7.0, 3.0, -5.0
    code = "cb41fi_e2m2fnuz_e8m0_t4s2_t4s2"
    r = cast_array(xs, (4, 4), code)
    assert r.meta_shape == (2, 2) and r.meta == (1, 0, 1, 0)
    assert bits(r.values) == bits(tuple(xs))
    assert subtile_indices((4, 4), code)[1][1] == ((0, 1), [2, 3, 6, 7])


@pytest.mark.parametrize(
    ("code", "shape", "transpose"),
    [
        (MXFI4, (3, 40), False),
        ("cb41f01_e2m2fnuz_e8m0_t32s4", (50,), False),
        ("cb42fe0123_e3m2fnuz_e8m0_t32s8", (2, 36), False),
        ("cb42f1346_e2m3fnuz_e8m0_t32s8", (40,), False),
        ("cb41fi_e2m2fnuz_e8m0_t4s2_t8", (6, 10), True),
        ("cb41fi_e2m2fnuz_e4m3fn_float32_t32s4", (40,), False),
        ("cb41fi_e2m2fnuz_e8m0", (3, 5), False),
        ("cb40_float32_nf4_float32_t64", (70,), False),
    ],
)
def test_upcast_of_stored_parts_equals_the_virtual_result(code, shape, transpose):
    n = math.prod(shape)
    xs = [f32((-1) ** i * ((i * 7) % 11) * 2.0 ** (-(i % 6)) / 3) for i in range(n)]
    r = cast_array(xs, shape, code, transpose_scale=transpose)
    assert bits(upcast(r, code, transpose_scale=transpose)) == bits(r.values)
    if r.meta is not None and len(r.meta) > 1:
        assert len(set(r.meta)) > 1


def test_upcast_reads_the_mapping_from_meta():
    # the mxfi4 worked tile with its metadata swapped: codes 5, 7, 3, 13 read in e2m1 are
    # 3, 6, 1.5, -3, codes 1, 3, 9, 7 in int4 are 1, 3, -1, 7
    r = cast_array([5.0, 7.0, 3.0, -5.0, 0.5, 1.5, -0.5, 6.0], (8,), MXFI4)
    swapped = dataclasses.replace(r, meta=(0, 1))
    assert upcast(swapped, MXFI4) == (3.0, 6.0, 1.5, -3.0, 1.0, 3.0, -1.0, 7.0)


@pytest.mark.parametrize(
    ("amax", "mode", "scale"),
    [
        # mxfi4: M = 7, emax 2, tau = 7/4; e = E - 2 (+1): code 125 (+1); E = 0 here
        (f32(1.8), "floor", 125),
        (f32(1.8), "ceil", 126),
        (f32(1.8), "midmax", 125),  # bump iff sigma > (7/4 + 2) / 2 = 1.875
        (1.875, "midmax", 125),
        (f32(1.8), "topbinade", 126),  # bump iff sigma > 1.75
        (f32(1.8), "option3", 125),  # e2m2fnuz precision 3: 1.8 -> 1.75
        (1.875, "option3", 126),  # a tie of 1.75 (odd) and 2.0: to 2.0, bump
    ],
)
def test_codebook_scale_modes_use_max_value_and_the_compute_precision(amax, mode, scale):
    r = cast_block([amax, 0.0, 0.0, 0.0], MXFI4, scalemode=mode)
    assert r.scale == scale


def test_cast_block_subtiles_argument_is_a_partition_of_positions():
    r = cast_block([0.5, 5.0, 1.5, 7.0], MXFI4, subtiles=[[0, 2], [1, 3]])
    assert r.meta == (0, 1)  # (0.5, 1.5): e2m1 exact; (5, 7): int4 exact
    with pytest.raises(tcast.SpecError, match=r"every position 0\.\.3 once"):
        cast_block([0.5, 5.0, 1.5, 7.0], MXFI4, subtiles=[[0, 2], [1]])
    with pytest.raises(tcast.SpecError, match="a subtile position must be an int"):
        cast_block([0.5, 5.0], MXFI4, subtiles=[[0, 1.0]])
    with pytest.raises(tcast.SpecError, match="pass subtiles="):
        cast_block([0.5] * 4, "cb41fi_e2m2fnuz_e8m0_t4s2_t4s2")
    with pytest.raises(tcast.SpecError, match="has none"):
        cast_block([0.5] * 4, "e2m1f_e8m0_t32", subtiles=[[0, 1, 2, 3]])


def test_upcast_refuses_parts_that_do_not_fit_the_datatype():
    r = cast_array([5.0, 7.0, 3.0, -5.0, 0.5, 1.5, -0.5, 6.0], (8,), MXFI4)
    with pytest.raises(tcast.SpecError, match="needs 2 metadata codes"):
        upcast(dataclasses.replace(r, meta=(1,)), MXFI4)
    with pytest.raises(tcast.SpecError, match="does not fit in 1 bits"):
        upcast(dataclasses.replace(r, meta=(2, 0)), MXFI4)
    with pytest.raises(tcast.SpecError, match="do not fill shape"):
        upcast(dataclasses.replace(r, codes=r.codes[:7]), MXFI4)
    with pytest.raises(tcast.SpecError, match="scale codes for the 1 blocks"):
        upcast(dataclasses.replace(r, scale=(127, 127)), MXFI4)


def test_a_cast_sums_a_2d_subtile_in_c_order_whatever_the_block_order():
    # Given tables (ascending; 8192 makes M = 8192 so that the float32 scale is 1):
    # B (mapping 0) = (-4096 + 2**-11, 0, 4096, 8192), A (mapping 1) = (-4096, 1, 4096, 8192).
    # One 2 x 2 tile [[0, -8192], [0, 0]], one mapping per tile. A's terms in C order are
    # 1, 2**24, 1, 1: 1 + 2**24 ties to 2**24, then 2**24 twice: E_A = 2**24 < E_B = 2**24 + 4
    # (B: (4096 + 2**-11)**2 -> 2**24 + 4, zeros elsewhere), so A. Column order (the order in
    # which transpose_scale lists the block) would give 1 + 1 + 2**24 + 1 = 2**24 + 4 (ties to
    # the even significand), equal to E_B: B.
    b = (-4096.0 + 2.0**-11, 0.0, 4096.0, 8192.0)
    a = (-4096.0, 1.0, 4096.0, 8192.0)
    cb = tcast.codebook((b, a), "float32", label="order")
    dt = tcast.DataType(cb, tcast.scale("float32_t2_t2"))
    for transpose in (False, True):
        r = cast_array([0.0, -8192.0, 0.0, 0.0], (2, 2), dt, transpose_scale=transpose)
        assert r.scale == (0x3F800000,)
        assert r.meta == (1,)
        assert r.codes == (1, 0, 1, 1)
        assert bits(r.values) == bits((1.0, -4096.0, 1.0, 1.0))


def test_given_table_with_minus_zero_saturation_and_trunc_in_a_cast():
    # table (-1, -0.0, 0.25, 0.5): M = 1; amax 1 -> float32 scale 1. 1.0 is above the last
    # entry: 0.5 (saturation); -0.1 rounds to the -0.0 entry, which decodes to -0.0;
    # 0.375 ties 0.25 (index 2) / 0.5 (index 3): even index 2; trunc sends 0.375 to 0.25 and
    # -0.75 to -0.0 (the smallest entry >= t), even -0.75 ties -1 / -0.0 to index 0.
    cb = tcast.codebook(((-1.0, -0.0, 0.25, 0.5),), "float32", label="mz")
    dt = tcast.DataType(cb, tcast.scale("float32_t4"))
    xs = [1.0, f32(-0.1), 0.375, -0.75]
    r = cast_array(xs, (4,), dt)
    assert r.codes == (3, 1, 2, 0)
    assert r.values[0] == 0.5 and r.values[2] == 0.25 and r.values[3] == -1.0
    assert r.values[1] == 0.0 and neg(r.values[1])
    r = cast_array(xs, (4,), dt, roundmode="trunc")
    assert r.codes == (3, 1, 2, 1)


def test_mapping_errors_overflowing_to_inf_keep_the_lowest_index():
    # cb41f10: mapping 0 is e2m1 (max 6), mapping 1 the top of e2m2fnuz (max 7). A float16
    # scale clamps at 65504, so 2**100 scales to t = 2**100 / 65504 (about 1.9e25): both
    # errors (6 - t)**2 and (7 - t)**2 overflow float32 to Inf. Exactly, mapping 1 is nearer;
    # Inf < Inf is false, so mapping 0 stays: code 7 (6.0), value 6 * 65504.
    r = cast_block([2.0**100, 1.0], "cb41f10_e2m2fnuz_float16_t16")
    assert r.scale == 0x7BFF  # 65504
    assert r.meta == (0,)
    assert r.codes == (7, 0)
    assert bits(r.values) == bits((393024.0, 0.0))


def test_all_zero_block_of_given_tables_rounds_zero_like_any_input():
    # No 0 entry: mapping 0 (-1, -0.5, 0.5, 1) ties 0 between indices 1 and 2 and takes the
    # even index 2 (0.5), error 4 * 0.25 = 1; mapping 1 (-2, -1, 0.25, 1) takes 0.25, error
    # 4 * 0.0625 = 0.25: mapping 1, codes 2, values 0.25 * 2**-127 (scale code 0) = 2**-129.
    cb = tcast.codebook([[-1.0, -0.5, 0.5, 1.0], [-2.0, -1.0, 0.25, 1.0]], "float32", label="nz")
    r = cast_block([0.0, -0.0, 0.0, -0.0], tcast.DataType(cb, tcast.scale("e8m0_t4")))
    assert r.scale == 0 and r.meta == (1,) and r.codes == (2, 2, 2, 2)
    assert bits(r.values) == bits([2.0**-129] * 4)
    # NF4's 0 entry (index 7) is +0.0: a -0.0 input decodes to +0.0, the entry's sign
    r = cast_block([-0.0, 0.0], "nf4")
    assert r.codes == (7, 7) and r.meta is None
    assert bits(r.values) == bits((0.0, 0.0))
