"""Given scales, zero points and tensor scales of the Triton engine's casts (SEMANTICS.md §5.12).

A given part is checked as the torch engine checks it (:func:`check_given`: a float32 tensor
on x's device, finite, a scale not negative; its values where they can be read, not inside a
torch.compile graph) and reaches the cast kernels as it is: each program reads its blocks'
given values beside their maxima, and ``_scales.lane_scales`` encodes them by their formats'
rules in place of the steps that would compute them (a value the check would refuse, which
only an unchecked graph input can bring, makes its blocks non-finite:
``_scales.block_scales``). The kernels still reduce every block, for the non-finite rule
(§5.2) and the parts not given; only a given tensor scale saves a pass (no tensor amax).
"""

from __future__ import annotations

from typing import Any

import torch

from tcast import DataType, UnsupportedError
from tcast.kit import NEVER, GivenScales, given_exponent_rule
from tcast_torch import engine as torch_engine
from tcast_torch.toolkit import is_dtensor

from ._scales import GP_SCALE, GP_TENSOR, GP_ZERO

__all__ = [
    "check_given",
    "given_bits",
    "given_kw",
    "given_pointers",
    "given_refusal",
    "recipe_given",
    "rule_fields",
]

#: The kernels' rule tuple where no exponent rule applies (never read).
NO_RULE = (0, 0, 0, 0, 0)


def check_given(x: Any, part: object, name: str, *, signed: bool) -> torch.Tensor:
    """One given part as a float32 tensor on x's device (a real number: a 0-d tensor).

    Raises:
        UnsupportedError: for a DTensor ``x``.
        SpecError: as the torch engine's ``check_given``: another type, dtype (float64 is
            refused, not rounded) or device, a NaN or infinite value, or a negative scale,
            naming the part and the first bad index (values are not read inside a
            torch.compile graph).
    """
    if is_dtensor(x):
        raise given_refusal(name)
    # a DTensor part of a plain x: the torch engine's check names the fix (a SpecError)
    return torch_engine.check_given(x, part, name, signed=signed)


def given_refusal(name: str) -> UnsupportedError:
    """The error for a given ``name`` part of a DTensor cast."""
    return UnsupportedError(
        f"tcast_triton casts with a given {name} on plain tensors only, not of DTensors "
        f"(SEMANTICS.md §5.12): cast the DTensor with tcast_torch (tcast.cast(..., "
        f"engine='torch')), or without given parts"
    )


def given_bits(given: GivenScales | None) -> int:
    """The kernels' ``GP``: which parts are given (``_scales.GP_*`` bits; 0: none)."""
    if given is None:
        return 0
    scale, zero, tensor = given.parts
    return (
        GP_SCALE.value * scale + GP_ZERO.value * zero + GP_TENSOR.value * tensor  # bools as 0/1
    )


def recipe_given(dt: DataType, gp: int) -> bool:
    """Whether the parts ``gp`` (:func:`given_bits`) are every part of ``dt``'s scale recipe.

    The block scale, with the zero point for uint data and the tensor scale for two-level
    scaling: then no part is computed from the block's maxima, and only the non-finite rule
    (SEMANTICS.md §5.2) reads the elements (``_kernels._cast_tiles``' ``STREAM``).
    """
    need = GP_SCALE.value
    if dt.nspec.is_uint:
        need |= GP_ZERO.value
    if dt.is_multiscale:
        need |= GP_TENSOR.value
    return dt.sspec is not None and gp & need == need


def rule_fields(rule: Any) -> tuple:
    """A kit ``ExponentScaleRule`` as the kernels' rule tuple (``_scales.RU_*``)."""
    if rule is None:
        return NO_RULE
    return (
        rule.offset,
        rule.threshold,
        rule.max_code,
        int(rule.field_exact),
        int(rule.threshold < NEVER),
    )


def given_kw(dt: DataType, gp: int) -> dict:
    """The compile-time arguments of the given parts ``gp`` (:func:`given_bits`) of ``dt``.

    Every cast kernel's launch names them, given parts or none: torch.compile passes None
    for a parameter a launch omits, whatever its default.
    """
    scale = dt.sspec.scale if dt.sspec is not None else None
    exponent = gp & GP_SCALE.value and scale is not None and scale.is_exponent
    return dict(GP=gp, GRULE=rule_fields(given_exponent_rule(scale)) if exponent else NO_RULE)


def given_pointers(given: GivenScales) -> dict[str, torch.Tensor | None]:
    """The given parts as the kernels read them: flat float32 tensors (None: not given).

    Checked parts (:func:`check_given`) are float32 on x's device already; the scale array's
    C order is the kernels' lane order.
    """
    flat = {}
    for key, part in (("gscale_ptr", given.scale), ("gzero_ptr", given.zero)):
        flat[key] = None if part is None else part.contiguous().reshape(-1)
    t = given.tensor_scale
    flat["gtens_ptr"] = None if t is None else t.reshape(1)
    return flat
