"""Launcher of the N-d tile kernel (``_kernels_2d``): 2-D tiles and N-of-M sparsity.

Forms the canonical view ``[A, L1, B, L2, NC]`` of a request's block layout, sizes the
kernel's block from the tile sizes (static power-of-two buckets, never autotuning), launches
and assembles the result. Plans are cached with the 1-D launcher's key and limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch
import triton

from tcast import CastResult, DataType
from tcast.kit import CastRequest

from ._fastlaunch import Launch
from ._given import given_bits, given_kw
from ._kernels import _amax_pass
from ._kernels_2d import _cast_nd
from ._launch import (
    _IN_CODES,
    _LAUNCH_OPTS,
    MAX_PROGRAMS,
    _needs_i64,
    _random_source,
    cached_plan,
    element_output,
    hw_fp8,
    launch_scaled,
    scaled_fields,
    scaled_kw,
    scaled_parts,
    scaled_result,
    tensor_amax,
)

__all__ = ["nd_supported", "run_cast_nd"]

#: Elements of one kernel block (a program's chunk) and warps per full block (benchmark
#: tunables).
ND_ELEMS = 4096
#: H200 sweep (bench/sweep_col.py --nd, 16384^2 bfloat16, mxfp8_2d): 2 warps 0.225 ms
#: (codes) / 0.274 (values), 4 warps 0.236 / 0.283, 8 warps 0.268 / 0.309.
ND_WARPS = 2
#: Lanes (columns of NC) taken before the tile's own axes grow, for coalesced loads.
_MIN_LANES = 8
_PLANS: dict[tuple, _NdPlan] = {}


def nd_supported(dt: DataType) -> bool:
    """Whether the N-d kernel casts ``dt``: two tile segments or sparsity, no subtile."""
    ss = dt.sspec
    if ss is None or not ss.tiles or ss.has_subtile:
        return False
    return len(ss.tiles) == 2 or ss.is_sparse


@dataclass(frozen=True)
class _NdPlan:
    """One launch of ``_cast_nd`` (everything that depends only on the cache key)."""

    grid: tuple[int, ...]
    sizes: tuple[int, ...]
    kw: dict
    out_bytes: int
    scale_bytes: int
    zero_bytes: int
    tcode_bytes: int
    scale_count: int
    scale_shape: tuple[int, ...]
    amax_grid: tuple[int, ...]
    amax_kw: dict
    sparse: bool
    # the N-d kernel writes plain scales; a blocked request is laid out by the kit
    blocked: tuple[int, ...] = ()
    padded: bool = False

    @cached_property
    def launch(self) -> Launch:
        """The kernel with its compile-time arguments (compiled once per specialization)."""
        return Launch(_cast_nd, self.kw)

    @cached_property
    def amax_launch(self) -> Launch:
        """The amax pre-pass likewise."""
        return Launch(_amax_pass, self.amax_kw)


def _grow(sizes: list[int], want: list[int], order: list[int]) -> list[int]:
    """Double each axis in ``order`` up to ``want`` while the block stays within ND_ELEMS."""
    for i in order:
        while sizes[i] * 2 <= want[i] and math.prod(sizes) * 2 <= ND_ELEMS:
            sizes[i] *= 2
    return sizes


def _view(req: CastRequest) -> tuple:
    """(A, L1, B, L2, NC), tile lengths, channel flags and sparse axis (0, 1 or 2)."""
    lay, ss = req.layout, req.dtype.sspec
    shape = lay.shape
    chan = {d: t.is_channel for d, t in zip(lay.dims, ss.tiles, strict=True)}
    size = dict(zip(lay.dims, lay.sizes, strict=True))
    sdim = lay.dims[lay.sparse] if lay.sparse is not None else None
    if len(lay.dims) == 2:
        d1, d2 = sorted(lay.dims)
        view = (
            math.prod(shape[:d1]),
            shape[d1],
            math.prod(shape[d1 + 1 : d2]),
            shape[d2],
            math.prod(shape[d2 + 1 :]),
        )
        tiles = (size[d1], size[d2])
        chans = (chan[d1], chan[d2])
        sp = 0 if sdim is None else 1 if sdim == d1 else 2
        return view, tiles, chans, sp
    (d,) = lay.dims
    outer, length, inner = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1 :])
    dense = sdim is None
    if inner == 1:  # tiles along the last dimension: the second segment of [outer, 1, 1, L, 1]
        return (outer, 1, 1, length, 1), (1, size[d]), (False, chan[d]), 0 if dense else 2
    return (outer, length, 1, 1, inner), (size[d], 1), (chan[d], False), 0 if dense else 1


def _plan(req: CastRequest, xc: torch.Tensor, rs: int, gp: int = 0) -> _NdPlan:
    """The plan of ``req`` on ``xc``; ``gp``: its given scale parts (``_given.given_bits``)."""
    dt, lay = req.dtype, req.layout
    numel = xc.numel()
    in_code = _IN_CODES[xc.dtype]
    i64 = _needs_i64(xc)
    (a_, l1, b_, l2, nc), (t1, t2), (ch1, ch2), sp = _view(req)
    sm = lay.sparse_m
    row = nc == 1
    n1, n2 = triton.cdiv(l1, t1), triton.cdiv(l2, t2)
    # wanted block lengths: whole tiles (a channel: its length's power-of-two bucket)
    w1 = min(triton.next_power_of_2(max(t1, 1)), 1024)
    w2 = min(triton.next_power_of_2(max(t2, 1)), 1024)
    m1 = sm if sp == 1 else 1  # a chunk holds whole sparsity groups
    m2 = sm if sp == 2 else 1
    if row:
        d0, d1, d2 = _grow([m1, 1, m2], [w1, triton.next_power_of_2(n2), w2], [2, 0, 1])
        nq = triton.cdiv(n2, d1)
        grid = a_ * n1 * b_ * nq
        p2 = d2
    else:
        lanes = triton.next_power_of_2(nc)
        d0, d1, d2 = _grow([m1, m2, 1], [w1, w2, min(lanes, _MIN_LANES)], [2])
        d0, d1, d2 = _grow([d0, d1, d2], [w1, w2, lanes], [1, 0, 2])
        nq = triton.cdiv(nc, d2)
        grid = a_ * n1 * b_ * n2 * nq
        p2 = d1
    # a channel's length is a tensor size: run time, walked in chunks
    loop = ch1 or ch2 or d0 < t1 or p2 < t2
    even1 = not ch1 and d0 == t1 and l1 % t1 == 0
    even2 = not ch2 and p2 == t2 and l2 % t2 == 0
    kw = dict(
        ROW=row,
        D0=d0,
        D1=d1,
        D2=d2,
        TK1=0 if ch1 else t1,
        TK2=0 if ch2 else t2,
        EVEN1=even1,
        EVEN2=even2,
        EVENQ=(n2 % d1 == 0) if row else (nc % d2 == 0),
        LOOP=loop,
        SP=sp,
        SM=sm,
        SN=lay.sparse_n,
        I64=i64,
        **scaled_kw(req, in_code, rs, hw_fp8(xc.device)),
        **given_kw(dt, gp),
        num_warps=ND_WARPS if d0 * d1 * d2 >= 4096 else min(2, ND_WARPS),
        **_LAUNCH_OPTS,
    )
    return _NdPlan(
        grid=(grid if numel else 0,),
        sizes=(a_, l1, b_, l2, nc, t1, t2, n1, n2, nq),
        kw=kw,
        sparse=sm > 0,
        **scaled_fields(req, xc, amax=tensor_amax(dt, gp), kernel_blocked=False),
    )


def run_cast_nd(
    xc: torch.Tensor, xin: torch.Tensor, req: CastRequest, given: torch.Tensor | None = None
):
    """The cast of a checked request whose datatype :func:`nd_supported` takes.

    Args:
        xc: the input, contiguous.
        xin: its bits (an int16 view of 16-bit inputs; ``xc`` itself for float32).
        req: the request.
        given: the tensor maxima from elsewhere (``_cast_launch.run_cast``; three only: this
            kernel takes no given tile statistics), or None.
    """
    rs, seed, rb = _random_source(req, xin)
    # given scale parts (SEMANTICS.md §5.12): a plan of their own, read by the kernel
    extra = () if req.given is None else (given_bits(req.given),)
    plan = cached_plan(_PLANS, req, xc, rs, _plan, *extra)
    if plan.grid[0] > MAX_PROGRAMS:
        return None
    return _launch(plan, xc, xin, req, seed, rb, given)


def _launch(
    plan: _NdPlan, xc, xin, req: CastRequest, seed: int, rb, given: torch.Tensor | None = None
) -> torch.Tensor | CastResult:
    """Allocate the outputs, run the amax pass (two-level scaling) and the kernel, assemble."""
    result, out = element_output(plan, xc)
    keep = None
    if plan.sparse and not req.virtual:
        keep = torch.empty(xc.shape, dtype=torch.bool, device=xc.device)
    scale, zero, tcode, stats = scaled_parts(plan, xc, xin, given)
    if plan.grid[0]:
        args = (
            xin,
            rb,
            out,
            out if keep is None else keep.view(torch.uint8),
            scale,
            scale if zero is None else zero,
            scale if tcode is None else tcode,
            stats,
            *plan.sizes,
            seed,
            req.modes.stream,
        )
        launch_scaled(plan, args, req)
    return scaled_result(plan, req, result, scale, zero, tcode, mask=keep)
