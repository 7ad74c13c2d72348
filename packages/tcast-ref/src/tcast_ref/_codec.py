"""Vectorized encode and decode of float32 arrays (SEMANTICS.md §2-§4).

Everything is integer arithmetic on the float32 bit patterns, so the result is
the exactly rounded one for every round mode; it is checked against
``tcast.exact`` value by value.
"""

from __future__ import annotations

from functools import lru_cache

import ml_dtypes
import numpy as np

from tcast import Kind, NumberSpec, RoundMode, SpecError, number, round_mode
from tcast.kit import SpecialCodes, special_codes

from ._work import Workspace

__all__ = ["code_dtype", "decode", "encode", "floor_log2", "split_f32"]

_U64 = np.uint64
_TWO32 = _U64(1 << 32)


def code_dtype(bits: int) -> np.dtype:
    """The unsigned integer dtype that holds codes of ``bits`` bits."""
    return np.dtype(np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.uint32)


def split_f32(x: np.ndarray) -> tuple[np.ndarray, ...]:
    """Split float32 values into (negative, nan, inf, significand S, exponent q): |x| = S * 2**q.

    S is the integer significand (with the hidden bit for normals), S < 2**24.
    """
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    neg = (b >> 31).astype(bool)
    mag = b & np.uint32(0x7FFFFFFF)
    nan = mag > 0x7F800000
    inf = mag == 0x7F800000
    e32 = (mag >> 23).astype(np.int64)
    m32 = (mag & np.uint32(0x7FFFFF)).astype(_U64)
    s = np.where(e32 > 0, m32 | _U64(0x800000), m32)
    q = np.maximum(e32, 1) - 150
    return neg, nan, inf, s, q


def floor_log2(s: np.ndarray) -> np.ndarray:
    """floor(log2 s) of positive integers below 2**53, exactly (from float64 exponent bits)."""
    bits = np.asarray(s, dtype=np.float64).view(np.uint64)
    return (bits >> 52).astype(np.int64) - 1023


def _round_up(
    n: np.ndarray,
    rem: np.ndarray,
    shift: np.ndarray,
    odd: np.ndarray,
    mode: RoundMode,
    rbits: np.ndarray | None,
) -> np.ndarray:
    """Whether to add one ulp: rem is the discarded part of n's significand, in 2**-shift ulps."""
    inexact = rem > 0
    if mode is RoundMode.TRUNC:
        return np.zeros(n.shape, bool)
    if mode is RoundMode.STOCHASTIC:
        if rbits is None:
            raise SpecError("stochastic rounding needs random bits")
        # floor(frac * 2**32): rem < 2**shift and rem < 2**24, so both shifts stay in 64 bits.
        left = np.clip(32 - shift, 0, 32).astype(_U64)
        right = np.clip(shift - 32, 0, 63).astype(_U64)
        frac32 = (rem << left) >> right
        return inexact & (frac32 + rbits.astype(_U64) >= _TWO32)
    half = np.where(shift > 0, _U64(1) << np.clip(shift - 1, 0, 62).astype(_U64), _U64(0))
    above = rem > half
    tie = inexact & (rem == half)
    if mode is RoundMode.EVEN:
        return above | (tie & odd)
    if mode is RoundMode.AWAY:
        return above | tie
    return above  # ZERO: nearest, ties toward zero


def _magnitude_round(
    s: np.ndarray,
    q: np.ndarray,
    g: np.ndarray,
    mode: RoundMode,
    rbits: np.ndarray | None,
    odd_of: object,
) -> tuple[np.ndarray, np.ndarray]:
    """Round S * 2**q to a multiple of 2**g (g >= q): returns (rounded count of 2**g, n)."""
    shift = g - q
    sc = np.clip(shift, 0, 63).astype(_U64)
    n = s >> sc
    rem = s - (n << sc)
    odd = odd_of(n) if callable(odd_of) else odd_of
    up = _round_up(n, rem, shift, odd, mode, rbits)
    return n + up.astype(_U64), n


def encode(
    x: np.ndarray,
    spec: NumberSpec,
    mode: RoundMode = RoundMode.EVEN,
    rbits: np.ndarray | None = None,
    saturate: bool = True,
    ws: Workspace | None = None,
) -> np.ndarray:
    """Encode float32 values into ``spec``, elementwise (an unscaled cast).

    Args:
        x: float32 array (other float arrays are converted to float32 first).
        spec: float, int, uint or exponent spec (or its code).
        mode: round mode (enum or name).
        rbits: stochastic: the random integers of x's shape, ``spec.rbits_width`` bits
            each (uint8 for formats of at most 8 bits, else uint16; SEMANTICS.md §3.3).
        saturate: overflow to +-max (True) or IEEE-style.
        ws: scratch buffers to reuse (the result may live in them).

    Returns:
        Codes (unsigned bit patterns, uint8/16/32 by width), of x's shape.

    Raises:
        SpecError: for an unknown spec or mode, or random bits missing or malformed.
    """
    spec = number(spec)
    words = None
    if rbits is not None:
        width = spec.rbits_width
        want = np.uint8 if width == 8 else np.uint16
        rbits = np.asarray(rbits)
        if rbits.dtype != want or rbits.shape != np.shape(x):
            raise SpecError(
                f"rbits must be {np.dtype(want)} of x's shape {np.shape(x)} ({width} random "
                f"bits per element for {spec.code}, SEMANTICS.md §3.3), got {rbits.dtype} "
                f"{rbits.shape}"
            )
        words = rbits_words(rbits, width)
    return encode_words(x, spec, mode, words, saturate, ws)


def rbits_words(r: np.ndarray, width: int) -> np.ndarray:
    """``width``-bit random integers as :func:`encode_words`' uint32 words ``r << (32 - width)``.

    The words' rule ``floor(frac * 2**32) + word >= 2**32`` is exactly §3.2's
    ``floor(frac * 2**K) + r >= 2**K`` (both sides are whole multiples of ``2**(32 - K)``
    once the floor is taken at ``K`` bits).
    """
    return r.astype(np.uint32) << np.uint32(32 - width)


def encode_words(
    x: np.ndarray,
    spec: NumberSpec,
    mode: RoundMode = RoundMode.EVEN,
    words: np.ndarray | None = None,
    saturate: bool = True,
    ws: Workspace | None = None,
) -> np.ndarray:
    """:func:`encode` with stochastic rounding's bits as 32-bit words ``r << (32 - K)``.

    The rule ``floor(frac * 2**32) + word >= 2**32`` of such words is §3.2's
    ``floor(frac * 2**K) + r >= 2**K``: the casts draw their bits into words once.
    """
    spec = number(spec)
    mode = round_mode(mode)
    rbits = words
    with np.errstate(over="ignore", invalid="ignore"):  # wider inputs round into float32
        x = np.asarray(x, dtype=np.float32)
    if mode is RoundMode.STOCHASTIC and rbits is None:
        raise SpecError("stochastic rounding needs rbits (one random integer per element)")
    if rbits is not None:
        rbits = np.asarray(rbits)
        if rbits.dtype != np.uint32 or rbits.shape != x.shape:
            raise SpecError(
                f"rbits must be of x's shape {x.shape}, got {rbits.dtype} {rbits.shape}"
            )
    if mode is RoundMode.EVEN and rbits is None:
        fast = _encode_native(x, spec, saturate, ws or Workspace())
        if fast is not None:
            return fast
        if spec.is_integer and spec.bits <= 24:
            return _encode_int_even(x, spec)
    if spec.kind is Kind.FLOAT:
        out = _encode_float(x, spec, mode, rbits, saturate)
    elif spec.kind is Kind.EXPONENT:
        out = _encode_exponent(x, spec, mode, rbits, saturate)
    else:
        out = _encode_int(x, spec, mode, rbits)
    return out.astype(code_dtype(spec.bits), copy=False)


def _encode_int_even(x: np.ndarray, spec: NumberSpec) -> np.ndarray:
    """Integers under round-to-nearest-even: rint (IEEE ties to even), clamp, two's complement."""
    lo = 0 if spec.is_uint else -spec.maxint
    v = np.clip(np.rint(x), lo, spec.maxint)
    nan = np.isnan(v)
    has_nan = nan.any()
    if has_nan:
        v = np.where(nan, 0, v)  # a placeholder: NaN's code is set below
    out = v.astype(np.int32) & np.int32((1 << spec.bits) - 1)
    if has_nan:
        out = np.where(nan, _signed(np.signbit(x), special_codes(spec).nan), out)
    return out.astype(code_dtype(spec.bits))


def _native_type(spec: NumberSpec) -> np.dtype | None:
    """The NumPy/ml_dtypes dtype whose round-to-nearest-even conversion is exactly ``spec``'s."""
    if spec.kind is not Kind.FLOAT:
        return None
    return _NATIVE.get(spec)


# Formats whose NumPy/ml_dtypes conversion rounds to nearest even exactly as tcast does; the
# specs come from tcast's own name table, so the meaning of each name is stated once.
_NATIVE: dict[NumberSpec, np.dtype] = {
    number(name): np.dtype(getattr(ml_dtypes, name, None) or getattr(np, name))
    for name in (
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e4m3b11fnuz",
        "float8_e3m4",
        "float8_e4m3",
        "float6_e2m3fn",
        "float6_e3m2fn",
        "float4_e2m1fn",
        "bfloat16",
        "float16",
    )
}


def _encode_native(
    x: np.ndarray, spec: NumberSpec, saturate: bool, ws: Workspace
) -> np.ndarray | None:
    """Round to nearest even through the compiled ml_dtypes/NumPy conversion.

    Then the tcast rules it does not share: saturation (clip first: only values that
    overflow change) and the NaN codes of ``tcast.kit.special_codes`` (canonical, and 0 in
    finite-only formats).
    The conversions are checked against the exact model over every float16/bfloat16 input.
    """
    native = _native_type(spec)
    if native is None:
        return None
    with np.errstate(invalid="ignore"):  # signalling NaNs convert quietly; fixed below
        return _encode_native_checked(x, spec, native, saturate, ws)


def _encode_native_checked(x, spec, native, saturate, ws):
    if saturate:
        hi = np.float32(spec.maxfloat)
        x = np.clip(x, -hi, hi, out=ws.get("en_x", x.shape, np.float32))
    codes = ws.get("en_c", x.shape, code_dtype(spec.bits))
    np.copyto(codes.view(native), x, casting="unsafe")
    nan = np.isnan(x)
    if nan.any():
        nan_code = _signed(np.signbit(x), special_codes(spec, RoundMode.EVEN, saturate).nan)
        codes = np.where(nan, nan_code, codes).astype(codes.dtype)
    return codes


def _signed(neg: np.ndarray, pair: tuple[int, int]) -> np.ndarray | np.int64:
    """The code of a ``SpecialCodes`` pair for each element's sign."""
    if pair[0] == pair[1]:
        return np.int64(pair[0])
    return np.where(neg, np.int64(pair[1]), np.int64(pair[0]))


def _encode_float(x, spec, mode, rbits, saturate):
    neg, nan, inf, s, q = split_f32(x)
    zero = s == 0
    e = np.where(zero, 0, floor_log2(np.where(zero, 1, s)) + q)
    g = np.maximum(e, spec.emin) - spec.mbits
    mb = spec.mbits
    base = spec.bias - 1 + mb

    def odd_of(n):
        # ties to the even code: with mantissa bits the code parity is n's; without, the
        # exponent field's (g + bias).
        if mb:
            return (n & _U64(1)).astype(bool)
        return (n > 0) & ((g + spec.bias) % 2 == 1)

    nq, _ = _magnitude_round(s, q, g, mode, rbits, odd_of)
    code = (((g + base) << mb) + nq.astype(np.int64)).astype(np.int64)
    code = np.where(nq == 0, 0, code)
    over = code > spec.max_code
    sc = special_codes(spec, mode, saturate)
    sign = np.int64(sc.sign_bit)
    # a zero magnitude takes the sign only where the format has -0 (SEMANTICS.md §4.2)
    result = np.where(neg & ((code != 0) | sc.takes_sign(sc.zero)), code | sign, code)
    # Overflow of a finite input, infinite inputs and NaN (SEMANTICS.md §4.1, §4.2).
    result = np.where(over, _signed(neg, sc.overflow), result)
    result = np.where(inf, _signed(neg, sc.inf), result)
    result = np.where(nan, _signed(neg, sc.nan), result)
    return result.astype(np.uint32)


def _encode_int(x, spec, mode, rbits):
    neg, nan, inf, s, q = split_f32(x)
    zero = s == 0
    e = np.where(zero, 0, floor_log2(np.where(zero, 1, s)) + q)
    big = e >= 40  # far beyond 2**32: saturate before shifting
    qs = np.where(big, 0, q)
    # integer grid: g = 0; values with q > 0 are integers already (shift left, no rounding)
    s_int = np.where(qs > 0, s << np.clip(qs, 0, 40).astype(_U64), s)
    q_int = np.minimum(qs, 0)
    nq, _ = _magnitude_round(
        s_int, q_int, np.zeros_like(q_int), mode, rbits, lambda n: (n & _U64(1)).astype(bool)
    )
    mag = np.minimum(nq, _U64(spec.maxint)).astype(np.int64)
    val = np.where(neg, -mag, mag) & np.int64((1 << spec.bits) - 1)
    sc = special_codes(spec, mode)
    val = np.where(big, _signed(neg, sc.overflow), val)
    val = np.where(inf, _signed(neg, sc.inf), val)
    if sc.negative is not None:  # a uint: every negative input
        val = np.where(neg, sc.negative, val)
    val = np.where(nan, _signed(neg, sc.nan), val)
    return val.astype(np.uint32)


def _encode_exponent(x, spec, mode, rbits, saturate):
    neg, nan, inf, s, q = split_f32(x)
    zero = s == 0
    e = np.where(zero, 0, floor_log2(np.where(zero, 1, s)) + q)

    def odd_of(n):
        return ((e + spec.bias) % 2 == 1) & (n > 0)

    nq, _ = _magnitude_round(s, q, e, mode, rbits, odd_of)
    code = e + spec.bias + (nq > 1).astype(np.int64)
    code = np.where(code < 0, 0, code)
    sc = special_codes(spec, mode, saturate)
    code = np.where(code > spec.max_code, sc.overflow[0], code)
    code = np.where(inf, sc.inf[0], code)
    code = np.where(zero, sc.zero[0], code)
    code = np.where(nan, sc.nan[0], code)
    code = np.where(neg, sc.negative, code)  # no negative powers of two
    return code.astype(np.uint32)


def round_even_values(
    x: np.ndarray, spec: NumberSpec, ws: Workspace | None = None
) -> np.ndarray | None:
    """decode(encode(x, spec, even, saturate=True)) for finite float32 x, computed in float32.

    The fast path of virtual casts: no codes are formed. Normal results round the float32
    mantissa to ``mbits`` bits with the carry trick (add half an ulp minus one plus the kept
    LSB, then clear the dropped bits); results below the smallest normal round at the
    subnormal spacing by adding and subtracting 1.5 * 2**(emin - mbits + 23). NaN inputs come
    out as some NaN (callers that can see NaN canonicalize). Returns None where the path does
    not apply (non-float specs, 23 mantissa bits). The result may live in ``ws``'s buffers.
    """
    if spec.kind is not Kind.FLOAT or spec.mbits >= 23 or spec.emin < -126:
        # (below float32's normal range the float32 mantissa is not the grid's)
        return None
    if spec.mbits == 0 and (spec.bias - 127) % 2:
        # ties go to the even code = the exponent's parity; float32's exponent field has
        # the other parity here, so the carry trick would pick the odd code
        return None
    ws = ws or Workspace()
    shape = x.shape
    hi = np.float32(spec.maxfloat)
    xc = np.clip(x, -hi, hi, out=ws.get("rv_x", shape, np.float32))
    drop = 23 - spec.mbits
    b = xc.view(np.uint32)
    normal = np.right_shift(b, np.uint32(drop), out=ws.get("rv_n", shape, np.uint32))
    normal &= np.uint32(1)  # the kept LSB: ties to even
    normal += np.uint32((1 << (drop - 1)) - 1)
    normal += b
    normal &= np.uint32(~((1 << drop) - 1) & 0xFFFFFFFF)
    c = np.float32(1.5 * 2.0 ** (spec.emin - spec.mbits + 23))
    sub = ws.get("rv_s", shape, np.float32)
    with np.errstate(invalid="ignore"):  # signalling NaNs: callers canonicalize NaN
        np.add(xc, c, out=sub)
        sub -= c
    if spec.has_negzero:
        np.copysign(sub, xc, out=sub)
    # Select without a data-dependent branch: all-ones where |x| < smallest normal, from
    # the sign of (|x| bits - smallest normal bits) as an int32.
    m = np.bitwise_and(b, np.uint32(0x7FFFFFFF), out=ws.get("rv_m", shape, np.uint32))
    small = m.view(np.int32)
    small -= np.int32(np.float32(spec.smallest_normal).view(np.int32))
    small >>= np.int32(31)
    sub_bits = sub.view(np.uint32)
    sub_bits &= m
    np.invert(m, out=m)
    normal &= m
    normal |= sub_bits
    out = normal.view(np.float32)
    if not spec.has_negzero:
        out += np.float32(0)  # -0 becomes +0
    return out


@lru_cache(maxsize=64)
def _table(spec: NumberSpec) -> np.ndarray:
    """float32 value of every code of a format of at most 16 bits (read-only)."""
    codes = np.arange(1 << spec.bits, dtype=np.int64)
    out = _decode_arith(codes, spec)
    out.setflags(write=False)
    return out


def decode(codes: np.ndarray, spec: NumberSpec | str) -> np.ndarray:
    """Decode codes to float32 values (canonical NaN, with sign for IEEE/fn negative NaNs).

    Raises:
        SpecError: for an unknown spec, or codes that are not non-negative integers.
    """
    spec = number(spec)
    codes = np.asarray(codes)
    if codes.dtype.kind not in "ui":
        raise SpecError(f"codes must be an integer array, got {codes.dtype}")
    if spec.bits <= 16:
        table = _table(spec)
        if codes.dtype == code_dtype(spec.bits) and (spec.bits in (8, 16)):
            return np.asarray(table[codes]).reshape(codes.shape)
        idx = codes.astype(np.int64) & ((1 << spec.bits) - 1)
        return np.asarray(table[idx]).reshape(codes.shape)
    return _decode_arith(codes.astype(np.int64), spec)


def _decode_arith(codes: np.ndarray, spec: NumberSpec) -> np.ndarray:
    # Reserved codes (Inf/NaN fields) may compute huge values before they are replaced.
    with np.errstate(over="ignore"):
        return _decode_values(codes, spec)


def _decode_values(codes: np.ndarray, spec: NumberSpec) -> np.ndarray:
    nanv = np.uint32(0x7FC00000).view(np.float32)
    sc = special_codes(spec)
    if spec.kind is Kind.EXPONENT:
        out = np.ldexp(np.float64(1.0), (codes - spec.bias).astype(np.int32)).astype(np.float32)
        return np.where(codes == sc.unsigned_nan, nanv, out).astype(np.float32)
    if spec.kind is Kind.INT:
        v = np.where(codes >> (spec.bits - 1) & 1, codes - (1 << spec.bits), codes)
        return v.astype(np.float32)
    if spec.kind is Kind.UINT:
        return codes.astype(np.float32)
    sign_bit = spec.sign_bit
    neg = (codes & sign_bit) != 0
    mag = codes & (sign_bit - 1)
    field = mag >> spec.mbits
    frac = mag & ((1 << spec.mbits) - 1)
    sig = np.where(field > 0, frac + (1 << spec.mbits), frac).astype(np.float64)
    val = np.ldexp(sig, (np.maximum(field, 1) - spec.bias - spec.mbits).astype(np.int32))
    val = np.where(neg, -val, val).astype(np.float32)
    return _decode_specials(codes, neg, mag, val, sc, nanv)


def _decode_specials(codes, neg, mag, val, sc: SpecialCodes, nanv) -> np.ndarray:
    """The codes the format reserves: ±Inf, NaN with the code's sign, the unsigned NaN."""
    if sc.inf_magnitude is not None:
        val = np.where(mag == sc.inf_magnitude, np.where(neg, -np.inf, np.inf), val)
    if sc.nan_magnitude is not None:
        val = np.where(mag >= sc.nan_magnitude, np.where(neg, -nanv, nanv), val)
    if sc.unsigned_nan is not None:
        val = np.where(codes == sc.unsigned_nan, nanv, val)
    return val.astype(np.float32)
