"""Named edge cases of the exact block model (tcast.exact.cast_block).

Every expected code here is derived by hand in the comment beside it (or, for
float-scaled datatypes, with plain numpy float32 / ml_dtypes arithmetic that
follows the written formula); none is taken from the code under test. Each test
names the rule of SEMANTICS.md / the decided semantics that it checks.

Code notation: e4m3fn code = s eeee mmm (bias 7), e2m1f = s ee m (bias 1),
e8m0 code = e + 127, MXINT8 code = two's complement byte of round(x / 2^e * 64).
"""

from __future__ import annotations

import math
import struct

import ml_dtypes
import numpy as np
import pytest

import tcast
from tcast.exact import cast_block, decode, sparsity_mask

NAN = math.nan
INF = math.inf


def f32(x: float) -> float:
    """float32 rounding through struct (independent of tcast.exact.f32)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def is_neg(x: float) -> bool:
    return math.copysign(1.0, x) < 0


def run(xs, dt, **kw):
    """cast_block plus the invariant that every value is a float32 value."""
    r = cast_block([float(x) for x in xs], dt, **kw)
    assert len(r.codes) == len(xs) and len(r.values) == len(xs)
    for v in r.values:
        assert isinstance(v, float)
        assert math.isnan(v) or f32(v) == v, f"value {v!r} is not a float32 value"
    return r


def assert_values(got, want):
    """Equal values, NaN == NaN, and the sign of zero compared too."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if math.isnan(w):
            assert math.isnan(g), (got, want)
        else:
            assert g == w and is_neg(g) == is_neg(w), (got, want)


# --------------------------------------------------------------- all-zero block


@pytest.mark.parametrize(
    ("name", "negzero_code"),
    [
        ("mxfp8", 0x80),  # e4m3fn: sign bit 0x80
        ("mxfp8e5", 0x80),  # e5m2: sign bit 0x80
        ("mxfp6e2", 0x20),  # e2m3f: 6 bits, sign bit 0x20
        ("mxfp6e3", 0x20),  # e3m2f
        ("mxfp4", 0x8),  # e2m1f: 4 bits, sign bit 0x8
    ],
)
def test_all_zero_block_scale_code_0_and_zero_signs_kept(name, negzero_code):
    # §5.3 'all-zero block': amax == 0 -> e8m0 scale code 0; each element encodes
    # its own signed zero (-0 is kept where the element format has -0).
    xs = [0.0, -0.0, -0.0, 0.0, 0.0]
    r = run(xs, name)
    assert r.scale == 0
    assert r.codes == (0, negzero_code, negzero_code, 0, 0)
    assert_values(r.values, [0.0, -0.0, -0.0, 0.0, 0.0])


@pytest.mark.parametrize("name", ["mxint8", "mxint4", "bfp16"])
def test_all_zero_block_int_data_gives_positive_zero(name):
    # §5.3 'all-zero block' with int data: ints have no -0, so every code is 0 and
    # every value +0.
    r = run([0.0, -0.0, -0.0, 0.0], name)
    assert r.scale == 0
    assert r.codes == (0, 0, 0, 0)
    assert_values(r.values, [0.0, 0.0, 0.0, 0.0])


# ------------------------------------------------------------ non-finite block


@pytest.mark.parametrize(
    ("name", "nan_scale"),
    [
        ("mxfp8", 0xFF),  # e8m0 NaN = 0xFF
        ("mxfp8e5", 0xFF),
        ("mxfp6e3", 0xFF),
        ("mxfp6e2", 0xFF),
        ("mxfp4", 0xFF),
        ("mxint8", 0xFF),
        ("nvf4", 0x7F),  # e4m3fn NaN = s.1111.111, positive
        ("fp8_F", 0x7FC00000),  # float32 canonical quiet NaN
    ],
)
@pytest.mark.parametrize("nan", [NAN, -NAN])
def test_nan_in_finite_block_gives_nan_block(name, nan_scale, nan):
    # §5.2 'non-finite block': one NaN -> scale = NaN code of the scale format,
    # element codes 0, values NaN everywhere.
    xs = [1.0, nan, -2.0, 0.0, 3.0]
    r = run(xs, name)
    assert r.scale == nan_scale
    assert r.codes == (0,) * 5
    assert all(math.isnan(v) for v in r.values)


@pytest.mark.parametrize("name", ["mxfp8e5", "mxfp8", "mxfp6e3", "mxfp6e2", "mxfp4", "mxint8"])
@pytest.mark.parametrize("inf", [INF, -INF])
def test_inf_in_block_gives_nan_block(name, inf):
    # §5.2 'non-finite block': +-Inf makes amax non-finite -> NaN block, also for
    # e5m2 which has an Inf code (elements never carry Inf in a scaled block).
    r = run([0.5, -1.0, inf, 2.0], name)
    assert r.scale == 0xFF
    assert r.codes == (0, 0, 0, 0)
    assert all(math.isnan(v) for v in r.values)


# -------------------------------------------------------------- floor exponent


@pytest.mark.parametrize("k", [5, 0, -100, 100])
def test_floor_amax_exact_power_of_two(k):
    # Rule 'exponent scale, floor': e = floor(log2 amax) - emax(e4m3fn)=8.
    # amax = 2^k -> e = k-8, code k+119; 2^k / 2^(k-8) = 256 = 2^8 -> 0 1111 000 = 0x78;
    # -2^(k-3) -> -32 = -2^5 -> 1 1100 000 = 0xE0.
    r = run([2.0**k, -(2.0 ** (k - 3)), 0.0], "mxfp8")
    assert r.scale == k - 8 + 127
    assert r.codes == (0x78, 0xE0, 0)
    assert_values(r.values, [2.0**k, -(2.0 ** (k - 3)), 0.0])


@pytest.mark.parametrize("k", [5, 0, -100, 100])
def test_floor_amax_largest_float32_below_power_of_two(k):
    # Rule 'exponent scale, floor' from exact bits: amax = 2^k (1 - 2^-24) has
    # floor(log2) = k-1 (a float log2 would round it to k) -> e = k-9, code k+118.
    # Scaled amax = 512 (1 - 2^-24) rounds (RNE, spacing 32) to 512 > 448 ->
    # saturates to 448 = 0 1111 110 = 0x7E; -2^(k-3) -> -64 = 1 1101 000 = 0xE8.
    below = 2.0**k * (1 - 2.0**-24)
    assert f32(below) == below
    r = run([below, -(2.0 ** (k - 3)), 0.0], "mxfp8")
    assert r.scale == k - 9 + 127
    assert r.codes == (0x7E, 0xE8, 0)
    assert_values(r.values, [448 * 2.0 ** (k - 9), -(2.0 ** (k - 3)), 0.0])


def test_floor_amax_below_power_of_two_mxfp4():
    # e2m1f emax 2: amax = 2^3 (1 - 2^-24) -> floor log2 = 2 -> e = 0, code 127;
    # 8 (1 - 2^-24) rounds (spacing 2) to 8 > 6 -> saturates 6 = 0 11 1 = 0x7.
    below = 8.0 * (1 - 2.0**-24)
    r = run([below, 1.0], "mxfp4")
    assert r.scale == 127
    assert r.codes == (0x7, 0x2)  # 1.0 = 0 01 0
    assert_values(r.values, [6.0, 1.0])


@pytest.mark.parametrize("k", [0, 7, -30])
@pytest.mark.parametrize("m", [449, 464, 480, 500, 511])
def test_mxfp8_scaled_amax_above_max_saturates(k, m):
    # Rule 'elements always saturate': amax = m 2^k with m in (448, 512): floor scale
    # e = k (floor log2 m = 8 = emax), scaled m rounds (spacing 32) to 448 (449,
    # 464 tie -> 14 even) or 512 (480 tie -> 16, 500, 511) and 512 > 448 saturates:
    # always 448 = 0x7E, and -448 = 0xFE.
    x = m * 2.0**k
    r = run([x, -x, 2.0**k], "mxfp8")
    assert r.scale == k + 127
    assert r.codes == (0x7E, 0xFE, 0x38)  # 1.0 = 0 0111 000
    assert_values(r.values, [448 * 2.0**k, -448 * 2.0**k, 2.0**k])


@pytest.mark.parametrize("k", [0, 3, -5])
def test_mxfp4_amax_1p75_under_each_scale_mode(k):
    # e2m1f: max 6 = 1.5 * 2^2, midmax 7. amax = 1.75 * 2^k:
    # floor: e = k-2, scaled 7 = tie between 6 (odd mantissa) and 8 -> RNE 8 > 6 ->
    #   saturates to 6 (0x7); value 6 * 2^(k-2) = 1.5 * 2^k.
    # midmax: bump iff amax/2^E = 1.75 > midmax/2^emax = 7/4: false -> as floor.
    # ceil (1.75 > 1), topbinade (1.75 > 1.5), option3 (1.75 at 2 bits: 3.5 halves,
    #   tie, 3 odd -> 4 halves = 2 -> bump): e = k-1, scaled 3.5 = tie between 3
    #   (odd) and 4 -> 4 = 0 11 0 = 0x6; value 4 * 2^(k-1) = 2^(k+1).
    x = 1.75 * 2.0**k
    want = {
        "floor": (k + 125, 0x7, 1.5 * 2.0**k),
        "midmax": (k + 125, 0x7, 1.5 * 2.0**k),
        "ceil": (k + 126, 0x6, 2.0 ** (k + 1)),
        "topbinade": (k + 126, 0x6, 2.0 ** (k + 1)),
        "option3": (k + 126, 0x6, 2.0 ** (k + 1)),
    }
    for mode, (scale, code, value) in want.items():
        r = run([x], "mxfp4", scalemode=mode)
        assert (r.scale, r.codes, r.values) == (scale, (code,), (value,)), mode


def test_mxfp4_midmax_bumps_above_midmax():
    # e2m1f: amax 1.875 > 1.75 = midmax/2^emax -> midmax bumps: e = -1 (code 126),
    # scaled 3.75 rounds (spacing 1) to 4 = 0x6. floor: e = -2, 7.5 -> 8 -> sat 0x7.
    assert run([1.875], "mxfp4", scalemode="midmax").codes == (0x6,)
    assert run([1.875], "mxfp4", scalemode="midmax").scale == 126
    assert run([1.875], "mxfp4", scalemode="floor").codes == (0x7,)
    assert run([1.875], "mxfp4", scalemode="floor").scale == 125


# ------------------------------------------------------ every mode, by hand

# (datatype, amax, second element, {mode: (scale code, amax code, second code)})
# mxfp8 (e4m3fn): emax 8, top = 448/256 = 1.75, midmax threshold (1.75+2)/2 = 1.875,
#   option3 rounds the significand to 4 bits (ulp 1/8). floor code for amax in
#   [1, 2) is 119 (e = 0 - 8 = -8); a bump gives 120 (e = -7). Second element -0.25 ->
#   -64 = 0xE8 at e = -8, -32 = 0xE0 at e = -7.
# mxfp4 (e2m1f): emax 2, top 1.5, midmax threshold 1.75, 2 bits (ulp 1/2); floor
#   code 125 (e = -2), bump 126. -0.25 -> -1 = 0xA (e = -2), -0.5 = 0x9 (e = -1).
# mxint8: elements are fixed point 1.6 (max 127/64, emax 0), top 127/64, midmax
#   threshold 255/128, 7 bits (ulp 1/64); floor code 127 (e = 0), bump 128.
#   -0.25 -> -16 = 0xF0 (e = 0), -8 = 0xF8 (e = 1).
MODES = ("floor", "ceil", "midmax", "topbinade", "option3")
MODE_TABLE = [
    # amax 1.0: a power of two, no mode bumps; 1.0 -> 256 = 0x78.
    ("mxfp8", 1.0, dict.fromkeys(MODES, (119, 0x78, 0xE8))),
    # amax 1.5: only ceil bumps. 1.5 * 256 = 384 = 0 1111 100 = 0x7C; 192 = 0x74.
    (
        "mxfp8",
        1.5,
        {
            "floor": (119, 0x7C, 0xE8),
            "ceil": (120, 0x74, 0xE0),
            "midmax": (119, 0x7C, 0xE8),
            "topbinade": (119, 0x7C, 0xE8),
            "option3": (119, 0x7C, 0xE8),  # 1.5 = 12/8 exact at 4 bits
        },
    ),
    # amax 1.8125 = 29/16: > 1.75 (topbinade), <= 1.875 (no midmax); option3:
    # 14.5 eighths, tie, 14 even -> 1.75, no bump. At e = -8: 464 = tie between 448
    # (mantissa 110) and 480 -> 448 = 0x7E. At e = -7: 232 = tie 224/240 -> 224 =
    # 0 1110 110 = 0x76.
    (
        "mxfp8",
        1.8125,
        {
            "floor": (119, 0x7E, 0xE8),
            "ceil": (120, 0x76, 0xE0),
            "midmax": (119, 0x7E, 0xE8),
            "topbinade": (120, 0x76, 0xE0),
            "option3": (119, 0x7E, 0xE8),
        },
    ),
    # amax 1.90625 = 61/32: > 1.875 (midmax bumps); option3: 15.25 eighths -> 15,
    # 1.875 < 2, no bump. e = -8: 488 -> 480 > 448 -> saturate 0x7E. e = -7: 244 ->
    # 240 = 0 1110 111 = 0x77.
    (
        "mxfp8",
        1.90625,
        {
            "floor": (119, 0x7E, 0xE8),
            "ceil": (120, 0x77, 0xE0),
            "midmax": (120, 0x77, 0xE0),
            "topbinade": (120, 0x77, 0xE0),
            "option3": (119, 0x7E, 0xE8),
        },
    ),
    # amax 1.9375 = 31/16: option3: 15.5 eighths, tie, 15 odd -> 16 = 2: bump.
    # e = -8: 496 -> 512 -> saturate 0x7E; e = -7: 248 -> tie 240/256 -> 256 = 0x78.
    (
        "mxfp8",
        1.9375,
        {
            "floor": (119, 0x7E, 0xE8),
            "ceil": (120, 0x78, 0xE0),
            "midmax": (120, 0x78, 0xE0),
            "topbinade": (120, 0x78, 0xE0),
            "option3": (120, 0x78, 0xE0),
        },
    ),
    # mxfp4, amax 1.0: 4 = 0 11 0 = 0x6.
    ("mxfp4", 1.0, dict.fromkeys(MODES, (125, 0x6, 0xA))),
    # amax 1.25: ceil only (1.25 <= 1.5; option3: 2.5 halves, tie, 2 even -> 1.0).
    # e = -2: 5 = tie 4/6 -> 4 = 0x6; e = -1: 2.5 = tie 2/3 -> 2 = 0 10 0 = 0x4.
    (
        "mxfp4",
        1.25,
        {
            "floor": (125, 0x6, 0xA),
            "ceil": (126, 0x4, 0x9),
            "midmax": (125, 0x6, 0xA),
            "topbinade": (125, 0x6, 0xA),
            "option3": (125, 0x6, 0xA),
        },
    ),
    # amax 1.625: > 1.5 (topbinade), <= 1.75 (no midmax); option3 3.25 halves -> 3.
    # e = -2: 6.5 -> 6 = 0x7; e = -1: 3.25 -> 3 = 0 10 1 = 0x5.
    (
        "mxfp4",
        1.625,
        {
            "floor": (125, 0x7, 0xA),
            "ceil": (126, 0x5, 0x9),
            "midmax": (125, 0x7, 0xA),
            "topbinade": (126, 0x5, 0x9),
            "option3": (125, 0x7, 0xA),
        },
    ),
    # mxint8, amax 1.0 -> 64 = 0x40.
    ("mxint8", 1.0, dict.fromkeys(MODES, (127, 0x40, 0xF0))),
    # amax 1.5: ceil only. e = 0: 96 = 0x60; e = 1: 48 = 0x30.
    (
        "mxint8",
        1.5,
        {
            "floor": (127, 0x60, 0xF0),
            "ceil": (128, 0x30, 0xF8),
            "midmax": (127, 0x60, 0xF0),
            "topbinade": (127, 0x60, 0xF0),
            "option3": (127, 0x60, 0xF0),
        },
    ),
    # amax 509/256 = 1.98828125: > 127/64 (topbinade), <= 255/128 (no midmax);
    # option3: 127.25 64ths -> 127, no bump. e = 0: 127.25 -> 127 = 0x7F; e = 1:
    # 63.625 -> 64 = 0x40.
    (
        "mxint8",
        1.98828125,
        {
            "floor": (127, 0x7F, 0xF0),
            "ceil": (128, 0x40, 0xF8),
            "midmax": (127, 0x7F, 0xF0),
            "topbinade": (128, 0x40, 0xF8),
            "option3": (127, 0x7F, 0xF0),
        },
    ),
    # amax 255/128 = 1.9921875: midmax: not > 255/128; option3: 127.5 64ths, tie,
    # 127 odd -> 128: bump. e = 0: 127.5 -> 128 -> clamp 127 = 0x7F; e = 1: 63.75 -> 64.
    (
        "mxint8",
        1.9921875,
        {
            "floor": (127, 0x7F, 0xF0),
            "ceil": (128, 0x40, 0xF8),
            "midmax": (127, 0x7F, 0xF0),
            "topbinade": (128, 0x40, 0xF8),
            "option3": (128, 0x40, 0xF8),
        },
    ),
    # amax 511/256 = 1.99609375: every mode but floor bumps.
    (
        "mxint8",
        1.99609375,
        {
            "floor": (127, 0x7F, 0xF0),
            "ceil": (128, 0x40, 0xF8),
            "midmax": (128, 0x40, 0xF8),
            "topbinade": (128, 0x40, 0xF8),
            "option3": (128, 0x40, 0xF8),
        },
    ),
]


@pytest.mark.parametrize(("name", "amax", "want"), MODE_TABLE)
@pytest.mark.parametrize("k", [0, -20, 30])
def test_scale_modes_by_hand(name, amax, want, k):
    # Rule 'exponent scale' for each mode; multiplying the block by 2^k moves every
    # scale code by k and leaves the element codes unchanged.
    xs = [amax * 2.0**k, -0.25 * 2.0**k, 0.0]
    for mode, (scale, c0, c1) in want.items():
        r = run(xs, name, scalemode=mode)
        assert r.scale == scale + k, (mode, r)
        assert r.codes == (c0, c1, 0), (mode, [hex(c) for c in r.codes])
    # rceil is an alias of topbinade
    assert run(xs, name, scalemode="rceil") == run(xs, name, scalemode="topbinade")


# -------------------------------------------------------------- scale underflow


def test_scale_underflow_clamps_to_code_0_and_elements_flush():
    # Rule 'code = clamp(e + bias, 0, maxcode)': all |x| = 2^-139 -> e = -139 - 8 =
    # -147 -> code clamps to 0 (scale 2^-127). Scaled: 2^-139 * 2^127 = 2^-12, below
    # half the smallest e4m3fn subnormal (2^-9 / 2 = 2^-10) -> rounds to (signed) 0.
    t = 2.0**-139
    r = run([t, -t, t, 0.0], "mxfp8")
    assert r.scale == 0
    assert r.codes == (0, 0x80, 0, 0)
    assert_values(r.values, [0.0, -0.0, 0.0, 0.0])


def test_scale_underflow_clamped_scale_keeps_elements():
    # amax 2^-120 -> e = -128 -> clamps to code 0 (2^-127): 2^-120 * 2^127 = 2^7 ->
    # 0 1110 000 = 0x70; 2^-125 -> 2^2 = 0 1001 000 = 0x48; 2^-130 (a float32
    # subnormal) -> 2^-3 = 0 0100 000 = 0x20. Every value is exact.
    xs = [2.0**-120, -(2.0**-125), 2.0**-130]
    r = run(xs, "mxfp8")
    assert r.scale == 0
    assert r.codes == (0x70, 0xC8, 0x20)
    assert_values(r.values, xs)


# ------------------------------------------------------------------ MXINT8 clamp


@pytest.mark.parametrize("k", [0, 10, -10])
def test_mxint8_clamps_to_127_never_minus_128(k):
    # Rule 'intK symmetric': x = f32(127.9/64) 2^k: e = k, 127.9 -> 128 -> clamp 127
    # (0x7F); -x -> -127 (0x81), never -128 (0x80); -(511/256) 2^k -> -127.75 ->
    # -128 -> clamp -127 (0x81). Values 127/64 * 2^k.
    x = f32(127.9 / 64) * 2.0**k
    r = run([x, -x, -1.99609375 * 2.0**k, 0.5 * 2.0**k], "mxint8")
    assert r.scale == 127 + k
    assert r.codes == (0x7F, 0x81, 0x81, 0x20)
    top = 127 / 64 * 2.0**k
    assert_values(r.values, [top, -top, -top, 0.5 * 2.0**k])


# ------------------------------------------------------------------ partial tile


def test_partial_tile_block_of_five():
    # A block is whatever shares one scale: 5 elements work. amax 5 -> floor log2 2
    # -> e = -6 (code 121); x * 64: 64 = 0x68, 128 = 0x70, 192 = 0x74, 256 = 0x78,
    # 320 = 1.25 * 256 = 0 1111 010 = 0x7A; all exact.
    xs = [1.0, 2.0, 3.0, 4.0, 5.0]
    r = run(xs, "mxfp8")
    assert r.scale == 121
    assert r.codes == (0x68, 0x70, 0x74, 0x78, 0x7A)
    assert_values(r.values, xs)
    # mxfp4: e = 2 - 2 = 0 (127); 1 = 0x2, 2 = 0x4, 3 = 0x5, 4 = 0x6, 5 = tie -> 4.
    r = run(xs, "mxfp4")
    assert r.scale == 127
    assert r.codes == (0x2, 0x4, 0x5, 0x6, 0x6)
    assert_values(r.values, [1.0, 2.0, 3.0, 4.0, 4.0])


# --------------------------------------------------------------------- sparsity

SPARSE_FP8 = tcast.datatype("e4m3fn", "e8m0_t8n2m4")


def test_sparsity_n2m4_keeps_two_largest_ties_lower_index():
    # Rule 'sparsity nNmM': group 1 [1, -4, 2, 3] keeps -4 and 3; group 2 [.5, .5,
    # -.5, .25] keeps indices 4 and 5 (ties -> lower index). amax 4 -> e = -6 (121):
    # -4 * 64 = -256 = 0xF8, 3 * 64 = 192 = 0x74, 0.5 * 64 = 32 = 0x60; pruned -> 0, +0.
    xs = [1.0, -4.0, 2.0, 3.0, 0.5, 0.5, -0.5, 0.25]
    mask = (False, True, False, True, True, True, False, False)
    assert sparsity_mask(xs, 2, 4) == mask
    r = run(xs, SPARSE_FP8)
    assert r.mask == mask
    assert r.scale == 121
    assert r.codes == (0, 0xF8, 0, 0x74, 0x60, 0x60, 0, 0)
    assert_values(r.values, [0.0, -4.0, 0.0, 3.0, 0.5, 0.5, 0.0, 0.0])


def test_sparsity_pruned_negative_zero_gives_positive_zero():
    # Pruned positions are +0 (code 0) even when the input was -0 or negative.
    xs = [-0.0, -1.0, -2.0, -0.5]
    r = run(xs, tcast.datatype("e4m3fn", "e8m0_t4n2m4"))
    assert r.mask == (False, True, True, False)
    assert r.codes[0] == 0 and r.codes[3] == 0
    assert_values([r.values[0], r.values[3]], [0.0, 0.0])


def test_sparsity_nan_ranks_first():
    # NaN ranks above every magnitude: group [1, NaN, 3, 2] keeps NaN and 3, so the
    # block is a NaN block (scale 0xFF, codes 0); a non-finite block decodes to NaN
    # throughout, pruned positions included (§5.2, §6).
    xs = [1.0, NAN, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0]
    mask = (False, True, True, False, True, True, False, False)
    assert sparsity_mask(xs, 2, 4) == mask
    r = run(xs, SPARSE_FP8)
    assert r.mask == mask
    assert r.scale == 0xFF
    assert r.codes == (0,) * 8
    assert all(math.isnan(v) for v in r.values)


def _bf16(x: np.float32) -> np.float32:
    return np.float32(np.float32(x).astype(ml_dtypes.bfloat16))


def test_sparsity_scale_over_kept_elements_uint():
    # §6 'scale computed from the kept elements only' with §5.7 (range holds 0):
    # [8, -1, 0.5, 4] keeps 8 and 4, so lo = min(4, 0) = 0 (the pruned -1 would make
    # it -1), hi = 8. s = bf16(8/255): 8/255 = 2^-5 (1 + 1/255), 1/255 = 0.502
    # bf16-ulps -> up -> 2^-5 * 129/128 = 129/4096 -> code (122 << 7) | 1 = 0x3D01.
    # r = f32(4096/129) = 31.752; z = RNE_bf16(fl32(fl32(0 - lo) * r)) = +0 -> code 0
    # (0 - lo, not -lo: a zero zero point is +0).
    # codes: 8 -> round(254.016) = 254; 4 -> round(127.008) = 127; pruned -> 0.
    dt = tcast.datatype("uint8", "bfloat16_bfloat16_t4n2m4")
    xs = [8.0, -1.0, 0.5, 4.0]
    r = run(xs, dt)
    assert r.mask == (True, False, False, True)
    assert (r.scale, r.zero) == (0x3D01, 0x0000)
    assert r.codes == (254, 0, 0, 127)
    # values (code - z) * s: 254 * 129 / 4096 and 127 * 129 / 4096, exact in float32
    assert_values(r.values, [32766 / 4096, 0.0, 0.0, 16383 / 4096])
    # Dense, the pruned -1 is the min: range 9, 9/255 = 2^-5 * 1.1294 -> 16.56
    # bf16-ulps -> 17 -> code (122 << 7) | 17 = 0x3D11.
    dense = run(xs, tcast.datatype("uint8", "bfloat16_bfloat16_t4"))
    assert dense.scale == 0x3D11


# ------------------------------------------------------------ uint, zero point


@pytest.mark.parametrize(
    ("mode", "codes"),
    [
        ("even", (0, 255, 2, 4)),  # 2.5 -> 2, 3.5 -> 4 (even)
        ("away", (0, 255, 3, 4)),
        ("zero", (0, 255, 2, 3)),
        ("trunc", (0, 255, 2, 3)),
    ],
)
def test_uint_ties(mode, codes):
    # uint8_ei (e8m0 scale, int8 zero): lo = min(0, min) = 0, hi = 255, range 255 ->
    # smallest 2^e with 255 <= 255 * 2^e is 2^0 (code 127); z = 0; code = round(x).
    r = run([0.0, 255.0, 2.5, 3.5], "uint8_ei", roundmode=mode)
    assert (r.scale, r.zero) == (127, 0)
    assert r.codes == codes
    assert_values(r.values, [float(c) for c in codes])


def test_uint_int_zero_point_clamps_on_all_negative_block():
    # uint8_ei, all-negative block: lo = -255, hi = max(-0.5, 0) = 0 -> range 255 ->
    # scale 2^0 (code 127); z = encode(255, int8) clamps to 127 (code 0x7F).
    # code = clamp(round(x + 127), 0, 255): -255 -> -128 -> 0; -100 -> 27; -1 -> 126;
    # -0.5 -> 126.5 -> 126 (even). value = (code - 127) * 1.
    r = run([-255.0, -100.0, -1.0, -0.5], "uint8_ei")
    assert (r.scale, r.zero) == (127, 0x7F)
    assert r.codes == (0, 27, 126, 126)
    assert_values(r.values, [-127.0, -100.0, -1.0, -1.0])


def test_uint_uint_zero_point_holds_the_whole_range_on_all_negative_block():
    # §5.7 with an unsigned zero point (ONNX / PyTorch style): the same all-negative block as
    # above under e8m0 scale and a uint8 zero point: s = 2^0, z = encode(255, uint8) = 255
    # (no clamping at 127). code = round(x + 255): 0, 155, 254, 254.5 -> 254 (even);
    # value = code - 255, so -255 is kept instead of saturating to -127.
    r = run([-255.0, -100.0, -1.0, -0.5], "uint8_e8m0_uint8")
    assert (r.scale, r.zero) == (127, 255)
    assert r.codes == (0, 155, 254, 254)
    assert_values(r.values, [-255.0, -100.0, -1.0, -1.0])


def test_uint_zero_point_error_is_at_most_half_a_step_with_uint_zero_but_not_int_zero():
    # uint8 data, an all-negative channel of range 10: an int8 zero point saturates
    # at 127 (max error ~5 of the 10 range); a uint8 zero point keeps every error <= s / 2.
    xs = [-10.0 + 0.3125 * i for i in range(32)]
    uz = run(xs, "uint8_float32_uint8")
    s = decode(uz.scale, "float32")
    assert max(abs(v - x) for v, x in zip(uz.values, xs, strict=True)) <= s / 2
    iz = run(xs, "uint8_float32_int8")
    assert iz.zero == 127
    assert max(abs(v - x) for v, x in zip(iz.values, xs, strict=True)) > 4.9


def test_uint_negative_inputs_float_zero_point():
    # §5.7 with a float zero point (uint8_FF: float32 scale and zero), the same
    # all-negative block: lo = -255, hi = max(-0.5, 0) = 0, range 255 -> s = f32(255 /
    # 255) = 1 (0x3F800000), r = 1, z = f32(255 * 1) = 255 (float32 0x437F0000: no
    # clamping, unlike an int8 zero point). code = round(x + 255): 0, 155, 254,
    # 254.5 -> 254 (even); value = code - 255.
    r = run([-255.0, -100.0, -1.0, -0.5], "uint8_FF")
    assert (r.scale, r.zero) == (0x3F800000, 0x437F0000)
    assert r.codes == (0, 155, 254, 254)
    assert_values(r.values, [-255.0, -100.0, -1.0, -1.0])


def test_uint_float_zero_vs_int_zero():
    # §5.7: lo = -3, hi = 7, range 10 for both: s = bf16(10/255): 10/255 = 2^-5 *
    # 1.2549 -> 32.63 bf16-ulps -> 33 -> s = 161/4096, code (122 << 7) | 33 = 0x3D21.
    # r = f32(4096/161) = 25.44099; -lo * r = 76.32298.
    xs = [-3.0, 1.0, 2.0, 7.0]
    f = np.float32
    s = f(161 / 4096)
    # uint8_bb (bfloat16 zero): z = bf16(76.32298) = 76.5 (ulp 0.5 in [64, 128)) ->
    # code (133 << 7) | 25 = 0x4299. codes = round(x r + 76.5): -76.323 + 76.5 = 0.18
    # -> 0; 101.94 -> 102; 127.38 -> 127; 254.59 -> 255.
    r = run(xs, "uint8_bb")
    assert (r.scale, r.zero) == (0x3D21, 0x4299)
    assert r.codes == (0, 102, 127, 255)
    assert_values(r.values, [float(f(f(f(c) - f(76.5)) * s)) for c in r.codes])
    # uint8_bi (int8 zero): z = round(76.32298) = 76 (0x4C). codes = round(x r + 76):
    # -0.32 -> 0; 101.44 -> 101; 126.88 -> 127; 254.09 -> 254.
    r = run(xs, "uint8_bi")
    assert (r.scale, r.zero) == (0x3D21, 0x4C)
    assert r.codes == (0, 101, 127, 254)
    assert_values(r.values, [float(f(f(f(c) - f(76)) * s)) for c in r.codes])


def test_uint_range_always_holds_zero():
    # §5.7 'the range always includes zero', for float zero points too: a constant
    # block [1000] * 4 under uint8_FF has lo = 0, hi = 1000 (not range 0): s =
    # f32(1000/255), and every element maps to the top code 255.
    f = np.float32
    s = f(f(1000.0) / f(255))
    r = run([1000.0] * 4, "uint8_FF")
    assert r.scale == bits(float(s))
    assert r.codes == (255,) * 4
    assert r.zero == 0  # fl32(fl32(0 - lo) * r) with lo = +0 is +0


@pytest.mark.parametrize(
    ("name", "nan_scale", "nan_zero"),
    [
        ("uint8_ei", 0xFF, 0),  # int8 zero point has no NaN code -> 0
        ("uint8_bb", 0x7FC0, 0x7FC0),  # bfloat16 canonical NaN
        ("uint8_Fi", 0x7FC00000, 0),
    ],
)
def test_uint_non_finite_block(name, nan_scale, nan_zero):
    # §5.2: a zero point of a non-finite block is the zero format's NaN code if it
    # has one, else 0.
    r = run([1.0, INF, 2.0, NAN], name)
    assert (r.scale, r.zero) == (nan_scale, nan_zero)
    assert r.codes == (0,) * 4
    assert all(math.isnan(v) for v in r.values)


@pytest.mark.parametrize(
    ("hi", "scale", "top"),
    [
        # range 1: 255 * 2^-8 = 0.996 < 1 <= 255 * 2^-7 -> e = -7 (code 120), 1 * 128.
        (1.0, 120, 128),
        # range 255 * 2^-8 exactly -> e = -8 (code 119), 0.99609375 * 256 = 255.
        (0.99609375, 119, 255),
        # range 2^-100: 2^-100 / 255 lies in (2^-108, 2^-107] -> e = -107 (code 20);
        # 2^-100 * 2^107 = 128.
        (2.0**-100, 20, 128),
    ],
)
def test_uint_exponent_scale_smallest_power_of_two(hi, scale, top):
    # Rule 'exponent scale for uint': the smallest 2^e with range <= maxint * 2^e.
    r = run([0.0, hi], "uint8_ei")
    assert (r.scale, r.zero) == (scale, 0)
    assert r.codes == (0, top)
    assert_values(r.values, [0.0, hi])  # top * 2^e == hi in each case


# --------------------------------------------------------------- float scales


def test_float_scale_fp8_F_exact():
    # fp8_F (e4m3fn, float32 tensor scale): s = f32(448 / 448) = 1 (code 0x3F800000);
    # 448 = 0x7E, 1 = 0 0111 000 = 0x38, -3 = -1.5 * 2 = 1 1000 100 = 0xC4.
    r = run([448.0, 1.0, -3.0], "fp8_F")
    assert r.scale == 0x3F800000
    assert r.codes == (0x7E, 0x38, 0xC4)
    assert_values(r.values, [448.0, 1.0, -3.0])


def test_float_scale_fp8_F_formula():
    # s = f32(amax / 448) exactly in float32; r = f32(1/s); code = RNE_e4m3(f32(x r));
    # value = f32(decode(code) * s). Derived with numpy float32 and ml_dtypes.
    xs = [1.0, f32(-0.3), f32(0.01), 0.0, -0.0]
    f = np.float32
    s = f(f(1.0) / f(448))
    rr = f(f(1) / s)
    e4 = [f(f(x) * rr).astype(ml_dtypes.float8_e4m3fn) for x in xs]
    codes = tuple(int(v.view(np.uint8)) for v in e4)
    r = run(xs, "fp8_F")
    assert r.scale == bits(float(s))
    assert r.codes == codes
    assert r.codes[0] == 0x7E and r.codes[4] == 0x80
    assert_values(r.values, [float(f(f(v) * s)) for v in e4])


def test_float_scale_clamped_to_smallest_normal():
    # fp8_n (e4m3fn data, e4m3fn tensor scale): amax/448 = 2^-12/448 is far below
    # 2^-6 -> clamp to the smallest normal 2^-6 = 0 0001 000 = 0x08; r = 64:
    # 2^-20 * 64 = 2^-14 < 2^-10 -> 0; -2^-12 * 64 = -2^-6 = 1 0001 000 = 0x88.
    r = run([2.0**-20, -(2.0**-12), 0.0], "fp8_n")
    assert r.scale == 0x08
    assert r.codes == (0, 0x88, 0)
    assert_values(r.values, [0.0, -(2.0**-12), 0.0])


def test_float_scale_clamped_to_max():
    # fp8_n: amax = 448 * 896 -> amax/448 = 896 > 448 -> clamp 448 (0x7E); r =
    # f32(1/448) ~ 0.00223: 401408 r ~ 896 -> saturates 448 (0x7E); 1 * r =
    # 1.14 * 2^-9 (the smallest subnormal) -> 2^-9 = 0x01. values 448*448, 448*2^-9.
    r = run([401408.0, 1.0], "fp8_n")
    assert r.scale == 0x7E
    assert r.codes == (0x7E, 0x01)
    assert_values(r.values, [200704.0, 0.875])


def test_float_scale_all_zero_block():
    # fp8_F, all zero: amax/448 = 0 -> clamp to float32 smallest normal 2^-126
    # (code 0x00800000); zeros keep their sign.
    r = run([0.0, -0.0], "fp8_F")
    assert r.scale == 0x00800000
    assert r.codes == (0, 0x80)
    assert_values(r.values, [0.0, -0.0])


# ---------------------------------------------------------------- two-level


NV_BLOCK = [6.0, -3.0, 1.5, 0.5, -0.0] + [0.0] * 11
# e2m1f codes: 6 = 0 11 1 = 0x7, -3 = 1 10 1 = 0xD, 1.5 = 0 01 1 = 0x3, 0.5 = 0x1, -0 = 0x8
NV_CODES = (0x7, 0xD, 0x3, 0x1, 0x8) + (0,) * 11


def test_nvfp4_tensor_amax_is_used():
    # tensor_amax 2688 = 448 * 6: t = f32(2688 / 2688) = 1 (0x3F800000); s =
    # RNE_e4m3(f32(6/6)/1) = 1 = 0 0111 000 = 0x38; r = 1; value = code * f32(t s).
    r = run(NV_BLOCK, "nvfp4", tensor_amax=2688.0)
    assert (r.tenscale, r.scale) == (0x3F800000, 0x38)
    assert r.codes == NV_CODES
    assert_values(r.values, NV_BLOCK)
    # tensor_amax 4 * 2688: t = 4 (0x40800000); s = 1/4 = 2^-2 = 0 0101 000 = 0x28;
    # r = f32(f32(1/4) / (1/4)) = 1; t * s = 1: same codes and values.
    r = run(NV_BLOCK, "nvfp4", tensor_amax=10752.0)
    assert (r.tenscale, r.scale) == (0x40800000, 0x28)
    assert r.codes == NV_CODES
    assert_values(r.values, NV_BLOCK)


def test_nvfp4_tensor_amax_defaults_to_block_amax():
    # tensor_amax None -> the block's amax 6: t = f32(6 / 2688) (not a power of two).
    f = np.float32
    t = f(f(6.0) / f(2688.0))
    r = run(NV_BLOCK, "nvfp4")
    assert r.tenscale == bits(float(t))
    assert r.tenscale != 0x3F800000


@pytest.mark.parametrize("tamax", [NAN, INF])
def test_nvfp4_non_finite_tensor_amax_gives_nan_block(tamax):
    # Non-finite tensor_amax -> tenscale = float32 NaN code 0x7FC00000, tile scale =
    # e4m3fn NaN 0x7F, codes 0, values NaN.
    r = run(NV_BLOCK, "nvfp4", tensor_amax=tamax)
    assert (r.tenscale, r.scale) == (0x7FC00000, 0x7F)
    assert r.codes == (0,) * 16
    assert all(math.isnan(v) for v in r.values)


def test_nvfp4_nan_in_block_keeps_finite_tensor_scale():
    # A NaN element with a finite tensor_amax: the tensor scale is still computed
    # (t = 1 -> 0x3F800000), the block is a NaN block (tile scale 0x7F).
    r = run([1.0, NAN] + [0.0] * 14, "nvfp4", tensor_amax=2688.0)
    assert (r.tenscale, r.scale) == (0x3F800000, 0x7F)
    assert r.codes == (0,) * 16
    assert all(math.isnan(v) for v in r.values)


def test_nvfp4_all_zero_tensor_has_no_nan():
    # tensor_amax 0: t clamps to 2^-126 (0x00800000); s = clamp(0) -> 2^-6 (0x08);
    # r = min(f32(2^126 / 2^-6) = Inf, FLT_MAX) = FLT_MAX, so 0 * r = 0 (not NaN);
    # values 0 * f32(2^-132) = +-0.
    xs = [0.0, -0.0] * 8
    r = run(xs, "nvfp4", tensor_amax=0.0)
    assert (r.tenscale, r.scale) == (0x00800000, 0x08)
    assert r.codes == (0, 0x8) * 8
    assert_values(r.values, xs)


def test_nvfp4_negative_tensor_amax_is_an_error():
    with pytest.raises(tcast.SpecError):
        cast_block(NV_BLOCK, "nvfp4", tensor_amax=-1.0)
    with pytest.raises(tcast.SpecError):
        cast_block(NV_BLOCK, "nvfp4", tensor_amax=0.1)  # not a float32 value


# --------------------------------------------------------------- stochastic

SR_BLOCK = [7.0, 5.0, -5.0, 2.5, -0.75, f32(0.2), 4.0, 0.0]
# mxfp4: amax 7 -> floor log2 2 -> e = 0 (code 127), r = 1. e2m1 grid: 0, .5, 1, 1.5,
# 2, 3, 4, 6 (codes 0..7, +8 for negative).


def test_stochastic_rbits_zero_truncates():
    # e2m1 takes K = 8 random bits: floor(frac * 2^8) + 0 < 2^8 always -> round toward zero:
    # 7 -> 6 (0x7), 5 -> 4 (0x6), -5 -> -4 (0xE), 2.5 -> 2 (0x4), -0.75 -> -0.5 (0x9),
    # 0.2 -> 0, 4 -> 4, 0 -> 0.
    r = run(SR_BLOCK, "mxfp4", roundmode="stochastic", rbits=[0] * 8)
    assert r.scale == 127
    assert r.codes == (0x7, 0x6, 0xE, 0x4, 0x9, 0x0, 0x6, 0x0)
    assert r == run(SR_BLOCK, "mxfp4", roundmode="trunc")


def test_stochastic_rbits_all_ones_rounds_away_unless_exact():
    # r = 2^8 - 1: up iff floor(frac 2^8) >= 1, i.e. frac >= 2^-8, which every inexact
    # element here has (0.2: frac 0.4): 7 -> 8 -> saturates 6 (0x7), 5 -> 6 (0x7),
    # -5 -> -6 (0xF), 2.5 -> 3 (0x5), -0.75 -> -1 (0xA), 0.2 -> 0.5 (0x1); exact 4 and 0 stay.
    r = run(SR_BLOCK, "mxfp4", roundmode="stochastic", rbits=[0xFF] * 8)
    assert r.scale == 127
    assert r.codes == (0x7, 0x7, 0xF, 0x5, 0xA, 0x1, 0x6, 0x0)


def test_stochastic_rbits_half_is_ties_away():
    # r = 2^7: up iff floor(frac 2^8) >= 2^7, i.e. frac >= 1/2: 5 -> 6, -5 -> -6, 2.5 -> 3,
    # -0.75 -> -1, 0.2 (frac 0.4) -> 0, 7 (frac 0.5) -> 8 -> sat 6: the same codes as 'away'.
    r = run(SR_BLOCK, "mxfp4", roundmode="stochastic", rbits=[1 << 7] * 8)
    assert r.codes == (0x7, 0x7, 0xF, 0x5, 0xA, 0x0, 0x6, 0x0)
    assert r.codes == run(SR_BLOCK, "mxfp4", roundmode="away").codes


def test_stochastic_threshold_is_floor_of_frac_times_2_to_the_8():
    # f32(0.2) = 0.20000000298...: frac 0.40000000596 of the ulp 0.5, floor(frac 2^8) = 102,
    # so it rounds up iff r >= 256 - 102 = 154; the fractions 1/2 (floor 128) go up from
    # r = 128 on, so both r = 153 and r = 154 round them up.
    below = run(SR_BLOCK, "mxfp4", roundmode="stochastic", rbits=[153] * 8)
    assert below.codes == (0x7, 0x7, 0xF, 0x5, 0xA, 0x0, 0x6, 0x0)
    at = run(SR_BLOCK, "mxfp4", roundmode="stochastic", rbits=[154] * 8)
    assert at.codes == (0x7, 0x7, 0xF, 0x5, 0xA, 0x1, 0x6, 0x0)
    # r = 127: the fractions 1/2 stay down (128 + 127 < 256): the codes of trunc
    assert run(SR_BLOCK, "mxfp4", roundmode="stochastic", rbits=[127] * 8).codes == (
        run(SR_BLOCK, "mxfp4", roundmode="trunc").codes
    )


@pytest.mark.parametrize(
    ("mode", "rbits"),
    [
        ("stochastic", [0] * 7),  # one too few
        ("stochastic", [0] * 9),  # one too many
        ("stochastic", None),
        ("stochastic", [0] * 7 + [1 << 8]),  # out of range: e2m1 takes 8 bits
        ("stochastic", [0] * 7 + [1 << 32]),
        ("stochastic", [0] * 7 + [-1]),
        ("even", [0] * 8),  # rbits without stochastic rounding
    ],
)
def test_rbits_errors(mode, rbits):
    with pytest.raises(tcast.SpecError):
        cast_block(SR_BLOCK, "mxfp4", roundmode=mode, rbits=rbits)


# ------------------------------------------------------------------- inputs


@pytest.mark.parametrize("bad", [0.1, 1e39, -1e-50, 1.0 + 2.0**-30, True, "1.0", None])
@pytest.mark.parametrize("name", ["mxfp8", "nvfp4", "uint8_ei"])
def test_non_float32_inputs_are_errors(bad, name):
    with pytest.raises(tcast.SpecError):
        cast_block([1.0, bad, 2.0], name)


# ----------------------------------------------------------- float32 values

VALUE_DTYPES = [
    "mxfp8",
    "mxfp8e5",
    "mxfp6e3",
    "mxfp6e2",
    "mxfp4",
    "mxint8",
    "mxint4",
    "nvfp4",
    "nvf4",
    "fp8_F",
    "fp8_n",
    "bf8_e",
    "int8_F",
    "int8_b",
    "uint8_FF",
    "uint8_bb",
    "uint8_bi",
    "uint8_ni",
    "uint8_ei",
    "uint4_fic",
]


@pytest.mark.parametrize("name", VALUE_DTYPES)
def test_values_are_float32_values(name):
    # Every decoded value is a float32 value (f32(v) == v), including blocks whose
    # products underflow into float32 subnormals or sit near float32 max.
    rng = np.random.default_rng(1234)
    blocks = []
    for e0 in (-140, -126, -60, 0, 60, 120):
        x = rng.standard_normal(16) * 2.0**e0
        x[::5] = 0.0
        blocks.append(np.clip(x, -3e38, 3e38).astype(np.float32))
    blocks.append(np.array([2.0**-149, -(2.0**-149), 2.0**-140, 0.0], np.float32))
    for b in blocks:
        run([float(v) for v in b], name)
