"""The cast of one plain tensor (not a DTensor) by the kernels.

Eager: ``_cast_launch.run_cast``. While Dynamo traces: the ``traced`` function the engine
gives (its ``tcast_triton::cast`` op, ``_engine.CAST_OPS``). A virtual cast of a tensor that
requires grad is differentiable (``tcast_torch.toolkit.virtual_with_grad``). The engine
object (``_engine``) and its casts of a DTensor's windows (``_local``) both cast plain
tensors through here.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tcast import CastResult
from tcast.kit import CastRequest
from tcast_torch.toolkit import virtual_with_grad

from ._cast_launch import run_cast
from ._device import on_device
from ._fallback import relabel, torch_cast

__all__ = ["Traced", "cast_eager", "cast_plain"]

#: The cast of a checked request while Dynamo traces (through the engine's custom op).
Traced = Callable[[torch.Tensor, CastRequest], "torch.Tensor | CastResult"]


def cast_plain(
    x: torch.Tensor, request: CastRequest, grad: str, traced: Traced
) -> torch.Tensor | CastResult:
    """The cast; a virtual cast of a tensor that requires grad is differentiable.

    Gradients as ``tcast_torch`` gives them (``grad``: ``"ste"`` or ``"saturate"``) around
    the kernels' values: through ``traced`` while Dynamo traces, else :func:`cast_eager`.
    """

    def values(v: torch.Tensor, r: CastRequest) -> torch.Tensor | CastResult:
        if torch.compiler.is_compiling():
            return traced(v, r)
        return cast_eager(v, r)

    if request.virtual and x.requires_grad and torch.is_grad_enabled():
        return virtual_with_grad(x, request, grad, False, run=values)
    return values(x, request)


def cast_eager(x: torch.Tensor, request: CastRequest) -> torch.Tensor | CastResult:
    """The cast by the Triton kernels (``_cast_launch.run_cast``), outside any trace.

    Empty inputs, and the rare shapes whose grid would pass CUDA's 2**31 - 1 programs
    (``_launch.MAX_PROGRAMS``), are cast by ``tcast_torch`` (the same bits).
    """
    out = None
    if x.numel():
        with on_device(x):
            out = run_cast(x, request)
    return relabel(torch_cast(x, request)) if out is None else out
