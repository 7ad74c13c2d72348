"""Subtiles of blocks as rows of a (rows, units, unit length) view (SEMANTICS.md §5.8, §5.9).

A block row (``_tiles``) holds one tile's elements, row-major over its segments; a subtile
("unit") is a box of ``sub`` elements along each segment, and a block without subtiles is one
unit. :class:`Units` regroups whole block rows (or, for 1-D subtiles, pieces of rows cut at
subtile boundaries) so that each unit is a row of the last axis, its elements in the array's
C order (the order a codebook's error sum visits them), and back. A unit that overhangs its
block (a channel whose length is not a multiple of the subtile) is padded with zeros.

The metadata of a cast (one code per unit) lies over the array like a scale array whose tiles
are the units: :meth:`Units.meta_tiling` gives the :class:`~tcast_ref._tiles.Tiling` that
moves it between the per-block layout ``(*rest, *counts, units)`` and ``meta_shape``.
"""

from __future__ import annotations

import math

import numpy as np

from ._tiles import Tiling

__all__ = ["Units"]


class Units:
    """The unit geometry of one block layout.

    Attributes:
        sizes: the block's extent along each segment (the tile lengths).
        subs: the unit's extent along each segment.
        counts: units along each segment (``ceil(size / sub)``).
        count: units per block.
        length: elements per unit (padding included).
        swap: 2-D units whose first segment lies on the later array dimension: their
            elements are visited second segment outer (the array's C order).
    """

    def __init__(self, til: Tiling, subs: tuple[int, ...]) -> None:
        self.til = til
        self.sizes = tuple(til.sizes) if til.dims else (til.block_len,)
        self.subs = tuple(subs) if til.dims else self.sizes
        self.counts = tuple(-(-t // s) for t, s in zip(self.sizes, self.subs, strict=True))
        self.count = math.prod(self.counts)
        self.length = math.prod(self.subs)
        self.swap = len(til.dims) == 2 and til.dims[0] > til.dims[1]

    @property
    def one_d(self) -> bool:
        """Units are runs of one block row (a 1-D tile, or a tensor scale)."""
        return len(self.sizes) == 1

    @property
    def group(self) -> int:
        """Column pieces of a block row must hold whole units: their length divides this."""
        return self.subs[0] if self.one_d else self.sizes[0] * self.sizes[1]

    def unit_slice(self, cs: slice) -> slice:
        """The units of a piece's columns ``cs`` (whole units of a row; all of a block)."""
        if not self.one_d:
            return slice(0, self.count)
        s = self.subs[0]
        return slice(cs.start // s, -(-cs.stop // s))

    # ---------------------------------------------------------------- element views
    def to_units(self, rows: np.ndarray, pad: object = 0) -> np.ndarray:
        """(R, C) block rows (or a piece of 1-D rows cut on units) -> (R, U, L), C order."""
        r, c = rows.shape
        if self.one_d:
            s = self.subs[0]
            n = -(-c // s)
            if n * s != c:
                full = np.full((r, n * s), pad, rows.dtype)
                full[:, :c] = rows
                rows = full
            return rows.reshape(r, n, s)
        (t1, t2), (s1, s2), (n1, n2) = self.sizes, self.subs, self.counts
        b = rows.reshape(r, t1, t2)
        if (n1 * s1, n2 * s2) != (t1, t2):
            full = np.full((r, n1 * s1, n2 * s2), pad, rows.dtype)
            full[:, :t1, :t2] = b
            b = full
        u = b.reshape(r, n1, s1, n2, s2)
        u = u.transpose(0, 1, 3, 4, 2) if self.swap else u.transpose(0, 1, 3, 2, 4)
        return u.reshape(r, n1 * n2, s1 * s2)

    def from_units(self, u: np.ndarray, cols: int) -> np.ndarray:
        """Inverse of :meth:`to_units`: (R, U, L) -> (R, cols), the padding dropped."""
        r = u.shape[0]
        if self.one_d:
            return u.reshape(r, -1)[:, :cols]
        (t1, t2), (s1, s2), (n1, n2) = self.sizes, self.subs, self.counts
        if self.swap:
            b = u.reshape(r, n1, n2, s2, s1).transpose(0, 1, 4, 2, 3)
        else:
            b = u.reshape(r, n1, n2, s1, s2).transpose(0, 1, 3, 2, 4)
        b = b.reshape(r, n1 * s1, n2 * s2)[:, :t1, :t2]
        return b.reshape(r, t1 * t2)

    def per_element(self, meta: np.ndarray, cols: int) -> np.ndarray:
        """(R, U) unit values -> (R, cols): each element gets its unit's value."""
        u = np.broadcast_to(meta[:, :, None], (*meta.shape, self.length))
        return self.from_units(u, cols)

    # ---------------------------------------------------------------- the meta array
    def meta_tiling(self, meta_shape: tuple[int, ...]) -> Tiling:
        """The Tiling laying per-block unit values ``(*rest, *counts, U)`` over ``meta_shape``."""
        til = self.til
        return Tiling(tuple(meta_shape), til.dims, self.counts if til.dims else (), (), None, 0, 0)

    def meta_from_blocks(self, meta: np.ndarray, meta_shape: tuple[int, ...]) -> np.ndarray:
        """(rows, U) unit values -> the metadata array of ``meta_shape`` (C-contiguous)."""
        til = self.til
        if not til.dims:
            return meta.reshape(-1)[:1].reshape(meta_shape).copy()  # (ascontiguousarray: 1-d)
        mt = self.meta_tiling(meta_shape)
        blocks = meta.reshape(*til.scale_counts_shape, self.count)
        return np.ascontiguousarray(mt.from_blocks(blocks))

    def meta_to_blocks(self, meta: np.ndarray, meta_shape: tuple[int, ...]) -> np.ndarray:
        """Inverse of :meth:`meta_from_blocks`: -> (rows, U) (units past the array: 0)."""
        til = self.til
        if not til.dims:
            return np.asarray(meta).reshape(1, 1)
        return self.meta_tiling(meta_shape).to_blocks(np.asarray(meta)).reshape(-1, self.count)
