"""The dual cast kernel (``@triton.jit``): one read of ``x``, its row and its column casts.

``tcast.cast_dual`` casts ``x`` (the canonical view ``[outer, M, N]``) with one datatype's
tiles of ``T`` along ``N`` (rows) and along ``M`` (columns). A program owns a ``[BM, BN]``
block (both multiples of ``T``, so every tile of either cast lies in one block), loads it
once, draws its random words once (both casts use the word of the element's flat index in
``x``: SEMANTICS.md §3.3) and encodes it twice:

* rows: the block as ``[BM, BN / T, T]``, reduced along the last axis;
* columns, ``TRANS == 0``: the block as ``[BM / T, T, BN]``, reduced along the middle axis,
  codes stored where ``x``'s elements are;
* columns, ``TRANS == 1`` (the second result stored for ``xᵀ``): the block transposed in
  registers (``tl.trans``) to ``[BN, BM]`` and cast as rows of ``xᵀ``, so that the
  transposed codes are stored contiguously.

Scales go to the plain scale arrays, or (``BLK``) to their blocked layout (SEMANTICS.md
§8.1, :func:`_kernels.blocked_slot`). The arithmetic is ``_kernels``' (``_block_max``,
``lane_scales``, ``_encode_block``): the same bits as two ``_cast_tiles`` launches.
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
def _row_cast(
    x,
    r,
    offs,
    mask,
    rows,
    row_ok,
    tiles,
    ntiles,
    tmax,
    out_ptr,
    scale_ptr,
    zero_ptr,
    tcode_ptr,
    pid,
    STORE_T: tl.constexpr,
    T: tl.constexpr,
    BLK: tl.constexpr,
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
    VIRTUAL: tl.constexpr,
    CB: tl.constexpr,
    SCB: tl.constexpr,
    ZCB: tl.constexpr,
    TCB: tl.constexpr,
):
    """Cast a ``[R, K]`` block as row tiles of ``T``: scales of matrix ``rows`` x ``tiles``.

    ``rows`` (``[R]``) are the scale matrix rows of the block's rows, ``tiles`` (``[K / T]``)
    its tile indices along the row, of ``ntiles`` per row; ``STORE_T``: this cast stores the
    tensor-scale code.
    """
    R: tl.constexpr = x.shape[0]
    NT: tl.constexpr = x.shape[1] // T
    U: tl.constexpr = SK == SK_UFLOAT or SK == SK_UEXP
    x3 = tl.reshape(x, (R, NT, T))
    m3 = tl.reshape(mask, (R, NT, T))
    mx, hi, lo = _block_max(x3, m3, 2, U)
    scale, zcode, tcode, recip, zval, dec, bad = lane_scales(
        mx, hi, lo, tmax, SK, S, TS, Z, RULE, C
    )
    if VIRTUAL == 0:
        lane_ok = row_ok[:, None] & (tiles < ntiles)[None, :]
        if BLK:
            slots = blocked_slot(rows[:, None], tiles[None, :], ntiles)
        else:
            slots = rows.to(tl.int64)[:, None] * ntiles + tiles[None, :]
        # lanes == 0 only at the first tile of the first row: the tensor-scale code's slot
        lanes = tl.where(lane_ok, slots, 1)
        if STORE_T:
            _store_lane_codes(
                scale_ptr, zero_ptr, tcode_ptr, lanes, slots, lane_ok, scale, zcode, tcode,
                pid, SK, U, SCB, ZCB, TCB,
            )  # fmt: skip
        else:
            _store_lane_codes(
                scale_ptr, zero_ptr, tcode_ptr, lanes, slots, lane_ok, scale, zcode, tcode,
                pid, 0, U, SCB, ZCB, TCB,
            )  # fmt: skip
    _encode_block(
        x3,
        tl.reshape(r, (R, NT, T)),
        tl.reshape(offs, (R, NT, T)),
        m3,
        recip,
        zval,
        dec,
        bad,
        out_ptr,
        2,
        E,
        MODE,
        EK,
        FIXED,
        INV_FIXED,
        IN,
        VIRTUAL,
        CB,
        rows,
        row_ok,
        False,
        T,
    )


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
    p = _block_start(I64)
    nbn = tl.cdiv(N, BN)
    nbm = tl.cdiv(M, BM)
    bn = p % nbn
    rest = p // nbn
    bm = rest % nbm
    o = rest // nbm
    m = bm * BM + tl.arange(0, BM)
    n = bn * BN + tl.arange(0, BN)
    offs = (o * M + m)[:, None] * N + n[None, :]
    if FULL:
        m_ok = tl.full((BM,), 1, tl.int1)
        n_ok = tl.full((BN,), 1, tl.int1)
        mask = tl.full((BM, BN), 1, tl.int1)
    else:
        m_ok = m < M
        n_ok = n < N
        mask = m_ok[:, None] & n_ok[None, :]
    x = load_f32(x_ptr, offs, mask, IN)
    r = random_words(seed, rb_ptr, offs, mask, RS)
    tmax = 0
    if SK == SK_TWO:
        tmax = tl.load(stats_ptr)
    # rows of x: tiles along N
    _row_cast(
        x, r, offs, mask, o * M + m, m_ok, bn * (BN // T) + tl.arange(0, BN // T), tl.cdiv(N, T),
        tmax, out_r, scale_r, zero_r, tcode_ptr, p, True, T, BLK, SK, E, S, TS, Z, RULE, C,
        MODE, EK, FIXED, INV_FIXED, IN, VIRTUAL, CB, SCB, ZCB, TCB,
    )  # fmt: skip
    cols = bm * (BM // T) + tl.arange(0, BM // T)
    ncols = tl.cdiv(M, T)
    if TRANS:
        # rows of xᵀ: the block transposed in registers, stored at xᵀ's offsets
        offt = (o * N + n)[:, None] * M + m[None, :]
        if RS == 0:
            rt = offt.to(tl.int32)  # unused
        else:
            rt = tl.trans(r)
        _row_cast(
            tl.trans(x), rt, offt, n_ok[:, None] & m_ok[None, :], o * N + n, n_ok, cols,
            ncols, tmax, out_c, scale_c, zero_c, tcode_ptr, p, False, T, BLK, SK, E, S, TS, Z,
            RULE, C, MODE, EK, FIXED, INV_FIXED, IN, VIRTUAL, CB, SCB, ZCB, TCB,
        )  # fmt: skip
    else:
        NC: tl.constexpr = BM // T
        x3 = tl.reshape(x, (NC, T, BN))
        m3 = tl.reshape(mask, (NC, T, BN))
        mx, hi, lo = _block_max(x3, m3, 1, U)
        scale, zcode, tcode, recip, zval, dec, bad = lane_scales(
            mx, hi, lo, tmax, SK, S, TS, Z, RULE, C
        )
        if VIRTUAL == 0:
            lane_ok = (cols < ncols)[:, None] & n_ok[None, :]
            if BLK:  # the blocked matrix of the column scales: rows o * N + n, columns cols
                slots = blocked_slot((o * N + n)[None, :], cols[:, None], ncols)
            else:  # the plain scale array [outer, ncols, N]
                slots = (o * ncols + cols).to(tl.int64)[:, None] * N + n[None, :]
            _store_lane_codes(
                scale_c, zero_c, tcode_ptr, slots, slots, lane_ok, scale, zcode, tcode,
                p, 0, U, SCB, ZCB, TCB,
            )  # fmt: skip
        _encode_block(
            x3,
            tl.reshape(r, (NC, T, BN)),
            tl.reshape(offs, (NC, T, BN)),
            m3,
            recip,
            zval,
            dec,
            bad,
            out_c,
            1,
            E,
            MODE,
            EK,
            FIXED,
            INV_FIXED,
            IN,
            VIRTUAL,
            CB,
            cols,
            m_ok,
            False,
            T,
        )
