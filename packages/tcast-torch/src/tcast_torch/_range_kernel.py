"""The ranges of uint observers on CUDA: one hand-written Triton pass over the blocks.

Per row (block), the minimum and maximum of its finite values and 0, merged with the running
ones (their min and max, or their moving average). Inductor's fused version of the same
reduction (two outputs per row) reads a 16384^2 bfloat16 tensor at 0.5-0.66 of the rate of a
single read on an H200 (copy / 2); this kernel at 0.82 in rows of 32 (its running ranges read
and written too: a quarter more bytes than the input's), 0.97 per row, 0.92 for the whole
tensor. Every operation is exact (a min, a max, adding +0 to turn -0 into +0) except the
moving average's three, each rounded once: the kernel is compiled without contraction
(``enable_fp_fusion=False``). So it gives the bits of ``tcast_torch._observe._row_update``,
the eager definition it replaces.

Long rows of few blocks (a whole tensor, a few long channels) reduce in two passes: chunks of
``_CHUNK`` elements first, then the ranges of their ranges.
"""

from functools import cache

import torch
import triton
import triton.language as tl

__all__ = ["ranges_kernel", "ranges_source", "row_ranges"]

#: Rows longer than this, when there are fewer than ``_FEW`` of them, reduce as chunks first.
_CHUNK = 32768
_FEW = 4096
#: Elements one program holds (per step of its loop over columns) and its warps: for rows
#: of at most ``_COLS`` elements (one step), and longer ones. Measured on an H200 (16384^2
#: bfloat16): 128 elements per thread in one step, 16 per step of the loop were the fastest
#: of 4096-32768 elements and 1-16 warps.
_ONE = (4096, 1)
_LOOP = (4096, 8)
_COLS = 1024


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
    MERGE: tl.constexpr,
):
    """Triton source (jitted by :func:`ranges_kernel`): see the module docstring.

    ``lo_src``/``hi_src`` are the rows whose minimum/maximum is taken: the same input
    (``SAME``: read once), or a first pass's chunk minima and maxima. ``ONE``: a row fits in
    ``COLS`` columns (no loop). ``MERGE`` 0 stores the ranges, 1 merges them into ``old_*`` by
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
        # a while loop: the interpreter cannot take a run-time bound in range() (numpy 2.4)
        c0 = 0
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


def _pow2(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def _launch(kernel, lo_src, hi_src, old, k, n: int, length: int, stride: int):
    """One pass: the ranges of ``n`` rows of ``length`` (row ``i`` at ``i * stride``)."""
    cols = min(_pow2(max(length, 1)), _COLS)
    tile, warps = _ONE if length <= cols else _LOOP
    rows = max(1, min(tile // cols, _pow2(n)))
    lo = torch.empty(n, dtype=torch.float32, device=lo_src.device)
    hi = torch.empty_like(lo)
    merge = 0 if not old else (2 if k is not None else 1)
    old_lo, old_hi = old if old else (lo, hi)
    kernel[(triton.cdiv(n, rows),)](
        lo_src,
        hi_src,
        old_lo,
        old_hi,
        k if k is not None else lo,
        lo,
        hi,
        n,
        length,
        stride,
        ROWS=rows,
        COLS=cols,
        ONE=length <= cols,
        SAME=lo_src is hi_src,
        MERGE=merge,
        num_warps=warps,
        enable_fp_fusion=False,
    )
    return lo, hi


def row_ranges(rows: torch.Tensor, old: tuple, k: torch.Tensor | None = None, *, kernel=None):
    """``(lo, hi)`` of each row merged with ``old`` (``()``: none), as ``_row_update``.

    Args:
        rows: a 2-D float32, float16 or bfloat16 tensor whose rows are contiguous.
        old: ``()`` or the running ``(lo, hi)``, float32 vectors of one value per row.
        k: the moving average's constant (0-d float32), or None for the running extremes.
        kernel: the jitted :func:`ranges_source` (default :func:`ranges_kernel`).
    """
    kernel = kernel or ranges_kernel()
    n, length = rows.shape
    if length > _CHUNK and n < _FEW and length % _CHUNK == 0 and rows.is_contiguous():
        parts = rows.reshape(-1, _CHUNK)
        clo, chi = _launch(kernel, parts, parts, (), None, parts.shape[0], _CHUNK, _CHUNK)
        per = length // _CHUNK
        return _launch(kernel, clo, chi, old, k, n, per, per)
    return _launch(kernel, rows, rows, old, k, n, length, rows.stride(0))
