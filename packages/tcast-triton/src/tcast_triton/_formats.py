"""Number formats and modes as the compile-time tuples the kernels read (host side).

A kernel receives each format it touches (element, scale, tensor scale, zero point) as one
``tl.constexpr`` tuple whose fields are named by the ``F_*`` indices below, so that every
format is a compile-time specialization and no rule is decided per element at run time.
The special codes (overflow, Inf and NaN of an encode, which depend on the round mode and
``saturate``; which codes decode to ±Inf or NaN) are the kit's (``tcast.kit.special_codes``),
so the kernel only selects between precomputed codes.
"""

from __future__ import annotations

import struct

from tcast import Kind, NumberSpec, RoundMode, Style, UnsupportedError
from tcast.kit import SpecialCodes, special_codes

from ._env import INTERPRETING

__all__ = ["KIND_CODES", "ROUND_CODES", "STYLE_CODES", "fmt"]

#: Kinds as kernel constants.
KIND_CODES = {Kind.FLOAT: 0, Kind.INT: 1, Kind.UINT: 2, Kind.EXPONENT: 3}
#: Round modes as kernel constants.
ROUND_CODES = {
    RoundMode.EVEN: 0,
    RoundMode.AWAY: 1,
    RoundMode.ZERO: 2,
    RoundMode.TRUNC: 3,
    RoundMode.STOCHASTIC: 4,
}
#: Float styles as kernel constants (for reading a tuple; the kernels decode by the
#: special-code fields).
STYLE_CODES = {Style.IEEE: 0, Style.FN: 1, Style.FNUZ: 2, Style.UZ: 3, Style.FINITE: 4}


def _s32(v: int) -> int:
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def fmt(
    spec: NumberSpec,
    mode: RoundMode = RoundMode.EVEN,
    saturate: bool = True,
    hardware: bool = True,
) -> tuple:
    """The compile-time tuple of ``spec`` encoded under ``mode`` and ``saturate``.

    Fields (indices ``F_*`` of ``tcast_triton._codec``): kind, bits, mbits, bias, emin,
    max_code, sign bit (as int32), has -0, overflow code and whether it takes the sign, Inf
    code and whether it takes the sign, NaN code (-1: none, NaN encodes to 0) and whether
    it takes the sign, maxint, style, exponent bits, whether the minimum exponent lies below
    float32's normal range, four fields of the fast nearest-even path
    (:func:`_fast_fields`), the hardware conversion (:func:`_hardware`; ``hardware=False``
    turns it off: virtual casts, where Triton mislowers the converted bytes' later use),
    five more fast-path fields, the six of the bfloat16-pair encoder (:func:`_pair_fields`),
    and the decode's special codes: the magnitude of ±Inf, the smallest magnitude of the
    signed NaNs, and the unsigned NaN code (each -1: none).

    The encode's special codes are those of ``tcast.kit.special_codes``: a code and whether
    a negative input sets its sign bit (integer kernels saturate by themselves; an exponent
    type's kernel gives the Inf code to overflow and the NaN code to zero, negative and NaN
    inputs, which the kit's record makes equal).

    Raises:
        UnsupportedError: for special codes these kernels cannot select (none today).
    """
    kind = KIND_CODES[spec.kind]
    sb = _s32(spec.sign_bit)
    sc = special_codes(spec, mode, saturate)
    _check_selectable(sc)
    over, over_signed = sc.overflow[0], sc.takes_sign(sc.overflow)
    inf, inf_signed = sc.inf[0], sc.takes_sign(sc.inf)
    nan = sc.nan[0] if spec.has_nan else -1  # -1: NaN encodes to 0 (a virtual NaN stays NaN)
    nan_signed = sc.takes_sign(sc.nan)
    maxint = spec.maxint if spec.is_integer else 0
    return (
        kind,
        spec.bits,
        spec.mbits,
        spec.bias,
        spec.emin,
        spec.max_code,
        sb,
        int(spec.has_negzero),
        over,
        int(over_signed),
        inf,
        int(inf_signed),
        nan,
        int(nan_signed),
        maxint,
        STYLE_CODES[spec.style] if spec.kind is Kind.FLOAT else 4,
        spec.ebits,
        int(spec.emin < -126),
        *_fast_fields(spec)[:4],
        _hardware(spec, mode, over, inf) if hardware else 0,
        *_fast_fields(spec)[4:],
        *_pair_fields(spec),
        -1 if sc.inf_magnitude is None else sc.inf_magnitude,
        -1 if sc.nan_magnitude is None else sc.nan_magnitude,
        -1 if sc.unsigned_nan is None else _s32(sc.unsigned_nan),
    )


def _check_selectable(sc: SpecialCodes) -> None:
    """Refuse special codes the kernels' selections cannot express (see :func:`fmt`)."""
    if sc.nspec.kind is Kind.FLOAT:
        ok = all(p[0] == p[1] or sc.takes_sign(p) for p in (sc.overflow, sc.inf, sc.nan))
    elif sc.nspec.kind is Kind.EXPONENT:
        ok = sc.overflow[0] == sc.inf[0] and sc.nan[0] == sc.zero[0] == sc.negative
    else:
        ok = True
    if not ok:
        raise UnsupportedError(
            f"the Triton kernels cannot encode the special codes of {sc.nspec.code!r} (they "
            f"select one code, or one code and its sign-bit twin, per input class); cast it "
            f"with the torch engine"
        )


def _hardware(spec: NumberSpec, mode: RoundMode, over: int, inf: int) -> int:
    """1 (e4m3fn) or 2 (e5m2) where the GPU's saturating conversion gives our codes.

    ``cvt.rn.satfinite`` (Triton's float32 to float8e4nv / float8e5 conversion on sm_90)
    rounds to nearest even and clamps overflow and +-Inf to +-max, as these formats do
    under saturation; NaN gets its own code in the kernel. Checked against the integer
    path over all 2**32 float32 inputs on the GPU (tests/test_gpu_hardware_fp8.py). Not
    under the interpreter, whose emulation of the conversion is not this instruction.
    """
    if INTERPRETING or mode is not RoundMode.EVEN:
        return 0
    if not (over == spec.max_code and inf == spec.max_code):
        return 0
    return {"e4m3fn": 1, "e5m2": 2}.get(spec.code, 0)


def _fast_fields(spec: NumberSpec) -> tuple:
    """(fast, down, up, offset, 2**emin, 1.5 * 2**(23-mbits), max, 2**(emax+2), 2**-mbits, srf).

    The fields of the float-arithmetic rounding of ``_codec`` (``fast_round``); for int
    and uint formats of at most 22 bits only ``fast`` (``_encode_int_float``).

    ``fast`` when a float format has 1..20 significand bits, a minimum exponent in
    float32's normal range (and at most 0), a maximum exponent at most 102 + mbits and a
    largest value in float32's normal range (a float32 constant of the kernels): then
    adding ``1.5 * 2**(g + 23)`` (``g`` the grid exponent at ``|x|``) and subtracting it
    rounds ``|x|`` to the format's grid in float32 arithmetic (nearest, ties to an even
    multiple), the sum never leaves its binade, and the clamp of that constant's exponent
    field only touches values far above the format's maximum. ``down = 2**(-126 - emin)``
    maps the format's subnormal threshold to float32's, so the rounded value's float32 bits
    shifted right by ``23 - mbits`` are the magnitude code less ``offset``; ``up`` maps
    back. ``srf`` is 1 where stochastic rounding takes ``fast_round_stochastic``: the
    ``K = rbits_width`` random bits fit below the rounding position (``23 - mbits >= K``);
    else 0, and the integer path rounds stochastically.
    """
    if spec.kind in (Kind.INT, Kind.UINT) and spec.bits <= 22:
        return (1, 1.0, 1.0, 0, 1.0, 1.0, 0.0, 1.0, 1.0, 0)  # ints: ``_encode_int_float``
    if not (
        spec.kind is Kind.FLOAT
        and 1 <= spec.mbits <= 20
        and -126 <= spec.emin <= 0
        and spec.emax <= 102 + spec.mbits
        # Triton types a subnormal float constant float64
        and spec.max_value >= 2.0**-126
    ):
        return (0, 1.0, 1.0, 0, 1.0, 1.0, 0.0, 1.0, 1.0, 0)
    offset = (spec.emin + spec.bias - 1) << spec.mbits
    mb = spec.mbits
    return (
        1,
        2.0 ** (-126 - spec.emin),
        2.0 ** (126 + spec.emin),
        offset,
        2.0**spec.emin,
        1.5 * 2.0 ** (23 - mb),
        float(spec.max_value),
        2.0 ** (spec.emax + 2),
        2.0**-mb,
        int(23 - mb >= spec.rbits_width),
    )


def _bf16_pair(v: float) -> int:
    """Both halves of a 32-bit word the bfloat16 bits of ``v`` (exact: checked)."""
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    if b & 0xFFFF:
        raise ValueError(f"{v!r} is not a bfloat16 value")
    return _s32((b >> 16) * 0x10001)


def _pair_fields(spec: NumberSpec) -> tuple:
    """(pair, max, 2**emin, 1.5 * 2**(7 - mbits), 2**(-126 - emin), sign bits, 7 - mbits).

    The constants of ``_codec.pair_codes``, which encodes bfloat16 inputs two to a word in
    bfloat16 arithmetic (each constant as a bfloat16 pair; the sign bit in every byte; the
    code's shift), or ``pair`` 0. It serves float formats of at most 8 bits with -0 and
    1..5 significand bits whose maximum is a bfloat16 value: then (i) a bfloat16 element
    times a power-of-two multiplier is exact wherever its code can be nonzero, (ii) adding
    and subtracting ``1.5 * 2**(g + 7)`` (``2**g`` the spacing at ``|x|``) rounds to the
    grid with ties to even, as ``fast_round`` does in float32 (the sum stays in its binade:
    ``|x| < 2**(g + 6)`` when ``mbits <= 5``), and (iii) the rounded value times
    ``2**(-126 - emin)`` is the bfloat16 whose bits shifted right by ``7 - mbits`` are the
    magnitude code (the format's subnormals become bfloat16 subnormals exactly, as
    ``fast_round``'s ``down`` does in float32).
    """
    ok = (
        spec.kind is Kind.FLOAT
        and spec.bits <= 8
        and spec.has_negzero
        and 1 <= spec.mbits <= 5
        and -100 <= spec.emin <= 0
        and spec.emax <= 15
    )
    if ok:
        try:
            fields = (
                1,
                _bf16_pair(float(spec.max_value)),
                _bf16_pair(2.0**spec.emin),
                _bf16_pair(1.5 * 2.0 ** (7 - spec.mbits)),
                _bf16_pair(2.0 ** (-126 - spec.emin)),
                _s32((spec.sign_bit & 0xFF) * 0x01010101),
                7 - spec.mbits,
            )
        except ValueError:
            ok = False
    return fields if ok else (0, 0, 0, 0, 0, 0, 0)
