"""Per-element flags of a golden-vector case: what the cast made observable.

Flags are computed from the case's input ``x`` (as float32, exactly), its element code, the
decoded result ``d`` (float32: the element value times its scale, SEMANTICS.md §2 and §5,
equal to ``upcast``), the block's scale code and the sparsity mask. They depend on nothing
else, so a device that produces codes can compute them the same way.
"""

from __future__ import annotations

import numpy as np

from tcast import DataType, NumberSpec

__all__ = ["FLAGS", "flag_docs", "flags"]

#: Flag bits by name (one byte per element).
FLAGS = {
    "inexact": 0x01,
    "underflow": 0x02,
    "overflow": 0x04,
    "invalid": 0x08,
    "infinite": 0x10,
    "nanblock": 0x20,
    "pruned": 0x40,
    "absent": 0x80,
}

_DOCS = {
    "inexact": ("x is finite, kept, its block is finite, and the decoded result d differs from x"),
    "underflow": (
        "inexact, x != 0, and the element result is tiny: a float element whose code has "
        "exponent field 0 (subnormal or zero), or an int/uint element that decodes to 0"
    ),
    "overflow": (
        "x is finite, kept, its block is finite, and either d is +-Inf or NaN, or the element "
        "code has the largest finite magnitude of the element format (uint: code 0 or the "
        "largest code) and x lies beyond d (|x| > |d|; uint: below d at code 0, above it at "
        "the largest code): the input was out of range and saturated. This is not IEEE's "
        "after-rounding overflow: e4m3fn 450 saturates to 448 and is flagged, though RNE "
        "gives 448 anyway"
    ),
    "invalid": "x is NaN",
    "infinite": "x is +Inf or -Inf",
    "nanblock": (
        "the element's block holds a NaN or Inf among its kept elements: scale is the NaN code, "
        "the element code is 0 and the element decodes to NaN (SEMANTICS.md 5.2)"
    ),
    "pruned": "the element was removed by N-of-M sparsity (code 0, decodes to 0; SEMANTICS.md 6)",
    "absent": (
        "the element lies beyond the extent (LEN) of a partial tile: it is not part of the "
        "tensor, IN and OUT are 0, nothing else is flagged and it is not compared"
    ),
}


#: What the flags mean for codebook elements (added to the definitions of codebook sets).
_CODEBOOK_DOCS = {
    "underflow": " (codebook elements: the entry decodes to 0)",
    "overflow": " (codebook elements: the code of the last entry of a symmetric table, "
    "k = 2^(I-1) - 1 with either sign, or the first or last index of an ascending given "
    "table, and x beyond d)",
}


def flag_docs(dt: DataType | None = None) -> dict:
    """Flag names, bits and definitions, as written into ``header.json`` (for ``dt``'s sets)."""
    cb = dt is not None and dt.nspec.is_codebook
    return {
        name: {
            "bit": f"0x{bit:02X}",
            "meaning": _DOCS[name] + (_CODEBOOK_DOCS.get(name, "") if cb else ""),
        }
        for name, bit in FLAGS.items()
    }


def _magnitude_is_max(codes: np.ndarray, n: NumberSpec) -> np.ndarray:
    c = codes.astype(np.int64)
    if n.is_codebook:  # symmetric tables: sign bit on top, the largest magnitude k = P
        half = 1 << (n.bits - 1)
        return (c & (half - 1)) == half - 1
    if n.is_float:
        return (c & (n.sign_bit - 1)) == n.max_code
    if n.is_int:
        v = np.where(c >> (n.bits - 1) & 1, c - (1 << n.bits), c)
        return np.abs(v) == n.maxint
    return np.zeros(codes.shape, bool)


def flags(
    x: np.ndarray,
    codes: np.ndarray,
    d: np.ndarray,
    dt: DataType,
    nanblock: np.ndarray | None = None,
    keep: np.ndarray | None = None,
) -> np.ndarray:
    """Flag bytes of every element.

    Args:
        x: inputs as float32.
        codes: element codes (same shape).
        d: decoded results as float32 (same shape).
        dt: the datatype.
        nanblock: True where the element's block is non-finite (scaled casts).
        keep: the sparsity keep-mask, or None.

    Returns:
        uint8 array of flag bytes.
    """
    n = dt.nspec
    with np.errstate(invalid="ignore"):  # signaling NaN inputs widen quietly
        x = x.astype(np.float64)
        dd = d.astype(np.float64)
    nanblock = np.zeros(x.shape, bool) if nanblock is None else nanblock
    pruned = np.zeros(x.shape, bool) if keep is None else ~keep
    # a pruned element is not rounded: only 'pruned' (and invalid/infinite) describe it
    finite = np.isfinite(x) & ~nanblock & ~pruned
    with np.errstate(invalid="ignore"):
        inexact = finite & (dd != x)
        if n.is_float:
            tiny = ((codes.astype(np.int64) & (n.sign_bit - 1)) >> n.mbits) == 0
        else:
            tiny = dd == 0
        underflow = inexact & (x != 0) & tiny
        c = codes.astype(np.int64)
        if n.is_uint or (n.is_codebook and not n.symmetric):  # ascending: both ends
            top = (1 << n.bits) - 1 if n.is_codebook else n.max_code
            beyond = ((c == top) & (x > dd)) | ((c == 0) & (x < dd))
        else:
            beyond = _magnitude_is_max(codes, n) & (np.abs(x) > np.abs(dd))
        overflow = finite & (~np.isfinite(dd) | beyond)
    out = np.zeros(x.shape, np.uint8)
    for name, mask in (
        ("inexact", inexact),
        ("underflow", underflow),
        ("overflow", overflow),
        ("invalid", np.isnan(x)),
        ("infinite", np.isinf(x)),
        ("nanblock", nanblock),
        ("pruned", pruned),
    ):
        out |= np.where(mask, np.uint8(FLAGS[name]), np.uint8(0))
    return out
