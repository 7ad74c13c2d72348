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


#: Words computed per Philox call: case generation asks for a few words per tile, tens of
#: thousands of times, and a call costs about as much as 4096 words (vectorized).
_CHUNK = 4096


class Stream:
    """Consecutive Philox words under one seed, starting at counter ``start``.

    Words are computed ``_CHUNK`` at a time and handed out in order: word ``k`` of the stream
    is word 0 of Philox at counter ``start + k`` however the draws are split, so the buffer
    changes no bit of any set.
    """

    def __init__(self, seed: int, start: int = 0) -> None:
        self.seed = seed
        self.pos = start
        self._buf = np.zeros(0, np.uint32)
        self._at = 0  # the stream position of _buf[0]

    def words(self, n: int) -> np.ndarray:
        """The next ``n`` 32-bit words (uint32)."""
        lo = self.pos - self._at
        if lo + n > self._buf.size:
            # refill from the current position; never past counter 2**64 - 1
            # (a draw past the end asks for all of it: philox_word0 refuses it, naming it)
            count = max(n, min(_CHUNK, 2**64 - self.pos))
            self._buf = philox_word0(self.seed, count, self.pos) if count else self._buf[:0]
            self._at, lo = self.pos, 0
        out = self._buf[lo : lo + n].copy()
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
