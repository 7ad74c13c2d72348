"""Where stochastic rounding's time goes: Philox alone, and how its words reach the elements.

Not a test. On the GPU, for a square bfloat16 input, times (``do_bench`` medians, L2 flushed)
beside a device-to-device copy of the input:

* ``philox only``: one ``tl.randint4x`` per four elements, the words xor-reduced (one word
  written per program): the integer cost of the generator SEMANTICS.md §3.3 prescribes, with
  no element traffic. Its ratio to the copy bounds what any stochastic cast can reach.
* ``lanes``: a toy stochastic rounding to bfloat16 (add 16 random bits, truncate) with the
  input loaded as ``[n/4, 4]``, so that word ``j`` of counter ``k`` meets element ``4k+j`` by
  a select the compiler resolves per register (no data movement).
* ``join``: the same toy with the words interleaved by ``join``/``reshape`` into a flat
  ``[n]`` block, as ``_kernels.random_runs`` does.
* ``no random``: the toy with a constant word: memory traffic plus the rounding arithmetic.
* the engine's MXFP8 actual cast, round-to-nearest-even and stochastic from a seed.

Ratios are the copy's time over the row's time (for the toys, which move the copy's bytes,
that is the bandwidth ratio).

    python packages/tcast-triton/bench/philox_floor.py [--size 16384] [--rep 100]
"""

from __future__ import annotations

import argparse

import torch
import triton
import triton.language as tl
from triton.testing import do_bench

import tcast_triton

BLOCK = 4096


@triton.jit
def _philox_only(seed, out_ptr, BLOCK4: tl.constexpr):
    pid = tl.program_id(0)
    ctr = pid * BLOCK4 + tl.arange(0, BLOCK4)
    r0, r1, r2, r3 = tl.randint4x(seed, ctr)
    tl.store(out_ptr + pid, tl.xor_sum(r0 ^ r1 ^ r2 ^ r3, 0))


@triton.jit
def _round16(x, r):
    b = x.to(tl.int32, bitcast=True) + (r.to(tl.int32, bitcast=True) & 0xFFFF)
    return (b >> 16).to(tl.int16)


@triton.jit
def _toy_lanes(x_ptr, y_ptr, seed, BLOCK4: tl.constexpr, RANDOM: tl.constexpr):
    pid = tl.program_id(0)
    k = pid * BLOCK4 + tl.arange(0, BLOCK4)
    j = tl.arange(0, 4)[None, :]
    offs = k[:, None] * 4 + j
    x = tl.load(x_ptr + offs).to(tl.float32)
    if RANDOM:
        r0, r1, r2, r3 = tl.randint4x(seed, k)
        r = tl.where(
            j == 0,
            r0[:, None],
            tl.where(j == 1, r1[:, None], tl.where(j == 2, r2[:, None], r3[:, None])),
        )
    else:
        r = tl.full(offs.shape, 0x8000, tl.uint32)
    tl.store(y_ptr + offs, _round16(x, r))


@triton.jit
def _toy_join(x_ptr, y_ptr, seed, BLOCK4: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK4 * 4 + tl.arange(0, BLOCK4 * 4)
    x = tl.load(x_ptr + offs).to(tl.float32)
    k = pid * BLOCK4 + tl.arange(0, BLOCK4)
    r0, r1, r2, r3 = tl.randint4x(seed, k)
    r = tl.reshape(tl.join(tl.join(r0, r2), tl.join(r1, r3)), (BLOCK4 * 4,))
    tl.store(y_ptr + offs, _round16(x, r))


def main() -> None:
    """Time the rows above at one size and print them beside the copy."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=16384)
    ap.add_argument("--rep", type=int, default=100)
    a = ap.parse_args()
    n = a.size * a.size
    x = torch.randn(a.size, a.size, device="cuda", dtype=torch.bfloat16)
    y = torch.empty(n, device="cuda", dtype=torch.int16)
    words = torch.empty(n // BLOCK, device="cuda", dtype=torch.int32)
    grid = (n // BLOCK,)
    b4 = BLOCK // 4
    dev = torch.cuda.get_device_name()
    print(f"# {dev}, torch {torch.__version__}, triton {triton.__version__}")
    print(f"# {a.size}x{a.size} bfloat16, BLOCK {BLOCK}, do_bench rep {a.rep} ms, median")

    def ms(fn) -> float:
        return do_bench(fn, rep=a.rep, return_mode="median")

    copy = ms(lambda: x.clone())
    rows = [
        ("philox only", lambda: _philox_only[grid](7, words, BLOCK4=b4, num_warps=8)),
        ("toy, no random", lambda: _toy_lanes[grid](x, y, 7, BLOCK4=b4, RANDOM=False)),
        ("toy, lanes", lambda: _toy_lanes[grid](x, y, 7, BLOCK4=b4, RANDOM=True)),
        ("toy, join", lambda: _toy_join[grid](x, y, 7, BLOCK4=b4)),
        ("mxfp8 actual even", lambda: tcast_triton.cast(x, "mxfp8", castmode="actual")),
        (
            "mxfp8 actual stochastic",
            lambda: tcast_triton.cast(
                x, "mxfp8", castmode="actual", roundmode="stochastic", seed=7
            ),
        ),
        (
            "mxfp8 virtual stochastic",
            lambda: tcast_triton.cast(x, "mxfp8", roundmode="stochastic", seed=7),
        ),
    ]
    print(f"{'what':28s} {'ms':>8s} {'copy/this':>10s}")
    print(f"{'copy (x.clone())':28s} {copy:8.4f} {1.0:10.2f}")
    for label, fn in rows:
        t = ms(fn)
        print(f"{label:28s} {t:8.4f} {copy / t:10.2f}")


if __name__ == "__main__":
    main()
