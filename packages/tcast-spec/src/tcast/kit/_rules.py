"""Every scale and element rule of SEMANTICS.md §5 as data an engine applies with array ops.

An engine reads :func:`cast_rules` once per call and never derives a rule of its own:

* the element maximum ``M`` (fixed point for intK under a power-of-two scale), the saturation
  limits of integer data, and the fixed-point factor;
* for power-of-two scales, an :class:`ExponentScaleRule`: all five scale modes (and the
  power-of-two range scale of uint data) reduce to "add 1 iff the 24-bit significand of the
  amax exceeds an integer threshold", so a kernel needs two integers, not a mode;
* for float scales, zero points and two-level scaling, a :class:`~tcast.kit.Recipe` of ordered
  float32 steps (``tcast.kit._recipe``).

The exact model (``tcast.exact.exponent_scale``) keeps its own per-mode definitions as the
oracle: the tests derive every threshold here from it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from fractions import Fraction

from ..datatype import DataType
from ..errors import SpecError
from ..modes import ScaleMode
from ..number import NumberSpec, Style
from ._given import check_given_parts
from ._recipe import (
    ELEMENT_DECODE,
    ELEMENT_DECODE_FIXED,
    ELEMENT_DECODE_ZERO,
    ELEMENT_ENCODE,
    ELEMENT_ENCODE_FIXED,
    ELEMENT_ENCODE_ZERO,
    EXPONENT_DECODE,
    EXPONENT_SCALE,
    FLOAT_SCALE,
    GIVEN_EXPONENT_SCALE,
    GIVEN_FLOAT_SCALE,
    GIVEN_TENSOR_SCALE,
    GIVEN_TILE_SCALE,
    GIVEN_TWO_LEVEL_SCALES,
    GIVEN_UINT_EXPONENT_SCALE,
    GIVEN_UINT_EXPONENT_SCALE_ZERO,
    GIVEN_UINT_EXPONENT_ZERO,
    GIVEN_UINT_FLOAT_SCALE,
    GIVEN_UINT_FLOAT_SCALE_ZERO,
    GIVEN_UINT_FLOAT_ZERO,
    TWO_LEVEL_DECODE,
    TWO_LEVEL_SCALE,
    UINT_DECODE,
    UINT_EXPONENT_SCALE,
    UINT_FLOAT_SCALE,
    Recipe,
)

__all__ = [
    "NEVER",
    "CastRules",
    "ExponentScaleRule",
    "cast_rules",
    "element_max",
    "exponent_scale_rule",
    "given_exponent_rule",
    "given_scale_recipe",
    "nan_keeps_sign",
    "range_scale_rule",
    "scale_bounds",
    "sig24",
]

#: A threshold no 24-bit significand exceeds: the scale never moves up a binade.
NEVER = (1 << 24) - 1
#: The largest float32 value.
F32_MAX = float((2 - Fraction(1, 1 << 23)) * (Fraction(2) ** 127))
_TWO23 = 1 << 23


def element_max(n: NumberSpec, power_of_two_scale: bool) -> Fraction:
    """The element maximum ``M`` of SEMANTICS.md §0 and §5.

    An intK element under a power-of-two scale is fixed point with K-2 fraction bits (OCP
    MXINT8: 127/64); under a float scale, and for every other format, it is the format's
    largest finite value.
    """
    if n.is_int and power_of_two_scale:
        return Fraction(n.maxint, 1 << (n.bits - 2))
    return n.max_value


def nan_keeps_sign(n: NumberSpec) -> bool:
    """Whether the virtual result of an input NaN keeps its sign (SEMANTICS.md §4.2, §7).

    Formats with one unsigned NaN (fnuz, P3109) give +NaN; every other format keeps the sign
    (through a signed NaN code, or through the input when the format has no NaN). A codebook
    has no style (and no NaN code): it keeps the sign.
    """
    style = getattr(n, "style", None)
    return style is not Style.FNUZ and style is not Style.UZ


def sig24(value: float) -> tuple[int, int]:
    """``(floor(log2 v), significand * 2**23)`` of a positive finite float32 value, exactly.

    The significand is normalized to ``[2**23, 2**24)`` for subnormal values too.
    """
    bits = struct.unpack("<I", struct.pack("<f", value))[0] & 0x7FFFFFFF
    field, mant = bits >> 23, bits & 0x7FFFFF
    if field:
        return field - 127, mant | _TWO23
    shift = 24 - mant.bit_length()  # subnormal: normalize the significand
    return -126 - shift, mant << shift


@dataclass(frozen=True)
class ExponentScaleRule:
    """A power-of-two scale code from an amax (or a uint range), as two integers.

    For a positive finite float32 ``a`` with ``floor(log2 a) = E`` and 24-bit significand
    ``S = a / 2**E * 2**23``::

        code = clamp(E + offset + (S > threshold), 0, max_code)

    ``a = 0`` gives code 0; an infinite uint range gives ``max_code``.

    Attributes:
        offset: the scale format's bias minus the exponent of the element maximum (for a
            uint range: bias + 1 - bit length of maxint).
        threshold: the significand above which the scale moves up a binade
            (:data:`NEVER` for floor).
        max_code: the largest finite scale code.
        field_exact: whether ``E`` may be read from the float32 exponent field
            (``(bits >> 23) - 127``) for every amax, subnormals included: they clamp to
            code 0 either way.
    """

    offset: int
    threshold: int
    max_code: int
    field_exact: bool

    def code(self, a: float) -> int:
        """The scale code of one non-negative finite float32 value (a scalar reference)."""
        if a == 0:
            return 0
        e, s = sig24(a)
        return min(max(e + self.offset + (s > self.threshold), 0), self.max_code)


def _floor_log2(v: Fraction) -> int:
    e = v.numerator.bit_length() - v.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > v else e


def _rule(offset: int, threshold: int, s: NumberSpec) -> ExponentScaleRule:
    # a zero or subnormal amax has exponent field 0; reading it as E = -127 is exact when
    # every such amax clamps to code 0: E + offset + 1 <= 0 for E <= -127
    bump = 1 if threshold < NEVER else 0
    return ExponentScaleRule(offset, threshold, s.max_code, -127 + offset + bump <= 0)


def given_exponent_rule(s: NumberSpec) -> ExponentScaleRule:
    """The code of a given scale in the exponent format ``s`` (SEMANTICS.md §5.12).

    The smallest power of two ``2**e >= v``: ``e = floor(log2 v)``, one more when the
    significand exceeds 1 (threshold ``2**23``); code ``clamp(e + bias, 0, max_code)``.
    """
    return _rule(s.bias, _TWO23, s)


def given_scale_recipe(
    rules: CastRules, scale: bool, zero: bool = False, tenscale: bool = False
) -> Recipe:
    """The scale recipe of a cast whose ``scale``, ``zero`` and ``tenscale`` are given.

    Its inputs are the given values (``gscale``, ``gzero``, ``gtenscale``) and the block
    reductions the computed parts still need (``amax``, ``tamax``, ``lo``, ``hi``); its
    outputs are those of ``rules.scale``. SEMANTICS.md §5.12.

    Raises:
        SpecError: for parts the datatype has no place for, or none given.
    """
    dt = rules.dtype
    n, ss = dt.nspec, dt.sspec
    if not (scale or zero or tenscale):
        raise SpecError(f"no given scale parts for {dt.name}: use rules.scale")
    check_given_parts(dt, scale or None, zero or None, tenscale or None)
    assert ss is not None  # check_given_parts refuses unscaled datatypes
    pow2 = ss.scale.is_exponent
    if n.is_uint:
        table = {
            (True, False): (GIVEN_UINT_FLOAT_SCALE, GIVEN_UINT_EXPONENT_SCALE),
            (False, True): (GIVEN_UINT_FLOAT_ZERO, GIVEN_UINT_EXPONENT_ZERO),
            (True, True): (GIVEN_UINT_FLOAT_SCALE_ZERO, GIVEN_UINT_EXPONENT_SCALE_ZERO),
        }
        float_recipe, exponent_recipe = table[scale, zero]
        # chosen by a condition, not by indexing with the bool: Dynamo (torch 2.11) refuses
        # a bool as a tuple index when a torch.compile caller traces this
        return exponent_recipe if pow2 else float_recipe
    if dt.is_multiscale:
        if scale and tenscale:
            return GIVEN_TWO_LEVEL_SCALES
        return GIVEN_TILE_SCALE if scale else GIVEN_TENSOR_SCALE
    return GIVEN_EXPONENT_SCALE if pow2 else GIVEN_FLOAT_SCALE


def exponent_scale_rule(n: NumberSpec, s: NumberSpec, mode: ScaleMode) -> ExponentScaleRule:
    """The power-of-two scale rule of signed (float, int) elements (SEMANTICS.md §5.3).

    With ``M = 2**emax * tau`` (tau in [1, 2)), the modes bump the scale when the amax's
    significand sigma (in [1, 2)) is: floor: never; ceil: sigma > 1; midmax: sigma >
    (tau + 2) / 2; topbinade: sigma > tau; option3: sigma rounds (to nearest even, to the
    element precision p) up to 2, i.e. ``S >= 2**24 - 2**(23 - p)``. For an integer ``S``,
    ``S > t`` equals ``S > floor(t * 2**23)``, so each threshold is an exact integer.
    """
    m = element_max(n, True)
    emax = _floor_log2(m)
    tau = m / Fraction(2) ** emax
    if mode is ScaleMode.FLOOR:
        t = NEVER
    elif mode is ScaleMode.CEIL:
        t = _TWO23
    elif mode is ScaleMode.MIDMAX:
        q = (tau + 2) / 2 * _TWO23
        t = q.numerator // q.denominator
    elif mode is ScaleMode.TOPBINADE:
        q = tau * _TWO23
        t = q.numerator // q.denominator
    else:  # OPTION3
        sh = 24 - n.precision
        t = NEVER if sh <= 0 else (1 << 24) - (1 << (sh - 1)) - 1
    return _rule(s.bias - emax, t, s)


def range_scale_rule(n: NumberSpec, s: NumberSpec) -> ExponentScaleRule:
    """The power-of-two scale of uint data: the smallest ``2**e`` with range <= maxint * 2**e.

    SEMANTICS.md §5.7.
    With ``maxint = mu * 2**(B-1)`` (mu in [1, 2), B its bit length) and ``range = sigma *
    2**E``: ``e = E + 1 - B`` when ``sigma <= mu``, else one more; the threshold is
    ``floor(mu * 2**23)``.
    """
    b = n.maxint.bit_length()
    t = n.maxint << (24 - b) if b <= 24 else n.maxint >> (b - 24)
    return _rule(s.bias + 1 - b, t, s)


@dataclass(frozen=True)
class CastRules:
    """Every rule a scaled or unscaled cast of one datatype under one scale mode applies.

    Attributes:
        dtype: the datatype.
        scalemode: the scale mode.
        elem_max: ``M`` (fixed point for intK under a power-of-two scale).
        elem_max_f32: ``fl32(M)`` as the float scale recipes use it (exact for float formats,
            rounded for wide integer maxima).
        fixed: intK under a power-of-two scale: ``2**(K-2)`` (the scaled value is multiplied
            by it before the integer rounding); else None.
        int_limits: integer data: the saturation limits ``(lo, hi)`` of the code's value.
        nan_keeps_sign: see :func:`nan_keeps_sign`.
        exponent: the power-of-two scale rule (signed data: from the amax; uint data: from
            the range), else None.
        scale: the recipe from the block reduction (``amax``, or ``lo``/``hi`` for uint data,
            plus ``tamax`` for two-level scaling) to ``scale`` [``zero``, ``tenscale``],
            ``recip``, [``zval``] and ``dec``; None when unscaled.
        encode: the element steps before rounding: ``x`` -> ``xs``.
        decode: the element steps after decoding: ``q`` -> ``v``.
        upcast: the recipe from stored codes (``scale`` [``tenscale``, ``zero``]) to
            ``dec`` [``zval``]; None when unscaled. A block is non-finite (NaN throughout)
            when its scale code is the scale format's NaN code, or (two-level) when the
            tensor scale decodes to NaN.
        constants: ``(name, value)`` pairs of the float32 constants the recipes use
            (``ONE``, ``ZERO``, ``F32_MAX``, ``M``; ``MS_M`` = ``fl32(fl32(M_S) * fl32(M))``
            for two-level scaling; ``FIXED`` and ``INV_FIXED`` for fixed point).
    """

    dtype: DataType
    scalemode: ScaleMode
    elem_max: Fraction
    elem_max_f32: float
    fixed: int | None
    int_limits: tuple[int, int] | None
    nan_keeps_sign: bool
    exponent: ExponentScaleRule | None
    scale: Recipe | None
    encode: Recipe
    decode: Recipe
    upcast: Recipe | None
    constants: tuple[tuple[str, float], ...]


def _f32_of(v: Fraction) -> float:
    """fl32 of an exact value, through binary64 (both roundings to nearest even)."""
    d = v.numerator / v.denominator
    return struct.unpack("<f", struct.pack("<f", d))[0] if abs(d) < 2.0**128 else float("inf")


def cast_rules(
    dt: DataType, scalemode: ScaleMode = ScaleMode.FLOOR, *, remember: bool = True
) -> CastRules:
    """The rules of one datatype under one scale mode, memoized on the datatype.

    The memo is the datatype's own (not a global one): a caller compiled with torch.compile
    guards on the entries of the datatypes it casts, so casts of other datatypes elsewhere
    never invalidate it. ``remember=False`` computes missing rules without storing them:
    engines pass it while torch.compile traces, where storing would be a side effect dynamo
    must replay (it cannot rebuild a frozen dataclass made during the trace).
    """
    memo = dt.__dict__["_rules_memo"]
    # keyed by the mode's str: a compiled caller guards on the memo's keys, and Dynamo
    # builds guards on str keys, not on enum members
    key = scalemode.value
    rules = memo.get(key)
    if rules is None:
        rules = _make_rules(dt, scalemode)
        if remember:
            memo[key] = rules
    return rules


def _make_rules(dt: DataType, scalemode: ScaleMode) -> CastRules:
    n, ss = dt.nspec, dt.sspec
    pow2 = ss is not None and ss.scale.is_exponent
    m = element_max(n, pow2)
    fixed = 1 << (n.bits - 2) if n.is_int and pow2 else None
    limits = None
    if n.is_integer:
        limits = (0 if n.is_uint else -n.maxint, n.maxint)
    exp_rule = recipe = upcast = None
    encode, decode = ELEMENT_ENCODE, ELEMENT_DECODE
    if ss is not None:
        upcast = (
            UINT_DECODE if n.is_uint else TWO_LEVEL_DECODE if dt.is_multiscale else EXPONENT_DECODE
        )
        if n.is_uint:
            recipe = UINT_EXPONENT_SCALE if pow2 else UINT_FLOAT_SCALE
            exp_rule = range_scale_rule(n, ss.scale) if pow2 else None
            encode, decode = ELEMENT_ENCODE_ZERO, ELEMENT_DECODE_ZERO
        elif pow2:
            recipe = EXPONENT_SCALE
            exp_rule = exponent_scale_rule(n, ss.scale, scalemode)
            if fixed is not None:
                encode, decode = ELEMENT_ENCODE_FIXED, ELEMENT_DECODE_FIXED
        else:
            recipe = TWO_LEVEL_SCALE if dt.is_multiscale else FLOAT_SCALE
    m32 = _f32_of(Fraction(m))
    consts = {"ONE": 1.0, "ZERO": 0.0, "F32_MAX": F32_MAX, "M": m32}
    if dt.is_multiscale:
        consts["MS_M"] = _f32_of(Fraction(_f32_of(ss.scale.max_value)) * Fraction(m32))
    if fixed is not None:
        consts["FIXED"], consts["INV_FIXED"] = float(fixed), 1.0 / fixed
    return CastRules(
        dt,
        scalemode,
        m,
        m32,
        fixed,
        limits,
        nan_keeps_sign(n),
        exp_rule,
        recipe,
        encode,
        decode,
        upcast,
        tuple(consts.items()),
    )


def scale_bounds(s: NumberSpec) -> tuple[float, float]:
    """The clamp of a float scale (SEMANTICS.md §5.5): ``(smallest normal, max)`` of ``s``.

    Both are float32 values (scale formats have a smallest normal of at least 2**-127).
    """
    return s.smallest_normal, _f32_of(s.max_value)
