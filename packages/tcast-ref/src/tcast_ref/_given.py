"""Given scales, zero points and tensor scales on NumPy arrays (SEMANTICS.md §5.12).

:func:`check_given` checks one part as the engine's ``check_given`` (a float32 view of it);
:func:`given_inputs` lays the parts out as the block rows of a cast and names them as the
kit's given-scale recipe reads them (``gscale``, ``gzero``, ``gtenscale``).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from tcast.kit import (
    GivenScales,
    bad_given_value,
    given_number,
    given_type_error,
    is_given_number,
)

from ._tiles import Tiling

__all__ = ["check_given", "given_inputs"]

#: The dtypes a given part may have: float32 values, widened exactly.
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def check_given(part: object, name: str, *, signed: bool) -> np.ndarray:
    """One given part as a float32 NumPy array (a real number: an array of shape ``()``).

    Raises:
        SpecError: for another type or dtype (float64 is refused, not rounded), a NaN or
            infinite value, or a negative scale, naming the part and the first bad index.
    """
    if isinstance(part, np.ndarray):
        if part.dtype not in _FLOAT_DTYPES:
            raise given_type_error(name, part, "NumPy arrays")
        a = part.astype(np.float32)
    elif is_given_number(part):
        a = np.asarray(np.float32(given_number(part, name)))
    else:
        raise given_type_error(name, part, "NumPy arrays")
    bad = ~np.isfinite(a) if signed else ~(np.isfinite(a) & (a >= 0))
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise bad_given_value(name, idx, float(a[idx]), signed)
    return a


def given_inputs(given: GivenScales, til: Tiling, nrows: int) -> dict[str, np.ndarray]:
    """The given parts as recipe inputs: one float32 value per block row (``gtenscale``: one).

    ``nrows``: the rows of the cast's block matrix (``Tiling.to_blocks`` order).
    """
    out = {}
    for name, key in (("scale", "gscale"), ("zero", "gzero")):
        part = getattr(given, name)
        if part is not None:
            out[key] = np.ascontiguousarray(til.scales_to_blocks(part)).reshape(nrows)
    if given.tensor_scale is not None:
        out["gtenscale"] = np.float32(given.tensor_scale)
    return out
