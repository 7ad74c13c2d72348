"""The Triton engine's casts of one process's window of a DTensor (a toolkit ``LocalCast``).

``tcast_torch.toolkit.cast_dtensor`` does the sharding (windows, collectives, placements);
this module is the array work, by the Triton kernels:

* block statistics are the kernels' own (``_kernels._block_max``): per block the maximum of
  the magnitude bits ``mx``, and for uint data of the positive bits ``hi`` and of the
  negative magnitude bits ``lo`` (``mx = max(hi, lo)`` there). In a ``BlockStats``:
  ``hi`` is ``mx`` (uint data: ``hi``), ``lo`` uint's ``lo``, ``tamax`` the tensor's
  ``mx``. Each is a maximum over elements, so an integer MAX over the shards gives the
  whole block's, which the kernels then read instead of their own (``_cast_launch.run_cast``'s
  ``given``): the statistics of a tiled window by ``_kernels._tile_stats``, of a tensor
  scale and two-level scaling's tensor amax by the amax pass;
* requests of the N-d kernel (2-D tiles, sparsity; ``_launch.uses_nd``), which reads no
  given tile statistics, take the torch engine's statistics and cast (``toolkit.TORCH_LOCAL``,
  the same bits) where a block is cut by a shard boundary; with uncut blocks they are the
  Triton kernels' (two-level scaling's tensor amax given);
* the saturate gradient's mask (``toolkit.virtual_with_grad``) takes the statistics in the
  torch engine's terms (:func:`_torch_stats`).
"""

from __future__ import annotations

import torch

from tcast import CastResult
from tcast.kit import CastRequest
from tcast_torch.toolkit import TORCH_LOCAL, BlockStats, given_rows, resolved, virtual_with_grad

from ._cast_launch import run_cast
from ._device import on_device
from ._fallback import relabel
from ._fastcast import CallsByRequest, FastCast
from ._launch import tensor_maxima, tile_stats, uses_nd
from ._plain import Traced, cast_plain

__all__ = ["TritonLocal"]

#: Bits of float32 +Inf: magnitude bits above it are NaN.
_INF_BITS = 0x7F800000
#: Bits of the float32 NaN the torch engine's statistics hold for a block with a NaN.
_NAN_BITS = 0x7FC00000


class TritonLocal:
    """Block statistics and casts with given statistics, by the Triton kernels.

    Args:
        traced: the engine's cast while Dynamo traces (``_plain.cast_plain``'s).
    """

    def __init__(self, traced: Traced) -> None:
        self.traced = traced
        # call objects of the windows' requests (a DTensor cast's plan keeps its window
        # request, so a repeated cast brings the same object)
        self._calls = CallsByRequest()

    def stats(self, window: torch.Tensor, req: CastRequest, blocks: bool = True) -> BlockStats:
        """The window's statistics (``blocks`` False: two-level scaling's tensor amax only)."""
        layout = req.layout
        if blocks and uses_nd(req):
            return TORCH_LOCAL.stats(window, req, blocks)
        u = req.dtype.nspec.is_uint
        with on_device(window), torch.no_grad():
            if not layout.dims:  # a tensor scale: the one block is the tensor
                m = tensor_maxima(window, req)
                shape = tuple(layout.scale_shape)
                if u:
                    return BlockStats(m[1].reshape(shape), m[2].reshape(shape))
                return BlockStats(m[0].reshape(shape))
            if not blocks:
                return BlockStats(None, None, tensor_maxima(window, req)[0].reshape(()))
            buf = tile_stats(window, req)
            if buf is None:
                # a grid past CUDA's limit: the torch engine's statistics; run_cast refuses
                # the same grid in cast(), which then casts by the torch engine too
                return TORCH_LOCAL.stats(window, req, blocks)
            n = (buf.numel() - 3) // 3
            mx, hi, lo = buf[3 : 3 + n], buf[3 + n : 3 + 2 * n], buf[3 + 2 * n :]
            shape = tuple(layout.scale_shape)
            tamax = None
            if req.dtype.is_multiscale:
                tamax = mx.max() if n else mx.new_zeros(())
            if u:
                return BlockStats(hi.reshape(shape), lo.reshape(shape), tamax)
            return BlockStats(mx.reshape(shape), None, tamax)

    def call_for(self, window: torch.Tensor, req: CastRequest) -> FastCast | None:
        """``LocalCast.call_for``: the call object (``_fastcast``) of windows like this one.

        None for a seeded request (its seed is each call's), tensor subclasses, inside a
        trace, and where the call objects do not serve the request or window.
        """
        if type(window) is not torch.Tensor or req.seed is not None:
            return None
        if torch.compiler.is_compiling():
            return None
        return self._calls.get(window, req)

    def cast(
        self, window: torch.Tensor, req: CastRequest, stats: BlockStats | None, grad: str
    ) -> torch.Tensor | CastResult:
        """The cast of the window with these statistics (None: its own, as the engine casts)."""
        if stats is None:
            if type(window) is torch.Tensor and not torch.compiler.is_compiling():
                fast = self._calls.get(window, req)
                if fast is not None and fast.takes(window):
                    return fast(window) if req.seed is None else fast(window, req.seed)
            return cast_plain(resolved(window), req, grad, self.traced)
        if stats.hi is not None and uses_nd(req):
            return relabel(TORCH_LOCAL.cast(window, req, stats, grad))
        given = _given_buffer(stats, req)

        def values(v: torch.Tensor, r: CastRequest) -> torch.Tensor | CastResult:
            out = None
            if v.numel():
                with on_device(v):
                    out = run_cast(v, r, given)
            if out is None:  # empty, or a grid past CUDA's limit: the same bits by torch
                with torch.no_grad():
                    out = TORCH_LOCAL.cast(v.detach(), r, _torch_stats(v, r, stats), "ste")
                return relabel(out)
            return out

        if req.virtual and window.requires_grad and torch.is_grad_enabled():
            rows = None
            if grad == "saturate":
                rows = given_rows(_torch_stats(window.detach(), req, stats), req)
            return virtual_with_grad(window, req, grad, False, run=values, given=rows)
        with torch.no_grad():
            return values(window, req)


def _given_buffer(stats: BlockStats, req: CastRequest) -> torch.Tensor:
    """The kernels' ``given`` buffer (``_cast_launch.run_cast``) of the reduced statistics."""
    u = req.dtype.nspec.is_uint
    if stats.hi is None:  # the tensor amax alone (two-level scaling, no block cut)
        t = stats.tamax.reshape(1)
        return torch.cat([t, t.new_zeros(2)])
    hi = stats.hi.reshape(-1)
    lo = stats.lo.reshape(-1) if u else None
    if not req.layout.dims:  # a tensor scale: the amax pass's three maxima
        if u:
            return torch.cat([torch.maximum(hi, lo), hi, lo])
        return torch.cat([hi, hi.new_zeros(2)])
    head = hi.new_zeros(3)
    if stats.tamax is not None:
        head[0] = stats.tamax
    if u:
        return torch.cat([head, torch.maximum(hi, lo), hi, lo])
    return torch.cat([head, hi, hi, hi])  # _block_max: hi = lo = mx for signed data


def _torch_stats(window: torch.Tensor, req: CastRequest, stats: BlockStats) -> BlockStats:
    """The same statistics in the torch engine's terms (``toolkit.TORCH_LOCAL.stats``).

    Only uint data differ: the torch engine's ``hi`` and ``lo`` are both NaN for a block
    with a NaN of either sign. The tensor amax alone: the window's own block statistics
    (no block is cut) with it.
    """
    if stats.hi is None:
        own = TORCH_LOCAL.stats(window, req)
        return BlockStats(own.hi, own.lo, stats.tamax)
    if not req.dtype.nspec.is_uint:
        return stats
    nan = torch.maximum(stats.hi, stats.lo) > _INF_BITS
    fill = torch.full_like(stats.hi, _NAN_BITS)
    hi = torch.where(nan, fill, stats.hi)
    lo = torch.where(nan, fill, stats.lo)
    return BlockStats(hi, lo, stats.tamax)
