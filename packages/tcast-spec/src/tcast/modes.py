"""Round, scale and cast modes.

Modes are plain arguments with defaults (``roundmode="even"``); there is no
global mode state. Each mode is a ``StrEnum`` so that the string and the enum
member compare equal, and :func:`round_mode`, :func:`scale_mode` and
:func:`cast_mode` turn either spelling (or an alias) into the member, raising
:class:`~tcast.errors.SpecError` for anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

from ._text import quote
from .errors import SpecError

__all__ = [
    "ROUND_MODE_MEANINGS",
    "SCALE_MODE_MEANINGS",
    "CastMode",
    "RoundMode",
    "ScaleLayout",
    "ScaleMode",
    "cast_mode",
    "mode_meanings_text",
    "round_mode",
    "scale_layout",
    "scale_mode",
]

#: What each round mode does and what peers call it (SEMANTICS.md §3.2): the one text that
#: the enum's docstring, ``tcast.cast``'s docstring and the command line's help show.
ROUND_MODE_MEANINGS: Mapping[str, str] = MappingProxyType(
    {
        "even": "nearest, ties to the even code (IEEE roundTiesToEven, the rounding of torch "
        "and NumPy casts); the default",
        "away": "nearest, ties away from zero (IEEE roundTiesToAway); alias nearest",
        "zero": "nearest, ties toward zero (upstream tensorcast's 'zero'); not truncation, "
        "which is trunc",
        "trunc": "toward zero, i.e. truncation (IEEE roundTowardZero)",
        "stochastic": "up iff floor(frac * 2^K) + r >= 2^K, r the element's K random bits "
        "(K = 8 for formats of at most 8 bits, else 16; give seed or rbits)",
    }
)

#: What each scale mode does and what peers call it (SEMANTICS.md §5.3; torchao's
#: ``ScaleCalculationMode`` has FLOOR, CEIL, EVEN and RCEIL). Power-of-two scales only.
SCALE_MODE_MEANINGS: Mapping[str, str] = MappingProxyType(
    {
        "floor": "2^(floor(log2 amax) - emax): OCP MX v1.0 (torchao FLOOR); the default",
        "ceil": "2^(ceil(log2 amax) - emax) (torchao CEIL)",
        "midmax": "floor, one binade up when the scaled amax is above the element format's "
        "midmax (upstream tensorcast)",
        "option3": "amax rounded to the element precision (ties to even) first, then floor: "
        "Meta's 'option 3' (torchao EVEN)",
        "topbinade": "floor, one binade up when the scaled amax is above the element max: "
        "the smallest power of two s with amax / s <= max (torchao and cuBLAS RCEIL); "
        "alias rceil",
    }
)


def mode_meanings_text(meanings: Mapping[str, str], indent: str = "") -> str:
    """One line per mode, ``name: meaning``, each starting with ``indent``."""
    return "\n".join(f"{indent}{name}: {text}" for name, text in meanings.items())


class RoundMode(StrEnum):
    """How a value between two representable neighbours is rounded (SEMANTICS.md §3.2)."""

    EVEN = "even"
    AWAY = "away"
    ZERO = "zero"
    TRUNC = "trunc"
    STOCHASTIC = "stochastic"


# the members' meanings, from the one table
RoundMode.__doc__ = f"{RoundMode.__doc__}\n\n{mode_meanings_text(ROUND_MODE_MEANINGS, '* ')}"


class ScaleMode(StrEnum):
    """How a power-of-two scale is chosen from a block's amax (SEMANTICS.md §5.3).

    Float scales and uint data ignore it.
    """

    FLOOR = "floor"
    CEIL = "ceil"
    MIDMAX = "midmax"
    OPTION3 = "option3"
    TOPBINADE = "topbinade"


ScaleMode.__doc__ = f"{ScaleMode.__doc__}\n{mode_meanings_text(SCALE_MODE_MEANINGS, '    * ')}"


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
