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

__all__ = [
    "BLOCK_COLS",
    "BLOCK_ROWS",
    "BlockLayout",
    "BlockedScales",
    "block_layout",
    "blocked_offset",
    "blocked_refusal",
    "blocked_scales",
]

#: The blocked scale layout's block (SEMANTICS.md §8.1): 128 rows by 4 scale columns.
BLOCK_ROWS = 128
BLOCK_COLS = 4


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
        sub_sizes: subtile extent along each tiled dimension (the tile length where the
            segment has no ``s<S>``).
        meta_shape: the metadata array's shape (SEMANTICS.md §8): ``ceil(size / sub)`` along
            tiled dimensions, the array's size elsewhere; ``()`` for a tensor scale (one
            value) and when the datatype has no metadata (``DataType.has_meta``).
    """

    shape: tuple[int, ...]
    dims: tuple[int, ...]
    sizes: tuple[int, ...]
    scale_shape: tuple[int, ...]
    sparse: int | None
    sparse_m: int
    sparse_n: int
    sub_sizes: tuple[int, ...] = ()
    meta_shape: tuple[int, ...] = ()

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
        whole, last = divmod(length, tile)
        # whole tiles keep alike; arithmetic, not a loop over tiles (a shape may be huge)
        per_line = whole * self._kept_in(tile) + self._kept_in(last)
        return total // length * per_line

    def _kept_in(self, real: int) -> int:
        """Elements the groups of one tile keep when ``real`` of its elements are real."""
        full, part = divmod(real, self.sparse_m)
        return full * self.sparse_n + min(self.sparse_n, part)


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
    scale_shape = _counts_shape(shape, dims, sizes)
    # a subtile moves with its segment (transposed scaling swaps the segments' dimensions)
    subs = tuple(t.subtile or size for t, size in zip(sspec.tiles, sizes, strict=True))
    meta_shape = _counts_shape(shape, dims, subs) if dtype.has_meta else ()
    return BlockLayout(
        shape, tuple(dims), tuple(sizes), scale_shape, sparse, sm, sn, subs, meta_shape
    )


def _counts_shape(
    shape: tuple[int, ...], dims: tuple[int, ...], sizes: tuple[int, ...]
) -> tuple[int, ...]:
    """``ceil(shape[d] / size)`` along the tiled dimensions, ``shape[d]`` elsewhere."""
    return tuple(
        (-(-shape[d] // sizes[dims.index(d)]) if shape[d] else 0) if d in dims else shape[d]
        for d in range(len(shape))
    )


def blocked_refusal(dtype: DataType) -> str | None:
    """Why ``dtype``'s scales cannot be stored in the blocked layout, or None when they can.

    The blocked layout (SEMANTICS.md §8.1) holds the scales of one tile segment of a fixed
    length (MX, NVFP4, any ``t<T>`` with ``T > 0``, dense or sparse, any scale format, with or
    without a tensor scale or zero points); tensor scales, channels and 2-D tiles have other
    layouts in the GEMMs that read them.
    """
    ss = dtype.sspec
    if ss is None:
        return "it is unscaled (no scales to lay out)"
    if len(ss.tiles) != 1:
        kind = "a tensor scale" if not ss.tiles else "2-D tiles"
        return f"it has {kind}; the blocked layout holds the scales of one tile segment"
    if ss.tiles[0].size == 0:
        return "its tiles are channels (t0); the blocked layout holds fixed-length tiles"
    return None


@dataclass(frozen=True)
class BlockedScales:
    """The scale matrix of a one-segment tiling and its 128 x 4 blocked layout (§8.1).

    The scale array with the tiled dimension moved last is a ``rows x cols`` matrix: ``cols``
    scales per row, one row per index of the other dimensions in C order. The blocked layout
    zero-pads it to ``padded_rows x padded_cols`` (multiples of 128 and 4) and stores each
    128 x 4 block as 512 consecutive codes, blocks in row-major order; inside a block, the
    code of row ``r = 32 * i + j`` (``j < 32``) and column ``c`` is at ``16 * j + 4 * i + c``
    (:func:`blocked_offset`). Engines get there with array operations: the padded matrix
    viewed as :attr:`view`, its axes permuted by :attr:`swizzle`; the blocked array viewed as
    :attr:`blocked_view` and permuted by :attr:`swizzle` again (it is its own inverse) gives
    the padded matrix back.

    Attributes:
        scale_shape: the plain scale array's shape (SEMANTICS.md §5.1).
        dim: the tiled dimension (non-negative).
    """

    scale_shape: tuple[int, ...]
    dim: int

    @property
    def cols(self) -> int:
        """Scales per row of the matrix: the scale count along the tiled dimension."""
        return self.scale_shape[self.dim]

    @property
    def rows(self) -> int:
        """Rows of the matrix: the product of the other dimensions of the scale array."""
        # lists, not generators: torch.compile traces this (math.prod of a generator breaks it)
        return math.prod([n for i, n in enumerate(self.scale_shape) if i != self.dim])

    @property
    def padded_rows(self) -> int:
        """``rows`` rounded up to a multiple of 128."""
        return -(-self.rows // BLOCK_ROWS) * BLOCK_ROWS

    @property
    def padded_cols(self) -> int:
        """``cols`` rounded up to a multiple of 4."""
        return -(-self.cols // BLOCK_COLS) * BLOCK_COLS

    @property
    def shape(self) -> tuple[int, int]:
        """The stored array's shape: ``(padded_rows, padded_cols)``, codes in blocked order."""
        return (self.padded_rows, self.padded_cols)

    @property
    def order(self) -> tuple[int, ...]:
        """The axis permutation moving the tiled dimension of the scale array last."""
        return (*[d for d in range(len(self.scale_shape)) if d != self.dim], self.dim)

    @property
    def moved_shape(self) -> tuple[int, ...]:
        """The scale array's shape with the tiled dimension last."""
        return tuple([self.scale_shape[d] for d in self.order])

    @property
    def inverse_order(self) -> tuple[int, ...]:
        """The permutation undoing :attr:`order`."""
        inv = [0] * len(self.order)
        for i, d in enumerate(self.order):
            inv[d] = i
        return tuple(inv)

    @property
    def view(self) -> tuple[int, int, int, int, int]:
        """The padded matrix as (row blocks, 4, 32, column blocks, 4): row ``128b + 32i + j``."""
        return (self.padded_rows // BLOCK_ROWS, 4, 32, self.padded_cols // BLOCK_COLS, BLOCK_COLS)

    @property
    def blocked_view(self) -> tuple[int, int, int, int, int]:
        """The blocked array as (row blocks, column blocks, 32, 4, 4): :attr:`view` swizzled."""
        return (self.padded_rows // BLOCK_ROWS, self.padded_cols // BLOCK_COLS, 32, 4, BLOCK_COLS)

    @property
    def swizzle(self) -> tuple[int, int, int, int, int]:
        """The permutation of :attr:`view` giving the blocked order (its own inverse)."""
        return (0, 3, 2, 1, 4)


def blocked_scales(layout: BlockLayout | None, dtype: DataType | None = None) -> BlockedScales:
    """The blocked scale matrix of a layout with one fixed-length tile segment.

    Raises:
        SpecError: for a layout that is not one tile segment (``dtype`` names the datatype in
            the message; :func:`blocked_refusal` says why for a datatype).
    """
    if layout is None or len(layout.dims) != 1 or (dtype is not None and blocked_refusal(dtype)):
        why = blocked_refusal(dtype) if dtype is not None else None
        why = why or "it is not one tile segment"
        name = dtype.name if dtype is not None else "this layout"
        raise SpecError(f"scale_layout='blocked' does not apply to {name}: {why}")
    return BlockedScales(tuple(layout.scale_shape), layout.dims[0])


def blocked_offset(row: int, col: int, cols: int) -> int:
    """Where the scale of matrix row ``row``, column ``col`` lies in the blocked layout.

    ``cols`` is the matrix's scale count per row (before padding); ``row`` and ``col`` are
    ints ``>= 0``, ``col < cols`` (a ``SpecError`` otherwise). The layout is the one
    NVIDIA documents for cuBLAS block-scaled GEMMs ("1D block scaling factors layout") and
    CUTLASS reads: 128 x 4 blocks of 512 codes in row-major block order.
    """
    for name, v in (("row", row), ("col", col), ("cols", cols)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise SpecError(f"blocked_offset: {name} must be an int >= 0, got {v!r}")
    if col >= cols:
        raise SpecError(f"blocked_offset: col {col} is past the {cols} columns of the matrix")
    col_blocks = -(-cols // BLOCK_COLS)
    block = (row // BLOCK_ROWS) * col_blocks + col // BLOCK_COLS
    return block * 512 + (row % 32) * 16 + (row // 32 % 4) * 4 + col % BLOCK_COLS
