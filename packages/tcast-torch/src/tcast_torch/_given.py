"""Given scales, zero points and tensor scales on torch tensors (SEMANTICS.md §5.12).

:func:`check_given` checks one part as the engine's ``check_given``: a float32 tensor on the
input's device, whose values are finite (and not negative for scales). The cast reads the
parts through the kit's given-scale recipe (``_scale.make_plan``).
"""

from __future__ import annotations

from typing import Any

import torch

from tcast import SpecError, UnsupportedError
from tcast.kit import bad_given_value, given_number, given_type_error, is_given_number

from ._accept import is_dtensor

__all__ = ["check_given"]

#: The dtypes a given part may have: float32 values, widened exactly.
_FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def check_given(x: Any, part: object, name: str, *, signed: bool) -> torch.Tensor:
    """One given part as a float32 tensor on x's device (a real number: a 0-d tensor).

    Raises:
        UnsupportedError: for a DTensor ``x`` or ``part``, or a cast traced by torch.compile.
        SpecError: for another type, dtype (float64 is refused, not rounded) or device, a NaN
            or infinite value, or a negative scale, naming the part and the first bad index.
    """
    if torch.compiler.is_compiling() or is_dtensor(x) or is_dtensor(part):
        raise UnsupportedError(
            f"tcast_torch casts with a given {name} eagerly and on plain tensors only: not "
            f"inside torch.compile and not of DTensors (SEMANTICS.md §5.12)"
        )
    if isinstance(part, torch.Tensor):
        if part.dtype not in _FLOAT_DTYPES:
            raise given_type_error(name, part, "tensors")
        if part.device != x.device:
            raise SpecError(f"{name} is on {part.device}, x on {x.device}: move it to x's device")
        a = part.to(torch.float32)
    elif is_given_number(part):
        a = torch.tensor(given_number(part, name), dtype=torch.float32, device=x.device)
    else:
        raise given_type_error(name, part, "tensors")
    bad = ~torch.isfinite(a) if signed else ~(torch.isfinite(a) & (a >= 0))
    # a meta tensor carries no values to check (its cast gives meta results)
    if a.device.type != "meta" and bool(bad.any()):
        idx = tuple(int(i) for i in torch.nonzero(bad)[0]) if a.ndim else ()
        raise bad_given_value(name, idx, float(a[idx]), signed)
    return a
