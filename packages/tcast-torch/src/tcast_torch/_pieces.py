"""Eager element stages in pieces of rows, so that their temporaries stay small.

An eager cast runs one torch operation at a time, each with a full-size result: the bit-level
encode keeps a dozen int32 tensors of the input's size alive at once (15x the input's bytes
for an FP4 compress cast). Run over pieces of about :data:`PIECE` elements, every temporary
is a piece's size and only the stage's result is full-size; pieces under 32 MiB are also
served from memory glibc keeps, where a full-size allocation maps (and faults in) fresh
pages each time. Under torch.compile the stage is one piece: the compiler fuses it, and a
loop would only unroll into the graph. Only CPU tensors are cut: on a GPU each piece's
operations are kernel launches of their own, and the default compiles the common casts.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._tiles import Tiling

__all__ = ["PIECE", "BlockRows", "by_blocks", "by_pieces", "cuts", "piece_elements"]

#: Elements per piece at most (1 MiB per float32 or int32 temporary).
PIECE = 1 << 18


def piece_elements(total: int) -> int:
    """Elements per piece of a stage over ``total`` elements.

    A 32nd of them: an eager element stage keeps about 27 temporaries of a piece's size
    (int32 bit operations, the Philox words of a seeded cast; measured as peak memory
    growth), so a piece of a 32nd keeps them under the input's size. At most ``PIECE``:
    from there the temporaries are a fixed 27 MiB. At least ``PIECE / 8``: every operation
    of a piece has a fixed cost (dispatch, a parallel region whose threads wait for each
    other); inputs under 2**20 elements take fewer than 32 pieces. On two idle cores these
    pieces are faster than eighths of the input (up to 2**20 elements) and than pieces of
    2**14 elements (one thread each); with several processes per core, a parallel region
    waits for whichever thread is off its core, and pieces of 2**14 are the fastest.
    """
    return min(PIECE, max(PIECE >> 3, total >> 5))


def cuts(like: torch.Tensor) -> bool:
    """Whether stages over ``like``'s rows may run in pieces: eager casts of CPU tensors."""
    return like.device.type == "cpu" and not torch.compiler.is_compiling()


class BlockRows:
    """The block rows of a tensor, ``til.to_blocks(a).reshape(-1, til.block_len)``, by slices.

    Whole where they are a view of the input (one tile along the last dimension that divides
    it), and wherever the cast is not cut into pieces (:func:`cuts`): one view or copy, sliced.
    Else (eager CPU casts of 2-D tiles, column tiles, padded tiles) each piece's rows are made
    from its box of the input (:meth:`Tiling.boxes`), so that no copy of the input's size is
    made; slices other than those of :meth:`spans` are taken from a whole copy.

    Attributes:
        til: the tiling.
        shape: (rows, block length).
        device: the input's device.
        boxed: whether pieces are made from boxes of the input.
    """

    def __init__(self, a: torch.Tensor, til: Tiling, dtype: torch.dtype | None = None) -> None:
        """Block rows of ``a`` (converted to ``dtype`` first, if given) under ``til``."""
        self.til = til
        self.shape = (math.prod(til.scale_counts_shape), til.block_len)
        self.device = a.device
        self.boxed = bool(til.dims) and not til.rows_are_runs() and cuts(a)
        self._a = a
        self._dtype = dtype
        self._whole = None if self.boxed else self._blocks(til, a)
        self._boxes: dict[tuple[int, int], tuple[slice, ...]] = {}

    def _blocks(self, til: Tiling, a: torch.Tensor) -> torch.Tensor:
        if self._dtype is not None:
            a = a.to(self._dtype)
        return til.to_blocks(a).reshape(-1, self.shape[1])

    def __getitem__(self, s: slice) -> torch.Tensor:
        """The rows ``s`` (a tensor view or a new tensor)."""
        if self._whole is None:
            box = self._boxes.get((s.start, s.stop))
            if box is not None:
                return self._blocks(self.til.within(box), self._a[box])
            self._whole = self._blocks(self.til, self._a)
        return self._whole[s]

    def spans(self, step: int) -> list[tuple[slice, tuple[slice, ...] | None]]:
        """Slices of about ``step`` rows covering all rows in order, with their boxes (or None)."""
        if not self.boxed:
            rows = self.shape[0]
            return [(slice(lo, min(lo + step, rows)), None) for lo in range(0, rows, step)]
        out = []
        for lo, hi, box in self.til.boxes(step):
            self._boxes[(lo, hi)] = box
            out.append((slice(lo, hi), box))
        return out


def _step(rows: int, length: int) -> int:
    """Rows per piece of a stage over ``rows`` rows of ``length`` elements."""
    return max(1, piece_elements(rows * length) // max(1, length))


def by_pieces(
    like: torch.Tensor | BlockRows, length: int, stage: Callable[[slice], torch.Tensor]
) -> torch.Tensor:
    """``stage(s)`` for slices ``s`` of the rows of ``like``, stacked along the first dimension.

    Args:
        like: the stage's input rows (their count and device); the pieces of block rows
            follow their boxes (:meth:`BlockRows.spans`).
        length: elements per row (sets the rows per piece).
        stage: the stage of a slice of rows; every piece has the same dtype and trailing shape.

    Returns:
        The stage of all rows: its own result where one piece covers them (under
        torch.compile, or small inputs), else a new tensor holding every piece's.
    """
    rows = like.shape[0]
    step = _step(rows, length)
    if rows <= step or not cuts(like):
        return stage(slice(None))
    if isinstance(like, BlockRows):
        spans = [s for s, _ in like.spans(step)]
    else:
        spans = [slice(lo, lo + step) for lo in range(0, rows, step)]
    out = None
    for s in spans:
        piece = stage(s)
        if out is None:
            out = piece.new_empty((rows, *piece.shape[1:]))
        out[s.start : s.start + piece.shape[0]] = piece
    return out


def by_blocks(rows: BlockRows, stage: Callable[[slice], torch.Tensor]) -> torch.Tensor:
    """An element stage over block rows, its result in the input's shape (``from_blocks``).

    ``stage(s)`` gives a result per element of the rows ``s``. Pieces made from boxes are put
    straight into their box of the result; otherwise the rows' result is viewed back into the
    input's layout (a view, which may be non-contiguous).
    """
    til, length = rows.til, rows.shape[1]
    step = _step(rows.shape[0], length)
    if not rows.boxed or rows.shape[0] <= step:
        out = by_pieces(rows, length, stage)
        return til.from_blocks(out.reshape(*til.scale_counts_shape, length))
    out = None
    for s, box in rows.spans(step):
        piece = stage(s)
        sub = til.within(box)
        if out is None:
            out = piece.new_empty(til.shape)
        out[box] = sub.from_blocks(piece.reshape(*sub.scale_counts_shape, length))
    return out
