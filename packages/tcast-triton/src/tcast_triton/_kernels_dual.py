"""The dual cast kernel (``@triton.jit``): one read of ``x``, its row and its column casts.

``tcast.cast_dual`` casts ``x`` (the canonical view ``[outer, M, N]``) with one datatype's
tiles of ``T`` along ``N`` (rows) and along ``M`` (columns). A program owns a ``[BM, BN]``
block (both multiples of ``T``, so every tile of either cast lies in one block), loaded once
as the 4-D block ``[BM / T, T, BN / T, T]`` (column tile, row in it, row tile, column in it)
straight from its offsets, so that no reshape moves data between threads: the row tiles are
reduced along axis 3, the column tiles along axis 1. Its random words are drawn once (both
casts use the word of the element's flat index in ``x``: SEMANTICS.md §3.3).

The column codes go where ``x``'s elements are, or (``TRANS``: the second result stored for
``xᵀ``) to ``xᵀ``'s offsets; the compiler's coalescing then stores them through shared memory
along ``xᵀ``'s rows. Scales go to the plain scale arrays, or (``BLK``) to their blocked
layout (SEMANTICS.md §8.1, :func:`_kernels.blocked_slot`). The arithmetic is ``_kernels``'
(``_block_max``, ``lane_scales``, ``_encode_block``): the bits of two ``_cast_tiles`` launches.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._kernels import (
    _block_max,
    _block_start,
    _encode_block,
    _store_lane_codes,
    blocked_slot,
    load_f32,
    random_words,
)
from ._scales import SK_TWO, SK_UEXP, SK_UFLOAT, lane_scales


@triton.jit
def _store_scales(
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


@triton.jit(do_not_specialize=["outer", "seed"])
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
    T: tl.constexpr,
    BM: tl.constexpr,
    BN: tl.constexpr,
    TRANS: tl.constexpr,
    BLK: tl.constexpr,
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
):
    """Both casts of one ``[BM, BN]`` block of ``x`` (see the module docstring).

    ``FULL``: ``M % BM == 0`` and ``N % BN == 0`` (no mask).
    """
    U: tl.constexpr = SK == SK_UFLOAT or SK == SK_UEXP
    NC: tl.constexpr = BM // T
    NR: tl.constexpr = BN // T
    p = _block_start(I64)
    nbn = tl.cdiv(N, BN)
    nbm = tl.cdiv(M, BM)
    bn = p % nbn
    rest = p // nbn
    bm = rest % nbm
    o = rest // nbm
    # the block's axes: column tile c, row i in it, row tile j, column k in it
    c = tl.arange(0, NC)[:, None, None, None]
    i = tl.arange(0, T)[None, :, None, None]
    j = tl.arange(0, NR)[None, None, :, None]
    k = tl.arange(0, T)[None, None, None, :]
    m = bm * BM + c * T + i  # [NC, T, 1, 1]
    n = bn * BN + j * T + k  # [1, 1, NR, T]
    offs = (o * M + m) * N + n
    if FULL:
        mask = tl.full((NC, T, NR, T), 1, tl.int1)
    else:
        mask = (m < M) & (n < N)
    x = load_f32(x_ptr, offs, mask, IN)
    r = random_words(seed, rb_ptr, offs, mask, RS)
    tmax = 0
    if SK == SK_TWO:
        tmax = tl.load(stats_ptr)
    # rows of x: tiles along N, reduced along axis 3; lanes [NC, T, NR]
    mx, hi, lo = _block_max(x, mask, 3, U)
    scale, zcode, tcode, recip, zval, dec, bad = lane_scales(
        mx, hi, lo, tmax, SK, S, TS, Z, RULE, C
    )
    if VIRTUAL == 0:
        row = tl.reshape(o * M + m, (NC, T, 1))
        tile = tl.reshape(bn * NR + j, (1, 1, NR))
        ntr = tl.cdiv(N, T)
        ok = (row < (o + 1) * M) & (tile < ntr)
        if BLK:
            slots = blocked_slot(row, tile, ntr)
        else:
            slots = row.to(tl.int64) * ntr + tile
        _store_scales(
            scale_r, zero_r, tcode_ptr, slots, ok, scale, zcode, tcode, p, True, SK, U, SCB,
            ZCB, TCB,
        )  # fmt: skip
    _encode_block(
        x, r, offs, mask, recip, zval, dec, bad, out_r, 3, E, MODE, EK, FIXED, INV_FIXED, IN,
        VIRTUAL, CB, offs, mask, False, T,
    )  # fmt: skip
    # columns of x: tiles along M, reduced along axis 1; lanes [NC, NR, T]
    mx, hi, lo = _block_max(x, mask, 1, U)
    scale, zcode, tcode, recip, zval, dec, bad = lane_scales(
        mx, hi, lo, tmax, SK, S, TS, Z, RULE, C
    )
    if VIRTUAL == 0:
        ctile = tl.reshape(bm * NC + c, (NC, 1, 1))
        col = tl.reshape(o * N + n, (1, NR, T))
        ntc = tl.cdiv(M, T)
        ok = (ctile < ntc) & (col < (o + 1) * N)
        if BLK:  # the matrix of the column scales: rows o * N + n, columns ctile
            slots = blocked_slot(col, ctile, ntc)
        elif TRANS:  # the scale array of xᵀ: [outer, N, ntc]
            slots = col.to(tl.int64) * ntc + ctile
        else:  # the plain scale array [outer, ntc, N]
            slots = (o * ntc + ctile).to(tl.int64) * N + (col - o * N)
        _store_scales(
            scale_c, zero_c, tcode_ptr, slots, ok, scale, zcode, tcode, p, False, SK, U, SCB,
            ZCB, TCB,
        )  # fmt: skip
    if TRANS:
        offc = (o * N + n) * M + m  # xᵀ's offsets: contiguous along axis 1
    else:
        offc = offs
    _encode_block(
        x, r, offc, mask, recip, zval, dec, bad, out_c, 1, E, MODE, EK, FIXED, INV_FIXED, IN,
        VIRTUAL, CB, offs, mask, False, T,
    )  # fmt: skip
