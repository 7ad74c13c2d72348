"""Casts of DTensors, bit for bit the cast of the whole tensor (SEMANTICS.md §9.1).

Every process casts its own shard; what it needs from the others is only the statistics
of the blocks its shard shares with them (``tcast.kit.cut_blocks``):

1. the shard is padded in front to a block boundary of the whole tensor (its *window*,
   ``tcast.kit.shard_blocks``), so that the window's own block layout has the whole
   tensor's blocks; stochastic rounding's random words are those of the elements' flat
   indices in the whole tensor;
2. where a block is shared (a tile cut by a shard boundary, a channel or a tensor scale
   along a sharded dimension) or the datatype has a tensor scale over tiles (NVFP4) that
   is not given, the window's block statistics (amax; uint data: the range) are reduced
   across the shards by one ``all_reduce(MAX)`` per mesh dimension that cuts blocks
   (two-level scaling: per sharding mesh dimension), on the statistics' magnitude bits as
   int32 (exact); otherwise nothing is communicated;
3. the window is cast with those statistics and cropped back to the shard; given scale
   parts (SEMANTICS.md §5.12) reach it cut to the window's blocks (``_shard_given``), a
   shared block's value the whole array's, so that each shard encodes the same scale;
4. actual casts: each scale part (scale; zero point) of shared blocks is gathered (one
   more ``all_reduce(MAX)`` of its codes per such mesh dimension, so two for a zero-point
   datatype) and held replicated along it; scales of unshared blocks stay sharded like the
   input when the shards split the scale array as DTensor would (``torch.chunk``), else are
   gathered too. A tensor scale's code is computed alike everywhere: never gathered.

Sparsity groups cut by a shard boundary are the one case statistics cannot cover (the
ranking needs the other shard's elements): one ``all_reduce(MAX)`` of a refusal flag per
sharding mesh dimension, then the whole tensor is gathered (``full_tensor()``), cast, and
each process keeps its part (actual casts: scale codes gathered as in 4). Upcasts make no
collective, except of such a result: the flag's all_reduce, then ``full_tensor()`` of every
part. A local shard of another shape than DTensor's split is known to its process only: the
refusal rides as a flag in the cast's first collective, so that every process raises alike
(:func:`cast_dtensor`). Compress casts of sharded tensors (one C-order packed stream of the
whole tensor) and blocked scale layouts (128 x 4 blocks across shards) are the whole tensor's:
the actual cast, then the parts the layout needs gathered and laid out alike in every process
(:func:`_cast_whole_layout`). The engine's own array work comes in
as a :class:`LocalCast`, so that another engine reuses this module with its kernels.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.distributed as dist
import torch.nn.functional as F

from tcast import (
    CastMode,
    CastResult,
    RoundMode,
    ScaleLayout,
    SpecError,
    UnsupportedError,
    block_layout,
    blocked_scales,
)
from tcast.kit import (
    CastRequest,
    ShardBlocks,
    build_result,
    cut_blocks,
    from_blocked,
    groups_cut,
    make_request,
    pad_keeps,
    part_grid_starts,
    shard_blocks,
    to_blocked,
    transposed_request,
)

from ._accept import is_dtensor
from ._philox import philox_bits, philox_stream, words_rbits
from ._shard_given import flat_indices, window_given

__all__ = [
    "BlockStats",
    "LocalCast",
    "ShardSpec",
    "cast_dtensor",
    "dtensor_refusal",
    "dtensor_result",
    "dual_dtensor",
    "same_sharding",
    "shard_spec",
    "upcast_dtensor",
]


@dataclass(frozen=True)
class BlockStats:
    """Block statistics of a window as int32 magnitude bits, in its scale array's shape.

    What each statistic is exactly is the engine's own (:class:`LocalCast`); any maximum
    over a block's elements of a function of one element reduces over shards by an integer
    MAX. The torch engine's:

    Attributes:
        hi: the amax of each block's kept elements (uint data: ``max(max, 0)``); bits of
            ``|v|``, so that NaN ranks above Inf above every number and an integer MAX over
            shards is the exact amax. None where only ``tamax`` is asked for.
        lo: uint data: ``|min(min, 0)|`` per block, else None.
        tamax: 0-d, the whole tensor's amax (two-level scaling), or None: the maximum of
            ``hi`` (:func:`_reduce`).
    """

    hi: torch.Tensor | None
    lo: torch.Tensor | None = None
    tamax: torch.Tensor | None = None


class LocalCast(Protocol):
    """An engine's array work on one process's window (the torch engine's: ``_local``).

    Decoding a window needs no hook: ``upcast_dtensor`` takes the engine's checked upcast of
    a result of plain tensors. Optional (host time of repeated DTensor casts,
    ``DTensorCall``): ``call_for(window, request)``, a call object for casts of windows like
    this one with their own statistics, or None; it has ``takes(window)`` and
    ``call(window)``, which gives ``cast(window, request, None, grad)``'s result for a
    window it takes and no gradient to give.
    """

    def stats(self, window: torch.Tensor, request: CastRequest, blocks: bool) -> BlockStats:
        """The window's own block statistics.

        ``blocks``: False when only the tensor amax of two-level scaling is needed (no block
        is cut by a shard boundary): ``hi`` may then be None, with ``tamax`` given.
        """
        ...

    def cast(
        self, window: torch.Tensor, request: CastRequest, stats: BlockStats | None, grad: str
    ) -> torch.Tensor | CastResult:
        """The cast of the window with these statistics (None: its own).

        ``request.given``: the given scale parts cut to the window's blocks (plain tensors
        in the window's scale array shape), or None.
        """
        ...


@dataclass(frozen=True)
class Split:
    """One mesh dimension that shards a tensor dimension.

    Attributes:
        mesh_dim: the mesh dimension.
        dim: the tensor dimension it shards (non-negative).
        starts: the first index of each part along ``dim``, in mesh order.
    """

    mesh_dim: int
    dim: int
    starts: tuple[int, ...]


@dataclass(frozen=True)
class ShardSpec:
    """Where this process's shard of a DTensor lies in the whole tensor.

    Attributes:
        mesh: the device mesh.
        placements: the placements, one per mesh dimension.
        shape: the whole tensor's shape.
        offsets: the shard's first index along each dimension.
        lengths: the shard's shape.
        splits: the mesh dimensions that shard a tensor dimension.
    """

    mesh: Any
    placements: tuple[Any, ...]
    shape: tuple[int, ...]
    offsets: tuple[int, ...]
    lengths: tuple[int, ...]
    splits: tuple[Split, ...]


def chunk_starts(size: int, parts: int) -> tuple[int, ...]:
    """DTensor's ``Shard`` split (``torch.chunk``): part starts, ``ceil(size / parts)`` apart."""
    chunk = -(-size // parts) if parts else 0
    return tuple(min(k * chunk, size) for k in range(parts))


def _placement_refusal(x: torch.Tensor) -> str | None:
    given, ndim = x.placements, x.ndim
    if torch.compiler.is_compiling():
        return _refused_placements(tuple(given), ndim)
    # eagerly, remembered: placements are few, and checked several times per cast; first by
    # the placements object itself (a DTensor's spec keeps one: hashing placements is
    # Python code of torch's), then by value
    hit = _REFUSED_BY_OBJECT.get(id(given))
    if hit is not None and hit[0] is given and hit[1] == ndim:
        return hit[2]
    placements = tuple(given)
    key = (placements, ndim)
    try:
        why = _REFUSED[key]
    except KeyError:
        if len(_REFUSED) >= 256:
            _REFUSED.clear()
        why = _REFUSED[key] = _refused_placements(placements, ndim)
    if len(_REFUSED_BY_OBJECT) >= 256:
        _REFUSED_BY_OBJECT.clear()
    # the entry holds the object: its id is not reused while the entry lives
    _REFUSED_BY_OBJECT[id(given)] = (given, ndim, why)
    return why


#: :func:`_placement_refusal`'s answers by (placements, ndim), outside a trace.
_REFUSED: dict[tuple, str | None] = {}
#: The same by the id of the placements object (with the object, ndim and answer).
_REFUSED_BY_OBJECT: dict[int, tuple[Any, int, str | None]] = {}


def _refused_placements(placements: tuple[Any, ...], ndim: int) -> str | None:
    from torch.distributed.tensor import Replicate, Shard

    dims: set[int] = set()
    for i, p in enumerate(placements):
        if isinstance(p, Replicate):
            continue
        if type(p) is not Shard:
            name = type(p).__name__.lstrip("_")
            fix = (
                "x.redistribute(placements=[Replicate()]) (or x.full_tensor())"
                if name == "Partial"
                else "x.full_tensor(), or a DTensor with Shard and Replicate placements"
            )
            return (
                f"a DTensor with a {name} placement ({p}) on mesh dimension {i}: tcast casts "
                f"DTensors "
                f"sharded by Shard(d) and Replicate() only; cast {fix}"
            )
        d = p.dim % ndim
        if d in dims:
            return (
                f"a DTensor sharded twice along dimension {d} ({list(placements)}): tcast "
                f"casts DTensors with each dimension sharded by one mesh dimension; "
                f"redistribute it or cast x.full_tensor()"
            )
        dims.add(d)
    return None


def dtensor_refusal(x: torch.Tensor) -> str | None:
    """Why a DTensor cannot be cast here (placements tcast does not split), or None."""
    return _placement_refusal(x)


def shard_spec(x: torch.Tensor) -> ShardSpec:
    """The :class:`ShardSpec` of this process's shard of DTensor ``x``.

    Raises:
        UnsupportedError: placements :func:`dtensor_refusal` refuses, a local shard of
            another shape than DTensor's ``Shard`` split gives (``from_local`` with
            shapes of one's own), or a DTensor whose split :func:`chunk_starts` does not
            reproduce.
    """
    spec, why = _shard_spec(x)
    if why:
        raise UnsupportedError(_refusal(spec, _own_flag(why)))
    return spec


#: Why :func:`_shard_spec` refuses this process's shard (0: it does not).
MISSHAPEN, OTHER_SPLIT = 1, 2


def _shard_spec(x: torch.Tensor) -> tuple[ShardSpec, int]:
    """The :class:`ShardSpec` of DTensor ``x``, and why this process's shard is refused.

    ``MISSHAPEN``: the local shard has another shape than DTensor's ``Shard`` split gives;
    ``OTHER_SPLIT``: DTensor places it elsewhere than :func:`chunk_starts` says (a torch
    whose split rule changed); 0: neither. Either is this process's own finding (another
    process's shard may be fine): a caller that communicates must tell the others before
    raising (see :func:`cast_dtensor`). Placements tcast refuses are the same in every
    process and raise here.
    """
    spec, why = _placed_spec(x.device_mesh, tuple(x.placements), tuple(x.shape))
    if not why and _local_shape(x) != spec.lengths:
        why = MISSHAPEN
    return spec, why


def _local_shape(x: torch.Tensor) -> tuple[int, ...]:
    """The local shard's shape (without ``to_local``'s autograd node where DTensor has one)."""
    return tuple(_local_tensor(x).shape)


def _local_tensor(x: torch.Tensor) -> torch.Tensor:
    """DTensor ``x``'s local tensor, without ``to_local``'s autograd node where DTensor has one."""
    local = getattr(x, "_local_tensor", None)
    return x.to_local() if local is None else local


def _placed_spec(mesh: Any, placements: tuple[Any, ...], shape: tuple[int, ...]):
    """:func:`_shard_spec` but the local shape's check, for this process, cached.

    A cast's host time matters beside a kernel's; a mesh's coordinate is fixed for a process.
    """
    # by the mesh's identity: equal meshes may hold other process groups
    key = (id(mesh), placements, shape)
    hit = _SPECS.get(key)
    if hit is None or hit[0].mesh is not mesh:
        if len(_SPECS) >= 256:
            _SPECS.clear()
        hit = _SPECS[key] = _new_spec(mesh, placements, shape)
    return hit


#: :func:`_placed_spec`'s results by (id(mesh), placements, shape).
_SPECS: dict[tuple, tuple[ShardSpec, int]] = {}


def _new_spec(mesh: Any, placements: tuple[Any, ...], shape: tuple[int, ...]):
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

    ndim = len(shape)
    why = _refused_placements(placements, ndim)
    if why is not None:
        raise UnsupportedError(f"tcast_torch does not take x: it is {why}")
    splits = tuple(
        Split(i, p.dim % ndim, chunk_starts(shape[p.dim % ndim], mesh.size(i)))
        for i, p in enumerate(placements)
        if p.is_shard()
    )
    lengths, offsets = compute_local_shape_and_global_offset(shape, mesh, placements)
    spec = ShardSpec(mesh, placements, shape, tuple(offsets), tuple(lengths), splits)
    coordinate = mesh.get_coordinate()
    for s in splits if coordinate is not None else ():
        # the windows, cut blocks and scale placements all use chunk_starts: DTensor's own
        # offsets must agree (an empty shard's offset is not compared: nothing is there)
        if lengths[s.dim] and s.starts[coordinate[s.mesh_dim]] != offsets[s.dim]:
            return spec, OTHER_SPLIT
    return spec, 0


def _own_flag(why: int) -> int:
    """This process's refusal as an int32 flag: MAX over processes picks one alike."""
    return (dist.get_rank() + 1) * 4 + why if why else 0


def _refusal(spec: ShardSpec, flag: int) -> str:
    """The refusal a flag (:func:`_own_flag`, reduced) stands for, the same in every process."""
    rank, why = flag // 4 - 1, flag % 4
    what = (
        "has another shape than DTensor's Shard split gives (DTensor.from_local with shapes "
        "of one's own)"
        if why == MISSHAPEN
        else "lies elsewhere than tcast's split (torch.chunk's) places it: this torch's "
        "DTensor splits tensors otherwise"
    )
    return (
        f"tcast_torch does not take x: a DTensor of shape {spec.shape} and placements "
        f"{list(spec.placements)} whose local shard in process {rank} {what}: tcast cannot "
        f"place it in the whole tensor; redistribute it or cast x.full_tensor()"
    )


# ----------------------------------------------------------------- small tensor helpers
def _contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _pad_front(a: torch.Tensor, pads: tuple[int, ...], value: Any = 0) -> torch.Tensor:
    """``a`` preceded by ``pads[d]`` elements of ``value`` along each dimension."""
    if not any(pads):
        return a
    if a.dtype == torch.bool or not a.is_floating_point():
        out = torch.full(
            tuple(p + n for p, n in zip(pads, a.shape, strict=True)),
            value,
            dtype=a.dtype,
            device=a.device,
        )
        out[tuple(slice(p, None) for p in pads)] = a
        return out
    spec: list[int] = []
    for p in reversed(pads):  # F.pad lists the last dimension first; differentiable
        spec.extend((p, 0))
    return F.pad(a, spec, value=float(value))


def _crop(a: torch.Tensor, pads: tuple[int, ...], lengths: tuple[int, ...]) -> torch.Tensor:
    for d, (p, n) in enumerate(zip(pads, lengths, strict=True)):
        if p or a.shape[d] != n:
            a = a.narrow(d, p, n)
    return a.contiguous()


def _wide(codes: torch.Tensor) -> torch.Tensor:
    """Unsigned codes as int64 (torch reduces neither uint16 nor uint32)."""
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32}.get(codes.dtype)
    if signed is None:
        return codes.to(torch.int64)
    return codes.view(signed).to(torch.int64) & ((1 << (8 * codes.element_size())) - 1)


def _narrow(wide: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32}.get(dtype)
    if signed is None:
        return wide.to(dtype)
    return wide.to(signed).view(dtype)  # int64 -> int16/int32 keeps the low bits


def _max_reduce(t: torch.Tensor, spec: ShardSpec, mesh_dim: int) -> None:
    if t.numel():
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=spec.mesh.get_group(mesh_dim))


# ----------------------------------------------------------------- the cast
def _window_rbits(
    req: CastRequest, spec: ShardSpec, pads: tuple[int, ...], device: torch.device
) -> torch.Tensor | None:
    """The random bits of the window's elements (0 in the padding), as a request holds them.

    ``K``-bit integers (uint8, or int16 for ``K`` = 16: ``_run.check_rbits``'s form).
    Seeded: the bits of the elements' flat indices in the whole tensor (SEMANTICS.md §3.3);
    explicit bits: their shard (a DTensor's local part, or a slice of a whole tensor).
    """
    if req.roundmode is not RoundMode.STOCHASTIC:
        return None
    if req.seed is None:
        rb = req.rbits
        rb = rb.to_local() if _is_dtensor(rb) else rb[_shard_slices(spec)]
        return _pad_front(rb, pads)
    width, stream = req.dtype.nspec.rbits_width, req.modes.stream
    strides = _contiguous_strides(spec.shape)
    window = tuple(n + p for n, p in zip(spec.lengths, pads, strict=True))
    partial = [d for d, n in enumerate(window) if n != spec.shape[d]]
    first = [o - p for o, p in zip(spec.offsets, pads, strict=True)]  # the window's corner
    if len(partial) <= 1 and all(window[d] == 1 for d in range(partial[0] if partial else 0)):
        # one run of flat indices (rows of a Shard(0)): each Philox call serves 128 / K
        start = sum(o * st for o, st in zip(first, strides, strict=True))
        bits = philox_stream(req.seed, start, math.prod(window), device, width, stream)
        return words_rbits(bits, width).reshape(window)
    index = flat_indices(window, tuple(first), spec.shape, device)
    return words_rbits(philox_bits(req.seed, index.contiguous(), width, stream), width)


def _shard_slices(spec: ShardSpec) -> tuple[slice, ...]:
    return tuple(slice(o, o + n) for o, n in zip(spec.offsets, spec.lengths, strict=True))


def _is_dtensor(a: Any) -> bool:
    return isinstance(a, torch.Tensor) and is_dtensor(a)


def _reduce(
    stats: BlockStats, req: CastRequest, sb: ShardBlocks, spec: ShardSpec, flag: int
) -> tuple[BlockStats, Callable[[], int]]:
    """The whole blocks' statistics: one all_reduce(MAX) per mesh dimension that needs one.

    ``flag`` (this process's refusal, :func:`_own_flag`) rides in each buffer, so
    that the returned flag (the MAX over the processes this one communicates with) tells
    every process of a refusal without a collective of its own; a mesh dimension with no
    statistics to reduce but codes to gather later (:func:`_comm_splits`) reduces the flag
    alone, so that it reaches every process a later collective would wait for. The flag
    stays on the device (a GPU's statistics): the returned function reads it, after the
    caller has queued the cast (:func:`_read_later`), so that the host's wait for it does
    not hold the cast back.
    """
    layout = req.layout
    comm = _comm_splits(req, spec)
    hi = None if stats.hi is None else stats.hi.clone()
    lo = None if stats.lo is None else stats.lo.clone()
    tamax = stats.tamax
    if _takes_tensor_amax(req) and tamax is None:
        tamax = hi.max() if hi.numel() else hi.new_zeros(())
    some = hi if hi is not None else tamax  # int32, on the statistics' device
    flag_t = some.new_full((1,), flag)  # int32: the flag is exact
    for s in spec.splits:
        cuts = cut_blocks(layout, s.dim, s.starts)
        parts, put_back = [], []
        if cuts and not layout.dims:  # a tensor scale: the one block
            parts = [a.reshape(1) for a in (hi, lo) if a is not None]
        elif cuts:
            d, count = s.dim, hi.shape[s.dim]
            pos = [(j, c - sb.grid_start[d]) for j, c in enumerate(cuts)]
            pos = [(j, k) for j, k in pos if 0 <= k < count]
            j_idx = torch.tensor([j for j, _ in pos], dtype=torch.int64, device=hi.device)
            k_idx = torch.tensor([k for _, k in pos], dtype=torch.int64, device=hi.device)
            shape = list(hi.shape)
            shape[d] = len(cuts)
            for a in (hi, lo):
                if a is None:
                    continue
                buf = a.new_zeros(shape)  # 0 is below every magnitude: MAX's identity here
                buf.index_copy_(d, j_idx, a.index_select(d, k_idx))
                parts.append(buf)
                put_back.append((a, d, j_idx, k_idx))
        if tamax is not None:
            parts.append(tamax.reshape(1))
        if not parts and s not in comm:
            continue
        parts.append(flag_t)
        flat = torch.cat([p.reshape(-1) for p in parts])
        dist.all_reduce(flat, op=dist.ReduceOp.MAX, group=spec.mesh.get_group(s.mesh_dim))
        pieces = list(torch.split(flat, [p.numel() for p in parts]))
        flag_t = pieces.pop()
        if tamax is not None:
            tamax = pieces.pop().reshape(())
        if cuts and not layout.dims:
            hi = pieces.pop(0).reshape(hi.shape)
            lo = None if lo is None else pieces.pop(0).reshape(lo.shape)
        for (a, d, j_idx, k_idx), piece in zip(put_back, pieces, strict=True):
            shape = list(a.shape)
            shape[d] = len(cuts)
            a.index_copy_(d, k_idx, piece.reshape(shape).index_select(d, j_idx))
    return BlockStats(hi, lo, tamax), _read_later(flag_t)


def _read_later(t: torch.Tensor) -> Callable[[], int]:
    """A function that reads the 1-element int32 ``t`` on the host.

    A GPU's is copied now and the copy waited for when read, so that work queued in between
    is not waited for.
    """
    if t.device.type != "cuda":
        return lambda: int(t)
    host = torch.empty(1, dtype=t.dtype, pin_memory=True)
    host.copy_(t.reshape(1), non_blocking=True)  # queued on t's device's current stream
    done = torch.cuda.Event()
    done.record(torch.cuda.current_stream(t.device))

    def read() -> int:
        done.synchronize()
        return int(host[0])

    return read


def _gathers_codes(req: CastRequest, split: Split) -> bool:
    """Whether :func:`_assemble` gathers scale codes along ``split`` (one all_reduce)."""
    layout = req.layout
    return (
        req.castmode is not CastMode.VIRTUAL
        and layout is not None
        and bool(layout.dims)
        and not _scales_split(layout, split)
    )


def _comm_splits(req: CastRequest, spec: ShardSpec) -> tuple[Split, ...]:
    """The splits along whose mesh dimension a (non-gathering) cast communicates."""
    if req.layout is None:
        return ()
    stats = _needs_reduce(req, spec)
    return tuple(
        s
        for s in spec.splits
        if (stats and (_takes_tensor_amax(req) or cut_blocks(req.layout, s.dim, s.starts)))
        or _gathers_codes(req, s)
    )


def _agree(flag: int, splits: tuple[Split, ...], spec: ShardSpec) -> int:
    """The MAX of the refusal flags over the processes along ``splits`` (one int32 each)."""
    for s in splits:
        t = torch.tensor([flag], dtype=torch.int32, device=spec.mesh.device_type)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=spec.mesh.get_group(s.mesh_dim))
        flag = int(t.item())
    return flag


def _takes_tensor_amax(req: CastRequest) -> bool:
    """Whether the cast reduces a tensor amax: two-level scaling, its tensor scale not given."""
    return req.dtype.is_multiscale and (req.given is None or req.given.tensor_scale is None)


def _needs_reduce(req: CastRequest, spec: ShardSpec) -> bool:
    if not spec.splits:
        return False
    if _takes_tensor_amax(req):
        return True
    return any(cut_blocks(req.layout, s.dim, s.starts) for s in spec.splits)


def cast_dtensor(
    x: torch.Tensor, req: CastRequest, local: LocalCast, grad: str = "ste"
) -> torch.Tensor | CastResult:
    """Cast DTensor ``x`` as ``req`` (made for x's whole shape) says, with an engine's casts.

    ``local`` is the engine's :class:`LocalCast`. Returns a DTensor, or a CastResult of
    DTensors (see the module docstring).

    Raises:
        UnsupportedError: placements or a local shape tcast cannot place
            (:func:`shard_spec`; in every process of the cast's collectives when one
            process's local shape is refused).
    """
    spec, why = _shard_spec(x)
    # A local shard of the wrong shape is known to its own process only. Raising there
    # alone would leave the others blocked in the cast's first collective, so the refusal
    # rides in it as a flag (:func:`_own_flag`; MAX: the same in every process) and
    # every process raises after it. The other refusals below depend on the placements,
    # shape and request only, the same in every process: they raise at once everywhere.
    flag = _own_flag(why)
    if spec.splits and (req.castmode is CastMode.COMPRESS or req.blocked is not None):
        # the layout's gathers follow the cast: a refusal known to one process is agreed on
        # first (the cast itself may make no collective that would carry it)
        flag = _agree(flag, spec.splits, spec)
        if flag:
            raise UnsupportedError(_refusal(spec, flag))
        return _cast_whole_layout(x, req, spec, local, grad)
    plan = _cast_plan(spec, req)
    if plan.gathered:
        # full_tensor() gathers cannot carry the flag: one all_reduce of it per mesh
        # dimension first, only on this path
        flag = _agree(flag, spec.splits, spec)
        if flag:
            raise UnsupportedError(_refusal(spec, flag))
        return _cast_gathered(x, req, spec, local, grad)
    comm, needs_reduce, sb = plan.comm, plan.needs_reduce, plan.window
    if flag and not comm:
        # this cast makes no collective: no other process waits for this one, so raising
        # here alone blocks nobody
        raise UnsupportedError(_refusal(spec, flag))
    if comm and not needs_reduce:
        # codes gathered without statistics reduced first (scales not split as DTensor
        # splits them): the flag's own all_reduce precedes the cast
        flag = _agree(flag, comm, spec)
        if flag:
            raise UnsupportedError(_refusal(spec, flag))
    # a refusing process joins the statistics' reduction with a shard of the right shape
    # the local tensor as it is where no gradient flows (to_local adds an autograd node)
    xl = x.to_local() if x.requires_grad else _local_tensor(x)
    if flag:
        xl = xl.new_zeros(spec.lengths)
    if not spec.splits and (req.rbits is None or not _is_dtensor(req.rbits)):
        wreq = req  # every mesh dimension replicates: the whole tensor is here
    elif req.roundmode is not RoundMode.STOCHASTIC or flag:
        # statistics take no random bits: a refusing process's may be of another shape
        wreq = plan.window_request
    else:
        rbits = _window_rbits(req, spec, sb.pads, xl.device)
        wreq = dataclasses.replace(plan.window_request, rbits=rbits)
    if req.given is not None:
        fits = _every_replicate(spec) if plan.scales is None else plan.scales.placements
        counts = tuple(wreq.layout.scale_shape)
        wreq = dataclasses.replace(wreq, given=window_given(req.given, sb.grid_start, counts, fits))
    window = _pad_front(xl, sb.pads)
    stats = None
    if needs_reduce:
        own = local.stats(window.detach(), wreq, plan.blocks)
        stats, read_flag = _reduce(own, req, sb, spec, flag)
        # the cast is queued before the flag is read, so that on a GPU the host's wait for
        # it overlaps the cast; a refusing process (its own flag set) casts nothing
        out = None if flag else local.cast(window, wreq, stats, grad)
        flag = read_flag()
        if flag:
            raise UnsupportedError(_refusal(spec, flag))
    else:
        out = local.cast(window, wreq, stats, grad)
    return _assemble(out, req, spec, sb, plan.scales)


@dataclass(frozen=True)
class _CastPlan:
    """What a DTensor cast does, from its shard spec and request alone (:func:`_cast_plan`).

    Attributes:
        gathered: sparsity groups are cut: the whole tensor is gathered and cast.
        comm: the splits along whose mesh dimension the cast communicates.
        needs_reduce: block statistics are reduced across shards.
        blocks: a block is cut by a shard boundary (else only a tensor amax is reduced).
        window: the shard's window (:func:`tcast.kit.shard_blocks`).
        window_request: the window's request without random bits.
        scales: where the scale parts go (:func:`_scale_placing`), or None.
    """

    gathered: bool
    comm: tuple[Split, ...] = ()
    needs_reduce: bool = False
    blocks: bool = False
    window: ShardBlocks | None = None
    window_request: CastRequest | None = None
    scales: _ScalePlacing | None = None


@dataclass(frozen=True)
class _ScalePlacing:
    """Where a cast's scale parts of this shard go.

    Attributes:
        own: the shard's own blocks (its window's grid start, without the padding).
        counts: the shard's scale counts along each dimension.
        placements: the scale parts' placements, per mesh dimension.
        gathers: (split, grid start, scale count) of each mesh dimension whose codes are
            gathered (:func:`_gather_codes`), in mesh order.
    """

    own: ShardBlocks
    counts: tuple[int, ...]
    placements: tuple[Any, ...]
    gathers: tuple[tuple[Split, int, int], ...]


def _cast_plan(spec: ShardSpec, req: CastRequest) -> _CastPlan:
    """:class:`_CastPlan` of a cast, cached by (spec, datatype, modes, input dtype, given)."""
    # the datatype's name too: the window's request labels the result, and equal datatypes
    # of other names are other labels; which parts are given changes what is reduced
    given = None if req.given is None else req.given.parts
    key = (spec, req.dtype, req.dtype.name, req.modes, req.input_dtype, given)
    plan = _PLANS.get(key)
    if plan is None:
        if len(_PLANS) >= 1024:
            _PLANS.clear()
        plan = _PLANS[key] = _new_plan(spec, req)
    return plan


#: :func:`_cast_plan`'s plans.
_PLANS: dict[tuple, _CastPlan] = {}


def _new_plan(spec: ShardSpec, req: CastRequest) -> _CastPlan:
    layout = req.layout
    if layout is not None and any(groups_cut(layout, s.dim, s.starts) for s in spec.splits):
        return _CastPlan(True)
    ndim = len(spec.shape)
    if layout is None:
        sb = ShardBlocks((0,) * ndim, spec.lengths, (0,) * ndim)
    else:
        sb = shard_blocks(layout, spec.offsets, spec.lengths)
    wreq = make_request(req.dtype, req.modes, None, None, sb.window, req.input_dtype, req.rules)
    return _CastPlan(
        False,
        _comm_splits(req, spec),
        layout is not None and _needs_reduce(req, spec),
        any(cut_blocks(layout, s.dim, s.starts) for s in spec.splits) if layout else False,
        sb,
        wreq,
        _scale_placing(req, spec),
    )


def _scale_placing(req: CastRequest, spec: ShardSpec) -> _ScalePlacing | None:
    """:class:`_ScalePlacing` of a cast with scales along dimensions, else None."""
    from torch.distributed.tensor import Replicate, Shard

    layout = req.layout
    if layout is None or not layout.dims:
        return None
    own = shard_blocks(layout, spec.offsets, spec.lengths)
    counts = tuple(block_layout(own.window, req.dtype, req.transpose_scale).scale_shape)
    placements, gathers = [], []
    for i in range(len(spec.placements)):
        split = next((s for s in spec.splits if s.mesh_dim == i), None)
        if split is None:
            placements.append(Replicate())
        elif _scales_split(layout, split):
            placements.append(Shard(split.dim))
        else:
            d = split.dim
            gathers.append((split, own.grid_start[d], layout.scale_shape[d]))
            placements.append(Replicate())
    return _ScalePlacing(own, counts, tuple(placements), tuple(gathers))


def _cast_whole_layout(
    x: torch.Tensor, req: CastRequest, spec: ShardSpec, local: LocalCast, grad: str
) -> CastResult:
    """Compress casts and blocked scales of a sharded DTensor: layouts of the whole tensor.

    The compress stream packs the whole tensor's codes in C order and the blocked layout's
    128 x 4 blocks span shards, so neither splits into DTensor shards: the actual cast with
    plain scales (sharded as ever), then the parts the layout needs gathered whole
    (``full_tensor``: codes and mask of a compress cast, sharded scale parts) and laid out
    alike in every process, those parts ``Replicate``.
    """
    res = cast_dtensor(x, _actual_plain(req), local, grad)
    return _whole_layout(res, req)


def _actual_plain(req: CastRequest) -> CastRequest:
    """``req`` as an actual cast with plain scales (its layout and rules are the same)."""
    modes = dataclasses.replace(req.modes, castmode=CastMode.ACTUAL, scale_layout=ScaleLayout.PLAIN)
    return dataclasses.replace(req, modes=modes)


def _whole_layout(res: CastResult, req: CastRequest) -> CastResult:
    """An actual, plain-scale result of DTensors in ``req``'s compress or blocked layout.

    The parts the layout needs are gathered whole (a compress cast: every part; blocked
    scales: scale and zero point), laid out alike in every process and held ``Replicate``.
    """
    from ._run import OPS

    mesh, n = res.data.device_mesh, len(res.data.placements)
    if req.castmode is CastMode.COMPRESS:
        whole = {k: _whole(getattr(res, k)) for k in PARTS if getattr(res, k) is not None}
        codes = whole.pop("data")
        out = build_result(req, codes, OPS, res.engine, **whole)
        names = [k for k in PARTS if getattr(out, k) is not None]
        return dataclasses.replace(
            out, **{k: _replicated_on(getattr(out, k), mesh, n) for k in names}
        )
    parts = {}
    for name in ("scale", "zero"):
        a = getattr(res, name)
        if a is not None:
            parts[name] = _replicated_on(to_blocked(_whole(a), req.blocked, OPS), mesh, n)
    return dataclasses.replace(res, scale_layout=ScaleLayout.BLOCKED, **parts)


def dual_dtensor(
    cast: Callable[[torch.Tensor, CastRequest], Any],
    x: torch.Tensor,
    rows: CastRequest,
    cols: CastRequest,
    transposed: bool,
) -> tuple[Any, Any]:
    """``tcast.cast_dual`` of DTensor ``x`` by two DTensor casts (``cast``, the engine's).

    With ``transposed``, the column cast's parts (actual, plain scales) are transposed as
    DTensors (placements follow: ``Shard(0)`` of x is ``Shard(1)`` of xᵀ) into the result
    of the row datatype over xᵀ (``tcast.kit.transposed_request``), then laid out whole
    where that request compresses or blocks its scales (:func:`_whole_layout`).
    """
    first = cast(x, rows)
    if not transposed:
        return first, cast(x, cols)
    if cols.virtual:
        return first, _swap_last(cast(x, cols))
    res = cast(x, _actual_plain(cols))
    treq = transposed_request(rows, cols)
    parts = {k: _swap_last(getattr(res, k)) for k in ("data", "scale", "zero", "mask")}
    parts = {k: v for k, v in parts.items() if v is not None}
    second = dataclasses.replace(res, dtype=treq.dtype, shape=tuple(treq.shape), **parts)
    if treq.castmode is CastMode.COMPRESS or treq.blocked is not None:
        second = _whole_layout(second, treq)
    return first, second


def _swap_last(t: torch.Tensor | None) -> torch.Tensor | None:
    """The last two dimensions of a DTensor swapped, its local tensor contiguous."""
    if t is None:
        return None
    return t.transpose(-2, -1).contiguous()


def _whole(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor of a part of a DTensor cast's result, in every process.

    A part replicated along every mesh dimension is its local tensor; otherwise gathered,
    16-bit and uint32 codes through a signed 32-bit view (gloo gathers neither).
    """
    from torch.distributed.tensor import DTensor

    if not any(p.is_shard() for p in t.placements):
        return t.to_local()
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32}.get(t.dtype)
    if signed is None:
        return t.full_tensor()
    local = t.to_local().view(signed).to(torch.int32)  # 16-bit codes sign-extended
    wide = DTensor.from_local(local, t.device_mesh, t.placements, shape=t.shape, stride=t.stride())
    return wide.full_tensor().to(signed).view(t.dtype)


def _cast_gathered(
    x: torch.Tensor, req: CastRequest, spec: ShardSpec, local: LocalCast, grad: str
) -> torch.Tensor | CastResult:
    """Sparsity groups cut by a shard boundary: cast the whole tensor, keep this part."""
    full = x.full_tensor()
    rbits = req.rbits
    if rbits is not None and _is_dtensor(rbits):
        rbits = rbits.full_tensor()
    given = req.given
    if given is not None:  # the whole scale array, in every process
        zeros = (0,) * len(spec.shape)
        counts = tuple(req.layout.scale_shape)
        given = window_given(given, zeros, counts, _every_replicate(spec))
    wreq = dataclasses.replace(req, rbits=rbits, given=given)
    out = local.cast(full, wreq, None, grad)
    whole = ShardBlocks(spec.offsets, spec.shape, (0,) * len(spec.shape))
    return _assemble(out, req, spec, whole, _scale_placing(req, spec))


def _assemble(
    out: torch.Tensor | CastResult,
    req: CastRequest,
    spec: ShardSpec,
    win: ShardBlocks,
    scales: _ScalePlacing | None,
) -> torch.Tensor | CastResult:
    """The shard's part of a window's result, as DTensors of the whole tensor's shape."""

    def like_x(a: torch.Tensor) -> torch.Tensor:
        return _dtensor(_crop(a, win.pads, spec.lengths), spec.mesh, spec.placements, spec.shape)

    if isinstance(out, torch.Tensor):
        return like_x(out)

    def replicated(a: torch.Tensor) -> torch.Tensor:
        return _replicated(a, spec)

    layout = req.layout
    # a compress result (every mesh dimension replicates x) packs the whole tensor's codes
    by_element = replicated if req.castmode is CastMode.COMPRESS else like_x
    parts: dict[str, Any] = {"data": by_element(out.data)}
    if out.mask is not None:
        parts["mask"] = by_element(out.mask)
    if out.tenscale is not None:
        parts["tenscale"] = _replicated(out.tenscale, spec)
    if layout is not None:
        for name in ("scale", "zero"):
            a = getattr(out, name)
            if a is None:
                continue
            # a tensor scale; or blocked scales, which reach here only where every mesh
            # dimension replicates x (the whole layout, as every process holds it)
            if scales is None or req.blocked is not None:
                parts[name] = _replicated(a, spec)
                continue
            for d, (g, n) in enumerate(zip(scales.own.grid_start, scales.counts, strict=True)):
                start = g - win.grid_start[d]
                if start or a.shape[d] != n:
                    a = a.narrow(d, start, n)
            for split, start, size in scales.gathers:
                a = _gather_codes(a, spec, split, start, size)
            parts[name] = _dtensor(
                a.contiguous(), spec.mesh, scales.placements, tuple(layout.scale_shape)
            )
    return dataclasses.replace(out, shape=spec.shape, **parts)


def _every_replicate(spec: ShardSpec) -> tuple[Any, ...]:
    """``Replicate()`` on every mesh dimension of ``spec``'s mesh."""
    from torch.distributed.tensor import Replicate

    return (Replicate(),) * len(spec.placements)


def _replicated(a: torch.Tensor, spec: ShardSpec) -> torch.Tensor:
    """A part every process computed alike (tensor scale codes): Replicate everywhere."""
    return _replicated_on(a, spec.mesh, len(spec.placements))


def _replicated_on(a: torch.Tensor, mesh: Any, ndim: int) -> torch.Tensor:
    """``a``, the same in every process, as a DTensor replicated on ``mesh``'s dimensions."""
    from torch.distributed.tensor import Replicate

    a = a.contiguous()
    return _dtensor(a, mesh, (Replicate(),) * ndim, tuple(a.shape))


def _dtensor(
    local: torch.Tensor, mesh: Any, placements: tuple[Any, ...], shape: tuple[int, ...]
) -> torch.Tensor:
    """``DTensor.from_local(local, ..., run_check=False)`` of a contiguous whole ``shape``.

    A local tensor that needs no gradient is wrapped directly, with a DTensorSpec made
    once per (mesh, placements, shape, dtype): ``from_local``'s autograd node and spec
    are most of a cast's host time beside a fast kernel (the same DTensor results).
    """
    from torch.distributed.tensor import DTensor

    kinds = _spec_classes()
    if local.requires_grad or kinds is None:
        return DTensor.from_local(
            local,
            mesh,
            placements,
            run_check=False,
            shape=torch.Size(shape),
            stride=_contiguous_strides(shape),
        )
    key = (id(mesh), placements, shape, local.dtype)
    spec = _DSPECS.get(key)
    if spec is None or spec.mesh is not mesh:
        if len(_DSPECS) >= 1024:
            _DSPECS.clear()
        spec_class, meta_class = kinds
        meta = meta_class(torch.Size(shape), _contiguous_strides(shape), local.dtype)
        spec = _DSPECS[key] = spec_class(mesh, placements, tensor_meta=meta)
    return DTensor(local, spec, requires_grad=False)


@functools.cache
def _spec_classes() -> tuple[Any, Any] | None:
    """DTensor's own spec classes (torch.distributed.tensor._dtensor_spec), or None."""
    try:
        from torch.distributed.tensor._dtensor_spec import DTensorSpec, TensorMeta
    except ImportError:  # another layout: DTensor.from_local only
        return None
    return DTensorSpec, TensorMeta


#: :func:`_dtensor`'s specs by (id(mesh), placements, shape, dtype).
_DSPECS: dict[tuple, Any] = {}


def _scales_split(layout: Any, split: Split) -> bool:
    """Whether the shards split the scale array along ``split.dim`` as DTensor shards it."""
    if cut_blocks(layout, split.dim, split.starts):
        return False
    grid = part_grid_starts(layout, split.dim, split.starts)
    return grid == chunk_starts(layout.scale_shape[split.dim], len(split.starts))


#: The parts of a CastResult that may be DTensors.
PARTS = ("data", "scale", "zero", "tenscale", "mask")


def _placed(placements: Any, ndim: int) -> tuple[Any, ...]:
    """Placements with ``Shard`` dimensions made non-negative (Shard(-1) is Shard(ndim - 1))."""
    from torch.distributed.tensor import Shard

    return tuple(Shard(p.dim % ndim) if type(p) is Shard else p for p in placements)


def _result_placements(
    layout: Any, spec: ShardSpec, blocked: bool = False
) -> dict[str, tuple[Any, ...]]:
    """The placements :func:`cast_dtensor` gives each part of an actual cast.

    ``spec`` is the cast DTensor's, ``layout`` the result's block layout (None: no scales);
    ``blocked``: scales in the blocked layout, which a sharded tensor's are whole.
    """
    from torch.distributed.tensor import Replicate, Shard

    every = _every_replicate(spec)
    by_element = _placed(spec.placements, len(spec.shape))
    scales = every
    if layout is not None and layout.dims and not (blocked and spec.splits):
        scales = []
        for i in range(len(every)):
            split = next((s for s in spec.splits if s.mesh_dim == i), None)
            split_here = split is not None and _scales_split(layout, split)
            scales.append(Shard(split.dim) if split_here else Replicate())
        scales = tuple(scales)
    return {
        "data": by_element,
        "mask": by_element,
        "tenscale": every,
        "scale": scales,
        "zero": scales,
    }


def _check_placements(result: CastResult, want: dict[str, tuple[Any, ...]]) -> None:
    """SpecError for a part placed otherwise than the cast of the data's DTensor places it.

    The decode reads each part's local shard as the cast laid it out, so another placement
    (a scale redistributed, a mask replicated) would decode wrong values or fail inside
    torch. Placements are the same on every process, so every process raises alike.
    """
    for name in PARTS:
        a = getattr(result, name)
        if a is None:
            continue
        if _placed(a.placements, max(a.ndim, 1)) != want[name]:
            raise SpecError(
                f"CastResult.{name} is placed {tuple(a.placements)}; the cast of this DTensor "
                f"gives {want[name]}: redistribute it back, or upcast the full tensors"
            )


def _gather_codes(
    a: torch.Tensor, spec: ShardSpec, split: Split, start: int, size: int
) -> torch.Tensor:
    """The codes of every part along ``split.dim``, ``size`` of them.

    A MAX of the zero-filled scale array: a block that parts share has one code in each.
    """
    d = split.dim
    whole = list(a.shape)
    whole[d] = size
    buf = torch.zeros(whole, dtype=torch.int64, device=a.device)
    buf.narrow(d, start, a.shape[d]).copy_(_wide(a))
    _max_reduce(buf, spec, split.mesh_dim)
    return _narrow(buf, a.dtype)


# ----------------------------------------------------------------- the upcast
def upcast_dtensor(
    result: CastResult, upcast: Callable[[CastResult], torch.Tensor]
) -> torch.Tensor:
    """Decode a CastResult of DTensors (a DTensor cast's) to a float32 DTensor like its data.

    ``upcast`` is the engine's checked upcast of a result of plain tensors; it decodes this
    process's window (its codes padded in front, its scales' part).

    Raises:
        SpecError: a part that is not a DTensor on the data's mesh, or a part (scale,
            zero point, tensor scale, mask) placed otherwise than :func:`cast_dtensor`
            places it for the data's DTensor.
        UnsupportedError: a sharded compress result.
    """
    from torch.distributed.tensor import DTensor, Replicate

    data = result.data
    for name in ("scale", "zero", "tenscale", "mask"):
        a = getattr(result, name)
        if a is not None and (not _is_dtensor(a) or a.device_mesh != data.device_mesh):
            raise SpecError(
                f"CastResult.{name} must be a DTensor on the mesh of CastResult.data (a "
                f"DTensor), got {type(a).__name__}"
            )
    if result.castmode is CastMode.COMPRESS and any(p.is_shard() for p in data.placements):
        raise UnsupportedError("a compress result cannot be sharded (see cast_dtensor)")
    shape = tuple(result.shape)
    if tuple(data.shape) != shape and result.castmode is CastMode.ACTUAL:
        raise SpecError(f"CastResult.data has shape {tuple(data.shape)}, the result {shape}")
    spec, why = _shard_spec(data) if result.castmode is CastMode.ACTUAL else (None, 0)
    if spec is None:  # a compress result: the whole tensor's, in every process
        every = (Replicate(),) * len(data.placements)
        _check_placements(result, dict.fromkeys(PARTS, every))
        layout = None
    else:
        dt = result.dtype
        layout = None if dt.sspec is None else block_layout(shape, dt, result.transpose_scale)
        blocked = result.scale_layout is ScaleLayout.BLOCKED
        _check_placements(result, _result_placements(layout, spec, blocked))
    gathered = (
        spec is not None
        and layout is not None
        and any(groups_cut(layout, s.dim, s.starts) for s in spec.splits)
    )
    if why and not gathered:
        # the window decode makes no collective: raising in this process alone blocks nobody
        raise UnsupportedError(_refusal(spec, _own_flag(why)))
    if gathered:
        # full_tensor() gathers cannot carry a refusal: its own all_reduce first
        flag = _agree(_own_flag(why), spec.splits, spec)
        if flag:
            raise UnsupportedError(_refusal(spec, flag))
    if spec is None or not spec.splits:
        values = upcast(_parts_mapped(result, lambda t: t.to_local()))
        return DTensor.from_local(values, data.device_mesh, data.placements, run_check=False)
    if gathered:
        whole = ShardBlocks(spec.offsets, shape, (0,) * len(shape))
        values = upcast(_parts_mapped(result, lambda t: t.full_tensor()))
    else:
        whole = (
            ShardBlocks((0,) * len(shape), spec.lengths, (0,) * len(shape))
            if layout is None
            else shard_blocks(layout, spec.offsets, spec.lengths)
        )
        values = upcast(_window_result(result, layout, spec, whole))
    return DTensor.from_local(
        _crop(values, whole.pads, spec.lengths),
        spec.mesh,
        spec.placements,
        run_check=False,
        shape=torch.Size(shape),
        stride=_contiguous_strides(shape),
    )


def dtensor_result(result: Any) -> bool:
    """Whether ``result`` is a CastResult of DTensors (a DTensor cast's: ``upcast_dtensor``).

    Raises:
        SpecError: a CastResult mixing DTensor and plain tensor parts.
    """
    if not isinstance(result, CastResult):
        return False
    parts = [getattr(result, n) for n in PARTS]
    kinds = {_is_dtensor(a) for a in parts if isinstance(a, torch.Tensor)}
    if kinds == {True, False}:
        raise SpecError(
            "a CastResult with DTensor and plain tensor parts: the parts of a DTensor "
            "cast's result are all DTensors (or call .full_tensor() on each)"
        )
    return kinds == {True}


def _parts_mapped(result: CastResult, fn: Callable[[Any], torch.Tensor]) -> CastResult:
    """``result`` with ``fn`` applied to each of its DTensor parts (plain tensors out)."""
    names = ("data", "scale", "zero", "tenscale", "mask")
    return dataclasses.replace(
        result, **{n: fn(getattr(result, n)) for n in names if getattr(result, n) is not None}
    )


def _window_result(result: CastResult, layout: Any, spec: ShardSpec, sb: ShardBlocks) -> CastResult:
    """This process's window of a sharded result, as a result of plain tensors."""
    parts: dict[str, Any] = {"data": _pad_front(result.data.to_local(), sb.pads)}
    if result.mask is not None:
        mask = result.mask.to_local()
        d = layout.dims[layout.sparse]
        # the kit's rule for padding positions (every position along d: padding rows of a
        # 2-D tile span the window); positions of the shard are the mask's own below
        keeps = torch.tensor(
            [pad_keeps(layout, i) for i in range(sb.window[d])],
            dtype=torch.bool,
            device=mask.device,
        )
        shape = [1] * len(sb.window)
        shape[d] = sb.window[d]
        full = keeps.reshape(shape).expand(sb.window).clone()
        full[tuple(slice(p, None) for p in sb.pads)] = mask
        parts["mask"] = full
    if result.tenscale is not None:
        parts["tenscale"] = result.tenscale.to_local()
    if layout is not None:
        wl = block_layout(sb.window, result.dtype, result.transpose_scale)
        blocked = None
        if result.scale_layout is ScaleLayout.BLOCKED:  # whole, replicated: made plain first
            blocked = blocked_scales(layout, result.dtype)
        for name in ("scale", "zero"):
            a = getattr(result, name)
            if a is None:
                continue
            loc = a.to_local()
            if blocked is not None:
                from ._run import OPS

                loc = from_blocked(loc, blocked, OPS)
            for i, p in enumerate(a.placements):
                split = next((s for s in spec.splits if s.mesh_dim == i), None)
                if split is not None and not p.is_shard() and layout.dims:
                    d = split.dim
                    loc = loc.narrow(d, sb.grid_start[d], wl.scale_shape[d])
            parts[name] = loc.contiguous()
    return dataclasses.replace(result, shape=sb.window, scale_layout=ScaleLayout.PLAIN, **parts)


def same_sharding(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two DTensors have one mesh, placements and shape (rbits of a DTensor cast)."""
    return (
        a.device_mesh == b.device_mesh
        and tuple(a.placements) == tuple(b.placements)
        and tuple(a.shape) == tuple(b.shape)
    )
