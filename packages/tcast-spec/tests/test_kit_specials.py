"""The special-code record (tcast.kit.special_codes) against the exact model, the oracle.

Every float style, exponent and integer formats of several widths, every round mode and both
overflow rules: the codes of overflowing, infinite, NaN, zero and negative inputs against
``tcast.exact.encode``, and the decode rule against ``tcast.exact.decode`` over every code.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

import tcast
from tcast import RoundMode, SpecError, Style, exact
from tcast.kit import SpecialCodes, special_codes

# (ebits, mbits, bias or None for the default): 3- to 12-bit floats, with and without
# mantissa bits, one non-default bias; 16 bits (e5m10 in every style; e8m7 is a float32
# subset only as IEEE) under -m full, where every code of them is decoded too
_SHAPES = [(1, 1, None), (2, 1, None), (3, 0, None), (2, 3, None), (3, 2, None), (4, 3, None)]
_SHAPES += [(4, 3, 11), (5, 2, None), (8, 0, None), (5, 6, None), (8, 3, None)]
_WIDE = [(5, 10, None), (8, 7, None)]


def _float_specs(shapes: list) -> list[tcast.NumberSpec]:
    out = []
    for style in Style:
        for e, m, b in shapes:
            bias = (1 << (e - 1)) - 1 if b is None else b
            try:
                out.append(tcast.NumberSpec(tcast.Kind.FLOAT, e, m, bias, style))
            except SpecError:
                pass  # no such format (an IEEE float without mantissa bits)
    return out


SPECS = _float_specs(_SHAPES) + [
    tcast.number(c) for c in ("e8m0", "e4m0", "e5m0b3", "int2", "int8", "int16", "uint2")
]
SPECS += [tcast.number(c) for c in ("uint8", "uint16", "int32", "uint32")]
# every code is decoded of formats up to 12 bits and float16; of other 16-bit ones under -m full
_DECODED = [n for n in SPECS if n.bits <= 12] + [
    n if n.code == "float16" else pytest.param(n, marks=pytest.mark.full)
    for n in _float_specs(_WIDE)
]


def _id(n: tcast.NumberSpec) -> str:
    return f"{n.code}-{n.style.value}" if n.is_float else n.code


def _encode(n: tcast.NumberSpec, v: object, mode: RoundMode, saturate: bool) -> int:
    """exact.encode, with random bits 0 (never round up) for stochastic rounding."""
    rbits = 0 if mode is RoundMode.STOCHASTIC else None
    return exact.encode(v, n, mode, rbits=rbits, saturate=saturate)


def _pair(n: tcast.NumberSpec, value: object, mode: RoundMode, saturate: bool) -> tuple:
    """exact.encode of ``value`` and of its negation (for floats: its sign bit flipped)."""
    neg = math.copysign(value, -1.0) if isinstance(value, float) else -value
    return (_encode(n, value, mode, saturate), _encode(n, neg, mode, saturate))


@pytest.mark.parametrize("n", SPECS, ids=_id)
def test_encode_special_codes_are_the_exact_models(n: tcast.NumberSpec) -> None:
    big = Fraction(n.max_value) * 4  # on the unbounded grid: overflows in every mode
    tiny = Fraction(n.smallest_subnormal) / 4  # rounds to zero in every mode (rbits 0)
    for mode in RoundMode:
        for saturate in (True, False):
            sc = special_codes(n, mode, saturate)
            assert sc.overflow == _pair(n, big, mode, saturate), (mode, saturate)
            assert sc.inf == _pair(n, math.inf, mode, saturate), (mode, saturate)
            assert sc.nan == _pair(n, math.nan, mode, saturate), (mode, saturate)
            assert sc.zero == _pair(n, 0.0, mode, saturate), (mode, saturate)
            if not n.is_exponent:  # an exponent type's small values round to code 0
                assert sc.zero == _pair(n, tiny, mode, saturate), (mode, saturate)
            if sc.negative is not None:
                for v in (-1.0, -0.0, -math.inf, -math.nan, -big, -tiny):
                    assert _encode(n, v, mode, saturate) == sc.negative, (v, mode, saturate)


@pytest.mark.parametrize("n", SPECS, ids=_id)
def test_overflow_of_a_rounded_value_uses_the_overflow_code_not_under_trunc(
    n: tcast.NumberSpec,
) -> None:
    """A value just above max overflows by rounding up (nearest modes); trunc keeps max."""
    if not n.is_float:
        return
    top = n.max_value
    ulp = Fraction(2) ** (max(n.emax, n.emin) - n.mbits)  # the spacing at max
    above = top + ulp * Fraction(3, 4)
    for mode in (RoundMode.EVEN, RoundMode.AWAY, RoundMode.ZERO, RoundMode.TRUNC):
        for saturate in (True, False):
            sc = special_codes(n, mode, saturate)
            want = (n.max_code, n.max_code | n.sign_bit) if mode is RoundMode.TRUNC else None
            got = _pair(n, above, mode, saturate)
            assert got == (want or sc.overflow), (mode, saturate)


def _kind(v: float) -> tuple[str, bool] | None:
    if math.isnan(v):
        return ("nan", math.copysign(1.0, v) < 0)
    if math.isinf(v):
        return ("inf", v < 0)
    return None


@pytest.mark.parametrize("n", _DECODED, ids=_id)
def test_codes_that_decode_to_specials_are_the_exact_models(n: tcast.NumberSpec) -> None:
    """Every code: the record's rule (``mag == inf_magnitude`` ...) names exactly the codes
    that ``tcast.exact.decode`` makes ±Inf or NaN, with their signs."""
    sc = special_codes(n)
    sb = sc.sign_bit
    for code in range(1 << n.bits):
        got = sc.decoded(code)
        want = _kind(exact.decode(code, n))
        assert (None if got is None else _kind(got)) == want, hex(code)
        # the three rules are disjoint: a kernel may apply them in any order
        mag = code & (sb - 1) if sb else code
        hits = (
            sb != 0 and mag == sc.inf_magnitude,
            sb != 0 and sc.nan_magnitude is not None and mag >= sc.nan_magnitude,
            code == sc.unsigned_nan,
        )
        assert sum(hits) <= 1, hex(code)


@pytest.mark.parametrize("n", SPECS, ids=_id)
def test_float_pairs_are_one_code_with_or_without_the_sign_bit(n: tcast.NumberSpec) -> None:
    """What a kernel applies with one OR: each float pair is c, c or c, c | sign bit."""
    if not n.is_float:
        return
    for mode in RoundMode:
        for saturate in (True, False):
            sc = special_codes(n, mode, saturate)
            for pair in (sc.overflow, sc.inf, sc.nan, sc.zero):
                assert sc.takes_sign(pair) != (pair[1] == pair[0])
                assert not sc.takes_sign(pair) or pair[0] < sc.sign_bit


def test_decode_fields_do_not_depend_on_the_encode_modes() -> None:
    for n in SPECS:
        a, b = special_codes(n), special_codes(n, "trunc", False)
        assert (a.inf_magnitude, a.nan_magnitude, a.unsigned_nan) == (
            b.inf_magnitude,
            b.nan_magnitude,
            b.unsigned_nan,
        )


def test_a_code_names_its_spec_and_a_codebook_is_refused() -> None:
    assert special_codes("e4m3fn", "nearest", False) == special_codes(
        tcast.number("e4m3fn"), RoundMode.AWAY, False
    )
    assert isinstance(special_codes("e2m1f"), SpecialCodes)
    with pytest.raises(SpecError, match="codebook"):
        special_codes(tcast.codebook([-1, 0, 1, 2], "int3", label="mine"))
    with pytest.raises(SpecError):
        special_codes("e4m3fn", "sideways")


def test_the_memo_is_keyed_by_the_arguments_as_given() -> None:
    """A truthy saturate that is not a bool is not a memo key: it cannot stand for False."""
    n = tcast.number("e3m3")  # used by no other test here: nothing memoized yet
    assert special_codes(n, RoundMode.EVEN, 1).saturate is True
    assert special_codes(n, RoundMode.EVEN, False).saturate is False
    assert special_codes(n, RoundMode.EVEN, False).overflow == (n.inf_code, n.inf_code | 0x40)
    a = special_codes(n, RoundMode.TRUNC, False)
    assert special_codes(n, RoundMode.TRUNC, False) is a
    assert special_codes(n, RoundMode.TRUNC, False, remember=False) == a
