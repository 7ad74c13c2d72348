"""Codebook rounding and mapping choice (SEMANTICS.md §5.9), vectorized.

A codebook's tables become arrays once (:func:`book`): per mapping the sorted keys (the
magnitudes ``0 = v_0 < ... < v_P`` of a symmetric table, the entries of an ascending one)
and the midpoints between neighbours as exact comparisons on float64. A float32 input ``t``
is a float64 value; a midpoint ``m`` is a rational, stored as the largest float64 ``f <= m``
and whether ``f == m``: then ``m < t`` iff ``f < t``, and ``t == m`` iff ``f == m == t``. So
``searchsorted`` counts the midpoints below ``t`` exactly, and a tie is exact equality.

The mapping error of a unit is float32 arithmetic: ``fl32(fl32(q - t)**2)`` per element,
summed ``acc = fl32(acc + term)`` from +0 in the unit's C order.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from tcast import CodebookSpec, RoundMode

__all__ = ["Book", "book", "choose_mapping", "round_to_table", "unit_errors"]

#: Units up to this length sum their errors position by position; longer ones accumulate.
_LOOP = 64


@dataclass(frozen=True)
class Book:
    """A codebook's tables as arrays.

    Attributes:
        symmetric: the implicit layout (code ``s * half + k``), else ascending tables.
        half: ``2**(I-1)`` (the sign bit of a symmetric code).
        values: float32 entries in code order, (mappings, 2**I).
        keys: float64 sorted keys per mapping: magnitudes ``v_0..v_P`` (symmetric) or the
            entries (ascending).
        mids: float64 largest value <= the midpoint of each pair of neighbouring keys.
        exact: whether that value is the midpoint itself.
        hi_larger: ascending: +1 where the upper neighbour has the larger magnitude, -1 where
            the lower one has, 0 where they are equal (the ties of away and zero).
        zero_safe: every mapping rounds +0 to an entry equal to 0 (a padded zero adds no
            error).
    """

    symmetric: bool
    half: int
    values: np.ndarray
    keys: np.ndarray
    mids: np.ndarray
    exact: np.ndarray
    hi_larger: np.ndarray
    zero_safe: bool

    @property
    def mappings(self) -> int:
        """How many mappings the tables hold."""
        return self.values.shape[0]


def _mid_floor(a: float, b: float) -> tuple[float, bool]:
    m = (Fraction(a) + Fraction(b)) / 2
    f = float(m)
    if Fraction(f) > m:
        f = float(np.nextafter(f, -np.inf))
    return f, Fraction(f) == m


@lru_cache(maxsize=64)
def book(spec: CodebookSpec) -> Book:
    """The arrays of a :class:`tcast.CodebookSpec` (memoized; its entries are float32 values)."""
    tables = [tuple(float(v) for v in t) for t in spec.tables]
    values = np.array(tables, np.float32)
    half = values.shape[1] // 2
    symmetric = bool(spec.symmetric)
    if symmetric:
        keys = np.array([[abs(v) for v in t[:half]] for t in tables], np.float64)
    else:
        keys = np.array(tables, np.float64)
    pairs = [[_mid_floor(k[i], k[i + 1]) for i in range(len(k) - 1)] for k in keys.tolist()]
    mids = np.array([[p[0] for p in row] for row in pairs], np.float64).reshape(len(keys), -1)
    exact = np.array([[p[1] for p in row] for row in pairs], bool).reshape(len(keys), -1)
    mag = np.abs(keys)
    hi_larger = np.sign(mag[:, 1:] - mag[:, :-1]).astype(np.int8)
    # +0 rounds exactly onto a zero entry when every mapping has one (symmetric: v_0)
    zero_safe = symmetric or all(bool((k == 0).any()) for k in keys)
    for a in (values, keys, mids, exact, hi_larger):
        a.setflags(write=False)
    return Book(symmetric, half, values, keys, mids, exact, hi_larger, bool(zero_safe))


@dataclass(frozen=True)
class _Table:
    """One mapping's arrays."""

    symmetric: bool
    half: int
    keys: np.ndarray
    mids: np.ndarray
    exact: np.ndarray
    hi_larger: np.ndarray


def _table(b: Book, j: int) -> _Table:
    return _Table(b.symmetric, b.half, b.keys[j], b.mids[j], b.exact[j], b.hi_larger[j])


def _round(t: np.ndarray, tab: _Table, mode: RoundMode) -> np.ndarray:
    """Codes (int64) of float32 scaled inputs ``t`` (no NaN) rounded to one mapping."""
    last = tab.keys.size - 1
    if tab.symmetric:
        x = np.abs(t).astype(np.float64)
    else:
        x = t.astype(np.float64)
    if mode is RoundMode.TRUNC:
        lo = np.searchsorted(tab.keys, x, side="right") - 1
        if tab.symmetric:
            k = lo
        else:
            hi = np.searchsorted(tab.keys, x, side="left")
            k = np.where(x >= 0, lo, hi)
        k = np.clip(k, 0, last)
    else:
        k = np.searchsorted(tab.mids, x, side="left")  # midpoints strictly below x
        if last:
            at = np.minimum(k, last - 1)
            tie = (k < last) & tab.exact[at] & (tab.mids[at] == x)
            if tie.any():
                if mode is RoundMode.EVEN:
                    up = k % 2 == 1
                elif tab.symmetric:
                    up = np.full(k.shape, mode is RoundMode.AWAY)
                else:
                    larger = tab.hi_larger[at]
                    want = 1 if mode is RoundMode.AWAY else -1
                    up = np.where(larger == 0, k % 2 == 1, larger == want)
                k = np.where(tie & up, k + 1, k)
    if tab.symmetric:
        k = k + np.where(np.signbit(t), tab.half, 0)
    return k


def round_to_table(t: np.ndarray, b: Book, j: int, mode: RoundMode) -> np.ndarray:
    """Codes (int64) of float32 scaled inputs ``t`` rounded to mapping ``j`` of ``b``.

    ``t`` holds no NaN; +-Inf (a product ``fl32(x * r)`` that overflowed) saturates.

    Symmetric tables: ``|t|`` to the nearest magnitude (ties: even k; away: the larger;
    zero: the smaller; trunc: the largest ``v_k <= |t|``), saturating at ``v_P``, with the
    sign bit of ``t``. Ascending tables: the nearest entry (ties: even index; away/zero: the
    larger/smaller magnitude, the even index when equal; trunc: toward zero), saturating at
    both ends.
    """
    return _round(t, _table(b, j), mode)


def unit_errors(terms: np.ndarray) -> np.ndarray:
    """Sequential float32 sums over the last axis: (R, U, L) -> (R, U), from +0 in order."""
    if terms.shape[-1] <= _LOOP:
        acc = np.zeros(terms.shape[:-1], np.float32)
        for p in range(terms.shape[-1]):
            np.add(acc, terms[..., p], out=acc)
        return acc
    # ufunc.accumulate is sequential (each partial sum from the previous one), unlike
    # reduce, which sums pairwise; every term is >= +0, so the first partial is +0 + term
    return np.add.accumulate(terms, axis=-1, dtype=np.float32)[..., -1]


def choose_mapping(
    tu: np.ndarray, b: Book, mode: RoundMode, real: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mapping of every unit and the codes and table values of its elements.

    Each mapping ``j`` in index order rounds every element and scores the unit's error; a
    unit takes the first mapping whose error is strictly below every earlier one.

    Args:
        tu: float32 scaled inputs of finite blocks, (R, U, L) in each unit's C order (+-Inf
            where ``fl32(x * r)`` overflowed: its error is +Inf in every mapping).
        b: the codebook's arrays.
        mode: even, away, zero or trunc.
        real: where ``tu`` holds real elements (padding adds no error); None when all do
            or padding cannot add error.

    Returns:
        ``(codes, q, meta)``: codes (int64) and float32 table values, (R, U, L); the mapping
        index of each unit, uint8 (R, U).
    """
    best_codes = round_to_table(tu, b, 0, mode)
    best_q = b.values[0][best_codes]
    meta = np.zeros(tu.shape[:-1], np.uint8)
    if b.mappings == 1:
        return best_codes, best_q, meta
    best_err = unit_errors(_terms(best_q, tu, real))
    for j in range(1, b.mappings):
        codes = round_to_table(tu, b, j, mode)
        q = b.values[j][codes]
        err = unit_errors(_terms(q, tu, real))
        better = err < best_err
        if not better.any():
            continue
        meta[better] = j
        best_err = np.where(better, err, best_err)
        pick = better[..., None]
        best_codes = np.where(pick, codes, best_codes)
        best_q = np.where(pick, q, best_q)
    return best_codes, best_q, meta


def _terms(q: np.ndarray, t: np.ndarray, real: np.ndarray | None) -> np.ndarray:
    d = np.subtract(q, t, dtype=np.float32)
    sq = np.multiply(d, d, out=d)
    if real is not None:
        sq = np.where(real, sq, np.float32(0))
    return sq
