"""The cast of one plain tensor (not a DTensor) by the kernels.

Eager: ``_cast_launch.run_cast``. While Dynamo traces: the ``tcast_triton::cast`` custom op
(``_ops``). A virtual cast of a tensor that requires grad is differentiable
(``tcast_torch._autograd``). The engine object (``_engine``) and its casts of a DTensor's
windows (``_local``) both cast plain tensors through here.
"""

from __future__ import annotations

import torch

from tcast import CastResult
from tcast.kit import CastRequest
from tcast_torch._autograd import virtual_with_grad
from tcast_torch._engine import engine as torch_engine

from ._cast_launch import run_cast
from ._device import on_device
from ._fallback import relabel
from ._ops import cast_traced

__all__ = ["cast_eager", "cast_plain", "cast_values"]


def cast_plain(x: torch.Tensor, request: CastRequest, grad: str) -> torch.Tensor | CastResult:
    """The cast; a virtual cast of a tensor that requires grad is differentiable.

    Gradients as ``tcast_torch`` gives them (``grad``: ``"ste"`` or ``"saturate"``) around
    the kernels' values (:func:`cast_values`).
    """
    if request.virtual and x.requires_grad and torch.is_grad_enabled():
        return virtual_with_grad(x, request, grad, False, run=cast_values)
    return cast_values(x, request)


def cast_values(x: torch.Tensor, request: CastRequest) -> torch.Tensor | CastResult:
    """The cast's values: through the custom op while Dynamo traces, else :func:`cast_eager`."""
    if torch.compiler.is_compiling():
        return cast_traced(x, request)
    return cast_eager(x, request)


def cast_eager(x: torch.Tensor, request: CastRequest) -> torch.Tensor | CastResult:
    """The cast by the Triton kernels (``_cast_launch.run_cast``), outside any trace.

    Empty inputs, and the rare shapes whose grid would pass CUDA's 2**31 - 1 programs
    (``_launch.MAX_PROGRAMS``), are cast by ``tcast_torch`` (the same bits).
    """
    out = None
    if x.numel():
        with on_device(x):
            out = run_cast(x, request)
    return relabel(torch_engine.run(x, request)) if out is None else out
