"""Elementwise encode and decode of float32 tensors (SEMANTICS.md §2-§4), in int32 bit ops.

Every rule is integer arithmetic on the float32 bit patterns (``_bits``), so each result is
the exactly rounded one in every round mode; the structure follows ``tcast_ref._codec`` and
the tests compare the two bit for bit. Codes are returned as int32 tensors (unsigned patterns
of the format's width); ``_bits.unsigned_codes`` gives the stored unsigned dtype.
"""

from __future__ import annotations

import torch

from tcast import Kind, NumberSpec, RoundMode, SpecError, number, round_mode
from tcast.kit import SpecialCodes, special_codes

from ._bits import (
    NAN_BITS,
    SIGN,
    clamp_finite,
    floor_log2_small,
    nan_like_bits,
    pick,
    pow2,
    s32,
    shl1,
    split_f32,
    to_bits,
    to_f32,
)
from ._philox import rbits_words

__all__ = ["decode", "encode", "round_even_applies", "round_even_values"]


def _round_up(
    n: torch.Tensor,
    rem: torch.Tensor,
    sh: torch.Tensor,
    shift: torch.Tensor,
    odd: torch.Tensor | None,
    mode: RoundMode,
    rbits: torch.Tensor | None,
) -> torch.Tensor | None:
    """Whether to add one unit to ``n`` (None: never, under trunc).

    ``rem`` is the discarded part in units of 2**-shift of the kept unit; ``sh`` is ``shift``
    clamped to 30 (``rem`` is the same: significands are below 2**24).
    """
    if mode is RoundMode.TRUNC:
        return None
    if mode is RoundMode.STOCHASTIC:
        if rbits is None:
            raise SpecError("stochastic rounding needs random bits")
        # floor(frac * 2**32) as a 32-bit pattern; rounds up iff it plus r carries out of 32
        # bits, i.e. r >u ~frac32 (unsigned compare = signed compare of both xor the sign).
        frac32 = torch.where(
            shift <= 32,
            rem << torch.clamp(32 - shift, 0, 31),
            rem >> torch.clamp(shift - 32, 0, 31),
        )
        return (rbits ^ SIGN) > (~frac32 ^ SIGN)
    half = torch.where(sh > 0, shl1(torch.clamp(sh - 1, 0, 30)), 0)
    above = rem > half
    if mode is RoundMode.ZERO:  # nearest, ties toward zero
        return above
    tie = (rem == half) & (rem > 0)
    if mode is RoundMode.AWAY:
        return above | tie
    return above | (tie & odd)  # EVEN


def _round_at(
    s: torch.Tensor,
    shift: torch.Tensor,
    mode: RoundMode,
    rbits: torch.Tensor | None,
    odd_of,
) -> torch.Tensor:
    """Round S * 2**q to a multiple of 2**g, shift = g - q >= 0: the rounded count of 2**g."""
    sh = torch.clamp(shift, 0, 30)
    n = s >> sh
    rem = s & (shl1(sh) - 1)
    odd = odd_of(n) if mode is RoundMode.EVEN else None
    up = _round_up(n, rem, sh, shift, odd, mode, rbits)
    return n if up is None else n + up.to(torch.int32)


def encode(
    x: torch.Tensor,
    spec: NumberSpec | str,
    mode: RoundMode | str = RoundMode.EVEN,
    rbits: torch.Tensor | None = None,
    saturate: bool = True,
) -> torch.Tensor:
    """Encode float32 values into ``spec``, elementwise (an unscaled cast).

    Args:
        x: float32 tensor.
        spec: float, int, uint or exponent spec (or its code).
        mode: round mode.
        rbits: stochastic: the random integers of x's shape, ``spec.rbits_width`` bits each:
            torch.uint8 (or int8) for formats of at most 8 bits, else torch.uint16 (or
            int16) (SEMANTICS.md §3.3).
        saturate: overflow to +-max (True) or IEEE-style.

    Returns:
        int32 tensor of codes (unsigned patterns of the format's width), x's shape.

    Raises:
        SpecError: for an unknown spec or mode, or random bits missing or of another width.
    """
    spec = number(spec)
    words = None
    if rbits is not None:
        width = spec.rbits_width
        ok = (torch.uint8, torch.int8) if width == 8 else (torch.uint16, torch.int16)
        if not isinstance(rbits, torch.Tensor) or rbits.dtype not in ok:
            raise SpecError(
                f"rbits must be a {ok[0]} (or {ok[1]}) tensor: {width} random bits per "
                f"element for {spec.code} (SEMANTICS.md §3.3), got "
                f"{getattr(rbits, 'dtype', type(rbits).__name__)}"
            )
        if tuple(rbits.shape) != tuple(x.shape):
            raise SpecError(
                f"rbits has shape {tuple(rbits.shape)}, x has shape {tuple(x.shape)}: one "
                f"random integer per element"
            )
        if rbits.is_neg():  # the negative bit: the bits of the negated values
            if rbits.dtype is torch.uint16:
                raise SpecError(
                    "rbits is a torch.uint16 tensor with a pending negation, which torch "
                    "cannot apply; pass the negated bits as int16"
                )
            rbits = rbits.resolve_neg()
        words = rbits_words(rbits, width)
    return encode_words(x, spec, mode, words, saturate)


def encode_words(
    x: torch.Tensor,
    spec: NumberSpec | str,
    mode: RoundMode | str = RoundMode.EVEN,
    rbits: torch.Tensor | None = None,
    saturate: bool = True,
) -> torch.Tensor:
    """:func:`encode` with stochastic rounding's bits as int32 words ``r << (32 - K)``.

    The rule ``floor(frac * 2**32) + word >= 2**32`` of such words is §3.2's
    ``floor(frac * 2**K) + r >= 2**K``: the casts draw their bits as words once.
    """
    spec = number(spec)
    mode = round_mode(mode)
    if mode is RoundMode.STOCHASTIC and rbits is None:
        raise SpecError("stochastic rounding needs rbits (one random integer per element)")
    if spec.kind is Kind.FLOAT:
        return _encode_float(x, spec, mode, rbits, saturate)
    if spec.kind is Kind.EXPONENT:
        return _encode_exponent(x, spec, mode, rbits, saturate)
    if mode is RoundMode.EVEN and spec.bits <= 24:
        return _encode_int_even(x, spec)
    return _encode_int(x, spec, mode, rbits)


def _encode_float(x, spec: NumberSpec, mode, rbits, saturate) -> torch.Tensor:
    _, neg, mag, e32, s, q = split_f32(x)
    nan = mag > 0x7F800000
    inf = mag == 0x7F800000
    mb, bias, emin = spec.mbits, spec.bias, spec.emin
    if emin >= -126:
        # float32 subnormal inputs lie below the format's normal range: their grid is the
        # format's subnormal spacing, whatever their own exponent
        e_eff = torch.clamp_min(e32 - 127, emin)
    else:
        e = torch.where(e32 > 0, e32 - 127, floor_log2_small(torch.clamp_min(s, 1)) - 149)
        e_eff = torch.clamp_min(e, emin)
    g = e_eff - mb  # exponent of the grid spacing (SEMANTICS.md §3.1)

    def odd_of(n):
        # ties to the even code: the parity of n with mantissa bits; without, the parity of
        # the exponent field (g + bias)
        if mb:
            return (n & 1) == 1
        return (n > 0) & (((g + bias) & 1) == 1)

    nq = _round_at(s, g - q, mode, rbits, odd_of)
    # (field - 1) << mb plus the rounded significand: a carry moves into the exponent field
    code = ((g + (bias - 1 + mb)) << mb) + nq
    code = torch.where(nq == 0, 0, code)
    over = code > spec.max_code
    sc = _specials(spec, mode, saturate)
    sign = s32(sc.sign_bit)
    if sc.takes_sign(sc.zero):  # the format has -0 (SEMANTICS.md §4.2)
        result = torch.where(neg, code | sign, code)
    else:
        result = torch.where(neg & (code != 0), code | sign, code)
    # Overflow of a finite input, infinite inputs and NaN (SEMANTICS.md §4.1, §4.2).
    result = torch.where(over, _signed(neg, sc.overflow), result)
    result = torch.where(inf, _signed(neg, sc.inf), result)
    return torch.where(nan, _signed(neg, sc.nan), result)


def _specials(
    spec: NumberSpec, mode: RoundMode = RoundMode.EVEN, saturate: bool = True
) -> SpecialCodes:
    """The kit's special codes; computed afresh while torch.compile traces.

    A memo store there is a side effect the compiler would have to replay.
    """
    return special_codes(spec, mode, saturate, remember=not torch.compiler.is_compiling())


def _signed(neg: torch.Tensor, pair: tuple[int, int]) -> torch.Tensor | int:
    """The code of a ``tcast.kit.SpecialCodes`` pair for each element's sign."""
    if pair[0] == pair[1]:
        return s32(pair[0])
    return pick(neg, s32(pair[1]), s32(pair[0]))


def _encode_int_even(x: torch.Tensor, spec: NumberSpec) -> torch.Tensor:
    """Integers under round-to-nearest-even: round (IEEE ties to even), clamp, two's complement."""
    lo = 0.0 if spec.is_uint else float(-spec.maxint)
    v = torch.clamp(torch.round(x), lo, float(spec.maxint))
    v = torch.where(torch.isnan(v), 0.0, v)
    return v.to(torch.int32) & ((1 << spec.bits) - 1)


def _encode_int(x: torch.Tensor, spec: NumberSpec, mode, rbits) -> torch.Tensor:
    _, neg, mag, _, s, q = split_f32(x)
    nan = mag > 0x7F800000
    sc = _specials(spec, mode)
    # the integer grid: g = 0; values with q >= 0 are integers already (no rounding)
    nq = _round_at(s, torch.clamp_min(-q, 0), mode, rbits, lambda n: (n & 1) == 1)
    if spec.bits <= 24:
        maxint = spec.maxint  # < 2**24 <= any |x| with q > 0 (Inf included)
        m = torch.where(q > 0, maxint, torch.clamp_max(nq, maxint))
        if sc.negative is not None:  # a uint: every negative input
            val = torch.where(neg, sc.negative, m)
        else:
            val = torch.where(neg, -m, m)
        return torch.where(nan, _signed(neg, sc.nan), val & ((1 << spec.bits) - 1))
    # wide integers: magnitudes up to 2**32 need 64 bits (|x| >= 2**40 saturates first)
    maxint = spec.maxint
    big = (s.to(torch.int64) << torch.clamp(q, 0, 16)).clamp_max(maxint)
    m = torch.where(q > 16, maxint, torch.where(q > 0, big, nq.to(torch.int64).clamp_max(maxint)))
    val = torch.where(neg, sc.negative, m) if sc.negative is not None else torch.where(neg, -m, m)
    val = val & ((1 << spec.bits) - 1)
    val = torch.where(val >= 1 << 31, val - (1 << 32), val).to(torch.int32)
    return torch.where(nan, _signed(neg, sc.nan), val)


def _encode_exponent(x, spec: NumberSpec, mode, rbits, saturate) -> torch.Tensor:
    _, neg, mag, _, s, q = split_f32(x)
    nan = mag > 0x7F800000
    inf = mag == 0x7F800000
    zero = s == 0
    lg = floor_log2_small(torch.clamp_min(s, 1))
    e = lg + q

    def odd_of(n):
        return (((e + spec.bias) & 1) == 1) & (n > 0)

    nq = _round_at(s, lg, mode, rbits, odd_of)  # candidates 2**e (nq = 1) and 2**(e+1)
    code = e + spec.bias + (nq > 1).to(torch.int32)
    code = torch.clamp_min(code, 0)
    sc = _specials(spec, mode, saturate)
    code = torch.where(code > spec.max_code, sc.overflow[0], code)
    code = torch.where(inf, sc.inf[0], code)
    code = torch.where(zero, sc.zero[0], code)
    code = torch.where(nan, sc.nan[0], code)
    return torch.where(neg, sc.negative, code)  # no negative powers of two


def decode(codes: torch.Tensor, spec: NumberSpec | str) -> torch.Tensor:
    """Decode int32 codes to float32 values (canonical NaN, signed for IEEE/fn negative NaNs).

    Raises:
        SpecError: for an unknown spec.
    """
    spec = number(spec)
    if spec.kind is Kind.EXPONENT:
        v = pow2(codes - spec.bias)
        return to_f32(torch.where(codes == _specials(spec).unsigned_nan, NAN_BITS, to_bits(v)))
    if spec.kind is Kind.INT:
        k = spec.bits
        v = codes if k == 32 else (codes << (32 - k)) >> (32 - k)  # sign extension
        return v.to(torch.float32)
    if spec.kind is Kind.UINT:
        if spec.bits < 32:
            return codes.to(torch.float32)
        # two exact halves, one rounding (the sum) as for any integer to float32
        hi = ((codes >> 16) & 0xFFFF).to(torch.float32)
        return hi * 65536.0 + (codes & 0xFFFF).to(torch.float32)
    return _decode_float(codes, spec)


def _decode_float(codes: torch.Tensor, spec: NumberSpec) -> torch.Tensor:
    mb, bias = spec.mbits, spec.bias
    sign_bit = spec.sign_bit
    neg = (codes & s32(sign_bit)) != 0
    mag = codes & (sign_bit - 1)
    field = mag >> mb
    frac = mag & ((1 << mb) - 1)
    sig = torch.where(field > 0, frac | (1 << mb), frac).to(torch.float32)  # exact, < 2**24
    k = torch.clamp_min(field, 1) - (bias + mb)
    if 1 - bias - mb >= -126:
        val = sig * pow2(k)
    else:  # a power of two below float32's normals: two exact steps
        kc = torch.clamp_min(k, -126)
        val = (sig * pow2(kc)) * pow2(k - kc)
    # the sign as a bit, not a float negation: Triton negates floats as 0 - x, which makes
    # -0 of a zero magnitude +0 in compiled CUDA kernels (val is never negative)
    b = torch.where(neg, to_bits(val) | s32(0x80000000), to_bits(val))
    # the codes the format reserves (tcast.kit.SpecialCodes): disjoint, any order
    sc = _specials(spec)
    if sc.inf_magnitude is not None:
        b = torch.where(mag == sc.inf_magnitude, pick(neg, s32(0xFF800000), 0x7F800000), b)
    if sc.nan_magnitude is not None:
        b = torch.where(mag >= sc.nan_magnitude, nan_like_bits(neg), b)
    if sc.unsigned_nan is not None:
        b = torch.where(codes == s32(sc.unsigned_nan), NAN_BITS, b)
    return to_f32(b)


def round_even_applies(spec: NumberSpec) -> bool:
    """Whether :func:`round_even_values` computes ``spec``'s RNE values (no tensor work)."""
    if spec.kind is not Kind.FLOAT or spec.mbits >= 23 or spec.emin < -126:
        return False
    # mbits = 0: ties go to the even code (the exponent's parity); where float32's exponent
    # field has the other parity, the carry trick would pick the odd code
    return not (spec.mbits == 0 and (spec.bias - 127) % 2)


def round_even_values(x: torch.Tensor, spec: NumberSpec) -> torch.Tensor | None:
    """decode(encode(x, spec, even, saturate=True)) for finite float32 x, in float32 bit ops.

    The fast path of virtual casts (the same construction as tcast_ref's): normal results
    round the float32 mantissa to ``mbits`` bits with the carry trick (add half an ulp minus
    one plus the kept LSB, clear the dropped bits); results below the smallest normal round
    at the subnormal spacing by adding and subtracting 1.5 * 2**(emin - mbits + 23). NaN
    inputs give some NaN (callers canonicalize). None where the path does not apply.
    """
    if not round_even_applies(spec):
        return None
    xc = clamp_finite(x, spec.maxfloat)
    drop = 23 - spec.mbits
    b = to_bits(xc)
    normal = (((b >> drop) & 1) + ((1 << (drop - 1)) - 1) + b) & s32(~((1 << drop) - 1))
    c = 1.5 * 2.0 ** (spec.emin - spec.mbits + 23)
    sub = (xc + c) - c
    if spec.has_negzero:
        sub = torch.copysign(sub, xc)
    m = b & 0x7FFFFFFF
    # all-ones where |x| < smallest normal: the sign of (|x| bits - smallest normal bits)
    small = (m - _f32_bits_of(spec.smallest_normal)) >> 31
    out = to_f32((normal & ~small) | (to_bits(sub) & small))
    if not spec.has_negzero:
        out = torch.where(out == 0, 0.0, out)  # -0 becomes +0
    return out


def _f32_bits_of(v: float) -> int:
    import struct

    return struct.unpack("<i", struct.pack("<f", v))[0]
