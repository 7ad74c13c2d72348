"""Kernel-level profile of tcast_torch casts on a GPU (a diagnostic, not a test).

    python packages/tcast-torch/bench/profile_torch.py [--size 8192]

For each cast, eager and compiled: the CUDA kernels one call launches, with their times
(torch.profiler), so that unfused passes and extra traffic show up.
"""

from __future__ import annotations

import argparse

import torch
from torch.profiler import ProfilerActivity, profile

import tcast_torch

CASES = [("mxfp8", "virtual"), ("mxfp8", "actual"), ("mxfp4", "actual"), ("nvfp4", "virtual")]


def _kernels(fn, x) -> list[tuple[str, float]]:
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(x)
        torch.cuda.synchronize()
    out = []
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            out.append((ev.name, ev.device_time_total))
    return out


def main() -> None:
    """Profile every case."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args()
    x = torch.randn(args.size, args.size, device="cuda", dtype=torch.bfloat16)
    print(f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__}, bf16 {args.size}^2")
    for name, castmode in CASES:

        def run(v, name=name, castmode=castmode):
            return tcast_torch.cast(v, name, castmode=castmode)

        for label, fn in (("eager", run), ("compiled", torch.compile(run))):
            ks = _kernels(fn, x)
            total = sum(t for _, t in ks)
            print(f"{name} {castmode} {label}: {len(ks)} kernels, {total:.0f} us")
            for k, t in sorted(ks, key=lambda kt: -kt[1])[: args.top]:
                print(f"    {t:8.1f} us  {k[:110]}")


if __name__ == "__main__":
    main()
