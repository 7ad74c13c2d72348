"""Round, scale and cast modes.

Modes are plain arguments with defaults (``roundmode="even"``); there is no
global mode state. Each mode is a ``StrEnum`` so that the string and the enum
member compare equal, and :func:`round_mode`, :func:`scale_mode` and
:func:`cast_mode` turn either spelling (or an alias) into the member, raising
:class:`~tcast.errors.SpecError` for anything else.
"""

from __future__ import annotations

from enum import StrEnum

from ._text import quote
from .errors import SpecError

__all__ = [
    "CastMode",
    "RoundMode",
    "ScaleLayout",
    "ScaleMode",
    "cast_mode",
    "round_mode",
    "scale_layout",
    "scale_mode",
]


class RoundMode(StrEnum):
    """How a value between two representable neighbours is rounded (SEMANTICS.md §3)."""

    #: Nearest, ties to the even code (IEEE roundTiesToEven). The default.
    EVEN = "even"
    #: Nearest, ties away from zero (IEEE roundTiesToAway). Alias: ``nearest``.
    AWAY = "away"
    #: Nearest, ties toward zero (upstream tensorcast meaning of "zero").
    ZERO = "zero"
    #: Toward zero (truncation, IEEE roundTowardZero).
    TRUNC = "trunc"
    #: Stochastic: up with probability equal to the discarded fraction (32 random bits).
    STOCHASTIC = "stochastic"


class ScaleMode(StrEnum):
    """How a power-of-two scale is chosen from a block's amax (SEMANTICS.md §5)."""

    #: OCP: floor(log2 amax) - emax. The default.
    FLOOR = "floor"
    #: ceil(log2 amax) - emax.
    CEIL = "ceil"
    #: floor, plus one when the scaled amax lies above the format's midmax.
    MIDMAX = "midmax"
    #: Meta's "option 3": amax rounded to the element precision first, then floor.
    OPTION3 = "option3"
    #: floor, plus one when the scaled amax lies above the format's max. Alias: ``rceil``.
    TOPBINADE = "topbinade"


class CastMode(StrEnum):
    """What a cast returns."""

    #: Fake quantization: an array of the input's dtype holding the decoded values.
    VIRTUAL = "virtual"
    #: A CastResult with one unpacked code per element plus the scales.
    ACTUAL = "actual"
    #: A CastResult with codes packed into bytes (and pruned elements removed).
    COMPRESS = "compress"


class ScaleLayout(StrEnum):
    """How an actual or compress result stores its scale (and zero-point) codes (§8.1)."""

    #: The scale array's shape (SEMANTICS.md §5.1), C order. The default.
    PLAIN = "plain"
    #: The 128 x 4 blocked ("swizzled") layout block-scaled GEMMs read, zero-padded.
    BLOCKED = "blocked"


_ROUND_ALIASES = {"nearest": RoundMode.AWAY}
# rceil ("smallest power of two s with amax / s <= max") is the same function as
# topbinade on every input; tests/test_modes.py proves it exhaustively.
_SCALE_ALIASES = {"rceil": ScaleMode.TOPBINADE}


def _lookup(enum: type[StrEnum], aliases: dict[str, StrEnum], value: object, what: str):
    if isinstance(value, enum):
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        if key in aliases:
            return aliases[key]
        try:
            return enum(key)
        except ValueError:
            pass
    valid = ", ".join([m.value for m in enum] + sorted(aliases))
    raise SpecError(f"{what} {quote(value)} is not defined; valid: {valid}")


def round_mode(value: RoundMode | str) -> RoundMode:
    """Return the RoundMode for an enum member, a name or an alias.

    Raises:
        SpecError: if ``value`` names no round mode.
    """
    return _lookup(RoundMode, _ROUND_ALIASES, value, "round mode")


def scale_mode(value: ScaleMode | str) -> ScaleMode:
    """Return the ScaleMode for an enum member, a name or an alias (``rceil``).

    Raises:
        SpecError: if ``value`` names no scale mode.
    """
    return _lookup(ScaleMode, _SCALE_ALIASES, value, "scale mode")


def cast_mode(value: CastMode | str) -> CastMode:
    """Return the CastMode for an enum member or a name.

    Raises:
        SpecError: if ``value`` names no cast mode.
    """
    return _lookup(CastMode, {}, value, "cast mode")


def scale_layout(value: ScaleLayout | str) -> ScaleLayout:
    """Return the ScaleLayout for an enum member or a name (``plain``, ``blocked``).

    Raises:
        SpecError: if ``value`` names no scale layout.
    """
    return _lookup(ScaleLayout, {}, value, "scale layout")
