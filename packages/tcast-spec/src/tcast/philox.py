"""Philox4x32-10: the counter-based generator behind seeded stochastic rounding.

Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3"
(SC'11), with the Random123 round constants. Each call gives four 32-bit words,
and a cast uses all four: element ``i`` of a cast with seed ``s`` draws word
``i mod 4`` of ``philox4x32(counter=(c mod 2**32, c >> 32, 0, 0), key=(s mod
2**32, s >> 32))`` with ``c = i >> 2`` (SEMANTICS.md §3.3). This is word ``i % 4``
of Triton's ``tl.randint4x(s, i // 4)``, so every engine can draw the same bits
with one generator call per four elements.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import SpecError

__all__ = ["PHILOX_ROUNDS", "check_random_source", "philox4x32", "random_bits"]

PHILOX_ROUNDS = 10
_M0, _M1 = 0xD2511F53, 0xCD9E8D57  # round multipliers
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # Weyl key increments
_MASK = 0xFFFFFFFF


def philox4x32(
    counter: tuple[int, int, int, int], key: tuple[int, int], rounds: int = PHILOX_ROUNDS
) -> tuple[int, int, int, int]:
    """One Philox4x32 block: four 32-bit words from a 128-bit counter and a 64-bit key.

    Raises:
        SpecError: if a counter or key word is not a 32-bit unsigned integer.
    """
    words = [*counter, *key]
    if len(counter) != 4 or len(key) != 2 or any(not 0 <= w <= _MASK for w in words):
        raise SpecError("philox4x32 needs four 32-bit counter words and two 32-bit key words")
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(rounds):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = (
            ((p1 >> 32) ^ c1 ^ k0) & _MASK,
            p1 & _MASK,
            ((p0 >> 32) ^ c3 ^ k1) & _MASK,
            p0 & _MASK,
        )
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
    return c0, c1, c2, c3


def check_random_source(roundmode: object, seed: object, rbits: object) -> None:
    """The rule every engine applies to ``seed`` and ``rbits`` (SEMANTICS.md §3.3).

    Args:
        roundmode: the cast's RoundMode.
        seed: the seed argument (None when not given).
        rbits: the rbits argument (None when not given).

    Raises:
        SpecError: both given; either given without stochastic rounding; neither given
            with stochastic rounding.
    """
    from .modes import RoundMode, round_mode

    mode = round_mode(roundmode)
    if seed is not None and rbits is not None:
        raise SpecError("give either seed or rbits for stochastic rounding, not both")
    if mode is not RoundMode.STOCHASTIC:
        if seed is not None or rbits is not None:
            raise SpecError(f"seed and rbits are for stochastic rounding, not {mode.value!r}")
    elif seed is None and rbits is None:
        raise SpecError("stochastic rounding needs a seed or rbits")


def random_bits(seed: int, indices: Iterable[int]) -> list[int]:
    """The 32-bit random integers that seeded stochastic rounding uses.

    Element ``i`` takes word ``i mod 4`` of the Philox call at counter ``i >> 2``.

    Args:
        seed: an int in [0, 2**64).
        indices: flat (C-order) element indices of the input array, in any order.

    Returns:
        One 32-bit integer per index.

    Raises:
        SpecError: if the seed or an index is out of range.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < (1 << 64):
        raise SpecError(f"seed {seed!r} must be an int in [0, 2**64)")
    key = (seed & _MASK, seed >> 32)
    out = []
    # consecutive indices share a call: keep the last one's words rather than recompute them
    call, words = -1, (0, 0, 0, 0)
    for i in indices:
        if not 0 <= i < (1 << 64):
            raise SpecError(f"element index {i} out of range [0, 2**64)")
        if i >> 2 != call:
            call = i >> 2
            words = philox4x32((call & _MASK, call >> 32, 0, 0), key)
        out.append(words[i & 3])
    return out
