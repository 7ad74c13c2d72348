"""The Triton kernel of uint observers' ranges (launched by ``tcast_torch._ranges``).

Per row (block), the minimum and maximum of its finite values and 0, merged with the running
ones (their min and max, or their moving average). Every operation is exact (a min, a max,
adding +0 to turn -0 into +0) except the moving average's three, each rounded once: the
kernel is launched without contraction (``enable_fp_fusion=False``). So it gives the bits of
``tcast_torch._observe._row_update``, the eager definition it replaces.
"""

from functools import cache

import triton
import triton.language as tl

__all__ = ["ranges_kernel", "ranges_source"]


@triton.jit
def _finite_tile(src, r, live, c, length, stride):
    """The tile of rows ``r``, columns ``c`` as float32; non-finite and absent elements 0.

    0 stands for them because every range holds 0 anyway.
    """
    m = live[:, None] & (c < length)[None, :]
    v = tl.load(src + r[:, None] * stride + c[None, :], mask=m, other=0.0).to(tl.float32)
    return tl.where(tl.abs(v) < float("inf"), v, 0.0)


def ranges_source(
    lo_src,
    hi_src,
    old_lo,
    old_hi,
    k_ptr,
    lo_out,
    hi_out,
    n_rows,
    length,
    stride,
    ROWS: tl.constexpr,  # Triton's convention: compile-time sizes in capitals
    COLS: tl.constexpr,
    ONE: tl.constexpr,
    SAME: tl.constexpr,
    WIDE: tl.constexpr,
    MERGE: tl.constexpr,
):
    """Triton source (jitted by :func:`ranges_kernel`): see the module docstring.

    ``lo_src``/``hi_src`` are the rows whose minimum/maximum is taken: the same input
    (``SAME``: read once), or a first pass's chunk minima and maxima. ``ONE``: a row fits in
    ``COLS`` columns (no loop). ``WIDE``: a row so long that its column counter needs 64 bits.
    ``MERGE`` 0 stores the ranges, 1 merges them into ``old_*`` by
    min and max, 2 by the moving average ``o + k·(v − o)``.
    """
    pid = tl.program_id(0)
    r = pid.to(tl.int64) * ROWS + tl.arange(0, ROWS)
    live = r < n_rows
    c = tl.arange(0, COLS)
    if ONE:  # reduced straight from the tile: no accumulator registers
        a = _finite_tile(lo_src, r, live, c, length, stride)
        b = a if SAME else _finite_tile(hi_src, r, live, c, length, stride)
        lo = tl.minimum(tl.min(a, axis=1), 0.0)
        hi = tl.maximum(tl.max(b, axis=1), 0.0)
    else:
        lo2 = tl.zeros([ROWS, COLS], dtype=tl.float32)
        hi2 = tl.zeros([ROWS, COLS], dtype=tl.float32)
        # a while loop: the interpreter cannot take a run-time bound in range() (numpy 2.4);
        # an int64 counter where one step past the row's end would wrap an int32
        if WIDE:
            c0 = tl.full((), 0, tl.int64)
        else:
            c0 = tl.full((), 0, tl.int32)
        while c0 < length:
            a = _finite_tile(lo_src, r, live, c0 + c, length, stride)
            b = a if SAME else _finite_tile(hi_src, r, live, c0 + c, length, stride)
            lo2 = tl.minimum(lo2, a)
            hi2 = tl.maximum(hi2, b)
            c0 += COLS
        lo = tl.min(lo2, axis=1)
        hi = tl.max(hi2, axis=1)
    # min(-0, +0) may give either zero: + 0 makes it +0, as the eager definition does
    lo = lo + 0.0
    hi = hi + 0.0
    if MERGE == 1:
        lo = tl.minimum(tl.load(old_lo + r, mask=live, other=0.0), lo)
        hi = tl.maximum(tl.load(old_hi + r, mask=live, other=0.0), hi)
    if MERGE == 2:
        k = tl.load(k_ptr)
        ol = tl.load(old_lo + r, mask=live, other=0.0)
        oh = tl.load(old_hi + r, mask=live, other=0.0)
        lo = ol + k * (lo - ol)
        hi = oh + k * (hi - oh)
    tl.store(lo_out + r, lo, mask=live)
    tl.store(hi_out + r, hi, mask=live)


@cache
def ranges_kernel():
    """:func:`ranges_source` jitted, on first use.

    A process that sets ``TRITON_INTERPRET=1`` before importing Triton gets the interpreter's
    version.
    """
    return triton.jit(ranges_source)
