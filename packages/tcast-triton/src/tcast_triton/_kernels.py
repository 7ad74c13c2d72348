"""The cast kernels (``@triton.jit``): unscaled, tiled (row and column) and the amax pass.

Launchers live in ``_launch``; the per-element codec in ``_codec``; block scales in
``_scales``. Offsets are int32, or int64 for tensors past 2**31 elements (``I64``). A tiled
cast reads the input as the canonical view ``[outer, L, inner]`` with its tiles along ``L``:

* row geometry (``inner == 1``, ``AXIS == 1``): a program owns ``BL`` consecutive tiles, a
  ``[BL, TP]`` block, reduced along axis 1 (``FLAT`` when no tile straddles a row);
* column geometry (``inner > 1``, ``AXIS == 0``): a program owns one tile index along ``L``
  for ``BL`` neighbouring columns of ``inner``, a ``[TP, BL]`` block reduced along axis 0,
  so loads and scale stores stay coalesced without a transpose;
* flat 32-wide row tiles (``_cast_row_pieces``): the block is ``[NP, BL, TP // NP]`` of
  16-byte pieces, each tile's scale computed once; with a fused transform, flat row tiles of
  two or more 16-byte pieces and at least 32 tiles per program take ``[BL, NP, TP // NP]``,
  each tile in one thread;
* ``LOOP``: the tile is longer than one block (channels): one loop takes the block maxima,
  a second encodes; ``PRE``: the block maxima come from the amax pass (a tensor scale).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._codec import (
    F_BITS,
    F_HW,
    F_NANC,
    NAN_BITS,
    NEG_NAN_BITS,
    bits_of,
    decode,
    encode,
    encode_finite,
    f32_of,
    fast_mode,
    fast_value,
    hw_bytes_kept,
    max_u16x2,
    pair_codes,
)
from ._env import INTERPRETING
from ._rn import mul_rn
from ._scales import SK_TWO, SK_UEXP, SK_UFLOAT, block_scales

#: The GPU's float32 -> bfloat16 conversion (``cvt.rn.bf16.f32``: nearest even,
#: subnormals kept); the interpreter's flushes subnormals to zero.
HW_BF16 = tl.constexpr(not INTERPRETING)
# input / virtual output dtypes
IN_F32 = tl.constexpr(0)
IN_F16 = tl.constexpr(1)
IN_BF16 = tl.constexpr(2)
# random sources
RS_NONE = tl.constexpr(0)
RS_SEED = tl.constexpr(1)
RS_BITS = tl.constexpr(2)
# element encode recipes
EK_PLAIN = tl.constexpr(0)
EK_FIXED = tl.constexpr(1)
EK_ZERO = tl.constexpr(2)


@triton.jit
def value_ptr(ptr, IN: tl.constexpr, BITS: tl.constexpr):
    """``ptr`` as a pointer to the input dtype's elements: its bits (``BITS``) or float32.

    Launchers pass 16-bit inputs as int16 views and virtual outputs as integer views, but a
    kernel compiled by torch Inductor is handed the float tensors themselves (it cannot view
    a fused buffer as another dtype): reading and writing through this pointer, a kernel
    does the same with either.
    """
    if IN == IN_F32:
        if BITS:
            q = ptr.to(tl.pointer_type(tl.int32))
        else:
            q = ptr.to(tl.pointer_type(tl.float32))
    else:
        q = ptr.to(tl.pointer_type(tl.int16))
    return q


@triton.jit
def load_f32(ptr, offs, mask, IN: tl.constexpr):
    """Input values as float32; a 16-bit NaN keeps its sign (SEMANTICS.md §4.2)."""
    # float32, or the int16 bit patterns of 16-bit inputs
    return as_f32(tl.load(value_ptr(ptr, IN, False) + offs, mask=mask, other=0), IN)


@triton.jit
def as_f32(raw, IN: tl.constexpr):
    """float32 values of loaded input (float32, or 16-bit patterns as int16), as load_f32."""
    if IN == IN_F32:
        x = raw
    elif IN == IN_BF16:
        # the sign extension's upper half is shifted out: the bits, NaNs included
        x = f32_of(raw.to(tl.int32) << 16)
    else:
        x = raw.to(tl.float16, bitcast=True).to(tl.float32)
        x = tl.where((x != x) & (raw < 0), f32_of(bits_of(x) | -2147483648), x)
    return x


@triton.jit
def pair_words(x_ptr, offw, maskw):
    """bfloat16 ``x`` two elements a word at word offsets ``offw``, and their magnitudes.

    The magnitude bits of both halves (0 where masked), for ``_codec.max_u16x2`` reductions.
    """
    w = tl.load(x_ptr.to(tl.pointer_type(tl.int32)) + offw, mask=maskw, other=0)
    return w, tl.where(maskw, w & 0x7FFF7FFF, 0)


@triton.jit
def pair_pieces_max(mag):
    """Each row tile's largest magnitude bits (float32 bits) from ``[NP, BL, V / 2]`` words.

    As ``_block_max``'s three maxima (the pair formats are not uint: all three the same).
    """
    mw = tl.reduce(tl.reduce(mag, 2, max_u16x2), 0, max_u16x2)
    mx = tl.maximum(mw & 0xFFFF, mw >> 16) << 16
    return mx, mx, mx


@triton.jit
def pair_columns_max(mag):
    """Each column's largest magnitude bits from ``[T, BN / 2]`` words, as ``[BN]`` lanes.

    The halves of word ``j`` are columns ``2j`` and ``2j + 1``; three maxima as
    :func:`pair_pieces_max`.
    """
    mw = tl.reduce(mag, 0, max_u16x2)
    mx = tl.reshape(tl.join((mw & 0xFFFF) << 16, mw & -65536), (mw.shape[0] * 2,))
    return mx, mx, mx


@triton.jit
def store_pair_pieces(out_ptr, offw, maskw, w, recip, bad, E: tl.constexpr):
    """The codes of ``[NP, BL, V / 2]`` words ``w`` of row tiles with power-of-two ``recip``.

    Two codes an int16 at the words' offsets (the element offsets' halves) of the code
    bytes; a non-finite tile's codes are 0.
    """
    mul = bits_of(recip) >> 16  # the power of two as bfloat16 bits, in both halves
    mul = (mul | (mul << 16))[None, :, None]
    keep = tl.where(bad, 0, -1).to(tl.int16)[None, :, None]
    codes = pair_codes(w, mul, keep, E)
    tl.store(out_ptr.to(tl.pointer_type(tl.int16)) + offw, codes, mask=maskw)


@triton.jit
def store_value(ptr, offs, mask, v, IN: tl.constexpr):
    """float32 values rounded (nearest even) into the input dtype, NaN canonical (§7)."""
    b = bits_of(v)
    neg = b < 0
    nan = v != v
    ptr = value_ptr(ptr, IN, True)
    if IN == IN_F32:
        tl.store(ptr + offs, tl.where(nan, tl.where(neg, NEG_NAN_BITS, NAN_BITS), b), mask=mask)
    elif IN == IN_BF16:
        u = b.to(tl.uint32, bitcast=True)
        r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).to(tl.int32)
        r = tl.where(nan, tl.where(neg, 0xFFC0, 0x7FC0), r)
        tl.store(ptr + offs, r.to(tl.int16), mask=mask)
    else:
        h = v.to(tl.float16).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
        h = tl.where(nan, tl.where(neg, 0xFE00, 0x7E00), h)
        tl.store(ptr + offs, h.to(tl.int16), mask=mask)


@triton.jit
def store_block_value(ptr, offs, mask, v, bad, IN: tl.constexpr):
    """Values of a scaled block into the input dtype; ``bad`` (non-finite blocks): +NaN.

    A finite block's elements are never NaN codes (scaled casts saturate), so a NaN value
    there is made by the decode: a zero element times a two-level multiplier that overflowed
    to Inf. SEMANTICS.md §8 makes it +NaN too (the GPU would give 0x7FFFFFFF). Otherwise one
    rounding conversion (``cvt.rn``, nearest even, IEEE overflow) per element.
    """
    bad = bad | (v != v)
    ptr = value_ptr(ptr, IN, True)
    if IN == IN_F32:
        tl.store(ptr + offs, tl.where(bad, NAN_BITS, bits_of(v)), mask=mask)
    elif IN == IN_BF16:
        if HW_BF16:
            h = v.to(tl.bfloat16).to(tl.int16, bitcast=True)
        else:  # the interpreter's conversion flushes subnormals: round the bits instead
            b = bits_of(v)
            h = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).to(tl.int16)
        tl.store(ptr + offs, tl.where(bad, 0x7FC0, h), mask=mask)
    else:
        h = v.to(tl.float16).to(tl.int16, bitcast=True)
        tl.store(ptr + offs, tl.where(bad, 0x7E00, h), mask=mask)


@triton.jit
def store_packed4(ptr, starts, row_ok, codes, N: tl.constexpr):
    """4-bit codes of runs ``starts + [0, N)`` two per byte, element ``2i`` in the low nibble.

    ``starts`` are even and ``N`` is even, so run ``k`` is bytes ``starts[k] / 2 + [0, N/2)``
    of the compress stream (SEMANTICS.md §8); ``row_ok`` says which runs are real.
    """
    lo, hi = tl.split(tl.reshape(codes, (starts.shape[0], N // 2, 2)))
    byte = (lo | (hi << 4)).to(tl.uint8)
    po = (starts // 2)[:, None] + tl.arange(0, N // 2)[None, :]
    tl.store(ptr + po, byte, mask=tl.broadcast_to(row_ok[:, None], (starts.shape[0], N // 2)))


@triton.jit
def store_packed_groups(
    ptr, starts, row_ok, codes, N: tl.constexpr, W: tl.constexpr, G: tl.constexpr
):
    """``W``-bit codes of runs ``starts + [0, N)`` as the compress stream's bytes (SEMANTICS.md §8).

    ``G`` codes (``G * W`` a multiple of 8) form one little-endian word of ``B = G * W / 8``
    bytes, code ``i`` at bits ``[W*i, W*i + W)``; ``starts`` and ``N`` are multiples of
    ``G``, so run ``k`` is bytes ``starts[k] * W / 8 + [0, N * W / 8)``.
    """
    R: tl.constexpr = starts.shape[0]
    NG: tl.constexpr = N // G
    B: tl.constexpr = G * W // 8
    BP: tl.constexpr = 1 if B == 1 else (4 if B <= 4 else 8)
    c = tl.reshape(codes, (R, NG, G))
    k = tl.arange(0, G)[None, None, :]
    if G * W > 32:
        word = tl.sum(c.to(tl.int64) << (k * W).to(tl.int64), axis=2)  # disjoint bits: sum == OR
        j = tl.arange(0, BP)[None, None, :].to(tl.int64)
    else:
        word = tl.sum(c << (k * W), axis=2)
        j = tl.arange(0, BP)[None, None, :]
    byte = ((word[:, :, None] >> (j * 8)) & 0xFF).to(tl.uint8)
    first = (starts // G) * B
    po = first[:, None, None] + (tl.arange(0, NG) * B)[None, :, None] + j
    ok = tl.broadcast_to(row_ok[:, None, None] & (j < B), (R, NG, BP))
    tl.store(ptr + po, byte, mask=ok)


@triton.jit
def store_packed(ptr, starts, row_ok, codes, N: tl.constexpr, W: tl.constexpr):
    """``W``-bit codes (``W`` in 1..7) of runs ``starts + [0, N)`` packed (SEMANTICS.md §8).

    Runs start at and hold multiples of :func:`tcast_triton._launch.pack_group` codes.
    """
    if W == 4:
        store_packed4(ptr, starts, row_ok, codes, N)
    elif W % 2 == 1:
        store_packed_groups(ptr, starts, row_ok, codes, N, W, 8)
    elif W % 4 == 2:
        store_packed_groups(ptr, starts, row_ok, codes, N, W, 4)


@triton.jit
def hadamard_rows(
    x, G: tl.constexpr, STAGES: tl.constexpr, SIGNS: tl.constexpr, SCALE: tl.constexpr
):
    """The transform of SEMANTICS.md §5.10 on groups of ``G`` consecutive elements of each row.

    ``x``: float32 ``[R, N]``, ``N`` a multiple of ``G = 2^STAGES`` (``G`` in 2..32);
    ``SIGNS``: bit ``i`` set where sign ``i`` is -1 (an int32); ``SCALE``: the normalization
    ``2^-c``.
    The stages run in the normative order (``h = 1, 2, ..., G/2``), each add and subtract one
    float32 rounding to nearest even; NaN payloads are left as the arithmetic makes them (a
    cast reads a NaN's presence, not its bits).
    """
    R: tl.constexpr = x.shape[0]
    N: tl.constexpr = x.shape[1]
    k = tl.arange(0, N) % G
    neg = ((SIGNS >> k) & 1) == 1  # an arithmetic shift of an int32 mask: bit 0 is exact
    # a product by -1: the exact negation, zeros too (Triton's -x is 0 - x, which makes
    # -(+0) = +0); where each element's sign is a constant of its register, the compiler
    # folds it into the first stage's adds as an operand's negation
    x = tl.where(neg[None, :], x * -1.0, x)
    for s in tl.static_range(STAGES):
        x = _butterfly_stage(x, R, N, 1 << s)
    return x * SCALE


@triton.jit
def hadamard_axis(
    x,
    AXIS: tl.constexpr,
    G: tl.constexpr,
    STAGES: tl.constexpr,
    SIGNS: tl.constexpr,
    SCALE: tl.constexpr,
):
    """:func:`hadamard_rows` along axis ``AXIS`` of a 2-D block.

    Axis 0: the column geometry's ``[TP, BL]`` block, its tiles down the columns.
    """
    if AXIS == 1:
        return hadamard_rows(x, G, STAGES, SIGNS, SCALE)
    else:
        return tl.trans(hadamard_rows(tl.trans(x), G, STAGES, SIGNS, SCALE))


@triton.jit
def hadamard_pieces(
    x, G: tl.constexpr, STAGES: tl.constexpr, SIGNS: tl.constexpr, SCALE: tl.constexpr
):
    """:func:`hadamard_rows` on a ``[R, NP, V]`` block of rows cut into pieces.

    Piece ``p`` of row ``r`` is elements ``[p * V, (p + 1) * V)`` of it. Loaded so (``V``
    elements one 16-byte vector), a row's pieces lie in one thread's registers: the
    butterfly's pairs never cross threads and the views below move no data (in the ``[R, N]``
    block of ``_cast_tiles`` a 32-element group spans two threads, and its last stage goes
    through shared memory).
    """
    R: tl.constexpr = x.shape[0]
    NP: tl.constexpr = x.shape[1]
    V: tl.constexpr = x.shape[2]
    t = hadamard_rows(tl.reshape(x, (R, NP * V)), G, STAGES, SIGNS, SCALE)
    return tl.reshape(t, (R, NP, V))


@triton.jit
def _butterfly_stage(x, R: tl.constexpr, N: tl.constexpr, H: tl.constexpr):
    """One butterfly stage: pairs ``(a, b)`` at distance ``H`` become ``(a + b, a - b)``.

    A helper, since a compiled loop cannot rebind a constexpr.
    """
    v = tl.permute(tl.reshape(x, (R, N // (2 * H), 2, H)), (0, 1, 3, 2))
    a, b = tl.split(v)
    v = tl.join(a + b, a - b)
    return tl.reshape(tl.permute(v, (0, 1, 3, 2)), (R, N))


@triton.jit
def store_codes(ptr, offs, mask, codes, CB: tl.constexpr):
    """int32 codes as the stored unsigned dtype (CB bytes)."""
    if CB == 1:
        tl.store(ptr + offs, codes.to(tl.uint8), mask=mask)
    elif CB == 2:
        tl.store(ptr + offs, codes.to(tl.uint16), mask=mask)
    else:
        tl.store(ptr + offs, codes.to(tl.uint32, bitcast=True), mask=mask)


@triton.constexpr_function
def rbits_width(E):
    """``K``, the random bits of the element format ``E`` (SEMANTICS.md §3.2): 8 or 16.

    Evaluated while compiling (a constant of the kernel).
    """
    return 8 if E[F_BITS] <= 8 else 16


@triton.jit
def _philox_words(seed, rstream, calls):
    """The four words (uint32) of the Philox calls ``calls`` (int) on stream ``rstream``.

    Counter ``(calls mod 2**32, calls >> 32, rstream, 0)``, key the 64-bit seed (§3.3). The
    kernels name the stream ``rstream``: Inductor's launchers take a ``stream`` of their own.
    """
    lo = calls.to(tl.uint32)  # the low word (truncation)
    if calls.dtype.primitive_bitwidth > 32:
        hi = (calls >> 32).to(tl.uint32)
    else:
        hi = lo * 0
    s = (lo * 0 + rstream).to(tl.uint32)  # a run-time int, or a constant under Inductor
    return tl.philox(seed, lo, hi, s, lo * 0)


@triton.jit
def random_words(seed, rstream, rb_ptr, offs, mask, RS: tl.constexpr, RK: tl.constexpr):
    """int32 codec words ``r << (32 - RK)`` per element: Philox, or the caller's bits.

    Element ``i`` takes bits ``[RK b, RK b + RK)`` of word ``w`` of call ``i // (128 / RK)``
    (SEMANTICS.md §3.3): one call per element here; :func:`random_runs` makes each call
    once for ``128 / RK`` elements. Given bits are ``RK``-bit integers (uint8 or int16).
    """
    PER_WORD: tl.constexpr = 32 // RK
    LOG_E: tl.constexpr = 4 if RK == 8 else 3
    if RS == RS_SEED:
        r0, r1, r2, r3 = _philox_words(seed, rstream, offs >> LOG_E)
        j = (offs & (4 * PER_WORD - 1)).to(tl.int32)
        w = j // PER_WORD
        word = tl.where(w == 0, r0, tl.where(w == 1, r1, tl.where(w == 2, r2, r3)))
        word = word.to(tl.int32, bitcast=True)
        # the element's bits to the top: shift left by 32 - RK - RK * b, keep the top RK
        up = 32 - RK - RK * (j % PER_WORD)
        r = (word << up) & (-(1 << (32 - RK)))
    elif RS == RS_BITS:
        g = tl.load(rb_ptr + offs, mask=mask, other=0).to(tl.int32)
        r = (g & ((1 << RK) - 1)) << (32 - RK)
    else:
        r = offs.to(tl.int32)  # unused
    return r


@triton.jit
def _block_start(I64: tl.constexpr):
    """The program id, as int64 for tensors past 2**31 elements."""
    if I64:
        p = tl.program_id(0).to(tl.int64)
    else:
        p = tl.program_id(0)
    return p


@triton.jit(do_not_specialize=["seed", "rstream"])
def _cast_unscaled(
    x_ptr,
    rb_ptr,
    out_ptr,
    n,
    seed,
    rstream,
    E: tl.constexpr,
    MODE: tl.constexpr,
    IN: tl.constexpr,
    RS: tl.constexpr,
    VIRTUAL: tl.constexpr,
    CB: tl.constexpr,
    BLOCK: tl.constexpr,
    I64: tl.constexpr,
    PACK: tl.constexpr = 0,
):
    """Elementwise cast (no scale): codes, or their values in the input dtype.

    ``PACK``: ``PACK``-bit codes (1..7) straight into the compress stream (``n % BLOCK == 0``).
    """
    start = _block_start(I64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    x = load_f32(x_ptr, offs, mask, IN)
    RK: tl.constexpr = rbits_width(E)
    if RS == RS_SEED:
        first = tl.full((1,), 0, offs.dtype) + start
        r = tl.reshape(random_runs(seed, rstream, first, BLOCK, RK), (BLOCK,))
    else:
        r = random_words(seed, rstream, rb_ptr, offs, mask, RS, RK)
    codes = encode(x, r, E, MODE)
    if VIRTUAL:
        v = decode(codes, E)
        if E[F_NANC] < 0:  # no NaN in the format: an input NaN stays NaN (SEMANTICS §4.2)
            v = tl.where(x != x, x, v)
        store_value(out_ptr, offs, mask, v, IN)
    elif PACK:
        ok = tl.full((1,), 0, offs.dtype) + start < n
        pm = tl.reshape(codes, (1, BLOCK))
        store_packed(out_ptr, tl.full((1,), 0, offs.dtype) + start, ok, pm, BLOCK, PACK)
    else:
        store_codes(out_ptr, offs, mask, codes, CB)


@triton.jit
def _block_max(x, mask, AXIS: tl.constexpr, U: tl.constexpr):
    """The block's maxima of magnitude bits along AXIS.

    For uint data also the maxima of the positive bits and of the negative magnitude bits.
    Integer maxima: deterministic and NaN-proof.
    """
    b = bits_of(x)
    mag = tl.where(mask, b & 0x7FFFFFFF, 0)
    mx = tl.max(mag, axis=AXIS)
    if U:
        hi = tl.max(tl.where(mask & (b > 0), b, 0), axis=AXIS)
        lo = tl.max(tl.where(mask & (b < 0), mag, 0), axis=AXIS)
    else:
        hi = mx
        lo = mx
    return mx, hi, lo


@triton.jit
def _encode_block(
    x,
    r,
    offs,
    mask,
    recip,
    zval,
    dec,
    bad,
    out_ptr,
    AXIS: tl.constexpr,
    E: tl.constexpr,
    MODE: tl.constexpr,
    EK: tl.constexpr,
    FIXED: tl.constexpr,
    INV_FIXED: tl.constexpr,
    IN: tl.constexpr,
    VIRTUAL: tl.constexpr,
    CB: tl.constexpr,
    starts,
    lane_ok,
    PACK: tl.constexpr,
    TP: tl.constexpr,
):
    """Encode a block with its lanes' multipliers and store codes or virtual values.

    ``PACK``: row tiles of ``TP`` codes of ``PACK`` bits (1..7; 0: none) go straight into
    the compress stream.
    """
    rc = tl.expand_dims(recip, AXIS)
    # each product rounds on its own: never fused with the zero point's addition into a
    # multiply-add, nor with a power-of-two FIXED into one scaled multiplication (FMUL.M4)
    if EK == EK_FIXED:
        xs = mul_rn(x, rc) * FIXED
    elif EK == EK_ZERO:
        xs = mul_rn(x, rc) + tl.expand_dims(zval, AXIS)
    else:
        xs = x * rc
    badb = tl.expand_dims(bad, AXIS) & mask
    if VIRTUAL:
        if fast_mode(E, MODE):
            q = fast_value(xs, r, E, MODE)
        else:
            q = decode(tl.where(badb, 0, encode_finite(xs, r, E, MODE)), E)
        dc = tl.expand_dims(dec, AXIS)
        if EK == EK_FIXED:
            v = (q * INV_FIXED) * dc
        elif EK == EK_ZERO:
            v = (q - tl.expand_dims(zval, AXIS)) * dc
        else:
            v = q * dc
        store_block_value(out_ptr, offs, mask, v, badb, IN)
    elif E[F_HW] != 0 and CB == 1 and PACK == 0:
        # a non-finite block's codes are 0: its lanes' keep mask is 0, applied to whole
        # words of converted codes (half the instructions of a per-element select)
        keep = tl.expand_dims(tl.where(bad, 0, 255).to(tl.uint8), AXIS)
        tl.store(out_ptr + offs, hw_bytes_kept(xs, keep, E), mask=mask)
    else:
        codes = tl.where(badb, 0, encode_finite(xs, r, E, MODE))
        if PACK:
            store_packed(out_ptr, starts, lane_ok, codes, TP, PACK)
        else:
            store_codes(out_ptr, offs, mask, codes, CB)


@triton.jit
def _geometry(
    pid,
    c0,
    outer,
    L,
    inner,
    T,
    nt,
    ntiles,
    AXIS: tl.constexpr,
    TP: tl.constexpr,
    BL: tl.constexpr,
    TK: tl.constexpr,
    FLAT: tl.constexpr,
    FULL: tl.constexpr,
    I64: tl.constexpr,
    PATCH: tl.constexpr,
    CV: tl.constexpr = 0,
):
    """Element offsets, mask, lane (scale) indices, lane mask and run starts of one block.

    ``c0`` is the first tile position of the block (loops over long tiles). ``TK`` is the
    tile length when it is known at compile time (0: the runtime ``T``, channels);
    ``FLAT``: row tiles never straddle a row (``L % T == 0``), so tile ``k`` is the flat
    run ``[k*T, (k+1)*T)``; ``FULL``: the launcher proved that every element and lane of
    every block is real (no partial tile, no padded lane), so the masks are constant true
    and loads and stores are unmasked. Masks are otherwise built so that they are constant
    along runs of contiguous elements, which keeps loads and stores vectorized; offsets are
    int64 only for tensors past 2**31 elements (``I64``). ``starts`` holds the flat offset
    of each contiguous run of the block (a row of the ``[BL, TP]`` or ``[TP, BL]`` block):
    element ``i`` of a run is at ``start + i``.
    """
    if TK > 0:
        Tt = TK
    else:
        Tt = T
    t = c0 + tl.arange(0, TP)
    if I64:
        p = pid.to(tl.int64)
    else:
        p = pid
    if AXIS == 1:  # rows: BL tiles of TP along a flat line
        if PATCH:
            k, lane_ok, _, _ = patch_lanes(nt, ntiles, BL, I64)
        else:
            k = p * BL + tl.arange(0, BL)
            lane_ok = k < ntiles
        lanes = k
        if FLAT:
            starts = k * Tt + c0
            offs = starts[:, None] + tl.arange(0, TP)[None, :]
            if FULL:
                lane_ok = tl.full((BL,), 1, tl.int1)
                mask = tl.full((BL, TP), 1, tl.int1)
            elif TP == TK:
                mask = tl.broadcast_to(lane_ok[:, None], (BL, TP))
            else:
                mask = lane_ok[:, None] & (t[None, :] < Tt)
        else:
            o = k // nt
            j = k % nt
            # o < outer, not k < outer * nt: an argument equal to 1 arrives as a constexpr
            lane_ok = o < outer
            pos = j[:, None] * Tt + t[None, :]
            mask = lane_ok[:, None] & (t[None, :] < Tt) & (pos < L)
            starts = o * L + j * Tt + c0
            offs = starts[:, None] + tl.arange(0, TP)[None, :]
    else:  # columns: TP positions along L for BL columns of inner
        nic = tl.cdiv(inner, BL)
        ic = p % nic
        rest = p // nic
        j = rest % nt
        o = rest // nt
        i = ic * BL + tl.arange(0, BL)
        pos = j * Tt + t
        starts = (o * L + pos) * inner + ic * BL
        cols = tl.arange(0, BL)
        if CV > 0:  # runs of CV contiguous columns: CV-element loads, a tile's rows a thread
            cols = (cols // CV) * CV + cols % CV
        offs = starts[:, None] + cols[None, :]
        lanes = (o * nt + j) * inner + i
        if FULL:
            lane_ok = tl.full((BL,), 1, tl.int1)
            mask = tl.full((TP, BL), 1, tl.int1)
        else:
            lane_ok = i < inner
            row_ok = (t < Tt) & (pos < L)
            mask = row_ok[:, None] & lane_ok[None, :]
    return offs, mask, lanes, lane_ok, starts


@triton.jit
def random_runs(seed, rstream, starts, N: tl.constexpr, RK: tl.constexpr):
    """Philox codec words of a block made of runs of ``N`` contiguous flat indices.

    Run ``k`` covers flat indices ``starts[k] + [0, N)``, with ``starts[k]`` and ``N``
    multiples of ``E = 128 / RK``: one Philox call per ``E`` elements (SEMANTICS.md §3.3),
    its words in order, each word's ``RK``-bit fields from the least significant up
    (``join`` adds a trailing axis, so the word pairs are (w0, w2) and (w1, w3)).
    """
    E: tl.constexpr = 128 // RK
    PER_WORD: tl.constexpr = 32 // RK
    ctr = (starts // E)[:, None] + tl.arange(0, N // E)[None, :]
    r0, r1, r2, r3 = _philox_words(seed, rstream, ctr)
    w = tl.reshape(tl.join(tl.join(r0, r2), tl.join(r1, r3)), (starts.shape[0], N // E, 4))
    w = w.to(tl.int32, bitcast=True)
    up = 32 - RK - RK * tl.arange(0, PER_WORD)  # field b to the top
    f = (w[:, :, :, None] << up[None, None, None, :]) & (-(1 << (32 - RK)))
    return tl.reshape(f, (starts.shape[0], N))


@triton.jit
def _block_randoms(
    seed,
    rstream,
    rb_ptr,
    offs,
    mask,
    starts,
    RS: tl.constexpr,
    RV: tl.constexpr,
    N: tl.constexpr,
    RK: tl.constexpr,
):
    """The block's random words: by runs (``RV``: aligned runs of ``N``) or per element."""
    if RV:
        r = random_runs(seed, rstream, starts, N, RK)
    else:
        r = random_words(seed, rstream, rb_ptr, offs, mask, RS, RK)
    return r


# tile and program counts only decompose program ids and bound masks: Triton's divisibility
# and ==1 specializations of them would add compiled variants per shape and speed nothing
@triton.jit(do_not_specialize=["outer", "nt", "ntiles", "seed", "rstream"])
def _cast_tiles(
    x_ptr,
    rb_ptr,
    out_ptr,
    scale_ptr,
    zero_ptr,
    tcode_ptr,
    stats_ptr,
    outer,
    L,
    inner,
    T,
    nt,
    ntiles,
    seed,
    rstream,
    AXIS: tl.constexpr,
    TP: tl.constexpr,
    BL: tl.constexpr,
    TK: tl.constexpr,
    FLAT: tl.constexpr,
    FULL: tl.constexpr,
    I64: tl.constexpr,
    LOOP: tl.constexpr,
    PRE: tl.constexpr,
    SK: tl.constexpr,
    E: tl.constexpr,
    S: tl.constexpr,
    TS: tl.constexpr,
    Z: tl.constexpr,
    RULE: tl.constexpr,
    C: tl.constexpr,
    MODE: tl.constexpr,
    EK: tl.constexpr,
    FIXED: tl.constexpr,
    INV_FIXED: tl.constexpr,
    IN: tl.constexpr,
    RS: tl.constexpr,
    RV: tl.constexpr,
    RUN: tl.constexpr,
    VIRTUAL: tl.constexpr,
    CB: tl.constexpr,
    SCB: tl.constexpr,
    ZCB: tl.constexpr,
    TCB: tl.constexpr,
    PACK: tl.constexpr = 0,
    BLK: tl.constexpr = False,
    PATCH: tl.constexpr = False,
    GIVEN: tl.constexpr = False,
    RHT_G: tl.constexpr = 0,
    RHT_STAGES: tl.constexpr = 0,
    RHT_SIGNS: tl.constexpr = 0,
    RHT_SCALE: tl.constexpr = 1.0,
    CV: tl.constexpr = 0,
    GP: tl.constexpr = 0,
    GRULE: tl.constexpr = (0, 0, 0, 0, 0),
    STREAM: tl.constexpr = False,
    gscale_ptr=None,
    gzero_ptr=None,
    gtens_ptr=None,
):
    """One scaled cast over tiles of the canonical view (see the module docstring).

    ``RHT_G``: the cast's Hadamard transform (SEMANTICS.md §5.11) on groups of ``RHT_G``
    elements of each tile (0: none; whole tiles, not ``LOOP``), applied as the tiles are
    loaded (:func:`hadamard_axis`).

    ``PACK``: codes of ``PACK`` bits (1..7; 0: none) written packed into the compress stream
    (row tiles of a compile-time length, a multiple of :func:`tcast_triton._launch.pack_group`,
    that never straddle a row: ``FLAT`` and ``TP == TK``).
    ``BLK``: scale codes in the blocked layout (:func:`scale_slots`). ``GIVEN``: the block
    statistics are not the tiles' own but those of whole blocks of which the tiles are
    parts (a DTensor shard's window, ``_local``), read as :func:`_tile_stats` writes them.
    ``GP``: given scale parts (SEMANTICS.md §5.12; ``_scales.GP_*`` bits, 0: none), float32
    values at ``gscale_ptr``, ``gzero_ptr`` (by lane) and ``gtens_ptr`` (one), encoded in
    :func:`_scales.lane_scales` (``GRULE``: a given exponent scale's rule); the last
    parameters, which a launch without them leaves None (``_fastlaunch.Launch.call_with``).
    ``STREAM`` (with ``LOOP``): every part of the scale recipe is given, so no maxima are
    taken before the elements are encoded: one read of each long tile, which finds its
    non-finite elements as it encodes them, and a second pass only over a block holding one
    (its codes rewritten as §5.2 says) — where a computed scale reads each tile twice.
    """
    pid = tl.program_id(0)
    U: tl.constexpr = SK == SK_UFLOAT or SK == SK_UEXP
    offs, mask, lanes, lane_ok, starts = _geometry(
        pid, 0, outer, L, inner, T, nt, ntiles, AXIS, TP, BL, TK, FLAT, FULL, I64, PATCH, CV
    )
    if GIVEN:
        n = _lane_count(ntiles, inner)
        mx = tl.load(stats_ptr + 3 + lanes, mask=lane_ok, other=0)
        hi = tl.load(stats_ptr + 3 + n + lanes, mask=lane_ok, other=0)
        lo = tl.load(stats_ptr + 3 + 2 * n + lanes, mask=lane_ok, other=0)
    elif PRE:
        zl = tl.zeros(lanes.shape, tl.int32)
        mx = zl + tl.load(stats_ptr)
        hi = zl + tl.load(stats_ptr + 1)
        lo = zl + tl.load(stats_ptr + 2)
    elif STREAM:  # maxima not needed: the non-finite blocks are found while encoding
        mx = tl.zeros(lanes.shape, tl.int32)
        hi = mx
        lo = mx
    elif LOOP:
        mx, hi, lo = _looped_max(
            x_ptr, pid, outer, L, inner, T, nt, ntiles, AXIS, TP, BL, TK, FLAT, FULL, I64, PATCH,
            IN, U,
        )  # fmt: skip
    else:
        x = load_f32(x_ptr, offs, mask, IN)
        if RHT_G > 0:
            x = hadamard_axis(x, AXIS, RHT_G, RHT_STAGES, RHT_SIGNS, RHT_SCALE)
        mx, hi, lo = _block_max(x, mask, AXIS, U)
    glanes = lanes
    if PRE:  # one block, the tensor: one given scale
        glanes = lanes * 0
    scale, zcode, tcode, recip, zval, dec, bad = block_scales(
        mx, hi, lo, stats_ptr, gscale_ptr, gzero_ptr, gtens_ptr, glanes, lane_ok, SK, S, TS, Z,
        RULE, C, GP, GRULE,
    )  # fmt: skip
    if VIRTUAL == 0 and not STREAM:  # STREAM: stored once the blocks' elements are read
        if PRE:  # one tensor scale: every program has it, the first stores it
            if pid == 0:
                _store_lane_codes(
                    scale_ptr, zero_ptr, tcode_ptr, lanes, lanes, lanes == 0, scale, zcode,
                    tcode, pid, SK, U, SCB, ZCB, TCB,
                )  # fmt: skip
        else:
            slots = lane_slots(lanes, nt, ntiles, inner, BL, BLK, PATCH, I64)
            _store_lane_codes(
                scale_ptr, zero_ptr, tcode_ptr, lanes, slots, lane_ok, scale, zcode, tcode, pid,
                SK, U, SCB, ZCB, TCB,
            )  # fmt: skip
    if LOOP:
        nonfinite = _encode_looped(
            x_ptr, rb_ptr, out_ptr, pid, outer, L, inner, T, nt, ntiles, seed, rstream, recip,
            zval, dec, bad, AXIS, TP, BL, TK, FLAT, FULL, I64, PATCH, E, MODE, EK, FIXED,
            INV_FIXED, IN, RS, RV, RUN, VIRTUAL, CB, PACK, STREAM,
        )  # fmt: skip
        if STREAM:
            # a block holding NaN or ±Inf (§5.2): its codes (or values) are written again
            if tl.max(nonfinite.to(tl.int32), axis=0) > 0:
                # the same loop again: each element's store comes from the thread that stored
                # it in the first pass (the stores' layouts are the coalescing pass's, from the
                # same pointers), after it in that thread's program order
                _encode_looped(
                    x_ptr, rb_ptr, out_ptr, pid, outer, L, inner, T, nt, ntiles, seed,
                    rstream, recip, zval, dec, bad | nonfinite, AXIS, TP, BL, TK, FLAT, FULL,
                    I64, PATCH, E, MODE, EK, FIXED, INV_FIXED, IN, RS, RV, RUN, VIRTUAL, CB,
                    PACK, False,
                )  # fmt: skip
            if VIRTUAL == 0:
                # the codes of the recipe's non-finite branch: maxima that say non-finite
                mx = tl.where(nonfinite, 0x7F800000, 0)
                scale, zcode, tcode, _r, _z, _d, _b = block_scales(
                    mx, hi, lo, stats_ptr, gscale_ptr, gzero_ptr, gtens_ptr, glanes, lane_ok,
                    SK, S, TS, Z, RULE, C, GP, GRULE,
                )  # fmt: skip
                slots = lane_slots(lanes, nt, ntiles, inner, BL, BLK, PATCH, I64)
                _store_lane_codes(
                    scale_ptr, zero_ptr, tcode_ptr, lanes, slots, lane_ok, scale, zcode, tcode,
                    pid, SK, U, SCB, ZCB, TCB,
                )  # fmt: skip
    else:
        if PRE or GIVEN:
            x = load_f32(x_ptr, offs, mask, IN)
            if RHT_G > 0:
                x = hadamard_axis(x, AXIS, RHT_G, RHT_STAGES, RHT_SIGNS, RHT_SCALE)
        r = _block_randoms(seed, rstream, rb_ptr, offs, mask, starts, RS, RV, RUN, rbits_width(E))
        _encode_block(
            x,
            r,
            offs,
            mask,
            recip,
            zval,
            dec,
            bad,
            out_ptr,
            AXIS,
            E,
            MODE,
            EK,
            FIXED,
            INV_FIXED,
            IN,
            VIRTUAL,
            CB,
            starts,
            lane_ok,
            PACK,
            TP,
        )


@triton.jit
def _encode_looped(
    x_ptr,
    rb_ptr,
    out_ptr,
    pid,
    outer,
    L,
    inner,
    T,
    nt,
    ntiles,
    seed,
    rstream,
    recip,
    zval,
    dec,
    bad,
    AXIS: tl.constexpr,
    TP: tl.constexpr,
    BL: tl.constexpr,
    TK: tl.constexpr,
    FLAT: tl.constexpr,
    FULL: tl.constexpr,
    I64: tl.constexpr,
    PATCH: tl.constexpr,
    E: tl.constexpr,
    MODE: tl.constexpr,
    EK: tl.constexpr,
    FIXED: tl.constexpr,
    INV_FIXED: tl.constexpr,
    IN: tl.constexpr,
    RS: tl.constexpr,
    RV: tl.constexpr,
    RUN: tl.constexpr,
    VIRTUAL: tl.constexpr,
    CB: tl.constexpr,
    PACK: tl.constexpr,
    FIND: tl.constexpr,
):
    """Encode tiles longer than a block in chunks of TP (``_encode_block``).

    Returns, with ``FIND``, whether each lane's tile holds NaN or ±Inf (else all False):
    element-wise maxima of magnitude bits kept through the loop and reduced once, not a
    reduction per chunk.
    """
    offs, _m, _l, _ok, _st = _geometry(
        pid, 0, outer, L, inner, T, nt, ntiles, AXIS, TP, BL, TK, FLAT, FULL, I64, PATCH
    )
    found = tl.zeros(offs.shape, tl.int32)
    c0 = 0
    while c0 < T:
        offs, mask, _lanes, lane_ok, starts = _geometry(
            pid, c0, outer, L, inner, T, nt, ntiles, AXIS, TP, BL, TK, FLAT, FULL, I64, PATCH
        )
        x = load_f32(x_ptr, offs, mask, IN)
        if FIND:  # the largest magnitude bits (a masked element loads as 0)
            found = tl.maximum(found, bits_of(x) & 0x7FFFFFFF)
        r = _block_randoms(seed, rstream, rb_ptr, offs, mask, starts, RS, RV, RUN, rbits_width(E))
        _encode_block(
            x, r, offs, mask, recip, zval, dec, bad, out_ptr, AXIS, E, MODE, EK, FIXED,
            INV_FIXED, IN, VIRTUAL, CB, starts, lane_ok, PACK, TP,
        )  # fmt: skip
        c0 += TP
    return tl.max(found, axis=AXIS) >= 0x7F800000


@triton.jit
def _looped_max(
    x_ptr,
    pid,
    outer,
    L,
    inner,
    T,
    nt,
    ntiles,
    AXIS: tl.constexpr,
    TP: tl.constexpr,
    BL: tl.constexpr,
    TK: tl.constexpr,
    FLAT: tl.constexpr,
    FULL: tl.constexpr,
    I64: tl.constexpr,
    PATCH: tl.constexpr,
    IN: tl.constexpr,
    U: tl.constexpr,
):
    """The lanes' maxima (``_block_max``) of tiles longer than a block, in chunks of TP."""
    _o, _m, lanes, _ok, _st = _geometry(
        pid, 0, outer, L, inner, T, nt, ntiles, AXIS, TP, BL, TK, FLAT, FULL, I64, PATCH
    )
    mx = tl.zeros(lanes.shape, tl.int32)
    hi = mx
    lo = mx
    # a while loop: the interpreter cannot take a runtime bound in range() (numpy 2.4)
    c0 = 0
    while c0 < T:
        offs, mask, _l, _ok, _st = _geometry(
            pid, c0, outer, L, inner, T, nt, ntiles, AXIS, TP, BL, TK, FLAT, FULL, I64, PATCH
        )
        x = load_f32(x_ptr, offs, mask, IN)
        m1, h1, l1 = _block_max(x, mask, AXIS, U)
        mx = tl.maximum(mx, m1)
        hi = tl.maximum(hi, h1)
        lo = tl.maximum(lo, l1)
        c0 += TP
    return mx, hi, lo


@triton.jit(do_not_specialize=["outer", "nt", "ntiles"])
def _tile_stats(
    x_ptr,
    stats_ptr,
    outer,
    L,
    inner,
    T,
    nt,
    ntiles,
    AXIS: tl.constexpr,
    TP: tl.constexpr,
    BL: tl.constexpr,
    TK: tl.constexpr,
    FLAT: tl.constexpr,
    FULL: tl.constexpr,
    I64: tl.constexpr,
    LOOP: tl.constexpr,
    IN: tl.constexpr,
    U: tl.constexpr,
):
    """Each tile's statistics as ``_cast_tiles`` reduces them, for its ``GIVEN`` launch.

    ``stats_ptr[3 + k * n + lane]``, k = 0, 1, 2, over ``n`` lanes (:func:`_lane_count`):
    the maxima of magnitude bits, and for uint data of the positive bits and of the negative
    magnitude bits (``_block_max``), by lane (the plain scale array's flat index). Integer
    maxima: the statistics of a block split over shards reduce exactly by an integer MAX.
    """
    pid = tl.program_id(0)
    offs, mask, lanes, lane_ok, _st = _geometry(
        pid, 0, outer, L, inner, T, nt, ntiles, AXIS, TP, BL, TK, FLAT, FULL, I64, False
    )
    if LOOP:
        mx, hi, lo = _looped_max(
            x_ptr, pid, outer, L, inner, T, nt, ntiles, AXIS, TP, BL, TK, FLAT, FULL, I64, False,
            IN, U,
        )  # fmt: skip
    else:
        x = load_f32(x_ptr, offs, mask, IN)
        mx, hi, lo = _block_max(x, mask, AXIS, U)
    n = _lane_count(ntiles, inner)
    tl.store(stats_ptr + 3 + lanes, mx, mask=lane_ok)
    tl.store(stats_ptr + 3 + n + lanes, hi, mask=lane_ok)
    tl.store(stats_ptr + 3 + 2 * n + lanes, lo, mask=lane_ok)


@triton.jit
def _lane_count(ntiles, inner):
    """The lanes of a launch (the plain scale array's size): ``ntiles`` (outer x nt) x inner.

    int64 always: the buffer's offsets reach ``3 + 3 n``, past int32 for windows of about
    1.4e9 elements in 2-element tiles, below the element count at which ``I64`` turns on.
    """
    return ntiles.to(tl.int64) * inner


@triton.jit
def blocked_slot(r, c, cols, W64: tl.constexpr = True):
    """Where scale ``(r, c)`` of a matrix of ``cols`` scales per row lies in the blocked layout.

    SEMANTICS.md §8.1 (``tcast.blocked_offset``): 128 x 4 blocks of 512 codes in row-major
    block order, row ``32 i + j`` and column ``k`` of a block at ``16 j + 4 i + k``. ``W64``:
    int64, where the padding to 128 rows can pass int32 (the launcher knows). Shifts and
    masks, not ``//`` and ``%``: the indices are non-negative, and signed division by a
    power of two costs sign fix-ups.
    """
    if W64:
        r = r.to(tl.int64)
        c = c.to(tl.int64)
    block = (r >> 7) * ((cols + 3) >> 2) + (c >> 2)
    return (block << 9) + ((r & 31) << 4) + (((r >> 5) & 3) << 2) + (c & 3)


@triton.jit
def patch_lanes(nt, ntiles, BL: tl.constexpr, I64: tl.constexpr):
    """Flat tile indices, lane mask, rows and tiles in the row of this program's patch.

    A patch is 8 rows of ``BL / 8`` tiles: rows ``128 g + 32 a + 2 h + b`` (``a`` in 0..3,
    ``b`` in 0..1) of the matrix of ``ntiles / nt`` rows of ``nt`` tiles, the rows whose
    scales share the 32-byte sectors of the blocked layout (SEMANTICS.md §8.1: row
    ``32 a + j`` of a 128 x 4 block at ``16 j + 4 a``): a program writes whole sectors of
    scale codes, where flat lanes write 4 bytes in each of ``BL / 4`` sectors 512 bytes
    apart. A two-dimensional grid: axis 0 along the row, axis 1 through ``(g, h)``; no
    division by a run-time value, and each lane's row and column of the scale matrix
    come free (flat lanes divide by ``nt`` for them).
    """
    W: tl.constexpr = BL // 8
    cc = tl.program_id(0)
    rest = tl.program_id(1)
    if I64:
        cc = cc.to(tl.int64)
        rest = rest.to(tl.int64)
    h = rest % 16
    g = rest // 16
    j = tl.arange(0, BL)
    sub = j // W
    row = g * 128 + (sub // 2) * 32 + h * 2 + sub % 2
    tile = cc * W + j % W
    k = row * nt + tile
    return k, (tile < nt) & (k < ntiles), row, tile


@triton.jit
def scale_slots(lanes, nt, inner, BLK: tl.constexpr, I64: tl.constexpr):
    """Where the lanes' scale codes are stored.

    A lane is a flat index of the plain scale array ``[outer, nt, inner]`` (its tiles along
    the middle dimension); ``BLK``: its place in the blocked layout of the matrix with the
    tiled dimension moved last (``outer * inner`` rows of ``nt`` scales), else the lane.
    """
    if BLK:
        i = lanes % inner
        rest = lanes // inner
        slots = blocked_slot((rest // nt) * inner + i, rest % nt, nt, I64)
    else:
        slots = lanes
    return slots


@triton.jit
def lane_slots(
    lanes,
    nt,
    ntiles,
    inner,
    BL: tl.constexpr,
    BLK: tl.constexpr,
    PATCH: tl.constexpr,
    I64: tl.constexpr,
):
    """:func:`scale_slots`, from the rows and tiles of :func:`patch_lanes` in patches."""
    if BLK and PATCH:
        _, _, row, tile = patch_lanes(nt, ntiles, BL, I64)
        slots = blocked_slot(row, tile, nt, I64)
    else:
        slots = scale_slots(lanes, nt, inner, BLK, I64)
    return slots


@triton.jit
def _store_lane_codes(
    scale_ptr,
    zero_ptr,
    tcode_ptr,
    lanes,
    slots,
    lane_ok,
    scale,
    zcode,
    tcode,
    pid,
    SK: tl.constexpr,
    U: tl.constexpr,
    SCB: tl.constexpr,
    ZCB: tl.constexpr,
    TCB: tl.constexpr,
):
    """Store the lanes' scale (and zero-point) codes, and a two-level tensor-scale code once.

    The lanes ``lane_ok`` keeps go to ``slots`` (:func:`scale_slots`); the tensor-scale code
    is program 0's lane 0.
    """
    store_codes(scale_ptr, slots, lane_ok, scale, SCB)
    if U:
        store_codes(zero_ptr, slots, lane_ok, zcode, ZCB)
    if SK == SK_TWO:
        if pid == 0:
            store_codes(tcode_ptr, lanes, lanes == 0, tcode, TCB)


# the same run-time arguments as _cast_tiles (one launcher passes either)
@triton.jit(do_not_specialize=["outer", "nt", "ntiles", "seed", "rstream"])
def _cast_row_pieces(
    x_ptr,
    rb_ptr,
    out_ptr,
    scale_ptr,
    zero_ptr,
    tcode_ptr,
    stats_ptr,
    outer,
    L,
    inner,
    T,
    nt,
    ntiles,
    seed,
    rstream,
    TP: tl.constexpr,
    BL: tl.constexpr,
    NP: tl.constexpr,
    FULL: tl.constexpr,
    I64: tl.constexpr,
    SK: tl.constexpr,
    E: tl.constexpr,
    S: tl.constexpr,
    TS: tl.constexpr,
    Z: tl.constexpr,
    RULE: tl.constexpr,
    C: tl.constexpr,
    MODE: tl.constexpr,
    EK: tl.constexpr,
    FIXED: tl.constexpr,
    INV_FIXED: tl.constexpr,
    IN: tl.constexpr,
    RS: tl.constexpr,
    VIRTUAL: tl.constexpr,
    CB: tl.constexpr,
    SCB: tl.constexpr,
    ZCB: tl.constexpr,
    TCB: tl.constexpr,
    BLK: tl.constexpr = False,
    PATCH: tl.constexpr = False,
    PAIRS: tl.constexpr = False,
    RHT_G: tl.constexpr = 0,
    RHT_STAGES: tl.constexpr = 0,
    RHT_SIGNS: tl.constexpr = 0,
    RHT_SCALE: tl.constexpr = 1.0,
    ROWS_OUTER: tl.constexpr = False,
    GP: tl.constexpr = 0,
    GRULE: tl.constexpr = (0, 0, 0, 0, 0),
    gscale_ptr=None,
    gzero_ptr=None,
    gtens_ptr=None,
):
    """``_cast_tiles`` for flat row tiles of ``TP`` elements, each tile's scale computed once.

    In the ``[BL, TP]`` block of ``_cast_tiles`` every thread holding part of a tile computes
    the tile's scale (for a float or two-level scale, over a hundred instructions). Here the
    block is ``[NP, BL, TP // NP]``: piece ``p`` of tile ``k`` is elements
    ``[p * V, (p + 1) * V)`` of it, one 16-byte vector; the tile's scale is computed once
    per lane of ``BL`` (the compiler spreads the ``NP`` pieces over neighbouring threads,
    which keeps the loads coalesced: the tile's maximum is a few shuffles). Same bits as
    ``_cast_tiles``: only the placement differs.

    ``ROWS_OUTER``: the block ``[BL, NP, TP // NP]`` instead (not with ``PAIRS``), which
    the compiler places one tile per thread; ``RHT_G``: the transform of ``_cast_tiles`` on
    groups inside a tile (with ``ROWS_OUTER``: the butterfly stays in registers). A seeded
    stochastic cast takes ``ROWS_OUTER``: each thread makes its tile's Philox calls.
    ``GP``, ``GRULE`` and the given parts' pointers: as ``_cast_tiles``.
    """
    V: tl.constexpr = TP // NP
    U: tl.constexpr = SK == SK_UFLOAT or SK == SK_UEXP
    if PATCH:
        k, lane_ok, _, _ = patch_lanes(nt, ntiles, BL, I64)
    else:
        k = _block_start(I64) * BL + tl.arange(0, BL)
        lane_ok = k < ntiles
    starts = k * TP
    if ROWS_OUTER:
        TA: tl.constexpr = 1  # the tile's pieces
        piece = (tl.arange(0, NP) * V)[None, :, None]
        offs = starts[:, None, None] + piece + tl.arange(0, V)[None, None, :]
        lanes3 = lane_ok[:, None, None]
    else:
        TA: tl.constexpr = 0
        piece = (tl.arange(0, NP) * V)[:, None, None]
        offs = starts[None, :, None] + piece + tl.arange(0, V)[None, None, :]
        lanes3 = lane_ok[None, :, None]
    if FULL:
        lane_ok = tl.full((BL,), 1, tl.int1)
        mask = tl.full(offs.shape, 1, tl.int1)
    else:
        mask = tl.broadcast_to(lanes3, offs.shape)
    if PAIRS:  # bfloat16 words of two elements, encoded by _codec.pair_codes
        offw = (starts // 2)[None, :, None] + piece // 2 + tl.arange(0, V // 2)[None, None, :]
        maskw = tl.broadcast_to(lane_ok[None, :, None], offw.shape)
        w, mag = pair_words(x_ptr, offw, maskw)
        mx, hi, lo = pair_pieces_max(mag)
    else:
        x = load_f32(x_ptr, offs, mask, IN)
        if RHT_G > 0:
            x = hadamard_pieces(x, RHT_G, RHT_STAGES, RHT_SIGNS, RHT_SCALE)
        m2, h2, l2 = _block_max(x, mask, 2, U)
        mx = tl.max(m2, axis=TA)
        hi = tl.max(h2, axis=TA)
        lo = tl.max(l2, axis=TA)
    scale, zcode, tcode, recip, zval, dec, bad = block_scales(
        mx, hi, lo, stats_ptr, gscale_ptr, gzero_ptr, gtens_ptr, k, lane_ok, SK, S, TS, Z, RULE,
        C, GP, GRULE,
    )  # fmt: skip
    if VIRTUAL == 0:
        slots = lane_slots(k, nt, ntiles, inner, BL, BLK, PATCH, I64)
        _store_lane_codes(
            scale_ptr, zero_ptr, tcode_ptr, k, slots, lane_ok, scale, zcode, tcode,
            tl.program_id(0), SK, U, SCB, ZCB, TCB,
        )  # fmt: skip
    if PAIRS:
        store_pair_pieces(out_ptr, offw, maskw, w, recip, bad, E)
    else:
        RK: tl.constexpr = rbits_width(E)
        if RS == RS_SEED and ROWS_OUTER:
            # a tile per thread: its Philox calls (TP a multiple of 128 / RK) in registers
            r = tl.reshape(random_runs(seed, rstream, starts, TP, RK), (BL, NP, V))
        else:
            r = random_words(seed, rstream, rb_ptr, offs, mask, RS, RK)
        # the lane values as [1, BL] ([BL, 1]): _encode_block adds the trailing axis
        _encode_block(
            x, r, offs, mask, tl.expand_dims(recip, TA), tl.expand_dims(zval, TA),
            tl.expand_dims(dec, TA), tl.expand_dims(bad, TA), out_ptr, 2, E, MODE, EK, FIXED,
            INV_FIXED, IN, VIRTUAL, CB, starts, lane_ok, 0, TP,
        )  # fmt: skip


@triton.jit
def _amax_pass(
    x_ptr,
    stats_ptr,
    n,
    IN: tl.constexpr,
    U: tl.constexpr,
    BLOCK: tl.constexpr,
    I64: tl.constexpr,
    RHT_G: tl.constexpr = 0,
    RHT_STAGES: tl.constexpr = 0,
    RHT_SIGNS: tl.constexpr = 0,
    RHT_SCALE: tl.constexpr = 1.0,
    RHT_V: tl.constexpr = 1,
    RHT_INNER: tl.constexpr = 0,
):
    """The tensor's maxima of magnitude bits (and uint's positive/negative maxima).

    Atomic integer max: the same result whatever order the programs run in. ``RHT_G``: the
    maxima of the transformed values (groups of consecutive elements along the last
    dimension, whose length is a multiple of ``RHT_G``; 0: none), each group in one thread
    as pieces of ``RHT_V`` elements (:func:`hadamard_pieces`). ``RHT_INNER``: groups of
    ``RHT_G`` rows down each column of rows ``RHT_INNER`` long instead (tiles along another
    dimension; the rows a multiple of ``RHT_G``): each program a ``[RHT_G, BLOCK / RHT_G]``
    block, runs of ``64 / RHT_G`` columns a thread (a group in its registers, as the column
    cast's ``CV``; grid: :func:`tcast_triton._launch.amax_programs`).
    """
    if RHT_INNER > 0:
        BC: tl.constexpr = BLOCK // RHT_G
        CV: tl.constexpr = 64 // RHT_G
        NCB: tl.constexpr = (RHT_INNER + BC - 1) // BC
        p = _block_start(I64)
        cq = tl.arange(0, BC)
        c = (p % NCB) * BC + (cq // CV) * CV + cq % CV
        offs = ((p // NCB) * RHT_G + tl.arange(0, RHT_G))[:, None] * RHT_INNER + c[None, :]
        mask = tl.broadcast_to((c < RHT_INNER)[None, :], offs.shape)
        x = load_f32(x_ptr, offs, mask, IN)
        x = hadamard_axis(x, 0, RHT_G, RHT_STAGES, RHT_SIGNS, RHT_SCALE)
        m2, h2, l2 = _block_max(x, mask, 0, U)
        mx = tl.max(m2, axis=0)
        hi = tl.max(h2, axis=0)
        lo = tl.max(l2, axis=0)
    elif RHT_G > 0:
        start = _block_start(I64) * BLOCK
        NP: tl.constexpr = RHT_G // RHT_V
        groups = (tl.arange(0, BLOCK // RHT_G) * RHT_G)[:, None, None]
        piece = (tl.arange(0, NP) * RHT_V)[None, :, None]
        offs = start + groups + piece + tl.arange(0, RHT_V)[None, None, :]
        mask = offs < n
        x = load_f32(x_ptr, offs, mask, IN)
        x = hadamard_pieces(x, RHT_G, RHT_STAGES, RHT_SIGNS, RHT_SCALE)
        m3, h3, l3 = _block_max(x, mask, 2, U)
        mx = tl.max(tl.max(m3, axis=1), axis=0)
        hi = tl.max(tl.max(h3, axis=1), axis=0)
        lo = tl.max(tl.max(l3, axis=1), axis=0)
    else:
        offs = _block_start(I64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = load_f32(x_ptr, offs, mask, IN)
        mx, hi, lo = _block_max(x, mask, 0, U)
    tl.atomic_max(stats_ptr, mx)
    if U:
        tl.atomic_max(stats_ptr + 1, hi)
        tl.atomic_max(stats_ptr + 2, lo)
