"""The blockwise randomized Hadamard transform on torch tensors (SEMANTICS.md §5.10).

torch's float32 additions, subtractions and products are IEEE operations rounded to nearest
even, one rounding each (CPU and CUDA, no contraction in eager mode): the butterfly below
performs SEMANTICS.md's operations in its stated order, a whole stage of every group at once.
"""

from __future__ import annotations

import math

import torch

from tcast import Hadamard, SpecError, UnsupportedError, group_dim

from ._accept import is_dtensor

__all__ = ["hadamard"]

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)
_QUIET_NAN = 0x7FC00000  # SEMANTICS.md §5.10: the one NaN a transform returns


def hadamard(x: torch.Tensor, h: Hadamard, dim: int = -1, inverse: bool = False) -> torch.Tensor:
    """The transform of every group of ``h.size`` consecutive elements of ``x`` along ``dim``.

    Args:
        x: a float32, float16 or bfloat16 tensor (converted to float32 exactly).
        h: the transform (``tcast.Hadamard``).
        dim: the dimension the groups run along; its length must be a multiple of ``h.size``.
        inverse: the inverse transform (SEMANTICS.md §5.10) instead of the forward one.

    Returns:
        A new contiguous float32 tensor of ``x``'s shape and device.

    Raises:
        SpecError: for a non-tensor, another dtype, a dimension ``x`` lacks, or a length
            that is not a multiple of the group size.
        UnsupportedError: for a DTensor.
    """
    if is_dtensor(x):
        raise UnsupportedError(
            "the Hadamard transform takes plain tensors, not a DTensor: transform each "
            "process's x.to_local() along a dimension whose shards hold whole groups"
        )
    if not isinstance(x, torch.Tensor) or x.dtype not in _FLOATS:
        what = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise SpecError(f"the Hadamard transform takes float32, float16 or bfloat16, not {what}")
    dim = group_dim(tuple(x.shape), dim, h)
    n = h.size
    v = x.to(torch.float32)
    shape = v.shape
    # [groups along dim and before it, n, everything after dim]: the stages below slice the
    # middle axis, so every operation reads and writes runs of `inner` contiguous elements
    # (moving dim last would transpose the tensor twice)
    inner = math.prod(shape[dim + 1 :])
    v = v.reshape(-1, n, inner)
    signs = torch.tensor(h.signs, dtype=torch.float32, device=x.device).view(1, n, 1)
    if not inverse:
        v = v * signs  # a sign change: exact
    step = 1
    while step < n:
        # [groups, blocks of 2*step, the two halves, step, inner]: j and j + step are a pair
        p = v.reshape(v.shape[0], n // (2 * step), 2, step, inner)
        lo, hi = p[:, :, 0], p[:, :, 1]
        v = torch.stack([lo + hi, lo - hi], dim=2).reshape(-1, n, inner)
        step *= 2
    v = v * (2.0 ** -(h.inverse_shift if inverse else h.shift))
    if inverse:
        v = v * signs
    # Every NaN becomes 0x7FC00000, selected from a tensor holding those bits (a select
    # copies them; a NaN made by CUDA arithmetic is 0x7FFFFFFF). A select, not integer
    # views: the transform is differentiable (linear), a cast's gradient passes through it.
    quiet = torch.full((), _QUIET_NAN, dtype=torch.int32, device=v.device).view(torch.float32)
    v = torch.where(torch.isnan(v), quiet, v)
    return v.reshape(shape)
