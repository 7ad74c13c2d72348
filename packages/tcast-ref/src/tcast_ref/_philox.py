"""Philox4x32-10 over whole arrays of counters (SEMANTICS.md §3.3)."""

from __future__ import annotations

import numpy as np

from tcast import SpecError

__all__ = ["random_bits"]

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = np.uint64(0xFFFFFFFF)
_CHUNK = 1 << 20


def random_bits(seed: int, count: int, start: int = 0) -> np.ndarray:
    """Word 0 of Philox4x32-10 for flat indices ``start .. start + count - 1``.

    Args:
        seed: the seed, in [0, 2**64).
        count: how many elements.
        start: the first flat index.

    Returns:
        uint32 array of ``count`` random words.

    Raises:
        SpecError: if the seed is out of range.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < 2**64:
        raise SpecError(f"seed {seed!r} must be an int in [0, 2**64)")
    seed = int(seed)
    out = np.empty(count, dtype=np.uint32)
    for lo in range(0, count, _CHUNK):
        hi = min(lo + _CHUNK, count)
        idx = np.arange(start + lo, start + hi, dtype=np.uint64)
        out[lo:hi] = _word0(idx & _MASK, idx >> np.uint64(32), seed)
    return out


def _word0(c0: np.ndarray, c1: np.ndarray, seed: int) -> np.ndarray:
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    for _ in range(10):
        p0 = _M0 * c0  # < 2**64: both factors are below 2**32
        p1 = _M1 * c2
        c0, c1, c2, c3 = (
            ((p1 >> np.uint64(32)) ^ c1 ^ np.uint64(k0)) & _MASK,
            p1 & _MASK,
            ((p0 >> np.uint64(32)) ^ c3 ^ np.uint64(k1)) & _MASK,
            p0 & _MASK,
        )
        k0 = (k0 + _W0) & 0xFFFFFFFF
        k1 = (k1 + _W1) & 0xFFFFFFFF
    return c0.astype(np.uint32)
