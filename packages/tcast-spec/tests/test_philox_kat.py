"""Philox4x32-10: Random123 known answers, the four-words rule, Triton's tl.randint4x."""

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


# Expected words below come from direct philox4x32 calls with the counter and key written
# out by hand (or from KAT 1), never from random_bits itself.
SEEDS_AND_KEYS = [
    (0, (0, 0)),
    (1 << 32, (0, 1)),
    ((1 << 64) - 1, (M, M)),
    ((0x299F31D0 << 32) | 0xA4093822, (0xA4093822, 0x299F31D0)),
]
# element index -> (counter words 0 and 1 of its call, the word it takes)
INDEX_CALL_WORD = [
    (0, (0, 0), 0),
    (3, (0, 0), 3),
    (4, (1, 0), 0),
    (4 * (1 << 32) - 1, (M, 0), 3),  # last element of the last call below 2**32
    (4 * (1 << 32), (0, 1), 0),  # first call with counter word 1 set
    ((1 << 34) + 3, (0, 1), 3),
    ((1 << 34) + 5, (1, 1), 1),
    ((1 << 64) - 1, (M, (1 << 30) - 1), 3),  # the last element index
]


def test_seed_0_elements_0_to_3_are_the_four_words_of_kat_1():
    # KAT 1 is the all-zero counter and key: call 0 under seed 0, one word per element
    assert random_bits(0, range(4)) == list(KAT[0][2])
    assert random_bits(0, [3, 1, 2, 0, 3]) == [KAT[0][2][k] for k in (3, 1, 2, 0, 3)]


@pytest.mark.parametrize(("seed", "key"), SEEDS_AND_KEYS)
@pytest.mark.parametrize(("index", "call", "word"), INDEX_CALL_WORD)
def test_element_i_takes_word_i_mod_4_of_the_call_at_counter_i_div_4(seed, key, index, call, word):
    expected = philox4x32((*call, 0, 0), key)[word]
    assert random_bits(seed, [index]) == [expected]


@pytest.mark.parametrize(("seed", "key"), SEEDS_AND_KEYS)
def test_consecutive_elements_across_the_2_to_the_34_boundary_take_calls_in_order(seed, key):
    low = philox4x32((M, 0, 0, 0), key)  # call 2**32 - 1: elements 2**34 - 4 .. 2**34 - 1
    high = philox4x32((0, 1, 0, 0), key)  # call 2**32: elements 2**34 .. 2**34 + 3
    edge = 1 << 34
    assert random_bits(seed, range(edge - 4, edge + 4)) == [*low, *high]
    assert random_bits(seed, range(edge - 2, edge + 1)) == [low[2], low[3], high[0]]


def test_the_counter_is_the_element_index_divided_by_4_not_the_element_index():
    # element 1 takes word 1 of call 0 (schema version 1 took word 0 of the call at counter i)
    key = (0xA4093822, 0x299F31D0)
    seed = (0x299F31D0 << 32) | 0xA4093822
    assert random_bits(seed, [1]) == [philox4x32((0, 0, 0, 0), key)[1]]
    assert random_bits(seed, [1]) != [philox4x32((1, 0, 0, 0), key)[0]]


def test_no_indices_give_no_words():
    assert random_bits(5, []) == []


@pytest.mark.parametrize("seed", [-1, 1 << 64, 2**70, True, False, 1.0, "1", None])
def test_seed_out_of_range_or_wrong_type_is_spec_error(seed):
    with pytest.raises(SpecError):
        random_bits(seed, [0])


@pytest.mark.parametrize("index", [-1, 1 << 64])
def test_index_out_of_range_is_spec_error(index):
    with pytest.raises(SpecError):
        random_bits(1, [index])


def test_seed_bounds_accepted():
    assert len(random_bits(0, [0])) == 1
    assert len(random_bits((1 << 64) - 1, [0])) == 1


# --------------------------------------------------------------------- Triton cross-check
# 7 and 2**40 + 7 share the low key word: only the high word (seed >> 32) tells them apart
TRITON_SEEDS = [12345, 7, (1 << 40) + 7]
# first element indices: 0, and 128 elements either side of 2**34 (the call counter's
# second word becomes 1 there), which Triton reaches through int64 offsets
TRITON_BASES = [0, (1 << 34) - 128]
TRITON_N = 256
_TRITON_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    assert os.environ.get("TRITON_INTERPRET") == "1"
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(out_ptr, seed, base, N: tl.constexpr):
        pos = tl.arange(0, N)
        i = base + pos.to(tl.int64)  # element indices
        r0, r1, r2, r3 = tl.randint4x(seed, i // 4)
        k = i % 4
        word = tl.where(k == 0, r0, tl.where(k == 1, r1, tl.where(k == 2, r2, r3)))
        tl.store(out_ptr + pos, word.to(tl.int32, bitcast=True))

    seeds, bases, n = json.loads(sys.argv[1])
    result = {}
    for seed in seeds:
        for base in bases:
            out = torch.zeros(n, dtype=torch.int32)
            kernel[(1,)](out, seed, base, N=n)
            result[f"{seed} {base}"] = [w & 0xFFFFFFFF for w in out.tolist()]
    print("RESULT " + json.dumps(result))
    """
)


def _triton_randint4x(seeds: list[int], bases: list[int], n: int) -> dict[str, list[int]]:
    # The interpreter must be chosen before triton is imported: run it in a fresh process.
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _TRITON_SCRIPT, json.dumps([seeds, bases, n])],
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


def test_random_bits_equal_word_i_mod_4_of_triton_randint4x_of_i_div_4():
    got = _triton_randint4x(TRITON_SEEDS, TRITON_BASES, TRITON_N)
    assert len(got) == len(TRITON_SEEDS) * len(TRITON_BASES)
    for seed in TRITON_SEEDS:
        for base in TRITON_BASES:
            theirs = got[f"{seed} {base}"]
            assert len(theirs) == TRITON_N
            ours = random_bits(seed, range(base, base + TRITON_N))
            pairs = enumerate(zip(ours, theirs, strict=True))
            bad = [(base + i, hex(a), hex(b)) for i, (a, b) in pairs if a != b]
            assert not bad, (seed, bad[:8])
    assert got["7 0"] != got[f"{(1 << 40) + 7} 0"]
