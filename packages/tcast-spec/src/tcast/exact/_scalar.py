"""Exact encode and decode of single values (SEMANTICS.md §2-§4)."""

from __future__ import annotations

import math
import operator
from fractions import Fraction

from .._dyadic import floor_log2 as _floor_log2
from .._dyadic import pow2 as _pow2
from ..errors import SpecError
from ..modes import RoundMode, round_mode
from ..number import Kind, NumberSpec, Style, number

__all__ = ["decode", "decode_exact", "encode", "round_magnitude"]

_HALF = Fraction(1, 2)


def round_magnitude(
    a: Fraction,
    ulp: Fraction,
    mode: RoundMode,
    rbits: int | None,
    odd: bool | None = None,
    width: int | None = None,
) -> Fraction:
    """Round a non-negative exact value to a multiple of ``ulp``.

    Args:
        a: the magnitude.
        ulp: the spacing of the destination grid around ``a``.
        mode: the round mode.
        rbits: the ``width``-bit random integer (stochastic only).
        odd: whether the lower neighbour is an odd code, for ties to even; None
            means the parity of ``floor(a / ulp)``.
        width: ``K``, the random width of the destination (stochastic only; SEMANTICS.md
            §3.2, ``NumberSpec.rbits_width``).

    Returns:
        The rounded magnitude (it may be one ulp above the binade of ``a``).
    """
    q = a / ulp
    n = q.numerator // q.denominator
    frac = q - n
    if mode is RoundMode.EVEN:
        is_odd = (n % 2 == 1) if odd is None else odd
        up = frac > _HALF or (frac == _HALF and is_odd)
    elif mode is RoundMode.AWAY:
        up = frac >= _HALF
    elif mode is RoundMode.ZERO:
        up = frac > _HALF
    elif mode is RoundMode.TRUNC:
        up = False
    else:
        if rbits is None or width is None:
            raise SpecError("stochastic rounding needs random bits (rbits) and their width")
        # Up iff floor(frac * 2**K) + r >= 2**K: probability floor(frac * 2**K) / 2**K,
        # never up for an exact value, always down for r == 0.
        scaled = frac * (1 << width)
        up = (scaled.numerator // scaled.denominator) + rbits >= (1 << width)
    return (n + (1 if up else 0)) * ulp


def _check_rbits(mode: RoundMode, rbits: int | None, n: NumberSpec) -> int | None:
    """The random integer of ``n``'s ``rbits_width`` bits as a Python int, or None.

    NumPy integers are accepted.
    """
    if mode is RoundMode.STOCHASTIC:
        width = n.rbits_width
        try:
            r = None if rbits is None or isinstance(rbits, bool) else operator.index(rbits)
        except TypeError:
            r = None
        if r is None or not 0 <= r < (1 << width):
            raise SpecError(
                f"stochastic rounding needs rbits, an int in [0, 2**{width}) ({width} random "
                f"bits for this format, SEMANTICS.md §3.2), got {rbits!r}"
            )
        return r
    if rbits is not None:
        raise SpecError(f"rbits are only used by stochastic rounding, not by {mode.value!r}")
    return None


def _as_number(value: object) -> float | int | Fraction:
    # Python and NumPy scalars alike (anything real that converts exactly).
    if isinstance(value, bool | str) or not hasattr(value, "__float__"):
        raise SpecError(f"cannot encode {value!r}: not a real number")
    if isinstance(value, float | int | Fraction):
        return value
    return float(value)  # NumPy scalars: exact for float16/float32/float64


def _as_fraction(value: float | int | Fraction) -> Fraction:
    return value if isinstance(value, Fraction) else Fraction(value)


def encode(
    value: float | int | Fraction,
    nspec: NumberSpec | str,
    roundmode: RoundMode | str = "even",
    rbits: int | None = None,
    saturate: bool = True,
) -> int:
    """Encode one exact value into ``nspec`` (an unscaled cast of one element).

    Floats round their magnitude onto the format's grid (unbounded above, so
    that overflow is seen), then apply the overflow rule; integers round to an
    integer and clamp to [minint, maxint]; exponent types round onto the powers
    of two.

    Args:
        value: a Python float (NaN and +-Inf allowed), int or Fraction.
        nspec: the destination format.
        roundmode: even, away (nearest), zero, trunc or stochastic.
        rbits: the random integer for stochastic rounding, ``nspec.rbits_width`` bits.
        saturate: overflow gives +-max (True) or, IEEE-style, Inf / NaN (False).

    Returns:
        The code: the unsigned bit pattern (two's complement for ints).

    Raises:
        SpecError: for a bad mode, or rbits missing/given wrongly.
    """
    n = number(nspec)
    mode = round_mode(roundmode)
    rbits = _check_rbits(mode, rbits, n)
    value = _as_number(value)
    if isinstance(value, float) and math.isnan(value):
        return _encode_nan(n, math.copysign(1.0, value) < 0)
    negative = (math.copysign(1.0, value) < 0) if isinstance(value, float) else value < 0
    if isinstance(value, float) and math.isinf(value):
        return _encode_overflow(n, negative, saturate, mode, is_inf=True)
    a = abs(_as_fraction(value))
    if n.kind is Kind.EXPONENT:
        return _encode_exponent(n, a, negative, mode, rbits, saturate)
    if n.is_integer:
        m = round_magnitude(a, Fraction(1), mode, rbits, width=n.rbits_width)
        m = min(m, Fraction(n.maxint))
        if negative and n.is_uint:
            return 0
        return _int_code(n, -int(m) if negative else int(m))
    # float: the grid spacing is that of the value's binade, never below emin.
    if a == 0:
        return n.sign_bit if (negative and n.has_negzero) else 0
    e = max(_floor_log2(a), n.emin)
    ulp = _pow2(e - n.mbits)
    # Ties go to the even *code*; with no mantissa bits that is the exponent's parity.
    lo = (a // ulp) * ulp
    odd = bool(_magnitude_code(n, lo) & 1) if lo else False
    m = round_magnitude(a, ulp, mode, rbits, odd=odd, width=n.rbits_width)
    if m > n.max_value:
        return _encode_overflow(n, negative, saturate, mode, is_inf=False)
    mag = _magnitude_code(n, m)
    if mag == 0 and not n.has_negzero:
        return 0
    return (n.sign_bit | mag) if negative else mag


def _magnitude_code(n: NumberSpec, m: Fraction) -> int:
    if m == 0:
        return 0
    e = _floor_log2(m)
    if e < n.emin:
        return int(m / _pow2(n.emin - n.mbits))
    return ((e + n.bias) << n.mbits) | int(m / _pow2(e - n.mbits) - (1 << n.mbits))


def _int_code(n: NumberSpec, v: int) -> int:
    return v & ((1 << n.bits) - 1)


def _encode_nan(n: NumberSpec, negative: bool) -> int:
    if n.kind is Kind.FLOAT:
        if not n.has_nan:
            return 0  # finite-only: no NaN code; SEMANTICS.md §4.2
        code = n.nan_code
        if n.style in (Style.IEEE, Style.FN) and negative:
            code |= n.sign_bit
        return code
    if n.kind is Kind.EXPONENT:
        return n.nan_code
    return 0  # integers have no NaN code


def _encode_overflow(
    n: NumberSpec, negative: bool, saturate: bool, mode: RoundMode, is_inf: bool
) -> int:
    if n.kind is Kind.EXPONENT:
        if negative:
            return n.nan_code
        return n.max_code if saturate else n.nan_code
    if n.is_integer:
        if negative and n.is_uint:
            return 0
        return _int_code(n, -n.maxint if negative else n.maxint)
    sign = n.sign_bit if negative else 0
    # Round toward zero never overflows to Inf (IEEE 754 §7.4), except that an
    # infinite input stays infinite where the format has Inf.
    finite_max = saturate or (mode is RoundMode.TRUNC and not is_inf)
    if finite_max or not (n.has_inf or n.has_nan):
        return sign | n.max_code
    if n.has_inf:
        return sign | n.inf_code
    return _encode_nan(n, negative)


def _encode_exponent(
    n: NumberSpec, a: Fraction, negative: bool, mode: RoundMode, rbits: int | None, saturate: bool
) -> int:
    if negative or a == 0:
        return n.nan_code  # powers of two are positive: no code for zero or below
    e = _floor_log2(a)
    code_lo = e + n.bias
    # The grid between 2**e and 2**(e+1) has one step; ties go to the even code.
    m = round_magnitude(a, _pow2(e), mode, rbits, odd=code_lo % 2 == 1, width=n.rbits_width)
    e_out = e + (1 if m > _pow2(e) else 0)
    code = e_out + n.bias
    if code < 0:
        return 0
    if code > n.max_code:
        return n.max_code if saturate else n.nan_code
    return code


def decode_exact(code: int, nspec: NumberSpec | str) -> Fraction | float:
    """Decode a code to its exact value: a Fraction, or a float for NaN, +-Inf and -0.

    Raises:
        SpecError: if ``code`` is not a code of the format.
    """
    n = number(nspec)
    if not isinstance(code, int) or isinstance(code, bool) or not 0 <= code < (1 << n.bits):
        raise SpecError(f"code {code!r} not in range [0, 2**{n.bits}) of {n.code}")
    if n.kind is Kind.EXPONENT:
        return math.nan if code == n.nan_code else _pow2(code - n.bias)
    if n.kind is Kind.INT:
        return Fraction(code - (1 << n.bits) if code >> (n.bits - 1) else code)
    if n.kind is Kind.UINT:
        return Fraction(code)
    negative = bool(code & n.sign_bit)
    mag = code & (n.sign_bit - 1)
    if n.has_nan and code == n.nan_code:
        return -math.nan if (negative and n.style in (Style.IEEE, Style.FN)) else math.nan
    if n.style is Style.IEEE and (mag >> n.mbits) == (1 << n.ebits) - 1:
        if mag & ((1 << n.mbits) - 1):
            return -math.nan if negative else math.nan
        return -math.inf if negative else math.inf
    if n.style is Style.FN and mag == (1 << (n.ebits + n.mbits)) - 1:
        return -math.nan if negative else math.nan
    if n.style is Style.UZ and mag == (1 << (n.ebits + n.mbits)) - 1:
        return -math.inf if negative else math.inf
    value = n.magnitude_value(mag)
    if negative:
        return -0.0 if value == 0 else -value
    return value


def decode(code: int, nspec: NumberSpec | str) -> float:
    """Decode a code to a Python float (exact for every format tcast defines).

    NaN codes give NaN (negative NaN for negative NaN codes of IEEE and fn
    formats), Inf codes +-Inf, the -0 code -0.0.

    Raises:
        SpecError: if ``code`` is not a code of the format.
    """
    v = decode_exact(code, nspec)
    return v if isinstance(v, float) else float(v)
