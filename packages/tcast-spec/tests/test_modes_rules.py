"""Round, scale and cast modes, and the power-of-two scale rules (SEMANTICS.md §3, §5).

Scale expectations are hand-derived (comments), and rceil == topbinade is proved
against an independent brute-force rceil written here.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tcast
from tcast import CastMode, RoundMode, ScaleMode, SpecError, cast_mode, round_mode, scale_mode
from tcast.exact import encode, exponent_scale

FLOOR, CEIL, MIDMAX, TOPBINADE, OPTION3 = (
    ScaleMode.FLOOR,
    ScaleMode.CEIL,
    ScaleMode.MIDMAX,
    ScaleMode.TOPBINADE,
    ScaleMode.OPTION3,
)
ALL_SCALE_MODES = (FLOOR, CEIL, MIDMAX, TOPBINADE, OPTION3)


def from_bits32(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b))[0]


# ------------------------------------------------------------------------------- modes
def test_round_mode_strings_and_enums():
    expected = {"even", "away", "zero", "trunc", "stochastic"}
    assert {m.value for m in RoundMode} == expected
    for name in expected:
        m = round_mode(name)
        assert isinstance(m, RoundMode)
        assert m == name  # StrEnum: the member equals its string
        assert round_mode(m) is m
    assert RoundMode.EVEN == "even"
    assert tcast.modes.RoundMode is RoundMode


def test_scale_mode_strings_and_enums():
    expected = {"floor", "ceil", "midmax", "option3", "topbinade"}
    assert {m.value for m in ScaleMode} == expected
    for name in expected:
        m = scale_mode(name)
        assert isinstance(m, ScaleMode)
        assert m == name
        assert scale_mode(m) is m


def test_cast_mode_strings_and_enums():
    expected = {"virtual", "actual", "compress"}
    assert {m.value for m in CastMode} == expected
    for name in expected:
        assert cast_mode(name) == name
        assert cast_mode(cast_mode(name)) is cast_mode(name)


def test_aliases_nearest_is_away_and_rceil_is_topbinade():
    assert round_mode("nearest") is RoundMode.AWAY
    assert scale_mode("rceil") is ScaleMode.TOPBINADE


@pytest.mark.parametrize(
    ("fn", "bad", "valid"),
    [
        (round_mode, "up", ["even", "away", "zero", "trunc", "stochastic", "nearest"]),
        (round_mode, "rceil", ["even", "nearest"]),
        (round_mode, 3, ["even"]),
        (round_mode, None, ["even"]),
        (round_mode, ScaleMode.FLOOR, ["even"]),  # a member of another mode enum
        (scale_mode, "round", ["floor", "ceil", "midmax", "option3", "topbinade", "rceil"]),
        (scale_mode, "nearest", ["floor", "rceil"]),
        (scale_mode, RoundMode.EVEN, ["floor"]),
        (cast_mode, "fake", ["virtual", "actual", "compress"]),
        (cast_mode, "", ["virtual"]),
    ],
)
def test_bad_mode_name_is_spec_error_naming_valid_values(fn, bad, valid):
    with pytest.raises(SpecError) as info:
        fn(bad)
    msg = str(info.value)
    for v in valid:
        assert v in msg, (v, msg)
    assert isinstance(info.value, ValueError)


# ------------------------------------------------------------------ floor uses the bits
E4M3FN_MAX, E4M3FN_EMAX = Fraction(448), 8  # 1.75 * 2**8
E2M1F_MAX, E2M1F_EMAX = Fraction(6), 2  # 1.5 * 2**2
MXINT8_MAX, MXINT8_EMAX = Fraction(127, 64), 0  # int8 as fixed point 1.6


def test_floor_uses_exponent_bits_not_float_log2():
    # amax = the largest float32 below 2**k: floor(log2 amax) = k - 1 exactly, so the
    # floor scale is k - 1 - emax. A float32 log2 gets this wrong: log2(2**k (1 - 2**-24))
    # = k - 8.6e-8, which rounds to k in float32 once k >= 3 (float32 spacing at k is
    # >= 2.4e-7). (math.log2 works in float64 and happens to survive this case, but the
    # model must not depend on any float log2: it reads the exponent bits.)
    for k in range(-148, 129):
        below = np.nextafter(np.float32(2.0**k) if k < 128 else np.float32(np.inf), np.float32(0))
        amax = float(below)
        assert amax < 2.0**k
        assert exponent_scale(amax, E4M3FN_MAX, 4, FLOOR) == k - 1 - E4M3FN_EMAX, k
        assert exponent_scale(amax, E2M1F_MAX, 2, FLOOR) == k - 1 - E2M1F_EMAX, k
        if 3 <= k <= 127:
            with np.errstate(all="ignore"):
                assert np.floor(np.log2(below)) == k  # the pitfall, for the record


@pytest.mark.parametrize("k", [-149, -140, -127, -126, -1, 0, 1, 8, 100, 127])
def test_amax_exactly_a_power_of_two(k):
    # floor(log2 2**k) = k; no mode bumps a power of two (sig = 1 <= top for every format)
    for mode in ALL_SCALE_MODES:
        assert exponent_scale(2.0**k, E4M3FN_MAX, 4, mode) == k - E4M3FN_EMAX
        assert exponent_scale(2.0**k, E2M1F_MAX, 2, mode) == k - E2M1F_EMAX
        assert exponent_scale(2.0**k, MXINT8_MAX, 7, mode) == k - MXINT8_EMAX


def test_subnormal_float32_amax_is_exact():
    # 2**-149 (smallest subnormal), 3 * 2**-149 (floor log2 = -148), the largest subnormal
    # (2**-126 - 2**-149, floor log2 = -127)
    cases = [(from_bits32(1), -149), (from_bits32(3), -148), (from_bits32(0x7FFFFF), -127)]
    for amax, e in cases:
        assert exponent_scale(amax, E4M3FN_MAX, 4, FLOOR) == e - 8
        assert exponent_scale(amax, E2M1F_MAX, 2, FLOOR) == e - 2
        # 3 * 2**-149 = 1.5 * 2**-148 and 1.99.. * 2**-127: above 1, so ceil bumps
        assert exponent_scale(amax, E4M3FN_MAX, 4, CEIL) == e - 8 + (amax != 2.0**-149)


# Hand tables: amax -> (floor, ceil, midmax, topbinade, option3), with E = floor(log2 amax)
# e4m3fn: max 448 = 1.75 * 2**8, midmax 480 = 1.875 * 2**8, precision 4 (grid step 1/8)
#   256: sig 1          -> no bump anywhere
#   448: sig 1.75       -> ceil; topbinade no (1.75 <= 1.75); midmax no; option3: 1.75 exact
#   449: sig 1.7539     -> ceil, topbinade; option3 rounds to 1.75 -> no
#   480: sig 1.875      -> midmax no (not >); topbinade yes; option3: 1.875 exact -> no
#   481: sig 1.8789     -> midmax yes; option3 rounds to 1.875 -> no
#   495: sig 1.93359    -> below the 1.9375 tie -> option3 rounds to 1.875 -> no
#   496: sig 1.9375     -> tie 1.875 (odd 1.111) / 2.0 -> even -> 2.0 -> option3 yes
#   511: sig 1.996      -> option3 yes
E4M3FN_TABLE = {
    256.0: (0, 0, 0, 0, 0),
    448.0: (0, 1, 0, 0, 0),
    449.0: (0, 1, 0, 1, 0),
    480.0: (0, 1, 0, 1, 0),
    481.0: (0, 1, 1, 1, 0),
    495.0: (0, 1, 1, 1, 0),
    496.0: (0, 1, 1, 1, 1),
    511.0: (0, 1, 1, 1, 1),
}
# e2m1f: max 6 = 1.5 * 2**2, midmax 7 = 1.75 * 2**2, precision 2 (grid step 1/2), E = 2
#   4:    sig 1       -> nothing
#   6:    sig 1.5     -> ceil only
#   6.5:  sig 1.625   -> ceil, topbinade; option3 rounds to 1.5 -> no
#   6.75: sig 1.6875  -> ceil, topbinade; option3 rounds to 1.5 (dist 3/16 < 5/16) -> no
#   7:    sig 1.75    -> midmax no (not >); option3: tie 1.5 (odd 1.1) / 2 -> even 2 -> yes
#   7.5:  sig 1.875   -> everything but floor
E2M1F_TABLE = {
    4.0: (0, 0, 0, 0, 0),
    6.0: (0, 1, 0, 0, 0),
    6.5: (0, 1, 0, 1, 0),
    6.75: (0, 1, 0, 1, 0),
    7.0: (0, 1, 0, 1, 1),
    7.5: (0, 1, 1, 1, 1),
}
# int8 fixed point (OCP MXINT8): max 127/64 = 1.984375, emax 0, midmax 255/128, precision 7
# (grid step 1/64), E = 0
#   1:         nothing
#   127/64:    ceil only (exact on the grid)
#   509/256:   ceil, topbinade; midmax no; option3 rounds to 508/256 = 127/64 -> no
#   255/128:   midmax no (not >); topbinade yes; option3: tie 127/64 (odd) / 2 -> 2 -> yes
#   511/256:   everything but floor
MXINT8_TABLE = {
    1.0: (0, 0, 0, 0, 0),
    127 / 64: (0, 1, 0, 0, 0),
    509 / 256: (0, 1, 0, 1, 0),
    255 / 128: (0, 1, 0, 1, 1),
    511 / 256: (0, 1, 1, 1, 1),
}
# In every row E == emax of the element format, so the result is just the bump.
SCALE_TABLES = [
    ("e4m3fn", E4M3FN_MAX, 4, E4M3FN_TABLE),
    ("e2m1f", E2M1F_MAX, 2, E2M1F_TABLE),
    ("mxint8", MXINT8_MAX, 7, MXINT8_TABLE),
]


@pytest.mark.parametrize(("name", "elem_max", "precision", "table"), SCALE_TABLES)
@pytest.mark.parametrize("shift", [-40, -3, 0, 5, 60])
def test_scale_mode_hand_tables(name, elem_max, precision, table, shift):
    # result = E - emax + bump = bump; shifting amax by 2**shift shifts it by shift
    for amax, bumps in table.items():
        x = amax * 2.0**shift
        for mode, bump in zip(ALL_SCALE_MODES, bumps, strict=True):
            assert exponent_scale(x, elem_max, precision, mode) == shift + bump, (
                name,
                amax,
                mode,
            )


def test_midmax_thresholds_match_number_specs():
    # the hand constants above are the spec's own max / midmax
    assert tcast.number("e4m3fn").maxfloat == 448.0
    assert tcast.number("e4m3fn").midmax == 480.0
    assert tcast.number("e2m1f").maxfloat == 6.0
    assert tcast.number("e2m1f").midmax == 7.0


# amax (into e4m3fn) where the named mode and option3 differ (see E4M3FN_TABLE)
STRING_MODE_CASES = [
    ("floor", 496.0),  # floor 0, option3 1
    ("ceil", 449.0),  # ceil 1, option3 0
    ("midmax", 481.0),  # midmax 1, option3 0
    ("topbinade", 449.0),  # topbinade 1, option3 0
    ("rceil", 449.0),
    ("option3", 496.0),
]


@pytest.mark.parametrize(("mode", "amax"), STRING_MODE_CASES)
def test_exponent_scale_accepts_mode_strings_or_rejects_them(mode, amax):
    # Modes are plain arguments, accepted as strings everywhere: exponent_scale gives the
    # same result for the name as for the enum, never silently another mode.
    want = exponent_scale(amax, E4M3FN_MAX, 4, scale_mode(mode))
    got = exponent_scale(amax, E4M3FN_MAX, 4, mode)
    assert got == want, f"exponent_scale({amax}, 448, 4, {mode!r}) gave {got}, enum gives {want}"


# ------------------------------------------------------------------ rceil == topbinade
def rceil_brute_force(amax: float, elem_max: Fraction) -> int:
    """Smallest integer e with amax <= elem_max * 2**e, by linear search (independent)."""
    a = Fraction(amax)
    # start safely below: frexp exponents differ by at most one from floor(log2) + 1
    e = math.frexp(amax)[1] - math.frexp(float(elem_max))[1] - 2
    assert a > elem_max * Fraction(2) ** e  # really below the answer
    while a > elem_max * Fraction(2) ** e:
        e += 1
    return e


# element formats: hand constants of max (ints as OCP fixed point K-2 fraction bits)
RCEIL_ELEMS = {
    "e4m3fn": Fraction(448),  # 1.75 * 2**8
    "e5m2": Fraction(57344),  # 1.75 * 2**15
    "e2m1f": Fraction(6),  # 1.5 * 2**2
    "e2m3f": Fraction(15, 2),  # 1.875 * 2**2
    "e3m2f": Fraction(28),  # 1.75 * 2**4
    "e4m3b8fnuz": Fraction(240),  # 1.875 * 2**7
    "int8": Fraction(127, 64),
    "int4": Fraction(7, 4),
}


def _positive_finite(dt) -> list[float]:
    x = np.arange(1, 1 << 15, dtype=np.uint16).view(dt).astype(np.float32)
    return [float(v) for v in x[np.isfinite(x)].tolist()]


_POSITIVE = {}


def _positives(src: str) -> list[float]:
    if src not in _POSITIVE:
        _POSITIVE[src] = _positive_finite(np.float16 if src == "float16" else ml_dtypes.bfloat16)
    return _POSITIVE[src]


@pytest.mark.parametrize("src", ["float16", "bfloat16"])
@pytest.mark.parametrize("elem", list(RCEIL_ELEMS))
def test_rceil_equals_topbinade_on_every_positive_16bit_value(src, elem):
    # exhaustive: every positive finite float16 (31743) / bfloat16 (32639) value
    m = RCEIL_ELEMS[elem]
    xs = _positives(src)
    assert len(xs) == {"float16": 31743, "bfloat16": 32639}[src]
    for x in xs:
        assert exponent_scale(x, m, 4, TOPBINADE) == rceil_brute_force(x, m), (elem, x)
    assert exponent_scale(xs[-1], m, 4, scale_mode("rceil")) == rceil_brute_force(xs[-1], m)


positive_f32 = st.integers(1, 0x7F7FFFFF).map(from_bits32)


@settings(max_examples=1000)
@given(
    amax=positive_f32 | st.integers(1, 0x7FFFFF).map(from_bits32),  # + extra subnormals
    elem=st.sampled_from(list(RCEIL_ELEMS)),
)
def test_rceil_equals_topbinade_on_float32(amax, elem):
    m = RCEIL_ELEMS[elem]
    assert exponent_scale(amax, m, 4, TOPBINADE) == rceil_brute_force(amax, m)


def test_rceil_elem_max_constants_match_number_specs():
    for code, m in RCEIL_ELEMS.items():
        if code.startswith("int"):
            k = tcast.number(code).bits
            assert m == Fraction(tcast.number(code).maxint, 1 << (k - 2))
        else:
            assert Fraction(tcast.number(code).maxfloat) == m


def test_round_modes_drive_encode():
    # mode strings, enums and aliases all reach encode: 2.5 into int8
    assert encode(2.5, "int8", RoundMode.EVEN) == 2
    assert encode(2.5, "int8", "nearest") == 3
    assert encode(2.5, "int8", RoundMode.AWAY) == 3
