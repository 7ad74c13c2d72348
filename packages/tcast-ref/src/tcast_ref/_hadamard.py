"""The blockwise randomized Hadamard transform on NumPy arrays (SEMANTICS.md §5.10).

NumPy's float32 additions, subtractions and products are IEEE operations rounded to nearest
even, one rounding each: the butterfly below performs SEMANTICS.md's operations in its
stated order, a whole stage of every group at once.
"""

from __future__ import annotations

import numpy as np

from tcast import Hadamard, SpecError, group_dim

__all__ = ["hadamard"]

#: The one NaN of a transform's result (+NaN, quiet).
_NAN = np.uint32(0x7FC00000).view(np.float32)


def hadamard(x: np.ndarray, h: Hadamard, dim: int = -1, inverse: bool = False) -> np.ndarray:
    """The transform of every group of ``h.size`` consecutive elements of ``x`` along ``dim``.

    Args:
        x: a float32, float16 or bfloat16 array (converted to float32 exactly).
        h: the transform (``tcast.Hadamard``).
        dim: the dimension the groups run along; its length must be a multiple of ``h.size``.
        inverse: the inverse transform (SEMANTICS.md §5.10) instead of the forward one.

    Returns:
        A new float32 array of ``x``'s shape.

    Raises:
        SpecError: for another array dtype, a dimension ``x`` lacks, or a length that is not
            a multiple of the group size.
    """
    a = np.asarray(x)
    if a.dtype.name not in ("float32", "float16", "bfloat16"):
        raise SpecError(f"the Hadamard transform takes float32, float16 or bfloat16, not {a.dtype}")
    dim = group_dim(a.shape, dim, h)
    n = h.size
    v = np.moveaxis(a.astype(np.float32), dim, -1)
    moved = v.shape
    v = v.reshape(-1, n)  # one group per row
    signs = np.asarray(h.signs, np.float32)
    # NaN inputs (signalling ones too) and Inf - Inf are the rule's, not warnings
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        if not inverse:
            v = v * signs  # a sign change: exact
        step = 1
        while step < n:
            # [rows, blocks of 2*step, the two halves, step]: j and j + step are one pair
            p = v.reshape(v.shape[0], n // (2 * step), 2, step)
            lo, hi = p[:, :, 0, :], p[:, :, 1, :]
            v = np.stack([lo + hi, lo - hi], axis=2).reshape(-1, n)
            step *= 2
        shift = h.inverse_shift if inverse else h.shift
        v = v * np.float32(2.0**-shift)
        if inverse:
            v = v * signs
    v = np.where(np.isnan(v), _NAN, v)
    return np.moveaxis(v.reshape(moved), -1, dim).copy()
