"""The exact model against ml_dtypes (and numpy) as an independent oracle.

Every comparison is on raw code bits. What is exhaustive:

* every one of the 65536 float16 bit patterns AND every one of the 65536
  bfloat16 bit patterns (widened to float32, which is exact) is encoded into
  every ml_dtypes format of <= 8 bits listed in ``FORMATS``, with round mode
  ``even``: all of them with the saturate setting that matches ml_dtypes'
  overflow behaviour, and the in-range and NaN ones with the other setting too;
* float16 and bfloat16 as destinations are checked on 20000 seeded float32
  values (random bit patterns, float32 subnormals, float16-range values and
  exact float16/bfloat16 midpoints).

To keep the file fast (~35 s on 2 cores), each sweep's inputs are converted
once per module and each (format, saturate) code array is computed once.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tcast.exact import encode

# ml_dtypes name -> (ml_dtypes dtype, ml_dtypes is IEEE-style non-saturating on overflow)
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
}
FINITE_ONLY = ("float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn")


def _all_patterns(src: str) -> np.ndarray:
    """All 65536 bit patterns of float16 / bfloat16 as float32 values (exact widening)."""
    bits = np.arange(1 << 16, dtype=np.uint16)
    if src == "float16":
        return bits.view(np.float16).astype(np.float32)
    return bits.view(ml_dtypes.bfloat16).astype(np.float32)


class _Sweep:
    """The inputs of one source sweep and the exact model's codes, computed once."""

    def __init__(self, src: str):
        self.x = _all_patterns(src)
        self.py = [float(v) for v in self.x.tolist()]
        self.is_nan = np.isnan(self.x)
        self.absx = np.abs(np.array(self.py, dtype=np.float64))  # (the sweep holds sNaN patterns)
        self._cache: dict[tuple[str, bool], np.ndarray] = {}

    def codes(self, fmt: str, saturate: bool, where: np.ndarray | None = None) -> np.ndarray:
        """Codes for every input (or only at ``where``; -1 elsewhere), cached per setting."""
        key = (fmt, saturate)
        if key not in self._cache:
            self._cache[key] = np.full(self.x.size, -1, dtype=np.int64)
        out = self._cache[key]
        todo = (out < 0) if where is None else (where & (out < 0))
        for i in np.flatnonzero(todo).tolist():
            out[i] = encode(self.py[i], fmt, "even", saturate=saturate)
        return out


_SWEEPS: dict[str, _Sweep] = {}


def _sweep(src: str) -> _Sweep:
    if src not in _SWEEPS:
        _SWEEPS[src] = _Sweep(src)
    return _SWEEPS[src]


def _ml_codes(x: np.ndarray, dt) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):  # NaN/Inf/overflow casts are the point
        return x.astype(dt).view(np.uint8).astype(np.int64)


def _report(x: np.ndarray, ours: np.ndarray, theirs: np.ndarray, bad: np.ndarray) -> str:
    idx = np.flatnonzero(bad)[:8]
    rows = [f"x={x[i]!r} tcast=0x{ours[i]:02x} ml_dtypes=0x{theirs[i]:02x}" for i in idx]
    return f"{int(bad.sum())} mismatches, first: " + "; ".join(rows)


@pytest.mark.parametrize("src", ["float16", "bfloat16"])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_even_encode_equals_ml_dtypes_astype_on_every_16bit_pattern(src, fmt):
    dt, ieee_style = FORMATS[fmt]
    s = _sweep(src)
    ml = _ml_codes(s.x, dt)
    maxfloat = float(ml_dtypes.finfo(dt).max)  # the oracle's max, not ours
    finite = np.isfinite(s.x)
    in_range = finite & (s.absx <= maxfloat)
    out_of_range = ~s.is_nan & ~in_range  # finite beyond max, and +-Inf
    assert in_range.sum() > 10000 and out_of_range.sum() > 2

    # every input with the setting that matches ml_dtypes' overflow behaviour;
    # the other setting only where it must agree too (in range, NaN): halves the cost
    matching = not ieee_style
    other = s.codes(fmt, not matching, where=in_range | s.is_nan)
    ours = s.codes(fmt, matching)

    # in-range finite values: both saturate settings give ml_dtypes' bits
    for saturate, codes in ((matching, ours), (not matching, other)):
        bad = in_range & (codes != ml)
        assert not bad.any(), f"saturate={saturate}: " + _report(s.x, codes, ml, bad)

    # beyond max and +-Inf: the setting that matches ml_dtypes' overflow behaviour
    bad = out_of_range & (ours != ml)
    assert not bad.any(), _report(s.x, ours, ml, bad)

    # NaN inputs: both give a NaN code, where the format has NaN
    if fmt not in FINITE_ONLY:
        for codes in (ours, other):
            nan_codes = codes[s.is_nan].astype(np.uint8)
            assert np.isnan(nan_codes.view(dt).astype(np.float32)).all()
        assert np.isnan(ml[s.is_nan].astype(np.uint8).view(dt).astype(np.float32)).all()
        assert s.is_nan.sum() >= 254  # 2046 NaN patterns in float16, 254 in bfloat16


@pytest.mark.parametrize("fmt", FINITE_ONLY)
def test_nan_into_finite_only_format_is_code_zero_intended_difference(fmt):
    # SEMANTICS: a finite-only format has no NaN code; NaN encodes to +0 (code 0).
    # ml_dtypes instead produces 0b1000.. (e.g. 0x8 = -0 for float4_e2m1fn) for +NaN.
    dt, _ = FORMATS[fmt]
    for saturate in (True, False):
        assert encode(math.nan, fmt, saturate=saturate) == 0
        assert encode(-math.nan, fmt, saturate=saturate) == 0
    ml = _ml_codes(np.array([np.nan], dtype=np.float32), dt)[0]
    assert ml != 0, "ml_dtypes now agrees with tcast: update SEMANTICS' list of differences"
    if fmt == "float4_e2m1fn":
        assert ml == 0x8


# --------------------------------------------------- float16 / bfloat16 as destinations
def _random_float32(n: int) -> np.ndarray:
    rng = np.random.default_rng(20240917)
    k = n // 5
    parts = [
        # uniformly random bit patterns (the whole float32 range)
        rng.integers(0, 1 << 32, size=k, dtype=np.uint64).astype(np.uint32).view(np.float32),
        # float32 subnormals
        rng.integers(1, 1 << 23, size=k, dtype=np.uint32).view(np.float32),
        # log-uniform magnitudes over the float16 range (incl. its subnormals), both signs
        _log_uniform(rng, k, -26.0, 16.5),
        # exact float16 midpoints (ties) and their float32 neighbours
        _midpoints(rng, k, np.float16, np.uint16),
        _midpoints(rng, n - 4 * k, ml_dtypes.bfloat16, np.uint16),
    ]
    x = np.concatenate(parts)
    return x[~np.isnan(x)]


def _log_uniform(rng, k: int, lo: float, hi: float) -> np.ndarray:
    signs = rng.choice([-1.0, 1.0], size=k)
    return (np.exp2(rng.uniform(lo, hi, size=k)) * signs).astype(np.float32)


def _midpoints(rng, k: int, dt, ut) -> np.ndarray:
    third = k // 3
    codes = rng.integers(0, 0x7BFF, size=third, dtype=np.uint64).astype(ut)
    lo = codes.view(dt).astype(np.float64)
    hi = (codes + 1).view(dt).astype(np.float64)
    mid = ((lo + hi) / 2).astype(np.float32)  # exact: one more bit than the source format
    up = np.nextafter(mid, np.float32(np.inf))
    down = np.nextafter(mid, np.float32(0))
    out = np.concatenate([mid, up, down])
    extra = k - out.size
    return np.concatenate([out, -mid[:extra]]) if extra > 0 else out[:k]


@pytest.mark.parametrize("dest", ["float16", "bfloat16"])
def test_even_encode_into_16bit_equals_numpy_astype(dest):
    x = _random_float32(20000)
    assert x.size >= 19000
    assert (np.abs(x[np.isfinite(x)]) < np.finfo(np.float32).tiny).sum() > 3000
    dt = np.float16 if dest == "float16" else ml_dtypes.bfloat16
    with np.errstate(over="ignore"):
        theirs = x.astype(dt).view(np.uint16).astype(np.int64)  # IEEE RNE, overflow to Inf
    ours = np.array(
        [encode(float(v), dest, "even", saturate=False) for v in x.tolist()], dtype=np.int64
    )
    bad = ours != theirs
    idx = np.flatnonzero(bad)[:8]
    assert not bad.any(), [(x[i], hex(ours[i]), hex(theirs[i])) for i in idx]


@pytest.mark.parametrize("dest", ["float16", "bfloat16"])
def test_nan_into_16bit_is_the_quiet_nan_with_sign(dest):
    # canonical IEEE NaN: all-ones exponent, top mantissa bit set, sign kept
    expected = {"float16": 0x7E00, "bfloat16": 0x7FC0}[dest]
    assert encode(math.nan, dest) == expected
    assert encode(-math.nan, dest) == expected | 0x8000
    dt = np.float16 if dest == "float16" else ml_dtypes.bfloat16
    assert np.isnan(np.array([expected], dtype=np.uint16).view(dt)[0])
