"""How the lines of a tile set map onto the array that is cast (and back).

Every line of a scaled set is one whole block of the datatype. The lines are placed in an
array whose tile dimensions hold one tile each and whose *count* dimension (the first
dimension that is not a tile dimension) enumerates the lines; every other dimension has size 1.
Tensor-scaled datatypes cast every line as its own tensor; two-level datatypes (a tensor scale
over tile scales, NVFP4) cast groups of ``lines_per_tensor`` consecutive lines as one tensor.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

from tcast import DataType

__all__ = ["CHANNEL_LENGTH", "LINES_PER_TENSOR", "TENSOR_LENGTH", "Geometry", "geometry"]

#: Elements per line for channel scales (t0: the scale spans the whole dimension).
CHANNEL_LENGTH = 32
#: Elements per line (= per tensor) for tensor scales.
TENSOR_LENGTH = 32
#: Lines cast together as one tensor under a two-level scale.
LINES_PER_TENSOR = 8


@dataclass(frozen=True)
class Geometry:
    """Where lines go in the cast array.

    Attributes:
        kind: ``unscaled``, ``tensor``, ``channel``, ``tile1d`` or ``tile2d``.
        tile_shape: the shape of one block (one line, C order for 2-D tiles).
        rank: the rank of the cast array.
        tile_dims: the array dimensions of the tile segments.
        count_dim: the array dimension enumerating lines.
        lines_per_tensor: lines per cast call (None: all lines in one call).
        sub_shape: the extent of a subtile along each tile segment (the tile's where a
            segment has none), or None when the datatype has no metadata.
    """

    kind: str
    tile_shape: tuple[int, ...]
    rank: int
    tile_dims: tuple[int, ...]
    count_dim: int
    lines_per_tensor: int | None
    sub_shape: tuple[int, ...] | None = None

    @property
    def size(self) -> int:
        """Elements per line."""
        return prod(self.tile_shape)

    @property
    def has_partial_tiles(self) -> bool:
        """Whether lines may hold partial tiles (tile sets; a channel segment is always whole)."""
        return self.kind in ("tile1d", "tile2d")

    def to_array(self, lines: np.ndarray, extent: tuple[int, ...] | None = None) -> np.ndarray:
        """(G, size) lines -> the array to cast (a C-contiguous copy).

        ``extent`` (one length per tile segment, each at most the tile's) keeps only the first
        ``extent[i]`` elements along each tile segment: the array of a partial tile.
        """
        g = lines.shape[0]
        if self.kind == "tensor":
            return np.ascontiguousarray(lines.reshape(self.tile_shape))
        tiles = lines.reshape(g, *self.tile_shape)
        if extent is not None:
            tiles = tiles[(slice(None), *(slice(0, e) for e in extent))]
        a = tiles.reshape(*tiles.shape, *([1] * (self.rank - 1 - len(self.tile_dims))))
        src = list(range(1 + len(self.tile_dims)))
        return np.ascontiguousarray(np.moveaxis(a, src, [self.count_dim, *self.tile_dims]))

    def from_array(self, a: np.ndarray, extent: tuple[int, ...] | None = None) -> np.ndarray:
        """An array of the cast's shape -> (G, size) lines.

        With ``extent``, the array is a partial tile's: absent elements are 0 (or False).
        """
        if self.kind == "tensor":
            return a.reshape(1, -1)
        dst = list(range(1 + len(self.tile_dims)))
        moved = np.moveaxis(a, [self.count_dim, *self.tile_dims], dst)
        g = moved.shape[0]
        if extent is None or tuple(extent) == self.tile_shape:
            return moved.reshape(g, -1)
        full = np.zeros((g, *self.tile_shape), moved.dtype)
        full[(slice(None), *(slice(0, e) for e in extent))] = moved.reshape(g, *extent)
        return full.reshape(g, -1)

    def live(self, extents: np.ndarray) -> np.ndarray:
        """(G, size) bool: which elements of each line are present.

        From the (G, segments) extents of the lines (the LEN column).
        """
        g = extents.shape[0]
        out = np.ones((g, *self.tile_shape), bool)
        for axis, t in enumerate(self.tile_shape):
            idx = np.arange(t).reshape(
                [1] * (axis + 1) + [t] + [1] * (len(self.tile_shape) - axis - 1)
            )
            lim = extents[:, axis].reshape([g] + [1] * len(self.tile_shape))
            out &= idx < lim
        return out.reshape(g, -1)

    @property
    def meta_grid(self) -> tuple[int, ...]:
        """Subtiles of a whole line along each tile segment (``()``: no metadata)."""
        if self.sub_shape is None:
            return ()
        return tuple(-(-t // s) for t, s in zip(self.tile_shape, self.sub_shape, strict=True))

    @property
    def meta_count(self) -> int:
        """Metadata words per line: one per subtile (0: no metadata)."""
        return prod(self.meta_grid) if self.sub_shape is not None else 0

    def meta_extent(self, extent: tuple[int, ...] | None) -> tuple[int, ...]:
        """Subtiles along each tile segment of a line of ``extent`` (None: a whole line)."""
        ext = self.tile_shape if extent is None else extent
        return tuple(-(-e // s) for e, s in zip(ext, self.sub_shape, strict=True))

    def meta_shape(self, shape: tuple[int, ...], extent: tuple[int, ...] | None) -> tuple:
        """The metadata shape of a cast array ``shape`` (lines of ``extent``), C order."""
        if self.kind == "tensor":
            return ()
        out = list(shape)
        for d, n in zip(self.tile_dims, self.meta_extent(extent), strict=True):
            out[d] = n
        return tuple(out)

    def meta_from_array(self, m: np.ndarray, extent: tuple[int, ...] | None = None) -> np.ndarray:
        """A cast's metadata (its ``meta_shape``) -> (G, meta_count) words per line.

        Subtiles beyond a partial tile's extent are absent: their words are 0.
        """
        m = np.asarray(m)
        if self.kind == "tensor":
            return m.reshape(1, -1)
        dst = list(range(1 + len(self.tile_dims)))
        moved = np.moveaxis(m, [self.count_dim, *self.tile_dims], dst)
        g = moved.shape[0]
        grid = self.meta_grid
        have = self.meta_extent(extent)
        full = np.zeros((g, *grid), m.dtype)
        full[(slice(None), *(slice(0, e) for e in have))] = moved.reshape(g, *have)
        return full.reshape(g, -1)

    def meta_live(self, extents: np.ndarray | None, lines: int) -> np.ndarray:
        """(G, meta_count) bool: which subtiles of each line hold a present element.

        From the (G, segments) extents of the lines (the LEN column; None: whole lines).
        """
        grid = self.meta_grid
        if extents is None or self.kind == "tensor":
            return np.ones((lines, self.meta_count), bool)
        out = np.ones((lines, *grid), bool)
        for axis, (n, s) in enumerate(zip(grid, self.sub_shape, strict=True)):
            idx = np.arange(n).reshape([1] * (axis + 1) + [n] + [1] * (len(grid) - axis - 1))
            lim = extents[:, axis].astype(np.int64).reshape([lines] + [1] * len(grid))
            out &= idx * s < lim
        return out.reshape(lines, -1)

    def scales_from_array(self, s: np.ndarray) -> np.ndarray:
        """A scale array of the cast (one scale per block) -> (G,) per line."""
        return np.asarray(s).reshape(-1)

    def describe(self) -> dict:
        """The geometry as it appears in ``header.json``."""
        out = {
            "kind": self.kind,
            "elements_per_line": self.size,
            "tile_shape": list(self.tile_shape),
            "array_rank": self.rank,
            "tile_dims": list(self.tile_dims),
            "count_dim": self.count_dim,
            "lines_per_tensor": self.lines_per_tensor,
            "padding": (
                "partial tiles: the LEN words of a line give its extent along each tile "
                "segment; elements beyond it are absent (IN 0, OUT 0, FLAGS absent) and the "
                "line is cast as an array of that extent (SEMANTICS.md 5.1: a partial tile; "
                "padding never takes part in amax or sparsity)"
                if self.has_partial_tiles
                else "none: every line is one whole block, so no partial tile and no padding "
                "value occurs (SEMANTICS.md 5.1: padding never takes part in amax or sparsity)"
            ),
            "order": (
                "elements of a line in C order of tile_shape, whose entries follow the tile "
                "segments in spec order (2-D: the first segment's index varies slowest, "
                "whichever array dimension it lies on: tile_dims)"
            ),
        }
        if self.sub_shape is not None:
            out["subtile_shape"] = list(self.sub_shape)
            out["meta_per_line"] = self.meta_count
            out["meta_order"] = (
                "one META word per subtile, in C order of the subtile grid "
                f"{list(self.meta_grid)} (subtile j along a segment holds its elements "
                "[j*S, (j+1)*S)); a subtile with no present element (beyond LEN) is absent: "
                "META 0, not compared"
            )
        return out


def geometry(dt: DataType) -> Geometry:
    """The geometry of a datatype's golden sets."""
    ss = dt.sspec
    if ss is None:
        return Geometry("unscaled", (1,), 1, (), 0, None)
    if ss.is_tensor:  # one block: metadata, if any, is one word per line
        sub = (TENSOR_LENGTH,) if dt.meta_bits else None
        return Geometry("tensor", (TENSOR_LENGTH,), 1, (0,), 0, 1, sub)
    per = LINES_PER_TENSOR if dt.is_multiscale else None
    wanted = [t.dim for t in ss.tiles if t.dim is not None]
    need = max([2 if len(ss.tiles) == 1 else 3] + [d + 1 if d >= 0 else -d for d in wanted])
    rank = need  # one dimension for the lines beside the tile's (a 2-D tile needs three)
    dims = ss.dims(rank)
    shape = tuple(CHANNEL_LENGTH if t.is_channel else t.size for t in ss.tiles)
    count = next(d for d in range(rank) if d not in dims)
    kind = "tile2d" if len(ss.tiles) == 2 else "channel" if ss.tiles[0].is_channel else "tile1d"
    sub = None
    if dt.meta_bits:
        sub = tuple(s or t for s, t in zip(ss.subtile_sizes, shape, strict=True))
    return Geometry(kind, shape, rank, dims, count, per, sub)
