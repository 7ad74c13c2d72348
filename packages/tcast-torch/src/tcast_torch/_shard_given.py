"""Given scale parts of DTensor casts (SEMANTICS.md §5.12, §9.1).

A given part of a DTensor cast holds the values of the whole scale array: a plain tensor with
all of them in every process (checked by ``_given.check_given``), or a DTensor on x's mesh.

* :func:`check_dtensor_given` checks a DTensor part where its values lie, each process its
  local tensor, and every process learns the first refused value (one ``all_reduce(MIN)``
  per mesh dimension that shards the part), so that all of them raise the same ``SpecError``
  or none does. A part of other placements than ``Shard`` and ``Replicate`` (``Partial``,
  strided shards) is gathered (``full_tensor()``) and checked as a plain tensor.
* :func:`window_given` gives a window's cast (``_shards``) the values of the window's
  blocks. A block the window shares with another process (a tile cut by a shard boundary)
  takes the whole array's value for it, the same in each process, so both encode the same
  scale. A DTensor part is cut from its local tensor where its placements hold the window's
  blocks (each mesh dimension ``Replicate``, or sharded as the cast's scales are), else
  gathered first; the choice follows from placements alone, so every process makes the
  same collectives.

:func:`flat_indices` (a box's flat indices in the whole array) serves both, and the random
words of a window (``_shards``).
"""

from __future__ import annotations

import struct
from typing import Any

import torch
import torch.distributed as dist

from tcast import SpecError
from tcast.kit import GivenScales, bad_given_value

from ._accept import has_values, is_dtensor
from ._bits import to_bits
from ._given import bad_values, check_given, check_part_dtype

__all__ = ["check_dtensor_given", "flat_indices", "window_given"]

#: No refused value (above every flat index and every float32 bit pattern).
_NONE = torch.iinfo(torch.int64).max


def flat_indices(
    lengths: tuple[int, ...], first: tuple[int, ...], shape: tuple[int, ...], device: Any
) -> torch.Tensor:
    """int64 C-order flat indices in ``shape`` of the box at ``first`` with shape ``lengths``."""
    index = torch.zeros((), dtype=torch.int64, device=device)
    stride = 1
    for d in reversed(range(len(shape))):
        pos = torch.arange(lengths[d], dtype=torch.int64, device=device) + first[d]
        view = [1] * len(shape)
        view[d] = lengths[d]
        index = index + pos.reshape(view) * stride
        stride *= max(shape[d], 1)
    return index.expand(lengths)


def _boxes(placements: tuple[Any, ...]) -> bool:
    """Whether each process's local tensor is a box of the whole (``Shard``, ``Replicate``)."""
    from torch.distributed.tensor import Replicate, Shard

    return all(type(p) is Shard or isinstance(p, Replicate) for p in placements)


def check_dtensor_given(x: Any, part: torch.Tensor, name: str, *, signed: bool) -> torch.Tensor:
    """A DTensor given part as a float32 DTensor of its placements (or a gathered tensor).

    Every process of the cast calls this (the part's check may communicate). Values are not
    checked inside a torch.compile graph (``_given``).

    Raises:
        SpecError: for a plain ``x``, a part on another mesh, of another dtype or device, or
            with a NaN, infinite or (a scale's) negative value, naming the part and the
            first bad index of the whole scale array, in every process alike.
    """
    if not is_dtensor(x):
        raise SpecError(
            f"{name} is a DTensor and x a plain tensor: pass the whole scale array as a plain "
            f"tensor ({name}.full_tensor())"
        )
    if part.device_mesh != x.device_mesh:
        raise SpecError(
            f"{name} is a DTensor on another mesh than x: redistribute it onto x's mesh, or "
            f"pass the whole scale array as a plain tensor ({name}.full_tensor())"
        )
    check_part_dtype(x, part, name)
    if not _boxes(tuple(part.placements)):
        return check_given(x, part.full_tensor(), name, signed=signed)
    a = part.to(torch.float32)
    local = a.to_local()
    if has_values(local):
        _agree_on_values(a, local, name, signed)
    return a


def _agree_on_values(a: torch.Tensor, local: torch.Tensor, name: str, signed: bool) -> None:
    """Raise the same SpecError in every process if any process holds a refused value."""
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

    shape = tuple(a.shape)
    lengths = tuple(local.shape)
    _, offsets = compute_local_shape_and_global_offset(shape, a.device_mesh, a.placements)
    flat = flat_indices(lengths, tuple(offsets), shape, local.device)
    mesh_dims = [i for i, p in enumerate(a.placements) if p.is_shard()]
    first = _least(torch.where(bad_values(local, signed), flat, _NONE), a, mesh_dims)
    if first == _NONE:
        return
    # its value, from the processes that hold it
    bits = to_bits(local).to(torch.int64) & 0xFFFFFFFF
    held = _least(torch.where(flat == first, bits, _NONE), a, mesh_dims)
    value = struct.unpack("<f", struct.pack("<I", held))[0]
    index = []
    for n in reversed(shape):
        first, i = divmod(first, n)
        index.append(i)
    raise bad_given_value(name, tuple(reversed(index)), value, signed)


def _least(t: torch.Tensor, a: torch.Tensor, mesh_dims: list[int]) -> int:
    """The least element of int64 ``t`` over the processes along ``mesh_dims`` (empty: none)."""
    m = t.amin().reshape(1) if t.numel() else t.new_full((1,), _NONE)
    for i in mesh_dims:
        dist.all_reduce(m, op=dist.ReduceOp.MIN, group=a.device_mesh.get_group(i))
    return int(m.item())


def window_given(
    given: GivenScales,
    grid_start: tuple[int, ...],
    counts: tuple[int, ...],
    fits: tuple[Any, ...],
) -> GivenScales:
    """The given parts of a window's blocks: plain float32 tensors in its scale array's shape.

    ``grid_start`` and ``counts``: the window's blocks in the whole scale array, per
    dimension (``tcast.kit.ShardBlocks.grid_start``, the window request's scale shape);
    ``fits``: the placements, per mesh dimension, of the cast's scales (a DTensor part
    placed alike, or ``Replicate`` there, holds the window's blocks locally).
    """
    parts = {}
    for name, part in given.items():
        if is_dtensor(part):
            part, offsets = _local_box(part, fits)
        else:
            offsets = (0,) * part.ndim
        for d in range(part.ndim):
            n = counts[d]
            start = grid_start[d] - offsets[d] if n else 0  # an empty window takes no block
            if start or part.shape[d] != n:
                part = part.narrow(d, start, n)
        parts[name] = part
    return GivenScales(**parts)


def _local_box(part: torch.Tensor, fits: tuple[Any, ...]) -> tuple[torch.Tensor, tuple[int, ...]]:
    """A DTensor part's local tensor and its offsets, or the whole tensor where it must gather."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

    ndim = part.ndim

    def placed(p: Any) -> Any:
        return Shard(p.dim % ndim) if type(p) is Shard else p

    placements = tuple(part.placements)
    if all(
        isinstance(p, Replicate) or placed(p) == placed(f)
        for p, f in zip(placements, fits, strict=True)
    ):
        _, offsets = compute_local_shape_and_global_offset(part.shape, part.device_mesh, placements)
        return part.to_local(), tuple(offsets)
    return part.full_tensor(), (0,) * ndim
