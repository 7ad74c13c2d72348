"""Benchmark of tcast-torch on a GPU (not a test): virtual and actual MXFP8/MXFP4/NVFP4.

For each size (bfloat16, 8192 x 8192 and 16384 x 16384) and cast, eager and
``torch.compile``d tcast-torch are timed with CUDA events (median of ``--repeat`` runs after
warm-up), beside torchao's ``to_mx`` compiled on the same input (when torchao imports) and a
device-to-device copy of the input measured in the same run. GB/s counts bytes read plus
bytes written. Prints a Markdown table.

    python packages/tcast-torch/bench/bench_torch.py [--repeat 20] [--sizes 8192,16384]
"""

from __future__ import annotations

import argparse
import statistics

import torch

import tcast
import tcast_torch


def _time(fn, x, repeat: int) -> float:
    for _ in range(3):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(x)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return statistics.median(times)


def _bytes_out(n: int, name: str, castmode: str) -> int:
    dt = tcast.datatype(name)
    if castmode == "virtual":
        return 2 * n
    elem = n  # actual: one uint8 code per element
    tiles = dt.sspec.tiles[0].size
    return elem + n // tiles * (dt.sspec.scale.bits // 8)


def main() -> None:
    """Time every cast and print the table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--sizes", default="8192,16384")
    args = ap.parse_args()
    try:
        from torchao.prototype.mx_formats.mx_tensor import to_mx
    except Exception as err:  # torchao is optional
        to_mx = None
        print(f"torchao unavailable: {type(err).__name__}: {err}")
    print(f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"tcast-torch {tcast_torch.__version__}")
    print("| size | cast | mode | eager ms | compiled ms | compiled GB/s | compiled / copy | "
          "eager / compiled | torchao to_mx compiled ms | tcast speedup vs torchao |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        x = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        n = x.numel()
        t_copy = _time(lambda v: v.clone(), x, args.repeat)
        for name, ao in (("mxfp8", torch.float8_e4m3fn), ("mxfp4", torch.float4_e2m1fn_x2),
                         ("nvfp4", None)):
            for castmode in ("virtual", "actual"):
                def run(v, name=name, castmode=castmode):
                    return tcast_torch.cast(v, name, castmode=castmode)

                t_eager = _time(run, x, args.repeat)
                comp = torch.compile(run)  # torch 2.11 breaks the graph at Fraction constants
                t_comp = _time(comp, x, args.repeat)
                gbs = (2 * n + _bytes_out(n, name, castmode)) / t_comp / 1e9
                t_ao = ratio = "—"
                if to_mx is not None and ao is not None and castmode == "actual":
                    ao_fn = torch.compile(lambda v, ao=ao: to_mx(v, ao, 32))
                    try:
                        ta = _time(ao_fn, x, args.repeat)
                        t_ao, ratio = f"{ta * 1e3:.3f}", f"{ta / t_comp:.2f}x"
                    except Exception as err:
                        t_ao = f"failed: {type(err).__name__}"
                print(f"| {size}x{size} | {name} | {castmode} | {t_eager * 1e3:.3f} | "
                      f"{t_comp * 1e3:.3f} | {gbs:.0f} | {t_comp / t_copy:.2f} | "
                      f"{t_eager / t_comp:.2f} | {t_ao} | {ratio} |", flush=True)
        print(f"| {size}x{size} | copy | d2d | {t_copy * 1e3:.3f} | | "
              f"{2 * 2 * n / t_copy / 1e9:.0f} | 1.00 | | | |", flush=True)


if __name__ == "__main__":
    main()
