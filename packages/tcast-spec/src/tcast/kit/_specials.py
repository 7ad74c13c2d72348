"""The special codes of an element format (SEMANTICS.md §2, §4.1-§4.3) as one record.

Which code an overflowing, infinite, NaN or zero input gets, and which codes decode to
±Inf or NaN, follow from the number spec (and, for the encode, from the round mode and
``saturate``). :func:`special_codes` decides them once; an engine selects between the codes
it names (a kernel takes them as constants) and never reads a style to decide them itself.

``tcast.exact.encode`` and ``tcast.exact.decode`` keep their own statement of these rules as
the oracle: the tests compare this record with them over every code of many formats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._text import quote
from ..errors import SpecError
from ..modes import RoundMode, round_mode
from ..number import Kind, NumberSpec, Style, number

__all__ = ["SpecialCodes", "special_codes"]


@dataclass(frozen=True)
class SpecialCodes:
    """The codes of special inputs, and the codes that decode to specials, of one format.

    Encode: each pair is ``(code of a positive input, code of a negative input)``, where
    "negative" is the input's sign bit (``-0.0`` and NaNs with the sign bit set included).
    :meth:`takes_sign` says whether a pair is "the code, with the sign bit set for a negative
    input", the form a kernel applies with one OR.

    Decode: a float code with magnitude ``mag = code & (sign_bit - 1)`` decodes to ±Inf (the
    code's sign) when ``mag == inf_magnitude``, to NaN with the code's sign when
    ``mag >= nan_magnitude``, and to the positive NaN when ``code == unsigned_nan``; every
    other code is a number. The three sets are disjoint, so a kernel may apply them in any
    order. An integer format has no such codes.

    Attributes:
        nspec: the element format.
        roundmode: the round mode the encode codes are for.
        saturate: the overflow rule the encode codes are for.
        sign_bit: the sign bit of a float code; 0 for exponent and integer formats (an int's
            sign is its two's complement, already in the pairs).
        overflow: finite inputs whose rounded magnitude exceeds the largest finite value.
        inf: ±Inf inputs.
        nan: NaN inputs; ``(0, 0)`` for formats with no NaN code (finite-only floats,
            integers), whose virtual result still keeps NaN (SEMANTICS.md §7).
        zero: ±0 inputs, and inputs whose magnitude rounds to zero (for exponent types,
            which have no zero, the NaN code: their small values round to code 0 instead).
        negative: formats with no negative values: the code of every negative input (its
            NaN code for an exponent type, 0 for a uint); None for signed formats.
        inf_magnitude: the magnitude that decodes to ±Inf; None when the format has no Inf.
        nan_magnitude: the magnitudes from this one to the all-ones magnitude decode to NaN
            with the code's sign (IEEE and fn floats); None when the format has no such NaN.
        unsigned_nan: the one code that decodes to the positive NaN (the −0 code of fnuz and
            uz floats, the all-ones code of exponent types); None when there is none.
    """

    nspec: NumberSpec
    roundmode: RoundMode
    saturate: bool
    sign_bit: int
    overflow: tuple[int, int]
    inf: tuple[int, int]
    nan: tuple[int, int]
    zero: tuple[int, int]
    negative: int | None
    inf_magnitude: int | None
    nan_magnitude: int | None
    unsigned_nan: int | None

    def takes_sign(self, pair: tuple[int, int]) -> bool:
        """Whether ``pair`` is a code without the sign bit and that code with it (floats only).

        False for a pair of one code (the unsigned NaN of fnuz and uz formats is the −0
        code: it has the sign bit for either sign).
        """
        sb = self.sign_bit
        return sb != 0 and not pair[0] & sb and pair[1] == pair[0] | sb

    def decoded(self, code: int) -> float | None:
        """The special value ``code`` decodes to (``±inf``, ``±nan``), or None for a number.

        A scalar statement of the decode rule for tests and documentation; ``code`` is taken
        as an unsigned code of the format's width.
        """
        if code == self.unsigned_nan:
            return math.nan
        if self.sign_bit == 0:
            return None
        negative = bool(code & self.sign_bit)
        mag = code & (self.sign_bit - 1)
        if self.nan_magnitude is not None and mag >= self.nan_magnitude:
            return -math.nan if negative else math.nan
        if mag == self.inf_magnitude:
            return -math.inf if negative else math.inf
        return None


def _float_codes(n: NumberSpec, mode: RoundMode, saturate: bool) -> dict:
    sb = n.sign_bit
    allones = sb - 1

    def signed(c: int) -> tuple[int, int]:
        return (c, c | sb)

    if n.style is Style.IEEE:
        # the top exponent field: mantissa 0 is Inf; every other mantissa a NaN
        nan, inf_mag, nan_mag, unsigned_nan = signed(n.nan_code), n.inf_code, n.inf_code + 1, None
    elif n.style is Style.FN:
        nan, inf_mag, nan_mag, unsigned_nan = signed(n.nan_code), None, allones, None
    elif n.style is Style.FNUZ:
        nan, inf_mag, nan_mag, unsigned_nan = (sb, sb), None, None, sb
    elif n.style is Style.UZ:
        nan, inf_mag, nan_mag, unsigned_nan = (sb, sb), allones, None, sb
    else:  # finite-only: NaN encodes to +0 (SEMANTICS.md §4.2)
        nan, inf_mag, nan_mag, unsigned_nan = (0, 0), None, None, None
    finite_max = signed(n.max_code)
    # the IEEE option: overflow to Inf where the format has it, else to NaN, else to max;
    # round toward zero never overflows a finite input past max (SEMANTICS.md §4.1)
    if saturate or not (n.has_inf or n.has_nan):
        inf = finite_max
    else:
        inf = signed(n.inf_code) if n.has_inf else nan
    overflow = finite_max if mode is RoundMode.TRUNC else inf
    zero = signed(0) if n.has_negzero else (0, 0)
    return dict(
        sign_bit=sb,
        overflow=overflow,
        inf=inf,
        nan=nan,
        zero=zero,
        negative=None,
        inf_magnitude=inf_mag,
        nan_magnitude=nan_mag,
        unsigned_nan=unsigned_nan,
    )


def _exponent_codes(n: NumberSpec, saturate: bool) -> dict:
    # powers of two only: zero, negative values and NaN have no code but the NaN code
    nan = n.nan_code
    big = n.max_code if saturate else nan
    return dict(
        sign_bit=0,
        overflow=(big, nan),
        inf=(big, nan),
        nan=(nan, nan),
        zero=(nan, nan),
        negative=nan,
        inf_magnitude=None,
        nan_magnitude=None,
        unsigned_nan=nan,
    )


def _integer_codes(n: NumberSpec) -> dict:
    # integers saturate at ±maxint in every mode; NaN has no code and gives 0 (§4.3)
    neg_max = 0 if n.is_uint else -n.maxint & ((1 << n.bits) - 1)
    return dict(
        sign_bit=0,
        overflow=(n.maxint, neg_max),
        inf=(n.maxint, neg_max),
        nan=(0, 0),
        zero=(0, 0),
        negative=0 if n.is_uint else None,
        inf_magnitude=None,
        nan_magnitude=None,
        unsigned_nan=None,
    )


# records by (spec, round mode, saturate): at most 10 per spec an engine casts to
_MEMO: dict[tuple[NumberSpec, RoundMode, bool], SpecialCodes] = {}


def special_codes(
    nspec: NumberSpec | str,
    roundmode: RoundMode | str = RoundMode.EVEN,
    saturate: bool = True,
    *,
    remember: bool = True,
) -> SpecialCodes:
    """The special codes of ``nspec`` encoded under ``roundmode`` and ``saturate``.

    Memoized for a spec, mode enum and bool given as such. ``remember=False`` computes the
    record without reading or storing the memo: engines pass it while ``torch.compile``
    traces them, where a store is a side effect the compiler must replay (as for
    :func:`cast_rules`). The decode fields depend on ``nspec`` alone.

    Args:
        nspec: a float, exponent, int or uint number spec or its code (codebooks have no
            special codes).
        roundmode: the round mode (enum or name); only ``trunc`` changes a code (overflow).
        saturate: overflow to ±max (True) or, IEEE-style, to Inf / NaN (False).
        remember: use the memo.

    Returns:
        The record.

    Raises:
        SpecError: for an unknown round mode or spec code, or a codebook.
    """
    key = None
    if remember and type(nspec) is NumberSpec and type(roundmode) is RoundMode:
        if type(saturate) is bool:
            key = (nspec, roundmode, saturate)
            found = _MEMO.get(key)
            if found is not None:
                return found
    if isinstance(nspec, str):
        nspec = number(nspec)
    if not isinstance(nspec, NumberSpec):
        raise SpecError(
            f"special codes are those of a number spec (float, exponent, int, uint), got "
            f"{quote(nspec)}; a codebook's codes are table indices"
        )
    mode = round_mode(roundmode)
    if nspec.kind is Kind.FLOAT:
        fields = _float_codes(nspec, mode, saturate)
    elif nspec.kind is Kind.EXPONENT:
        fields = _exponent_codes(nspec, saturate)
    else:
        fields = _integer_codes(nspec)
    record = SpecialCodes(nspec, mode, bool(saturate), **fields)
    if key is not None:
        _MEMO[key] = record
    return record
