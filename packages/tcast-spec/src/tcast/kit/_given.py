"""Given scales, zero points and tensor scales of a cast (SEMANTICS.md §5.12).

A cast may take its scale parts as given values instead of computing them from the blocks.
:class:`GivenScales` carries them (the engine's arrays) in a :class:`~tcast.kit.CastRequest`;
:func:`check_given_parts` refuses parts a datatype has no place for, and :func:`given_shapes`
says the shape each part must have. The values are checked by the engine
(``EngineBase.check_given``) and encoded by the recipe :func:`~tcast.kit.given_scale_recipe`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from ..datatype import DataType
from ..errors import SpecError
from ..layout import BlockLayout

__all__ = [
    "GIVEN_PARTS",
    "GivenScales",
    "bad_given_value",
    "check_given_parts",
    "given_number",
    "given_or_none",
    "given_shapes",
    "given_type_error",
    "is_given_number",
]

#: The parts a cast may be given, by their keyword name.
GIVEN_PARTS = ("scale", "zero", "tensor_scale")


@dataclass(frozen=True, eq=False)
class GivenScales:
    """The given scale parts of one cast (each an engine's array, or None where computed).

    Attributes:
        scale: the block scales, shaped like the scale array (``()`` for a tensor scale).
        zero: the zero points of uint data, shaped like the scale array.
        tensor_scale: the tensor scale of two-level datatypes, shape ``()``.

    Compared by identity (the arrays have no one equality).
    """

    scale: Any = None
    zero: Any = None
    tensor_scale: Any = None

    @property
    def parts(self) -> tuple[bool, bool, bool]:
        """Which of (scale, zero, tensor_scale) are given."""
        return (self.scale is not None, self.zero is not None, self.tensor_scale is not None)

    def items(self) -> list[tuple[str, Any]]:
        """The given parts as ``(name, value)`` pairs, in :data:`GIVEN_PARTS` order."""
        return [(n, getattr(self, n)) for n in GIVEN_PARTS if getattr(self, n) is not None]


def given_or_none(scale: Any, zero: Any, tensor_scale: Any) -> GivenScales | None:
    """A :class:`GivenScales` of the parts given, or None when there are none."""
    if scale is None and zero is None and tensor_scale is None:
        return None
    return GivenScales(scale, zero, tensor_scale)


def check_given_parts(dt: DataType, scale: object, zero: object, tensor_scale: object) -> None:
    """Refuse given parts ``dt`` has no place for (SEMANTICS.md §5.12).

    Raises:
        SpecError: naming the datatype and the part.
    """
    if scale is None and zero is None and tensor_scale is None:
        return
    s = dt.sspec
    if s is None:
        raise SpecError(f"{dt.name} is unscaled: it takes no given scale, zero or tensor_scale")
    if dt.nspec.is_codebook or s.offset_bits > 0:
        raise SpecError(
            f"given scales are not defined for {dt.name}: its metadata (subtile offsets or "
            f"codebook mappings) is chosen with its scales; cast without given scales"
        )
    if zero is not None and dt.zero is None:
        raise SpecError(f"{dt.name} has no zero point (only uint data has one): give none")
    if tensor_scale is not None and not dt.is_multiscale:
        raise SpecError(
            f"{dt.name} has one scale level: a given tensor scale is for two-level datatypes "
            f"such as nvfp4"
        )


def given_shapes(layout: BlockLayout) -> dict[str, tuple[int, ...]]:
    """The shape each given part must have over ``layout`` (by part name)."""
    return {"scale": layout.scale_shape, "zero": layout.scale_shape, "tensor_scale": ()}


def given_number(part: object, name: str) -> float:
    """A given part passed as a number (a part of shape ``()``): its float32 value.

    Raises:
        SpecError: for a number that is not a float32 value (it is not rounded).
    """
    try:
        v = float(part)
        exact = struct.unpack("<f", struct.pack("<f", v))[0] == v or v != v
    except (OverflowError, TypeError, ValueError):  # beyond float32's range, or no float
        exact = False
    if not exact:
        raise SpecError(f"{name} {part!r} is not a float32 value: round it to float32 first")
    return v


def given_type_error(name: str, part: object, arrays: str) -> SpecError:
    """The error for a given part of another type or dtype than the engine reads."""
    got = f"{type(part).__name__} {getattr(part, 'dtype', '')}".rstrip()
    return SpecError(
        f"{name} must be float32, float16 or bfloat16 {arrays} (or a real number for a part "
        f"of shape ()), got {got}"
    )


def bad_given_value(name: str, index: tuple[int, ...], value: float, signed: bool) -> SpecError:
    """The error for the first NaN, infinite or (a scale's) negative given value."""
    what = "finite" if signed else "finite and not negative"
    where = f"[{', '.join(map(str, index))}]" if index else ""
    return SpecError(f"{name}{where} is {value!r}: it must be {what}")


def is_given_number(part: object) -> bool:
    """Whether a given part that is not an array of the engine's is a number.

    Anything of rank 0 with ``__float__`` but bools and text (Python, NumPy and ml_dtypes
    scalars): the engines take a number for a part of shape ``()``; they test for their
    arrays first.
    """
    if isinstance(part, bool | str | bytes) or not hasattr(part, "__float__"):
        return False
    return getattr(part, "ndim", 0) == 0
