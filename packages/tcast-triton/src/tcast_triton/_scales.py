"""Block scales in Triton: the kit's scale recipes unrolled at compile time (SEMANTICS §5).

One function, :func:`lane_scales`, turns a block's reductions (integer maxima of float32
bit patterns) into its scale code, zero-point code, encode multiplier and decode multiplier,
following ``tcast.kit``'s recipes step by step: every division is ``tl.div_rn`` (correctly
rounded), every product one float32 multiplication (none feeds a sum here, so no compiler
fuses one into a multiply-add), power-of-two scales come from the exponent and significand
bits and the kit's two integers. Given scale parts (SEMANTICS.md §5.12) replace the steps
of the recipe that compute them (``tcast.kit.given_scale_recipe``); :func:`block_scales`
loads them, and the tensor amax, for the cast kernels.
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


# given scale parts (SEMANTICS.md §5.12): bits of the kernels' compile-time GP, tested as
# ``GP_SCALE & GP`` (a constexpr on the left: it has no reflected ``&`` for the interpreter's
# int)
GP_SCALE = tl.constexpr(1)
GP_ZERO = tl.constexpr(2)
GP_TENSOR = tl.constexpr(4)


@triton.jit
def given_values(ptr, lanes, lane_ok, GIVEN: tl.constexpr):
    """float32 given values of the lanes (``GIVEN``), else zeros (never read)."""
    if GIVEN:
        v = tl.load(ptr + lanes, mask=lane_ok, other=0.0)
    else:
        v = tl.zeros(lanes.shape, tl.float32)
    return v


@triton.jit
def block_scales(
    maxmag,
    hi_b,
    lo_b,
    stats_ptr,
    gscale_ptr,
    gzero_ptr,
    gtens_ptr,
    glanes,
    lane_ok,
    SK: tl.constexpr,
    S: tl.constexpr,
    T: tl.constexpr,
    Z: tl.constexpr,
    RULE: tl.constexpr,
    C: tl.constexpr,
    GP: tl.constexpr,
    GRULE: tl.constexpr,
):
    """:func:`lane_scales` of a cast kernel's lanes: the tensor amax and given parts loaded.

    ``stats_ptr``: the amax pass's maxima (two-level scaling without a given tensor scale);
    ``GP``: the given parts (``GP_*`` bits; 0: none), read at ``glanes`` (the plain scale
    array's flat indices) from float32 arrays; ``GRULE``: the rule of a given exponent scale.
    """
    tmax = 0
    if SK == SK_TWO and (GP_TENSOR & GP) == 0:
        tmax = tl.load(stats_ptr)
    if GP == 0:
        scale, zcode, tcode, recip, zval, dec, bad = lane_scales(
            maxmag, hi_b, lo_b, tmax, SK, S, T, Z, RULE, C
        )
    else:
        gs = given_values(gscale_ptr, glanes, lane_ok, GP_SCALE & GP)
        gz = given_values(gzero_ptr, glanes, lane_ok, GP_ZERO & GP)
        # values the engine's check refuses can reach a cast whose check could not read
        # them (inside a torch.compile graph): their blocks are non-finite (SEMANTICS.md
        # §5.12), a tensor scale's every block, and 0 stands in for them in the recipe
        unusable = _unusable(gs, False, C) | _unusable(gz, True, C)
        gt = 0.0
        if GP_TENSOR & GP:
            gt = tl.load(gtens_ptr + tl.zeros((1,), tl.int32))  # a 1-element block
            tbad = _unusable(gt, False, C)
            gt = tl.where(tbad, 0.0, gt)
            unusable = unusable | tbad
        gs = tl.where(unusable, 0.0, gs)
        gz = tl.where(unusable, 0.0, gz)
        scale, zcode, tcode, recip, zval, dec, bad = lane_scales(
            maxmag, hi_b, lo_b, tmax, SK, S, T, Z, RULE, C, gs, gz, gt, GP, GRULE
        )
        scale = tl.where(unusable, S[F_NANC], scale)
        zcode = tl.where(unusable, C[C_ZNAN], zcode)
        bad = bad | unusable
        if GP_TENSOR & GP:
            tcode = tl.where(tbad, T[F_NANC], tcode)
    return scale, zcode, tcode, recip, zval, dec, bad


@triton.jit
def _unusable(v, SIGNED: tl.constexpr, C: tl.constexpr):
    """Given values the engine's check refuses: NaN, infinite, or (unless ``SIGNED``) below 0."""
    if SIGNED:
        out = (v != v) | (tl.abs(v) > C[C_F32MAX])
    else:
        out = (v != v) | (v < 0.0) | (v > C[C_F32MAX])
    return out


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
    gscale=None,
    gzero=None,
    gtens=None,
    GP: tl.constexpr = 0,
    GRULE: tl.constexpr = None,
):
    """Per block: scale code, zero code, tensor-scale code, multipliers, non-finite.

    Returns (scale code, zero code, tensor-scale code, encode multiplier, zero point,
    decode multiplier, non-finite) per block from its reductions.

    ``maxmag``: the largest magnitude bits; ``hi_b``: the largest bits of a positive
    element (uint data); ``lo_b``: the largest magnitude bits of a negative element (uint
    data); ``tmax_b``: the tensor's largest magnitude bits (two-level scaling).

    ``GP``: the parts given (``GP_*`` bits, SEMANTICS.md §5.12): ``gscale`` and ``gzero``
    per block, ``gtens`` a 1-element block, float32; each is encoded by its format's rule (a given
    exponent scale by ``GRULE``, the kit's ``given_exponent_rule``) in place of the step of
    the kit's recipe that computes it, the other steps unchanged
    (``tcast.kit.given_scale_recipe``). A non-finite block keeps the NaN codes whatever is
    given.
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
        if GP_SCALE & GP:
            if SK == SK_UFLOAT:
                scale, dec = float_scale(gscale, S, C[C_SLO], C[C_SHI])
            else:
                scale = exp_code(gscale, GRULE)
                dec = decode(scale, S)
        else:
            rng = hi - lo
            if SK == SK_UFLOAT:
                q = _div(rng, tl.full(rng.shape, C[C_M], tl.float32))
                scale, dec = float_scale(q, S, C[C_SLO], C[C_SHI])
            else:
                scale = exp_code(rng, RULE)
                dec = decode(scale, S)
        recip = _div(one, dec)
        if GP_ZERO & GP:
            # fl32(v + 0): a given -0 is the +0 a computed zero point is (a select, which no
            # compiler folds as it may fold the addition of zero)
            zraw = tl.where(gzero == 0.0, 0.0, gzero)
        else:
            nlo = 0.0 - lo
            zraw = nlo * recip
        zero_code = encode(zraw, zraw, Z, R_EVEN)
        zval = decode(zero_code, Z)
        zero_code = tl.where(nonfinite, C[C_ZNAN], zero_code)
    else:
        amax = tl.where(nonfinite, 0.0, f32_of(maxmag))
        if SK == SK_EXP:
            if GP_SCALE & GP:
                scale = exp_code(gscale, GRULE)
            else:
                scale = exp_code(amax, RULE)
            dec = decode(scale, S)
            if S[F_KIND] == K_EXP:
                # 1 / 2**k is 2**-k exactly (|k| <= 127 for every exponent scale type)
                recip = pow2(S[F_BIAS] - scale)
            else:
                recip = _div(one, dec)
        elif SK == SK_FLOAT:
            if GP_SCALE & GP:
                scale, dec = float_scale(gscale, S, C[C_SLO], C[C_SHI])
            else:
                q = _div(amax, tl.full(amax.shape, C[C_M], tl.float32))
                scale, dec = float_scale(q, S, C[C_SLO], C[C_SHI])
            recip = _div(one, dec)
        else:  # two-level
            # the tensor scale once per program (a 1-element block), then broadcast
            tmax1 = tl.full((1,), 0, tl.int32) + tmax_b
            if GP_TENSOR & GP:
                tq = tl.full((1,), 0.0, tl.float32) + gtens
            else:
                all_bad1 = tmax1 >= 0x7F800000
                tamax = tl.where(all_bad1, 0.0, f32_of(tmax1))
                tq = _div(tamax, tl.full((1,), C[C_MSM], tl.float32))
            tcode1, tval1 = float_scale(tq, T, C[C_TLO], C[C_THI])
            r1 = _div(tl.full((1,), 1.0, tl.float32), tval1)
            tval = tval1 + tl.zeros(amax.shape, tl.float32)
            if GP_SCALE & GP:
                scale, sval = float_scale(gscale, S, C[C_SLO], C[C_SHI])
            else:
                q1 = _div(amax, tl.full(amax.shape, C[C_M], tl.float32))
                q = _div(q1, tval)
                scale, sval = float_scale(q, S, C[C_SLO], C[C_SHI])
            r2 = _div(r1 + tl.zeros(amax.shape, tl.float32), sval)
            recip = tl.minimum(r2, C[C_F32MAX])
            dec = tval * sval
            if GP_TENSOR & GP:
                # no tensor amax: only the block's own elements make it non-finite
                tcode = tcode1 + zero_code
            else:
                all_bad = (tmax1 + zero_code) >= 0x7F800000
                nonfinite = nonfinite | all_bad
                tcode = tl.where(all_bad, T[F_NANC], tcode1 + zero_code)
    scale = tl.where(nonfinite, S[F_NANC], scale)
    return scale, zero_code, tcode, recip, zval, dec, nonfinite
