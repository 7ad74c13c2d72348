"""Single-value rules of the exact model: encode and decode (SEMANTICS.md §2-§4).

Every expected code is derived by hand in a comment, or comes from an
independent oracle (ml_dtypes value grids, or brute-force enumeration of all
codes). Comparisons are on raw bits.
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

from tcast import SpecError, number
from tcast.exact import decode, encode

# Every format of this file has at most 8 bits, so stochastic rounding takes K = 8 random
# bits (SEMANTICS.md §3.2): r in [0, 2**8), up iff floor(frac * 2**8) + r >= 2**8.
TWO8 = 1 << 8
HALF_R = 1 << 7  # r >= 2**7 rounds a tie (frac = 1/2) up
NAN = math.nan
INF = math.inf


def f64bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def same_float(a: float, b: float) -> bool:
    """Equal values with equal signs (so -0.0 != 0.0), NaN == NaN of the same sign."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b) and math.copysign(1, a) == math.copysign(1, b)
    return f64bits(a) == f64bits(b)


def from_bits32(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b))[0]


# ---------------------------------------------------------------------------- tie tables
# e2m1f (OCP FP4): magnitudes 0, .5, 1, 1.5, 2, 3, 4, 6 are codes 0..7; sign bit 0x8.
# Each row: value, then the code for even / away / zero / trunc.
#   0.25: between 0 (c0, even) and 0.5 (c1)   -> even 0, away 1, zero 0, trunc 0
#   0.75: between 0.5 (c1) and 1 (c2, even)   -> even 2, away 2, zero 1, trunc 1
#   1.25: between 1 (c2, even) and 1.5 (c3)   -> even 2, away 3, zero 2, trunc 2
#   1.75: between 1.5 (c3) and 2 (c4, even)   -> even 4, away 4, zero 3, trunc 3
#   2.5:  between 2 (c4, even) and 3 (c5)     -> even 4, away 5, zero 4, trunc 4
#   3.5:  between 3 (c5) and 4 (c6, even)     -> even 6, away 6, zero 5, trunc 5
#   5:    between 4 (c6, even) and 6 (c7)     -> even 6, away 7, zero 6, trunc 6
E2M1F_TIES = [
    (0.25, 0, 1, 0, 0),
    (0.75, 2, 2, 1, 1),
    (1.25, 2, 3, 2, 2),
    (1.75, 4, 4, 3, 3),
    (2.5, 4, 5, 4, 4),
    (3.5, 6, 6, 5, 5),
    (5.0, 6, 7, 6, 6),
]
# e4m3fn (bias 7, ulp 2**-9 below 2**-6): subnormal and carry ties.
#   2**-10 = half the smallest subnormal: 0 (c0x00, even) vs 2**-9 (0x01)
#   3*2**-10 = 1.5 subnormal ulps: 0x01 vs 0x02 (even)
#   7.5*2**-9: largest subnormal 0x07 vs smallest normal 2**-6 = 0x08 (even): carry
#   1.9375 = 1 + 15/16: 1.875 (0x3F, mantissa 111) vs 2.0 (0x40): carry into next binade
#   464 = (448 + 480)/2: 448 (0x7E, mantissa 110 even) vs 480 (the NaN code's slot):
#     even/zero/trunc -> 448; away -> 480 > max -> saturate -> 0x7E
E4M3FN_TIES = [
    (2.0**-10, 0x00, 0x01, 0x00, 0x00),
    (3 * 2.0**-10, 0x02, 0x02, 0x01, 0x01),
    (7.5 * 2.0**-9, 0x08, 0x08, 0x07, 0x07),
    (1.9375, 0x40, 0x40, 0x3F, 0x3F),
    (464.0, 0x7E, 0x7E, 0x7E, 0x7E),
]
TIE_ROWS = [("e2m1f", *r) for r in E2M1F_TIES] + [("e4m3fn", *r) for r in E4M3FN_TIES]
SIGN = {"e2m1f": 0x8, "e4m3fn": 0x80}


@pytest.mark.parametrize(("fmt", "x", "even", "away", "zero", "trunc"), TIE_ROWS)
@pytest.mark.parametrize("negative", [False, True])
def test_tie_table_every_round_mode(fmt, x, even, away, zero, trunc, negative):
    sign = SIGN[fmt] if negative else 0  # both formats keep -0
    v = -x if negative else x
    assert encode(v, fmt, "even") == sign | even
    assert encode(v, fmt) == sign | even  # even is the default
    assert encode(v, fmt, "away") == sign | away
    assert encode(v, fmt, "nearest") == sign | away  # alias of away
    assert encode(v, fmt, "zero") == sign | zero
    assert encode(v, fmt, "trunc") == sign | trunc
    # stochastic: frac = 1/2, so up (= away here, except at the saturating 464) iff r >= 2**7
    up = away
    assert encode(v, fmt, "stochastic", rbits=HALF_R) == sign | up
    assert encode(v, fmt, "stochastic", rbits=TWO8 - 1) == sign | up
    assert encode(v, fmt, "stochastic", rbits=HALF_R - 1) == sign | trunc
    assert encode(v, fmt, "stochastic", rbits=0) == sign | trunc


def test_tie_table_stochastic_quarter_fraction():
    # e2m1f 2.25: between 2 (c4) and 3 (c5), frac = 1/4 -> up iff 2**6 + r >= 2**8
    for sign in (0, 0x8):
        v = -2.25 if sign else 2.25
        assert encode(v, "e2m1f", "stochastic", rbits=3 * (1 << 6)) == sign | 5
        assert encode(v, "e2m1f", "stochastic", rbits=3 * (1 << 6) - 1) == sign | 4


def test_sticky_bit_just_above_subnormal_tie():
    # e4m3fn: 2**-10 is a tie between 0 and 2**-9; anything above it goes up even under
    # even/zero, anything below it stays down under away.
    above = float(np.nextafter(np.float32(2.0**-10), np.float32(1)))
    below = float(np.nextafter(np.float32(2.0**-10), np.float32(0)))
    assert encode(above, "e4m3fn", "even") == 0x01
    assert encode(above, "e4m3fn", "zero") == 0x01
    assert encode(above, "e4m3fn", "trunc") == 0x00
    assert encode(below, "e4m3fn", "away") == 0x00
    # e2m1f: the smallest float32 above the 0 / 0.5 tie at 0.25 goes up
    assert encode(float(np.nextafter(np.float32(0.25), np.float32(1))), "e2m1f", "even") == 1
    assert encode(float(np.nextafter(np.float32(0.25), np.float32(1))), "e2m1f", "zero") == 1
    # float16: 2**-25 is a tie between 0 and 2**-24; 2**-25 + 2**-48 (float32) goes up
    assert encode(2.0**-25, "float16", "even") == 0x0000
    assert encode(2.0**-25 + 2.0**-48, "float16", "even") == 0x0001


# ---------------------------------------------------------------------------- overflow
def test_e4m3fn_overflow_saturate_and_ieee():
    # 464.03125 > 464 (the midpoint of 448 and 480): rounds to 480 > max 448: overflow
    assert encode(464.03125, "e4m3fn", "even", saturate=True) == 0x7E
    assert encode(464.03125, "e4m3fn", "even", saturate=False) == 0x7F  # fn: NaN, no Inf
    assert encode(-464.03125, "e4m3fn", "even", saturate=False) == 0xFF
    assert encode(-464.03125, "e4m3fn", "even", saturate=True) == 0xFE
    # 464 itself is a tie that goes to 448 (even), whatever saturate says
    assert encode(464.0, "e4m3fn", "even", saturate=False) == 0x7E
    # away rounds 464 to 480: overflow
    assert encode(464.0, "e4m3fn", "away", saturate=False) == 0x7F


@pytest.mark.parametrize("x", [448.0, 464.0, 480.0, 500.0, 511.96875, 1e6, 3e38])
def test_trunc_never_overflows_to_nan_or_inf(x):
    # trunc in [480, 512) (and beyond) gives max 448 (0x7E) even with saturate=False;
    # never the NaN code 0x7F
    assert encode(x, "e4m3fn", "trunc", saturate=False) == 0x7E
    assert encode(-x, "e4m3fn", "trunc", saturate=False) == 0xFE
    # e5m2 has Inf, but trunc of a finite value gives max 57344 (0x7B)
    if x > 57344:
        assert encode(x, "e5m2", "trunc", saturate=False) == 0x7B


def test_trunc_of_infinity_stays_infinite_or_nan():
    assert encode(INF, "e5m2", "trunc", saturate=False) == 0x7C
    assert encode(-INF, "e5m2", "trunc", saturate=False) == 0xFC
    assert encode(INF, "e4m3fn", "trunc", saturate=False) == 0x7F
    assert encode(INF, "e4m3fn", "trunc", saturate=True) == 0x7E


def test_e5m2_overflow_tie_saturating_and_ieee():
    # e5m2 max 57344 = 1.75 * 2**15 (0x7B, mantissa 11: odd); ulp 8192; 61440 is the tie
    # between 57344 and 65536 -> even -> 65536 > max: overflow
    assert encode(61440.0, "e5m2", "even", saturate=True) == 0x7B
    assert encode(61440.0, "e5m2", "even", saturate=False) == 0x7C  # +Inf
    assert encode(-61440.0, "e5m2", "even", saturate=False) == 0xFC
    assert encode(61440.0, "e5m2", "zero", saturate=False) == 0x7B
    below = float(np.nextafter(np.float32(61440), np.float32(0)))
    assert encode(below, "e5m2", "even", saturate=False) == 0x7B


# ------------------------------------------------------------------- float32 subnormals
def test_float32_subnormal_inputs():
    tiny = 2.0**-149  # smallest float32 subnormal
    assert encode(tiny, "e4m3fn") == 0x00
    assert encode(-tiny, "e4m3fn") == 0x80  # fn keeps -0
    assert encode(-tiny, "float8_e4m3fnuz") == 0x00  # fnuz: no -0
    assert encode(-tiny, "binary8p4") == 0x00  # uz: no -0
    assert encode(-tiny, "e2m1f") == 0x8  # finite-only keeps -0
    # bfloat16 (emin -126, mbits 7): subnormal ulp 2**-133
    assert encode(2.0**-133, "bfloat16") == 0x0001
    assert encode(2.0**-134, "bfloat16") == 0x0000  # tie 0 / 1 -> even 0
    assert encode(2.0**-134 + tiny, "bfloat16") == 0x0001  # sticky
    assert encode(3 * 2.0**-134, "bfloat16") == 0x0002  # tie 1 / 2 -> even 2
    assert encode(5 * 2.0**-134, "bfloat16") == 0x0002  # tie 2 / 3 -> even 2
    assert encode(5 * 2.0**-134, "bfloat16", "away") == 0x0003
    # float32 into itself: every subnormal is exact
    for b in (1, 2, 0x7FFFFF, 0x400001):
        assert encode(from_bits32(b), "float32") == b
        assert encode(-from_bits32(b), "float32") == b | 0x80000000


# ------------------------------------------------------------------------- -0 per style
@pytest.mark.parametrize(
    ("fmt", "code"),
    [
        ("e4m3fn", 0x80),
        ("e5m2", 0x80),
        ("e2m1f", 0x8),
        ("e3m2f", 0x20),
        ("float8_e4m3fnuz", 0x00),
        ("float8_e5m2fnuz", 0x00),
        ("binary8p4", 0x00),
        ("float16", 0x8000),
        ("int8", 0x00),
        ("uint8", 0x00),
    ],
)
def test_negative_zero_per_style(fmt, code):
    assert encode(-0.0, fmt) == code
    assert encode(0.0, fmt) == 0


# ------------------------------------------------------------------- NaN / Inf per style
# (fmt, NaN, -NaN, +Inf saturate, +Inf IEEE, -Inf IEEE)
#   e4m3fn:  NaN all-ones magnitude 0x7F/0xFF; no Inf; max 0x7E
#   e5m2:    quiet NaN 0x7E (exponent 11111, top mantissa bit); Inf 0x7C; max 0x7B
#   e4m3b8fnuz: single NaN at the -0 code 0x80; max 0x7F (240)
#   binary8p4 (uz, e4m3 bias 8): Inf at all-ones magnitude 0x7F/0xFF, NaN 0x80, max 0x7E
#   e2m1f:   finite-only: NaN -> +0, Inf -> max 0x7 / 0xF
#   e2m1fn:  bare fn: NaN at 0x7/0xF, max 0x6 (= 4)
#   e3m2f:   finite-only FP6: max 0x1F (28), sign bit 0x20
NAN_INF_ROWS = [
    ("e4m3fn", 0x7F, 0xFF, 0x7E, 0x7F, 0xFF),
    ("e5m2", 0x7E, 0xFE, 0x7B, 0x7C, 0xFC),
    ("float8_e4m3fnuz", 0x80, 0x80, 0x7F, 0x80, 0x80),
    ("binary8p4", 0x80, 0x80, 0x7E, 0x7F, 0xFF),
    ("e2m1f", 0x0, 0x0, 0x7, 0x7, 0xF),
    ("e2m1fn", 0x7, 0xF, 0x6, 0x7, 0xF),
    ("e3m2f", 0x00, 0x00, 0x1F, 0x1F, 0x3F),
    ("float16", 0x7E00, 0xFE00, 0x7BFF, 0x7C00, 0xFC00),
]


@pytest.mark.parametrize(
    ("fmt", "nan", "negnan", "inf_sat", "inf_ieee", "neginf_ieee"), NAN_INF_ROWS
)
def test_nan_and_inf_per_style_and_saturate(fmt, nan, negnan, inf_sat, inf_ieee, neginf_ieee):
    for saturate in (True, False):
        for mode in ("even", "away", "zero"):
            assert encode(NAN, fmt, mode, saturate=saturate) == nan
            assert encode(-NAN, fmt, mode, saturate=saturate) == negnan
    assert encode(INF, fmt, saturate=True) == inf_sat
    sign = 1 << (number(fmt).bits - 1)
    assert encode(-INF, fmt, saturate=True) == inf_sat | sign
    assert encode(INF, fmt, saturate=False) == inf_ieee
    assert encode(-INF, fmt, saturate=False) == neginf_ieee


# ---------------------------------------------------------------------------- integers
@pytest.mark.parametrize(
    ("x", "fmt", "mode", "code"),
    [
        (2.5, "int8", "even", 2),
        (2.5, "int8", "away", 3),
        (2.5, "int8", "zero", 2),
        (2.5, "int8", "trunc", 2),
        (3.5, "int8", "even", 4),
        (2.75, "int8", "trunc", 2),
        (-2.5, "int8", "even", 0xFE),  # -2
        (-2.5, "int8", "away", 0xFD),  # -3
        (-0.5, "int8", "even", 0x00),  # -0 -> 0
        (-0.5, "int8", "away", 0xFF),  # -1
        (1000.0, "int8", "even", 0x7F),  # clamp 127
        (-1000.0, "int8", "even", 0x81),  # symmetric clamp -127, never -128 (0x80)
        (-128.0, "int8", "even", 0x81),
        (-127.5, "int8", "even", 0x81),  # rounds to -128, clamps to -127
        (127.5, "int8", "even", 0x7F),
        (-INF, "int8", "even", 0x81),
        (INF, "int8", "even", 0x7F),
        (NAN, "int8", "even", 0x00),
        (-NAN, "int8", "even", 0x00),
        (-8.0, "int4", "even", 0x9),  # -7 in 4-bit two's complement
        (7.6, "int4", "even", 0x7),
        (-3.0, "uint8", "even", 0x00),  # uint: negative -> 0
        (-0.4, "uint8", "even", 0x00),
        (-INF, "uint8", "even", 0x00),
        (INF, "uint8", "even", 0xFF),
        (NAN, "uint8", "even", 0x00),
        (0.5, "uint8", "away", 0x01),
        (255.5, "uint8", "even", 0xFF),  # rounds to 256, clamps to 255
        (300.0, "uint4", "even", 0xF),
    ],
)
def test_integer_round_clamp_and_nan(x, fmt, mode, code):
    for saturate in (True, False):  # integers always clamp
        assert encode(x, fmt, mode, saturate=saturate) == code


def test_integer_stochastic():
    # 2.25 into int8: frac 1/4 -> up iff 2**6 + r >= 2**8
    assert encode(2.25, "int8", "stochastic", rbits=3 * (1 << 6)) == 3
    assert encode(2.25, "int8", "stochastic", rbits=3 * (1 << 6) - 1) == 2
    assert encode(-2.25, "int8", "stochastic", rbits=TWO8 - 1) == 0xFD
    # uint4 takes 8 bits too; a negative value clamps to 0 whatever r is
    assert encode(2.25, "uint4", "stochastic", rbits=3 * (1 << 6)) == 3
    assert encode(-2.25, "uint4", "stochastic", rbits=TWO8 - 1) == 0


# ------------------------------------------------------------------------ exponent types
E8M0_ROWS = [
    (1.0, "even", None, 0x7F),  # 2**0: code = 0 + bias 127
    (2.0**-127, "even", None, 0x00),
    (2.0**127, "even", None, 0xFE),
    (1.4, "even", None, 0x7F),
    (1.6, "even", None, 0x80),
    (1.5, "even", None, 0x80),  # tie between codes 127 (odd) and 128 (even) -> 128 (2.0)
    (3.0, "even", None, 0x80),  # tie between codes 128 (even) and 129 -> 128 (2.0)
    (0.75, "even", None, 0x7E),  # tie between codes 126 (even) and 127 -> 126 (0.5)
    (6.0, "even", None, 0x82),  # tie between codes 129 and 130 (even) -> 130 (8.0)
    (3.0, "away", None, 0x81),
    (1.5, "zero", None, 0x7F),
    (1.99, "trunc", None, 0x7F),
    (3.0, "stochastic", HALF_R, 0x81),
    (3.0, "stochastic", HALF_R - 1, 0x80),
    (2.9, "even", None, 0x80),
    (3.1, "even", None, 0x81),
    (2.0**-128, "even", None, 0x00),  # below min -> code 0
    (2.0**-140, "even", None, 0x00),
    (1.6 * 2.0**-128, "even", None, 0x00),  # rounds up to 2**-127: code 0
]


@pytest.mark.parametrize(("x", "mode", "rbits", "code"), E8M0_ROWS)
@pytest.mark.parametrize("fmt", ["e8m0", "float8_e8m0fnu"])
def test_exponent_type_round_to_power_ties_to_even_code(x, mode, rbits, code, fmt):
    assert encode(x, fmt, mode, rbits=rbits) == code


@pytest.mark.parametrize("x", [0.0, -0.0, -1.0, -(2.0**-127), NAN, -NAN, -INF])
@pytest.mark.parametrize("saturate", [True, False])
def test_exponent_type_nonpositive_or_nan_gives_nan_code(x, saturate):
    assert encode(x, "e8m0", saturate=saturate) == 0xFF
    assert encode(x, "e4m0", saturate=saturate) == 0xF


@pytest.mark.parametrize(
    ("x", "sat", "ieee"),
    [
        (2.0**128, 0xFE, 0xFF),
        (1.6 * 2.0**127, 0xFE, 0xFF),  # rounds to 2**128 > max
        (1.4 * 2.0**127, 0xFE, 0xFE),  # rounds to 2**127 = max
        (INF, 0xFE, 0xFF),
    ],
)
def test_exponent_type_clamp_and_saturate(x, sat, ieee):
    assert encode(x, "e8m0", saturate=True) == sat
    assert encode(x, "e8m0", saturate=False) == ieee


def test_e4m0_range():
    # e4m0: bias 7, codes 0..14 are 2**-7 .. 2**7, code 15 is NaN
    assert encode(2.0**-7, "e4m0") == 0
    assert encode(1.0, "e4m0") == 7
    assert encode(2.0**7, "e4m0") == 14
    assert encode(2.0**8, "e4m0") == 14
    assert encode(2.0**8, "e4m0", saturate=False) == 15
    assert encode(2.0**-9, "e4m0") == 0


def test_e8m0_tie_to_even_code_intended_difference_from_ml_dtypes():
    # SEMANTICS: e8m0 ties go to the even code; ml_dtypes rounds ties upward.
    x = np.array([3.0, 0.75], dtype=np.float32)
    ml = x.astype(ml_dtypes.float8_e8m0fnu).view(np.uint8).tolist()
    assert ml == [0x81, 0x7F], "ml_dtypes changed: update the list of intended differences"
    assert [encode(float(v), "e8m0") for v in x] == [0x80, 0x7E]


# ------------------------------------------------------------------------------- decode
E2M1F_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def test_decode_every_e2m1f_code():
    table = E2M1F_VALUES + [-v for v in E2M1F_VALUES]  # code 8 is -0.0
    for code, value in enumerate(table):
        got = decode(code, "e2m1f")
        assert type(got) is float
        assert same_float(got, value), (code, got, value)


def _e4m3fn_by_hand(c: int) -> float:
    s, e, m = c >> 7, (c >> 3) & 0xF, c & 0x7
    if e == 0xF and m == 0x7:
        v = NAN
    elif e == 0:
        v = m * 2.0**-9  # subnormal: M/8 * 2**(1-7)
    else:
        v = (8 + m) * 2.0 ** (e - 10)  # (1 + M/8) * 2**(E-7)
    return -v if s else v


def _e5m2_by_hand(c: int) -> float:
    s, e, m = c >> 7, (c >> 2) & 0x1F, c & 0x3
    if e == 0x1F:
        v = INF if m == 0 else NAN
    elif e == 0:
        v = m * 2.0**-16
    else:
        v = (4 + m) * 2.0 ** (e - 17)
    return -v if s else v


@pytest.mark.parametrize(("fmt", "by_hand"), [("e4m3fn", _e4m3fn_by_hand), ("e5m2", _e5m2_by_hand)])
def test_decode_every_8bit_code_by_hand_formula(fmt, by_hand):
    for c in range(256):
        assert same_float(decode(c, fmt), by_hand(c)), hex(c)


@pytest.mark.parametrize(
    ("fmt", "code", "value"),
    [
        ("e8m0", 0x00, 2.0**-127),
        ("e8m0", 0x7F, 1.0),
        ("e8m0", 0xFE, 2.0**127),
        ("e8m0", 0xFF, NAN),
        ("e4m0", 0x0, 2.0**-7),
        ("e4m0", 0xF, NAN),
        ("e4m3fn", 0x7E, 448.0),
        ("e4m3fn", 0xFF, -NAN),
        ("e4m3fn", 0x80, -0.0),
        ("float8_e4m3fnuz", 0x80, NAN),
        ("float8_e4m3fnuz", 0x7F, 240.0),
        ("float8_e4m3fnuz", 0x01, 2.0**-10),
        ("float8_e4m3fnuz", 0x08, 2.0**-7),
        ("binary8p4", 0x7F, INF),
        ("binary8p4", 0xFF, -INF),
        ("binary8p4", 0x80, NAN),
        ("binary8p4", 0x7E, 224.0),
        ("e2m1fn", 0x7, NAN),
        ("e2m1fn", 0x6, 4.0),
        ("e3m2f", 0x1F, 28.0),
        ("e3m2f", 0x3F, -28.0),
        ("e2m3f", 0x1F, 7.5),
        ("e2m3f", 0x01, 0.125),
        ("int8", 0x81, -127.0),
        ("int8", 0x80, -128.0),  # two's complement reading (encode never produces it)
        ("int8", 0x7F, 127.0),
        ("int8", 0xFF, -1.0),
        ("uint8", 0xFF, 255.0),
        ("int4", 0x9, -7.0),
        ("float16", 0x7C00, INF),
        ("float16", 0x0001, 2.0**-24),
        ("bfloat16", 0x0001, 2.0**-133),
    ],
)
def test_decode_hand_table(fmt, code, value):
    assert same_float(decode(code, fmt), value)


@pytest.mark.parametrize(
    ("fmt", "code"),
    [
        ("e2m1f", 16),
        ("e2m1f", -1),
        ("e4m3fn", 256),
        ("e3m2f", 64),
        ("e8m0", 256),
        ("int4", 16),
        ("int8", -1),
        ("e4m3fn", 1.0),
        ("e4m3fn", True),
        ("e4m3fn", None),
    ],
)
def test_decode_out_of_range_code_is_spec_error(fmt, code):
    with pytest.raises(SpecError):
        decode(code, fmt)


def test_e4m3fn_to_e4m3fnuz_is_not_a_bit_copy():
    # 1.0 is 0x38 in e4m3fn (bias 7) and 0x40 in float8_e4m3fnuz (bias 8)
    assert decode(0x38, "e4m3fn") == 1.0
    assert encode(1.0, "float8_e4m3fnuz") == 0x40
    assert number("float8_e4m3fnuz").bias == 8
    assert number("e4m3fnuz").bias == 7  # bare grammar default bias
    assert encode(1.0, "e4m3fnuz") == 0x38
    # every e4m3fn value in fnuz range, re-encoded: ml_dtypes' cast bits
    codes = np.arange(256, dtype=np.uint8)
    vals = codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    ok = np.isfinite(vals) & (np.abs(vals) <= 240)
    with np.errstate(invalid="ignore", over="ignore"):
        ml = codes.view(ml_dtypes.float8_e4m3fn).astype(ml_dtypes.float8_e4m3fnuz).view(np.uint8)
    copies = 0
    for c in np.flatnonzero(ok).tolist():
        got = encode(decode(c, "e4m3fn"), "float8_e4m3fnuz")
        assert got == int(ml[c]), hex(c)
        copies += got == c
    assert copies == 1  # only +0 keeps its bits


# --------------------------------------------------------------------------- stochastic
def _grid(dt) -> tuple[np.ndarray, dict[float, int]]:
    """Non-negative finite magnitudes of an ml_dtypes format, and value -> code (oracle)."""
    codes = np.arange(256, dtype=np.uint8)
    if ml_dtypes.finfo(dt).bits < 8:
        codes = codes[: 1 << ml_dtypes.finfo(dt).bits]
    vals = codes.view(dt).astype(np.float64)
    sign = 1 << (ml_dtypes.finfo(dt).bits - 1)
    pos = (codes < sign) & np.isfinite(vals)
    table = {float(v): int(c) for v, c in zip(vals[pos], codes[pos], strict=True)}
    return np.array(sorted(table)), table


STOCH_FORMATS = {
    "e4m3fn": ml_dtypes.float8_e4m3fn,
    "e5m2": ml_dtypes.float8_e5m2,
    "e2m1f": ml_dtypes.float4_e2m1fn,
}


def _float16_inputs(maxval: float) -> list[float]:
    x = np.arange(0, 0x7C00, 3, dtype=np.uint16).view(np.float16).astype(np.float64)
    x = x[x <= maxval]
    return [*x.tolist(), *(-x).tolist()]


@pytest.mark.parametrize("fmt", list(STOCH_FORMATS))
def test_stochastic_extreme_rbits_truncate_and_round_up_a_fraction_of_at_least_2_to_minus_8(fmt):
    # rbits = 0 always truncates; rbits = 2**8 - 1 rounds up exactly the inexact values whose
    # discarded fraction is >= 2**-8 (floor(frac * 2**8) >= 1); smaller fractions (float16
    # inputs far below the format's subnormal ulp) stay down. Oracle: the ml_dtypes grid,
    # neighbours by search, the fraction in exact arithmetic.
    mags, table = _grid(STOCH_FORMATS[fmt])
    sign = 1 << (number(fmt).bits - 1)
    tiny = 0
    for x in _float16_inputs(float(mags[-1])):
        a = abs(x)
        i = int(np.searchsorted(mags, a, side="right")) - 1  # mags[i] <= a
        down = table[float(mags[i])]
        if mags[i] == a:
            up = down
        else:
            lo, hi = Fraction(float(mags[i])), Fraction(float(mags[i + 1]))
            frac = (Fraction(a) - lo) / (hi - lo)
            up = table[float(mags[i + 1])] if frac >= Fraction(1, 256) else down
            tiny += frac < Fraction(1, 256)
        s = sign if math.copysign(1, x) < 0 else 0
        assert encode(x, fmt, "stochastic", rbits=0) == s | down, x
        assert encode(x, fmt, "stochastic", rbits=TWO8 - 1) == s | up, x
    # e5m2 keeps 8 fewer bits than float16 everywhere; the other two see fractions below 2**-8
    assert (tiny > 0) == (fmt != "e5m2")


def test_stochastic_fraction_below_two_to_minus_8_never_rounds_up():
    # e4m3fn subnormal ulp is 2**-9. floor(frac * 2**8) + r >= 2**8:
    #   x = 2**-17: frac = 2**-8 -> 1 + (2**8 - 1) >= 2**8 -> up to code 1
    #   x = 2**-17 - 2**-30: frac = 2**-8 - 2**-21 -> 0 + (2**8 - 1) < 2**8 -> stays 0
    #   x = 2**-18: frac = 2**-9 -> stays 0
    #   x = 2**-149: frac = 2**-140 -> stays 0
    # 2**-41 (frac 2**-32), which a 32-bit random integer could round up, stays 0 here.
    assert encode(2.0**-17, "e4m3fn", "stochastic", rbits=TWO8 - 1) == 0x01
    assert encode(2.0**-17 - 2.0**-30, "e4m3fn", "stochastic", rbits=TWO8 - 1) == 0x00
    assert encode(2.0**-18, "e4m3fn", "stochastic", rbits=TWO8 - 1) == 0x00
    assert encode(2.0**-149, "e4m3fn", "stochastic", rbits=TWO8 - 1) == 0x00
    assert encode(2.0**-41, "e4m3fn", "stochastic", rbits=TWO8 - 1) == 0x00
    # the same above the subnormals: 1 + 2**-11 (frac 2**-8 of the ulp 2**-3) and 1 + 2**-12
    assert encode(1 + 2.0**-11, "e4m3fn", "stochastic", rbits=TWO8 - 1) == 0x39
    assert encode(1 + 2.0**-12, "e4m3fn", "stochastic", rbits=TWO8 - 1) == 0x38
    assert encode(1 + 2.0**-11, "e4m3fn", "stochastic", rbits=TWO8 - 2) == 0x38


@pytest.mark.parametrize("fmt", list(STOCH_FORMATS))
def test_stochastic_exact_value_never_moves(fmt):
    _, table = _grid(STOCH_FORMATS[fmt])
    sign = 1 << (number(fmt).bits - 1)
    for v, c in table.items():
        for r in (0, 1, HALF_R - 1, HALF_R, TWO8 - 1):
            assert encode(v, fmt, "stochastic", rbits=r) == c
            if v:
                assert encode(-v, fmt, "stochastic", rbits=r) == c | sign


def test_stochastic_half_fraction_rounds_up_iff_r_at_least_2_to_the_7():
    # e2m1f 2.5: between 2 (c4) and 3 (c5), frac = 1/2: floor(frac * 2**8) = 2**7
    for r in (0, 1, HALF_R - 2, HALF_R - 1):
        assert encode(2.5, "e2m1f", "stochastic", rbits=r) == 4
    for r in (HALF_R, HALF_R + 1, TWO8 - 2, TWO8 - 1):
        assert encode(2.5, "e2m1f", "stochastic", rbits=r) == 5


@pytest.mark.parametrize("rbits", [None, -1, TWO8, 1 << 16, 1 << 32, 2**40, 0.5, "1", True])
@pytest.mark.parametrize("fmt", ["e2m1f", "e4m3fn", "int8", "e8m0"])
def test_stochastic_missing_or_bad_rbits_is_spec_error(rbits, fmt):
    # every format here takes 8 bits: 2**8 is the first value out of range
    with pytest.raises(SpecError, match=r"rbits"):
        encode(2.5, fmt, "stochastic", rbits=rbits)


def test_stochastic_rbits_accept_numpy_integers_of_k_bits():
    assert encode(2.5, "e2m1f", "stochastic", rbits=np.uint8(HALF_R)) == 5
    assert encode(2.5, "e2m1f", "stochastic", rbits=np.uint16(HALF_R - 1)) == 4
    with pytest.raises(SpecError):
        encode(2.5, "e2m1f", "stochastic", rbits=np.uint16(TWO8))


@pytest.mark.parametrize("mode", ["even", "away", "nearest", "zero", "trunc"])
def test_rbits_with_non_stochastic_mode_is_spec_error(mode):
    with pytest.raises(SpecError):
        encode(2.5, "e2m1f", mode, rbits=0)


def test_bad_round_mode_is_spec_error():
    with pytest.raises(SpecError):
        encode(2.5, "e2m1f", "up")


# ------------------------------------------------ hypothesis: nearest by enumeration
NEAREST_FORMATS = [
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e4m3b11fnuz",
    "float8_e3m4",
    "float8_e4m3",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float4_e2m1fn",
    "binary8p3",
    "binary8p5",
    "e2m1fn",
]
# formats with a -0 code (IEEE, fn and finite-only styles)
HAS_NEGZERO = {
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e3m4",
    "float8_e4m3",
    "float6_e2m3fn",
    "float6_e3m2fn",
    "float4_e2m1fn",
    "e2m1fn",
}
_FINITE: dict[str, list[tuple[Fraction, int]]] = {}


def _finite_codes(fmt: str) -> list[tuple[Fraction, int]]:
    if fmt not in _FINITE:
        out = []
        for c in range(1 << number(fmt).bits):
            v = decode(c, fmt)
            if math.isfinite(v):
                out.append((Fraction(v), c))
        _FINITE[fmt] = out
    return _FINITE[fmt]


finite_f32 = st.integers(0, 0x7F7FFFFF).map(from_bits32) | st.floats(
    -600.0, 600.0, width=32, allow_subnormal=True
)


@st.composite
def format_and_value(draw):
    """A format, and a float32 value: random, or an exact midpoint of two neighbours."""
    fmt = draw(st.sampled_from(NEAREST_FORMATS))
    if draw(st.booleans()):
        return fmt, draw(finite_f32)
    mags = sorted({abs(v) for v, _ in _finite_codes(fmt)})
    i = draw(st.integers(0, len(mags) - 2))
    return fmt, float((mags[i] + mags[i + 1]) / 2)  # exact in float32 (one more bit)


@settings(max_examples=800)
@given(case=format_and_value(), neg=st.booleans())
def test_even_encode_is_nearest_by_enumeration(case, neg):
    fmt, x = case
    x = -x if neg else x
    c = encode(x, fmt, "even")
    v = decode(c, fmt)
    assert math.isfinite(v)
    fx = Fraction(x)
    dists = [(abs(val - fx), code) for val, code in _finite_codes(fmt)]
    best = min(d for d, _ in dists)
    assert abs(Fraction(v) - fx) == best, (x, fmt, hex(c), v)
    nearest = {code for d, code in dists if d == best}
    mags = {decode(k, fmt) for k in nearest}
    if best > 0 and len({abs(m) for m in mags}) > 1:
        # a true tie between two magnitudes: the even code wins
        assert c % 2 == 0, (x, fmt, hex(c))
    if v != 0:
        assert (v < 0) == (x < 0)
    else:
        negative_zero = math.copysign(1, v) < 0
        assert negative_zero == (math.copysign(1, x) < 0 and fmt in HAS_NEGZERO)
