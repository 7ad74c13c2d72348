"""The Gluon dual kernel for codes by the hardware FP8 conversion: both casts in one layout.

A program holds one ``[T, BN]`` block of ``x`` as ``[T, NR, T]`` (rows, the block's row
tiles, a tile's elements) in one blocked layout: each thread ``RR`` rows of ``VC`` neighbouring
elements of a tile, ``TC = T / VC`` threads along a tile, ``TT`` along the tiles, ``TR``
along the rows, warps along the tiles. A row tile's maximum is a reduction along axis 2 and
a column tile's along axis 0, both in registers and warp shuffles: no element goes through
shared memory (``_kernels_dual_gl``, whose row and column phases need different layouts,
moves the whole block through it). Only the maxima go to one-block-a-thread layouts for the
lane math (``lane_scales``), and the multipliers come back. The codes of both casts are
stored from the load layout (``VC`` bytes a thread); ``xᵀ``'s through ``LT`` (16 bytes of a
column of x a thread).

The scale stores carry an L2 eviction policy (``REV`` rows, ``CEV`` columns): a program
writes 8 bytes of each of its 32 rows' scale rows, so every 32-byte sector of the row scales
is filled by 4 programs; written back before the last of them, a part-filled sector costs a
read-modify-write of DRAM. ``evict_last`` keeps those sectors in L2 until they are whole.
Measured on an H200 (16384^2 bfloat16 MXFP8, ``bench/bench_dual.py``), the dual cast takes
0.277 ms with the default policy, 0.271 with ``evict_last``, 0.267 with the row scales
written program-contiguous (whole sectors, a wrong layout, as an experiment) and 0.265 with
no row-scale stores at all; ``xᵀ``'s column scales (one byte per row of xᵀ, 256 rows apart
in a program) gain from it too (0.370 / 0.362 ms, default / ``evict_last``) while the plain
column scales (256 contiguous bytes a program) lose (0.271 / 0.276), so the launcher sets
``CEV`` for transposed casts only.

The bits are ``_cast_dual``'s: the same helpers (``_block_max``, ``lane_scales``,
``hw_bytes_kept``, the slot functions) on the same values. Serves what
``_launch_dual.gluon_takes`` admits without the pair encoder: T = 32, codes one a byte,
exponent scales one a byte, no zero point, nearest even. Gluon does not run under the
interpreter; ``tests/test_gpu_dual_gluon.py`` compares it with ``_cast_dual`` on the GPU.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from ._codec import F_HW, R_EVEN, hw_bytes_kept
from ._kernels import _block_max, as_f32
from ._kernels_dual import row_slots
from ._kernels_dual_gl import _block_at, _column_scales, _store_scales, store_transposed
from ._scales import SK_EXP, lane_scales


@gluon.jit(do_not_specialize=["outer", "seed", "stream_r", "stream_c"])
def _cast_dual_gl_hw(
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
    TT: gl.constexpr,
    VC: gl.constexpr,
    REV: gl.constexpr,
    CEV: gl.constexpr,
):
    """Both casts of one ``[T, BN]`` block of ``x``, as ``_cast_dual`` (same arguments).

    The subset it serves (``_launch_dual.gluon_takes`` without the pair encoder): codes one a
    byte (``VIRTUAL == 0``), exponent scales one a byte without zero points, nearest even;
    ``rb_ptr``, ``zero_r``, ``zero_c``, ``tcode_ptr``, ``stats_ptr``, ``seed`` and the plan's
    ``NP``, ``RS``, ``FIXED``, ``INV_FIXED``, ``ZCB``, ``TCB`` are those of that subset and
    unused. Layout tunables: ``W`` warps (the launch's ``num_warps``), ``TT`` threads of a
    warp along the block's row tiles, ``VC`` elements a thread holds of a row tile; ``REV`` /
    ``CEV``: the L2 eviction policies of the row and column scale stores.
    """
    # what _launch_dual.gluon_takes admits, checked where the kernel relies on it
    gl.static_assert(VIRTUAL == 0)
    gl.static_assert(CB == 1)
    gl.static_assert(SCB == 1)
    gl.static_assert(SK == SK_EXP)
    gl.static_assert(EK == 0)
    gl.static_assert(MODE == R_EVEN)
    gl.static_assert(not PAIRS)
    gl.static_assert(E[F_HW] != 0)
    NR: gl.constexpr = BN // T  # row tiles of a block row
    TC: gl.constexpr = T // VC  # threads along a tile
    gl.static_assert(32 % (TC * TT) == 0)
    TR: gl.constexpr = 32 // (TC * TT)  # threads along the rows
    gl.static_assert(T % TR == 0)
    RR: gl.constexpr = T // TR  # rows a thread holds
    gl.static_assert(NR == TT * W)  # no thread holds another's elements
    gl.static_assert(32 % NR == 0)  # LR: a warp's threads split over rows and row tiles
    gl.static_assert(VC % 4 == 0)  # hw_bytes_kept converts four elements a word
    # the block as [T, NR, T]: rows, row tiles, a tile's elements
    L3: gl.constexpr = gl.BlockedLayout([RR, 1, VC], [TR, TT, TC], [1, W, 1], [2, 1, 0])
    LI: gl.constexpr = gl.SliceLayout(1, gl.SliceLayout(2, L3))
    LN: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(2, L3))
    LK: gl.constexpr = gl.SliceLayout(0, gl.SliceLayout(1, L3))
    # the lane math with no replication (each block's in one thread): row tiles [T, NR],
    # column tiles [NR, T]
    LR: gl.constexpr = gl.BlockedLayout([1, 1], [32 // NR, NR], [W, 1], [1, 0])
    LC: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [W, 1], [1, 0])
    # xᵀ's codes: 16 bytes of a column of x (a row of xᵀ) a thread
    LT: gl.constexpr = gl.BlockedLayout([16, 1], [T // 16, 32 // (T // 16)], [1, W], [0, 1])

    o, bm, bn, nbm, ntr, ntc, row0 = _block_at(M, N, T, BN, I64)

    i = gl.arange(0, T, layout=LI)
    col = (
        bn * BN
        + gl.arange(0, NR, layout=LN)[None, :, None] * T
        + gl.arange(0, T, layout=LK)[None, None, :]
    )
    offs = (row0 + i)[:, None, None] * N + col
    if FULL:
        mask = gl.full((T, NR, T), 1, gl.int1, L3)
    else:
        mask = (bm * T + i < M)[:, None, None] & (col < N)
    x = as_f32(gl.load(x_ptr + offs, mask=mask, other=0), IN)

    # ---- row tiles (axis 2)
    mx, _, _ = _block_max(x, mask, 2, False)
    mx = gl.convert_layout(mx, LR)
    scale, _, _, recip, _, _, bad = lane_scales(mx, mx, mx, 0, SK, S, TS, Z, RULE, C)
    ir = gl.arange(0, T, layout=gl.SliceLayout(1, LR))
    tile = bn * NR + gl.arange(0, NR, layout=gl.SliceLayout(0, LR))[None, :]
    if FULL:
        ok = gl.full((T, NR), 1, gl.int1, LR)
    else:
        ok = (bm * T + ir < M)[:, None] & (tile < ntr)
    _store_scales(scale_r, row_slots(row0 + ir[:, None], tile, ntr, BLK), ok, scale, REV)
    recip = gl.convert_layout(recip, gl.SliceLayout(2, L3))[:, :, None]
    keep = gl.convert_layout(gl.where(bad, 0, 255).to(gl.uint8), gl.SliceLayout(2, L3))
    gl.store(out_r + offs, hw_bytes_kept(x * recip, keep[:, :, None], E), mask=mask)

    # ---- column tiles (axis 0): lane (t, k) is column bn * BN + t * T + k
    mx, _, _ = _block_max(x, mask, 0, False)
    mx = gl.convert_layout(mx, LC)
    scale, _, _, recip, _, _, bad = lane_scales(mx, mx, mx, 0, SK, S, TS, Z, RULE, C)
    n = (
        bn * BN
        + gl.arange(0, NR, layout=gl.SliceLayout(1, LC))[:, None] * T
        + gl.arange(0, T, layout=gl.SliceLayout(0, LC))[None, :]
    )
    _column_scales(scale_c, o, N, n, bm, nbm, ntc, scale, FULL, TRANS, BLK, CEV)
    recip = gl.convert_layout(recip, gl.SliceLayout(0, L3))[None, :, :]
    keep = gl.convert_layout(gl.where(bad, 0, 255).to(gl.uint8), gl.SliceLayout(0, L3))
    codes = hw_bytes_kept(x * recip, keep[None, :, :], E)
    if TRANS:
        store_transposed(out_c, gl.reshape(codes, [T, BN]), o, M, N, bm, bn, T, BN, FULL, LT)
    else:
        gl.store(out_c + offs, codes, mask=mask)
