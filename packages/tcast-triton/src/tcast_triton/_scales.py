"""Block scales in Triton: the kit's scale recipes unrolled at compile time (SEMANTICS §5).

One function, :func:`lane_scales`, turns a block's reductions (integer maxima of float32
bit patterns) into its scale code, zero-point code, encode multiplier and decode multiplier,
following ``tcast.kit``'s recipes step by step: every division is ``tl.div_rn`` (correctly
rounded), every product one float32 multiplication (none feeds a sum here, so no compiler
fuses one into a multiply-add), power-of-two scales come from the exponent and significand
bits and the kit's two integers. ``tests/test_recipes_unrolled.py`` pins the kit's recipes
to the steps written here.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._codec import (
    F_BIAS,
    F_BITS,
    F_DOWN,
    F_KIND,
    F_MB,
    F_NANC,
    F_OFF,
    K_EXP,
    K_FLOAT,
    R_EVEN,
    bits_of,
    decode,
    encode,
    f32_of,
    fast_mode,
    fast_round,
    filled,
    floor_log2_small,
    pow2,
    split,
)

# scale kinds (tcast_triton._plan.ScaleKind)
SK_NONE = tl.constexpr(0)
SK_EXP = tl.constexpr(1)
SK_FLOAT = tl.constexpr(2)
SK_TWO = tl.constexpr(3)
SK_UFLOAT = tl.constexpr(4)
SK_UEXP = tl.constexpr(5)

# fields of the rule tuple: the kit's ExponentScaleRule
RU_OFF = tl.constexpr(0)
RU_THR = tl.constexpr(1)
RU_MAXC = tl.constexpr(2)
RU_EXACT = tl.constexpr(3)
RU_BUMP = tl.constexpr(4)

# fields of the constants tuple
C_M = tl.constexpr(0)
C_MSM = tl.constexpr(1)
C_F32MAX = tl.constexpr(2)
C_SLO = tl.constexpr(3)
C_SHI = tl.constexpr(4)
C_TLO = tl.constexpr(5)
C_THI = tl.constexpr(6)
C_ZNAN = tl.constexpr(7)


@triton.jit
def exp_code(v, RULE: tl.constexpr):
    """Power-of-two scale code of float32 ``v >= 0`` by the kit's rule; +Inf -> max code."""
    b = bits_of(v)
    if RULE[RU_EXACT] == 1:
        big_e = ((b >> 23) & 0xFF) - 127
        sig = (b & 0x7FFFFF) | 0x800000
        e = big_e + RULE[RU_OFF]
        if RULE[RU_BUMP] == 1:
            e = e + (sig > RULE[RU_THR]).to(tl.int32)
        code = tl.minimum(tl.maximum(e, 0), RULE[RU_MAXC])
    else:
        _, _, _, s, q = split(v)
        s1 = tl.maximum(s, 1)
        lg = floor_log2_small(s1)
        sig = s1 << (23 - lg)
        e = lg + q + RULE[RU_OFF]
        if RULE[RU_BUMP] == 1:
            e = e + (sig > RULE[RU_THR]).to(tl.int32)
        code = tl.minimum(tl.maximum(e, 0), RULE[RU_MAXC])
        code = tl.where(s == 0, 0, code)
    return tl.where((b & 0x7FFFFFFF) == 0x7F800000, RULE[RU_MAXC], code)


@triton.jit
def float_scale(v, S: tl.constexpr, LO: tl.constexpr, HI: tl.constexpr):
    """(code, value) of RNE_S(clamp(v, smallest normal, max)), NaN -> max (SEMANTICS.md §5.5).

    The clamped ``v`` is a positive normal at most the maximum, so the rounded value is the
    scale's value itself: float32 scales (NVFP4's tensor scale) are their own nearest even,
    and the float-arithmetic rounding of ``_codec.fast_round`` gives the others' value
    before their code, which saves the integer encoder's and the decoder's instructions
    (per block: NVFP4's tile scales).
    """
    # float32 constants: a smallest normal of 2**-127 (an 8-bit-exponent scale of bias 128)
    # is a float32 subnormal, which Triton would otherwise type as float64
    lo = tl.full(v.shape, LO, tl.float32)
    hi = tl.full(v.shape, HI, tl.float32)
    v = tl.where(v != v, hi, v)
    v = tl.minimum(tl.maximum(v, lo), hi)
    if S[F_KIND] == K_FLOAT and S[F_BITS] == 32 and S[F_MB] == 23:
        code = bits_of(v)
        val = v
    elif fast_mode(S, R_EVEN):
        val = fast_round(bits_of(v), v, S, R_EVEN, True)
        # as _codec._fast_magnitude: never 0 here (v >= the smallest normal)
        code = (bits_of(val * S[F_DOWN]) >> (23 - S[F_MB])) + S[F_OFF]
    else:
        code = encode(v, v, S, R_EVEN)
        val = decode(code, S)
    return code, val


@triton.jit
def _div(a, b):
    return tl.div_rn(a, b)


@triton.jit
def lane_scales(
    maxmag,
    hi_b,
    lo_b,
    tmax_b,
    SK: tl.constexpr,
    S: tl.constexpr,
    T: tl.constexpr,
    Z: tl.constexpr,
    RULE: tl.constexpr,
    C: tl.constexpr,
):
    """Per block: scale code, zero code, tensor-scale code, multipliers, non-finite.

    Returns (scale code, zero code, tensor-scale code, encode multiplier, zero point,
    decode multiplier, non-finite) per block from its reductions.

    ``maxmag``: the largest magnitude bits; ``hi_b``: the largest bits of a positive
    element (uint data); ``lo_b``: the largest magnitude bits of a negative element (uint
    data); ``tmax_b``: the tensor's largest magnitude bits (two-level scaling).
    """
    nonfinite = maxmag >= 0x7F800000
    # layout-free constants: lane_scales also serves the Gluon dual kernel
    one = filled(maxmag, 1.0)
    zero_code = filled(maxmag, 0)
    tcode = filled(maxmag, 0)
    zval = filled(maxmag, 0.0)
    if SK == SK_UFLOAT or SK == SK_UEXP:
        hi = tl.where(nonfinite, 0.0, f32_of(hi_b))
        lo = tl.where(nonfinite | (lo_b == 0), 0.0, f32_of(lo_b | -2147483648))
        rng = hi - lo
        if SK == SK_UFLOAT:
            q = _div(rng, tl.full(rng.shape, C[C_M], tl.float32))
            scale, dec = float_scale(q, S, C[C_SLO], C[C_SHI])
        else:
            scale = exp_code(rng, RULE)
            dec = decode(scale, S)
        recip = _div(one, dec)
        nlo = 0.0 - lo
        zraw = nlo * recip
        zero_code = encode(zraw, zraw, Z, R_EVEN)
        zval = decode(zero_code, Z)
        zero_code = tl.where(nonfinite, C[C_ZNAN], zero_code)
    else:
        amax = tl.where(nonfinite, 0.0, f32_of(maxmag))
        if SK == SK_EXP:
            scale = exp_code(amax, RULE)
            dec = decode(scale, S)
            if S[F_KIND] == K_EXP:
                # 1 / 2**k is 2**-k exactly (|k| <= 127 for every exponent scale type)
                recip = pow2(S[F_BIAS] - scale)
            else:
                recip = _div(one, dec)
        elif SK == SK_FLOAT:
            q = _div(amax, tl.full(amax.shape, C[C_M], tl.float32))
            scale, dec = float_scale(q, S, C[C_SLO], C[C_SHI])
            recip = _div(one, dec)
        else:  # two-level
            # the tensor scale once per program (a 1-element block), then broadcast
            tmax1 = tl.full((1,), 0, tl.int32) + tmax_b
            all_bad1 = tmax1 >= 0x7F800000
            tamax = tl.where(all_bad1, 0.0, f32_of(tmax1))
            tq = _div(tamax, tl.full((1,), C[C_MSM], tl.float32))
            tcode1, tval1 = float_scale(tq, T, C[C_TLO], C[C_THI])
            r1 = _div(tl.full((1,), 1.0, tl.float32), tval1)
            tval = tval1 + tl.zeros(amax.shape, tl.float32)
            q1 = _div(amax, tl.full(amax.shape, C[C_M], tl.float32))
            q = _div(q1, tval)
            scale, sval = float_scale(q, S, C[C_SLO], C[C_SHI])
            r2 = _div(r1 + tl.zeros(amax.shape, tl.float32), sval)
            recip = tl.minimum(r2, C[C_F32MAX])
            dec = tval * sval
            all_bad = (tmax1 + zero_code) >= 0x7F800000
            nonfinite = nonfinite | all_bad
            tcode = tl.where(all_bad, T[F_NANC], tcode1 + zero_code)
    scale = tl.where(nonfinite, S[F_NANC], scale)
    return scale, zero_code, tcode, recip, zval, dec, nonfinite
