"""Repeated casts of one kind at little more than a launch's host cost.

A training step casts tensors of the same shapes with the same datatypes over and over. The
general path (``_plain.cast_eager``) re-derives on each call what such a call shares with the
last: the request's checks, the launch plan, the kernel's specialization, the result's
layout. :class:`FastCast` holds all of that for one kind of call — request (datatype, modes,
shape, input dtype), device — so that a call allocates the outputs, launches the plan's
kernels and wraps the buffers in a ``CastResult``, nothing else.

A call object serves only inputs that the general path would cast the same way without
preparing them: contiguous, 16-byte aligned, on the current CUDA device, not a pending
negation, strided, and no autograd (a virtual cast of a tensor that requires grad goes the
general way). :meth:`FastCast.takes` says so per call; anything else goes the general way.
Results are the general path's, field for field (tests compare them).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import torch
from triton.runtime.driver import driver

from tcast import CastMode, CastResult, RoundMode
from tcast.kit import CastRequest, build_result

from . import _launch, _launch_2d
from ._env import INTERPRETING, quiet_numpy
from ._fastlaunch import _spec
from ._kernels import _cast_unscaled
from ._launch import (
    _BITS_VIEW,
    _CODE_DTYPES,
    _tiled_plan,
    _unscaled_plan,
    bits_of,
    cached_plan,
    uses_nd,
)
from ._launch_2d import _NdPlan
from ._pack import OPS, packed_bytes

__all__ = ["CallsByRequest", "FastCast", "MaximaSlots", "fast_cast", "plain_input"]


class MaximaSlots:
    """Zeroed int32 slots for the amax pass's maxima, handed out one per cast on each stream.

    The amax pass reduces into its buffer by atomic max, so each cast needs a zeroed one;
    ``torch.zeros(3)`` costs a fill kernel's launch per cast. Here a block of ``count``
    slots is zeroed by one fill and each cast takes the next unused slot (a 16-byte address,
    passed to the kernels as an integer), never one taken before: a slot holds only its own
    cast's maxima whatever the GPU has or has not run yet. A used-up block is dropped for a
    new one: its memory returns to the caching allocator, which reuses it only after the work
    queued on its stream (the blocks are per stream, so every cast using a slot was queued on
    the block's own stream, after its fill). ``next`` on a counter is atomic under the GIL:
    threads casting at once on one stream get distinct slots. Not used while a CUDA graph is
    captured (a replay would reduce into the slot its capture took, already holding maxima):
    those casts allocate a zeroed buffer, which the graph records.
    """

    __slots__ = ("_blocks", "count", "device")

    #: int32 words per slot: the three maxima and a word that keeps slots 16-byte aligned
    WORDS = 4

    def __init__(self, device: torch.device, count: int = 1024) -> None:
        self.device = device
        self.count = count
        # by stream handle: (block, its address, counter of slots taken)
        self._blocks: dict[int, tuple[torch.Tensor, int, Any]] = {}

    def take(self) -> int:
        """The address of a zeroed slot on the current stream of the device."""
        stream = driver.active.get_current_stream(self.device.index)
        block = self._blocks.get(stream)
        if block is not None:
            i = next(block[2])
            if i < self.count:
                return block[1] + 4 * self.WORDS * i
        buf = torch.zeros(self.count * self.WORDS, dtype=torch.int32, device=self.device)
        counter = itertools.count(1)
        self._blocks[stream] = (buf, buf.data_ptr(), counter)
        return buf.data_ptr()


class FastCast:
    """The cast of one request on one device, everything but the buffers prepared.

    Build it with :func:`fast_cast` (None where the general path is needed for every call).
    """

    __slots__ = (
        "_direct",
        "_fixed",
        "_pack",
        "_runs",
        "amax",
        "bits",
        "device",
        "dtype",
        "grid",
        "launcher",
        "nd",
        "out",
        "packed",
        "plan",
        "plans",
        "req",
        "scale",
        "slots",
        "stream",
        "tcode",
        "unscaled",
        "virtual",
        "zero",
    )

    def __init__(self, req: CastRequest, plan: Any, device: torch.device) -> None:
        self.req = req
        self.plan = plan
        self.device = device
        self.grid = plan.grid
        # the N-d kernel (2-D tiles) takes the element output twice (codes, keep-mask)
        self.nd = isinstance(plan, _NdPlan)
        self.unscaled = not self.nd and plan.kernel is _cast_unscaled
        packed = self.packed = getattr(plan, "packed", False)
        # the launcher module whose plan cache and grid limit this plan answers to: a call
        # object serves only while they are the ones it was made under (tests switch them)
        self.launcher = _launch_2d if self.nd else _launch
        self.plans = self.launcher._PLANS
        # outputs as (shape, dtype, zeroed): the element codes (or values, virtual) ...
        shape = req.shape
        if packed:
            self.out = ((packed_bytes(plan.kw["PACK"], math.prod(shape)),), torch.uint8)
        elif plan.out_bytes:
            self.out = (shape, _CODE_DTYPES[plan.out_bytes])
        else:
            self.out = (shape, getattr(torch, req.input_dtype))
        # ... and the scale, zero-point and tensor-scale codes in the result's shapes (a
        # plan whose buffers are longer than the result's scales goes the general way)
        self.scale = self.zero = self.tcode = None
        self.amax = None
        if not self.unscaled:
            alloc = (plan.scale_shape, _CODE_DTYPES[plan.scale_bytes], plan.padded)
            self.scale = alloc
            if plan.zero_bytes:
                self.zero = (plan.scale_shape, _CODE_DTYPES[plan.zero_bytes], plan.padded)
            if plan.tcode_bytes:
                self.tcode = ((), _CODE_DTYPES[plan.tcode_bytes], False)
            if plan.amax_grid:
                self.amax = (plan.amax_launch, plan.amax_grid, math.prod(shape))
        self.slots = MaximaSlots(device) if self.amax is not None else None
        # a result built here (build_result's, without its generic steps): actual codes, the
        # packed stream a kernel wrote, or compress codes packed here (no keep-mask reaches
        # a call object); scales plain or in the blocked layout the kernel wrote
        self._direct = req.castmode is not CastMode.VIRTUAL and (
            req.blocked is None or bool(plan.blocked)
        )
        self._pack = req.castmode is CastMode.COMPRESS and not packed
        # the compiled kernels' runners, once a launch compiled them: by (kernel: 0 the
        # cast, 1 the amax pass; the seed's specialization, which Triton types by range)
        self._runs: dict[Any, Any] = {}
        self.virtual = req.virtual
        self.stream = req.modes.stream  # the Philox stream of a seeded cast (a launch argument)
        self.dtype = getattr(torch, req.input_dtype)
        self.bits = req.dtype.nspec.bits
        # the fields every result of this request shares (build_result's)
        self._fixed = dict(
            mask=None,
            meta=None,
            dtype=req.dtype,
            shape=req.shape,
            castmode=req.castmode,
            input_dtype=req.input_dtype,
            transpose_scale=req.transpose_scale and req.layout is not None,
            engine="triton",
            scale_layout=req.modes.scale_layout,
        )

    def takes(self, x: torch.Tensor) -> bool:
        """Whether ``x`` goes this way: a plain tensor of the request's shape, dtype, device.

        And no gradient to give (a virtual cast of a tensor that requires grad), an input
        the general path would cast as it is (:func:`plain_input`), and the launcher's plan
        cache and grid limit still those the call object was made under.
        """
        mod = self.launcher
        return (
            type(x) is torch.Tensor
            and x.dtype is self.dtype
            and x.device == self.device
            and x.shape == self.req.shape
            and mod._PLANS is self.plans
            and self.grid[0] <= mod.MAX_PROGRAMS
            and plain_input(x)
            and not (self.virtual and x.requires_grad and torch.is_grad_enabled())
        )

    def _launch(
        self,
        slot: Any,
        launch: Any,
        grid: tuple,
        parts: tuple[tuple, tuple],
        rest: tuple,
        typed: tuple,
        aligned: bool,
    ) -> None:
        """Launch a kernel through its compiled runner, once there is one.

        ``parts``: the leading (pointer) arguments twice, as tensors and as their addresses;
        ``rest``: the arguments after them. The runner takes the addresses: Triton's launcher
        asks each tensor for its address and the driver for its attributes, which costs a
        cast's host path a few microseconds per launch. The first launch, which may compile,
        goes through ``launch`` with the tensors viewed as the kernels read them
        (:meth:`_typed` of ``typed``: the input and the element output), as the general path
        passes them, so the kernel compiled is the general path's.
        """
        run = self._runs.get(slot)
        if run is not None and aligned:
            run[0](grid, self.device.index, parts[1] + rest + run[1])
            return
        args = self._typed(parts[0] + rest, typed)
        with quiet_numpy():
            launch(grid, *args)
        if aligned and not INTERPRETING:
            self._runs[slot] = launch.compiled(*args)

    def __call__(self, x: torch.Tensor, seed: int = 0) -> torch.Tensor | CastResult:
        """The cast of ``x`` (for which :meth:`takes` is True).

        ``seed``: the Philox seed of a stochastic cast (a checked int in [0, 2**64)).
        """
        dev = self.device
        slot = (0, _spec(seed))
        shape, dtype = self.out
        out = torch.empty(shape, dtype=dtype, device=dev)
        xp, op = x.data_ptr(), out.data_ptr()
        aligned = op & 15 == 0
        plan = self.plan
        rest = (*plan.sizes, seed, self.stream)
        if self.unscaled:
            parts = ((x, x, out), (xp, xp, op))
            self._launch(slot, plan.launch, self.grid, parts, rest, (x, out), aligned)
            return out if self.virtual else self._result(out, None, None, None)
        shape, dtype, zeroed = self.scale
        scale = (torch.zeros if zeroed else torch.empty)(shape, dtype=dtype, device=dev)
        sp = scale.data_ptr()
        aligned = aligned and sp & 15 == 0
        zero = tcode = None
        zp = tp = sp  # the scale's address stands for parts a datatype lacks
        if self.zero is not None:
            shape, dtype, zeroed = self.zero
            zero = (torch.zeros if zeroed else torch.empty)(shape, dtype=dtype, device=dev)
            zp = zero.data_ptr()
            aligned = aligned and zp & 15 == 0
        if self.tcode is not None:
            shape, dtype, _ = self.tcode
            tcode = torch.empty(shape, dtype=dtype, device=dev)
            tp = tcode.data_ptr()
            aligned = aligned and tp & 15 == 0
        stats, mp = scale, sp
        if self.amax is not None:
            launch, grid, numel = self.amax
            if (
                aligned
                and 1 in self._runs
                and slot in self._runs
                and not torch.cuda.is_current_stream_capturing()
            ):
                # both kernels launch through their runners, which take an address
                stats = mp = self.slots.take()
                ok = True
            else:
                stats = torch.zeros(3, dtype=torch.int32, device=dev)
                mp = stats.data_ptr()
                ok = mp & 15 == 0
            self._launch(1, launch, grid, ((x, stats), (xp, mp)), (numel,), (x, None), ok)
            aligned = aligned and ok  # the cast kernel reads the maxima
        outs, ops = ((out, out), (op, op)) if self.nd else ((out,), (op,))
        parts = (
            (
                x,
                x,
                *outs,
                scale,
                scale if zero is None else zero,
                scale if tcode is None else tcode,
                stats,
            ),
            (xp, xp, *ops, sp, zp, tp, mp),
        )
        self._launch(slot, plan.launch, self.grid, parts, rest, (x, out), aligned)
        return out if self.virtual else self._result(out, scale, zero, tcode)

    @staticmethod
    def _typed(args: tuple, xo: tuple) -> tuple:
        """``args`` as the general path passes them (``_launch._launch``).

        ``xo``: (the input, the element output or None): the input as the kernels read it
        (``bits_of``), a virtual cast's output as its integer bits.
        """
        x, out = xo
        xb = bits_of(x)
        if out is not None and out.dtype.is_floating_point:
            ob = out.view(_BITS_VIEW[out.dtype])
        else:
            ob = out
        return tuple(xb if a is x else ob if a is out else a for a in args)

    def _result(self, out, scale, zero, tcode) -> CastResult:
        req = self.req
        if not self._direct:
            return build_result(
                req,
                out,
                OPS,
                "triton",
                scale=scale,
                zero=zero,
                tenscale=tcode,
                packed=self.packed,
                scale_blocked=bool(self.plan.blocked),
            )
        if self._pack:
            out = OPS.pack_codes(out, self.bits)
        return CastResult(
            data=out,
            scale=scale,
            zero=zero,
            tenscale=tcode,
            extra={"bits": self.bits},  # a result's own dict
            **self._fixed,
        )


def plain_input(x: torch.Tensor) -> bool:
    """Whether the general path would cast ``x`` (a plain tensor) as it is, with no copy.

    Contiguous, 16-byte aligned (the kernels' specialization), on the current CUDA device (or
    the CPU, under the interpreter), not a pending negation, strided and not nested.
    """
    if x.is_cuda and x.get_device() != torch.cuda.current_device():
        return False
    return (
        x.is_contiguous()
        and x.data_ptr() & 15 == 0
        and not x.is_neg()
        and not x.is_nested
        and x.layout is torch.strided
    )


def fast_cast(x: torch.Tensor, req: CastRequest) -> FastCast | None:
    """The call object of ``req`` for inputs like ``x``, or None where calls need the general path.

    ``x``: a tensor :func:`plain_input` takes, of the request's shape. None for given random
    bits (rbits), given scale parts, a transform, empty tensors, sparse datatypes (a
    keep-mask), grids past CUDA's limit, and plans whose scale buffers are longer than the
    result's scales.
    """
    if req.rbits is not None or req.given is not None:
        return None  # the general path reads them (a given part is the call's own)
    if req.modes.transform is not None or not x.numel():
        return None  # the general path: a transform fused or composed (TritonEngine.cast_grad)
    rs = 0 if req.seed is None else 1  # _launch._random_source: 1, a Philox seed
    if uses_nd(req):
        if req.dtype.sspec.is_sparse:  # a keep-mask, selected and packed by build_result
            return None
        plan = cached_plan(_launch_2d._PLANS, req, x, rs, _launch_2d._plan)
    else:
        build = _unscaled_plan if req.layout is None else _tiled_plan
        extra: tuple = (True,) if req.layout is None else (True, False)
        plan = cached_plan(_launch._PLANS, req, x, rs, build, *extra)
    if plan.grid[0] > _launch.MAX_PROGRAMS or (
        req.layout is not None and math.prod(plan.scale_shape) != max(plan.scale_count, 1)
    ):
        return None
    return FastCast(req, plan, x.device)


class CallsByRequest:
    """Call objects by request object and device (engine-level casts of checked requests).

    A repeated cast brings the same request object (the engine remembers its requests, a
    DTensor cast's plan its window request); a request that is not the one remembered under
    its ``id`` (an ``id`` reused after the first was freed) makes a new call object. Requests
    with a seed or random bits, made for each call, take the general path.
    """

    __slots__ = ("_calls", "_max")

    def __init__(self, most: int = 256) -> None:
        self._calls: dict[tuple, tuple[CastRequest, FastCast | None, tuple]] = {}
        self._max = most

    def get(
        self,
        x: torch.Tensor,
        req: CastRequest,
        check: Callable[[Any, Any], None] | None = None,
        seeded: CastRequest | None = None,
    ) -> FastCast | None:
        """The call object of ``req`` for plain tensors like ``x``, or None.

        ``check(x, req)`` raises for an ``x`` the request may not cast; it runs before a call
        object is made (later inputs are compared with it by :meth:`FastCast.takes`).
        ``seeded``: ``req`` with a seed (stochastic rounding), made from it for this call:
        the call object is made from it (the kernel's random source) and found by ``req``;
        call it with each call's seed.
        """
        # seeded casts have call objects of their own (the kernel's random source)
        key = (id(req), x.device, seeded is not None)
        hit = self._calls.get(key)
        # made under the launchers' present plan caches and grid limit (tests replace them)
        state = (_launch._PLANS, _launch_2d._PLANS, _launch.MAX_PROGRAMS)
        if hit is not None and hit[0] is req:
            made = hit[2]
            if made[0] is state[0] and made[1] is state[1] and made[2] == state[2]:
                return hit[1]
        if req.rbits is not None or req.seed is not None or not plain_input(x):
            # a request with random bits is made afresh for each call: nothing to reuse
            return None
        if req.given is not None:
            # given scale parts: the general path's launch reads them (``_given``); a
            # request holding them is not kept alive here
            return None
        if seeded is None and req.roundmode is RoundMode.STOCHASTIC:
            return None  # stochastic without a seed: the general path says what is missing
        made = req if seeded is None else seeded
        if check is not None:
            check(x, made)
        if len(self._calls) >= self._max:
            self._calls.clear()
        fast = fast_cast(x, made)
        self._calls[key] = (req, fast, state)
        return fast
