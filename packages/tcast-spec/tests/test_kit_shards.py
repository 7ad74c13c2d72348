"""The shard rules of the engine kit (tcast.kit._shards) against tcast.exact.block_indices.

For arrays split into parts along one dimension (even, uneven, with empty parts): the blocks
that two parts share (``cut_blocks``) are exactly those whose elements ``block_indices``
puts in two parts; every block of a part's window (``shard_blocks``, the window's own block
layout) holds exactly the part's elements of the whole array's block at
``grid_start + position``; the scale starts of unshared splits (``part_grid_starts``) are
the first block of each part; ``groups_cut`` on hand-checked splits of sparse tiles.
"""

from __future__ import annotations

import itertools
import math

import pytest

import tcast
from tcast import block_layout, exact
from tcast.kit import cut_blocks, groups_cut, pad_keeps, part_grid_starts, shard_blocks

DTYPES = [
    "mxfp8",  # t32 on the last dimension
    "mxfp4",
    "nvfp4",  # t16, two-level
    "int8_float32_t0",  # channel (last)
    "int8_float32_t0d0",  # channel (first)
    "e4m3fn_float32",  # tensor scale
    "mxfp8_2d",  # 32 x 32
    "e2m1f_e4m3fn_float32_t16_t16",
    "e4m3fn_e8m0_t8d0",
    "e4m3fn_e8m0_t32n2m4",
]
SHAPES = [(6, 40), (10, 72), (3, 5, 33)]


def _coords(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for n in reversed(shape):
        out.append(flat % n)
        flat //= n
    return tuple(reversed(out))


def _splits(size: int) -> list[tuple[int, ...]]:
    """Part starts: DTensor's chunks over 2, 3 and 4 parts, and a few uneven ones."""
    out = []
    for parts in (2, 3, 4):
        chunk = -(-size // parts)
        out.append(tuple(min(k * chunk, size) for k in range(parts)))
    out.append((0, 1, size))  # an empty last part
    out.append((0, size // 2 + 1))
    return out


def _part(starts: tuple[int, ...], size: int, i: int) -> int:
    """The part holding index ``i`` (the last part whose start is at or below it)."""
    return max(k for k, s in enumerate(starts) if s <= i and (s < size))


def _cases():
    for name, shape in itertools.product(DTYPES, SHAPES):
        dt = tcast.datatype(name)
        for transpose in (False, True):
            layout = block_layout(shape, dt, transpose)
            for dim in range(len(shape)):
                for starts in _splits(shape[dim]):
                    yield name, shape, transpose, layout, dim, starts


CASES = list(_cases())


@pytest.mark.parametrize("name", DTYPES)
def test_cut_blocks_are_the_blocks_holding_elements_of_two_parts(name):
    for case_name, shape, transpose, layout, dim, starts in CASES:
        if case_name != name:
            continue
        scale_shape, blocks = exact.block_indices(shape, name, transpose)
        cut = set()
        for pos, members in blocks:
            parts = {_part(starts, shape[dim], _coords(i, shape)[dim]) for i in members}
            if len(parts) > 1:
                cut.add(pos[dim] if scale_shape else 0)
        assert set(cut_blocks(layout, dim, starts)) == cut, (shape, dim, starts, transpose)


@pytest.mark.parametrize("name", DTYPES)
def test_window_blocks_are_the_whole_arrays_blocks_cut_to_the_part(name):
    for case_name, shape, transpose, layout, dim, starts in CASES:
        if case_name != name:
            continue
        _, blocks = exact.block_indices(shape, name, transpose)
        whole = {pos: set(members) for pos, members in blocks}
        bounds = [*starts[1:], shape[dim]]
        for start, stop in zip(starts, bounds, strict=True):
            offsets = tuple(start if d == dim else 0 for d in range(len(shape)))
            lengths = tuple(stop - start if d == dim else n for d, n in enumerate(shape))
            sb = shard_blocks(layout, offsets, lengths)
            assert sb.window == tuple(p + n for p, n in zip(sb.pads, lengths, strict=True))
            if math.prod(lengths) == 0:
                continue
            _, wblocks = exact.block_indices(sb.window, name, transpose)
            seen = 0
            for pos, members in wblocks:
                real = set()
                for i in members:
                    c = _coords(i, sb.window)
                    if all(x >= p for x, p in zip(c, sb.pads, strict=True)):
                        g = [x - p + o for x, p, o in zip(c, sb.pads, offsets, strict=True)]
                        real.add(sum(x * math.prod(shape[k + 1 :]) for k, x in enumerate(g)))
                gpos = tuple(g + q for g, q in zip(sb.grid_start, pos, strict=True)) if pos else ()
                mine = {i for i in whole[gpos] if start <= _coords(i, shape)[dim] < stop}
                assert real == mine, (shape, dim, starts, pos, gpos)
                seen += len(real)
            assert seen == math.prod(lengths)


def test_part_grid_starts_are_each_parts_first_block_where_none_is_cut():
    checked = 0
    for name, shape, _, layout, dim, starts in CASES:
        if cut_blocks(layout, dim, starts) or not layout.dims:
            continue
        grid = part_grid_starts(layout, dim, starts)
        bounds = [*starts[1:], shape[dim]]
        for k, (start, stop) in enumerate(zip(starts, bounds, strict=True)):
            if stop > start:
                offsets = tuple(start if d == dim else 0 for d in range(len(shape)))
                lengths = tuple(stop - start if d == dim else n for d, n in enumerate(shape))
                assert grid[k] == shard_blocks(layout, offsets, lengths).grid_start[dim], name
                checked += 1
    assert checked > 100


def test_sparsity_groups_are_cut_by_boundaries_off_the_group_grid():
    # t32n2m4 along the last dimension of 72: groups of 4 from each tile's start (0, 32, 64)
    layout = block_layout((10, 72), tcast.datatype("e4m3fn_e8m0_t32n2m4"))
    assert groups_cut(layout, 1, (0, 18))  # 18 = 4 * 4 + 2
    assert not groups_cut(layout, 1, (0, 36))  # 36 = 32 + 4: a tile cut, no group
    assert not groups_cut(layout, 0, (0, 5))  # the groups run along dimension 1
    assert not groups_cut(block_layout((10, 72), tcast.mxfp8), 1, (0, 18))  # dense


def test_padding_keeps_the_first_n_of_each_group():
    layout = block_layout((4, 64), tcast.datatype("e4m3fn_e8m0_t32n2m4"))
    assert [pad_keeps(layout, i) for i in range(8)] == [True, True, False, False] * 2
