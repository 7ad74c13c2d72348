"""Elementwise encode and decode in Triton (SEMANTICS.md §2-§4): integer round-and-shift.

The device twin of ``tcast_torch._codec`` and ``tcast_ref._codec``: every rule is integer
arithmetic on float32 bit patterns, so each code is the exactly rounded one in every round
mode and no float conversion instruction of the GPU is trusted with a format it does not
have. A format arrives as the compile-time tuple of ``tcast_triton._formats.fmt``, read
through the ``F_*`` indices; a round mode as its code (``ROUND_CODES``).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._rn import mul_rn, mul_rz

# fields of a format tuple (tcast_triton._formats.fmt)
F_KIND = tl.constexpr(0)
F_BITS = tl.constexpr(1)
F_MB = tl.constexpr(2)
F_BIAS = tl.constexpr(3)
F_EMIN = tl.constexpr(4)
F_MAXC = tl.constexpr(5)
F_SB = tl.constexpr(6)
F_NEGZ = tl.constexpr(7)
F_OVERC = tl.constexpr(8)
F_OVERS = tl.constexpr(9)
F_INFC = tl.constexpr(10)
F_INFS = tl.constexpr(11)
F_NANC = tl.constexpr(12)
F_NANS = tl.constexpr(13)
F_MAXI = tl.constexpr(14)
F_STYLE = tl.constexpr(15)
F_EBITS = tl.constexpr(16)
F_DEEP = tl.constexpr(17)
F_FAST = tl.constexpr(18)
F_DOWN = tl.constexpr(19)
F_UP = tl.constexpr(20)
F_OFF = tl.constexpr(21)
F_HW = tl.constexpr(22)
F_MINN = tl.constexpr(23)
F_CK = tl.constexpr(24)
F_MAXV = tl.constexpr(25)
F_CAPE = tl.constexpr(26)
F_ULP = tl.constexpr(27)
F_SRF = tl.constexpr(28)
F_PAIR = tl.constexpr(29)
F_PMAX = tl.constexpr(30)
F_PMIN = tl.constexpr(31)
F_PCK = tl.constexpr(32)
F_PDOWN = tl.constexpr(33)
F_PSB = tl.constexpr(34)
F_PSH = tl.constexpr(35)
F_DINF = tl.constexpr(36)
F_DNAN = tl.constexpr(37)
F_UNAN = tl.constexpr(38)

K_FLOAT = tl.constexpr(0)
K_INT = tl.constexpr(1)
K_UINT = tl.constexpr(2)
K_EXP = tl.constexpr(3)

R_EVEN = tl.constexpr(0)
R_AWAY = tl.constexpr(1)
R_ZERO = tl.constexpr(2)
R_TRUNC = tl.constexpr(3)
R_STOCH = tl.constexpr(4)

NAN_BITS = tl.constexpr(0x7FC00000)
NEG_NAN_BITS = tl.constexpr(-4194304)  # 0xFFC00000
SIGN = tl.constexpr(-2147483648)


@triton.jit
def bits_of(x):
    """int32 bit pattern of float32 values."""
    return x.to(tl.int32, bitcast=True)


@triton.jit
def f32_of(b):
    """float32 values of int32 bit patterns."""
    return b.to(tl.float32, bitcast=True)


@triton.jit
def filled(like, value):
    """The constant ``value`` in the shape of integer ``like`` (in Gluon, its layout too).

    ``tl.full`` takes no layout, which a Gluon kernel needs; ``like * 0`` folds to a zero
    splatted like ``like`` and the sum to the constant: no instruction either way.
    """
    return like * 0 + value


@triton.jit
def floor_log2_small(s):
    """floor(log2 s) of int32 0 < s < 2**24 (exact through float32's exponent field)."""
    return (bits_of(s.to(tl.float32)) >> 23) - 127


@triton.jit
def pow2(k):
    """2**k as float32 for int32 k in [-149, 127], from the bits."""
    normal = (tl.minimum(tl.maximum(k, -126), 127) + 127) << 23
    sub = filled(k, 1) << tl.minimum(tl.maximum(k + 149, 0), 22)
    return f32_of(tl.where(k >= -126, normal, sub))


@triton.jit
def round_up(rem, sh, shift, odd, rbits, MODE: tl.constexpr):
    """1 where the discarded part ``rem`` (units 2**-shift of the kept unit) rounds up."""
    if MODE == R_STOCH:
        # floor(frac * 2**32) as a 32-bit pattern; up iff it plus r carries out of 32 bits,
        # i.e. r >u ~frac32: an unsigned compare written as a signed one of both xor the sign
        lsh = tl.minimum(tl.maximum(32 - shift, 0), 31)
        rsh = tl.minimum(tl.maximum(shift - 32, 0), 31)
        frac32 = tl.where(shift <= 32, rem << lsh, rem >> rsh)
        up = (rbits ^ SIGN) > (~frac32 ^ SIGN)
    elif MODE == R_TRUNC:
        up = tl.zeros(rem.shape, tl.int1)
    else:
        half = tl.where(sh > 0, tl.full(sh.shape, 1, tl.int32) << tl.maximum(sh - 1, 0), 0)
        above = rem > half
        tie = (rem == half) & (rem > 0)
        if MODE == R_ZERO:
            up = above
        elif MODE == R_AWAY:
            up = above | tie
        else:
            up = above | (tie & odd)
    return up.to(tl.int32)


@triton.jit
def split(x):
    """(negative, magnitude bits, exponent field, significand S, q): |x| = S * 2**q."""
    b = bits_of(x)
    mag = b & 0x7FFFFFFF
    e32 = mag >> 23
    m32 = mag & 0x7FFFFF
    s = tl.where(e32 > 0, m32 | 0x800000, m32)
    q = tl.maximum(e32, 1) - 150
    return b < 0, mag, e32, s, q


@triton.jit
def encode(x, rbits, F: tl.constexpr, MODE: tl.constexpr):
    """int32 codes (unsigned patterns of the format's width) of float32 ``x``."""
    if F[F_KIND] == K_FLOAT:
        code = _encode_float(x, rbits, F, MODE)
    elif F[F_KIND] == K_EXP:
        code = _encode_exponent(x, rbits, F, MODE)
    else:
        code = _encode_int(x, rbits, F, MODE)
    return code


@triton.jit
def _grid_exponent(b, F: tl.constexpr):
    """``2**max(e, emin)`` for float32 bits ``b`` (``2**e`` the binade of ``|x|``).

    The format's spacing at ``|x|`` is this times ``2**-mbits``. The exponent is capped at
    ``emax + 2``: larger magnitudes (and Inf) still round above the maximum, and neither
    the rounding constant nor a difference overflows to Inf or NaN.
    """
    return tl.minimum(tl.maximum(f32_of(b & 0x7F800000), F[F_MINN]), F[F_CAPE])


@triton.jit
def fast_round(mag, rbits, F: tl.constexpr, MODE: tl.constexpr, CAPPED: tl.constexpr = False):
    """``|x|`` (magnitude bits ``mag``) rounded to the format's grid, in float32 arithmetic.

    For formats with ``F[F_FAST]`` (see ``_formats._fast_fields``), every mode but
    stochastic rounding (:func:`fast_round_stochastic`). With ``2**g`` the format's spacing
    at ``|x|`` (from the exponent bits of ``|x|``, at least ``2**emin``) and
    ``c = 1.5 * 2**(g+23)``, ``(|x| + c) - c`` is ``|x|`` rounded to that spacing with ties
    to an even multiple, which is the even code (SEMANTICS.md §3.2). The other modes correct
    that result: ``d = |x| - r`` is exact, a tie is ``|d| == u/2``, and the grid point below
    is ``r - u`` where ``d < 0``. Mostly float-pipe instructions, a third of the integer
    path's count. Inf and huge inputs round above the maximum, NaN to anything; the caller
    replaces them.
    """
    a = f32_of(mag)
    if CAPPED:  # |x| <= max: its binade is below the cap already
        e = tl.maximum(f32_of(mag & 0x7F800000), F[F_MINN])
    else:
        e = _grid_exponent(mag, F)
    # products that feed sums: mul_rn, so that no compiler option fuses them (exact, a power
    # of two times a short constant: the bits would not change, the code would)
    c = mul_rn(e, F[F_CK])
    r = (a + c) - c
    if MODE != R_EVEN:
        u = mul_rn(e, F[F_ULP])
        d = a - r
        if MODE == R_TRUNC:
            r = tl.where(d < 0, r - u, r)
        elif MODE == R_AWAY:
            r = tl.where(d == u * 0.5, r + u, r)
        else:
            tl.static_assert(MODE == R_ZERO, "stochastic rounding: fast_round_stochastic")
            r = tl.where(d == u * -0.5, r - u, r)
    return r


@triton.jit
def fast_round_stochastic(a, rbits, F: tl.constexpr):
    """The stochastic rounding of ``a = |x|`` (float32) as float32 bits scaled by ``down``.

    For formats with ``F[F_FAST]`` and ``F[F_SRF]`` (``K`` random bits, ``D = 23 - mbits``
    at least ``K``). ``t``, the bits of ``a * 2**(-126 - emin)`` rounded toward zero, is
    ``|x|`` on a scale where the format's grid is every float32 whose low ``D`` bits are
    zero, subnormals included (its subnormals become float32's), and where bits ``[D - K,
    D)`` of ``t`` are ``floor(frac * 2**K)`` (SEMANTICS.md §3.2; the truncation drops only
    bits below them). Adding ``r << (D - K)`` carries into bit ``D`` exactly when
    ``floor(frac * 2**K) + r >= 2**K``; a carry out of the significand moves to the next
    binade, whose first point ``2**(e+1)`` is what the low bits then leave (the sum stays
    below the next grid point there). The result's bits from ``D`` up are the rounded
    magnitude's: the caller shifts (a code) or masks (a value). ``rbits`` are codec words
    ``r << (32 - K)``; a ``NaN`` or ``Inf`` ``a`` gives anything, which the caller replaces.
    """
    D: tl.constexpr = 23 - F[F_MB]
    t = bits_of(mul_rz(a, F[F_DOWN], F[F_UP])).to(tl.uint32, bitcast=True)
    # the words' fields moved down to bit D - K (a logical shift: r's top bit is the sign's);
    # unsigned: a NaN's bits plus r wrap (its code is replaced) rather than overflow
    s = t + (rbits.to(tl.uint32, bitcast=True) >> (32 - D))
    return s.to(tl.int32, bitcast=True)


@triton.jit
def _fast_magnitude(mag, rbits, F: tl.constexpr, MODE: tl.constexpr, CLAMP: tl.constexpr):
    """Magnitude codes of magnitude bits ``mag`` by :func:`fast_round`.

    The rounded value's float32 bits times ``2**(-126 - emin)`` (format subnormals become
    float32 subnormals exactly) shifted right by ``23 - mbits`` are the code less an offset.
    ``CLAMP``: magnitudes above the maximum saturate (the maximum's code).
    """
    MB: tl.constexpr = F[F_MB]
    if MODE == R_STOCH:
        a = f32_of(mag)
        if CLAMP:  # saturation first, as below
            a = tl.minimum(a, F[F_MAXV])
        code = fast_round_stochastic(a, rbits, F) >> (23 - MB)
    else:
        if CLAMP:
            # saturation first: every mode takes |x| >= max to max (max is on the grid, and
            # nothing below it rounds above it), which also caps the grid exponent
            r = fast_round(bits_of(tl.minimum(f32_of(mag), F[F_MAXV])), rbits, F, MODE, True)
        else:
            r = fast_round(mag, rbits, F, MODE)
        code = bits_of(r * F[F_DOWN]) >> (23 - MB)
    if F[F_OFF] != 0:
        code = tl.where(code == 0, 0, code + F[F_OFF])
    return code


@triton.jit
def fast_mode(F: tl.constexpr, MODE: tl.constexpr):
    """Whether a float format takes the float-arithmetic rounding of :func:`fast_round`."""
    return F[F_KIND] == K_FLOAT and F[F_FAST] == 1 and (MODE != R_STOCH or F[F_SRF] != 0)


@triton.jit
def encode_finite(x, rbits, F: tl.constexpr, MODE: tl.constexpr):
    """``encode`` of ``x`` that is never NaN, under saturation (a finite scaled block).

    Skips the NaN rule, which cannot apply: a finite block's elements times its finite,
    positive multipliers are finite or +-Inf by overflow, which saturates (0 * Inf cannot
    arise; the multipliers of ``_scales.lane_scales`` are finite). Elsewhere the same codes
    as ``encode``. The kernels replace the codes of non-finite blocks, whatever they are.
    """
    if F[F_HW] != 0:
        out = _hw_code(x, F)
    elif (F[F_KIND] == K_INT or F[F_KIND] == K_UINT) and F[F_FAST] == 1 and MODE == R_EVEN:
        out = _int_even(x, F)
    elif MODE == R_STOCH and fast_mode(F, MODE) and _top_signed(F):
        out = _stochastic_top(bits_of(x), rbits, F)
    elif fast_mode(F, MODE):
        b = bits_of(x)
        # the clamp on the float side and the sign from a shift: fewer integer instructions
        # (Hopper issues half as many per cycle as float ones)
        code = _fast_magnitude(b & 0x7FFFFFFF, rbits, F, MODE, True)
        SB: tl.constexpr = F[F_SB]
        if F[F_NEGZ] == 1:
            out = code | ((b >> 31) & SB)
        else:
            out = tl.where((b < 0) & (code != 0), code | SB, code)
    else:
        out = encode(x, rbits, F, MODE)
    return out


@triton.constexpr_function
def _top_signed(F):
    """Whether :func:`_stochastic_top` encodes the format: a sign-magnitude format with -0.

    Of the formats with fast stochastic rounding (``F[F_SRF]``), those with -0 (FP8 e4m3fn
    and e5m2, FP6, FP4, and wider ones up to 15 bits, which draw 16 random bits). The other
    conditions are the proof's premises, which every such format meets: the sign is the
    code's top bit, every magnitude code lies below it, the magnitude codes start at 0 (no
    ``F[F_OFF]``), and the code fits above the rounding position (``32 - bits >= D``).
    """
    bits, mb = F[F_BITS], F[F_MB]
    return (
        F[F_NEGZ] == 1
        and F[F_OFF] == 0
        and F[F_SB] == 1 << (bits - 1)
        and F[F_MAXC] < F[F_SB]
        and 32 - bits >= 23 - mb
    )


@triton.jit
def _stochastic_top(b, rbits, F: tl.constexpr):
    """:func:`encode_finite`'s stochastic codes for :func:`_top_signed` formats (bits ``b``).

    :func:`fast_round_stochastic`'s sum built ``32 - bits - D`` bits higher, so that the code
    lands in the word's top ``bits`` bits, where the sign of ``b`` (bit 31) joins it by one
    OR. The magnitude's sum stays below ``2**(D + bits - 1)`` (``|x|`` clamped to the
    maximum, whose code is below the sign bit, plus less than one grid step), so the shifted
    sum leaves bit 31 clear: :func:`_fast_magnitude`'s codes with the sign, by one shift and
    one mask fewer per element (the shift folds into the add).
    """
    BITS: tl.constexpr = F[F_BITS]
    D: tl.constexpr = 23 - F[F_MB]
    a = tl.minimum(f32_of(b & 0x7FFFFFFF), F[F_MAXV])
    t = bits_of(mul_rz(a, F[F_DOWN], F[F_UP])).to(tl.uint32, bitcast=True)
    # codec words r << (32 - K) moved to r << (32 - K - bits) = (r << (D - K)) << (32 - bits - D)
    s = (t << (32 - BITS - D)) + (rbits.to(tl.uint32, bitcast=True) >> BITS)
    s = s | (b.to(tl.uint32, bitcast=True) & 0x80000000)
    return (s >> (32 - BITS)).to(tl.int32, bitcast=True)


@triton.jit
def _int_even(x, F: tl.constexpr):
    """Int and uint codes of non-NaN ``x``, ties to even, for widths up to 22 bits.

    ``x`` is clamped to the format's integers on the float side and ``1.5 * 2**23`` added:
    the sum lies in ``[2**23, 2**24)``, where float32's spacing is 1, so it is ``x`` rounded
    to an integer with ties to even (the constant is even), and its significand holds
    ``2**22 + round(x)``: the low ``BITS`` bits are the code, two's complement for a negative
    ``x``. Four instructions where :func:`_encode_int_float` takes about a dozen, with its
    codes for every non-NaN ``x`` (±Inf and huge magnitudes saturate; -0 is code 0).
    """
    MAXI: tl.constexpr = F[F_MAXI]
    if F[F_KIND] == K_UINT:
        c = tl.minimum(tl.maximum(x, 0.0), MAXI)
    else:
        c = tl.minimum(tl.maximum(x, -MAXI), MAXI)
    return bits_of(c + 12582912.0) & ((1 << F[F_BITS]) - 1)


@triton.jit
def fast_value(x, rbits, F: tl.constexpr, MODE: tl.constexpr):
    """``decode(encode_finite(x))`` of finite ``x`` for the formats of :func:`fast_mode`.

    The rounded magnitude itself, clamped to the maximum, with the sign (none on a zero of
    a format without -0): no code is formed.
    """
    b = bits_of(x)
    a = tl.minimum(f32_of(b & 0x7FFFFFFF), F[F_MAXV])
    if MODE == R_STOCH:
        D: tl.constexpr = 23 - F[F_MB]
        # back from the scale of ``down``: exact (a power of two, normal results)
        rb = bits_of(f32_of(fast_round_stochastic(a, rbits, F) & -(1 << D)) * F[F_UP])
    else:
        rb = bits_of(fast_round(bits_of(a), rbits, F, MODE, True))
    if F[F_NEGZ] == 1:
        out = rb | (b & SIGN)
    else:
        out = tl.where(rb != 0, rb | (b & SIGN), 0)
    return f32_of(out)


@triton.jit
def hw_bytes(x, F: tl.constexpr):
    """uint8 codes of the GPU's saturating conversion, one ``cvt.rn.satfinite`` per pair.

    Our codes for every non-NaN ``x`` (+-Inf and overflow to +-max) where ``F[F_HW]`` is
    set (see ``_formats._hardware``); a NaN gets the conversion's own NaN code.
    """
    if F[F_HW] == 1:
        h = x.to(tl.float8e4nv)
    else:
        h = x.to(tl.float8e5)
    return h.to(tl.uint8, bitcast=True)


@triton.jit
def hw_bytes_kept(x, keep, F: tl.constexpr):
    """:func:`hw_bytes` of ``x`` AND ``keep`` (uint8 0xFF or 0), four elements a word.

    Two conversions, one byte permute and one AND per four elements: the codes never
    leave their packed word (Triton widens and selects them byte by byte otherwise).
    """
    if F[F_HW] == 1:
        cvt: tl.constexpr = "cvt.rn.satfinite.e4m3x2.f32"
    else:
        cvt: tl.constexpr = "cvt.rn.satfinite.e5m2x2.f32"
    # PTX statements end with ';', no newline: Inductor embeds a kernel's source in a string
    # literal of its generated module, where an escape would become a line break
    return tl.inline_asm_elementwise(
        "{ .reg .b16 lo, hi; .reg .b32 w; "
        f"{cvt} lo, $2, $1; "
        f"{cvt} hi, $4, $3; "
        "mov.b32 w, {lo, hi}; "
        "and.b32 $0, w, $5; }",
        "=r,r,r,r,r,r",
        [x, keep],
        dtype=tl.uint8,
        is_pure=True,
        pack=4,
    )


@triton.jit
def max_u16x2(a, b):
    """Lane-wise unsigned maximum of the 16-bit halves of int32 words (a reduction's combine)."""
    return tl.inline_asm_elementwise(
        "max.u16x2 $0, $1, $2;", "=r,r,r", [a, b], dtype=tl.int32, is_pure=True, pack=1
    )


@triton.jit
def pair_codes(w, m, keep, F: tl.constexpr):
    """Codes of bfloat16 pairs ``w`` (int32 words) times power-of-two multiplier pairs ``m``.

    The saturating nearest-even :func:`encode_finite` of both halves of each word, as the
    two code bytes of an int16 (the low half's code in the low byte), AND ``keep`` (int16,
    0xFF per kept byte), for the formats of ``_formats._pair_fields`` (sm_90). Per four
    elements: ten bfloat16-pair operations (scale, clamp with the sign, grid exponent and
    its constant, the rounding add and subtract, the code's scaling as in
    ``_fast_magnitude``), two shifts, two byte permutes (the code bytes; the signs, each
    replicated through its byte) and four logic operations, where the float32 encoder
    takes about ten instructions per element besides the input's conversion. The sign
    comes from the scaled input (a negative element that rounds to 0 is -0), the rest
    from the rounded magnitude.
    """
    kx: tl.constexpr = F[F_PMAX]
    kn: tl.constexpr = F[F_PMIN]
    kc: tl.constexpr = F[F_PCK]
    kd: tl.constexpr = F[F_PDOWN]
    sb: tl.constexpr = F[F_PSB]
    sh: tl.constexpr = F[F_PSH]
    return tl.inline_asm_elementwise(
        "{ .reg .b32 s0, s1, a0, a1, e0, e1, t0, t1, q, g, kx, kn, kc, kd; "
        f"mov.b32 kx, {kx}; "
        f"mov.b32 kn, {kn}; "
        f"mov.b32 kc, {kc}; "
        f"mov.b32 kd, {kd}; "
        "mul.rn.bf16x2 s0, $1, $3; "
        "mul.rn.bf16x2 s1, $2, $4; "
        "min.xorsign.abs.bf16x2 a0, s0, kx; "
        "min.xorsign.abs.bf16x2 a1, s1, kx; "
        "and.b32 e0, a0, 2139127680; "  # 0x7F807F80: the exponent fields
        "and.b32 e1, a1, 2139127680; "
        "max.bf16x2 e0, e0, kn; "
        "max.bf16x2 e1, e1, kn; "
        "mul.rn.bf16x2 e0, e0, kc; "
        "mul.rn.bf16x2 e1, e1, kc; "
        "add.rn.bf16x2 t0, a0, e0; "
        "add.rn.bf16x2 t1, a1, e1; "
        "sub.rn.bf16x2 t0, t0, e0; "
        "sub.rn.bf16x2 t1, t1, e1; "
        "mul.rn.bf16x2 t0, t0, kd; "
        "mul.rn.bf16x2 t1, t1, kd; "
        # both halves' codes to the low byte of each half (the bits below are zero)
        f"shr.b32 t0, t0, {sh}; "
        f"shr.b32 t1, t1, {sh}; "
        "prmt.b32 q, t0, t1, 0x6420; "  # the low byte of each half: the magnitude code
        "prmt.b32 g, s0, s1, 0xFDB9; "  # each half's sign through a byte
        f"lop3.b32 q, q, g, {sb}, 0xF8; "  # q | (g & sign bits)
        "and.b32 $0, q, $5; }",
        "=r,r,r,r,r,r",
        [w, m, keep],
        dtype=tl.int16,
        is_pure=True,
        pack=2,
    )


@triton.jit
def _hw_code(x, F: tl.constexpr):
    """:func:`hw_bytes` as int32 codes."""
    return hw_bytes(x, F).to(tl.int32)


@triton.jit
def _encode_float(x, rbits, F: tl.constexpr, MODE: tl.constexpr):
    if F[F_HW] != 0:
        code = _hw_code(x, F)
        # the conversion's NaN is not ours: NaN keeps its sign
        NANC: tl.constexpr = F[F_NANC]
        nan_code = tl.where(bits_of(x) < 0, NANC | F[F_SB], NANC)
        return tl.where(x != x, nan_code, code)
    if fast_mode(F, MODE):
        b = bits_of(x)
        neg = b < 0
        mag = b & 0x7FFFFFFF
        code = _fast_magnitude(mag, rbits, F, MODE, False)
    else:
        neg, mag, code = _encode_float_int(x, rbits, F, MODE)
    return _float_tail(x, neg, mag, code, F)


@triton.jit
def _encode_float_int(x, rbits, F: tl.constexpr, MODE: tl.constexpr):
    """(negative, magnitude bits, magnitude code) by integer round-and-shift (every mode)."""
    neg, mag, e32, s, q = split(x)
    MB: tl.constexpr = F[F_MB]
    BIAS: tl.constexpr = F[F_BIAS]
    EMIN: tl.constexpr = F[F_EMIN]
    if F[F_DEEP] == 0:
        # float32 subnormals lie below the format's normal range: the grid is its spacing
        e_eff = tl.maximum(e32 - 127, EMIN)
    else:
        e = tl.where(e32 > 0, e32 - 127, floor_log2_small(tl.maximum(s, 1)) - 149)
        e_eff = tl.maximum(e, EMIN)
    g = e_eff - MB
    shift = g - q
    sh = tl.minimum(tl.maximum(shift, 0), 30)
    n = s >> sh
    rem = s & ((tl.full(sh.shape, 1, tl.int32) << sh) - 1)
    if MB > 0:
        odd = (n & 1) == 1
    else:
        odd = (n > 0) & (((g + BIAS) & 1) == 1)
    nq = n + round_up(rem, sh, shift, odd, rbits, MODE)
    code = ((g + (BIAS - 1 + MB)) << MB) + nq
    code = tl.where(nq == 0, 0, code)
    return neg, mag, code


@triton.jit
def _float_tail(x, neg, mag, code, F: tl.constexpr):
    """Sign, overflow, Inf and NaN codes around a magnitude code."""
    over = code > F[F_MAXC]
    SB: tl.constexpr = F[F_SB]
    if F[F_NEGZ] == 1:
        res = tl.where(neg, code | SB, code)
    else:
        res = tl.where(neg & (code != 0), code | SB, code)
    OVERC: tl.constexpr = F[F_OVERC]
    INFC: tl.constexpr = F[F_INFC]
    if F[F_OVERS] == 1:
        over_code = tl.where(neg, OVERC | SB, OVERC)
    else:
        over_code = tl.full(x.shape, OVERC, tl.int32)
    if F[F_INFS] == 1:
        inf_code = tl.where(neg, INFC | SB, INFC)
    else:
        inf_code = tl.full(x.shape, INFC, tl.int32)
    res = tl.where(over, over_code, res)
    res = tl.where(mag == 0x7F800000, inf_code, res)
    NANC: tl.constexpr = F[F_NANC]
    if NANC >= 0:
        if F[F_NANS] == 1:
            nan_code = tl.where(neg, NANC | SB, NANC)
        else:
            nan_code = tl.full(x.shape, NANC, tl.int32)
        res = tl.where(mag > 0x7F800000, nan_code, res)
    else:
        res = tl.where(mag > 0x7F800000, 0, res)
    return res


@triton.jit
def _encode_int(x, rbits, F: tl.constexpr, MODE: tl.constexpr):
    if F[F_FAST] == 1:  # at most 22 bits
        code = _encode_int_float(x, rbits, F, MODE)
    else:
        code = _encode_int_shift(x, rbits, F, MODE)
    return code


@triton.jit
def _encode_int_float(x, rbits, F: tl.constexpr, MODE: tl.constexpr):
    """Int/uint codes for widths up to 22 bits, in float32 arithmetic (every round mode).

    ``(a + 1.5 * 2**23) - 1.5 * 2**23`` is ``a`` rounded to an integer, ties to even, for
    ``a <= 2**22``; larger magnitudes are clamped to 2**22 first, above every such
    format's largest integer, so they saturate as the shift encoder's do. The other modes
    correct it as :func:`fast_round` does, with spacing 1 (``a - r`` is exact).
    """
    b = bits_of(x)
    mag = b & 0x7FFFFFFF
    a = tl.minimum(f32_of(mag), 4194304.0)
    r = (a + 12582912.0) - 12582912.0
    if MODE != R_EVEN:
        d = a - r
        if MODE == R_TRUNC:
            r = tl.where(d < 0, r - 1.0, r)
        elif MODE == R_AWAY:
            r = tl.where(d == 0.5, r + 1.0, r)
        elif MODE == R_ZERO:
            r = tl.where(d == -0.5, r - 1.0, r)
        else:
            lo = tl.where(d < 0, r - 1.0, r)
            frac32 = ((a - lo) * 4294967296.0).to(tl.uint32).to(tl.int32, bitcast=True)
            up = (rbits ^ SIGN) > (~frac32 ^ SIGN)  # unsigned r > ~frac32: the sum carries
            r = tl.where(up, lo + 1.0, lo)
    m = tl.minimum(r.to(tl.int32), F[F_MAXI])
    m = tl.where(mag > 0x7F800000, 0, m)
    if F[F_KIND] == K_UINT:
        val = tl.where(b < 0, 0, m)
    else:
        val = tl.where(b < 0, -m, m)
    return val & ((1 << F[F_BITS]) - 1)


@triton.jit
def _encode_int_shift(x, rbits, F: tl.constexpr, MODE: tl.constexpr):
    neg, mag, _, s, q = split(x)
    nan = mag > 0x7F800000
    shift = tl.maximum(-q, 0)
    sh = tl.minimum(shift, 30)
    n = s >> sh
    rem = s & ((tl.full(sh.shape, 1, tl.int32) << sh) - 1)
    nq = n + round_up(rem, sh, shift, (n & 1) == 1, rbits, MODE)
    MAXI: tl.constexpr = F[F_MAXI]
    BITS: tl.constexpr = F[F_BITS]
    if BITS <= 24:
        m = tl.where(q > 0, MAXI, tl.minimum(nq, MAXI))
        m = tl.where(nan, 0, m)
        if F[F_KIND] == K_UINT:
            val = tl.where(neg, 0, m)
        else:
            val = tl.where(neg, -m, m)
        code = val & ((1 << BITS) - 1)
    else:
        # magnitudes up to 2**32 need 64 bits (|x| >= 2**40 saturates first)
        big = tl.minimum(s.to(tl.int64) << tl.minimum(tl.maximum(q, 0), 16).to(tl.int64), MAXI)
        m = tl.where(q > 16, MAXI, tl.where(q > 0, big, tl.minimum(nq.to(tl.int64), MAXI)))
        m = tl.where(nan, 0, m)
        if F[F_KIND] == K_UINT:
            val = tl.where(neg, 0, m)
        else:
            val = tl.where(neg, -m, m)
        val = val & ((1 << BITS) - 1)
        code = tl.where(val >= 2147483648, val - 4294967296, val).to(tl.int32)
    return code


@triton.jit
def _encode_exponent(x, rbits, F: tl.constexpr, MODE: tl.constexpr):
    neg, mag, _, s, q = split(x)
    lg = floor_log2_small(tl.maximum(s, 1))
    e = lg + q
    BIAS: tl.constexpr = F[F_BIAS]
    sh = tl.minimum(tl.maximum(lg, 0), 30)
    n = s >> sh
    rem = s & ((tl.full(sh.shape, 1, tl.int32) << sh) - 1)
    odd = (((e + BIAS) & 1) == 1) & (n > 0)
    nq = n + round_up(rem, sh, lg, odd, rbits, MODE)
    code = e + BIAS + (nq > 1).to(tl.int32)
    code = tl.maximum(code, 0)
    code = tl.where((code > F[F_MAXC]) | (mag == 0x7F800000), F[F_INFC], code)
    return tl.where((mag > 0x7F800000) | neg | (s == 0), F[F_NANC], code)


@triton.jit
def decode(codes, F: tl.constexpr):
    """float32 values of int32 codes (canonical NaN, signed for IEEE/fn negative NaNs)."""
    if F[F_KIND] == K_EXP:
        v = pow2(codes - F[F_BIAS])
        out = tl.where(codes == F[F_UNAN], f32_of(filled(codes, NAN_BITS)), v)
    elif F[F_KIND] == K_INT:
        BITS: tl.constexpr = F[F_BITS]
        if BITS == 32:
            v = codes
        else:
            v = (codes << (32 - BITS)) >> (32 - BITS)
        out = v.to(tl.float32)
    elif F[F_KIND] == K_UINT:
        if F[F_BITS] < 32:
            out = codes.to(tl.float32)
        else:
            hi = ((codes >> 16) & 0xFFFF).to(tl.float32)
            # not mul_rn: the exact product folds into the conversion, no product is left
            # to fuse into the sum (tests/test_offline_contraction.py compiles it both ways)
            out = hi * 65536.0 + (codes & 0xFFFF).to(tl.float32)
    else:
        out = _decode_float(codes, F)
    return out


@triton.jit
def _decode_float(codes, F: tl.constexpr):
    MB: tl.constexpr = F[F_MB]
    BIAS: tl.constexpr = F[F_BIAS]
    SB: tl.constexpr = F[F_SB]
    neg = (codes & SB) != 0
    mag = codes & (SB - 1) if SB > 0 else codes & 0x7FFFFFFF
    field = mag >> MB
    frac = mag & ((1 << MB) - 1)
    if F[F_FAST] == 1:
        # the inverse of _fast_magnitude: exact (a power-of-two product of a representable)
        val = f32_of((mag - F[F_OFF]) << (23 - MB)) * F[F_UP]
    else:
        sig = tl.where(field > 0, frac | (1 << MB), frac).to(tl.float32)
        k = tl.maximum(field, 1) - (BIAS + MB)
        if 1 - BIAS - MB >= -126:
            val = sig * pow2(k)
        else:
            kc = tl.maximum(k, -126)
            val = (sig * pow2(kc)) * pow2(k - kc)
    # the sign as a bit: negation may be lowered as 0 - v, which loses -0
    b = bits_of(val) | tl.where(neg, SIGN, 0)
    # the codes the format reserves (tcast.kit.SpecialCodes): disjoint, in any order
    DINF: tl.constexpr = F[F_DINF]
    DNAN: tl.constexpr = F[F_DNAN]
    UNAN: tl.constexpr = F[F_UNAN]
    if DINF >= 0:
        b = tl.where(mag == DINF, tl.where(neg, -8388608, 0x7F800000), b)  # 0xFF800000
    if DNAN >= 0:
        b = tl.where(mag >= DNAN, tl.where(neg, NEG_NAN_BITS, NAN_BITS), b)
    if UNAN != -1:
        b = tl.where(codes == UNAN, NAN_BITS, b)
    return f32_of(b)
