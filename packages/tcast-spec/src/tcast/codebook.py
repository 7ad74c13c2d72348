"""Codebook number specs: element codes that index a table of values (SEMANTICS.md §5.9).

A :class:`CodebookSpec` has ``2**M`` mappings (tables), each of ``2**I`` values exactly
representable in a compute format; a block (or subtile) picks one mapping, stored as ``M``
bits of metadata, and each element stores the ``I``-bit index of its value in that table.

Two kinds:

* implicit codebooks (``cb41fi_e2m2fnuz``): the tables follow from a description of
  patterns over the compute format's number line (:func:`implicit_tables`); their layout
  is symmetric: code ``c = s * 2**(I-1) + k`` is zero for ``k = 0`` (``-0.0`` when the sign
  bit ``s`` is set) and ``(-1)**s`` times the ``k``-th positive entry otherwise;
* given tables (``cb40_float32_nf4``): any ``2**M x 2**I`` values, strictly ascending per
  mapping, under a label.

Codes are parsed by :func:`tcast.number` and given tables are built by
:func:`tcast.codebook`; ``docs/names.md`` has the grammar. This module knows the compute
format only through the attributes every :class:`tcast.NumberSpec` has.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from math import copysign
from types import MappingProxyType
from typing import TYPE_CHECKING

from ._dyadic import floor_log2 as _floor_log2
from ._dyadic import pow2 as _pow2
from ._text import QUOTE_LIMIT, quote
from .errors import SpecError

if TYPE_CHECKING:
    from .number import NumberSpec

__all__ = [
    "GIVEN_TABLES",
    "MAX_LABEL",
    "NF4_VALUES",
    "CodebookSpec",
    "default_label",
    "implicit_tables",
]

#: bitsandbytes' NF4 table (``get_4bit_type("nf4")``): 16 float32 values, ascending,
#: -1.0 .. 1.0 with one 0.0 (QLoRA's 4-bit NormalFloat).
NF4_VALUES: tuple[float, ...] = (
    -1.0,
    -0.6961928009986877,
    -0.5250730514526367,
    -0.39491748809814453,
    -0.28444138169288635,
    -0.18477343022823334,
    -0.09105003625154495,
    0.0,
    0.07958029955625534,
    0.16093020141124725,
    0.24611230194568634,
    0.33791524171829224,
    0.44070982933044434,
    0.5626170039176941,
    0.7229568362236023,
    1.0,
)

#: Given tables known by label: label -> (index bits, meta bits, compute code, tables).
#: Read-only; a code ``cb<I><M>_<compute>_<label>`` names one of these.
GIVEN_TABLES: Mapping[str, tuple[int, int, str, tuple[tuple[float, ...], ...]]] = MappingProxyType(
    {"nf4": (4, 0, "float32", (NF4_VALUES,))}
)

#: The longest codebook label: a name, short enough for every code and message that shows it.
MAX_LABEL = 32
_LABEL_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CLAUSE_RE = re.compile(r"([fi])([0-9]*)(?:e([0-9]*))?|([ps])(?:([0-9])([0-9]*))?")
_MIN_INDEX_BITS, _MAX_INDEX_BITS = 2, 8
_MAX_META_BITS = 4
_MAX_EOFFSET = 3


def _is_float32(v: float) -> bool:
    """Whether the finite float ``v`` is a float32 value (24 significant bits, 2**-149 up)."""
    if v == 0:
        return True
    a = abs(Fraction(v))
    e = _floor_log2(a)
    return e <= 127 and (a / _pow2(max(e, -126) - 23)).denominator == 1


# ------------------------------------------------------- the compute number line
def _top_index(c: NumberSpec) -> int:
    """K: the largest magnitude index of the compute format."""
    return c.max_code if c.is_float else c.maxint


def _index_value(c: NumberSpec, j: int) -> Fraction:
    """The value at magnitude index ``j`` (a float's magnitude code, an int's value)."""
    return c.magnitude_value(j) if c.is_float else Fraction(j)


def _magnitude_index(c: NumberSpec, v: Fraction) -> int | None:
    """The magnitude index of ``v >= 0`` in the compute format, None if not a value of it."""
    if v == 0:
        return 0
    if c.is_int:
        return int(v) if v.denominator == 1 and v <= c.maxint else None
    if v > c.max_value:
        return None
    e, mb = _floor_log2(v), c.mbits
    n = v / _pow2(max(e, c.emin) - mb)
    if n.denominator != 1:
        return None
    if e < c.emin:
        return int(n)  # a subnormal: exponent field 0
    return ((e - c.emin + 1) << mb) | (int(n) - (1 << mb))


# ------------------------------------------------------------ implicit tables
def _base_values(kind: str, ibits: int, clause: str) -> list[Fraction]:
    """The P positive base values of an ``f`` or ``i`` clause, ascending."""
    p = (1 << (ibits - 1)) - 1
    if kind == "i":
        return [Fraction(k) * _pow2(2 - ibits) for k in range(1, p + 1)]
    if not 3 <= ibits <= 5:
        raise SpecError(
            f"clause {quote(clause)}: 'f' patterns are e2m0, e2m1 or e2m2 (index bits 3..5), "
            f"not {ibits} index bits"
        )
    mb = ibits - 3  # sign, two exponent bits, the rest mantissa: e2m0, e2m1, e2m2
    out = []
    for code in range(1, p + 1):
        field, frac = code >> mb, code & ((1 << mb) - 1)
        if field == 0:
            out.append(Fraction(frac) * _pow2(-mb))
        else:
            out.append(Fraction((1 << mb) + frac) * _pow2(field - 1 - mb))
    return out


def _placed_indices(base: list[Fraction], c: NumberSpec, clause: str) -> list[int]:
    """Magnitude indices of the base values moved to the top of the compute number line."""
    top = _floor_log2(_index_value(c, _top_index(c))) - _floor_log2(base[-1])
    smallest = c.smallest_subnormal if c.is_float else 1
    bottom = _floor_log2(Fraction(smallest)) - _floor_log2(base[0]) - 1
    for a in range(top, bottom - 1, -1):
        idx = [_magnitude_index(c, v * _pow2(a)) for v in base]
        if all(i is not None for i in idx):
            return idx  # type: ignore[return-value]
    raise SpecError(
        f"clause {quote(clause)}: its base values are not all values of {c.code} at any one "
        f"power of two"
    )


def _digits(text: str, what: str, clause: str, most: int = 9) -> list[int]:
    out = [int(ch) for ch in text]
    if any(d > most for d in out):
        raise SpecError(f"clause {quote(clause)}: {what} are digits 0..{most}, got {quote(text)}")
    return out


def _mapping(c: NumberSpec, indices: list[int], clause: str, number: int) -> list[Fraction]:
    if min(indices) < 1:
        raise SpecError(
            f"clause {quote(clause)}, mapping {number}: it reaches below the smallest nonzero "
            f"value of {c.code} (index {min(indices)}); use a smaller offset"
        )
    return [_index_value(c, j) for j in sorted(indices)]


def _clause_mappings(
    m: re.Match[str], ibits: int, c: NumberSpec, first: int
) -> list[list[Fraction]]:
    clause = m[0]
    p = (1 << (ibits - 1)) - 1
    k_top = _top_index(c)
    out: list[list[Fraction]] = []
    if m[1]:
        base = _placed_indices(_base_values(m[1], ibits, clause), c, clause)
        dist = [base[-1] - b for b in base]
        offsets = _digits(m[2], "offsets", clause) or [k_top - base[-1]]
        if m[3] is None:
            eoffsets = [0]
        else:
            eoffsets = _digits(m[3], "exponent offsets", clause, _MAX_EOFFSET) or [0, 1]
        for o in offsets:
            values = _mapping(c, [k_top - o - d for d in dist], clause, first + len(out))
            for e in eoffsets:
                scaled = [v / _pow2(e) for v in values]
                if any(_magnitude_index(c, v) is None for v in scaled):
                    raise SpecError(
                        f"clause {quote(clause)}, mapping {first + len(out)}: its values divided "
                        f"by 2**{e} are not all values of {c.code}"
                    )
                out.append(scaled)
        return out
    interval = 1 if m[5] is None else int(m[5])
    if interval < 1:
        raise SpecError(f"clause {quote(clause)}: the interval is a digit 1..9, got 0")
    offsets = _digits(m[6] or "", "offsets", clause) or [0]
    if m[4] == "p":  # decrements g, g+1, g+2, ...
        dist = [j * interval + j * (j - 1) // 2 for j in range(p)]
    else:  # decrements g, g, g, ...
        dist = [j * interval for j in range(p)]
    for o in offsets:
        out.append(_mapping(c, [k_top - o - d for d in dist], clause, first + len(out)))
    return out


def implicit_tables(
    index_bits: int, meta_bits: int, desc: str, compute: NumberSpec
) -> tuple[tuple[float, ...], ...]:
    """The tables an implicit codebook description generates (SEMANTICS.md §5.9).

    Args:
        index_bits: I, the element code width (2..8).
        meta_bits: M, the metadata width (0..4): the description must give ``2**M`` mappings.
        desc: one or more clauses ``f[<offsets>][e[<eoffsets>]]``,
            ``i[<offsets>][e[<eoffsets>]]``, ``p<interval>[<offsets>]``,
            ``s<interval>[<offsets>]`` (``docs/names.md``).
        compute: the float or int format the entries are values of.

    Returns:
        ``2**M`` tables of ``2**I`` floats in code order (symmetric layout).

    Raises:
        SpecError: naming the clause (and mapping) that cannot be realized, or the count.
    """
    _check_widths(index_bits, meta_bits)
    _check_compute(compute)
    if not desc:
        raise SpecError("an implicit codebook needs a description (f, i, p or s clauses)")
    clauses = []
    pos = 0
    while pos < len(desc):
        m = _CLAUSE_RE.match(desc, pos)
        if m is None or not m[0]:
            raise SpecError(
                f"codebook description {quote(desc)}: {quote(desc[pos:])} is not a clause "
                f"(f[<offsets>][e[<eoffsets>]], i[...], p<interval>[<offsets>], s<interval>[...])"
            )
        if m[3]:
            _digits(m[3], "exponent offsets", m[0], _MAX_EOFFSET)
        clauses.append(m)
        pos = m.end()
    # The count is checked before any table is built: a long description costs no more
    # than reading it.
    count = sum(_clause_count(m) for m in clauses)
    if count != 1 << meta_bits:
        code = f"cb{index_bits}{meta_bits}{desc}_{compute.code}"
        shown = code if len(code) <= QUOTE_LIMIT else quote(code)
        raise SpecError(
            f"{shown} describes {count} mapping{'s' * (count != 1)}, metadata "
            f"bits {meta_bits} need {1 << meta_bits}"
        )
    mappings: list[list[Fraction]] = []
    for m in clauses:
        mappings.extend(_clause_mappings(m, index_bits, compute, len(mappings)))
    return tuple(_symmetric_row(values) for values in mappings)


def _clause_count(m: re.Match[str]) -> int:
    """How many mappings a clause gives: its offsets times its eoffsets (bare: one; e: two)."""
    if m[1]:
        eoffsets = 1 if m[3] is None else len(m[3]) or 2
        return max(len(m[2]), 1) * eoffsets
    return max(len(m[6] or ""), 1)


def _symmetric_row(values: list[Fraction]) -> tuple[float, ...]:
    pos = [v.numerator / v.denominator for v in values]
    return (0.0, *pos, -0.0, *[-v for v in pos])


# ----------------------------------------------------------------- the spec
def default_label(tables: tuple[tuple[float, ...], ...]) -> str:
    """``t`` and the first 8 hex digits of SHA-256 over the tables' canonical text.

    The canonical text is the mappings joined by ``|``, each its entries' ``float.hex``
    joined by ``,`` (so ``-0.0`` and ``0.0`` differ).
    """
    text = "|".join(",".join(float.hex(v) for v in row) for row in tables)
    return "t" + hashlib.sha256(text.encode("ascii")).hexdigest()[:8]


@dataclass(frozen=True, eq=False)
class CodebookSpec:
    """A codebook element format: ``2**M`` tables of ``2**I`` compute values.

    Build one with :func:`tcast.number` (``number("cb41fi_e2m2fnuz")``) or
    :func:`tcast.codebook` (given tables); the constructor validates its fields the same way.

    Attributes:
        index_bits: I, the element code width (2..8).
        meta_bits: M, metadata bits per subtile (or block) choosing the mapping (0..4).
        compute: the float or int format (at most 32 bits) every entry is a value of.
        tables: ``2**M`` mappings of ``2**I`` floats each, in element code order.
        desc: the implicit description, ``''`` for given tables.
        label: ``''`` or a name (letters and digits, a letter first, at most 32 characters).
        symmetric: True for the sign-magnitude layout of implicit codebooks.
    """

    #: I, the element code width (2..8).
    index_bits: int
    #: M, metadata bits choosing the mapping (0..4).
    meta_bits: int
    #: The float or int format of the entries.
    compute: NumberSpec
    #: ``2**M`` mappings of ``2**I`` floats, in element code order.
    tables: tuple[tuple[float, ...], ...]
    #: The implicit description (``''`` for given tables).
    desc: str = ""
    #: ``''`` or a name.
    label: str = ""
    #: True for the symmetric (sign-magnitude) layout.
    symmetric: bool = False

    def __post_init__(self) -> None:
        _validate(self)
        m = max(abs(Fraction(v)) for row in self.tables for v in row)
        # two ints, not a Fraction, as NumberSpec keeps its maximum (torch.compile)
        object.__setattr__(self, "_max_ratio", (m.numerator, m.denominator))
        # Equality and hash see the tables' bits: 0.0 == -0.0 as floats, but a -0.0 entry
        # decodes to -0.0, so tables differing only there are different codebooks.
        bits = tuple(tuple(float.hex(v) for v in row) for row in self.tables)
        key = (self.index_bits, self.meta_bits, self.compute, bits, self.desc, self.label)
        object.__setattr__(self, "_key", (*key, self.symmetric))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CodebookSpec):
            return NotImplemented
        return self.__dict__["_key"] == other.__dict__["_key"]

    def __hash__(self) -> int:
        return hash(self.__dict__["_key"])

    @property
    def code(self) -> str:
        """``cb<I><M><desc>_<compute>[_<label>]``: ``number(spec.code) == spec``."""
        out = f"cb{self.index_bits}{self.meta_bits}{self.desc}_{self.compute.code}"
        return f"{out}_{self.label}" if self.label else out

    @property
    def bits(self) -> int:
        """The element code width I."""
        return self.index_bits

    @property
    def rbits_width(self) -> int:
        """Refused: stochastic rounding takes no random bits for codebooks (SEMANTICS.md §5.9).

        Raises:
            SpecError: always, naming the round modes to use.
        """
        raise SpecError(
            f"stochastic rounding is not defined for codebook datatypes such as {self.code} "
            f"(their entries are not evenly spaced): use even, away, zero or trunc"
        )

    @property
    def mappings(self) -> int:
        """The number of mappings, ``2**M``."""
        return 1 << self.meta_bits

    @property
    def max_value(self) -> Fraction:
        """The largest magnitude over all tables, exactly."""
        return Fraction(*self.__dict__["_max_ratio"])

    @property
    def maxfloat(self) -> float:
        """:attr:`max_value` as a float."""
        n, d = self.__dict__["_max_ratio"]
        return n / d

    @property
    def emax(self) -> int:
        """``floor(log2(max_value))``."""
        return _floor_log2(self.max_value)

    @property
    def precision(self) -> int:
        """The compute format's precision (scale mode option3 reads it)."""
        return self.compute.precision

    def entry_code(self, mapping: int, index: int) -> int:
        """The compute format's code of ``tables[mapping][index]``.

        A float's sign bit and magnitude code (``-0.0`` keeps the sign bit where the format
        has a negative zero, else it is code 0); an int's two's complement in its width.

        Raises:
            SpecError: for a mapping or index out of range.
        """
        for name, v, n in (("mapping", mapping, self.mappings), ("index", index, 1 << self.bits)):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < n:
                raise SpecError(f"codebook {self.code}: {name} {quote(v)} is not in 0..{n - 1}")
        v = self.tables[mapping][index]
        c = self.compute
        mag = _magnitude_index(c, abs(Fraction(v)))
        if mag is None:  # unreachable: every entry was checked to be a value of c
            raise SpecError(f"codebook {self.code}: {v!r} is not a value of {c.code}")
        if c.is_int:
            return (-mag if v < 0 else mag) & ((1 << c.bits) - 1)
        negative = copysign(1.0, v) < 0 and (v != 0 or c.has_negzero)
        return (c.sign_bit if negative else 0) | mag

    @property
    def is_codebook(self) -> bool:
        """True: the elements are codebook indices."""
        return True

    # Generic code asks these of any element spec; a codebook is none of them.
    is_float = property(lambda self: False, doc="False: not a minifloat.")
    is_int = property(lambda self: False, doc="False: not a signed integer.")
    is_uint = property(lambda self: False, doc="False: not an unsigned integer.")
    is_integer = property(lambda self: False, doc="False: not an integer.")
    is_exponent = property(lambda self: False, doc="False: not an exponent type.")
    has_nan = property(lambda self: False, doc="False: no code is NaN.")
    has_inf = property(lambda self: False, doc="False: no code is infinite.")

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"CodebookSpec({self.code!r})"


def _check_widths(ibits: object, mbits: object) -> None:
    for name, v, lo, hi in (
        ("index bits", ibits, _MIN_INDEX_BITS, _MAX_INDEX_BITS),
        ("metadata bits", mbits, 0, _MAX_META_BITS),
    ):
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise SpecError(f"codebook {name} must be an int in {lo}..{hi}, got {quote(v)}")


def _check_compute(c: object) -> None:
    ok = getattr(c, "is_float", False) or getattr(c, "is_int", False)
    if not ok or getattr(c, "is_codebook", False) or not hasattr(c, "magnitude_value"):
        raise SpecError(
            f"a codebook's compute format must be a float or int NumberSpec, got {quote(c)}"
        )
    if c.bits > 32:  # type: ignore[attr-defined]
        raise SpecError(f"a codebook's compute format has at most 32 bits, not {c}")


def _validate(cb: CodebookSpec) -> None:
    _check_widths(cb.index_bits, cb.meta_bits)
    _check_compute(cb.compute)
    c = cb.compute
    for name in ("desc", "label"):
        if not isinstance(getattr(cb, name), str):
            raise SpecError(f"codebook {name} must be a str, got {quote(getattr(cb, name))}")
    if cb.label and not (_LABEL_RE.fullmatch(cb.label) and len(cb.label) <= MAX_LABEL):
        raise SpecError(
            f"codebook label {quote(cb.label)} must be letters and digits, a letter first, "
            f"at most {MAX_LABEL} characters"
        )
    if not isinstance(cb.symmetric, bool):
        raise SpecError(f"codebook symmetric must be a bool, got {quote(cb.symmetric)}")
    tables = cb.tables
    rows, cols = 1 << cb.meta_bits, 1 << cb.index_bits
    if (
        not isinstance(tables, tuple)
        or len(tables) != rows
        or not all(isinstance(r, tuple) and len(r) == cols for r in tables)
    ):
        raise SpecError(
            f"codebook tables must be a tuple of {rows} tuples of {cols} floats "
            f"(2**{cb.meta_bits} x 2**{cb.index_bits})"
        )
    for m, row in enumerate(tables):
        for i, v in enumerate(row):
            if not isinstance(v, float) or v != v or v in (float("inf"), float("-inf")):
                raise SpecError(
                    f"codebook mapping {m}, index {i}: {quote(v)} is not a finite float"
                )
            if _magnitude_index(c, abs(Fraction(v))) is None:
                raise SpecError(
                    f"codebook mapping {m}, index {i}: {v!r} is not a value of {c.code}"
                )
            if not _is_float32(v):
                # engines hold tables in float32, and the mapping error takes the entries
                # as float32 operands (SEMANTICS.md §5.9): wide ints reach past 2**24
                raise SpecError(
                    f"codebook mapping {m}, index {i}: {v!r} is not a float32 value (every "
                    f"entry must be one; {c.code} values above 2**24 mostly are not)"
                )
        _check_order(row, m, cb.symmetric)
    if all(v == 0 for row in tables for v in row):
        raise SpecError("codebook tables need a nonzero entry")
    if cb.desc:
        if not cb.symmetric:
            raise SpecError(f"implicit codebook {quote(cb.desc)} has the symmetric layout")
        if implicit_tables(cb.index_bits, cb.meta_bits, cb.desc, c) != tables:
            raise SpecError(f"codebook tables differ from those description {quote(cb.desc)} gives")
    elif not cb.label:
        raise SpecError("a codebook of given tables needs a label")


def _check_order(row: tuple[float, ...], m: int, symmetric: bool) -> None:
    if not symmetric:
        if any(a >= b for a, b in pairwise(row)):
            raise SpecError(
                f"codebook mapping {m}: given tables are strictly ascending by value "
                f"(or pass symmetric=True for the sign-magnitude layout)"
            )
        return
    half = len(row) // 2
    pos, neg = row[:half], row[half:]
    # the zeros by their bits: code 0 decodes to +0.0 and code 2**(I-1) to -0.0
    zeros = float.hex(pos[0]) == float.hex(0.0) and float.hex(neg[0]) == float.hex(-0.0)
    if not zeros or any(n != -p for p, n in zip(pos[1:], neg[1:], strict=True)):
        raise SpecError(
            f"codebook mapping {m}: the symmetric layout is 0.0, v_1..v_P, -0.0, -v_1..-v_P"
        )
    if any(a >= b for a, b in pairwise(pos)):
        raise SpecError(f"codebook mapping {m}: entries 0 < v_1 < ... < v_P must increase")
