"""The DTensor worker's cases over a real process group, for each engine (not a test).

Runs ``tests/dtensor_worker.py`` (the cases of ``test_torch_dtensor.py`` and
``tcast-triton``'s ``test_triton_dtensor.py``: every placement kind, uneven shards, the
conformance sample, collective counts, whole-tensor layouts, gradients, the FSDP2 step) in
``--world`` processes for each engine of ``--engines`` and prints, per engine, the raw-bit
checks made and the failures. On a machine of several GPUs (issue 15's two-GPU run):

    python packages/tcast-torch/bench/dtensor_worlds.py --world 2 --device cuda --backend nccl

one process a GPU over NCCL, every group (gloo on CUDA cannot run the groups whose cast
gathers CUDA tensors). ``--device cpu --backend gloo`` runs the same on the CPU (the Triton
engine then needs ``TRITON_INTERPRET=1``). ``--report FILE`` writes every process's report
as JSON. Exit status 1 when any check failed or a process failed or hung.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

# the worker lives beside the tests that spawn it
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import dtensor_worker


def run(world: int, engine: str, device: str, backend: str, groups: str, timeout: float) -> dict:
    """One world of worker processes for ``engine``: their reports, or the failure's text."""
    options = ["--engine", engine, "--device", device, "--backend", backend]
    if groups:
        options.insert(0, groups)
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            reports = dtensor_worker.run_world(world, Path(tmp), *options, timeout=timeout)
        except AssertionError as e:  # a process failed or hung: its log
            return {"engine": engine, "error": str(e), "seconds": time.monotonic() - start}
    return {"engine": engine, "reports": reports, "seconds": time.monotonic() - start}


def main() -> int:
    """Run each engine's world and print the summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--engines", default="torch,triton", help="comma-separated: torch, triton")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    ap.add_argument("--backend", choices=("gloo", "nccl"), default="nccl")
    ap.add_argument("--groups", default="", help="the worker's groups (default: every one)")
    ap.add_argument("--timeout", type=float, default=400, help="seconds per world")
    ap.add_argument("--report", default="", help="JSON file for every process's report")
    a = ap.parse_args()
    engines = [e for e in a.engines.split(",") if e]
    bad_engines = sorted(set(engines) - {"torch", "triton"})
    if bad_engines or not engines:
        ap.error(f"--engines {a.engines!r}: name torch and/or triton")
    if a.world < 1:
        ap.error(f"--world {a.world}: at least 1")
    print(
        f"world {a.world}, device {a.device}, backend {a.backend}, "
        f"groups {a.groups or 'all'}, engines {','.join(engines)}",
        flush=True,
    )
    results, ok = [], True
    for engine in engines:
        r = run(a.world, engine, a.device, a.backend, a.groups, a.timeout)
        results.append(r)
        if "error" in r:
            ok = False
            print(f"{engine}: FAILED in {r['seconds']:.0f} s\n{r['error'][-6000:]}", flush=True)
            continue
        checked = [p["checked"] for p in r["reports"]]
        failures = [f for p in r["reports"] for f in p["failures"]]
        ok = ok and not failures
        print(
            f"{engine}: {len(failures)} failures; raw-bit checks per process {checked} "
            f"({r['seconds']:.0f} s)",
            flush=True,
        )
        for f in failures[:20]:
            print(f"  {f}", flush=True)
    if a.report:
        Path(a.report).write_text(json.dumps(results, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
