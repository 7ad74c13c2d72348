"""A cast's transform steps on torch tensors (``tcast.kit.TransformOps``, SEMANTICS.md §5.11)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tcast import Hadamard
from tcast.kit import CastRequest, cast_transformed

from ._autograd import _VirtualCast
from ._hadamard import hadamard

__all__ = ["TORCH_TRANSFORMS", "TorchTransformOps", "cast_transformed_grad"]

#: The torch dtype of each input dtype name.
_INPUT_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
#: The canonical quiet +NaN bits of the 16-bit input dtypes.
_QUIET_NAN = {torch.float16: 0x7E00, torch.bfloat16: 0x7FC0}


class TorchTransformOps:
    """The transform, its inverse and the rounding to an input dtype, in torch operations.

    Differentiable: a virtual cast's gradient passes through the transform and its inverse
    (both linear). An engine that sets ``transforms`` delegates its
    ``hadamard``/``round_to_input``/``widen`` here.
    """

    def hadamard(self, x: torch.Tensor, h: Hadamard, dim: int, inverse: bool) -> torch.Tensor:
        """:func:`tcast_torch.hadamard` (float32; DTensors refused)."""
        return hadamard(x, h, dim, inverse)

    def round_to_input(self, v: torch.Tensor, input_dtype: str) -> torch.Tensor:
        """float32 values rounded to nearest even in ``input_dtype`` (torch's conversion).

        A NaN becomes the input dtype's canonical +NaN (SEMANTICS.md §7; the transform's
        NaNs are +NaN): torch's conversion of a NaN to bfloat16 is 0xFFFF on the CPU.
        """
        dtype = _INPUT_DTYPES[input_dtype]
        out = v.to(dtype)
        if dtype is torch.float32:
            return out
        nan = torch.full((), _QUIET_NAN[dtype], dtype=torch.int16, device=v.device).view(dtype)
        return torch.where(torch.isnan(out), nan, out)

    def widen(self, v: torch.Tensor) -> torch.Tensor:
        """A tensor of an input dtype as float32 (exact); a NaN as +NaN ``0x7FC00000``.

        CUDA widens a float16 NaN to ``0x7FFFFFFF``; the canonical NaNs this widens (of
        :meth:`round_to_input`) are positive.
        """
        out = v.to(torch.float32)
        if v.dtype is torch.float32:
            return out
        nan = torch.full((), 0x7FC00000, dtype=torch.int32, device=v.device).view(torch.float32)
        return torch.where(torch.isnan(out), nan, out)


#: The steps both torch-tensor engines use.
TORCH_TRANSFORMS = TorchTransformOps()


def cast_transformed_grad(
    ops: Any, run: Callable[[torch.Tensor, CastRequest], Any], x: torch.Tensor,
    req: CastRequest, grad: str,
) -> Any:  # fmt: skip
    """``tcast.kit.cast_transformed`` with the gradient option of a virtual cast.

    ``grad="ste"``: the straight-through gradient, exactly the incoming one (the transform and
    its inverse are not differentiated: their float32 roundings would reach the gradient).
    ``grad="saturate"``: autograd through the transform, the cast's mask on the transformed
    values and the inverse (linear, their roundings in float32).
    """
    if req.virtual and grad == "ste" and x.requires_grad and torch.is_grad_enabled():
        return _VirtualCast.apply(x, lambda v: cast_transformed(ops, run, v, req), None)
    return cast_transformed(ops, run, x, req)
