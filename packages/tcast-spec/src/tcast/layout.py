"""How a scaled datatype's blocks lie over an array shape (SEMANTICS.md §5.1, §6).

Pure shape arithmetic, shared by every engine: which dimensions are tiled, the tile length
along each (a channel's is the dimension's size, padded to whole sparsity groups), the
shape of the scale array and of the per-block layout, and how many elements sparsity keeps.
Engines add the array operations (moving the tiled dimensions last, padding with zeros,
reshaping into blocks) for their own array type.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .datatype import DataType
from .errors import SpecError

__all__ = ["BlockLayout", "block_layout"]


@dataclass(frozen=True)
class BlockLayout:
    """The blocks of a scaled datatype over an array of ``shape``.

    Attributes:
        shape: the array's shape.
        dims: tiled dimensions in segment order (empty for a tensor scale).
        sizes: tile length along each tiled dimension (padded length for channels).
        scale_shape: the scale array's shape (``()`` for a tensor scale).
        sparse: index of the sparse segment in ``dims``, or None.
        sparse_m: the sparsity group length (0 when dense).
        sparse_n: kept elements per group.
    """

    shape: tuple[int, ...]
    dims: tuple[int, ...]
    sizes: tuple[int, ...]
    scale_shape: tuple[int, ...]
    sparse: int | None
    sparse_m: int
    sparse_n: int

    @property
    def rest(self) -> tuple[int, ...]:
        """Sizes of the untiled dimensions, in order."""
        return tuple(n for d, n in enumerate(self.shape) if d not in self.dims)

    @property
    def counts(self) -> tuple[int, ...]:
        """Blocks along each tiled dimension (the last one may be partial)."""
        return tuple(-(-self.shape[d] // t) for d, t in zip(self.dims, self.sizes, strict=True))

    @property
    def scale_counts_shape(self) -> tuple[int, ...]:
        """Shape of the per-block layout (*rest, *counts); ``(1,)`` for a tensor scale."""
        if not self.dims:
            return (1,)
        return (*self.rest, *self.counts)

    @property
    def padded(self) -> bool:
        """Whether some tiled dimension ends in a partial tile (padded with zeros)."""
        return any(
            c * t != self.shape[d]
            for d, t, c in zip(self.dims, self.sizes, self.counts, strict=True)
        )

    @property
    def block_len(self) -> int:
        """Elements per block (padding included)."""
        if not self.dims:
            return max(math.prod(self.shape), 1)
        return math.prod(self.sizes)

    @property
    def kept_count(self) -> int:
        """Elements the sparsity groups keep over the whole array (all of them when dense).

        Groups restart at every tile; a partial group of ``p`` real elements keeps
        ``min(N, p)`` of them (padding never outranks a real element).
        """
        total = math.prod(self.shape)
        if not self.sparse_m or total == 0:
            return total
        d = self.dims[self.sparse]
        length, tile = self.shape[d], self.sizes[self.sparse]
        m, n = self.sparse_m, self.sparse_n
        per_line = 0
        for start in range(0, length, tile):
            real = min(tile, length - start)
            full, part = divmod(real, m)
            per_line += full * n + min(n, part)
        return total // length * per_line


def block_layout(shape: tuple[int, ...], dtype: DataType, transpose: bool = False) -> BlockLayout:
    """The block layout of a scaled datatype over an array shape.

    Args:
        shape: the array's shape.
        dtype: a scaled datatype.
        transpose: swap the two segments of a 2-D tile (transposed scaling).

    Raises:
        SpecError: for an unscaled datatype, a tile segment naming a dimension the array does
            not have, or two segments landing on one dimension.
    """
    sspec = dtype.sspec
    if sspec is None:
        raise SpecError(f"{dtype.name or dtype.code} is unscaled: it has no tiles")
    shape = tuple(int(n) for n in shape)
    if not sspec.tiles:
        return BlockLayout(shape, (), (), (), None, 0, 0)
    dims = sspec.dims(len(shape), transpose)
    sizes = []
    sparse, sm, sn = None, 0, 0
    for i, (d, t) in enumerate(zip(dims, sspec.tiles, strict=True)):
        size = t.size or max(shape[d], 1)
        if t.is_sparse:
            sparse, sm, sn = i, t.sparse_m, t.sparse_n
            size = -(-size // t.sparse_m) * t.sparse_m  # a channel pads to whole groups
        sizes.append(size)
    scale_shape = tuple(
        (-(-shape[d] // sizes[dims.index(d)]) if shape[d] else 0) if d in dims else shape[d]
        for d in range(len(shape))
    )
    return BlockLayout(shape, tuple(dims), tuple(sizes), scale_shape, sparse, sm, sn)
