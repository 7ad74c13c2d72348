"""Given scales, zero points and tensor scales on torch tensors (SEMANTICS.md §5.12).

:func:`check_given` checks one part as the engine's ``check_given``: a float32 tensor on the
input's device, whose values are finite (and not negative for scales). The cast reads the
parts through the kit's given-scale recipe (``_scale.make_plan``). A part of a DTensor cast
is the whole scale array: a plain tensor holding all of it in every process, checked here,
or a DTensor (``_shard_given``).

Values are checked where they can be read (``_accept.has_values``): not inside a
``torch.compile`` graph, where reading one on the host would break the graph, and not of a
meta or fake tensor, which has none. A value the check would refuse that reaches a cast
unchecked makes its block non-finite (``_scale.unusable_given``).
"""

from __future__ import annotations

from typing import Any

import torch

from tcast import SpecError
from tcast.kit import bad_given_value, given_number, given_type_error, is_given_number

from ._accept import has_values

__all__ = ["FLOAT_DTYPES", "bad_values", "check_given", "check_part_dtype"]

#: The dtypes a given part may have: float32 values, widened exactly.
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def bad_values(a: torch.Tensor, signed: bool) -> torch.Tensor:
    """True where a float32 given value is refused: NaN, ±Inf, or (unless ``signed``) below 0."""
    if signed:
        return ~torch.isfinite(a)
    return ~(torch.isfinite(a) & (a >= 0))


def check_part_dtype(x: Any, part: torch.Tensor, name: str) -> None:
    """Refuse a given tensor of another dtype than :data:`FLOAT_DTYPES` or another device.

    Raises:
        SpecError: naming the part, its dtype or device, and what to pass instead.
    """
    if part.dtype not in FLOAT_DTYPES:
        raise given_type_error(name, part, "tensors")
    if part.device != x.device:
        raise SpecError(f"{name} is on {part.device}, x on {x.device}: move it to x's device")


def check_given(x: Any, part: object, name: str, *, signed: bool) -> torch.Tensor:
    """One given part as a float32 tensor on x's device (a real number: a 0-d tensor).

    ``x`` may be a DTensor: ``part`` then holds the whole scale array in every process.
    Values are not checked inside a torch.compile graph nor of meta or fake tensors (see
    the module docstring).

    Raises:
        SpecError: for another type, dtype (float64 is refused, not rounded) or device, a NaN
            or infinite value, or a negative scale, naming the part and the first bad index.
    """
    if isinstance(part, torch.Tensor):
        check_part_dtype(x, part, name)
        a = part.to(torch.float32)
    elif is_given_number(part):
        a = torch.tensor(given_number(part, name), dtype=torch.float32, device=x.device)
    else:
        raise given_type_error(name, part, "tensors")
    if has_values(a):
        bad = bad_values(a, signed)
        if bool(bad.any()):
            idx = tuple(int(i) for i in torch.nonzero(bad)[0]) if a.ndim else ()
            raise bad_given_value(name, idx, float(a[idx]), signed)
    return a
