"""Deterministic random choices for golden sets, from the documented Philox stream only.

Every random word is word 0 of Philox4x32-10 at consecutive counters under the set's seed
(``philox_word0``), so a set is the same on every machine and NumPy version: no NumPy
distribution function is used. This is not the cast's seeded rule of SEMANTICS.md §3.3
(four words per call); it stays as it is so that the committed vectors keep their inputs.
Choices are ``word mod n`` (the tiny modulo bias is harmless for choosing test cases and
keeps the rule easy to restate).
"""

from __future__ import annotations

import numpy as np

from .._philox import philox_word0

__all__ = ["Stream"]


class Stream:
    """Consecutive Philox words under one seed, starting at counter ``start``."""

    def __init__(self, seed: int, start: int = 0) -> None:
        self.seed = seed
        self.pos = start

    def words(self, n: int) -> np.ndarray:
        """The next ``n`` 32-bit words (uint32)."""
        out = philox_word0(self.seed, n, self.pos) if n else np.zeros(0, np.uint32)
        self.pos += n
        return out

    def below(self, bound: int, n: int) -> np.ndarray:
        """``n`` integers in ``[0, bound)`` (int64): word mod bound."""
        if bound <= 0:
            raise ValueError(f"bound must be positive, got {bound}")
        return (self.words(n).astype(np.int64) % bound).astype(np.int64)

    def signs(self, n: int) -> np.ndarray:
        """``n`` booleans (True = negative): the low bit of each word."""
        return (self.words(n) & np.uint32(1)).astype(bool)
