"""Battery blocks of datatypes with metadata: subtile exponent offsets and codebook mappings.

The same rules as the golden-vector patterns of these datatypes (``tcast_ref.golden``'s
``offset_*`` and ``codebook_*`` patterns), on the battery's generator: the block's amax is
``M * 2**k`` and its elements, in groups of one subtile's length in block order, exercise one
rule each of SEMANTICS.md 5.8 (offsets one or more binades below the block, values rounding
up to a binade edge, zero subtiles) or 5.9 (ties between mappings and between entries, zeros
of both signs).
"""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction
from typing import Any

import numpy as np

from tcast import DataType

__all__ = [
    "META_PATTERNS",
    "codebook_points",
    "meta_block_values",
    "subtile_length",
    "tie_pair",
]

#: Battery patterns added after the ten of every scaled datatype, per kind of metadata.
META_PATTERNS = {
    "offset": ("offset binades", "offset round-up", "offset zero subtiles"),
    "mapping": ("mapping ties", "entry ties", "signs of zero"),
}


def subtile_length(dt: DataType) -> int:
    """Elements of one group: the subtile's extent along the last tile segment."""
    ss = dt.sspec
    sizes = ss.subtile_sizes
    last = ss.tiles[-1]
    return sizes[-1] or last.size or 32


@functools.lru_cache(maxsize=256)
def codebook_points(n: Any) -> tuple[tuple[Fraction, ...], ...]:
    """Per mapping, its distinct entry magnitudes (0 first), exact."""
    return tuple(tuple(sorted({abs(Fraction(v)) for v in (0.0, *t)})) for t in n.tables)


@functools.lru_cache(maxsize=256)
def tie_pair(n: Any) -> tuple[Fraction, Fraction] | None:
    """Two magnitudes whose squared errors tie between two mappings, exactly.

    Entries and midpoints ``u``, ``w`` with ``e_j(u)^2 + e_j(w)^2 = e_l(u)^2 + e_l(w)^2 > 0``
    for the first mappings ``j < l`` that have them (``e_m``: the distance to mapping ``m``'s
    nearest entry), preferring pairs whose errors differ element by element (``u`` exact in
    one mapping, ``w`` in the other) to one element equally far from both. A subtile holding
    ``u``, ``w`` and values exact in every mapping has ``E_j = E_l`` (dyadic values of a few
    bits: every float32 step is exact), so the lower index must win. None when no two
    mappings have such values (or there is one mapping).
    """
    mags = codebook_points(n)
    cands = sorted(
        {v for m in mags for v in m} | {(a + b) / 2 for m in mags for a, b in itertools.pairwise(m)}
    )

    def err(c: Fraction, m: tuple[Fraction, ...]) -> Fraction:
        return min(abs(c - v) for v in m) ** 2

    for j in range(len(mags)):
        for la in range(j + 1, len(mags)):
            e = [(err(c, mags[j]), err(c, mags[la])) for c in cands]
            for a, (uj, ul) in enumerate(e):
                for b in range(a + 1, len(cands)):
                    wj, wl = e[b]
                    if uj != ul and uj + wj == ul + wl:
                        return cands[a], cands[b]
            single = [c for c, (uj, ul) in zip(cands, e, strict=True) if uj == ul > 0]
            if single:
                return single[0], Fraction(0)
    return None


def _f32(v: Fraction | float) -> np.float32:
    with np.errstate(over="ignore", under="ignore"):
        return np.float32(float(v))


def meta_block_values(
    dt: DataType,
    which: int,
    size: int,
    top: Fraction,
    emax: int,
    ties: tuple[Fraction, ...],
    rng: np.random.Generator,
    idt: np.dtype,
) -> list:
    """The values (block order) of metadata pattern ``which`` for a block of ``size``.

    Args:
        dt: the datatype (offset or codebook data).
        which: index into ``META_PATTERNS`` of its kind.
        size: elements in the block.
        top: the element max M.
        emax: floor_log2(M).
        ties: midpoints of neighbouring element values (relative to a unit scale).
        rng: the entry's generator.
        idt: the entry's input dtype (a value just below an edge is its neighbour there).
    """
    k = int(rng.integers(-6, 7))
    s = max(subtile_length(dt), 1)
    groups = [list(range(i, min(i + s, size))) for i in range(0, size, s)]
    out = np.zeros(size, np.float32)
    two = Fraction(2)

    def pick(values: list, count: int, scale: Fraction) -> list:
        got = rng.integers(len(values), size=count)
        return [_f32(values[int(i)] * scale) for i in got]

    if dt.nspec.is_codebook:
        mags = codebook_points(dt.nspec)
        common = sorted(set.intersection(*(set(m) for m in mags)))
        for gi, g in enumerate(groups):
            if which == 0:  # ties between mappings (odd groups, some even ones), or every
                # value exact everywhere; the pair last, clear of the amax at element 0
                vals = pick(common, len(g), two**k)
                pair = tie_pair(dt.nspec)
                if pair is not None and len(g) >= 2 and (gi % 2 or rng.integers(2)):
                    vals[-2], vals[-1] = _f32(pair[0] * two**k), _f32(pair[1] * two**k)
            elif which == 1:  # one mapping's entries and the ties between them
                m = mags[int(rng.integers(len(mags)))]
                pool = list(m[1:]) + [(a + b) / 2 for a, b in itertools.pairwise(m)]
                vals = pick(pool, len(g), two**k)
            else:  # zeros of both signs and negatives that round to zero
                v1 = [m[1] for m in mags if len(m) > 1]
                pool = [Fraction(0)] + [-v / 2 for v in v1] + [-v / 4 for v in v1]
                vals = pick(pool, len(g), two**k)
                vals = [np.float32(-0.0) if v == 0 and rng.integers(2) else v for v in vals]
            out[g] = vals
    else:
        top_offset = (1 << dt.sspec.offset_bits) - 1
        for g in groups:
            if which == 0:  # d binades lower, d in 0..2^B (one beyond the largest offset)
                d = int(rng.integers(top_offset + 2))
                vals = pick(list(ties), len(g), two ** (k - d))
            elif which == 1:  # one value rounds up to the binade edge of offset d
                d = 1 + int(rng.integers(max(top_offset, 1)))
                vals = pick(list(ties), len(g), two ** (k - d))
                edge = two ** (emax + k + 1 - d)
                with np.errstate(over="ignore"):
                    w = np.asarray(_f32(edge)).astype(idt)
                    vals[0] = np.float32(np.nextafter(w, np.zeros((), idt)))
            else:  # all zero, at 2^k, or 2^-12 lower
                kind = int(rng.integers(3))
                vals = (
                    [np.float32(0)] * len(g)
                    if kind == 0
                    else pick(list(ties), len(g), two ** (k - 12 * (kind == 2)))
                )
            out[g] = vals
    out[0] = _f32(top * two**k)  # the block's amax: scale 2^k (floor)
    return list(out)
