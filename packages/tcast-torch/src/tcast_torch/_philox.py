"""Philox4x32-10 over tensors of counters (SEMANTICS.md §3.3), on the input's device.

The 32 x 32 -> 64-bit products are formed from 16-bit halves of the round multiplier in
int64 (each partial product is below 2**48), because the full product of a 32-bit counter
and 0xD2511F53 exceeds the int64 range.
"""

from __future__ import annotations

import math

import torch

from tcast import SpecError

__all__ = ["philox_bits", "random_bits"]

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF


def _check_seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise SpecError(f"seed {seed!r} must be an int in [0, 2**64)")
    return seed


def _mulhilo(a: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(high, low) 32-bit words of a * m, for int64 ``a`` in [0, 2**32) and a 32-bit ``m``."""
    p_lo = a * (m & 0xFFFF)  # < 2**48
    t = a * (m >> 16) + (p_lo >> 16)  # a * m = t * 2**16 + (p_lo mod 2**16), t < 2**49
    return t >> 16, ((t & 0xFFFF) << 16) | (p_lo & 0xFFFF)


def philox_bits(seed: int, index: torch.Tensor) -> torch.Tensor:
    """Word 0 of Philox4x32-10 for int64 flat indices, as int32 bit patterns.

    Args:
        seed: the seed, in [0, 2**64) (validated by the caller).
        index: int64 tensor of flat element indices (non-negative).

    Returns:
        int32 tensor of index's shape: the uint32 words as two's-complement patterns.
    """
    c0 = index & _MASK
    c1 = index >> 32
    c2 = torch.zeros_like(c0)
    c3 = torch.zeros_like(c0)
    k0, k1 = seed & _MASK, seed >> 32
    for _ in range(10):
        hi0, lo0 = _mulhilo(c0, _M0)
        hi1, lo1 = _mulhilo(c2, _M1)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
    return torch.where(c0 >= 1 << 31, c0 - (1 << 32), c0).to(torch.int32)


def random_bits(
    seed: int,
    shape: int | tuple[int, ...] | torch.Size,
    start: int = 0,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The Philox words seeded stochastic rounding uses, for flat indices from ``start``.

    Element ``i`` (C order) of the result holds the word of flat index ``start + i``: the
    same stream as ``tcast.random_bits`` and ``tcast_ref.random_bits``.

    Args:
        seed: an int in [0, 2**64).
        shape: the result's shape (an int for a 1-D stream).
        start: the first flat index.
        device: where to generate the bits (default: the CPU).

    Returns:
        torch.uint32 tensor of ``shape``.

    Raises:
        SpecError: if the seed or ``start`` is out of range.
    """
    _check_seed(seed)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise SpecError(f"start {start!r} must be a non-negative int")
    count = math.prod(shape)
    idx = torch.arange(start, start + count, dtype=torch.int64, device=device)
    return philox_bits(seed, idx).reshape(shape).view(torch.uint32)
