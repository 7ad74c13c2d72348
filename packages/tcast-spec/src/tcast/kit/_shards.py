"""Where the elements of one shard sit among the blocks of the whole array (SEMANTICS.md §9.1).

A sharded array is split along some dimensions into parts, each held by one process. The
cast of the whole array is what every shard must reproduce, so each shard needs, for the
blocks it touches, the statistics (amax, range) of the *whole* block. These rules say,
from the block layout of the whole array and the split alone (integers, no arrays):

* :func:`cut_blocks`: which blocks along a split dimension hold elements of two or more
  parts (their statistics must be reduced across the parts);
* :func:`groups_cut`: whether a sparsity group is cut (its ranking needs the other part's
  elements: not a reduction of statistics);
* :func:`shard_blocks`: the shard's *window*, its elements preceded by enough padding that
  the window starts on a block boundary of the whole array, so that a cast of the window
  with its own block layout has the whole array's blocks, and where the window's blocks
  sit in the whole array's block grid (the scale array's coordinates);
* :func:`part_grid_starts`: where each part's blocks start in the block grid, when no
  block is cut (the parts then split the scale array too).

Padding is zeros (element codes 0, keep-mask positions chosen by :func:`pad_keeps`), which
never change an amax, a range holding 0, or a sparsity decision about real elements
(tcast_torch._tiles pads partial tiles the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..layout import BlockLayout

__all__ = [
    "ShardBlocks",
    "cut_blocks",
    "groups_cut",
    "pad_keeps",
    "part_grid_starts",
    "shard_blocks",
]


def _tile(layout: BlockLayout, dim: int) -> int | None:
    """The tile length along ``dim``, or None when ``dim`` is not tiled."""
    if dim in layout.dims:
        return layout.sizes[layout.dims.index(dim)]
    return None


def _one_block(layout: BlockLayout, dim: int) -> bool:
    """Whether the whole array has one block along ``dim`` (tensor scale, channel, long tile)."""
    if not layout.dims:
        return True
    tile = _tile(layout, dim)
    return tile is not None and layout.shape[dim] <= tile


def _inner_bounds(layout: BlockLayout, dim: int, starts: Sequence[int]) -> list[int]:
    """The boundaries between non-empty parts along ``dim`` (strictly inside the array)."""
    size = layout.shape[dim]
    return sorted({s for s in starts if 0 < s < size})


def cut_blocks(layout: BlockLayout, dim: int, starts: Sequence[int]) -> tuple[int, ...]:
    """Block indices along ``dim`` (scale-array coordinates) that two or more parts share.

    Args:
        layout: the block layout of the whole array.
        dim: the split dimension (non-negative).
        starts: the first index of each part along ``dim`` (empty parts repeat a start).

    Returns:
        The indices, ascending; ``(0,)`` for the single block of a tensor scale or a channel
        split in two or more non-empty parts; ``()`` for an untiled dimension of a tiled
        layout (every index is its own block).
    """
    bounds = _inner_bounds(layout, dim, starts)
    if not layout.dims:
        return (0,) if bounds else ()
    tile = _tile(layout, dim)
    if tile is None:
        return ()
    return tuple(sorted({s // tile for s in bounds if s % tile}))


def groups_cut(layout: BlockLayout, dim: int, starts: Sequence[int]) -> bool:
    """Whether a part boundary along ``dim`` falls inside a sparsity group (§6)."""
    if not layout.sparse_m or layout.dims[layout.sparse] != dim:
        return False
    tile = layout.sizes[layout.sparse]
    return any(s % tile % layout.sparse_m for s in _inner_bounds(layout, dim, starts))


def part_grid_starts(layout: BlockLayout, dim: int, starts: Sequence[int]) -> tuple[int, ...]:
    """Where each part's blocks start along ``dim`` in the scale array (no block cut).

    Part ``k`` holds scale indices ``[g[k], g[k + 1])`` (the last one up to the scale
    array's size along ``dim``). Only meaningful where :func:`cut_blocks` is empty.
    """
    tile = _tile(layout, dim) if layout.dims else None
    if tile is None:
        return tuple(starts) if layout.dims else tuple(0 for _ in starts)
    return tuple(-(-s // tile) for s in starts)


@dataclass(frozen=True)
class ShardBlocks:
    """One shard's window: its elements padded in front to a block boundary.

    Attributes:
        pads: padding elements before the shard along each dimension.
        window: the window's shape (``pads + lengths``); its own block layout (the same
            datatype and ``transpose_scale``) has the whole array's blocks.
        grid_start: the window's first block in the whole array's scale array, per
            dimension (all 0 for a tensor scale, whose scale array has shape ``()``).
    """

    pads: tuple[int, ...]
    window: tuple[int, ...]
    grid_start: tuple[int, ...]


def shard_blocks(
    layout: BlockLayout, offsets: Sequence[int], lengths: Sequence[int]
) -> ShardBlocks:
    """The window of the shard at ``offsets`` with shape ``lengths`` (see :class:`ShardBlocks`).

    Along a tiled dimension with several blocks the shard is padded in front by
    ``offset mod tile`` elements (less than a tile); along a dimension with one block
    (tensor scale, channel, a tile longer than the dimension) the window's own single
    block stands for the whole one, and nothing is padded.
    """
    pads, window, grid = [], [], []
    for d, (off, length) in enumerate(zip(offsets, lengths, strict=True)):
        tile = _tile(layout, d)
        pad, start = 0, 0
        if layout.dims and tile is None:
            start = off  # an untiled dimension: every index its own block
        elif layout.dims and not _one_block(layout, d):
            if length:
                pad, start = off % tile, off // tile
            else:
                start = -(-off // tile)  # an empty shard touches no block
        pads.append(pad)
        window.append(pad + length)
        grid.append(start)
    return ShardBlocks(tuple(pads), tuple(window), tuple(grid))


def pad_keeps(layout: BlockLayout, index: int) -> bool:
    """Whether a padding position of a window keeps its element in a keep-mask (§6).

    A window's padding fills whole sparsity groups when no group is cut
    (:func:`groups_cut`), and a cast keeps the first ``N`` positions of an all-zero group,
    so a keep-mask padded by this rule keeps as many elements as the cast of the window.
    ``index`` is the position in the window along the sparse segment's dimension.
    """
    return index % layout.sizes[layout.sparse] % layout.sparse_m < layout.sparse_n
