"""Blocks of an N-d tensor as the last axis of a padded view (SEMANTICS.md §5.1, §6).

Tiled dimensions are moved last and padded with zeros to whole tiles; zeros never change
an amax, a range that already holds 0, or a sparsity decision about real elements (a padded
zero never outranks a real element: it ties at best and comes later), so padding is
invisible in the result. Everything here depends on shapes only (static under
``torch.compile``); tiles along the last dimension that need no padding are plain views.
"""

from __future__ import annotations

import dataclasses
import itertools
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

    def rows_are_runs(self) -> bool:
        """Whether block row ``r`` holds the flat (C-order) indices ``r * L .. r * L + L - 1``.

        True for one tile along the last dimension that divides it (``to_blocks`` is a view
        of a contiguous tensor): the rows ``lo .. hi - 1`` are one run of flat indices.
        """
        nd = len(self.shape)
        return (
            len(self.dims) == 1
            and self.dims[0] == nd - 1
            and self.counts[0] * self.sizes[0] == self.shape[-1]
        )

    def boxes(self, rows: int) -> list[tuple[int, int, tuple[slice, ...]]]:
        """Pieces of at most about ``rows`` block rows, each the blocks of one box of the input.

        Block rows enumerate ``(*rest, *counts)`` in C order. A piece fixes the indices before
        some level and takes a range of the index at that level (the first level whose inner
        indices make at most ``rows`` rows; a range of whole tiles where the level is a tiled
        dimension) and every index after it: its rows are ``within(box).to_blocks(a[box])``,
        padding included, where ``box`` is a basic-slicing view of the input.

        Args:
            rows: block rows per piece wanted (at least one level's inner rows are taken).

        Returns:
            ``(first row, end row, box)`` per piece, in row order; a box has a slice per
            dimension.
        """
        nd = len(self.shape)
        order = [d for d in range(nd) if d not in self.dims] + list(self.dims)
        lead = list(self.rest) + list(self.counts)
        unit = [1] * (nd - len(self.dims)) + list(self.sizes)
        inner = [math.prod(lead[j + 1 :]) for j in range(len(lead))]
        k = next((j for j in range(len(lead)) if inner[j] <= rows), len(lead) - 1)
        step = max(1, rows // inner[k])

        def span(j: int, lo: int, hi: int) -> slice:
            d = order[j]
            return slice(lo * unit[j], min(hi * unit[j], self.shape[d]))

        out = []
        for outer in itertools.product(*(range(n) for n in lead[:k])):
            box = [slice(None)] * nd
            base = 0
            for j, i in enumerate(outer):
                box[order[j]] = span(j, i, i + 1)
                base = base * lead[j] + i
            base *= lead[k]
            for lo in range(0, lead[k], step):
                hi = min(lo + step, lead[k])
                box[order[k]] = span(k, lo, hi)
                out.append(((base + lo) * inner[k], (base + hi) * inner[k], tuple(box)))
        return out

    def within(self, box: tuple[slice, ...]) -> Tiling:
        """The tiling of a box of the input that :meth:`boxes` gives (its tiles stay whole).

        The box's shape and scale shape; the other fields are the whole tiling's.
        """
        shape = tuple(len(range(*s.indices(n))) for s, n in zip(box, self.shape, strict=True))
        scale_shape = tuple(
            -(-n // self.sizes[self.dims.index(d)]) if d in self.dims else n
            for d, n in enumerate(shape)
        )
        return dataclasses.replace(self, shape=shape, scale_shape=scale_shape)

    def row_flat_index(self, lo: int, hi: int, device: torch.device) -> torch.Tensor:
        """The flat (C-order) index in ``shape`` of every element of block rows ``lo .. hi - 1``.

        Rows are those of ``to_blocks(a).reshape(-1, block_len)``. A padding element gets the
        index of the last element along its padded dimension: its value is a padded zero and
        what it is given never reaches the result.

        Returns:
            int64 tensor (hi - lo, block_len).
        """
        nd = len(self.shape)
        strides = [math.prod(self.shape[d + 1 :]) for d in range(nd)]
        if not self.dims:
            n = math.prod(self.shape)
            j = torch.arange(max(n, 1), dtype=torch.int64, device=device)
            return torch.clamp_max(j, max(n - 1, 0)).reshape(1, -1)[lo:hi]
        rest = [d for d in range(nd) if d not in self.dims]
        lead = [self.shape[d] for d in rest] + list(self.counts)
        r = torch.arange(lo, hi, dtype=torch.int64, device=device)
        coords = []
        for size in reversed(lead):  # the row's index over (*rest, *counts), C order
            coords.append(r % size)
            r = r // size
        coords.reverse()
        j = torch.arange(math.prod(self.sizes), dtype=torch.int64, device=device)
        within = [j] if len(self.sizes) == 1 else [j // self.sizes[1], j % self.sizes[1]]
        flat = torch.zeros((hi - lo, 1), dtype=torch.int64, device=device)
        for d, c in zip(rest, coords, strict=False):
            flat = flat + (c * strides[d])[:, None]
        for i, d in enumerate(self.dims):
            c = coords[len(rest) + i]
            pos = torch.clamp_max(
                c[:, None] * self.sizes[i] + within[i][None, :], self.shape[d] - 1
            )
            flat = flat + pos * strides[d]
        return flat

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
