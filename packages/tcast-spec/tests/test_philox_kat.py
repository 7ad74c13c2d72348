"""Philox4x32-10: Random123 known answers, the element -> (call, word, field) rule of
widths 8 and 16, streams, and Triton's tl.philox (SEMANTICS.md §3.3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import tcast
from tcast import SpecError
from tcast.exact import philox4x32, random_bits

M = 0xFFFFFFFF

# Random123 kat_vectors, philox4x32 with 10 rounds: (counter, key) -> output
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M, M, M, M), (M, M), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize(("counter", "key", "expected"), KAT)
def test_philox4x32_10_random123_known_answers(counter, key, expected):
    assert tuple(philox4x32(counter, key)) == expected
    assert tuple(tcast.philox4x32(counter, key)) == expected


@pytest.mark.parametrize(
    ("counter", "key"),
    [
        ((0, 0, 0), (0, 0)),
        ((0, 0, 0, 0), (0,)),
        ((0, 0, 0, 1 << 32), (0, 0)),
        ((0, 0, 0, 0), (-1, 0)),
    ],
)
def test_philox4x32_bad_words_are_spec_errors(counter, key):
    with pytest.raises(SpecError):
        philox4x32(counter, key)


# Expected bits below come from direct philox4x32 calls with the counter and key written
# out by hand (or from KAT 1), never from random_bits itself.
SEEDS_AND_KEYS = [
    (0, (0, 0)),
    (1 << 32, (0, 1)),
    ((1 << 64) - 1, (M, M)),
    ((0x299F31D0 << 32) | 0xA4093822, (0xA4093822, 0x299F31D0)),
]
# (width K, element index, counter words 0 and 1 of its call, its word, its byte or half)
# K = 8: 16 elements per call, element 16c + 4w + b takes byte b of word w of call c.
# K = 16: 8 elements per call, element 8c + 2w + b takes half b of word w of call c.
INDEX_CALL_WORD_PART = [
    (8, 0, (0, 0), 0, 0),
    (8, 1, (0, 0), 0, 1),
    (8, 3, (0, 0), 0, 3),
    (8, 4, (0, 0), 1, 0),  # the second word of call 0, not call 1
    (8, 15, (0, 0), 3, 3),
    (8, 16, (1, 0), 0, 0),
    (8, 16 * (1 << 32) - 1, (M, 0), 3, 3),  # last element of the last call below 2**32
    (8, 16 * (1 << 32), (0, 1), 0, 0),  # first call with counter word 1 set
    (8, (1 << 36) + 22, (1, 1), 1, 2),
    (8, (1 << 64) - 1, (M, (1 << 28) - 1), 3, 3),  # the last element index
    (16, 0, (0, 0), 0, 0),
    (16, 1, (0, 0), 0, 1),
    (16, 2, (0, 0), 1, 0),
    (16, 7, (0, 0), 3, 1),
    (16, 8, (1, 0), 0, 0),
    (16, 8 * (1 << 32) - 1, (M, 0), 3, 1),
    (16, 8 * (1 << 32), (0, 1), 0, 0),
    (16, (1 << 35) + 13, (1, 1), 2, 1),
    (16, (1 << 64) - 1, (M, (1 << 29) - 1), 3, 1),
]
STREAMS = [0, 1, M]


def parts(words: tuple[int, ...], width: int) -> list[int]:
    """The ``width``-bit fields of ``words``, word by word, least significant field first."""
    mask = (1 << width) - 1
    return [(w >> (width * b)) & mask for w in words for b in range(32 // width)]


def test_seed_0_elements_0_to_15_are_the_bytes_of_kat_1():
    # KAT 1 is the all-zero counter and key: call 0 of stream 0 under seed 0. Its words
    # 0x6627E8D5 0xE169C58D 0xBC57AC4C 0x9B00DBD8, least significant byte first:
    kat_bytes = [0xD5, 0xE8, 0x27, 0x66, 0x8D, 0xC5, 0x69, 0xE1]
    kat_bytes += [0x4C, 0xAC, 0x57, 0xBC, 0xD8, 0xDB, 0x00, 0x9B]
    assert random_bits(0, range(16), 8) == kat_bytes
    assert random_bits(0, [15, 1, 8, 0, 15], 8) == [kat_bytes[k] for k in (15, 1, 8, 0, 15)]


def test_seed_0_elements_0_to_7_of_width_16_are_the_halves_of_kat_1():
    kat_halves = [0xE8D5, 0x6627, 0xC58D, 0xE169, 0xAC4C, 0xBC57, 0xDBD8, 0x9B00]
    assert random_bits(0, range(8), 16) == kat_halves
    assert random_bits(0, [7, 2, 2, 0], 16) == [kat_halves[k] for k in (7, 2, 2, 0)]


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize(("seed", "key"), SEEDS_AND_KEYS)
@pytest.mark.parametrize(("width", "index", "call", "word", "part"), INDEX_CALL_WORD_PART)
def test_element_takes_its_field_of_its_word_of_the_call_at_index_div_128_over_k(
    seed, key, stream, width, index, call, word, part
):
    expected = (philox4x32((*call, stream, 0), key)[word] >> (width * part)) & ((1 << width) - 1)
    assert random_bits(seed, [index], width, stream=stream) == [expected]


@pytest.mark.parametrize(("seed", "key"), SEEDS_AND_KEYS)
@pytest.mark.parametrize("width", [8, 16])
def test_consecutive_elements_across_counter_word_1_take_calls_in_order(seed, key, width):
    per_call = 128 // width
    low = philox4x32((M, 0, 0, 0), key)  # call 2**32 - 1
    high = philox4x32((0, 1, 0, 0), key)  # call 2**32: counter word 1 becomes 1
    edge = per_call << 32
    got = random_bits(seed, range(edge - per_call, edge + per_call), width)
    assert got == parts(low, width) + parts(high, width)
    assert random_bits(seed, range(edge - 2, edge + 1), width) == [
        *parts(low, width)[-2:],
        parts(high, width)[0],
    ]


@pytest.mark.parametrize("stream", [1, 2, 0xDEADBEEF, M])
@pytest.mark.parametrize("width", [8, 16])
def test_the_stream_is_the_third_counter_word(stream, width):
    key = (0xA4093822, 0x299F31D0)
    seed = (0x299F31D0 << 32) | 0xA4093822
    n = 2 * (128 // width)  # two calls
    expected = parts(philox4x32((0, 0, stream, 0), key), width)
    expected += parts(philox4x32((1, 0, stream, 0), key), width)
    assert random_bits(seed, range(n), width, stream=stream) == expected
    assert random_bits(seed, range(n), width, stream=stream) != random_bits(seed, range(n), width)


def test_one_call_serves_128_over_k_elements():
    # element 4 takes byte 0 of word 1 of call 0 (K = 8); a rule of one 32-bit word per
    # element would give it word 0 of call 1, or word 0 of call 4
    key = (0xA4093822, 0x299F31D0)
    seed = (0x299F31D0 << 32) | 0xA4093822
    call0 = philox4x32((0, 0, 0, 0), key)
    assert random_bits(seed, [4], 8) == [call0[1] & 0xFF]
    assert random_bits(seed, [4], 16) == [call0[2] & 0xFFFF]
    # every bit of the call is used once: the 16 bytes (8 halves) rebuild its four words
    b = random_bits(seed, range(16), 8)
    h = random_bits(seed, range(8), 16)
    assert [sum(b[4 * w + k] << (8 * k) for k in range(4)) for w in range(4)] == list(call0)
    assert [h[2 * w] | h[2 * w + 1] << 16 for w in range(4)] == list(call0)


@pytest.mark.parametrize("width", [8, 16])
def test_no_indices_give_no_bits(width):
    assert random_bits(5, [], width) == []


@pytest.mark.parametrize("width", [0, 1, 4, 7, 32, 64, -8, True, "8", None])
def test_width_other_than_8_or_16_is_spec_error(width):
    with pytest.raises(SpecError):
        random_bits(1, [0], width)


def test_width_is_a_required_argument():
    with pytest.raises(TypeError):
        random_bits(1, [0])  # type: ignore[call-arg]


@pytest.mark.parametrize("seed", [-1, 1 << 64, 2**70, True, False, 1.0, "1", None])
@pytest.mark.parametrize("width", [8, 16])
def test_seed_out_of_range_or_wrong_type_is_spec_error(seed, width):
    with pytest.raises(SpecError):
        random_bits(seed, [0], width)


@pytest.mark.parametrize("stream", [-1, 1 << 32, 2**40, True, False, 1.0, "1", None])
def test_stream_out_of_range_or_wrong_type_is_spec_error(stream):
    with pytest.raises(SpecError):
        random_bits(1, [0], 8, stream=stream)


@pytest.mark.parametrize("index", [-1, 1 << 64])
@pytest.mark.parametrize("width", [8, 16])
def test_index_out_of_range_is_spec_error(index, width):
    with pytest.raises(SpecError):
        random_bits(1, [index], width)


@pytest.mark.parametrize("width", [8, 16])
def test_seed_and_stream_bounds_accepted(width):
    assert len(random_bits(0, [0], width)) == 1
    assert len(random_bits((1 << 64) - 1, [0], width)) == 1
    assert len(random_bits(1, [(1 << 64) - 1], width, stream=M)) == 1


# --------------------------------------------------------------------- Triton cross-check
# 7 and 2**40 + 7 share the low key word: only the high word (seed >> 32) tells them apart
TRITON_SEEDS = [12345, 7, (1 << 40) + 7]
TRITON_STREAMS = [0, 1, M]
# first element indices: 0, and 128 elements before the call counter's second word becomes 1
# (element 2**36 for K = 8, 2**35 for K = 16), which Triton reaches through int64 offsets
TRITON_BASES = {8: [0, (1 << 36) - 128], 16: [0, (1 << 35) - 128]}
TRITON_N = 256
_TRITON_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    assert os.environ.get("TRITON_INTERPRET") == "1"
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(out_ptr, seed, base, stream, K: tl.constexpr, N: tl.constexpr):
        pos = tl.arange(0, N)
        i = base + pos.to(tl.int64)  # element indices
        E: tl.constexpr = 128 // K  # elements per call
        P: tl.constexpr = 32 // K  # elements per word
        c = i // E
        j = i % E
        w = j // P
        b = (j % P).to(tl.uint32)
        c_lo = (c & 0xFFFFFFFF).to(tl.uint32)
        c_hi = (c >> 32).to(tl.uint32)
        st = (c * 0 + stream).to(tl.uint32)  # the stream in every lane, 32 bits
        r0, r1, r2, r3 = tl.philox(seed, c_lo, c_hi, st, c_lo * 0)
        word = tl.where(w == 0, r0, tl.where(w == 1, r1, tl.where(w == 2, r2, r3)))
        field = (word >> (b * K)) & ((1 << K) - 1)
        tl.store(out_ptr + pos, field.to(tl.int32))

    cases, n = json.loads(sys.argv[1])
    result = {}
    for seed, base, stream, k in cases:
        out = torch.zeros(n, dtype=torch.int32)
        kernel[(1,)](out, seed, base, stream, K=k, N=n)
        result[f"{seed} {base} {stream} {k}"] = out.tolist()
    print("RESULT " + json.dumps(result))
    """
)


def _triton_philox(cases: list[tuple[int, int, int, int]], n: int) -> dict[str, list[int]]:
    # The interpreter must be chosen before triton is imported: run it in a fresh process.
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _TRITON_SCRIPT, json.dumps([cases, n])],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, (
        f"the Triton CPU interpreter did not run (rc={proc.returncode}):\n"
        f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return json.loads(lines[-1][len("RESULT ") :])


def test_random_bits_equal_fields_of_triton_philox_at_counter_c_lo_c_hi_stream_0():
    cases = [
        (seed, base, stream, k)
        for k, bases in TRITON_BASES.items()
        for seed in TRITON_SEEDS
        for base in bases
        for stream in TRITON_STREAMS
    ]
    got = _triton_philox(cases, TRITON_N)
    assert len(got) == len(cases)
    for seed, base, stream, k in cases:
        theirs = got[f"{seed} {base} {stream} {k}"]
        assert len(theirs) == TRITON_N
        ours = random_bits(seed, range(base, base + TRITON_N), k, stream=stream)
        pairs = enumerate(zip(ours, theirs, strict=True))
        bad = [(base + i, hex(a), hex(b)) for i, (a, b) in pairs if a != b]
        assert not bad, (seed, base, stream, k, bad[:8])
    assert got["7 0 0 8"] != got[f"{(1 << 40) + 7} 0 0 8"]
    assert got["7 0 0 8"] != got["7 0 1 8"]
