"""NumPy and ml_dtypes dtypes for tcast codes, by the names of :func:`tcast.kit.native_name`.

Which dtype holds a format's codes as they are is tcast's rule; this module maps its names to
the dtype objects, so that the engine's result operations view codes without a copy
(:func:`tcast.native`). ml_dtypes' sub-byte dtypes (``float4_e2m1fn``, ``float6_e3m2fn``,
``int4`` ...) hold one code in the low bits of a byte, as an actual result stores it; no
NumPy dtype packs two codes in a byte, so compress streams of sub-byte codes stay codes.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from tcast.kit import NATIVE_NAMES

__all__ = ["NUMPY_NATIVE", "numpy_native_view"]

#: The NumPy dtype of each name :func:`tcast.kit.native_name` gives (ml_dtypes or NumPy's own;
#: a name neither library defines is left out).
NUMPY_NATIVE: dict[str, np.dtype] = {
    name: np.dtype(getattr(ml_dtypes, name, None) or getattr(np, name))
    for name in NATIVE_NAMES
    if hasattr(ml_dtypes, name) or hasattr(np, name)
}


def numpy_native_view(a: np.ndarray, name: str) -> np.ndarray | None:
    """``a``'s codes viewed as the dtype ``name`` (:data:`NUMPY_NATIVE`), or None.

    Codes of the dtype's width are viewed as they are; a 1-D uint8 stream of wider codes (a
    compress result's data, little-endian) becomes one element per code. None where no
    dtype has that name or the bytes do not fill whole codes.
    """
    target = NUMPY_NATIVE.get(name)
    if target is None:
        return None
    if a.itemsize == target.itemsize:
        return a.view(target)
    if a.dtype != np.uint8 or a.ndim != 1 or a.size % target.itemsize:
        return None
    return np.ascontiguousarray(a).view(target.newbyteorder("<"))
