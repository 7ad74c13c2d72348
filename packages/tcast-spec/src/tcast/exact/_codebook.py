"""Exact rules of codebook datatypes (SEMANTICS.md §5.9): rounding to a table, mapping choice.

Pure functions of primitive arguments: a table is a tuple of Python floats in code order, a
scaled input ``t`` a float32 value. Comparisons are exact (Fractions); the mapping error is
float32 arithmetic, one correctly rounded operation per step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from ..errors import SpecError
from ..modes import RoundMode
from . import _f32

__all__ = ["choose_mapping", "mapping_error", "round_to_table"]


def _pick(lo: int, hi: int, t: Fraction, a: Fraction, b: Fraction, tie: int) -> int:
    """Index ``lo`` or ``hi`` for ``a < t < b`` (their values): the nearer, or ``tie``."""
    below, above = t - a, b - t
    if below < above:
        return lo
    if above < below:
        return hi
    return tie


def _round_symmetric(t: float, table: Sequence[float], mode: RoundMode) -> int:
    # Magnitudes v_0 = 0 < v_1 < ... < v_P at codes 0..P; the sign bit is the top code bit.
    half = len(table) // 2
    mags = [Fraction(v) for v in table[:half]]
    a = abs(Fraction(t))
    negative = math.copysign(1.0, t) < 0
    k = len(mags) - 1
    if a < mags[-1]:
        k = max(i for i, v in enumerate(mags) if v <= a)
        if a != mags[k] and mode is not RoundMode.TRUNC:
            if mode is RoundMode.EVEN:
                tie = k if k % 2 == 0 else k + 1
            elif mode is RoundMode.AWAY:
                tie = k + 1
            else:  # ZERO
                tie = k
            k = _pick(k, k + 1, a, mags[k], mags[k + 1], tie)
    return (half if negative else 0) + k


def _round_ascending(t: float, table: Sequence[float], mode: RoundMode) -> int:
    vals = [Fraction(v) for v in table]
    x = Fraction(t)
    if x <= vals[0]:
        return 0
    if x >= vals[-1]:
        return len(vals) - 1
    i = max(j for j, v in enumerate(vals) if v <= x)
    if x == vals[i]:
        return i
    lo, hi = i, i + 1
    even = lo if lo % 2 == 0 else hi
    if mode is RoundMode.TRUNC:
        return lo if x >= 0 else hi
    if mode is RoundMode.EVEN or abs(vals[lo]) == abs(vals[hi]):
        tie = even
    elif mode is RoundMode.AWAY:
        tie = lo if abs(vals[lo]) > abs(vals[hi]) else hi
    else:  # ZERO
        tie = lo if abs(vals[lo]) < abs(vals[hi]) else hi
    return _pick(lo, hi, x, vals[lo], vals[hi], tie)


def round_to_table(t: float, table: Sequence[float], symmetric: bool, mode: RoundMode) -> int:
    """The code (table index) a finite scaled input rounds to (SEMANTICS.md §5.9).

    Args:
        t: the scaled input, a float32 value (its sign bit counts: -0.0 is negative; ±Inf,
            a product ``fl32(x * r)`` that overflowed, saturates).
        table: one mapping's entries in code order.
        symmetric: the implicit layout (code ``s * 2**(I-1) + k``, entry k = 0 a zero, k >= 1
            the k-th positive magnitude, s the sign); else an ascending table.
        mode: even, away, zero or trunc.

    Returns:
        The code. Symmetric: |t| rounds among the magnitudes (ties: even k, the larger k, the
        smaller k; trunc: the largest magnitude <= |t|), above the largest it saturates, and
        the sign bit of t is the code's. Ascending: the nearest entry on the signed line (ties:
        the even index; away the larger magnitude, zero the smaller one, the even index when
        both magnitudes are equal; trunc: the largest entry <= t for t >= 0, the smallest entry
        >= t for t < 0), saturating to the first or last entry.

    Raises:
        SpecError: for stochastic rounding (not defined for codebooks) or a NaN t.
    """
    if mode is RoundMode.STOCHASTIC:
        raise SpecError(
            "stochastic rounding is not defined for codebook datatypes (their entries are not "
            "evenly spaced): use even, away, zero or trunc"
        )
    if math.isnan(t):
        raise SpecError(f"a codebook rounds numbers only, got {t!r}")
    if math.isinf(t):  # fl32(x * r) overflowed: above every entry, it saturates
        if symmetric:
            half = len(table) // 2
            return (half if t < 0 else 0) + half - 1
        return 0 if t < 0 else len(table) - 1
    if symmetric:
        return _round_symmetric(t, table, mode)
    return _round_ascending(t, table, mode)


def mapping_error(ts: Sequence[float], qs: Sequence[float]) -> float:
    """The float32 squared error of one subtile under one mapping (SEMANTICS.md §5.9).

    ``acc = fl32(acc + fl32(fl32(q - t)**2))`` from ``acc = +0.0``, over the elements in the
    given order (C order of the subtile).
    """
    acc = 0.0
    for t, q in zip(ts, qs, strict=True):
        d = _f32.sub(q, t)
        acc = _f32.add(acc, _f32.mul(d, d))
    return acc


def choose_mapping(
    ts: Sequence[float],
    tables: Sequence[Sequence[float]],
    symmetric: bool,
    mode: RoundMode,
) -> tuple[int, tuple[int, ...]]:
    """The mapping a subtile takes and its codes (SEMANTICS.md §5.9).

    Each mapping j in index order rounds every element (:func:`round_to_table`) and scores
    :func:`mapping_error`; the chosen mapping is the first whose error is strictly below that
    of every earlier one (equal errors keep the lowest index).

    Args:
        ts: the subtile's scaled inputs (finite float32 values) in C order.
        tables: the mappings, each a table in code order.
        symmetric: the implicit (symmetric) table layout, else ascending.
        mode: the round mode.

    Returns:
        ``(mapping index, codes)``.

    Raises:
        SpecError: as :func:`round_to_table`.
    """
    best: tuple[float, int, tuple[int, ...]] | None = None
    for j, table in enumerate(tables):
        codes = tuple(round_to_table(t, table, symmetric, mode) for t in ts)
        err = mapping_error(ts, [table[c] for c in codes])
        if best is None or err < best[0]:
            best = (err, j, codes)
    if best is None:
        raise SpecError("a codebook needs at least one mapping")
    return best[1], best[2]
