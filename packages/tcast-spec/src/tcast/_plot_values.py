"""The values of a format, each with its class, for the ``values`` picture (pure Python).

Every code of a number spec is decoded with the exact model, so the picture shows what
tcast defines, code for code; a codebook gives the entries of each of its tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ._lookup import datatype
from ._text import quote
from .codebook import CodebookSpec
from .datatype import DataType
from .errors import SpecError, UnsupportedError
from .exact import decode_exact
from .number import Kind, NumberSpec, number

__all__ = [
    "CLASSES",
    "MAX_CODE_BITS",
    "Special",
    "ValueRow",
    "code_class",
    "element_of",
    "resolve",
    "special_codes",
    "value_rows",
]

#: The widest number format whose codes are all enumerated (65536 codes).
MAX_CODE_BITS = 16

#: Value classes in drawing order. ``value`` is a finite nonzero value of a format without
#: a subnormal/normal distinction (integers, exponent types, codebook entries);
#: ``unproduced`` is the code -2**(K-1) of intK, which decodes but encode never gives.
CLASSES = ("zero", "subnormal", "normal", "value", "max", "unproduced", "inf", "nan")


@dataclass(frozen=True)
class ValueRow:
    """The distinct finite values of one table, ascending, each with its class.

    A number spec has one table, a codebook one per mapping.
    """

    #: The mapping index (0 for a number spec).
    mapping: int
    #: ``(value, class)`` pairs, ascending; ``-0`` and ``0`` are one value.
    points: tuple[tuple[Fraction, str], ...]


@dataclass(frozen=True)
class Special:
    """Codes that decode to no finite value: ``+Inf``, ``-Inf`` or ``NaN``."""

    #: ``+Inf``, ``-Inf`` or ``NaN``.
    name: str
    #: The codes, ascending.
    codes: tuple[int, ...]


def resolve(
    token: str | NumberSpec | CodebookSpec | DataType,
) -> NumberSpec | CodebookSpec | DataType:
    """A format from what a user names: a number code first, else a datatype.

    Args:
        token: a number code (``e4m3fn``, ``int8``, ``cb41fi_e2m2fnuz``), a catalog name
            (``mxfp4``), a datatype code (``e2m1f_e8m0_t32``), or a spec object.

    Returns:
        The NumberSpec or CodebookSpec for a number code, else the DataType.

    Raises:
        SpecError: when ``token`` is neither (:func:`tcast.datatype`'s message).
        UnsupportedError: for a name tcast knows but does not support.
    """
    if isinstance(token, NumberSpec | CodebookSpec | DataType):
        return token
    if not isinstance(token, str):
        raise SpecError(f"a format is a code or name (str), not {quote(token)}")
    try:
        return number(token)
    except SpecError:
        pass  # not a number code: a datatype's message covers both readings
    return datatype(token)


def element_of(fmt: NumberSpec | CodebookSpec | DataType) -> NumberSpec | CodebookSpec:
    """The element format of a datatype, or the number spec itself."""
    return fmt.nspec if isinstance(fmt, DataType) else fmt


def code_class(code: int, spec: NumberSpec) -> str:
    """The class of one code of a number spec (one of :data:`CLASSES`).

    Args:
        code: the code (the unsigned bit pattern).
        spec: the number spec.

    Returns:
        ``zero``, ``subnormal``, ``normal``, ``max`` (the largest finite magnitude, both
        signs), ``inf`` or ``nan`` for floats; ``zero``, ``value``, ``max``, ``unproduced``
        for integers; ``value``, ``max``, ``nan`` for exponent types.

    Raises:
        SpecError: if ``code`` is not a code of the format.
    """
    v = decode_exact(code, spec)
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    if v == 0:
        return "zero"
    if spec.kind is Kind.EXPONENT:
        return "max" if code == spec.max_code else "value"
    if spec.kind is Kind.INT and v == -(1 << (spec.bits - 1)):
        return "unproduced"
    if spec.is_integer:
        return "max" if abs(v) == spec.maxint else "value"
    mag = code & (spec.sign_bit - 1)
    if mag == spec.max_code:
        return "max"
    return "subnormal" if mag >> spec.mbits == 0 else "normal"


def _check_width(spec: NumberSpec) -> None:
    if spec.bits > MAX_CODE_BITS:
        raise UnsupportedError(
            f"{spec.code} has {spec.bits} bits: its codes are enumerated only up to "
            f"{MAX_CODE_BITS} bits (2**{MAX_CODE_BITS} codes); draw a narrower format"
        )


def value_rows(spec: NumberSpec | CodebookSpec) -> list[ValueRow]:
    """The distinct finite values of a format with their classes.

    Args:
        spec: a number spec of at most :data:`MAX_CODE_BITS` bits, or a codebook.

    Returns:
        One row for a number spec; one row per mapping for a codebook, whose entries are
        ``value``, ``zero`` or ``max`` (the largest magnitude of that table).

    Raises:
        UnsupportedError: for a number spec wider than :data:`MAX_CODE_BITS` bits.
    """
    if isinstance(spec, CodebookSpec):
        rows = []
        for m, table in enumerate(spec.tables):
            top = max(abs(Fraction(v)) for v in table)
            seen = {Fraction(v) for v in table}
            points = []
            for v in sorted(seen):
                cls = "zero" if v == 0 else "max" if abs(v) == top else "value"
                points.append((v, cls))
            rows.append(ValueRow(m, tuple(points)))
        return rows
    _check_width(spec)
    found: dict[Fraction, str] = {}
    for code in range(1 << spec.bits):
        cls = code_class(code, spec)
        if cls not in ("inf", "nan"):
            v = decode_exact(code, spec)
            found.setdefault(Fraction(v), cls)
    return [ValueRow(0, tuple(sorted(found.items())))]


def special_codes(spec: NumberSpec | CodebookSpec) -> list[Special]:
    """The codes that decode to +Inf, -Inf and NaN (none for codebooks and integers).

    Raises:
        UnsupportedError: for a number spec wider than :data:`MAX_CODE_BITS` bits.
    """
    if isinstance(spec, CodebookSpec) or spec.is_integer:
        return []
    _check_width(spec)
    found: dict[str, list[int]] = {"+Inf": [], "-Inf": [], "NaN": []}
    for code in range(1 << spec.bits):
        v = decode_exact(code, spec)
        if isinstance(v, float) and math.isnan(v):
            found["NaN"].append(code)
        elif isinstance(v, float) and math.isinf(v):
            found["+Inf" if v > 0 else "-Inf"].append(code)
    return [Special(name, tuple(codes)) for name, codes in found.items() if codes]
