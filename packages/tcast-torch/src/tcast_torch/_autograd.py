"""Gradients of the virtual cast (fake quantization for training).

Rounding has a zero derivative almost everywhere, so training uses a straight-through
estimator: the backward pass hands the incoming gradient through unchanged (``grad="ste"``,
the default). With ``grad="saturate"`` the gradient is zero where the cast clipped the input:
where the input, scaled by its block's encode multiplier (SEMANTICS.md §5), lies beyond the
element range (``|x * r| > M``; for uint data ``x * r + z`` outside ``[0, maxint]``), or,
unscaled, where ``|x| > maxfloat`` (infinities included); NaN inputs get a zero gradient too.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tcast.kit import CastRequest

from ._run import cast_checked, scaled_inputs
from ._scale import Given, f32, make_plan
from ._tiles import from_layout

__all__ = ["GRAD_MODES", "clipped_mask", "virtual_with_grad"]

#: The gradient options of a virtual cast.
GRAD_MODES = ("ste", "saturate")


def clipped_mask(x32: torch.Tensor, req: CastRequest, given: Given | None = None) -> torch.Tensor:
    """True where the cast clips (saturates) the float32 input, in x's shape.

    ``given``: the block statistics of the cast (a shard's window, ``_local``).
    """
    n = req.dtype.nspec
    if req.layout is None:
        return ~(x32.abs() <= f32(n.max_value))  # NaN counts as clipped
    til = from_layout(req.layout)
    blocks = til.to_blocks(x32)
    rows = blocks.reshape(-1, blocks.shape[-1])
    plan = make_plan(rows, req, til, given=given)
    xs = scaled_inputs(rows, plan, req.rules)  # the same scaled inputs the encoder rounds
    if n.is_uint:
        inside = (xs >= 0) & (xs <= f32(n.maxint))
    elif n.is_int:
        inside = xs.abs() <= f32(n.maxint)
    else:
        inside = xs.abs() <= req.rules.elem_max_f32
    return til.from_blocks((~inside).reshape(blocks.shape)).contiguous()


class _VirtualCast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, run, mask_fn):
        with torch.no_grad():
            y = run(x.detach())
            if torch.compiler.is_compiling():
                # Traced, the forward may return its intermediates too (Dynamo of torch 2.11
                # makes every one an output of the traced function), and a tensor that is
                # returned twice gets the gradient of its last place while backward reads the
                # first: y must be a tensor of its own, which the cast's last step need not
                # make (``t.contiguous()`` of a contiguous t is t). Eager runs copy nothing.
                y = y.clone()
            ctx.clip = None if mask_fn is None else mask_fn(x.detach())
        return y

    @staticmethod
    def backward(ctx, grad):
        if ctx.clip is not None:
            grad = torch.where(ctx.clip, 0, grad)
        return grad, None, None


def virtual_with_grad(
    x: torch.Tensor,
    req: CastRequest,
    grad: str,
    fast: bool,
    run: Callable | None = None,
    given: Given | None = None,
) -> torch.Tensor:
    """The virtual cast of a checked request as a differentiable function of x.

    ``fast`` is the caller's decision on the fast path (``_fast.fast_path_applies``);
    ``run(v, req)`` computes the values instead of this engine (the Triton engine's kernels:
    the same bits, the same gradients); ``given`` the block statistics to use (a shard's
    window: ``_local``).
    """
    if run is None:

        def values(v):
            return cast_checked(v, req, fast, given)

    else:

        def values(v):
            return run(v, req)

    mask_fn = None
    if grad == "saturate":

        def mask_fn(v):
            return clipped_mask(v.to(torch.float32), req, given)

    return _VirtualCast.apply(x, values, mask_fn)
