"""Tile patterns of datatypes with metadata: subtile exponent offsets and codebook mappings.

Each pattern places the block's amax at ``M * 2**k`` (so the block scale is ``2**k`` under the
``floor`` scale mode, and the scaled inputs are the values below divided by ``2**k``) and
builds every subtile to exercise one rule of SEMANTICS.md 5.8 (offsets) or 5.9 (codebooks).
Values are built in float64 (exact) and rounded to the input dtype, as every tile is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tcast import DataType

from ..conformance._meta_blocks import tie_pair
from ._cases import (
    _from_bits,
    _grid_fill,
    _neighbours,
    _specials,
    codebook_magnitudes,
    element_max,
    tile_pool,
    to_input,
)
from ._geometry import Geometry
from ._random import Stream

__all__ = ["CODEBOOK_PATTERNS", "OFFSET_PATTERNS", "meta_patterns", "meta_tile_maker"]

#: Patterns of datatypes with subtile exponent offsets (MSFP: mx9, mx6, mx4).
OFFSET_PATTERNS = {
    "offset_binades": "amax = M*2^k; every other subtile's values lie d binades lower, d drawn "
    "from 0..2^B (one beyond the largest offset), grid values and midpoints at that scale "
    "(the ties of the finer steps an offset gives)",
    "offset_roundup": "amax = M*2^k; in every other subtile, with d drawn from 1..2^B - 1, one "
    "element rounds up to the binade edge 2^(floor_log2(M)+k+1-d): the largest input value "
    "below it, or (M + half the top gap)*2^(k-d), the tie into it (it saturates); the others "
    "grid values at 2^(k-d)",
    "offset_zero_subtiles": "amax = M*2^k; every other subtile all +-0, grid values at 2^k, "
    "or values 2^-12 smaller, chosen per subtile (an all-zero subtile takes the largest "
    "offset)",
}
#: Patterns of codebook datatypes.
CODEBOOK_PATTERNS = {
    "codebook_mapping_ties": "amax = M*2^k; in each other subtile either two values u, w "
    "whose squared errors add up to the same in two mappings (u exact in one mapping and w in "
    "the other; or, where no such pair exists, u equally far from both and w = 0: the first "
    "such values of the lowest two mappings) and the rest values exact in every mapping, or "
    "only values exact in every mapping (every error 0): the lowest index wins",
    "codebook_entry_ties": "amax = M*2^k; each other subtile takes one mapping (drawn) and "
    "holds its entries and the midpoints between them (ties between entries) at 2^k, "
    "random signs",
    "codebook_signs": "amax = M*2^k; the other elements +0, -0, -v1/2 (the tie between 0 "
    "and a mapping's smallest entry v1: to the even k = 0, the -0 code), -v1/4 and -v1*3/4, "
    "at 2^k",
}


def meta_patterns(dt: DataType) -> dict[str, str]:
    """The patterns ``dt``'s sets add to the tile patterns (empty: no metadata)."""
    if dt.sspec is None:
        return {}
    if dt.nspec.is_codebook:
        return dict(CODEBOOK_PATTERNS)
    if dt.sspec.offset_bits:
        return dict(OFFSET_PATTERNS)
    return {}


def _subtile_ids(geo: Geometry) -> np.ndarray:
    """The subtile index (C order of the subtile grid) of every element of a line."""
    if geo.sub_shape is None:
        return np.zeros(geo.size, np.int64)
    coords = np.indices(geo.tile_shape).reshape(len(geo.tile_shape), -1)
    per = tuple(c // s for c, s in zip(coords, geo.sub_shape, strict=True))
    return np.ravel_multi_index(per, geo.meta_grid).astype(np.int64)


def meta_tile_maker(
    dt: DataType, geo: Geometry, idt: str
) -> Callable[[str, int, Stream], np.ndarray]:
    """A function that makes one tile of a metadata pattern at scale position ``k``."""
    n = dt.nspec
    grid, pool = tile_pool(n, dt.sspec.scale.is_exponent)
    m = element_max(dt)
    gap = grid[-1] - grid[-2] if grid.size > 1 else grid[-1]
    elog = int(np.floor(np.log2(m)))
    sid = _subtile_ids(geo)
    nsub = int(sid.max()) + 1
    size = geo.size
    biggest = float(_from_bits(_specials(idt)[6:7], idt)[0])
    top_offset = (1 << dt.sspec.offset_bits) - 1 if dt.sspec.offset_bits else 0
    mags = codebook_magnitudes(n) if n.is_codebook else []
    common = (
        np.array(sorted(set.intersection(*(set(a.tolist()) for a in mags))), np.float64)
        if mags
        else np.zeros(1)
    )

    def amax(x64: np.ndarray, k: int, rng: Stream) -> np.ndarray:
        at = int(rng.below(size, 1)[0])
        top = min(m * 2.0**k, biggest)
        x64[at] = -top if rng.signs(1)[0] else top
        return to_input(x64, idt)

    def signed(v: np.ndarray, rng: Stream) -> np.ndarray:
        return np.where(rng.signs(v.size), -v, v)

    def binades(k: int, rng: Stream) -> np.ndarray:
        x = _grid_fill(k, size, pool, idt, rng, 1).astype(np.float64)
        drop = rng.below(top_offset + 2, nsub).astype(np.int64)
        return amax(x * 2.0 ** -drop[sid], k, rng)

    def roundup(k: int, rng: Stream) -> np.ndarray:
        drop = (1 + rng.below(max(top_offset, 1), nsub)).astype(np.int64)
        x = signed(pool[rng.below(pool.size, size)] * 2.0 ** (k - drop[sid]), rng)
        tie = rng.signs(nsub)
        for j in range(nsub):
            members = np.flatnonzero(sid == j)
            at = int(members[int(rng.below(members.size, 1)[0])])
            d = int(drop[j])
            if tie[j]:
                v = (m + gap / 2) * 2.0 ** (k - d)
            else:
                edge = to_input(np.array([2.0 ** (elog + k + 1 - d)]), idt)
                below = _neighbours(edge, idt, (-1,))
                v = float(below[0]) if below.size else biggest
            x[at] = -v if x[at] < 0 else v
        return amax(x, k, rng)

    def zero_subtiles(k: int, rng: Stream) -> np.ndarray:
        x = _grid_fill(k, size, pool, idt, rng, 1).astype(np.float64)
        kind = rng.below(3, nsub).astype(np.int64)[sid]
        x = np.where(kind == 0, np.where(x < 0, -0.0, 0.0), x)
        x = np.where(kind == 2, x * 2.0**-12, x)
        return amax(x, k, rng)

    def mapping_ties(k: int, rng: Stream) -> np.ndarray:
        x = common[rng.below(common.size, size)] * 2.0**k
        pair = tie_pair(n)  # exact in float64: entries and midpoints of short formats
        use = rng.signs(nsub)
        if pair is not None:
            for j in range(nsub):
                members = np.flatnonzero(sid == j)
                if use[j] and members.size >= 2:
                    first = int(rng.below(members.size, 1)[0])
                    x[members[first]] = float(pair[0]) * 2.0**k
                    x[members[(first + 1) % members.size]] = float(pair[1]) * 2.0**k
        return amax(signed(x, rng), k, rng)

    def entry_ties(k: int, rng: Stream) -> np.ndarray:
        which = rng.below(len(mags), nsub).astype(np.int64)
        x = np.zeros(size)
        for j in range(nsub):
            a = mags[int(which[j])]
            choice = np.concatenate([a[1:], (a[1:] + a[:-1]) / 2])
            members = np.flatnonzero(sid == j)
            x[members] = choice[rng.below(choice.size, members.size)]
        return amax(signed(x * 2.0**k, rng), k, rng)

    def signs(k: int, rng: Stream) -> np.ndarray:
        v1 = np.array([a[1] for a in mags])
        choice = np.concatenate([[0.0, -0.0], -v1 / 2, -v1 / 4, -3 * v1 / 4])
        x = choice[rng.below(choice.size, size)] * 2.0**k
        return amax(x, k, rng)

    makers = {
        "offset_binades": binades,
        "offset_roundup": roundup,
        "offset_zero_subtiles": zero_subtiles,
        "codebook_mapping_ties": mapping_ties,
        "codebook_entry_ties": entry_ties,
        "codebook_signs": signs,
    }
    return lambda pat, k, rng: makers[pat](k, rng)
