"""The torch engine's casts of one process's window of a DTensor (``_shards.LocalCast``)."""

from __future__ import annotations

import torch

from tcast import CastResult
from tcast.kit import CastRequest

from ._autograd import virtual_with_grad
from ._bits import to_bits
from ._fast import fast_path_applies
from ._run import cast_checked
from ._scale import Given, block_stats
from ._shards import BlockStats
from ._tiles import from_layout

__all__ = ["TORCH_LOCAL", "given_rows"]


class _TorchLocal:
    """Block statistics and casts with given statistics, by this engine (eager)."""

    def stats(self, window: torch.Tensor, req: CastRequest, blocks: bool = True) -> BlockStats:
        """Every block's statistics; ``blocks`` False: two-level scaling's tensor amax alone."""
        if not blocks and req.dtype.is_multiscale:
            if not window.numel():
                return BlockStats(None, None, window.new_zeros((), dtype=torch.int32))
            with torch.no_grad():  # magnitude bits, as block_stats gives them
                amax = window.to(torch.float32).abs().amax()
            return BlockStats(None, None, to_bits(amax) & 0x7FFFFFFF)
        til = from_layout(req.layout)
        with torch.no_grad():
            rows = til.to_blocks(window.to(torch.float32))
            hi, lo = block_stats(rows.reshape(-1, rows.shape[-1]), req, til)
        counts = til.scale_counts_shape
        return BlockStats(
            til.scales_from_blocks(hi.reshape(counts)),
            None if lo is None else til.scales_from_blocks(lo.reshape(counts)),
        )

    def cast(
        self, window: torch.Tensor, req: CastRequest, stats: BlockStats | None, grad: str
    ) -> torch.Tensor | CastResult:
        given = None if stats is None else given_rows(stats, req)
        # the fast path takes a given tensor amax (no block cut), not given block statistics
        own_blocks = given is None or given.hi is None
        fast = own_blocks and req.layout is not None and fast_path_applies(window, req)
        if req.virtual and window.requires_grad and torch.is_grad_enabled():
            return virtual_with_grad(window, req, grad, fast, given=given)
        with torch.no_grad():
            return cast_checked(window, req, fast, given)


def given_rows(stats: BlockStats, req: CastRequest) -> Given:
    """Per-row float32 statistics from the scale-array-shaped magnitude bits (this engine's)."""
    til = from_layout(req.layout)

    def rows(bits: torch.Tensor | None) -> torch.Tensor | None:
        if bits is None:
            return None
        return til.scales_to_blocks(bits).reshape(-1).view(torch.float32)

    tamax = None if stats.tamax is None else stats.tamax.view(torch.float32)
    return Given(rows(stats.hi), rows(stats.lo), tamax)


#: The torch engine's LocalCast.
TORCH_LOCAL = _TorchLocal()
