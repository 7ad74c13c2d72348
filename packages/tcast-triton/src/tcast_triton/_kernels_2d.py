"""The N-d tile kernel (``@triton.jit``): two tile segments and N-of-M sparsity.

Launchers live in ``_launch_2d``. The input is read as the canonical view
``[A, L1, B, L2, NC]`` with tiles of ``T1 x T2`` along ``L1`` and ``L2`` (SEMANTICS.md §5.1);
a 1-D tile is the case ``T1 = L1 = 1`` (tiles along the last dimension) or
``T2 = L2 = 1`` (tiles along another dimension). A program loads 3-D blocks ``[D0, D1, D2]``:

* row geometry (``NC == 1``, ``ROW``): ``D0`` positions along ``L1``, ``D1`` neighbouring
  tiles along ``L2`` (the lanes), ``D2`` positions along ``L2`` inside each tile: every
  block row is ``D1 * D2`` contiguous elements; reduced over axes 0 and 2;
* column geometry (``NC > 1``): ``D0`` positions along ``L1``, ``D1`` along ``L2``, ``D2``
  neighbouring columns of ``NC`` (the lanes, contiguous); reduced over axes 0 and 1.

A tile larger than one block (or a channel, whose length is a run-time size) is walked in
chunks twice (``LOOP``): once for the maxima, once to encode. Sparsity (``SP``: 1 along
``L1``, 2 along ``L2``) ranks each element within its group of ``SM`` by loading the group's
other elements again (cache hits) and counting those that outrank it; a chunk always holds
whole groups (its length along the sparse axis is a multiple of ``SM``, tiles start at
multiples of ``SM``). Offsets are int32, or int64 past 2**31 elements (``I64``).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._codec import (
    bits_of,
    decode,
    encode_finite,
    fast_mode,
    fast_value,
)
from ._kernels import (
    EK_FIXED,
    EK_ZERO,
    load_f32,
    random_words,
    rbits_width,
    store_block_value,
    store_codes,
)
from ._rn import mul_rn
from ._scales import SK_TWO, SK_UEXP, SK_UFLOAT, block_scales

# a NaN's magnitude bits for ranking: every payload alike, above +-Inf (SEMANTICS.md §6)
RANK_NAN = tl.constexpr(0x7F800001)


@triton.jit
def _lanes3(v, ROW: tl.constexpr):
    """Per-lane values broadcastable against a block (lanes on axis 1 or axis 2)."""
    if ROW:
        out = v[None, :, None]
    else:
        out = v[None, None, :]
    return out


@triton.jit
def _reduce3(v, ROW: tl.constexpr):
    """Maxima of a block over its non-lane axes."""
    if ROW:
        out = tl.max(tl.max(v, axis=2), axis=0)
    else:
        out = tl.max(tl.max(v, axis=1), axis=0)
    return out


@triton.jit
def _rank_mag(x):
    """Magnitude bits for ranking: NaN (any payload) above +-Inf above every finite value."""
    return tl.minimum(bits_of(x) & 0x7FFFFFFF, RANK_NAN)


@triton.jit
def _chunk(
    x_ptr,
    a,
    j1,
    b,
    j2,
    lane,
    lane_ok,
    c1,
    c2,
    L1,
    B,
    L2,
    NC,
    T1,
    T2,
    ROW: tl.constexpr,
    D0: tl.constexpr,
    D1: tl.constexpr,
    D2: tl.constexpr,
    TK1: tl.constexpr,
    TK2: tl.constexpr,
    EVEN1: tl.constexpr,
    EVEN2: tl.constexpr,
    SP: tl.constexpr,
    SM: tl.constexpr,
    SN: tl.constexpr,
    IN: tl.constexpr,
    I64: tl.constexpr,
):
    """Offsets, mask, values and keep-flags of one chunk of a program's tiles.

    ``c1``, ``c2``: the chunk's first position inside the tiles along ``L1`` and ``L2``.
    ``TK1``/``TK2``: tile lengths known at compile time (0: a channel, run-time ``T1``/``T2``).
    ``EVEN1``/``EVEN2``: every position of the chunk along that axis is real (whole tiles of
    compile-time length that fill the dimension), so no mask term is built for it.
    """
    if TK1 > 0:
        t1n = TK1
    else:
        t1n = T1
    if TK2 > 0:
        t2n = TK2
    else:
        t2n = T2
    r1 = c1 + tl.arange(0, D0)
    pos1 = j1 * t1n + r1
    if EVEN1:
        ok1 = tl.full((D0,), True, tl.int1)  # a constant mask: the compiler drops it
    else:
        ok1 = (r1 < t1n) & (pos1 < L1)
    base1 = ((a * L1 + pos1) * B + b) * L2  # [D0]
    if ROW:  # axis 1: lanes (tiles along L2), axis 2: positions inside the tiles
        r2 = c2 + tl.arange(0, D2)
        pos2 = lane[:, None] * t2n + r2[None, :]  # [D1, D2]
        if EVEN2:
            ok2 = tl.broadcast_to(lane_ok[:, None], (D1, D2))
        else:
            ok2 = lane_ok[:, None] & (r2[None, :] < t2n) & (pos2 < L2)
        offs = base1[:, None, None] + pos2[None, :, :]
        mask = ok1[:, None, None] & ok2[None, :, :]
    else:  # axis 1: positions along L2, axis 2: lanes (columns of C)
        r2 = c2 + tl.arange(0, D1)
        pos2 = j2 * t2n + r2  # [D1]
        if EVEN2:
            ok2 = tl.full((D1,), True, tl.int1)
        else:
            ok2 = (r2 < t2n) & (pos2 < L2)
        offs = ((base1[:, None] + pos2[None, :]) * NC)[:, :, None] + lane[None, None, :]
        mask = ok1[:, None, None] & ok2[None, :, None] & lane_ok[None, None, :]
    x = load_f32(x_ptr, offs, mask, IN)
    if SP == 0:
        keep = mask
    else:
        mine = _rank_mag(x)
        rank = tl.zeros(offs.shape, tl.int32)
        if SP == 1:
            g = r1 % SM  # position inside the group (tiles start at multiples of SM)
            stride = B * L2 * NC
            if ROW:
                rest = ok2[None, :, :]
            else:
                rest = ok2[None, :, None] & lane_ok[None, None, :]
        else:
            if ROW:
                g = r2 % SM
                rest = ok1[:, None, None] & lane_ok[None, :, None]
            else:
                g = r2 % SM
                rest = ok1[:, None, None] & lane_ok[None, None, :]
        for j in range(SM):
            dj = j - g  # from this element to element j of its group
            if I64:
                dj = dj.to(tl.int64)  # times a stride: past 2**31 on large tensors
            if SP == 1:
                other = (pos1 + dj) < L1
                om = other[:, None, None] & rest
                od = (dj * stride)[:, None, None]
                gj = g[:, None, None]
            else:
                if ROW:
                    other = (pos2 + dj[None, :]) < L2  # [D1, D2]
                    om = other[None, :, :] & rest
                    od = dj[None, None, :]
                    gj = g[None, None, :]
                else:
                    other = (pos2 + dj) < L2  # [D1]
                    om = other[None, :, None] & rest
                    od = (dj * NC)[None, :, None]
                    gj = g[None, :, None]
            theirs = _rank_mag(load_f32(x_ptr, offs + od, om, IN))
            wins = (theirs > mine) | ((theirs == mine) & (j < gj))
            rank += (om & wins).to(tl.int32)
        keep = mask & (rank < SN)
    return offs, mask, x, keep


@triton.jit
def _block_max3(x, keep, ROW: tl.constexpr, U: tl.constexpr):
    """Per-lane maxima of magnitude bits over the kept elements (uint: also hi and lo)."""
    bx = bits_of(x)
    mag = tl.where(keep, bx & 0x7FFFFFFF, 0)
    mx = _reduce3(mag, ROW)
    if U:
        hi = _reduce3(tl.where(keep & (bx > 0), bx, 0), ROW)
        lo = _reduce3(tl.where(keep & (bx < 0), mag, 0), ROW)
    else:
        hi = mx
        lo = mx
    return mx, hi, lo


@triton.jit
def _encode_chunk(
    x,
    r,
    offs,
    mask,
    keep,
    recip,
    zval,
    dec,
    bad,
    out_ptr,
    keep_ptr,
    ROW: tl.constexpr,
    SP: tl.constexpr,
    E: tl.constexpr,
    MODE: tl.constexpr,
    EK: tl.constexpr,
    FIXED: tl.constexpr,
    INV_FIXED: tl.constexpr,
    IN: tl.constexpr,
    VIRTUAL: tl.constexpr,
    CB: tl.constexpr,
):
    """Encode a chunk with its lanes' multipliers; store codes (and keep-flags) or values.

    Pruned elements get code 0 and decode to +0; a non-finite block is NaN throughout
    (SEMANTICS.md §5.2, §6).
    """
    rc = _lanes3(recip, ROW)
    # each product rounds on its own (as _kernels._encode_block)
    if EK == EK_FIXED:
        xs = mul_rn(x, rc) * FIXED
    elif EK == EK_ZERO:
        xs = mul_rn(x, rc) + _lanes3(zval, ROW)
    else:
        xs = x * rc
    badb = _lanes3(bad, ROW) & mask
    if VIRTUAL:
        if fast_mode(E, MODE):
            q = fast_value(xs, r, E, MODE)
        else:
            q = decode(tl.where(badb, 0, encode_finite(xs, r, E, MODE)), E)
        dc = _lanes3(dec, ROW)
        if EK == EK_FIXED:
            v = (q * INV_FIXED) * dc
        elif EK == EK_ZERO:
            v = (q - _lanes3(zval, ROW)) * dc
        else:
            v = q * dc
        if SP != 0:
            v = tl.where(keep, v, 0.0)
        store_block_value(out_ptr, offs, mask, v, badb, IN)
    else:
        zap = badb
        if SP != 0:
            zap = zap | (keep.to(tl.int32) == 0)
            tl.store(keep_ptr + offs, keep.to(tl.uint8), mask=mask)
        codes = tl.where(zap, 0, encode_finite(xs, r, E, MODE))
        store_codes(out_ptr, offs, mask, codes, CB)


@triton.jit
def _scale_index(a, j1, b, j2, lane, n1, B, n2, NC, ROW: tl.constexpr):
    """The lanes' flat indices in the scale array ``[A, n1, B, n2, NC]``.

    C order, the tiled dimensions replaced by their tile counts.
    """
    if ROW:
        sidx = ((a * n1 + j1) * B + b) * n2 + lane
    else:
        sidx = (((a * n1 + j1) * B + b) * n2 + j2) * NC + lane
    return sidx


# tile and program counts only decompose program ids and bound masks: Triton's divisibility
# and ==1 specializations of them would add compiled variants per shape and speed nothing
@triton.jit(do_not_specialize=["A", "n1", "nq", "seed", "rstream"])
def _cast_nd(
    x_ptr,
    rb_ptr,
    out_ptr,
    keep_ptr,
    scale_ptr,
    zero_ptr,
    tcode_ptr,
    stats_ptr,
    A,
    L1,
    B,
    L2,
    NC,
    T1,
    T2,
    n1,
    n2,
    nq,
    seed,
    rstream,
    ROW: tl.constexpr,
    D0: tl.constexpr,
    D1: tl.constexpr,
    D2: tl.constexpr,
    TK1: tl.constexpr,
    TK2: tl.constexpr,
    EVEN1: tl.constexpr,
    EVEN2: tl.constexpr,
    EVENQ: tl.constexpr,
    LOOP: tl.constexpr,
    SP: tl.constexpr,
    SM: tl.constexpr,
    SN: tl.constexpr,
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
    GP: tl.constexpr = 0,
    GRULE: tl.constexpr = (0, 0, 0, 0, 0),
    gscale_ptr=None,
    gzero_ptr=None,
    gtens_ptr=None,
):
    """One scaled cast over 2-D (or sparse) tiles of ``[A, L1, B, L2, NC]`` (module docstring).

    ``n1``, ``n2``: tiles along ``L1`` and ``L2``; ``nq``: lane groups (row geometry: groups
    of ``D1`` tiles along ``L2``; column geometry: groups of ``D2`` columns of ``NC``).
    ``EVENQ``: every lane group is full. With ``EVEN1``, ``EVEN2`` and ``EVENQ`` (32 x 32
    tiles filling the last two dimensions) no load or store of the kernel is masked.
    ``GP``, ``GRULE`` and the given parts' pointers: as ``_kernels._cast_tiles`` (given
    scale parts, SEMANTICS.md §5.12).
    """
    U: tl.constexpr = SK == SK_UFLOAT or SK == SK_UEXP
    if I64:
        p = tl.program_id(0).to(tl.int64)
    else:
        p = tl.program_id(0)
    q = p % nq
    p = p // nq
    if ROW:
        j2 = 0
        b = p % B
        p = p // B
        lane = q * D1 + tl.arange(0, D1)
        lane_ok = lane < n2
    else:
        j2 = p % n2
        p = p // n2
        b = p % B
        p = p // B
        lane = q * D2 + tl.arange(0, D2)
        lane_ok = lane < NC
    if EVENQ:  # every lane group is full: a constant lane mask, folded away
        lane_ok = tl.full(lane.shape, True, tl.int1)
    j1 = p % n1
    a = p // n1
    if LOOP:
        mx = tl.zeros(lane.shape, tl.int32)
        hi = mx
        lo = mx
        # while loops: the interpreter cannot take a run-time bound in range() (numpy 2.4)
        c1 = 0
        while c1 < T1:
            c2 = 0
            while c2 < T2:
                offs, mask, x, keep = _chunk(
                    x_ptr, a, j1, b, j2, lane, lane_ok, c1, c2, L1, B, L2, NC, T1, T2,
                    ROW, D0, D1, D2, TK1, TK2, EVEN1, EVEN2, SP, SM, SN, IN, I64,
                )  # fmt: skip
                m1, h1, l1 = _block_max3(x, keep, ROW, U)
                mx = tl.maximum(mx, m1)
                hi = tl.maximum(hi, h1)
                lo = tl.maximum(lo, l1)
                if ROW:
                    c2 += D2
                else:
                    c2 += D1
            c1 += D0
    else:
        offs, mask, x, keep = _chunk(
            x_ptr, a, j1, b, j2, lane, lane_ok, 0, 0, L1, B, L2, NC, T1, T2,
            ROW, D0, D1, D2, TK1, TK2, EVEN1, EVEN2, SP, SM, SN, IN, I64,
        )  # fmt: skip
        mx, hi, lo = _block_max3(x, keep, ROW, U)
    glanes = lane
    if GP != 0:  # the given parts are read where the scales are stored
        glanes = _scale_index(a, j1, b, j2, lane, n1, B, n2, NC, ROW)
    scale, zcode, tcode, recip, zval, dec, bad = block_scales(
        mx, hi, lo, stats_ptr, gscale_ptr, gzero_ptr, gtens_ptr, glanes, lane_ok, SK, S, TS, Z,
        RULE, C, GP, GRULE,
    )  # fmt: skip
    if VIRTUAL == 0:
        sidx = _scale_index(a, j1, b, j2, lane, n1, B, n2, NC, ROW)
        store_codes(scale_ptr, sidx, lane_ok, scale, SCB)
        if U:
            store_codes(zero_ptr, sidx, lane_ok, zcode, ZCB)
        if SK == SK_TWO:
            if tl.program_id(0) == 0:
                store_codes(tcode_ptr, lane, lane == 0, tcode, TCB)
    if LOOP:
        c1 = 0
        while c1 < T1:
            c2 = 0
            while c2 < T2:
                offs, mask, x, keep = _chunk(
                    x_ptr, a, j1, b, j2, lane, lane_ok, c1, c2, L1, B, L2, NC, T1, T2,
                    ROW, D0, D1, D2, TK1, TK2, EVEN1, EVEN2, SP, SM, SN, IN, I64,
                )  # fmt: skip
                r = random_words(seed, rstream, rb_ptr, offs, mask, RS, rbits_width(E))
                _encode_chunk(
                    x, r, offs, mask, keep, recip, zval, dec, bad, out_ptr, keep_ptr,
                    ROW, SP, E, MODE, EK, FIXED, INV_FIXED, IN, VIRTUAL, CB,
                )  # fmt: skip
                if ROW:
                    c2 += D2
                else:
                    c2 += D1
            c1 += D0
    else:
        r = random_words(seed, rstream, rb_ptr, offs, mask, RS, rbits_width(E))
        _encode_chunk(
            x, r, offs, mask, keep, recip, zval, dec, bad, out_ptr, keep_ptr,
            ROW, SP, E, MODE, EK, FIXED, INV_FIXED, IN, VIRTUAL, CB,
        )  # fmt: skip
