"""Philox4x32-10 over tensors of counters (SEMANTICS.md §3.3), on the input's device.

Element ``i`` takes ``K`` bits of the call ``i // (128 / K)`` on the cast's stream (bits
``[K b, K b + K)`` of word ``w``, where ``j = i mod (128 / K)``, ``w = j // (32 / K)``,
``b = j mod (32 / K)``): the little-endian bytes (``K`` = 8) or halves (16) of the call's
four words in order. The contiguous stream (:func:`philox_stream`, behind
:func:`random_bits` and seeded casts) makes each call once for ``128 / K`` elements;
:func:`philox_bits` serves arbitrary indices with one call per element.

The casts take the bits as 32-bit words ``r << (32 - K)`` (int32 patterns): the codec's
rule ``floor(frac * 2**32) + word >= 2**32`` is then §3.2's ``floor(frac * 2**K) + r >=
2**K``.

The 32 x 32 -> 64-bit products are formed from 16-bit halves of the round multiplier in
int64 (each partial product is below 2**48), because the full product of a 32-bit counter
and 0xD2511F53 exceeds the int64 range.
"""

from __future__ import annotations

import math
import numbers

import torch

from tcast import SpecError
from tcast.kit import normalize_seed
from tcast.philox import check_stream, check_width

__all__ = [
    "philox_bits",
    "philox_gather",
    "philox_stream",
    "random_bits",
    "rbits_words",
    "words_rbits",
]

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF
# Calls per piece of a stream: each int64 working tensor stays at 8 MiB. From 32 MiB, glibc
# maps fresh pages for every allocation; their page faults take most of the time of a
# stream in one tensor of 2**22 counters. Much smaller pieces (2**16 calls) are no faster
# alone and many times slower when another process shares the cores, as each small
# multi-threaded operation waits for all of its threads.
_CALLS = 1 << 20
# On the CPU a piece's dozen live int64 tensors are memory the cast keeps besides its
# input: 2**17 calls keep them at 1 MiB each (about 12 MiB in all, where 2**20 calls keep
# about 100 MiB whatever the input's size).
_CPU_CALLS = 1 << 17
#: Largest flat index + 1 of the stream (the indices are int64).
_END = 1 << 63


def _calls_per_piece(device: torch.device) -> int:
    return _CPU_CALLS if device.type == "cpu" else _CALLS


def _check_seed(seed: object) -> int:
    # the kit's rule: any integer type in [0, 2**64), as every engine's cast accepts
    if seed is None:
        raise SpecError("seed None must be an int in [0, 2**64)")
    return normalize_seed(seed)


def _mulhilo(a: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(high, low) 32-bit words of a * m, for int64 ``a`` in [0, 2**32) and a 32-bit ``m``."""
    p_lo = a * (m & 0xFFFF)  # < 2**48
    t = a * (m >> 16) + (p_lo >> 16)  # a * m = t * 2**16 + (p_lo mod 2**16), t < 2**49
    return t >> 16, ((t & 0xFFFF) << 16) | (p_lo & 0xFFFF)


def _philox(call: torch.Tensor, k0: int, k1: int, stream: int) -> list[torch.Tensor]:
    """The four words (int64 in [0, 2**32)) at counters (call mod 2**32, call >> 32, stream, 0)."""
    c0 = call & _MASK
    c1 = call >> 32
    c2 = torch.full_like(c0, stream)
    c3 = torch.zeros_like(c0)
    for _ in range(10):
        hi0, lo0 = _mulhilo(c0, _M0)
        hi1, lo1 = _mulhilo(c2, _M1)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
    return [c0, c1, c2, c3]


def _int32_pattern(word: torch.Tensor) -> torch.Tensor:
    """int64 words in [0, 2**32) as int32 two's-complement patterns (exact, no wrapping)."""
    return ((word ^ 0x80000000) - 0x80000000).to(torch.int32)


# The generators are custom operators, so that torch.compile sees each as one opaque kernel.
# Traced as plain operations, the ten rounds reach Inductor as a chain of a few hundred int64
# operations in which every round uses each word several times. Inductor inlines a chain
# that reads no memory (the counters come from arange) wherever it is used, even once it
# is stored, and its lowering re-expands every use: the work grew two- to fourfold a
# round, and a compiled stochastic cast never finished compiling. As operators they run
# the eager code below on every path, compiled or not.
@torch.library.custom_op("tcast_torch::philox_stream_words", mutates_args=())
def _stream_words(
    key0: int, key1: int, first: int, calls: int, stream: int, device: torch.device
) -> torch.Tensor:
    """The four int32 words of Philox calls ``first .. first + calls - 1``: (calls, 4).

    Internal: the arguments are not checked (``key0``, ``key1``, ``stream`` in [0, 2**32),
    ``first`` and ``calls`` non-negative, ``first + calls`` at most ``2**60 + 1``); the public
    entry is :func:`tcast_torch.random_bits`.
    """
    words = torch.empty((calls, 4), dtype=torch.int32, device=device)
    step = _calls_per_piece(words.device)
    for lo in range(0, calls, step):
        call = torch.arange(
            first + lo, first + min(lo + step, calls), dtype=torch.int64, device=device
        )
        piece = words[lo : lo + call.numel()]
        for k, w in enumerate(_philox(call, key0, key1, stream)):
            piece[:, k] = _int32_pattern(w)
    return words


@_stream_words.register_fake
def _stream_words_fake(key0, key1, first, calls, stream, device):
    return torch.empty((calls, 4), dtype=torch.int32, device=device)


@torch.library.custom_op("tcast_torch::philox_index_words", mutates_args=())
def _index_words(
    key0: int, key1: int, index: torch.Tensor, width: int, stream: int
) -> torch.Tensor:
    """The codec word (``r << (32 - width)``, int32) of each flat element index.

    Internal: the arguments are not checked (``key0``, ``key1``, ``stream`` in [0, 2**32),
    ``width`` 8 or 16, ``index`` int64 and non-negative); use :func:`tcast_torch.random_bits`.
    """
    flat = index.reshape(-1)
    out = torch.empty(flat.shape, dtype=torch.int32, device=index.device)
    step = _calls_per_piece(index.device)
    per_word = 32 // width
    shift_e = per_word.bit_length() - 1  # log2 of the elements per word
    for lo in range(0, flat.numel(), step):
        idx = flat[lo : lo + step]
        j = idx & (4 * per_word - 1)
        words = torch.stack(_philox(idx >> (shift_e + 2), key0, key1, stream), dim=-1)
        word = torch.gather(words, -1, (j >> shift_e).unsqueeze(-1)).squeeze(-1)
        r = (word >> ((j & (per_word - 1)) * width)) & ((1 << width) - 1)
        out[lo : lo + idx.numel()] = _int32_pattern(r << (32 - width))
    return out.reshape(index.shape)


@_index_words.register_fake
def _index_words_fake(key0, key1, index, width, stream):
    return torch.empty(index.shape, dtype=torch.int32, device=index.device)


def philox_bits(seed: int, index: torch.Tensor, width: int, stream: int = 0) -> torch.Tensor:
    """The seeded stochastic-rounding words of arbitrary int64 flat indices (int32 patterns).

    One Philox call per element; for a contiguous range :func:`philox_stream` makes each
    call once for ``128 / width`` elements.

    Args:
        seed: the seed, in [0, 2**64) (validated by the caller).
        index: int64 tensor of flat element indices (non-negative).
        width: ``K``, 8 or 16 (validated by the caller).
        stream: the Philox stream (validated by the caller).

    Returns:
        int32 tensor of index's shape: each element's ``r << (32 - width)``.
    """
    return _index_words(seed & _MASK, seed >> 32, index, width, stream)


def _elements(words: torch.Tensor, width: int) -> torch.Tensor:
    """The ``width``-bit integers of (calls, 4) int32 words in element order, as int32."""
    if width == 8:
        return words.view(torch.uint8).reshape(-1).to(torch.int32)
    return words.view(torch.int16).reshape(-1).to(torch.int32) & 0xFFFF


def philox_stream(
    seed: int,
    start: int,
    count: int,
    device: torch.device | str | None = None,
    width: int = 8,
    stream: int = 0,
) -> torch.Tensor:
    """The seeded stochastic-rounding words of flat indices ``start .. start + count - 1``.

    Each Philox call is made once and gives ``128 / width`` consecutive elements their bits.

    Args:
        seed: the seed, in [0, 2**64) (validated by the caller).
        start: the first flat index (a non-negative int, validated by the caller).
        count: how many elements.
        device: where to generate the bits (default: the CPU).
        width: ``K``, 8 or 16.
        stream: the Philox stream, in [0, 2**32).

    Returns:
        1-D int32 tensor of ``count`` codec words ``r << (32 - width)``.

    Raises:
        SpecError: if the seed, ``start``, ``count``, ``width`` or ``stream`` is out of range
            (checked where they are Python ints; a traced seed is the cast's, checked).
    """
    if isinstance(seed, int):
        seed = _check_seed(seed)
    if isinstance(start, int) and isinstance(count, int):
        start = _check_range(start, count)
    width, stream = check_width(width), check_stream(stream)
    per_call = 128 // width
    first, end = start // per_call, (start + count + per_call - 1) // per_call
    device = torch.device("cpu") if device is None else torch.device(device)
    words = _stream_words(seed & _MASK, seed >> 32, first, end - first, stream, device)
    skip = start % per_call  # an unaligned start drops the first elements of the first call
    r = _elements(words, width)[skip : skip + count]
    return r << (32 - width)


def words_rbits(words: torch.Tensor, width: int) -> torch.Tensor:
    """Codec words ``r << (32 - width)`` back as the ``width``-bit integers (uint8 or int16).

    The form a request holds explicit bits in (``_run.check_rbits``).
    """
    r = (words >> (32 - width)) & ((1 << width) - 1)  # the arithmetic shift's sign bits off
    return r.to(torch.uint8 if width == 8 else torch.int16)


def rbits_words(rbits: torch.Tensor, width: int) -> torch.Tensor:
    """Explicit ``width``-bit random integers (uint8/int8 or uint16/int16) as codec words.

    Returns:
        int32 ``r << (32 - width)`` of ``rbits``'s shape (DTensors stay DTensors).
    """
    if width == 8:
        r = rbits.view(torch.uint8).to(torch.int32)
    else:
        r = rbits.view(torch.int16).to(torch.int32) & 0xFFFF
    return r << (32 - width)


def _check_range(start: object, count: int) -> int:
    """``start`` as an int, after checking that the flat indices from it lie in the stream."""
    if isinstance(start, bool) or not isinstance(start, numbers.Integral) or start < 0:
        raise SpecError(f"start {_cut(start)} must be a non-negative int")
    start = int(start)
    if start + count > _END:
        raise SpecError(
            f"flat indices {start} + {count} reach past 2**63: start + count must be at most 2**63"
        )
    return start


def _dims(shape: object) -> tuple[int, ...]:
    """A result shape as a tuple of ints >= 0 (any integer type; an int is one dimension)."""
    items = (shape,) if isinstance(shape, numbers.Integral) else shape
    try:
        dims = tuple(items)
        bad = any(isinstance(n, bool) or not isinstance(n, numbers.Integral) for n in dims)
    except TypeError:
        bad = True
    if bad or any(int(n) < 0 for n in dims):
        raise SpecError(
            f"shape {_cut(shape)} must be a non-negative int or a sequence of non-negative ints"
        )
    return tuple(int(n) for n in dims)


def _cut(v: object) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def philox_gather(seed: int, index: torch.Tensor, width: int, stream: int = 0) -> torch.Tensor:
    """:func:`philox_bits` of int64 flat indices, from the stream over their range if compact.

    Where the indices span at most twice their count (the block rows of 2-D tiles, a piece
    of an input's rows), the stream over ``min .. max`` makes each Philox call once for
    ``128 / width`` elements; scattered indices take one call each. Same words either way.

    Args:
        seed: the seed, in [0, 2**64) (validated by the caller).
        index: int64 tensor of flat element indices (non-negative).
        width: ``K``, 8 or 16.
        stream: the Philox stream.

    Returns:
        int32 tensor of index's shape (codec words).
    """
    if index.numel() == 0:
        return torch.empty(index.shape, dtype=torch.int32, device=index.device)
    lo, hi = int(index.min()), int(index.max())
    if hi - lo < 2 * index.numel():
        return philox_stream(seed, lo, hi - lo + 1, index.device, width, stream)[index - lo]
    return philox_bits(seed, index, width, stream)


def random_bits(
    seed: int,
    shape: int | tuple[int, ...] | torch.Size,
    start: int = 0,
    device: torch.device | str | None = None,
    *,
    width: int,
    stream: int = 0,
) -> torch.Tensor:
    """The random integers seeded stochastic rounding uses, for flat indices from ``start``.

    Element ``i`` (C order) of the result holds the ``width``-bit integer of flat index
    ``start + i`` (SEMANTICS.md §3.3): the same as ``tcast.random_bits`` and
    ``tcast_ref.random_bits``.

    Args:
        seed: an int in [0, 2**64).
        shape: the result's shape (an int for a 1-D stream).
        start: the first flat index.
        device: where to generate the bits (default: the CPU).
        width: ``K``, 8 or 16 (``tcast.rbits_width`` of the datatype).
        stream: the Philox stream, in [0, 2**32).

    Returns:
        torch.uint8 (``width`` 8) or torch.uint16 (16) tensor of ``shape``: usable as a
        cast's ``rbits``.

    Raises:
        SpecError: if the seed, the shape, ``start``, ``width`` or ``stream`` is out of range.
    """
    seed = _check_seed(seed)
    dims = _dims(shape)
    count = math.prod(dims)
    start = _check_range(start, count)
    width = check_width(width)
    r = words_rbits(philox_stream(seed, start, count, device, width, stream), width)
    return (r if width == 8 else r.view(torch.uint16)).reshape(dims)
