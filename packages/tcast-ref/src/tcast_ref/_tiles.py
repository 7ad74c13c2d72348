"""Blocks of an N-d array as the last axis of a padded view (SEMANTICS.md §5.1, §6).

Tiled dimensions are moved last and padded with zeros to whole tiles; zeros
never change an amax, a range that already holds 0, or a sparsity decision
about real elements (a padded zero never outranks a real element: it ties at
best and comes later), so padding is invisible in the result.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tcast import BlockLayout, DataType, block_layout

__all__ = ["Tiling", "from_layout", "tiling"]


class Tiling(BlockLayout):
    """A :class:`tcast.BlockLayout` with the array operations of this engine."""

    def to_blocks(self, a: np.ndarray) -> np.ndarray:
        """Array of ``shape`` -> (*rest, *counts, block_len); padding is 0 (False for bools)."""
        if not self.dims:
            flat = a.reshape(1, -1)
            if flat.shape[1] == 0:
                flat = np.zeros((1, 1), a.dtype)
            return flat
        nd = len(self.shape)
        k = len(self.dims)
        moved = np.moveaxis(a, self.dims, range(nd - k, nd))
        pads = [(0, 0)] * (nd - k) + [
            (0, c * t - self.shape[d])
            for d, t, c in zip(self.dims, self.sizes, self.counts, strict=True)
        ]
        if any(p[1] for p in pads):
            moved = np.pad(moved, pads)
        rest = moved.shape[: nd - k]
        if k == 1:
            return moved.reshape(*rest, self.counts[0], self.sizes[0])
        (c1, c2), (t1, t2) = self.counts, self.sizes
        blocks = moved.reshape(*rest, c1, t1, c2, t2)
        blocks = np.moveaxis(blocks, -3, -2)  # (*rest, c1, c2, t1, t2)
        return blocks.reshape(*rest, c1, c2, t1 * t2)

    def from_blocks(self, b: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`to_blocks`, padding dropped."""
        if not self.dims:
            n = int(np.prod(self.shape, dtype=np.int64))
            return b.reshape(-1)[:n].reshape(self.shape)
        nd = len(self.shape)
        k = len(self.dims)
        rest = b.shape[: -1 - k]
        if k == 1:
            moved = b.reshape(*rest, self.counts[0] * self.sizes[0])
        else:
            (c1, c2), (t1, t2) = self.counts, self.sizes
            blocks = b.reshape(*rest, c1, c2, t1, t2)
            moved = np.moveaxis(blocks, -2, -3).reshape(*rest, c1 * t1, c2 * t2)
        crop = tuple([slice(None)] * (nd - k) + [slice(0, self.shape[d]) for d in self.dims])
        return np.moveaxis(moved[crop], range(nd - k, nd), self.dims)

    def scales_from_blocks(self, s: np.ndarray) -> np.ndarray:
        """Per-block values (*rest, *counts) -> the scale array (``scale_shape``)."""
        if not self.dims:
            return s.reshape(())
        nd = len(self.shape)
        k = len(self.dims)
        return np.moveaxis(s, range(nd - k, nd), self.dims)

    def scales_to_blocks(self, s: np.ndarray) -> np.ndarray:
        """The scale array -> per-block values (*rest, *counts)."""
        if not self.dims:
            return np.asarray(s).reshape(1)
        nd = len(self.shape)
        k = len(self.dims)
        return np.moveaxis(np.asarray(s), self.dims, range(nd - k, nd))

    def groups(self, blocks: np.ndarray) -> tuple[np.ndarray, object]:
        """View blocks as sparsity groups (..., M) and a function mapping back to blocks."""
        m = self.sparse_m
        if len(self.dims) == 1:
            g = blocks.reshape(*blocks.shape[:-1], -1, m)
            return g, lambda v: v.reshape(blocks.shape)
        t1, t2 = self.sizes
        b4 = blocks.reshape(*blocks.shape[:-1], t1, t2)
        if self.sparse == 1:
            g = b4.reshape(*b4.shape[:-1], t2 // m, m)
            return g, lambda v: v.reshape(blocks.shape)
        tr = np.swapaxes(b4, -1, -2)  # sparse along the first segment: make it last
        g = tr.reshape(*tr.shape[:-1], t1 // m, m)

        def back(v: np.ndarray) -> np.ndarray:
            return np.swapaxes(v.reshape(tr.shape), -1, -2).reshape(blocks.shape)

        return g, back


def tiling(shape: tuple[int, ...], dtype: DataType, transpose: bool = False) -> Tiling:
    """The Tiling of a scaled datatype over a shape (:func:`tcast.block_layout`).

    Raises:
        SpecError: for an unscaled datatype, a tile segment naming a dimension the array does
            not have, or two segments landing on one dimension.
    """
    return from_layout(block_layout(shape, dtype, transpose))


def from_layout(b: BlockLayout) -> Tiling:
    """The Tiling of a block layout (a request's ``layout``)."""
    return Tiling(**{f.name: getattr(b, f.name) for f in dataclasses.fields(b)})
