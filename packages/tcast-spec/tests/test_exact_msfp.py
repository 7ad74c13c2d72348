"""Named rules of subtile exponent offsets in the exact model (SEMANTICS.md §5.8, §8; MSFP).

Every expected value is worked by hand from the rule (in the comment beside it, exact
fractions where arithmetic is needed); none is computed by the code under test.

Notation: MX9 = int8_e8m0_t16s2o1 (element code = two's complement byte of
round(x' * 2**d * 64), clamped to +-127; value = code / 64 * 2**-d * X), MX6 = int5 (x' * 8,
+-15), MX4 = int3 (x' * 2, +-3); e8m0 code = E + 127.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import pytest

import tcast
from tcast.exact import cast_array, cast_block, pack_codes, subtile_indices, subtile_offset, upcast

NAN = math.nan
INF = math.inf


def bits(values) -> list[bytes]:
    """float32 bits of each value: a wrong sign of zero fails, as values == would not."""
    return [struct.pack("<f", v) for v in values]


def f32(x: float) -> float:
    """float32 rounding through struct (independent of tcast.exact)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def neg(x: float) -> bool:
    return math.copysign(1.0, x) < 0


# ---- the offset rule -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scaled", "emax", "bits", "d"),
    [
        ((1.5, 0.25), 0, 1, 0),  # MXINT: a in [1, 2): no offset
        ((0.99, -0.5), 0, 1, 1),  # a in [1/2, 1): one binade below
        ((0.25, 0.0), 0, 1, 1),  # two binades below: clamped to 2**B - 1
        ((0.0, -0.0), 0, 1, 1),  # a zero subtile: the largest offset
        ((2.0**-149, 0.0), 0, 1, 1),  # float32 subnormal: its exact binade, clamped
        ((6.0, 1.0), 2, 2, 0),  # e2m1 (emax 2): a = 6
        ((3.0,), 2, 2, 1),  # floor_log2(3) = 1: 2 - 1
        ((0.75,), 2, 2, 3),  # floor_log2(0.75) = -1: 2 - (-1)
        ((0.3,), 2, 2, 3),  # 2 - (-2) = 4: clamped to 3
        ((0.3,), 2, 3, 4),  # ... but not with 3 bits
        ((0.0,), 2, 4, 15),
        ((8.0,), 2, 2, 0),  # above 2**emax (a bumped scale cannot give it; clamp at 0)
    ],
)
def test_offset_rule_is_emax_minus_the_binade_of_the_subtile_amax(scaled, emax, bits, d):
    assert subtile_offset(scaled, emax, bits) == d


def test_offset_rule_refuses_a_width_outside_1_to_4_and_nonfinite_inputs():
    with pytest.raises(tcast.SpecError, match=r"1\.\.4"):
        subtile_offset((1.0,), 0, 0)
    with pytest.raises(tcast.SpecError, match=r"1\.\.4"):
        subtile_offset((1.0,), 0, 5)
    with pytest.raises(tcast.SpecError, match="finite"):
        subtile_offset((NAN,), 0, 1)


# ---- MSFP: the worked tile, saturation, every magnitude class of a pair --------------------

MX9, MX6, MX4 = "int8_e8m0_t16s2o1", "int5_e8m0_t16s2o1", "int3_e8m0_t16s2o1"


def test_mx9_worked_tile_of_semantics():
    xs = [3.0, -0.5, 1.99609375, 0.25, 0.0, -0.0, 0.0078125, -0.0234375] + [0.0] * 8
    r = cast_array(xs, (16,), MX9)
    assert r.scale == (128,)  # amax 3: E = 1
    assert r.codes == (0x60, 0xF0, 0x7F, 0x10, 0, 0, 0, 0xFE) + (0,) * 8
    assert bits(r.values) == bits((3.0, -0.5, 1.984375, 0.25, 0.0, 0.0, 0.0, -0.03125) + (0.0,) * 8)
    assert r.meta == (0, 1, 1, 1, 1, 1, 1, 1) and r.meta_shape == (8,) and r.meta_bits == 1
    assert r.packed_meta() == b"\xfe"
    assert r.packed() == bytes([0x60, 0xF0, 0x7F, 0x10, 0, 0, 0, 0xFE] + [0] * 8)


def _half_even(v: Fraction) -> int:
    """Round an exact value to an integer, ties to even (written out, not tcast's)."""
    n = math.floor(v)
    rest = v - n
    return n + 1 if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2) else n


def _msfp_pair(a: Fraction, b: Fraction, m: int) -> tuple[int, list[Fraction]]:
    """The pair rule of SEMANTICS §5.8 for E = 0 (X = 1): offset and values."""
    d = 1 if max(abs(a), abs(b)) < 1 else 0
    top = (1 << m) - 1
    out = []
    for v in (a, b):
        q = _half_even(abs(v) * 2 ** (m - 1) * 2**d)
        q = min(q, top)  # an offset pair rounding up to 2**E saturates
        out.append((-1 if v < 0 else 1) * Fraction(q, 2 ** (m - 1)) / 2**d)
    return d, out


@pytest.mark.parametrize(("code", "m"), [(MX9, 7), (MX6, 4), (MX4, 2)])
def test_msfp_every_magnitude_class_of_a_pair(code, m):
    # Every half-step point k * 2**-(m+1) in [0, 2) (each grid value and each midpoint, for
    # d = 0 and d = 1), paired with 0 (d decided by the value) and with 1.0 (d = 0 forced);
    # pair 0 = (1.5, 0) pins E = 0. Seven pairs per block.
    step = Fraction(1, 2 ** (m + 1))
    pairs = []
    for k in range(2 ** (m + 2)):
        a = k * step
        for sign in (1, -1):
            pairs += [(sign * a, Fraction(0)), (Fraction(1), sign * a)]
    for start in range(0, len(pairs), 7):
        chunk = pairs[start : start + 7]
        xs = [1.5, 0.0] + [float(v) for p in chunk for v in p]
        r = cast_block(xs, code)
        assert r.scale == 127
        assert r.meta[0] == 0
        for j, (a, b) in enumerate(chunk):
            d, want = _msfp_pair(a, b, m)
            assert r.meta[j + 1] == d, (a, b)
            assert [Fraction(v) for v in r.values[2 + 2 * j : 4 + 2 * j]] == want, (a, b)


@pytest.mark.parametrize(
    ("code", "m", "x", "value"),
    [
        (MX9, 7, 0.998046875, 1.984375 / 2),  # 127.75 -> 128 -> 127: 127/64/2
        (MX6, 4, 0.984375, 0.9375),  # 15.75 -> 16 -> 15: 15/8/2
        (MX4, 2, 0.875, 0.75),  # 3.5 -> 4 (tie to even) -> 3: 3/2/2
    ],
)
def test_msfp_offset_pair_rounding_up_to_2E_saturates(code, m, x, value):
    # amax 1.5: E = 0; the pair (x, 0) is below 1: d = 1, and rounds up to 2**E = 1.0,
    # which m magnitude bits cannot hold
    r = cast_block([1.5, 0.0, x, 0.0], code)
    assert r.meta == (0, 1)
    assert r.values[2] == value
    assert r.codes[2] == (1 << m) - 1


def test_msfp_zero_subtile_takes_the_largest_offset():
    r = cast_block([1.0, 0.5, 0.0, -0.0, 0.0, 0.0], "int8_e8m0_t16s2o2")
    assert r.meta == (0, 3, 3)
    assert r.codes[2:] == (0, 0, 0, 0)
    assert r.values[2:] == (0.0, 0.0, 0.0, 0.0)
    # an all-zero block: scale code 0, every subtile the largest offset
    r = cast_block([0.0, -0.0], MX9)
    assert r.scale == 0 and r.meta == (1,) and r.codes == (0, 0)


def test_zero_subtile_of_float_data_keeps_the_minus_zero_code():
    # amax 1.0: e2m1 emax 2, scale 2**-2 (code 125), x' = 4.0 (code 6), d = 0; the zero
    # subtile (-0.0, 0.0) takes d = 1 and codes 0x8 (e2m1's -0) and 0, values -0.0 and +0.0
    r = cast_block([1.0, 0.0, -0.0, 0.0], "e2m1f_e8m0_t32s2o1")
    assert r.scale == 125 and r.meta == (0, 1)
    assert r.codes == (6, 0, 8, 0)
    assert bits(r.values) == bits((1.0, 0.0, -0.0, 0.0))


def test_offsets_of_float_data_saturate_above_m():
    # amax 6: scale 1 (code 127), x' = x. The pair (3.9, 0) has a = 3.9 < 4 = 2**emax: d = 1,
    # and 7.8 saturates to e2m1's 6 (code 7): 6 / 2 = 3.0. Without offsets 3.9 rounds to 4.
    x = f32(3.9)
    r = cast_block([6.0, 0.0, x, 0.0], "e2m1f_e8m0_t32s2o1")
    assert r.meta == (0, 1) and r.codes == (7, 0, 7, 0)
    assert bits(r.values) == bits((6.0, 0.0, 3.0, 0.0))
    assert cast_block([6.0, 0.0, x, 0.0], "e2m1f_e8m0_t32").values[2] == 4.0
    # e4m3fn (M = 448): 255 gets d = 1, 510 saturates to 448, value 224 (256 without offsets)
    r = cast_block([448.0, 0.0, 255.0, 0.0], "e4m3fn_e8m0_t32s2o1")
    assert r.meta == (0, 1) and r.codes[2] == 0x7E and r.values[2] == 224.0


def test_msfp_subnormal_amax_block_uses_the_exact_binade():
    # amax 2**-127 (a float32 subnormal): E = -127, e8m0 code 0 (X = 2**-127), x' = x * 2**127.
    # Pair 1 = (2**-128 + 2**-134, 0): x' = 1/2 + 2**-7 < 1, d = 1, 65/64 * 1/2 * 2**-127
    # = 65 * 2**-134: the input itself. (Quark flushes float32 subnormals to zero.)
    x = 2.0**-128 + 2.0**-134
    r = cast_block([2.0**-127, 0.0, x, 0.0], MX9)
    assert r.scale == 0
    assert r.meta == (0, 1)
    assert r.codes[2] == 65
    assert r.values[2] == 65 * 2.0**-134 == x


@pytest.mark.parametrize("bad", [NAN, INF, -INF])
def test_msfp_nonfinite_block_has_nan_scale_zero_codes_and_zero_offsets(bad):
    r = cast_block([1.0, 0.0, bad, 0.0, 0.0, 0.0], "int8_e8m0_t16s2o2")
    assert r.scale == 255
    assert r.codes == (0,) * 6
    assert r.meta == (0, 0, 0)
    assert all(math.isnan(v) for v in r.values)


@pytest.mark.parametrize(
    ("mode", "rbits", "code"),
    [
        ("even", None, 126),  # 0.98828125 * 2 * 64 = 126.5: tie to even 126
        ("away", None, 127),
        ("zero", None, 126),
        ("trunc", None, 126),
        ("stochastic", [0, 0, 0, 0], 126),  # r = 0 truncates
        # int8 elements take K = 8 bits: frac 1/2 goes up iff 128 + r >= 2**8
        ("stochastic", [0, 0, 1 << 7, 0], 127),
        ("stochastic", [0, 0, (1 << 7) - 1, 0], 126),
        ("stochastic", [0, 0, 0xFF, 0], 127),
    ],
)
def test_msfp_round_modes_apply_after_the_offset(mode, rbits, code):
    r = cast_block([1.5, 0.0, 0.98828125, 0.0], MX9, roundmode=mode, rbits=rbits)
    assert r.meta == (0, 1)
    assert r.codes[2] == code
    assert r.values[2] == code / 128


@pytest.mark.parametrize(
    ("mode", "scale", "meta"),
    [
        ("floor", 127, (0, 1)),  # amax 1.5: E = 0; x' = 1.5, 0.75
        ("ceil", 128, (1, 1)),  # bump: X = 2, x' = 0.75, 0.375: both pairs below 1
    ],
)
def test_msfp_offsets_follow_the_scale_mode(mode, scale, meta):
    r = cast_block([1.5, 0.0, 0.75, 0.0], MX9, scalemode=mode)
    assert (r.scale, r.meta) == (scale, meta)
    # ceil: 0.75 * 2 * 64 = 96 -> 96/64/2 * 2 = 1.5; exact both ways
    assert bits(r.values) == bits((1.5, 0.0, 0.75, 0.0))


# ---- other element formats and scales ------------------------------------------------------


def test_float_data_offsets_use_the_element_emax():
    # e2m1f (emax 2, M 6) with e8m0_t32s2o2: amax 6 -> E = 2 - 2 = 0, X = 1.
    # Pair (0.75, 0.25): a = 0.75, floor_log2 = -1, d = 2 - (-1) = 3: x' * 8 = 6, 2 -> exact;
    # values 6/8, 2/8. Pair (6, 0.3): d = 0: 0.3 rounds (e2m1 grid .5) to 0.5.
    r = cast_block([6.0, f32(0.3), 0.75, 0.25], "e2m1f_e8m0_t32s2o2")
    assert r.scale == 127
    assert r.meta == (0, 3)
    assert bits(r.values) == bits((6.0, 0.5, 0.75, 0.25))
    assert r.codes == (0b0111, 0b0001, 0b0111, 0b0100)  # 6, 0.5, 6 (=.75*8), 2 (=.25*8)


def test_int_data_under_a_float_scale_offsets_use_floor_log2_maxint():
    # int8 (maxint 127) with float32 scale: s = 127 / 127 = 1, r = 1; emax = floor_log2(127) = 6
    # pair (127, 0): d = 0; pair (40, -3): a = 40, floor_log2 = 5, d = 1: 80, -6 -> 40, -3;
    # pair (20.25, 0): d = 6 - 4 = 2 clamped to 1 (o1): 40.5 -> 40 (tie even) -> 20.0
    r = cast_block([127.0, 0.0, 40.0, -3.0, 20.25, 0.0], "int8_float32_t16s2o1")
    assert r.meta == (0, 1, 1)
    assert bits(r.values) == bits((127.0, 0.0, 40.0, -3.0, 20.0, 0.0))
    assert r.codes[2:5] == (80, 256 - 6, 40)


def test_two_level_scaling_with_offsets():
    # int8 with an e4m3fn tile scale under a float32 tensor scale, two tiles of 16.
    # tensor amax 56896 = 448 * 127: t = 1.0. Tile 0 (amax 56896): s = 448 (0x7E).
    # Tile 1 (amax 254): s = RNE(254 / 127 / 1) = 2 (0x40), r = fl32(1 / 1 / 2) = 0.5, X = 2.
    # emax = floor_log2(127) = 6. Pair (254, 0): x' = 127, d = 0, code 127, value 254.
    # Pair (50.5, -3): x' = 25.25, -1.5; a = 25.25, floor_log2 = 4: d = 6 - 4 = 2, clamped
    # to 1; 50.5 ties to the even 50, -3: values 50 / 2 * 2 = 50, -3 / 2 * 2 = -3.
    xs = [56896.0] + [0.0] * 15 + [254.0, 0.0, 50.5, -3.0] + [0.0] * 12
    r = cast_array(xs, (32,), "int8_e4m3fn_float32_t16s2o1")
    assert r.tenscale == 0x3F800000
    assert r.scale == (0x7E, 0x40)
    assert r.meta == (0,) + (1,) * 7 + (0,) + (1,) * 7
    assert r.codes[16:20] == (127, 0, 50, 256 - 3)
    assert r.values[16:20] == (254.0, 0.0, 50.0, -3.0)


# ---- geometry: partial subtiles, 2-D subtiles, transposed scales, packing, upcast -------------


def test_partial_tile_has_a_partial_last_subtile():
    # 5 elements of mx9: pairs (0,1), (2,3) and the single element 4; amax 1.5 (E = 0)
    xs = [1.5, 0.0, 0.5, 0.25, 0.75]
    r = cast_array(xs, (5,), MX9)
    assert r.meta_shape == (3,) and r.meta == (0, 1, 1)
    assert bits(r.values) == bits((1.5, 0.0, 0.5, 0.25, 0.75))
    assert r.codes == (96, 0, 64, 32, 96)  # with d = 1: x' * 128
    assert r.packed_meta() == bytes([0b110])


def test_metadata_layout_of_2d_subtiles_is_c_order_of_meta_shape():
    # t4s2o1_t4 on 4 x 8: tiles 4 x 4, subtiles 2 x 4 (the second segment has no s: its whole
    # tile); meta shape (2, 2); subtile (i, j) holds rows 2i, 2i+1 and columns 4j..4j+3
    meta_shape, subs = subtile_indices((4, 8), "int8_e8m0_t4s2o1_t4")
    assert meta_shape == (2, 2)
    assert [k for k, _ in subs] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert subs[1][1] == [4, 5, 6, 7, 12, 13, 14, 15]
    # transposed: the segments swap dimensions, the subtile moves with its segment:
    # t4s2 along the last dimension (subtile 2), t4 along the first (its tile, 4)
    meta_shape, subs = subtile_indices((4, 8), "int8_e8m0_t4s2o1_t4", transpose_scale=True)
    assert meta_shape == (1, 4)
    assert subs[1][1] == [2, 3, 10, 11, 18, 19, 26, 27]
    lay = tcast.layout.block_layout((4, 8), tcast.datatype("int8_e8m0_t4s2o1_t4"), False)
    assert lay.meta_shape == (2, 2)
    lay = tcast.layout.block_layout((4, 8), tcast.datatype("int8_e8m0_t4s2o1_t4"), True)
    assert lay.meta_shape == (1, 4)


def test_2d_subtile_offsets_in_a_cast():
    # 4 x 4 of t4s2o1_t4 (one tile, two 2 x 4 subtiles): rows 0-1 hold 1.5 (E = 0, d = 0),
    # rows 2-3 are below 1 (d = 1)
    xs = [1.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.25, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.75]
    r = cast_array(xs, (4, 4), "int8_e8m0_t4s2o1_t4")
    assert r.meta_shape == (2, 1) and r.meta == (0, 1)
    assert r.codes[7] == 16 and r.codes[8] == 64 and r.codes[15] == 256 - 96


def test_msfp_element_codes_pack_as_dense_3_and_5_bit_streams():
    # mx4 (int3) codes of 1.5, -1.5, 1, -1, 0.5, -0.5, 0, 1.5 (E = 0, d = 0 for the first two
    # pairs, 1 for the rest): 3, -3 -> 0b101, 2, -2 -> 0b110, then d = 1: 0.5*4 = 2, -2 -> 0b110,
    # 0, 1.5 (pair 3 has 1.5: d = 0) -> 0, 3
    xs = [1.5, -1.5, 1.0, -1.0, 0.5, -0.5, 0.0, 1.5]
    r = cast_array(xs, (8,), MX4)
    assert r.meta == (0, 0, 1, 0)
    assert r.codes == (3, 5, 2, 6, 2, 6, 0, 3)
    stream = sum(c << (3 * i) for i, c in enumerate(r.codes))
    assert r.packed() == stream.to_bytes(3, "little") == pack_codes(r.codes, 3)
    # mx6 (int5): 1.5 -> 12, -1.5 -> -12 = 20, ... 8 codes in 5 bytes
    r = cast_array(xs, (8,), MX6)
    assert r.codes == (12, 20, 8, 24, 8, 24, 0, 12)
    stream = sum(c << (5 * i) for i, c in enumerate(r.codes))
    assert r.packed() == stream.to_bytes(5, "little")


def test_meta_of_2_bits_packs_four_per_byte():
    # e2m1f_e8m0_t32s2o2, 10 elements: amax 6 (X = 1); pair offsets 0, 3 (zero), 1 (a = 3),
    # 2 (a = 1), 3 (a = 0.5 -> 2 - (-1) = 3): meta (0, 3, 1, 2, 3)
    xs = [6.0, 0.0, 0.0, 0.0, 3.0, 0.0, 1.0, 0.0, 0.5, 0.0]
    r = cast_array(xs, (10,), "e2m1f_e8m0_t32s2o2")
    assert r.meta == (0, 3, 1, 2, 3)
    assert r.packed_meta() == bytes([0 | 3 << 2 | 1 << 4 | 2 << 6, 3])


@pytest.mark.parametrize(
    ("code", "shape", "transpose"),
    [
        (MX9, (3, 20), False),
        (MX4, (20,), False),
        ("int8_e8m0_t4s2o1_t4", (6, 5), True),
        ("e2m1f_e8m0_t32s8o2", (40,), False),
        ("int8_e4m3fn_float32_t16s2o1", (2, 18), False),
        ("e4m3fn_bfloat16_t0s4o2", (3, 10), False),
    ],
)
def test_upcast_of_stored_parts_equals_the_virtual_result(code, shape, transpose):
    n = math.prod(shape)
    # a spread of binades (offsets 0..3 all occur), zeros, signs; float32 values
    xs = [f32((-1) ** i * (i % 7) * 2.0 ** (-(i % 5)) / 3) for i in range(n)]
    r = cast_array(xs, shape, code, transpose_scale=transpose)
    assert bits(upcast(r, code, transpose_scale=transpose)) == bits(r.values)
    assert len(set(r.meta)) > 1


@pytest.mark.parametrize(
    ("code", "shape", "transpose", "meta_shape"),
    [
        (MX9, (5,), False, (3,)),  # ceil(5 / 2)
        (MX9, (3, 20), False, (3, 10)),
        ("int8_e8m0_t16s2o1d0", (20, 3), False, (10, 3)),
        ("e4m3fn_bfloat16_t0s4o2", (3, 10), False, (3, 3)),  # a channel: ceil(10 / 4)
        ("int8_e8m0_t4s2o1_t8", (6, 10), False, (3, 2)),  # 2 x 8 subtiles
        ("int8_e8m0_t4s2o1_t8", (6, 10), True, (1, 5)),  # 8 x 2 subtiles
        ("cb41fi_e2m2fnuz_e8m0", (3, 5), False, ()),  # a tensor scale: one mapping
        ("cb41fi_e2m2fnuz_e8m0_t32", (3, 40), False, (3, 2)),  # no s: one per block
    ],
)
def test_metadata_shape_agrees_with_the_block_layout(code, shape, transpose, meta_shape):
    assert subtile_indices(shape, code, transpose)[0] == meta_shape
    lay = tcast.layout.block_layout(shape, tcast.datatype(code), transpose)
    assert lay.meta_shape == meta_shape
    r = cast_array([0.0] * math.prod(shape), shape, code, transpose_scale=transpose)
    assert r.meta_shape == meta_shape and len(r.meta) == math.prod(meta_shape)


@pytest.mark.parametrize(
    "code",
    [
        "e4m3fn",
        "e4m3fn_e8m0_t32",
        "e2m1f_e4m3fn_float32_t16",
        "uint8_float32_uint8_t0",
        "int4_e8m0_t32n2m4",
        "e5m2_float32_t8_t4",
    ],
)
def test_upcast_of_datatypes_without_metadata_equals_the_virtual_result(code):
    # the same decode for every datatype: NaN blocks, pruned elements, zero points, 2-D tiles
    xs = [f32((-1) ** i * ((i * 5) % 13) * 2.0 ** (-(i % 4))) for i in range(48)]
    xs[40] = NAN
    r = cast_array(xs, (4, 12), code)
    got = upcast(r, code)
    assert [struct.pack("<f", v) for v in got] == [struct.pack("<f", v) for v in r.values]
