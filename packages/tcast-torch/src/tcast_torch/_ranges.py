"""The ranges of uint observers on CUDA: one hand-written Triton pass over the blocks.

Per row (block), the minimum and maximum of its finite values and 0, merged with the running
ones (``_range_kernel``). Inductor's fused version of the same reduction (two outputs per
row) reads a 16384^2 bfloat16 tensor at 0.5-0.66 of the rate of a single read on an H200
(copy / 2); this kernel at 0.82 in rows of 32 (its running ranges read and written too: a
quarter more bytes than the input's), 0.97 per row, 0.92 for the whole tensor.

Long rows of few blocks (a whole tensor, a few long channels) reduce in two passes: chunks of
``_SPLIT`` elements first, then the ranges of their ranges.
"""

from contextlib import nullcontext

import torch

from tcast import UnsupportedError

from ._range_kernel import ranges_kernel

__all__ = ["row_ranges"]

#: Rows longer than this, when there are fewer than ``_FEW`` of them, reduce as chunks of
#: this length first.
_SPLIT = 32768
_FEW = 4096
#: Elements one program holds (per step of its loop over columns) and its warps: for rows
#: of at most ``_COLS`` elements (one step), and longer ones. Measured on an H200 (16384^2
#: bfloat16): 128 elements per thread in one step, 16 per step of the loop were the fastest
#: of 4096-32768 elements and 1-16 warps.
_ONE = (4096, 1)
_LOOP = (4096, 8)
_COLS = 1024
#: Rows whose column counter may pass this need a 64-bit one.
_WIDE = 2**31


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
    kernel[(-(-n // rows),)](
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
        WIDE=length + cols >= _WIDE,
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
        kernel: the jitted ``ranges_source`` (default: ``ranges_kernel()``).

    Raises:
        UnsupportedError: for rows whose elements are not contiguous.
    """
    n, length = rows.shape
    if length > 1 and rows.stride(1) != 1:
        raise UnsupportedError(
            f"row_ranges reads rows whose elements are contiguous, got strides {rows.stride()}"
            f": pass rows.contiguous()"
        )
    kernel = kernel or ranges_kernel()
    # Triton launches on the current device and its stream: the rows' own
    with torch.cuda.device(rows.device) if rows.is_cuda else nullcontext():
        return _ranges(kernel, rows, old, k, n, length)


def _ranges(kernel, rows, old, k, n: int, length: int):
    """:func:`row_ranges` on the device: one pass, or two for long rows of few blocks."""
    if length > _SPLIT and n < _FEW and length % _SPLIT == 0 and rows.is_contiguous():
        parts = rows.reshape(-1, _SPLIT)
        clo, chi = _launch(kernel, parts, parts, (), None, parts.shape[0], _SPLIT, _SPLIT)
        per = length // _SPLIT
        return _launch(kernel, clo, chi, old, k, n, per, per)
    return _launch(kernel, rows, rows, old, k, n, length, rows.stride(0))
