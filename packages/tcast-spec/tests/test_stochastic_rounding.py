"""Stochastic rounding (SEMANTICS.md §3.2, §3.3): the random width K of a format, the K-bit
rule and its bias bound, streams, the dual cast's column stream, and the statistics of the
seeded bits.

Expected values are hand-derived or computed in exact (Fraction) arithmetic from the rule as
SEMANTICS states it, with ml_dtypes' value grids as the oracle of each format's neighbours.
The statistical tests use fixed seeds, so they are deterministic; each bound is one that a
correct generator exceeds with a probability below 1e-8, stated where it is used.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tcast
from tcast import CastModes, SpecError, exact
from tcast.exact import encode, philox4x32, random_bits
from tcast.kit import EngineBase, dual_requests, normalize_args
from tcast.philox import check_random_source, check_stream

M = 0xFFFFFFFF


# ----------------------------------------------------------------------- the random width K
NARROW = ["e4m3fn", "e5m2", "e2m1f", "e3m2f", "e2m3f", "e3m0fn", "binary8p1", "int8", "int4"]
NARROW += ["uint4", "uint8", "e8m0", "e5m0"]


@pytest.mark.parametrize("code", NARROW)
def test_formats_of_at_most_8_bits_take_8_random_bits(code):
    assert tcast.number(code).bits <= 8
    assert tcast.number(code).rbits_width == 8
    assert tcast.rbits_width(code) == 8
    assert tcast.rbits_width(tcast.number(code)) == 8


@pytest.mark.parametrize(
    "code", ["e8m7", "bfloat16", "e5m10", "float16", "int16", "uint16", "e6m9", "float32"]
)
def test_wider_formats_take_16_random_bits(code):
    assert tcast.number(code).bits > 8
    assert tcast.number(code).rbits_width == 16
    assert tcast.rbits_width(code) == 16
    assert tcast.rbits_width(tcast.number(code)) == 16


DATATYPE_WIDTHS = [("mxfp8", 8), ("mxfp6e3", 8), ("mxfp4", 8), ("nvfp4", 8), ("mxint8", 8)]
DATATYPE_WIDTHS += [("mx9", 8), ("e4m3fn_float32_t0", 8), ("int16_e8m0_t32", 16), ("bfloat16", 16)]


@pytest.mark.parametrize(("name", "width"), DATATYPE_WIDTHS)
def test_a_datatype_takes_the_width_of_its_element_format(name, width):
    # the scale formats (e8m0, e4m3fn, float32) do not matter: K is the element's
    dt = tcast.datatype(name)
    assert tcast.rbits_width(dt) == width
    assert tcast.rbits_width(name) == width
    assert dt.nspec.rbits_width == width


@pytest.mark.parametrize("bad", [None, 8, 16, 8.0, b"e4m3fn", ["e4m3fn"], "nonsense", ""])
def test_rbits_width_of_anything_but_a_format_is_spec_error(bad):
    with pytest.raises(SpecError):
        tcast.rbits_width(bad)


# --------------------------------------------------------------------- the K-bit rule, K = 8
# e2m1f magnitudes 0, .5, 1, 1.5, 2, 3, 4, 6 are codes 0..7; sign bit 0x8.
# (value, code below, code above, its fraction of the ulp between them, written by hand)
E2M1F_FRACTIONS = [
    (2.25, 4, 5, Fraction(1, 4)),  # 2 + 1/4 of the ulp 1
    (2.0 + 2.0**-8, 4, 5, Fraction(1, 256)),  # the smallest fraction that can round up
    (2.0 + 2.0**-9, 4, 5, Fraction(1, 512)),  # never rounds up
    (3.0 - 2.0**-20, 4, 5, 1 - Fraction(1, 2**20)),  # rounds up for every r but 0
    (5.0 + 2.0**-20, 6, 7, Fraction(1, 2) + Fraction(1, 2**21)),  # 4 + (1/2 + 2**-21) * 2
    (0.30000001192092896, 0, 1, Fraction(0.30000001192092896) * 2),  # f32(0.3): ulp 1/2
    (-1.25, 0x8 | 2, 0x8 | 3, Fraction(1, 2)),  # a tie, negative
    (-0.0625, 0x8 | 0, 0x8 | 1, Fraction(1, 8)),
]


@pytest.mark.parametrize(("x", "down", "up", "frac"), E2M1F_FRACTIONS)
def test_every_r_of_8_bits_rounds_up_iff_floor_frac_times_256_plus_r_reaches_256(x, down, up, frac):
    lo = [0, 0.5, 1, 1.5, 2, 3, 4, 6][down & 7]
    hi = [0, 0.5, 1, 1.5, 2, 3, 4, 6][up & 7]
    assert Fraction(abs(x)) == lo + frac * (Fraction(hi) - Fraction(lo))  # the table is right
    m = math.floor(frac * 256)
    codes = [encode(x, "e2m1f", "stochastic", rbits=r) for r in range(256)]
    assert codes == [up if m + r >= 256 else down for r in range(256)]
    # probability floor(frac * 2**8) / 2**8 over the 256 equally likely values of r
    assert codes.count(up) == m


# ----------------------------------------------------------------------------- the bias bound
def _grid(dt) -> tuple[list[Fraction], dict[Fraction, int], int]:
    """Sorted non-negative finite magnitudes of an ml_dtypes format, value -> code, sign bit."""
    bits = ml_dtypes.finfo(dt).bits
    codes = np.arange(1 << bits, dtype=np.uint8)
    vals = codes.view(dt).astype(np.float64)
    sign = 1 << (bits - 1)
    table = {
        Fraction(float(v)): int(c)
        for v, c in zip(vals, codes, strict=True)
        if c < sign and np.isfinite(v)
    }
    return sorted(table), table, sign


GRIDS = {
    "e2m1f": _grid(ml_dtypes.float4_e2m1fn),
    "e3m2f": _grid(ml_dtypes.float6_e3m2fn),
    "e2m3f": _grid(ml_dtypes.float6_e2m3fn),
    "e4m3fn": _grid(ml_dtypes.float8_e4m3fn),
    "e5m2": _grid(ml_dtypes.float8_e5m2),
}


def _expectation(x: Fraction | float, fmt: str) -> tuple[Fraction, Fraction, Fraction]:
    """(|x|, the ulp at |x|, the mean magnitude of its 256 stochastic roundings)."""
    mags, table, sign = GRIDS[fmt]
    value = {c: v for v, c in table.items()}
    a = abs(Fraction(x))
    i = max(k for k, v in enumerate(mags) if v <= a)
    ulp = mags[i + 1] - mags[i] if i + 1 < len(mags) else mags[i] - mags[i - 1]
    negative = math.copysign(1, x) < 0  # -0.0 keeps its sign: these formats have -0
    total = Fraction(0)
    for r in range(256):
        code = encode(x, fmt, "stochastic", rbits=r)
        assert (code & sign) == (sign if negative else 0)
        total += value[code & ~sign]
    return a, ulp, total / 256


def _check_bias(a: Fraction, ulp: Fraction, mean: Fraction) -> None:
    # the mean is a truncated to a multiple of ulp / 2**8: below a by less than ulp / 2**8,
    # equal to a exactly when a lies on that grid
    step = ulp / 256
    assert mean == math.floor(a / step) * step
    assert a - step < mean <= a
    assert (mean == a) == ((a / step).denominator == 1)


@settings(max_examples=25)
@given(
    fmt=st.sampled_from(sorted(GRIDS)),
    u=st.floats(min_value=0, max_value=1, width=32),
    negative=st.booleans(),
)
def test_the_mean_of_256_roundings_of_a_float32_value_is_below_it_by_under_2_to_minus_8_ulp(
    fmt, u, negative
):
    mags = GRIDS[fmt][0]
    x = float(np.float32(u * float(mags[-1])))  # a float32 value in [0, max]
    a, ulp, mean = _expectation(-x if negative else x, fmt)
    _check_bias(a, ulp, mean)


@settings(max_examples=25)
@given(
    fmt=st.sampled_from(sorted(GRIDS)),
    where=st.floats(min_value=0, max_value=1),
    num=st.integers(min_value=0, max_value=2**20),
    den_bits=st.sampled_from([0, 1, 4, 8, 9, 12, 20]),
)
def test_the_mean_of_256_roundings_equals_an_exact_value_iff_it_is_on_the_ulp_over_256_grid(
    fmt, where, num, den_bits
):
    # exact (Fraction) values lo + ulp * t, t = num / 2**den_bits mod 1: on the ulp / 2**8 grid
    # for den_bits <= 8, off it for odd num and den_bits > 8
    mags = GRIDS[fmt][0]
    i = min(int(where * (len(mags) - 1)), len(mags) - 2)
    lo, ulp = mags[i], mags[i + 1] - mags[i]
    t = Fraction(num % (1 << den_bits), 1 << den_bits)
    a, got_ulp, mean = _expectation(lo + ulp * t, fmt)
    assert got_ulp == ulp
    _check_bias(a, ulp, mean)
    if den_bits <= 8:
        assert mean == a
    elif num % 2:
        assert mean < a


# -------------------------------------------------------------------- the K-bit rule, K = 16
def test_float16_rounds_with_16_random_bits():
    # 1 + 2**-12: between 1 (0x3C00) and 1 + 2**-10 (0x3C01), frac 1/4: up iff
    # 2**14 + r >= 2**16, i.e. r >= 49152
    x = 1 + 2.0**-12
    assert [encode(x, "e5m10", "stochastic", rbits=r) for r in (0, 255, 256, 49151)] == [0x3C00] * 4
    assert [encode(x, "e5m10", "stochastic", rbits=r) for r in (49152, 65535)] == [0x3C01] * 2
    assert encode(-x, "float16", "stochastic", rbits=49152) == 0xBC01
    # frac 2**-16 goes up only for r = 2**16 - 1; frac 2**-17 never
    assert encode(1 + 2.0**-26, "e5m10", "stochastic", rbits=65535) == 0x3C01
    assert encode(1 + 2.0**-26, "e5m10", "stochastic", rbits=65534) == 0x3C00
    assert encode(1 + 2.0**-27, "e5m10", "stochastic", rbits=65535) == 0x3C00
    # frac 2**-10 (floor(frac * 2**16) = 64) goes up from r = 65472: no byte reaches it
    assert encode(1 + 2.0**-20, "e5m10", "stochastic", rbits=65471) == 0x3C00
    assert encode(1 + 2.0**-20, "e5m10", "stochastic", rbits=65472) == 0x3C01
    assert encode(1 + 2.0**-20, "e5m10", "stochastic", rbits=255) == 0x3C00


def test_bfloat16_and_int16_round_with_16_random_bits():
    # bfloat16 1 + 3 * 2**-9: between 1 (0x3F80) and 1 + 2**-7 (0x3F81), frac 3/4: up iff
    # 49152 + r >= 65536, i.e. r >= 16384
    x = 1 + 3 * 2.0**-9
    assert encode(x, "e8m7", "stochastic", rbits=16383) == 0x3F80
    assert encode(x, "e8m7", "stochastic", rbits=16384) == 0x3F81
    assert encode(x, "bfloat16", "stochastic", rbits=0) == 0x3F80
    # int16 2.25: frac 1/4: up iff r >= 49152; -2.25 with r = 2**16 - 1 is -3 (0xFFFD)
    assert encode(2.25, "int16", "stochastic", rbits=49151) == 2
    assert encode(2.25, "int16", "stochastic", rbits=49152) == 3
    assert encode(-2.25, "int16", "stochastic", rbits=65535) == 0xFFFD


@pytest.mark.parametrize("fmt", ["e5m10", "e8m7", "int16", "uint16", "float32"])
def test_16_bit_rbits_are_accepted_up_to_2_to_the_16_minus_1(fmt):
    for r in (0, 256, 65535):
        encode(2.5, fmt, "stochastic", rbits=r)
    for r in (65536, -1, 1 << 32):
        with pytest.raises(SpecError, match=r"2\*\*16"):
            encode(2.5, fmt, "stochastic", rbits=r)


# ---------------------------------------------------------------------------- streams, §3.3
@pytest.mark.parametrize("stream", [True, False, -1, 1 << 32, 2**40, "1", 1.0, None])
def test_castmodes_refuse_a_stream_that_is_not_an_int_in_0_to_2_to_the_32(stream):
    with pytest.raises(SpecError, match="stream"):
        CastModes(stream=stream)
    with pytest.raises(SpecError, match="stream"):
        CastModes.of(stream=stream)
    with pytest.raises(SpecError, match="stream"):
        check_stream(stream)


def test_castmodes_carry_the_stream_as_an_int():
    assert CastModes().stream == 0
    assert CastModes.of(stream=3).stream == 3
    assert CastModes.of(stream=M).stream == M
    modes = CastModes(stream=np.uint32(7))
    assert modes.stream == 7 and type(modes.stream) is int
    assert check_stream(np.int64(5)) == 5


def test_check_random_source_refuses_a_stream_without_a_seed():
    check_random_source("stochastic", 5, None, 1)
    check_random_source("stochastic", 5, None, M)
    check_random_source("stochastic", None, [0], 0)
    with pytest.raises(SpecError, match="stream"):
        check_random_source("stochastic", None, [0], 1)  # given rbits have no stream
    with pytest.raises(SpecError, match="stream"):
        check_random_source("even", None, None, 1)
    with pytest.raises(SpecError, match="stream"):
        check_random_source("stochastic", 5, None, 1 << 32)
    with pytest.raises(SpecError, match="stream"):
        tcast.check_random_source("stochastic", 5, None, -1)


def test_normalize_args_puts_the_stream_in_the_modes():
    _, modes, seed = normalize_args("mxfp8", roundmode="stochastic", seed=1, stream=5)
    assert (modes.stream, seed) == (5, 1)
    assert normalize_args("mxfp8", roundmode="stochastic", seed=1)[1].stream == 0
    with pytest.raises(SpecError, match="stream"):
        normalize_args("mxfp8", roundmode="stochastic", rbits=[0], stream=1)
    with pytest.raises(SpecError, match="stream"):
        normalize_args("mxfp8", stream=1)
    with pytest.raises(SpecError, match="stream"):
        normalize_args("mxfp8", roundmode="stochastic", seed=1, stream=True)


@pytest.mark.parametrize(
    ("name", "x", "width"),
    [
        # e4m3fn: f32(2.3) is 2.25 + 0.2 * 0.25 (ulp 0.25): up with probability 51/256
        ("e4m3fn", 2.299999952316284, 8),
        # bfloat16: 1 + 0.3 * 2**-7 in float32, frac 0.3 of the ulp 2**-7
        ("bfloat16", float(np.float32(1 + 0.3 * 2**-7)), 16),
    ],
)
def test_a_seeded_cast_on_stream_1_uses_the_stream_1_bits(name, x, width):
    n, seed = 64, 2**40 + 5
    dt = tcast.datatype(name)
    one = exact.cast_array([x] * n, (n,), dt, roundmode="stochastic", seed=seed, stream=1)
    # stream 1 is the third counter word: element i = (128 / K) c + (32 / K) w + b
    per_call, per_word, mask = 128 // width, 32 // width, (1 << width) - 1
    calls = [philox4x32((c, 0, 1, 0), (5, 256)) for c in range(n // per_call)]
    rbits = [
        (calls[i // per_call][i % per_call // per_word] >> (width * (i % per_word))) & mask
        for i in range(n)
    ]
    assert rbits == random_bits(seed, range(n), width, stream=1)
    by_bits = exact.cast_array([x] * n, (n,), dt, roundmode="stochastic", rbits=rbits)
    assert one.codes == by_bits.codes
    zero = exact.cast_array([x] * n, (n,), dt, roundmode="stochastic", seed=seed)
    assert zero == exact.cast_array([x] * n, (n,), dt, roundmode="stochastic", seed=seed, stream=0)
    # both streams round up with probability about 0.2 or 0.3: the two roundings of an
    # element differ with probability about 0.3 to 0.4, on about 20 to 27 of the 64 elements
    differ = sum(a != b for a, b in zip(one.codes, zero.codes, strict=True))
    assert differ >= 8
    assert len(set(one.codes)) == 2 and len(set(zero.codes)) == 2


# ------------------------------------------------------------------------- dual casts, §8.2
class _Numpy(EngineBase):
    """The kit's defaults on NumPy arrays: enough to build requests."""

    name = "numpy-requests"
    array_type = np.ndarray

    def check_rbits(self, x, rbits, width):
        return rbits


def test_a_seeded_dual_cast_draws_its_rows_from_stream_0_and_its_columns_from_stream_1():
    x = np.zeros((4, 32), np.float32)
    dt, modes, seed = normalize_args("mxfp8", "actual", "stochastic", seed=11)
    rows, cols = dual_requests(_Numpy(), x, dt, modes, seed, None)
    assert (rows.modes.stream, cols.modes.stream) == (0, 1)
    assert rows.seed == cols.seed == 11
    assert rows.dtype == dt and cols.dtype == tcast.kit.column_datatype(dt)
    # apart from the stream, the two requests carry the same modes
    assert cols.modes == CastModes.of("actual", "stochastic", stream=1)
    assert rows.modes == CastModes.of("actual", "stochastic")


def test_given_rbits_serve_both_results_of_a_dual_cast_on_stream_0():
    x = np.zeros((4, 32), np.float32)
    rbits = np.arange(128, dtype=np.uint8).reshape(4, 32)
    dt, modes, seed = normalize_args("mxfp8", "actual", "stochastic", rbits=rbits)
    rows, cols = dual_requests(_Numpy(), x, dt, modes, seed, rbits)
    assert (rows.modes.stream, cols.modes.stream) == (0, 0)
    assert rows.seed is None and cols.seed is None
    assert rows.rbits is rbits and cols.rbits is rbits


def test_a_deterministic_dual_cast_has_stream_0_on_both_sides():
    x = np.zeros((4, 32), np.float32)
    dt, modes, seed = normalize_args("mxfp8", "actual")
    rows, cols = dual_requests(_Numpy(), x, dt, modes, seed, None)
    assert (rows.modes.stream, cols.modes.stream) == (0, 0)


# ------------------------------------------------------------- statistics of the seeded bits
N = 1 << 16


def _bits(seed: int, width: int, stream: int = 0, base: int = 0) -> np.ndarray:
    return np.array(random_bits(seed, range(base, base + N), width, stream=stream), np.int64)


def _chi2_256(samples: np.ndarray) -> float:
    counts = np.bincount(samples, minlength=256)
    expected = len(samples) / 256
    return float(((counts - expected) ** 2 / expected).sum())


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(a.astype(np.float64), b.astype(np.float64))[0, 1])


# (seed, width, stream, first index): key words 0 and all ones, both streams, and a run of
# elements that crosses the call where counter word 1 becomes 1
STAT_CASES = [
    (0, 8, 0, 0),
    ((1 << 64) - 1, 8, 1, (1 << 36) - N // 2),
    (0x299F31D0A4093822, 16, 0, 0),
    (12345, 16, 1, (1 << 35) - N // 2),
]


@pytest.mark.parametrize(("seed", "width", "stream", "base"), STAT_CASES)
def test_seeded_bits_are_uniform(seed, width, stream, base):
    r = _bits(seed, width, stream, base)
    assert r.min() >= 0 and r.max() < (1 << width)
    # Pearson's chi-square of 2**16 bytes in 256 bins has 255 degrees of freedom (mean 255,
    # sd 22.6); by the Wilson-Hilferty approximation P(chi2 < 130) ~ 6e-12 and
    # P(chi2 > 450) ~ 7e-13. A 16-bit value gives two bytes, each tested.
    for shift in range(0, width, 8):
        chi2 = _chi2_256((r >> shift) & 0xFF)
        assert 130 < chi2 < 450, (shift, chi2)
    # each bit is 1 half the time, within 6 standard errors (0.5 / sqrt(N)): P ~ 2e-9 each
    for k in range(width):
        ones = float(((r >> k) & 1).mean())
        assert abs(ones - 0.5) < 6 * 0.5 / math.sqrt(N), (k, ones)


@pytest.mark.parametrize(("seed", "width", "stream", "base"), STAT_CASES)
def test_neighbouring_elements_are_uncorrelated(seed, width, stream, base):
    # Under independence the sample correlation of m pairs is about normal with sd
    # 1 / sqrt(m): |corr| < 6 / sqrt(m) fails with probability ~ 2e-9 per check.
    r = _bits(seed, width, stream, base)
    i = np.arange(base, base + N - 1)
    per_word, per_call = 32 // width, 128 // width
    last_of_word = (i + 1) % per_word == 0
    last_of_call = (i + 1) % per_call == 0
    pairs = {
        "neighbours": np.ones(N - 1, bool),
        "in one word": ~last_of_word,
        "across words of a call": last_of_word & ~last_of_call,
        "across calls": last_of_call,
    }
    for what, keep in pairs.items():
        m = int(keep.sum())
        c = _corr(r[:-1][keep], r[1:][keep])
        assert abs(c) < 6 / math.sqrt(m), (what, m, c)
    # the same field of consecutive words, and the same element of consecutive calls
    for lag in (per_word, per_call):
        c = _corr(r[:-lag], r[lag:])
        assert abs(c) < 6 / math.sqrt(N - lag), (lag, c)


@pytest.mark.parametrize(("seed", "width"), [(7, 8), ((1 << 64) - 1, 8), (7, 16)])
def test_streams_0_and_1_of_a_seed_are_uncorrelated(seed, width):
    r0 = _bits(seed, width, 0)
    r1 = _bits(seed, width, 1)
    assert abs(_corr(r0, r1)) < 6 / math.sqrt(N)
    # and stream 1 is no shift of stream 0 by a word or a call
    for lag in (32 // width, 128 // width):
        assert abs(_corr(r0[lag:], r1[:-lag])) < 6 / math.sqrt(N - lag)
        assert abs(_corr(r1[lag:], r0[:-lag])) < 6 / math.sqrt(N - lag)
    # equal values: binomial(N, 2**-K), within 6 of its standard deviations
    p = 1 / (1 << width)
    equal = int((r0 == r1).sum())
    assert abs(equal - N * p) < 6 * math.sqrt(N * p * (1 - p)), equal


@pytest.mark.parametrize(
    ("x", "lo", "ulp", "seed"),
    [
        (2.25, 2, 1, 3),  # frac 1/4
        (-2.25, 2, 1, 4),
        (0.30000001192092896, 0, 0.5, 5),  # f32(0.3): frac 0.6000000238, floor(frac 256) 153
        (4.0 + 2.0**-7, 4, 2, 6),  # frac 2**-8: up with probability 1/256
        (5.0, 4, 2, 7),  # frac 1/2
    ],
)
def test_stochastic_rounding_of_a_fixed_value_is_unbiased_over_many_elements(x, lo, ulp, seed):
    # The mean of N roundings of x with seeded bits against the exact expectation
    # lo + ulp * floor(frac * 2**8) / 2**8 (§3.2), within 6 standard errors
    # ulp * sqrt(p (1 - p) / N): a correct generator misses with probability ~ 2e-9.
    # encode is a function of (x, r): it is tabulated over the 256 values of r, then read at
    # each element's seeded r.
    frac = (abs(Fraction(x)) - lo) / Fraction(ulp)
    p = math.floor(frac * 256) / 256
    grid = {0: 0.0, 1: 0.5, 2: 1.0, 3: 1.5, 4: 2.0, 5: 3.0, 6: 4.0, 7: 6.0}
    table = np.array([grid[encode(x, "e2m1f", "stochastic", rbits=r) & 7] for r in range(256)])
    rounded = table[_bits(seed, 8)]
    assert set(rounded.tolist()) <= {lo, lo + ulp}
    mean = float(rounded.mean())
    se = ulp * math.sqrt(p * (1 - p) / N)
    assert abs(mean - (lo + ulp * p)) < 6 * se, (mean, lo + ulp * p, se)


@pytest.mark.parametrize(
    ("name", "x", "lo", "ulp", "width"),
    [
        # e4m3fn: f32(2.3) = 2.25 + frac * 0.25, floor(frac * 2**8) = 51
        ("e4m3fn", 2.299999952316284, 2.25, 0.25, 8),
        # bfloat16: float32 1 + 0.3 * 2**-7 has a fraction on the 2**-16 grid: no bias at all
        ("bfloat16", float(np.float32(1 + 0.3 * 2**-7)), 1.0, 2.0**-7, 16),
    ],
)
def test_a_seeded_array_cast_is_unbiased_end_to_end(name, x, lo, ulp, width):
    # As above, through exact.cast_array's seeded bits, on fewer elements (the exact model
    # takes ~0.1 ms an element)
    n = 4096
    res = exact.cast_array([x] * n, (n,), tcast.datatype(name), roundmode="stochastic", seed=99)
    assert set(res.values) <= {lo, lo + ulp}
    frac = (Fraction(x) - Fraction(lo)) / Fraction(ulp)
    p = math.floor(frac * (1 << width)) / (1 << width)
    if width == 16:
        assert p == frac
    mean = sum(res.values) / n
    se = ulp * math.sqrt(p * (1 - p) / n)
    assert abs(mean - (lo + ulp * p)) < 6 * se, (mean, lo + ulp * p, se)
