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

from collections.abc import Callable

import torch

__all__ = ["PIECE", "by_pieces", "cuts", "piece_elements"]

#: Elements per piece at most (4 MiB per float32 or int32 temporary).
PIECE = 1 << 20


def piece_elements(total: int) -> int:
    """Elements per piece of a stage over ``total`` elements.

    An eighth of them, so that the temporaries stay under the input's size at every size;
    at least ``PIECE / 8``: each operation of a piece is a parallel region whose threads
    wait for each other, and with another process on the cores, pieces of 2**16 elements
    made a 2**20-element cast a hundred times slower (a thread off its core stalls every
    region); at most ``PIECE``.
    """
    return min(PIECE, max(PIECE >> 3, total >> 3))


def cuts(like: torch.Tensor) -> bool:
    """Whether stages over ``like``'s rows may run in pieces: eager casts of CPU tensors."""
    return like.device.type == "cpu" and not torch.compiler.is_compiling()


def by_pieces(
    like: torch.Tensor, length: int, stage: Callable[[slice], torch.Tensor]
) -> torch.Tensor:
    """``stage(s)`` for slices ``s`` of the rows of ``like``, stacked along the first dimension.

    Args:
        like: the stage's input rows (their count and device).
        length: elements per row (sets the rows per piece).
        stage: the stage of a slice of rows; every piece has the same dtype and trailing shape.

    Returns:
        The stage of all rows: its own result where one piece covers them (under
        torch.compile, or small inputs), else a new tensor holding every piece's.
    """
    rows = like.shape[0]
    step = max(1, piece_elements(rows * length) // max(1, length))
    if rows <= step or not cuts(like):
        return stage(slice(None))
    out = None
    for lo in range(0, rows, step):
        piece = stage(slice(lo, lo + step))
        if out is None:
            out = piece.new_empty((rows, *piece.shape[1:]))
        out[lo : lo + piece.shape[0]] = piece
    return out
