"""Philox4x32-10: the counter-based generator behind seeded stochastic rounding.

Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3"
(SC'11), with the Random123 round constants. Element ``i`` of a cast with seed
``s`` draws word 0 of ``philox4x32(counter=(i mod 2**32, i >> 32, 0, 0),
key=(s mod 2**32, s >> 32))``; this is also what Triton's ``tl.randint(s, i)``
returns for ``i < 2**32``, so every engine can draw the same bits.
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

    Args:
        seed: an int in [0, 2**64).
        indices: flat (C-order) element indices of the input array.

    Returns:
        One 32-bit integer per index.

    Raises:
        SpecError: if the seed or an index is out of range.
    """
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < (1 << 64):
        raise SpecError(f"seed {seed!r} must be an int in [0, 2**64)")
    key = (seed & _MASK, seed >> 32)
    out = []
    for i in indices:
        if not 0 <= i < (1 << 64):
            raise SpecError(f"element index {i} out of range [0, 2**64)")
        out.append(philox4x32((i & _MASK, i >> 32, 0, 0), key)[0])
    return out
