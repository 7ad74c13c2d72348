"""Philox4x32-10 over whole arrays of counters (SEMANTICS.md §3.3).

A cast's seeded bits (:func:`random_bits`) use all 128 bits of each call: ``K``-bit integers
for ``E = 128 / K`` consecutive elements, element ``i`` taking bits ``[K b, K b + K)`` of
word ``w`` of the call at counter ``(c mod 2**32, c >> 32, stream, 0)``, ``c = i // E``,
``j = i % E``, ``w = j // (32 / K)``, ``b = j % (32 / K)``. The golden sets choose their cases
from a different stream (:func:`philox_word0`: word 0 at consecutive counters), which their
committed vectors depend on.
"""

from __future__ import annotations

import numpy as np

from tcast import SpecError
from tcast.kit import normalize_seed
from tcast.philox import check_stream, check_width

__all__ = ["philox_word0", "random_bits"]

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_CALLS = 1 << 16  # calls per piece: the working arrays stay in the CPU caches


def random_bits(
    seed: int, count: int, start: int = 0, *, width: int, stream: int = 0
) -> np.ndarray:
    """The seeded stochastic-rounding bits of flat indices ``start .. start + count - 1``.

    Element ``i`` takes ``width`` bits of the Philox4x32-10 call ``i // (128 / width)`` on
    ``stream`` (SEMANTICS.md §3.3): each call gives ``128 / width`` consecutive elements
    their bits.

    Args:
        seed: the seed, in [0, 2**64).
        count: how many elements.
        start: the first flat index.
        width: ``K``, 8 or 16 (``tcast.rbits_width`` of the datatype).
        stream: the third counter word, in [0, 2**32).

    Returns:
        uint8 (``width`` 8) or uint16 (16) array of ``count`` random integers.

    Raises:
        SpecError: if the seed, ``count``, ``start``, ``width`` or ``stream`` is out of range.
    """
    seed, count, start = _check(seed, count, start)
    width, stream = check_width(width), check_stream(stream)
    dtype = np.uint8 if width == 8 else np.uint16
    per_call = 128 // width
    out = np.empty(count, dtype=dtype)
    # the calls that cover the range
    first, end = start // per_call, (start + count + per_call - 1) // per_call
    pos = 0
    for lo in range(first, end, _CALLS):
        calls = np.arange(lo, min(lo + _CALLS, end), dtype=np.uint64)
        words = np.empty((calls.size, 4), dtype=np.uint32)  # row = call, column = word
        for k, w in enumerate(_philox(calls & _MASK, calls >> _S32, seed, stream)):
            words[:, k] = w
        # little-endian views: byte (half) b of word w is element 4w + b (2w + b)
        elems = words.astype("<u4").view("<u1" if width == 8 else "<u2").reshape(-1)
        skip = start % per_call if lo == first else 0  # an unaligned start drops the first
        take = min(elems.size - skip, count - pos)
        out[pos : pos + take] = elems[skip : skip + take]
        pos += take
    return out


def philox_word0(seed: int, count: int, start: int = 0) -> np.ndarray:
    """Word 0 of Philox4x32-10 at consecutive counters ``start .. start + count - 1``.

    The golden sets' stream for choosing inputs and their explicit ``RBITS``; it is not the
    cast's seeded rule (:func:`random_bits`), and changing it would change every committed
    golden vector.

    Args:
        seed: the seed, in [0, 2**64).
        count: how many words.
        start: the first counter.

    Returns:
        uint32 array of ``count`` words.

    Raises:
        SpecError: if the seed, ``count`` or ``start`` is out of range.
    """
    seed, count, start = _check(seed, count, start)
    out = np.empty(count, dtype=np.uint32)
    for lo in range(0, count, _CALLS):
        idx = np.arange(start + lo, start + min(lo + _CALLS, count), dtype=np.uint64)
        out[lo : lo + idx.size] = _philox(idx & _MASK, idx >> _S32, seed, 0)[0]
    return out


def _check(seed: object, count: object, start: object) -> tuple[int, int, int]:
    """``(seed, count, start)`` as Python ints, after checking their ranges."""
    if seed is None:
        raise SpecError("seed None must be an int in [0, 2**64)")
    seed = normalize_seed(seed)  # the kit's rule: any integer type in [0, 2**64)
    for name, v in (("count", count), ("start", start)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
            raise SpecError(f"{name} {v!r} must be a non-negative int")
    if int(start) + int(count) > 2**64:
        raise SpecError(f"indices {start} .. {start + count - 1} go past 2**64 - 1")
    return int(seed), int(count), int(start)


def _philox(
    c0: np.ndarray, c1: np.ndarray, seed: int, stream: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The four words (uint64 arrays below 2**32) of the calls at counters (c0, c1, stream, 0)."""
    c2 = np.full_like(c0, stream)
    c3 = np.zeros_like(c0)
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    for _ in range(10):
        p0 = _M0 * c0  # < 2**64: both factors are below 2**32
        p1 = _M1 * c2
        # every term of the xors is below 2**32, so the new c0 and c2 need no mask
        c0, c1, c2, c3 = (
            (p1 >> _S32) ^ c1 ^ np.uint64(k0),
            p1 & _MASK,
            (p0 >> _S32) ^ c3 ^ np.uint64(k1),
            p0 & _MASK,
        )
        k0 = (k0 + _W0) & 0xFFFFFFFF
        k1 = (k1 + _W1) & 0xFFFFFFFF
    return c0, c1, c2, c3
