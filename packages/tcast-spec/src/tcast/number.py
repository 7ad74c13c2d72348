"""Number specs: what one element (or one scale) of a format is.

A :class:`NumberSpec` is a frozen, hashable description of a scalar format:
a signed minifloat ``eXmY`` with one of five Inf/NaN styles, an unsigned
power-of-two exponent type ``eXm0``, or a two's-complement / unsigned integer.
:func:`number` parses the string grammar (see ``docs/names.md`` for every
accepted spelling and what it means).
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from types import MappingProxyType

from ._dyadic import floor_log2 as _floor_log2
from ._dyadic import pow2 as _pow2
from ._foreign import foreign_dtype
from ._text import check_field, code_int, quote
from .codebook import GIVEN_TABLES, CodebookSpec, default_label, implicit_tables
from .errors import SpecError

__all__ = ["Kind", "NumberSpec", "Style", "codebook", "number"]


class Kind(StrEnum):
    """The family of a number spec."""

    FLOAT = "float"
    EXPONENT = "exponent"
    INT = "int"
    UINT = "uint"


class Style(StrEnum):
    """How a float spends its codes on Inf, NaN and negative zero (SEMANTICS.md §1).

    ``suffix`` is the spelling in the ``eXmY[bZ][suffix]`` grammar.
    """

    #: IEEE 754: the top exponent is Inf (mantissa 0) and NaN (otherwise). No suffix.
    IEEE = "ieee"
    #: No Inf; NaN is the all-ones magnitude with either sign (as e4m3fn). Suffix ``fn``.
    FN = "fn"
    #: No Inf, no -0; the -0 code is the single NaN (as e4m3fnuz). Suffix ``fnuz``.
    FNUZ = "fnuz"
    #: Inf kept at the all-ones magnitudes, no -0, NaN at the -0 code (IEEE P3109). Suffix ``uz``.
    UZ = "uz"
    #: No Inf and no NaN: every code is a number (OCP FP6/FP4). Suffix ``f``.
    FINITE = "finite"

    @property
    def suffix(self) -> str:
        """The grammar suffix for this style."""
        return _STYLE_SUFFIX[self]


_STYLE_SUFFIX = {
    Style.IEEE: "",
    Style.FN: "fn",
    Style.FNUZ: "fnuz",
    Style.UZ: "uz",
    Style.FINITE: "f",
}
_SUFFIX_STYLE = {v: k for k, v in _STYLE_SUFFIX.items()}

# Formats are carried through float32 arithmetic, so every finite value of a
# float or exponent spec must be a float32 value (SEMANTICS.md §1).
_F32_EMAX = 127
_F32_MIN_EXP = -149


@dataclass(frozen=True)
class NumberSpec:
    """A scalar number format.

    Build one with :func:`number` (``number("e4m3fn")``); the constructor is
    public for programmatic use and validates its fields the same way.

    Attributes:
        kind: float, exponent, int or uint.
        ebits: exponent field width (0 for integers).
        mbits: stored mantissa bits of a float; magnitude bits of an integer
            (``K - 1`` for ``intK``, ``K`` for ``uintK``); 0 for exponent types.
        bias: exponent bias (0 for integers).
        style: Inf/NaN style of a float (IEEE for exponent and integer specs).
    """

    #: float, exponent, int or uint.
    kind: Kind
    #: Exponent field width in bits (0 for integers).
    ebits: int = 0
    #: Mantissa bits (floats), magnitude bits (integers), 0 (exponent types).
    mbits: int = 0
    #: Exponent bias (0 for integers).
    bias: int = 0
    #: Inf/NaN style (floats only; IEEE placeholder otherwise).
    style: Style = Style.IEEE

    def __post_init__(self) -> None:
        _validate(self)
        # Computed now rather than lazily (a lazy cache, functools.cached_property, takes a
        # lock that torch.compile cannot trace) and kept as two ints, not a Fraction, so that
        # a spec made inside a compiled graph can leave it (dynamo rebuilds ints, not
        # Fractions).
        m = self._compute_max_value()
        object.__setattr__(self, "_max_ratio", (m.numerator, m.denominator))

    # ----------------------------------------------------------------- layout
    @property
    def bits(self) -> int:
        """Total storage width in bits."""
        if self.kind is Kind.FLOAT:
            return 1 + self.ebits + self.mbits
        if self.kind is Kind.EXPONENT:
            return self.ebits
        if self.kind is Kind.INT:
            return self.mbits + 1
        return self.mbits

    @property
    def rbits_width(self) -> int:
        """``K``, the random bits of one stochastic rounding into this format (SEMANTICS §3.2).

        8 for formats of at most 8 bits, 16 for wider ones.
        """
        return 8 if self.bits <= 8 else 16

    @property
    def is_float(self) -> bool:
        """True for signed minifloats (every ``eXmY`` with a sign bit)."""
        return self.kind is Kind.FLOAT

    @property
    def is_exponent(self) -> bool:
        """True for unsigned power-of-two exponent types (``eXm0``, as OCP e8m0)."""
        return self.kind is Kind.EXPONENT

    @property
    def is_int(self) -> bool:
        """True for signed (symmetric, two's-complement) integers."""
        return self.kind is Kind.INT

    @property
    def is_uint(self) -> bool:
        """True for unsigned integers."""
        return self.kind is Kind.UINT

    @property
    def is_integer(self) -> bool:
        """True for int and uint specs."""
        return self.kind in (Kind.INT, Kind.UINT)

    @property
    def is_codebook(self) -> bool:
        """False: a NumberSpec is not a codebook (:class:`tcast.CodebookSpec` says True)."""
        return False

    @property
    def has_inf(self) -> bool:
        """True when the format encodes +-Inf."""
        return self.kind is Kind.FLOAT and self.style in (Style.IEEE, Style.UZ)

    @property
    def has_nan(self) -> bool:
        """True when the format encodes NaN."""
        if self.kind is Kind.EXPONENT:
            return True
        return self.kind is Kind.FLOAT and self.style is not Style.FINITE

    @property
    def has_negzero(self) -> bool:
        """True when the format has a distinct -0 code."""
        return self.kind is Kind.FLOAT and self.style in (Style.IEEE, Style.FN, Style.FINITE)

    # ------------------------------------------------------------------ codes
    @property
    def max_code(self) -> int:
        """Magnitude code (no sign bit) of the largest finite value.

        For integers this is ``maxint``; for exponent types the largest non-NaN code.
        """
        if self.kind is Kind.EXPONENT:
            return (1 << self.ebits) - 2
        if self.is_integer:
            return (1 << self.mbits) - 1
        allones = (1 << (self.ebits + self.mbits)) - 1
        if self.style is Style.IEEE:
            return (((1 << self.ebits) - 1) << self.mbits) - 1
        if self.style in (Style.FN, Style.UZ):
            return allones - 1
        return allones

    @property
    def sign_bit(self) -> int:
        """The sign bit mask of a float code (0 for exponent and integer specs)."""
        return 1 << (self.bits - 1) if self.kind is Kind.FLOAT else 0

    @property
    def nan_code(self) -> int | None:
        """The canonical positive NaN code, or None when the format has no NaN.

        IEEE formats use the quiet NaN (top mantissa bit set); ``fn`` the
        all-ones magnitude; ``fnuz``/``uz`` the negative-zero code; exponent
        types the all-ones code.
        """
        if not self.has_nan:
            return None
        if self.kind is Kind.EXPONENT:
            return (1 << self.ebits) - 1
        if self.style is Style.IEEE:
            return (((1 << self.ebits) - 1) << self.mbits) | (1 << (self.mbits - 1))
        if self.style is Style.FN:
            return (1 << (self.ebits + self.mbits)) - 1
        return self.sign_bit

    @property
    def inf_code(self) -> int | None:
        """The +Inf code, or None when the format has no Inf."""
        if not self.has_inf:
            return None
        if self.style is Style.IEEE:
            return ((1 << self.ebits) - 1) << self.mbits
        return (1 << (self.ebits + self.mbits)) - 1

    # ---------------------------------------------------------------- ranges
    def magnitude_value(self, mag: int) -> Fraction:
        """Exact value of a finite non-negative float magnitude code (no sign bit).

        Raises:
            SpecError: for non-float specs or codes outside the finite range.
        """
        if self.kind is not Kind.FLOAT or not 0 <= mag <= self.max_code:
            raise SpecError(f"magnitude code {mag} is not a finite code of {self.code}")
        field = mag >> self.mbits
        frac = mag & ((1 << self.mbits) - 1)
        if field == 0:
            return Fraction(frac) * _pow2(1 - self.bias - self.mbits)
        return Fraction((1 << self.mbits) + frac) * _pow2(field - self.bias - self.mbits)

    @property
    def max_value(self) -> Fraction:
        """The largest finite value, exactly."""
        r = self.__dict__.get("_max_ratio")  # absent only while __post_init__ validates
        return self._compute_max_value() if r is None else Fraction(*r)

    def _compute_max_value(self) -> Fraction:
        if self.kind is Kind.EXPONENT:
            return _pow2(self.max_code - self.bias)
        if self.is_integer:
            return Fraction(self.maxint)
        return self.magnitude_value(self.max_code)

    @property
    def maxfloat(self) -> float:
        """The largest finite value (``finfo.max``)."""
        return _to_float(self.max_value)

    @property
    def emax(self) -> int:
        """Unbiased exponent of the largest finite value: floor(log2 maxfloat)."""
        return _floor_log2(self.max_value)

    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal value (``finfo.minexp``); 0 for integers."""
        if self.kind is Kind.EXPONENT:
            return -self.bias
        if self.is_integer:
            return 0
        return 1 - self.bias

    @property
    def smallest_normal(self) -> float:
        """The smallest positive normal value (``finfo.tiny``); 1 for integers."""
        return _to_float(_pow2(self.emin))

    @property
    def smallest_subnormal(self) -> float:
        """The smallest positive value (``finfo.smallest_subnormal``); 1 for integers."""
        if self.kind is Kind.FLOAT:
            return _to_float(_pow2(self.emin - self.mbits))
        return self.smallest_normal

    @property
    def eps(self) -> float:
        """Distance from 1 to the next larger value: 2**-mbits (1 for exponent types and ints)."""
        return _to_float(_pow2(-self.mbits)) if self.kind is Kind.FLOAT else 1.0

    @property
    def midmax(self) -> float:
        """Midway between maxfloat and 2**(emax + 1) (the midmax scale rule's threshold)."""
        return _to_float((self.max_value + _pow2(self.emax + 1)) / 2)

    @property
    def maxint(self) -> int:
        """Largest integer n such that every integer in [minint, n] is representable."""
        if self.is_integer:
            return (1 << self.mbits) - 1
        if self.kind is Kind.EXPONENT:
            return 2 if self.max_value >= 2 and self.emin <= 0 else 1
        top = min(Fraction(1 << (self.mbits + 1)), self.max_value)
        return top.numerator // top.denominator

    @property
    def minint(self) -> int:
        """Smallest integer of the contiguous representable range (-maxint when signed)."""
        if self.kind in (Kind.UINT, Kind.EXPONENT):
            return 0 if self.kind is Kind.UINT else 1
        return -self.maxint

    @property
    def precision(self) -> int:
        """Significant bits of the element grid: mbits + 1 for floats, K - 1 for intK."""
        if self.kind is Kind.FLOAT:
            return self.mbits + 1
        if self.kind is Kind.INT:
            return self.mbits
        return self.mbits if self.kind is Kind.UINT else 1

    # ----------------------------------------------------------------- naming
    @property
    def code(self) -> str:
        """The canonical code: ``number(spec.code) == spec`` for every spec."""
        if self.kind is Kind.INT:
            return f"int{self.bits}"
        if self.kind is Kind.UINT:
            return f"uint{self.bits}"
        key = (self.ebits, self.mbits, self.bias, self.style)
        if self.kind is Kind.FLOAT and key in _CANONICAL_NAMES:
            return _CANONICAL_NAMES[key]
        default = (1 << (self.ebits - 1)) - 1 if self.ebits else 0
        bias = "" if self.bias == default else f"b{self.bias}"
        suffix = self.style.suffix if self.kind is Kind.FLOAT else ""
        return f"e{self.ebits}m{self.mbits}{bias}{suffix}"

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"NumberSpec({self.code!r})"


def _validate(spec: NumberSpec) -> None:
    kind, e, m, b = spec.kind, spec.ebits, spec.mbits, spec.bias
    if not isinstance(kind, Kind):
        raise SpecError(f"kind {quote(kind)} is not one of {[k.value for k in Kind]}")
    if not isinstance(spec.style, Style):
        raise SpecError(f"style {quote(spec.style)} is not one of {[s.value for s in Style]}")
    for name in ("ebits", "mbits", "bias"):
        check_field(name, getattr(spec, name))
    if kind in (Kind.INT, Kind.UINT):
        width = m + 1 if kind is Kind.INT else m
        if e != 0 or b != 0 or spec.style is not Style.IEEE or not 2 <= width <= 32:
            raise SpecError(
                f"{kind.value} spec needs ebits=0, bias=0 and a width in 2..32 bits, "
                f"got ebits={e}, mbits={m}, bias={b}"
            )
        return
    if kind is Kind.EXPONENT:
        if m != 0 or spec.style is not Style.IEEE or not 4 <= e <= 8:
            raise SpecError(f"exponent type e{e}m{m} needs mbits=0 and 4 <= ebits <= 8")
        lo, hi = -b, (1 << e) - 2 - b
        if lo < -_F32_EMAX or hi > _F32_EMAX:
            raise SpecError(
                f"exponent type e{e}m0b{b} spans 2**{lo}..2**{hi}; powers must lie in "
                f"2**-127..2**127 (a bias in {(1 << e) - 2 - _F32_EMAX}..{_F32_EMAX})"
            )
        return
    if not 1 <= e <= 8 or not 0 <= m <= 23:
        raise SpecError(f"float e{e}m{m} needs 1 <= ebits <= 8 and 0 <= mbits <= 23")
    if spec.style is Style.IEEE and m == 0:
        raise SpecError(
            f"e{e}m0 with IEEE Inf/NaN has no NaN code; spell a signed float with no "
            f"mantissa with a suffix (e{e}m0fn, e{e}m0fnuz, e{e}m0uz, e{e}m0f)"
        )
    if spec.max_code == 0:
        raise SpecError(f"e{e}m{m}{spec.style.suffix} has no nonzero finite value")
    low = 1 - b - m
    # The smallest subnormal is 2**low; checking it first also keeps a huge bias from
    # building a huge Fraction below.
    if b < 0 or low < _F32_MIN_EXP:
        raise SpecError(
            f"bias {b} of e{e}m{m}{spec.style.suffix} puts its smallest value at 2**{low}; "
            f"float32 reaches 2**{_F32_MIN_EXP} (bias at most {1 - m - _F32_MIN_EXP})"
        )
    emax = _floor_log2(spec.max_value)
    if emax > _F32_EMAX:
        raise SpecError(
            f"e{e}m{m}b{b}{spec.style.suffix} has values outside float32 (2**{low} .. "
            f"2**{emax}); tcast formats must be exactly representable in float32"
        )


# ------------------------------------------------------------------ the parser
def _to_float(v: Fraction) -> float:
    """``float(v)``, spelled as the correctly rounded integer quotient it is.

    The same value as ``float(v)`` (Fraction's own conversion divides these two integers), in
    a form that ``torch.compile`` can trace (torch 2.11's dynamo refuses ``float`` of a
    Fraction), so engines may read these properties inside compiled code.
    """
    return v.numerator / v.denominator


def _float(e: int, m: int, bias: int | None = None, style: Style = Style.IEEE) -> NumberSpec:
    return NumberSpec(Kind.FLOAT, e, m, (1 << (e - 1)) - 1 if bias is None else bias, style)


def _p3109(p: int) -> NumberSpec:
    # IEEE P3109 binary8pP (signed, extended): 8 - P exponent bits, P - 1 stored
    # mantissa bits, bias 2**(7 - P), Inf at the all-ones magnitudes, NaN at the
    # -0 code, no -0 (the convention gfloat's format_info_p3109(8, P) follows).
    return NumberSpec(Kind.FLOAT, 8 - p, p - 1, 1 << (7 - p), Style.UZ)


_CANONICAL_NAMES: dict[tuple[int, int, int, Style], str] = {
    (8, 23, 127, Style.IEEE): "float32",
    (5, 10, 15, Style.IEEE): "float16",
    (8, 7, 127, Style.IEEE): "bfloat16",
    **{(8 - p, p - 1, 1 << (7 - p), Style.UZ): f"binary8p{p}" for p in range(1, 8)},
}

#: Whole names (after an optional ``torch.`` prefix) that the grammar alone does
#: not give: ml_dtypes/torch names whose meaning differs from the bare grammar,
#: and short aliases. docs/names.md lists them with their meaning. Read-only.
NAMES: Mapping[str, NumberSpec] = MappingProxyType(
    {
        "float32": _float(8, 23),
        "fp32": _float(8, 23),
        "float": _float(8, 23),
        "float16": _float(5, 10),
        "fp16": _float(5, 10),
        "half": _float(5, 10),
        "bfloat16": _float(8, 7),
        "bf16": _float(8, 7),
        # ml_dtypes / torch float8 names with a non-default bias.
        "float8_e4m3fnuz": _float(4, 3, 8, Style.FNUZ),
        "float8_e5m2fnuz": _float(5, 2, 16, Style.FNUZ),
        "float8_e4m3b11fnuz": _float(4, 3, 11, Style.FNUZ),
        "float8_e8m0fnu": NumberSpec(Kind.EXPONENT, 8, 0, 127),
        "e8m0fnu": NumberSpec(Kind.EXPONENT, 8, 0, 127),
        # ml_dtypes / torch sub-byte floats: "fn" there means finite-only (no NaN).
        "float6_e2m3fn": _float(2, 3, style=Style.FINITE),
        "float6_e3m2fn": _float(3, 2, style=Style.FINITE),
        "float4_e2m1fn": _float(2, 1, style=Style.FINITE),
        "float4_e2m1fn_x2": _float(2, 1, style=Style.FINITE),
        # Upstream tensorcast short names for the torch float8 types.
        "fp8": _float(4, 3, style=Style.FN),
        "fp8n": _float(4, 3, 8, Style.FNUZ),
        "bf8": _float(5, 2),
        "bf8n": _float(5, 2, 16, Style.FNUZ),
    }
)

_FLOAT_RE = re.compile(r"e([0-9]+)m([0-9]+)(?:b([0-9]+))?(fnuz|fn|uz|f)?")
_INT_RE = re.compile(r"(u?)int([0-9]+)")
_P3109_RE = re.compile(r"binary8p([0-9]+)")


def number(code: str | NumberSpec | CodebookSpec) -> NumberSpec | CodebookSpec:
    """Parse a number code into a :class:`NumberSpec` (or a :class:`CodebookSpec`).

    Accepted: ``eXmY[bZ][fn|fnuz|uz|f]`` floats, ``eXm0[bZ]`` exponent types,
    ``intK``/``uintK``, ``binary8p1``..``binary8p7``, ``float32``/``float16``/
    ``bfloat16`` and their aliases, every ml_dtypes and torch float name (with
    an optional ``torch.`` prefix; a ``float8_`` prefix is accepted before any
    8-bit code), and the upstream tensorcast spellings. A code starting with
    ``cb`` is a codebook, ``cb<I><M>[<desc>]_<compute>[_<label>]``, and gives a
    :class:`CodebookSpec`. ``docs/names.md`` has the table and the grammar.

    Args:
        code: the code, a NumberSpec or CodebookSpec (returned unchanged), or a torch,
            NumPy or ml_dtypes dtype whose bits are one tcast format's
            (``torch.float8_e4m3fn``, ``numpy.float16``, ``ml_dtypes.int4``).

    Returns:
        The NumberSpec, or the CodebookSpec for a ``cb`` code.

    Raises:
        SpecError: if ``code`` is not a valid number code; the message names it.
    """
    if isinstance(code, (NumberSpec, CodebookSpec)):
        return code
    if not isinstance(code, str):
        foreign = foreign_dtype(code)
        if foreign is None:
            raise SpecError(
                f"a number code must be a str, a NumberSpec or a torch/NumPy/ml_dtypes dtype, "
                f"got {type(code).__name__}"
            )
        name, label = foreign
        try:
            return number(name)
        except SpecError:
            raise SpecError(
                f"{label} has no tcast number format of the same bits (docs/names.md lists the "
                f"torch, NumPy and ml_dtypes dtypes that have one)"
            ) from None
    if code.startswith("cb"):
        return _parse_codebook(code)
    text = code[len("torch.") :] if code.startswith("torch.") else code
    if text in NAMES:
        return NAMES[text]
    body = text[len("float8_") :] if text.startswith("float8_") else text
    spec = _parse_body(body, code)
    if body is not text and (spec.bits != 8 or spec.is_integer):
        raise SpecError(
            f"{quote(code)}: the float8_ prefix needs an 8-bit float or exponent format, not {body}"
        )
    return spec


def _parse_body(body: str, code: str) -> NumberSpec:
    if m := _FLOAT_RE.fullmatch(body):
        e, mb = code_int(m[1], code), code_int(m[2], code)
        bias = None if m[3] is None else code_int(m[3], code)
        suffix = m[4] or ""
        if _leading_zero(m[1], m[2], m[3]):
            raise SpecError(f"{quote(code)}: numbers in a code are written without leading zeros")
        if mb == 0 and not suffix:
            if not 4 <= e <= 8:
                raise SpecError(
                    f"{quote(code)}: eXm0 without a suffix is an unsigned exponent type, defined "
                    f"for X in 4..8; a signed float with no mantissa needs a suffix (e{e}m0fn, ...)"
                )
            bias_value = (1 << (e - 1)) - 1 if bias is None else bias
            return _checked(code, Kind.EXPONENT, e, 0, bias_value, Style.IEEE)
        if not 1 <= e <= 8 or not 0 <= mb <= 23:
            raise SpecError(f"{quote(code)}: floats are eXmY with X in 1..8 and Y in 0..23")
        bias_value = (1 << (e - 1)) - 1 if bias is None else bias
        return _checked(code, Kind.FLOAT, e, mb, bias_value, _SUFFIX_STYLE[suffix])
    if m := _INT_RE.fullmatch(body):
        width = code_int(m[2], code)
        if m[2].startswith("0") or not 2 <= width <= 32:
            raise SpecError(f"{quote(code)}: integer widths are 2..32 (int2 .. uint32)")
        if m[1]:
            return NumberSpec(Kind.UINT, 0, width)
        return NumberSpec(Kind.INT, 0, width - 1)
    if m := _P3109_RE.fullmatch(body):
        p = code_int(m[1], code)
        if m[1].startswith("0") or not 1 <= p <= 7:
            raise SpecError(f"{quote(code)}: IEEE P3109 8-bit formats are binary8p1 .. binary8p7")
        return _p3109(p)
    raise SpecError(
        f"{quote(code)} is not a number code; expected eXmY[bZ][fn|fnuz|uz|f], eXm0[bZ], intK, "
        f"uintK, binary8pP, float32/float16/bfloat16 or an ml_dtypes/torch name "
        f"(see docs/names.md)"
    )


_CB_HEAD_RE = re.compile(r"cb([0-9])([0-9])([a-z0-9]*)")


def _parse_codebook(code: str) -> CodebookSpec:
    segments = code.split("_")
    head = _CB_HEAD_RE.fullmatch(segments[0])
    if head is None or not 2 <= len(segments) <= 3:
        raise SpecError(
            f"{quote(code)} is not a codebook code; expected cb<I><M>[<desc>]_<compute>"
            f"[_<label>] (as cb41fi_e2m2fnuz or cb40_float32_nf4)"
        )
    ibits, mbits, desc = int(head[1]), int(head[2]), head[3]
    compute = _number_of(segments[1], code)
    label = segments[2] if len(segments) == 3 else ""
    try:
        if len(segments) == 3 and not label:
            raise SpecError("the label after the compute format is empty (leave out its '_')")
        if label:
            _check_label(label)
        if desc:
            return CodebookSpec(
                ibits,
                mbits,
                compute,
                implicit_tables(ibits, mbits, desc, compute),
                desc,
                label,
                True,
            )
        if not label:
            raise SpecError("a codebook code needs a description or the label of given tables")
        if label not in GIVEN_TABLES:
            raise SpecError(
                f"the tables of codebook {quote(label)} are unknown: build it with "
                f"tcast.codebook(tables, compute)"
            )
        i, m, ccode, tables = GIVEN_TABLES[label]
        if (i, m, number(ccode)) != (ibits, mbits, compute):
            raise SpecError(
                f"codebook {label!r} is cb{i}{m}_{ccode}_{label}, not "
                f"cb{ibits}{mbits}_{compute.code}_{label}"
            )
        return CodebookSpec(ibits, mbits, compute, tables, "", label, False)
    except SpecError as err:
        raise SpecError(f"{quote(code)}: {err}") from None


def _number_of(seg: str, code: str) -> NumberSpec:
    try:
        spec = number(seg)
    except SpecError as err:
        raise SpecError(f"{quote(code)}: the compute format: {err}") from None
    if not isinstance(spec, NumberSpec):
        raise SpecError(f"{quote(code)}: the compute format must be a float or int")
    return spec


def _check_label(label: str) -> None:
    try:
        number(label)
    except SpecError:
        return
    raise SpecError(f"codebook label {quote(label)} is a number code; choose another name")


def codebook(
    tables: object,
    compute: str | NumberSpec,
    label: str = "",
    symmetric: bool = False,
) -> CodebookSpec:
    """Build a codebook of given tables.

    ``I`` and ``M`` come from the shape: ``2**M`` mappings of ``2**I`` entries each.

    Args:
        tables: one sequence of numbers (one mapping) or a sequence of ``2**M`` of them.
        compute: the float or int format every entry is a value of (a code or NumberSpec).
        label: the name in the code ``cb<I><M>_<compute>_<label>``; by default ``t`` and 8
            hex digits of the tables' SHA-256.
        symmetric: True for the sign-magnitude layout (``0, v_1..v_P, -0, -v_1..-v_P``);
            otherwise each mapping is strictly ascending.

    Returns:
        The CodebookSpec.

    Raises:
        SpecError: for a shape that is not ``2**M x 2**I`` (I in 2..8, M in 0..4), an entry
            that is not finite or not a value of ``compute``, or a mapping out of order.
    """
    c = number(compute) if isinstance(compute, str) else compute
    if not isinstance(c, NumberSpec):
        raise SpecError(f"codebook compute must be a float or int code or NumberSpec, got {c!r}")
    rows = _rows(tables)
    widths = []
    for n, what in ((len(rows), "mappings"), (len(rows[0]) if rows else 0, "entries")):
        if n < 1 or n & (n - 1):
            raise SpecError(f"codebook tables: the number of {what} {n} is not a power of two")
        widths.append(n.bit_length() - 1)
    if not isinstance(label, str):
        raise SpecError(f"codebook label must be a str, got {quote(label)}")
    if label:
        _check_label(label)
    return CodebookSpec(widths[1], widths[0], c, rows, "", label or default_label(rows), symmetric)


def _rows(tables: object) -> tuple[tuple[float, ...], ...]:
    def entry(v: object) -> float:
        # Any real number type (NumPy's scalars included) whose value is a float exactly;
        # bools are flags, not entries.
        if isinstance(v, bool) or type(v).__name__ == "bool_" or not isinstance(v, numbers.Real):
            raise SpecError(f"codebook entries are numbers, got {quote(v)}")
        try:
            f = float(v)
        except (OverflowError, TypeError, ValueError):
            raise SpecError(f"codebook entry {quote(v)} is not a float") from None
        if f == f and abs(f) != float("inf"):
            exact = int(v) == f if isinstance(v, numbers.Integral) else v == f
            if not exact:
                raise SpecError(f"codebook entry {quote(v)} is not a float")
        return f

    if isinstance(tables, (str, bytes)) or not hasattr(tables, "__len__"):
        raise SpecError(f"codebook tables must be a sequence, got {quote(tables)}")
    items = list(tables)  # type: ignore[call-overload]
    if items and not hasattr(items[0], "__len__"):
        items = [items]  # one mapping
    rows = []
    for row in items:
        if isinstance(row, (str, bytes)) or not hasattr(row, "__len__"):
            raise SpecError(f"codebook tables must be sequences of numbers, got {quote(row)}")
        rows.append(tuple(entry(v) for v in row))
    if len({len(r) for r in rows}) > 1:
        raise SpecError("codebook tables: every mapping needs the same number of entries")
    return tuple(rows)


def _leading_zero(*parts: str | None) -> bool:
    return any(p is not None and len(p) > 1 and p.startswith("0") for p in parts)


def _checked(code: str, kind: Kind, e: int, m: int, b: int, style: Style) -> NumberSpec:
    try:
        return NumberSpec(kind, e, m, b, style)
    except SpecError as err:
        raise SpecError(f"{quote(code)}: {err}") from None
