"""Subtile exponent offsets (SEMANTICS.md §5.8; MSFP MX9/MX6/MX4), vectorized.

Functions of primitive arguments: the scaled inputs of a piece viewed as units
(``_subtiles.Units.to_units``), the element format's ``emax`` in the scaled domain and the
offset width.
"""

from __future__ import annotations

import numpy as np

from ._codec import floor_log2, split_f32

__all__ = ["exact_floor_log2", "pow2", "subtile_offsets"]


def exact_floor_log2(a: np.ndarray) -> np.ndarray:
    """floor(log2 a) of positive finite float32 values, subnormals included (int64).

    From the bits (the significand's bit length plus the exponent), never a float log2;
    +-Inf reads as 128 (above every float32 binade); NaN and zeros give some integer
    (callers mask them).
    """
    _, _, _, sig, q = split_f32(a)
    return floor_log2(np.where(sig == 0, 1, sig)) + q


def subtile_offsets(xu: np.ndarray, emax: int, bits: int) -> np.ndarray:
    """The offset ``d`` of every unit.

    ``2**B - 1`` for an all-zero unit, else ``clamp(emax - floor_log2(max |x'|), 0, 2**B - 1)``.

    Args:
        xu: float32 scaled inputs, (R, U, L); padding is 0. A unit holding +-Inf (a
            product ``fl32(x * r)`` that overflowed in a finite block) gets offset 0; a NaN
            unit some offset (its block is NaN and the caller zeroes it).
        emax: floor_log2 of the element maximum in the scaled domain of ``xu``.
        bits: the offset width B.

    Returns:
        uint8 offsets, (R, U).
    """
    top = (1 << bits) - 1
    a = np.max(np.abs(xu), axis=-1)
    d = np.clip(emax - exact_floor_log2(a), 0, top)
    return np.where(a == 0, top, d).astype(np.uint8)


def pow2(d: np.ndarray, sign: int = 1) -> np.ndarray:
    """float32 ``2**(sign * d)`` of small integers (exact)."""
    return np.ldexp(np.float32(1), sign * np.asarray(d, np.int32)).astype(np.float32)
