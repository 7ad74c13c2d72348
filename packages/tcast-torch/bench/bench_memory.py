"""Peak memory and time of CPU casts by cast mode and size (a benchmark, not a test).

For each engine, cast mode and size (float32 inputs of 2**k values), a fresh process makes
the input, casts a small tensor once (imports, memoized rules), resets the kernel's record
of its peak resident memory (``/proc/self/clear_refs``), casts the input once and reads the
peak back (``VmHWM``): the extra memory of the cast, output included, over the input's
bytes. It then times ``--repeat`` more casts (the median, ns per element). Every cell is
measured in ``--trials`` fresh processes and the table gives the median of each number.
Where the peak cannot be reset, ``ru_maxrss`` growth is used instead (a lower bound) and the
table says so. ``--roundmode stochastic`` casts with seed 5 (Philox bits by flat index).

    python packages/tcast-torch/bench/bench_memory.py [--sizes 20,22,24,26]
        [--modes virtual,actual,compress] [--dtype mxfp4[,nvfp4,...]] [--engines torch,ref]
        [--roundmode even|stochastic] [--repeat 3] [--trials 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

_MODES = ("virtual", "actual", "compress")


def _rss_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux 4.0+); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def child(
    engine: str, castmode: str, log2n: int, dtype: str, repeat: int, seed: int, roundmode: str
) -> dict:
    """One measurement, in this (fresh) process: a dict of the numbers."""
    import numpy as np
    import torch

    import tcast

    n = 1 << log2n
    kw = {"roundmode": roundmode, "seed": 5} if roundmode == "stochastic" else {}
    if engine == "torch":
        import tcast_torch

        x = torch.randn(n, generator=torch.Generator().manual_seed(seed)).reshape(-1, 1024)

        def cast(v):
            return tcast_torch.cast(v, dtype, castmode=castmode, compile=False, **kw)

        small = x[:4]
    else:
        x = np.random.default_rng(seed).standard_normal(n, dtype=np.float32).reshape(-1, 1024)

        def cast(v):
            return tcast.cast(v, dtype, castmode=castmode, **kw)

        small = x[:4]
    cast(small)
    exact = _reset_peak()
    before = _rss_kib("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    out = cast(x)
    first = time.perf_counter() - t
    peak = _rss_kib("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    del out
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        cast(x)
        times.append(time.perf_counter() - t)
    return {
        "extra_over_input": (peak - before) * 1024 / (4 * n),
        "ns_first": first / n * 1e9,
        "ns_median": statistics.median(times) / n * 1e9 if times else float("nan"),
        "peak_exact": exact,
    }


def main() -> None:
    """Run every measurement in its own process and print the configuration and a table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="20,22,24,26", help="log2 of the element counts")
    ap.add_argument("--modes", default=",".join(_MODES))
    ap.add_argument("--dtype", default="mxfp4", help="datatype(s), comma-separated")
    ap.add_argument("--roundmode", default="even", choices=("even", "stochastic"))
    ap.add_argument("--trials", type=int, default=3, help="fresh processes per cell (median)")
    ap.add_argument("--engines", default="torch", help="torch and/or ref")
    ap.add_argument("--repeat", type=int, default=3, help="timed casts after the measured one")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(*json.loads(args.child))))
        return
    import torch

    sizes = [int(s) for s in args.sizes.split(",")]
    modes = args.modes.split(",")
    engines = args.engines.split(",")
    dtypes = args.dtype.split(",")
    seeded = " (seed 5)" if args.roundmode == "stochastic" else ""
    print(
        f"# tcast bench_memory: round {args.roundmode}{seeded}, float32 input of shape "
        f"(-1, 1024), CPU, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
        f"extra = peak RSS growth of the first cast (output included) / input bytes; "
        f"ns/elem: first cast, median of {args.repeat} more; each number the median of "
        f"{args.trials} fresh processes"
    )
    print("| engine | datatype | mode | log2 n | extra / input | ns/elem first | ns/elem median |")
    print("|---|---|---|---:|---:|---:|---:|")
    for engine in engines:
        for dtype in dtypes:
            for castmode in modes:
                for log2n in sizes:
                    cell = f"| {engine} | {dtype} | {castmode} | {log2n} |"
                    spec = [engine, castmode, log2n, dtype, args.repeat, 1, args.roundmode]
                    runs, failed = [], None
                    for _ in range(max(1, args.trials)):
                        out = subprocess.run(
                            [sys.executable, __file__, "--child", json.dumps(spec)],
                            capture_output=True,
                            text=True,
                            check=False,
                        )
                        if out.returncode:
                            failed = out.stderr[-300:]
                            break
                        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
                    if failed is not None:
                        print(f"{cell} failed: {failed!r} |", flush=True)
                        continue
                    extra, first, med = (
                        statistics.median(r[k] for r in runs)
                        for k in ("extra_over_input", "ns_first", "ns_median")
                    )
                    mark = "" if all(r["peak_exact"] for r in runs) else " (ru_maxrss)"
                    print(f"{cell} {extra:.2f}{mark} | {first:.1f} | {med:.1f} |", flush=True)


if __name__ == "__main__":
    main()
