"""The dual cast kernel in Gluon: ``_kernels_dual._cast_dual`` with its lane math compacted.

Triton keeps a reduction's result in the reduction's layout, so in ``_cast_dual`` each block's
scale (lane math: the scale rule, the multiplier, the non-finite flag) is computed by every
thread that took part in the block's reduction: 4 threads per row tile, 8 per column. Gluon
(Triton's explicit-layout dialect) lets this kernel move the maxima into a layout of one
block per thread (``LC``: a ``convert_layout`` through shared memory), compute the scales and
store them there, and move back only the multipliers. The column phase takes the row
phase's registers rearranged through shared memory (``ONCE``) instead of reading the block
again from L2. With load and store layouts chosen by benchmark, this kernel's MXFP4 dual
cast of 16384^2 bfloat16 takes 19.5 SASS instructions per element and 0.270 ms on an H200,
``_cast_dual``'s 26.4 and 0.352 ms; MXFP8 0.277 against 0.306 ms (bench/bench_dual.py, same
run; tunables in ``_launch_dual``).

The bits are ``_cast_dual``'s: the same helpers (``lane_scales``, ``_block_max``,
``pair_codes``, ``hw_bytes_kept``, the slot functions) on the same values; only where each
value lives differs. Gluon kernels do not run under the interpreter: the launcher takes this
kernel on sm_90 GPUs for what it serves (``_launch_dual.gluon_takes``: T = 32 tiles, exponent
scales, nearest even, codes by the bfloat16 pair encoder; codes by the hardware FP8
conversion take ``_kernels_dual_gl_hw``, both casts in one layout, unless
``_launch_dual.GLUON_ONE_LAYOUT`` is off) and ``tests/test_gpu_dual_gluon.py`` compares it
with ``_cast_dual`` there.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from ._codec import F_HW, R_EVEN, bits_of, hw_bytes_kept, max_u16x2, pair_codes
from ._kernels import (
    _block_max,
    as_f32,
    pair_pieces_max,
    pair_words,
    store_pair_pieces,
)
from ._kernels_dual import block_at, column_slots, row_slots
from ._scales import SK_EXP, lane_scales


@gluon.jit(do_not_specialize=["outer", "seed", "stream_r", "stream_c"])
def _cast_dual_gl(
    x_ptr,
    rb_ptr,
    out_r,
    out_c,
    scale_r,
    scale_c,
    zero_r,
    zero_c,
    tcode_ptr,
    stats_ptr,
    outer,
    M,
    N,
    seed,
    stream_r,
    stream_c,
    T: gl.constexpr,
    BN: gl.constexpr,
    NP: gl.constexpr,
    TRANS: gl.constexpr,
    BLK: gl.constexpr,
    PAIRS: gl.constexpr,
    FULL: gl.constexpr,
    I64: gl.constexpr,
    SK: gl.constexpr,
    E: gl.constexpr,
    S: gl.constexpr,
    TS: gl.constexpr,
    Z: gl.constexpr,
    RULE: gl.constexpr,
    C: gl.constexpr,
    MODE: gl.constexpr,
    EK: gl.constexpr,
    FIXED: gl.constexpr,
    INV_FIXED: gl.constexpr,
    IN: gl.constexpr,
    RS: gl.constexpr,
    VIRTUAL: gl.constexpr,
    CB: gl.constexpr,
    SCB: gl.constexpr,
    ZCB: gl.constexpr,
    TCB: gl.constexpr,
    W: gl.constexpr,
    CT: gl.constexpr,
    CV: gl.constexpr,
    RV: gl.constexpr,
    ONCE: gl.constexpr,
    REV: gl.constexpr,
    CEV: gl.constexpr,
):
    """Both casts of one ``[T, BN]`` block of ``x``, as ``_cast_dual`` (same arguments).

    The subset it serves (``_launch_dual.gluon_takes``): codes (``VIRTUAL == 0``, one byte
    each), exponent scales without zero points, nearest even (the plan's ``NP``, ``RS``,
    ``MODE``, ``EK``, ``FIXED``, ``INV_FIXED`` are those of that subset and unused). Layout
    tunables: ``W`` warps (the launch's ``num_warps``); ``RV`` elements (words of two,
    ``PAIRS``) a thread holds of a row tile in the row phase; ``CT`` threads of a warp along
    a column and ``CV`` elements (words) a thread holds along a row in the column phase;
    ``ONCE``: the column phase from the row phase's registers; ``REV`` / ``CEV``: the L2
    eviction policies of the row and column scale stores (``_kernels_dual_gl_hw`` says why).
    """
    # what _launch_dual.gluon_takes admits, checked where the kernel relies on it
    gl.static_assert(VIRTUAL == 0)
    gl.static_assert(CB == 1)
    gl.static_assert(SK == SK_EXP)
    gl.static_assert(SCB == 1)  # _store_scales: one-byte scale codes, no zero point
    gl.static_assert(EK == 0)
    gl.static_assert(MODE == R_EVEN)
    gl.static_assert(PAIRS or E[F_HW] != 0)
    # the pieces of a row tile (RV elements or words of two, PAIRS, in each of NQ threads)
    NQ: gl.constexpr = (T // 2 if PAIRS else T) // RV
    NR: gl.constexpr = BN // T
    # lanes along the column phase's axis 1: columns, or words of two columns
    NC: gl.constexpr = BN // 2 if PAIRS else BN
    gl.static_assert(BN >= 32 // NQ * W)
    gl.static_assert(NC >= CV * (32 // CT) * W)
    gl.static_assert(NC >= 32 * W)
    # rows: [NQ, BN, RV], a tile's NQ pieces in NQ neighbouring threads (as _cast_dual)
    LR: gl.constexpr = gl.BlockedLayout([1, 1, RV], [NQ, 32 // NQ, 1], [1, W, 1], [2, 0, 1])
    LQ: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(2, LR))
    LE0: gl.constexpr = gl.SliceLayout(1, gl.SliceLayout(2, LR))
    LE2: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(1, LR))
    # columns: [T, NC], CV elements (words) a thread along the row, CT threads along the column
    L2: gl.constexpr = gl.BlockedLayout([1, CV], [CT, 32 // CT], [1, W], [1, 0])
    LI: gl.constexpr = gl.SliceLayout(1, L2)
    LJ: gl.constexpr = gl.SliceLayout(0, L2)
    # one block's lane math per thread
    LC: gl.constexpr = gl.BlockedLayout([1], [32], [W], [0])
    # xᵀ's codes: 16 bytes of a column of x (a row of xᵀ) a thread
    LT: gl.constexpr = gl.BlockedLayout([16, 1], [T // 16, 32 // (T // 16)], [1, W], [0, 1])

    o, bm, bn, nbm, ntr, ntc, row0 = _block_at(M, N, T, BN, I64)

    # ---- rows: BN tiles, tile q = (row q // NR, row tile q % NR)
    q = gl.arange(0, BN, layout=LQ)
    i_r = q // NR
    tile = bn * NR + q % NR
    starts = (row0 + i_r) * N + tile * T
    e = (gl.arange(0, NQ, layout=LE0) * RV)[:, None, None] + gl.arange(0, RV, layout=LE2)[
        None, None, :
    ]
    if FULL:
        mask = gl.full((NQ, BN, RV), 1, gl.int1, LR)
    else:
        tile_ok = (bm * T + i_r < M) & (tile < ntr)
        if PAIRS:
            mask = tile_ok[None, :, None] & ((tile * T)[None, :, None] + 2 * e < N)
        else:
            mask = tile_ok[None, :, None] & ((tile * T)[None, :, None] + e < N)
    if PAIRS:
        offs = (starts // 2)[None, :, None] + e
        w, mag = pair_words(x_ptr, offs, mask)
        mx, _, _ = pair_pieces_max(mag)
        raw = w
    else:
        offs = starts[None, :, None] + e
        raw = gl.load(x_ptr + offs, mask=mask, other=0)
        x = as_f32(raw, IN)
        m2, _, _ = _block_max(x, mask, 2, False)
        mx = gl.max(m2, axis=0)
    mx = gl.convert_layout(mx, LC)
    scale, _, _, recip, _, _, bad = lane_scales(mx, mx, mx, 0, SK, S, TS, Z, RULE, C)
    qc = gl.arange(0, BN, layout=LC)
    i_c = qc // NR
    tile_c = bn * NR + qc % NR
    if FULL:
        ok_c = gl.full((BN,), 1, gl.int1, LC)
    else:
        ok_c = (bm * T + i_c < M) & (tile_c < ntr)
    _store_scales(scale_r, row_slots(row0 + i_c, tile_c, ntr, BLK), ok_c, scale, REV)
    recip = gl.convert_layout(recip, LQ)
    bad = gl.convert_layout(bad, LQ)
    if PAIRS:
        store_pair_pieces(out_r, offs, mask, w, recip, bad, E)
    else:
        # _encode_block's hardware-conversion branch (no zero point, codes one a byte)
        keep = gl.where(bad, 0, 255).to(gl.uint8)[None, :, None]
        gl.store(out_r + offs, hw_bytes_kept(x * recip[None, :, None], keep, E), mask=mask)

    # ---- columns: the block as [T, NC], reduced along axis 0
    i = gl.arange(0, T, layout=LI)
    j = gl.arange(0, NC, layout=LJ)
    jc = gl.arange(0, NC, layout=LC)
    if PAIRS:
        offs = (row0 + i)[:, None] * (N // 2) + (bn * NC + j)[None, :]
        col = bn * BN + 2 * j
    else:
        offs = (row0 + i)[:, None] * N + (bn * BN + j)[None, :]
        col = bn * BN + j
    if FULL:
        mask = gl.full((T, NC), 1, gl.int1, L2)
    else:
        mask = (bm * T + i < M)[:, None] & (col < N)[None, :]
    if ONCE:
        # the row phase's registers rearranged (through shared memory), not read again
        raw = _as_columns(raw, NQ, T, NR, RV, L2)
    elif PAIRS:
        raw, _ = pair_words(x_ptr, offs, mask)
    else:
        raw = gl.load(x_ptr + offs, mask=mask, other=0)
    if PAIRS:
        w = raw
        mag = gl.where(mask, w & 0x7FFF7FFF, 0)
        mw = gl.convert_layout(gl.reduce(mag, 0, max_u16x2), LC)
        # the halves of word j are columns 2j and 2j + 1
        n_lo = bn * BN + 2 * jc
        s_lo, _, _, r_lo, _, _, b_lo = lane_scales(
            (mw & 0xFFFF) << 16, mw, mw, 0, SK, S, TS, Z, RULE, C
        )
        s_hi, _, _, r_hi, _, _, b_hi = lane_scales(mw & -65536, mw, mw, 0, SK, S, TS, Z, RULE, C)
        _column_scales(scale_c, o, N, n_lo, bm, nbm, ntc, s_lo, FULL, TRANS, BLK, CEV)
        _column_scales(scale_c, o, N, n_lo + 1, bm, nbm, ntc, s_hi, FULL, TRANS, BLK, CEV)
        mul = ((bits_of(r_lo) >> 16) & 0xFFFF) | (bits_of(r_hi) & -65536)
        keep = (gl.where(b_lo, 0, 0xFF) | gl.where(b_hi, 0, 0xFF00)).to(gl.int16)
        mul = gl.convert_layout(mul, LJ)
        keep = gl.convert_layout(keep, LJ)
        codes = pair_codes(w, mul[None, :], keep[None, :], E)
        if TRANS:
            lo = (codes & 0xFF).to(gl.uint8)
            hi = ((codes >> 8) & 0xFF).to(gl.uint8)
            codes = gl.reshape(gl.join(lo, hi), (T, BN))
        else:
            gl.store(out_c.to(gl.pointer_type(gl.int16)) + offs, codes, mask=mask)
    else:
        x = as_f32(raw, IN)
        mx, _, _ = _block_max(x, mask, 0, False)
        mx = gl.convert_layout(mx, LC)
        scale, _, _, recip, _, _, bad = lane_scales(mx, mx, mx, 0, SK, S, TS, Z, RULE, C)
        _column_scales(scale_c, o, N, bn * BN + jc, bm, nbm, ntc, scale, FULL, TRANS, BLK, CEV)
        recip = gl.convert_layout(recip, LJ)
        keep = gl.convert_layout(gl.where(bad, 0, 255).to(gl.uint8), LJ)[None, :]
        codes = hw_bytes_kept(x * recip[None, :], keep, E)
        if not TRANS:
            gl.store(out_c + offs, codes, mask=mask)
    if TRANS:
        store_transposed(out_c, codes, o, M, N, bm, bn, T, BN, FULL, LT)


@gluon.jit
def _block_at(M, N, T: gl.constexpr, BN: gl.constexpr, I64: gl.constexpr):
    """This program's block ``[T, BN]``: ``(o, bm, bn, nbm, ntr, ntc, row0)``.

    ``_kernels_dual.block_at``'s, with the row and column tiles of a matrix ``ntr`` and
    ``ntc`` and the block's first row ``row0`` in the flat ``[outer * M, N]`` view.
    """
    _, o, bm, bn, nbm = block_at(M, N, T, BN, I64)
    return o, bm, bn, nbm, gl.cdiv(N, T), gl.cdiv(M, T), o * M + bm * T


@gluon.jit
def store_transposed(
    out_c,
    codes,
    o,
    M,
    N,
    bm,
    bn,
    T: gl.constexpr,
    BN: gl.constexpr,
    FULL: gl.constexpr,
    LT: gl.constexpr,
):
    """The block's ``[T, BN]`` column-cast codes into xᵀ ``[outer, N, M]`` from layout ``LT``.

    xᵀ's rows are x's columns: each thread stores 16 bytes of one of them.
    """
    codes = gl.convert_layout(codes, LT)
    it = gl.arange(0, T, layout=gl.SliceLayout(1, LT))
    nt = bn * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, LT))
    offc = (o * N + nt)[None, :] * M + (bm * T + it)[:, None]
    if FULL:
        gl.store(out_c + offc, codes)
    else:
        gl.store(out_c + offc, codes, mask=(bm * T + it < M)[:, None] & (nt < N)[None, :])


@gluon.jit
def _as_columns(
    t, NQ: gl.constexpr, T: gl.constexpr, NR: gl.constexpr, RV: gl.constexpr, L2: gl.constexpr
):
    """The row phase's ``[NQ, BN, RV]`` block as the column phase's ``[T, NC]`` in ``L2``.

    Tile ``q`` of the row phase is row ``q // NR``, row tile ``q % NR`` of the block, and its
    piece ``k`` holds the tile's elements (words) ``k * RV ..``: so column
    ``(q % NR) * NQ * RV + k * RV + v`` of row ``q // NR``.
    """
    t = gl.reshape(t, [NQ, T, NR, RV])
    t = gl.permute(t, [1, 2, 0, 3])
    t = gl.reshape(t, [T, NR * NQ * RV])
    return gl.convert_layout(t, L2)


@gluon.jit
def _column_scales(
    scale_c,
    o,
    N,
    n,
    bm,
    nbm,
    ntc,
    scale,
    FULL: gl.constexpr,
    TRANS: gl.constexpr,
    BLK: gl.constexpr,
    EVICT: gl.constexpr,
):
    """The column scales of lanes ``n`` (columns of x) of block row ``bm``."""
    ok = n < N
    if not FULL:
        ok = ok & (bm < nbm)
    _store_scales(scale_c, column_slots(o, N, n, bm, ntc, TRANS, BLK), ok, scale, EVICT)


@gluon.jit
def _store_scales(scale_ptr, slots, ok, scale, EVICT: gl.constexpr):
    """One-byte scale codes (E8M0 and the other exponent scales) at ``slots``.

    ``EVICT``: the stores' L2 eviction policy (``_launch_dual.GLUON_SCALE_EVICT``).
    """
    gl.store(scale_ptr + slots, scale.to(gl.uint8), mask=ok, eviction_policy=EVICT)
