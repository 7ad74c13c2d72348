"""Where a DTensor cast's host time goes, beside the plain cast of its shard (not a test).

One process, a one-process mesh (the shard is the whole tensor), an actual cast by
``tcast.cast``: for the plain tensor and the DTensor, per call

* GPU-bound time: CUDA events over ``--iters`` calls (what ``dtensor_gpus.py`` reports);
* host time: the wall time of ``--iters`` calls queued without synchronizing (the GPU's
  queue is drained before and after), i.e. the Python and launch work per call;
* a cProfile of the same calls (``--top`` functions by own and by cumulative time).

    python packages/tcast-torch/bench/dtensor_host.py [--rows 8192] [--size 16384]
        [--code mxfp8] [--engine triton] [--device cuda]

``--device cpu --engine torch:eager`` runs it on the CPU (a gloo mesh; host time is then
the whole cast).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import tempfile
import time

import torch
import torch.distributed as dist


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    """Measure and print."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--size", type=int, default=16384)
    ap.add_argument("--code", default="mxfp8")
    ap.add_argument("--engine", default="triton")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    import tcast

    backend = "nccl" if a.device == "cuda" else "gloo"
    with tempfile.TemporaryDirectory() as tmp:
        kw = {"device_id": torch.device("cuda", 0)} if a.device == "cuda" else {}
        store = dist.FileStore(os.path.join(tmp, "store"), 1)
        dist.init_process_group(backend, store=store, rank=0, world_size=1, **kw)
        mesh = init_device_mesh(a.device, (1,))
        x = torch.randn(a.rows, a.size, device=a.device, dtype=torch.bfloat16)
        d = distribute_tensor(x, mesh, [Shard(0)])
        name = torch.cuda.get_device_name() if a.device == "cuda" else "CPU"
        print(
            f"{name}: {a.rows} x {a.size} bfloat16, {a.code}, actual, engine {a.engine}, "
            f"{a.iters} calls; a one-process mesh",
            flush=True,
        )

        def plain():
            return tcast.cast(x, a.code, castmode="actual", engine=a.engine)

        def sharded():
            return tcast.cast(d, a.code, castmode="actual", engine=a.engine)

        for label, fn in (("plain", plain), ("DTensor", sharded)):
            for _ in range(20):
                fn()
            _sync(a.device)
            if a.device == "cuda":
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(a.iters):
                    fn()
                end.record()
                _sync(a.device)
                gpu = start.elapsed_time(end) / a.iters * 1e3
            else:
                gpu = float("nan")
            t0 = time.perf_counter()
            for _ in range(a.iters):
                fn()
            host = (time.perf_counter() - t0) / a.iters * 1e6
            _sync(a.device)
            print(f"{label:8s} events {gpu:8.1f} us/call   host {host:8.1f} us/call", flush=True)
        for label, fn in (("plain", plain), ("DTensor", sharded)):
            _sync(a.device)
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(a.iters):
                fn()
            prof.disable()
            _sync(a.device)
            for order in ("tottime", "cumulative"):
                out = io.StringIO()
                pstats.Stats(prof, stream=out).sort_stats(order).print_stats(a.top)
                print(f"\n--- {label}: cProfile, {a.iters} calls, by {order}", flush=True)
                print("\n".join(out.getvalue().strip().splitlines()[-a.top - 2 :]), flush=True)
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
