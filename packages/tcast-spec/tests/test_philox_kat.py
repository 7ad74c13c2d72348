"""Philox4x32-10: Random123 known answers, and Triton's tl.randint as a cross-check."""

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


def test_random_bits_is_word0_of_philox_with_split_index_and_seed():
    # element i, seed s: word 0 of philox4x32((i mod 2**32, i >> 32, 0, 0), (s mod 2**32, s >> 32))
    # (KAT 1 is the all-zero counter and key: index 0 with seed 0)
    assert random_bits(0, [0]) == [0x6627E8D5]
    seed = (0x299F31D0 << 32) | 0xA4093822
    idx = (0x85A308D3 << 32) | 0x243F6A88
    # counter words 2 and 3 are 0, so this is not KAT 3; word 0 of the direct call
    direct = philox4x32((0x243F6A88, 0x85A308D3, 0, 0), (0xA4093822, 0x299F31D0))
    assert random_bits(seed, [idx]) == [direct[0]]
    assert random_bits(M, [M, 1 << 32]) == [
        philox4x32((M, 0, 0, 0), (M, 0))[0],
        philox4x32((0, 1, 0, 0), (M, 0))[0],
    ]
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
_TRITON_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    assert os.environ.get("TRITON_INTERPRET") == "1"
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(out_ptr, seed, N: tl.constexpr):
        offs = tl.arange(0, N)
        tl.store(out_ptr + offs, tl.randint(seed, offs))

    result = {}
    for seed in json.loads(sys.argv[1]):
        out = torch.zeros(256, dtype=torch.int32)
        kernel[(1,)](out, seed, N=256)
        result[str(seed)] = [w & 0xFFFFFFFF for w in out.tolist()]
    print("RESULT " + json.dumps(result))
    """
)


def _triton_randint(seeds: list[int]) -> dict[int, list[int]]:
    # The interpreter must be chosen before triton is imported: run it in a fresh process.
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _TRITON_SCRIPT, json.dumps(seeds)],
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
    return {int(k): v for k, v in json.loads(lines[-1][len("RESULT ") :]).items()}


def test_random_bits_equal_triton_randint_under_the_interpreter():
    got = _triton_randint(TRITON_SEEDS)
    assert set(got) == set(TRITON_SEEDS)
    for seed in TRITON_SEEDS:
        theirs = got[seed]
        assert len(theirs) == 256
        ours = random_bits(seed, range(256))
        pairs = enumerate(zip(ours, theirs, strict=True))
        bad = [(i, hex(a), hex(b)) for i, (a, b) in pairs if a != b]
        assert not bad, (seed, bad[:8])
    assert got[7] != got[(1 << 40) + 7]
