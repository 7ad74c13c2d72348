"""The dual cast kernel (``@triton.jit``): one read of ``x`` from memory, both casts.

``tcast.cast_dual`` casts ``x`` (the canonical view ``[outer, M, N]``) with one datatype's
tiles of ``T`` along ``N`` (rows) and along ``M`` (columns). A program owns the ``[T, BN]``
block of ``T`` rows (one column tile per column) and casts it twice, each time in the
register layout its reduction wants, the second reading the block again from L2 (the
program read it from memory a moment before):

* rows, like ``_kernels._cast_row_pieces``: the ``BN`` row tiles as ``[NP, BN, V]``, each
  tile's ``NP`` pieces of 16 bytes in one thread, so a tile's maximum and scale are computed
  once, in that thread;
* columns, like ``_cast_tiles``' column geometry: the block as ``[T, BN]``, reduced along
  axis 0; its codes go where ``x``'s elements are, or (``TRANS``: the second result stored
  for ``xᵀ``) to ``xᵀ``'s offsets, which the compiler's coalescing stores through shared
  memory along ``xᵀ``'s rows.

Both casts draw the random word of the element's flat index in ``x`` (SEMANTICS.md §3.3).
Scales go to the plain scale arrays, or (``BLK``) to their blocked layout (SEMANTICS.md
§8.1, :func:`_kernels.blocked_slot`). The arithmetic is ``_kernels``' (``_block_max``,
``lane_scales``, ``_encode_block``): the bits of two single casts. (Loading the block once
as ``[BM / T, T, BN / T, T]`` and reducing it both ways in registers is slower: 0.80 ms for
MXFP8 16384^2 on an H200, against 0.43 ms for two single casts; bench/bench_dual.py.)

On sm_90 GPUs the MX casts of 32-element tiles take the Gluon kernels (each block's scale
computed once): ``_kernels_dual_gl_hw`` for codes by the hardware FP8 conversion (both casts
in one layout), ``_kernels_dual_gl`` for the bfloat16 pair encoder; this kernel serves the
rest and the interpreter.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._codec import bits_of, filled, pair_codes
from ._kernels import (
    _block_max,
    _block_start,
    _encode_block,
    _store_lane_codes,
    blocked_slot,
    load_f32,
    pair_columns_max,
    pair_pieces_max,
    pair_words,
    random_runs,
    random_words,
    rbits_width,
    store_pair_pieces,
)
from ._scales import SK_TWO, SK_UEXP, SK_UFLOAT, lane_scales


@triton.jit
def store_scales(
    scale_ptr,
    zero_ptr,
    tcode_ptr,
    slots,
    lane_ok,
    scale,
    zcode,
    tcode,
    pid,
    STORE_T: tl.constexpr,
    SK: tl.constexpr,
    U: tl.constexpr,
    SCB: tl.constexpr,
    ZCB: tl.constexpr,
    TCB: tl.constexpr,
):
    """The lanes' scale and zero codes at ``slots``; ``STORE_T``: the tensor-scale code too.

    Slot 0 (the first lane of the first row, plain or blocked) is where program 0 stores the
    tensor-scale code.
    """
    lanes = tl.where(lane_ok, slots, 1)
    if STORE_T:
        _store_lane_codes(
            scale_ptr, zero_ptr, tcode_ptr, lanes, slots, lane_ok, scale, zcode, tcode, pid,
            SK, U, SCB, ZCB, TCB,
        )  # fmt: skip
    else:
        _store_lane_codes(
            scale_ptr, zero_ptr, tcode_ptr, lanes, slots, lane_ok, scale, zcode, tcode, pid,
            0, U, SCB, ZCB, TCB,
        )  # fmt: skip


@triton.jit
def block_at(M, N, T: tl.constexpr, BN: tl.constexpr, I64: tl.constexpr):
    """This program's ``[T, BN]`` block of x: ``(p, o, bm, bn, nbm)``.

    Program ``p`` (int64 past 2**31 elements), matrix ``o``, block row ``bm`` of ``nbm``,
    block column ``bn``: programs go along ``N`` first.
    """
    p = _block_start(I64)
    nbn = tl.cdiv(N, BN)
    nbm = tl.cdiv(M, T)
    per_o = nbm * nbn
    o = p // per_o
    rest = p % per_o
    bn = rest % nbn
    bm = rest // nbn
    return p, o, bm, bn, nbm


@triton.jit
def row_slots(row, tile, ntr, BLK: tl.constexpr):
    """Where the scale of row tile ``tile`` of flat row ``row`` goes (plain or ``BLK``)."""
    if BLK:
        slots = blocked_slot(row, tile, ntr)
    else:
        slots = row.to(tl.int64) * ntr + tile
    return slots


@triton.jit
def column_slots(o, N, n, bm, ntc, TRANS: tl.constexpr, BLK: tl.constexpr):
    """Where the scale of column ``n`` of matrix ``o``'s column tile ``bm`` goes."""
    if BLK:  # the matrix of the column scales: rows o * N + n, columns bm
        slots = blocked_slot(o * N + n, bm + filled(n, 0), ntc)
    elif TRANS:  # the scale array of xᵀ: [outer, N, ntc]
        slots = (o * N + n).to(tl.int64) * ntc + bm
    else:  # the plain scale array [outer, ntc, N]
        slots = (o * ntc + bm).to(tl.int64) * N + n
    return slots


@triton.jit(do_not_specialize=["outer", "seed", "stream_r", "stream_c"])
def _cast_dual(
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
    T: tl.constexpr,
    BN: tl.constexpr,
    NP: tl.constexpr,
    TRANS: tl.constexpr,
    BLK: tl.constexpr,
    PAIRS: tl.constexpr,
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
    RV: tl.constexpr = False,
):
    """Both casts of one ``[T, BN]`` block of ``x`` (see the module docstring).

    ``RV``: seeded random bits by runs (``N``, ``T`` and ``BN`` multiples of ``128 / K``):
    one Philox call per ``128 / K`` elements, the rows' tiles and the columns' block rows
    (else one call per element).

    ``NP``: 16-byte pieces per row tile; ``FULL``: ``M % T == 0`` and ``N % BN == 0``;
    ``PAIRS``: bfloat16 ``x`` read as words of two elements, encoded by
    ``_codec.pair_codes`` (see ``_launch_dual._pairs``). Programs go along ``N`` first.
    """
    U: tl.constexpr = SK == SK_UFLOAT or SK == SK_UEXP
    V: tl.constexpr = T // NP
    NR: tl.constexpr = BN // T
    p, o, bm, bn, nbm = block_at(M, N, T, BN, I64)
    tmax = 0
    if SK == SK_TWO:
        tmax = tl.load(stats_ptr)
    ntr = tl.cdiv(N, T)
    ntc = tl.cdiv(M, T)
    q = tl.arange(0, BN)
    i_r = q // NR
    tile = bn * NR + q % NR
    e = (tl.arange(0, NP) * V)[:, None, None] + tl.arange(0, V)[None, None, :]
    i = tl.arange(0, T)
    n = bn * BN + tl.arange(0, BN)
    if FULL:
        col_ok = tl.full((BN,), 1, tl.int1)
    else:
        col_ok = n < N
    if PAIRS:
        ew = (tl.arange(0, NP) * (V // 2))[:, None, None] + tl.arange(0, V // 2)[None, None, :]
        j = tl.arange(0, BN // 2)
    row0 = o * M + bm * T  # the block's first row in the flat [outer * M, N] view
    # ---- rows: BN tiles, tile q = (row q // NR, row tile q % NR), pieces along axis 0
    starts = (row0 + i_r) * N + tile * T
    offs = starts[None, :, None] + e
    if FULL:
        tile_ok = tl.full((BN,), 1, tl.int1)
        mask = tl.full((NP, BN, V), 1, tl.int1)
    else:
        tile_ok = (bm * T + i_r < M) & (tile < ntr)
        mask = tile_ok[None, :, None] & ((tile * T)[None, :, None] + e < N)
    if PAIRS:
        # words of two elements as [NP, BN, V / 2], a 16-byte piece a thread (the
        # pieces of a tile in NP neighbouring threads: coalesced; a tile per thread,
        # as [BN, NP, V / 2], read 1.2-1.5x slower on an H200)
        offw = (starts // 2)[None, :, None] + ew
        maskw = tl.broadcast_to(tile_ok[None, :, None], offw.shape)
        if not FULL:
            maskw = maskw & ((tile * T)[None, :, None] + 2 * ew < N)
        w, mag = pair_words(x_ptr, offw, maskw)
        mx, hi, lo = pair_pieces_max(mag)
    else:
        x = load_f32(x_ptr, offs, mask, IN)
        if RV:  # the tiles' Philox calls, [BN, T] as the pieces [NP, BN, V]
            r = random_runs(seed, stream_r, starts, T, rbits_width(E))
            r = tl.permute(tl.reshape(r, (BN, NP, V)), (1, 0, 2))
        else:
            r = random_words(seed, stream_r, rb_ptr, offs, mask, RS, rbits_width(E))
        m2, h2, l2 = _block_max(x, mask, 2, U)
        mx = tl.max(m2, axis=0)
        hi = tl.max(h2, axis=0)
        lo = tl.max(l2, axis=0)
    scale, zcode, tcode, recip, zval, dec, bad = lane_scales(
        mx, hi, lo, tmax, SK, S, TS, Z, RULE, C
    )
    if VIRTUAL == 0:
        store_scales(
            scale_r, zero_r, tcode_ptr, row_slots(row0 + i_r, tile, ntr, BLK), tile_ok, scale,
            zcode, tcode, p, True, SK, U, SCB, ZCB, TCB,
        )  # fmt: skip
    if PAIRS:
        store_pair_pieces(out_r, offw, maskw, w, recip, bad, E)
    else:
        _encode_block(
            x, r, offs, mask, recip[None, :], zval[None, :], dec[None, :], bad[None, :],
            out_r, 2, E, MODE, EK, FIXED, INV_FIXED, IN, VIRTUAL, CB, starts, tile_ok,
            0, T,
        )  # fmt: skip
    # ---- columns: the block as [T, BN] (again, from L2), reduced along axis 0
    offs = (row0 + i)[:, None] * N + n[None, :]
    if FULL:
        mask = tl.full((T, BN), 1, tl.int1)
    else:
        mask = (bm * T + i < M)[:, None] & col_ok[None, :]
    if PAIRS:
        # words of two adjacent columns: [T, BN / 2]; the halves' maxima are columns
        # 2j and 2j + 1 of the lanes
        offw = (row0 + i)[:, None] * (N // 2) + (bn * (BN // 2) + j)[None, :]
        if FULL:
            maskw = tl.full((T, BN // 2), 1, tl.int1)
        else:
            maskw = (bm * T + i < M)[:, None] & (bn * BN + 2 * j < N)[None, :]
        w, mag = pair_words(x_ptr, offw, maskw)
        mx, hi, lo = pair_columns_max(mag)
    else:
        x = load_f32(x_ptr, offs, mask, IN)
        if RV:  # each block row's BN elements: runs of the rows' flat indices
            r = random_runs(seed, stream_c, (row0 + i) * N + bn * BN, BN, rbits_width(E))
        else:
            r = random_words(seed, stream_c, rb_ptr, offs, mask, RS, rbits_width(E))
        mx, hi, lo = _block_max(x, mask, 0, U)
    scale, zcode, tcode, recip, zval, dec, bad = lane_scales(
        mx, hi, lo, tmax, SK, S, TS, Z, RULE, C
    )
    if VIRTUAL == 0:
        slots = column_slots(o, N, n, bm, ntc, TRANS, BLK)
        if FULL:
            sc_ok = col_ok
        else:
            sc_ok = col_ok & (bm < nbm)
        store_scales(
            scale_c, zero_c, tcode_ptr, slots, sc_ok, scale, zcode, tcode, p, False, SK,
            U, SCB, ZCB, TCB,
        )  # fmt: skip
    if TRANS:
        offc = (o * N + n)[None, :] * M + (bm * T + i)[:, None]  # contiguous along axis 0
    else:
        offc = offs
    if PAIRS:
        m_lo, m_hi = tl.split(tl.reshape(bits_of(recip) >> 16, (BN // 2, 2)))
        k_lo, k_hi = tl.split(tl.reshape(tl.where(bad, 0, 255), (BN // 2, 2)))
        codes = pair_codes(
            w, (m_lo | (m_hi << 16))[None, :], (k_lo | (k_hi << 8)).to(tl.int16)[None, :], E
        )
        if TRANS:  # each word's two codes go to two rows of xᵀ
            c_lo = (codes & 0xFF).to(tl.uint8)
            c_hi = ((codes >> 8) & 0xFF).to(tl.uint8)
            tl.store(out_c + offc, tl.reshape(tl.join(c_lo, c_hi), (T, BN)), mask=mask)
        else:
            tl.store(out_c.to(tl.pointer_type(tl.int16)) + offw, codes, mask=maskw)
    else:
        _encode_block(
            x, r, offc, mask, recip, zval, dec, bad, out_c, 0, E, MODE, EK, FIXED,
            INV_FIXED, IN, VIRTUAL, CB, n, col_ok, 0, T,
        )  # fmt: skip
