"""Where a ``cast_dual`` call's time goes on a GPU (not a test): host, kernel, other kernels.

Prints the host microseconds per call, the CUDA-graph replay time (GPU alone), and the
torch profiler's CUDA kernel table of ten calls, for MXFP8 16384 x 16384 bfloat16.

    python packages/tcast-triton/bench/where_dual.py
"""

from __future__ import annotations

import torch
from _timing import graph_ms, host_us
from torch.profiler import ProfilerActivity, profile

import tcast_triton


def main() -> None:
    """Print the three views of one dual cast."""
    x = torch.randn(16384, 16384, device="cuda").to(torch.bfloat16)
    for label, kw in (("mxfp8 actual", {}), ("mxfp8 actual transposed", {"transposed": True})):

        def fn(kw=kw):
            return tcast_triton.cast_dual(x, "mxfp8", **kw)

        fn()
        torch.cuda.synchronize()
        print(f"{label}: host {host_us(fn, 20):.1f} us/call; graph {graph_ms(fn, 50):.3f} ms")
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            for _ in range(10):
                fn()
            torch.cuda.synchronize()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=12))


if __name__ == "__main__":
    main()
