"""tcast_ref against ml_dtypes (and NumPy for float16): round-to-nearest-even unscaled casts.

Every comparison is on raw code bits: ``tcast_ref.cast(..., castmode="actual").data``
against ``x.astype(<ml_dtypes type>).view(<uint>)``.

* Destinations: every ml_dtypes format tcast shares (the ten 8/6/4-bit floats below), and
  bfloat16 / float16 through the unscaled ``bfloat16`` / ``float16`` datatypes.
* Inputs: every float16 and every bfloat16 bit pattern (passed to tcast_ref in their own
  dtype; ml_dtypes gets the exact float32 widening), and 10 x 2^20 seeded random float32
  values per destination (uniform random bit patterns with NaN/Inf/subnormals, values
  concentrated on the destination's range, its exact ties and their float32 neighbours,
  float32 subnormals and specials).
* In range, both ``saturate`` settings give ml_dtypes' codes; out of range (beyond max, ±Inf)
  the IEEE overflow option does, where ml_dtypes is non-saturating (``saturate=False``), and
  for the finite-only FP6/FP4, which ml_dtypes saturates, ``saturate=True`` (and also
  ``saturate=False``: SEMANTICS.md §4.1 gives ±max where there is neither Inf nor NaN).
* NaN inputs: where the format has NaN, both give a NaN code with the same sign bit (compared
  as "both NaN"; the one code difference, NumPy's float16 payload propagation, is a named
  test, as is the sign of a decoded fnuz NaN). Finite-only formats: tcast gives code 0,
  ml_dtypes 0b10..0 for +NaN: a named test (SEMANTICS.md §4.2, §11).
* The virtual result equals ml_dtypes' round trip (to the format and back to the input dtype).

Since the native fast path in ``tcast_ref._codec`` converts through ml_dtypes/NumPy for
round-to-nearest-even, the public comparison alone could be circular; every sweep is also
run through the engine's integer path (the private ``_codec._encode_float``) so that the
check stays an independent one.
"""

from __future__ import annotations

import time
import warnings

import ml_dtypes
import numpy as np
import pytest

import tcast_ref
from tcast import RoundMode, datatype

# tcast datatype name -> (ml_dtypes / NumPy type, ml_dtypes overflows to Inf/NaN)
FORMATS = {
    "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, True),
    "float8_e5m2": (ml_dtypes.float8_e5m2, True),
    "float8_e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, True),
    "float8_e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, True),
    "float8_e4m3b11fnuz": (ml_dtypes.float8_e4m3b11fnuz, True),
    "float8_e3m4": (ml_dtypes.float8_e3m4, True),
    "float8_e4m3": (ml_dtypes.float8_e4m3, True),
    # finite-only FP6/FP4: ml_dtypes saturates (no Inf, no NaN to overflow to)
    "float6_e2m3fn": (ml_dtypes.float6_e2m3fn, False),
    "float6_e3m2fn": (ml_dtypes.float6_e3m2fn, False),
    "float4_e2m1fn": (ml_dtypes.float4_e2m1fn, False),
    "bfloat16": (ml_dtypes.bfloat16, True),
    "float16": (np.float16, True),
}
FINITE_ONLY = ("float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")
SOURCES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
CHUNK = 1 << 20
N_CHUNKS = 10  # 10,485,760 random float32 inputs per destination
SEED = 20251121


def _uint(fmt: str):
    return np.uint16 if fmt in ("bfloat16", "float16") else np.uint8


def _ml_codes(x32: np.ndarray, fmt: str) -> np.ndarray:
    dt, _ = FORMATS[fmt]
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf/overflow casts are the point
        return x32.astype(dt).view(_uint(fmt))


def _ml_is_nan(codes: np.ndarray, fmt: str) -> np.ndarray:
    dt, _ = FORMATS[fmt]
    return np.isnan(codes.astype(_uint(fmt)).view(dt).astype(np.float32))


def _ml_max(fmt: str) -> float:
    dt, _ = FORMATS[fmt]
    return float(ml_dtypes.finfo(dt).max)


def _ours(x: np.ndarray, fmt: str, saturate: bool) -> np.ndarray:
    res = tcast_ref.cast(x, fmt, castmode="actual", saturate=saturate)
    assert res.data.dtype == _uint(fmt) and res.data.shape == x.shape
    return res.data


def _ours_integer_path(x32: np.ndarray, fmt: str, saturate: bool) -> np.ndarray:
    """The engine's integer-arithmetic encoder, bypassing any native (ml_dtypes) fast path."""
    from tcast_ref import _codec

    out = _codec._encode_float(x32, datatype(fmt).nspec, RoundMode.EVEN, None, saturate)
    return np.asarray(out).astype(_uint(fmt))


def _report(x: np.ndarray, ours: np.ndarray, theirs: np.ndarray, bad: np.ndarray) -> str:
    idx = np.flatnonzero(bad)[:6]
    rows = [
        f"x={x[i]!r} (0x{np.float32(x[i]).view(np.uint32):08x}) "
        f"tcast_ref=0x{int(ours[i]):x} ml_dtypes=0x{int(theirs[i]):x}"
        for i in idx
    ]
    return f"{int(bad.sum())} mismatches, first: " + "; ".join(rows)


def _check_codes(x32, ours, ml, fmt, saturate, where):
    bad = where & (ours != ml)
    assert not bad.any(), f"{fmt} saturate={saturate}: " + _report(x32, ours, ml, bad)


def _check_nan(x32, ours, ml, fmt):
    """NaN inputs: both sides give a NaN code (finite-only formats: their own named test)."""
    nan = np.isnan(x32)
    if fmt in FINITE_ONLY or not nan.any():
        return
    assert _ml_is_nan(ours[nan], fmt).all(), f"{fmt}: a NaN input gave a non-NaN code"
    assert _ml_is_nan(ml[nan], fmt).all()
    # the sign of the NaN is kept by both for IEEE and fn styles; fnuz has one NaN (0x80)
    sign = 0x8000 if _uint(fmt) is np.uint16 else 0x80
    assert np.array_equal(ours[nan] & sign, ml[nan] & sign)


# ------------------------------------------------------------ every 16-bit input
class _Sweep:
    def __init__(self, src: str):
        bits = np.arange(1 << 16, dtype=np.uint16)
        self.x = bits.view(SOURCES[src])  # passed to tcast_ref in its own dtype
        self.x32 = self.x.astype(np.float32)  # exact widening, for ml_dtypes


_SWEEPS: dict[str, _Sweep] = {}


def _sweep(src: str) -> _Sweep:
    if src not in _SWEEPS:
        _SWEEPS[src] = _Sweep(src)
    return _SWEEPS[src]


@pytest.mark.parametrize("src", list(SOURCES))
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_even_cast_equals_ml_dtypes_on_every_16bit_input(fmt, src):
    s = _sweep(src)
    _, ieee = FORMATS[fmt]
    ml = _ml_codes(s.x32, fmt)
    nan = np.isnan(s.x32)
    finite = np.isfinite(s.x32)
    in_range = finite & (np.abs(s.x32) <= np.float32(_ml_max(fmt)))
    out_of_range = ~nan & ~in_range
    matching = not ieee  # the saturate setting with ml_dtypes' overflow behaviour
    for saturate in (True, False):
        ours = _ours(s.x, fmt, saturate)
        # in range: both settings give ml_dtypes' codes
        _check_codes(s.x32, ours, ml, fmt, saturate, in_range)
        # beyond max and +-Inf: the setting that matches ml_dtypes (both, for finite-only)
        if saturate == matching or fmt in FINITE_ONLY:
            _check_codes(s.x32, ours, ml, fmt, saturate, out_of_range)
        _check_nan(s.x32, ours, ml, fmt)
    assert in_range.sum() > 10000 and out_of_range.sum() >= 2 and nan.sum() >= 254


@pytest.mark.parametrize("src", list(SOURCES))
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_even_virtual_equals_ml_dtypes_round_trip_on_every_16bit_input(fmt, src):
    # §7: the virtual result is the decoded value rounded (RNE, IEEE overflow) to the input
    # dtype; ml_dtypes' round trip x -> fmt -> float32 -> input dtype is the same value.
    # NaN results compare as 'both NaN' (fnuz NaN decodes to +NaN in tcast, -NaN in
    # ml_dtypes: test_fnuz_nan_decodes_to_positive_nan_where_ml_dtypes_gives_negative).
    s = _sweep(src)
    _, ieee = FORMATS[fmt]
    dt, _ = FORMATS[fmt]
    nan = np.isnan(s.x32)
    with np.errstate(invalid="ignore", over="ignore"):
        theirs_v = s.x32.astype(dt).astype(np.float32).astype(s.x.dtype)
    theirs = theirs_v.view(np.uint16)
    ours = tcast_ref.cast(s.x, fmt, saturate=not ieee)
    assert ours.dtype == s.x.dtype
    ours_nan = np.isnan(ours.astype(np.float32))
    theirs_nan = np.isnan(theirs_v.astype(np.float32))
    bad = ~nan & (ours.view(np.uint16) != theirs) & ~(ours_nan & theirs_nan)
    assert not bad.any(), _report(s.x32, ours.view(np.uint16), theirs, bad)
    assert np.array_equal(ours_nan[~nan], theirs_nan[~nan])
    # §7: an input NaN stays NaN in every cast (finite-only formats included)
    assert ours_nan[nan].all()
    assert ours_nan.sum() >= nan.sum()


@pytest.mark.parametrize("fmt", [f for f in FORMATS if "fnuz" in f])
def test_fnuz_nan_decodes_to_positive_nan_where_ml_dtypes_gives_negative(fmt):
    # SEMANTICS.md §2: 'fnuz/uz/exponent NaNs decode to the positive NaN' (the one NaN code
    # 0x80 has no sign of its own). ml_dtypes decodes 0x80 to a negative float32 NaN. The
    # codes agree (0x80 for NaN inputs and IEEE overflow); the decoded NaN's sign does not.
    dt, _ = FORMATS[fmt]
    x = np.array([np.nan, -np.nan, np.inf, -np.inf], np.float32)
    assert _ours(x, fmt, saturate=False).tolist() == [0x80] * 4
    assert _ml_codes(x, fmt).tolist() == [0x80] * 4
    ours = tcast_ref.cast(x, fmt, saturate=False)
    assert ours.view(np.uint32).tolist() == [0x7FC00000] * 4
    up = tcast_ref.upcast(tcast_ref.cast(x, fmt, castmode="actual", saturate=False))
    assert up.view(np.uint32).tolist() == [0x7FC00000] * 4
    theirs = np.array([0x80], np.uint8).view(dt).astype(np.float32)
    assert np.isnan(theirs[0]) and np.signbit(theirs[0])


@pytest.mark.parametrize("src", list(SOURCES))
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_integer_path_equals_ml_dtypes_on_every_16bit_input(fmt, src):
    # Independence: the engine's own integer rounding (not the ml_dtypes fast path).
    s = _sweep(src)
    _, ieee = FORMATS[fmt]
    ml = _ml_codes(s.x32, fmt)
    ours = _ours_integer_path(s.x32, fmt, saturate=not ieee)
    _check_codes(s.x32, ours, ml, fmt, not ieee, ~np.isnan(s.x32))
    _check_nan(s.x32, ours, ml, fmt)


# ------------------------------------------------------------ 10M random float32 inputs
@pytest.fixture(scope="module")
def timings():
    out: dict[str, tuple[float, float]] = {}
    yield out
    if out:
        pub, integer = (sum(v[i] for v in out.values()) for i in (0, 1))
        print(
            f"\n10M random float32 per format, tcast_ref time: cast {pub:.1f} s, integer "
            f"path {integer:.1f} s; "
            + ", ".join(f"{k} {a:.2f}/{b:.2f}" for k, (a, b) in out.items())
        )


def _value_table(fmt: str) -> np.ndarray:
    """Every non-negative finite value of the destination, from ml_dtypes (the oracle)."""
    dt, _ = FORMATS[fmt]
    bits = datatype(fmt).nspec.bits
    codes = np.arange(1 << bits, dtype=np.uint32).astype(_uint(fmt))
    with np.errstate(invalid="ignore"):  # the NaN codes (some signalling) convert to NaN
        v = codes.view(dt).astype(np.float64)
    return np.unique(v[np.isfinite(v) & (v >= 0)])


_TIES: dict[str, np.ndarray] = {}


def _ties(fmt: str) -> np.ndarray:
    """Exact midpoints of adjacent values (and max + half an ulp), as float32 (exact)."""
    if fmt not in _TIES:
        v = _value_table(fmt)
        top = v[-1] + (v[-1] - v[-2])  # the grid point above max
        mids = (np.append(v[:-1], v[-1]) + np.append(v[1:], top)) / 2
        mids32 = mids.astype(np.float32)
        assert np.array_equal(mids32.astype(np.float64), mids)  # exact in float32
        _TIES[fmt] = mids32
    return _TIES[fmt]


def _random_chunk(fmt: str, i: int) -> np.ndarray:
    """2^20 seeded float32 inputs: 40% random bits, 35% in the format's range, 15% ties
    and their neighbours, 10% float32 subnormals and specials; shuffled."""
    rng = np.random.default_rng([SEED, list(FORMATS).index(fmt), i])
    n = CHUNK
    n_bits, n_range, n_ties = 4 * n // 10, 35 * n // 100, 15 * n // 100
    n_small = n - n_bits - n_range - n_ties
    spec = datatype(fmt).nspec
    emin, emax, mbits = spec.emin, int(np.floor(np.log2(_ml_max(fmt)))), spec.mbits
    # uniform random bit patterns: NaN, Inf, subnormals, everything
    a = rng.integers(0, 1 << 32, n_bits, dtype=np.uint64).astype(np.uint32)
    # concentrated: float32 exponent from below the smallest subnormal to above max
    lo, hi = max(1, emin - mbits - 3 + 127), min(254, emax + 3 + 127)
    e = rng.integers(lo, hi + 1, n_range, dtype=np.uint64).astype(np.uint32)
    m = rng.integers(0, 1 << 23, n_range, dtype=np.uint64).astype(np.uint32)
    sgn = rng.integers(0, 2, n_range, dtype=np.uint64).astype(np.uint32) << np.uint32(31)
    b = sgn | (e << np.uint32(23)) | m
    # exact ties and their float32 neighbours (sticky bits)
    t = rng.choice(_ties(fmt), n_ties)
    which = rng.integers(0, 3, n_ties)
    t = np.where(which == 1, np.nextafter(t, np.float32(np.inf)), t)
    t = np.where(which == 2, np.nextafter(t, np.float32(0)), t).astype(np.float32)
    t = np.where(rng.integers(0, 2, n_ties) == 1, -t, t).astype(np.float32)
    # float32 subnormals, zeros, infinities and NaNs of several payloads
    sm = rng.integers(0, 1 << 23, n_small, dtype=np.uint64).astype(np.uint32)
    sm |= rng.integers(0, 2, n_small, dtype=np.uint64).astype(np.uint32) << np.uint32(31)
    specials = np.array(
        [
            0x0,
            0x80000000,
            0x7F800000,
            0xFF800000,
            0x7FC00000,
            0xFFC00000,
            0x7F800001,
            0xFFBFFFFF,
            0x7F7FFFFF,
            0xFF7FFFFF,
        ],
        np.uint32,
    )
    sm[: specials.size * 16] = np.tile(specials, 16)
    x = np.concatenate([a.view(np.float32), b.view(np.float32), t, sm.view(np.float32)])
    rng.shuffle(x)
    return x


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_even_cast_equals_ml_dtypes_on_10m_random_float32(fmt, timings):
    # Both the public cast and the engine's integer path (independent of the ml_dtypes
    # fast path), on every one of the 10 x 2^20 inputs.
    _, ieee = FORMATS[fmt]
    saturate = not ieee  # IEEE overflow where ml_dtypes has it; finite-only: saturating
    mx = np.float32(_ml_max(fmt))
    counts = dict.fromkeys(("in", "over", "nan", "tie", "sub"), 0)
    total = 0
    spent = [0.0, 0.0]
    ties = _ties(fmt)
    for i in range(N_CHUNKS):
        x = _random_chunk(fmt, i)
        ml = _ml_codes(x, fmt)
        nan = np.isnan(x)
        t0 = time.perf_counter()
        ours = _ours(x, fmt, saturate)
        t1 = time.perf_counter()
        ours_int = _ours_integer_path(x, fmt, saturate)
        spent[0] += t1 - t0
        spent[1] += time.perf_counter() - t1
        for codes in (ours, ours_int):
            _check_codes(x, codes, ml, fmt, saturate, ~nan)
            _check_nan(x, codes, ml, fmt)
        ax = np.abs(x)
        counts["in"] += int((ax <= mx).sum())
        counts["over"] += int(((ax > mx) & ~nan).sum())
        counts["nan"] += int(nan.sum())
        counts["sub"] += int(((ax > 0) & (ax < np.float32(2.0**-126))).sum())
        if i == 0:  # exact ties (a third of the 15% near ties): counted on one chunk
            counts["tie"] = int(np.isin(ax, ties).sum())
        total += x.size
    timings[fmt] = tuple(spent)
    assert total >= 10_000_000
    assert counts["in"] > 4_000_000
    # bfloat16 spans float32's range: only the top sliver of float32 and +-Inf overflow it
    assert counts["over"] > (500 if fmt == "bfloat16" else 100_000)
    assert counts["nan"] > 10_000 and counts["sub"] > 100_000 and counts["tie"] > 40_000


@pytest.mark.parametrize("fmt", [f for f in FORMATS if FORMATS[f][1]])
def test_saturating_cast_of_out_of_range_differs_from_ml_dtypes_by_design(fmt):
    # §4.1: saturate=True (tcast's default) gives +-max where ml_dtypes gives Inf/NaN.
    mx = np.float32(_ml_max(fmt))
    x = np.array([np.inf, -np.inf, np.finfo(np.float32).max], np.float32)
    ours = _ours(x, fmt, saturate=True)
    dt, _ = FORMATS[fmt]
    maxcode = np.array([mx], np.float32).astype(dt).view(_uint(fmt))[0]
    sign = 0x8000 if _uint(fmt) is np.uint16 else 0x80
    assert ours.tolist() == [maxcode, maxcode | sign, maxcode]
    ml = _ml_codes(x, fmt)
    assert not np.isin(ml, [maxcode, maxcode | sign]).any()


# ------------------------------------------------------------ named NaN differences
@pytest.mark.parametrize("fmt", FINITE_ONLY)
def test_nan_into_finite_only_format_is_code_zero_where_ml_dtypes_writes_negative_zero(fmt):
    # SEMANTICS.md §4.2 and §11 ('ml_dtypes, NaN into FP4'): a finite-only format has no NaN
    # code; tcast encodes +-NaN as code 0 (+0) under both saturate settings. ml_dtypes writes
    # the sign bit alone (float4_e2m1fn 0x8, FP6 0x20: -0) for +NaN, and 0 for -NaN.
    x = np.array([np.nan, -np.nan], np.float32)
    sign = {"float4_e2m1fn": 0x8, "float6_e2m3fn": 0x20, "float6_e3m2fn": 0x20}[fmt]
    for saturate in (True, False):
        assert _ours(x, fmt, saturate).tolist() == [0, 0]
    assert _ml_codes(x, fmt).tolist() == [sign, 0]
    # the virtual result stays NaN with the input's sign (§7); upcast gives +0 (§8)
    v = tcast_ref.cast(x, fmt)
    assert v.view(np.uint32).tolist() == [0x7FC00000, 0xFFC00000]
    up = tcast_ref.upcast(tcast_ref.cast(x, fmt, castmode="actual"))
    assert up.view(np.uint32).tolist() == [0, 0]


def test_nan_into_float16_is_canonical_where_numpy_keeps_the_payload():
    # SEMANTICS.md §4.2: a NaN input gives the canonical quiet NaN (0x7E00 / 0xFE00 for
    # float16), sign kept, payload never propagated. NumPy's float32 -> float16 conversion
    # keeps the top payload bits (and makes a signalling NaN 0x7C01): both are NaN, the bits
    # differ. ml_dtypes' bfloat16 and 8-bit conversions canonicalize like tcast.
    x = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFA00000, 0x7FFFFFFF], np.uint32).view(
        np.float32
    )
    ours = _ours(x, "float16", saturate=False)
    assert ours.tolist() == [0x7E00, 0xFE00, 0x7E00, 0xFE00, 0x7E00]
    theirs = _ml_codes(x, "float16")
    assert theirs.tolist() == [0x7E00, 0xFE00, 0x7C01, 0xFD00, 0x7FFF]
    assert _ours(x, "bfloat16", saturate=False).tolist() == _ml_codes(x, "bfloat16").tolist()


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f not in FINITE_ONLY and f != "float16"])
def test_nan_codes_are_bit_identical_to_ml_dtypes_where_both_canonicalize(fmt):
    # §4.2: canonical NaN (top mantissa bit; fnuz: 0x80), sign kept for IEEE and fn styles.
    # ml_dtypes does the same for these formats: the 'both NaN' comparison is exact here.
    x = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF, 0x7FA00000], np.uint32).view(
        np.float32
    )
    for saturate in (True, False):
        assert np.array_equal(_ours(x, fmt, saturate), _ml_codes(x, fmt))


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_signalling_nan_inputs_cast_without_a_runtime_warning(fmt):
    # A signalling NaN (0x7F800001, 0xFFA00000) is an ordinary NaN input (§4.2): the cast
    # gives the canonical NaN code (or 0 for finite-only formats) and must not emit
    # "RuntimeWarning: invalid value encountered in cast" (an error under pytest).
    x = np.array([0x7F800001, 0xFFA00000, 0x7FC00000, 0x3F800000], np.uint32).view(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for saturate in (True, False):
            codes = _ours(x, fmt, saturate)
            virt = tcast_ref.cast(x, fmt, saturate=saturate)
            assert np.isnan(virt[:3]).all() and virt[3] == 1.0
            if fmt in FINITE_ONLY:
                assert codes[:3].tolist() == [0, 0, 0]
            else:
                assert _ml_is_nan(codes[:3], fmt).all()
