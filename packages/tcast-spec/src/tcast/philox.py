"""Philox4x32-10: the counter-based generator behind seeded stochastic rounding.

Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3"
(SC'11), with the Random123 round constants. Each call gives four 32-bit words,
128 bits that serve ``E = 128 / K`` elements of ``K`` random bits (SEMANTICS.md §3.3):
element ``i`` of a cast with seed ``s`` on stream ``t`` takes bits ``[K b, K b + K)``
of word ``w`` of ``philox4x32(counter=(c mod 2**32, c >> 32, t, 0), key=(s mod 2**32,
s >> 32))``, where ``c = i // E``, ``j = i % E``, ``w = j // (32 / K)`` and
``b = j % (32 / K)``. Triton's ``tl.philox(s, c0, c1, t, 0)`` computes the same call.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable

from .errors import SpecError

__all__ = [
    "PHILOX_ROUNDS",
    "RBITS_WIDTHS",
    "check_random_source",
    "check_stream",
    "check_width",
    "philox4x32",
    "random_bits",
    "rbits_width",
]

PHILOX_ROUNDS = 10
#: The random widths ``K`` of stochastic rounding (SEMANTICS.md §3.2).
RBITS_WIDTHS = (8, 16)
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


def check_random_source(roundmode: object, seed: object, rbits: object, stream: object = 0) -> None:
    """The rule every engine applies to ``seed``, ``rbits`` and ``stream`` (SEMANTICS.md §3.3).

    Args:
        roundmode: the cast's RoundMode.
        seed: the seed argument (None when not given).
        rbits: the rbits argument (None when not given).
        stream: the stream argument (0 when not given).

    Raises:
        SpecError: both seed and rbits given; either given without stochastic rounding;
            neither given with stochastic rounding; a stream that is not an int in
            [0, 2**32), or a non-zero one without a seed.
    """
    from .modes import RoundMode, round_mode

    mode = round_mode(roundmode)
    check_stream(stream)
    if seed is not None and rbits is not None:
        raise SpecError("give either seed or rbits for stochastic rounding, not both")
    if mode is not RoundMode.STOCHASTIC:
        if seed is not None or rbits is not None:
            raise SpecError(f"seed and rbits are for stochastic rounding, not {mode.value!r}")
    elif seed is None and rbits is None:
        raise SpecError("stochastic rounding needs a seed or rbits")
    if stream != 0 and seed is None:
        raise SpecError(
            f"stream={stream} selects the Philox stream of a seed: give a seed with "
            f"roundmode='stochastic' (given rbits have no stream)"
        )


def check_width(width: object) -> int:
    """``width`` checked: 8 or 16 as an int (any integer type but bool).

    Raises:
        SpecError: naming the bad value.
    """
    w = _integer(width, "width", 1 << 16, "8 or 16 (tcast.rbits_width of the datatype)")
    if w not in RBITS_WIDTHS:
        raise SpecError(f"width {width!r} must be 8 or 16 (tcast.rbits_width of the datatype)")
    return w


def check_stream(stream: object) -> int:
    """``stream`` checked: an int in [0, 2**32) (any integer type but bool).

    Raises:
        SpecError: naming the bad value.
    """
    return _integer(
        stream, "stream", 1 << 32, "an int in [0, 2**32) (the third Philox counter word)"
    )


def _integer(value: object, what: str, end: int, must: str = "") -> int:
    """``value`` as a Python int in ``[0, end)`` (any integer type but bool).

    Raises:
        SpecError: naming ``what``, the bad value and what it must be (``must``; default:
            an int in the range).
    """
    try:
        v = None if isinstance(value, bool) else operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        v = None
    if v is None or not 0 <= v < end:
        must = must or f"an int in [0, 2**{end.bit_length() - 1})"
        raise SpecError(f"{what} {value!r} must be {must}")
    return v


def rbits_width(fmt: object) -> int:
    """``K``: the random bits one stochastic rounding into ``fmt`` takes (SEMANTICS.md §3.2).

    Args:
        fmt: a DataType (its element format), NumberSpec, or a code or name of either.

    Returns:
        8 for element formats of at most 8 bits, 16 for wider ones.

    Raises:
        SpecError: for something that is not a format or datatype.
    """
    from ._lookup import datatype
    from .datatype import DataType
    from .number import NumberSpec, number

    if isinstance(fmt, NumberSpec):
        return fmt.rbits_width
    if isinstance(fmt, DataType):
        return fmt.nspec.rbits_width
    if isinstance(fmt, str):
        try:
            return number(fmt).rbits_width
        except SpecError:
            return datatype(fmt).nspec.rbits_width
    raise SpecError(f"rbits_width takes a DataType, NumberSpec or code, got {fmt!r}")


def random_bits(seed: int, indices: Iterable[int], width: int, *, stream: int = 0) -> list[int]:
    """The ``width``-bit random integers that seeded stochastic rounding uses (SEMANTICS §3.3).

    Element ``i`` takes bits ``[width * b, width * b + width)`` of word ``w`` of the Philox
    call at counter ``(c mod 2**32, c >> 32, stream, 0)``, ``c = i // E``, ``E = 128 / width``
    elements per call, ``j = i % E``, ``w = j // (32 / width)``, ``b = j % (32 / width)``.

    Args:
        seed: an int in [0, 2**64).
        indices: flat (C-order) element indices of the input array, in any order.
        width: ``K``, 8 or 16 (:func:`rbits_width` of the datatype).
        stream: the third counter word, an int in [0, 2**32) (a dual cast's column result
            draws stream 1).

    Returns:
        One ``width``-bit integer per index.

    Raises:
        SpecError: if the seed, width, stream or an index is out of range.
    """
    seed = _integer(seed, "seed", 1 << 64)
    width = check_width(width)
    stream = check_stream(stream)
    key = (seed & _MASK, seed >> 32)
    per_word = 32 // width
    per_call = 4 * per_word
    mask = (1 << width) - 1
    out = []
    # consecutive indices share a call: keep the last one's words rather than recompute them
    call, words = -1, (0, 0, 0, 0)
    for index in indices:
        i = _integer(index, "element index", 1 << 64)
        c, j = divmod(i, per_call)
        if c != call:
            call = c
            words = philox4x32((c & _MASK, c >> 32, stream, 0), key)
        w, b = divmod(j, per_word)
        out.append((words[w] >> (width * b)) & mask)
    return out
