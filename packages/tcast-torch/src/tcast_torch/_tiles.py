"""Blocks of an N-d tensor as the last axis of a padded view (SEMANTICS.md §5.1, §6).

Tiled dimensions are moved last and padded with zeros to whole tiles; zeros never change
an amax, a range that already holds 0, or a sparsity decision about real elements (a padded
zero never outranks a real element: it ties at best and comes later), so padding is
invisible in the result. Everything here depends on shapes only (static under
``torch.compile``); tiles along the last dimension that need no padding are plain views.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from tcast import BlockLayout, DataType, block_layout

__all__ = ["Tiling", "from_layout", "tiling"]


class Tiling(BlockLayout):
    """A :class:`tcast.BlockLayout` with the array operations of this engine."""

    def to_blocks(self, a: torch.Tensor) -> torch.Tensor:
        """Tensor of ``shape`` -> (*rest, *counts, block_len); padding is 0 (False for bools)."""
        if not self.dims:
            flat = a.reshape(1, -1)
            if flat.shape[1] == 0:
                flat = a.new_zeros((1, 1))
            return flat
        nd = len(self.shape)
        k = len(self.dims)
        moved = torch.movedim(a, self.dims, tuple(range(nd - k, nd)))
        extra = [
            c * t - self.shape[d]
            for d, t, c in zip(self.dims, self.sizes, self.counts, strict=True)
        ]
        if any(extra):
            pads: list[int] = []
            for e in reversed(extra):  # F.pad lists the last dimension first
                pads.extend((0, e))
            moved = F.pad(moved, pads)
        rest = moved.shape[: nd - k]
        if k == 1:
            return moved.reshape(*rest, self.counts[0], self.sizes[0])
        (c1, c2), (t1, t2) = self.counts, self.sizes
        blocks = moved.reshape(*rest, c1, t1, c2, t2)
        blocks = torch.movedim(blocks, -3, -2)  # (*rest, c1, c2, t1, t2)
        return blocks.reshape(*rest, c1, c2, t1 * t2)

    def from_blocks(self, b: torch.Tensor) -> torch.Tensor:
        """Inverse of :meth:`to_blocks`, padding dropped (may be a non-contiguous view)."""
        if not self.dims:
            n = math.prod(self.shape)
            return b.reshape(-1)[:n].reshape(self.shape)
        nd = len(self.shape)
        k = len(self.dims)
        rest = b.shape[: -1 - k]
        if k == 1:
            moved = b.reshape(*rest, self.counts[0] * self.sizes[0])
        else:
            (c1, c2), (t1, t2) = self.counts, self.sizes
            blocks = b.reshape(*rest, c1, c2, t1, t2)
            moved = torch.movedim(blocks, -2, -3).reshape(*rest, c1 * t1, c2 * t2)
        for i, d in enumerate(self.dims):
            axis = nd - k + i
            if moved.shape[axis] != self.shape[d]:
                moved = moved.narrow(axis, 0, self.shape[d])
        return torch.movedim(moved, tuple(range(nd - k, nd)), self.dims)

    def scales_from_blocks(self, s: torch.Tensor) -> torch.Tensor:
        """Per-block values (*rest, *counts) -> the scale tensor (``scale_shape``)."""
        if not self.dims:
            return s.reshape(())
        nd = len(self.shape)
        k = len(self.dims)
        return torch.movedim(s, tuple(range(nd - k, nd)), self.dims)

    def scales_to_blocks(self, s: torch.Tensor) -> torch.Tensor:
        """The scale tensor -> per-block values (*rest, *counts)."""
        if not self.dims:
            return s.reshape(1)
        nd = len(self.shape)
        k = len(self.dims)
        return torch.movedim(s, self.dims, tuple(range(nd - k, nd)))

    def groups(self, blocks: torch.Tensor) -> tuple[torch.Tensor, Callable]:
        """View blocks as sparsity groups (..., M) and a function mapping back to blocks."""
        m = self.sparse_m
        if len(self.dims) == 1:
            g = blocks.reshape(*blocks.shape[:-1], blocks.shape[-1] // m, m)
            return g, lambda v: v.reshape(blocks.shape)
        t1, t2 = self.sizes
        b4 = blocks.reshape(*blocks.shape[:-1], t1, t2)
        if self.sparse == 1:
            g = b4.reshape(*b4.shape[:-1], t2 // m, m)
            return g, lambda v: v.reshape(blocks.shape)
        tr = b4.transpose(-1, -2)  # sparse along the first segment: make it last
        g = tr.reshape(*tr.shape[:-1], t1 // m, m)

        def back(v: torch.Tensor) -> torch.Tensor:
            return v.reshape(tr.shape).transpose(-1, -2).reshape(blocks.shape)

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
    # fields spelled out: torch.compile traces this
    return Tiling(b.shape, b.dims, b.sizes, b.scale_shape, b.sparse, b.sparse_m, b.sparse_n)
