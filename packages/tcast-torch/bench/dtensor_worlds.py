"""The DTensor worker's cases over a real process group, for each engine (not a test).

Runs ``tests/dtensor_worker.py`` (the cases of ``test_torch_dtensor.py`` and
``tcast-triton``'s ``test_triton_dtensor.py``: every placement kind, uneven shards, the
conformance sample, collective counts, whole-tensor layouts, gradients, the FSDP2 step) in
``--world`` processes for each engine of ``--engines`` and prints, per engine, the raw-bit
checks made and the failures. On a machine of several GPUs:

    python packages/tcast-torch/bench/dtensor_worlds.py --world 2 --device cuda --backend nccl

one process a GPU over NCCL, every group (gloo on CUDA cannot run the groups whose cast
gathers CUDA tensors). ``--device cpu --backend gloo`` runs the same on the CPU (the Triton
engine then needs ``TRITON_INTERPRET=1``).

Each group is a world of its own (the conformance sample ``--parts`` worlds, each a share of
its cases), and ``--jobs`` worlds run at once: the first casts of each datatype compile
kernels (Triton's, a second or so each), which many processes do faster than two. A line is
printed as each world ends, with its seconds; ``--report FILE`` is rewritten as each ends,
so that a run cut short keeps what finished. Exit status 1 when any check failed or a
process failed or hung (``--timeout`` seconds per world).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

# the worker lives beside the tests that spawn it
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import dtensor_worker


def run(world: int, engine: str, group: str, part: str, common: list[str], timeout: float):
    """One world of worker processes: their reports, or the failure's text."""
    options = [group, "--engine", engine, "--part", part, *common]
    start = time.monotonic()
    job = {"engine": engine, "group": group, "part": part}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            reports = dtensor_worker.run_world(world, Path(tmp), *options, timeout=timeout)
        except AssertionError as e:  # a process failed or hung: its log
            return {**job, "error": str(e), "seconds": time.monotonic() - start}
    return {**job, "reports": reports, "seconds": time.monotonic() - start}


def main() -> int:
    """Run every engine's groups and print the summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--engines", default="torch,triton", help="comma-separated: torch, triton")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    ap.add_argument("--backend", choices=("gloo", "nccl"), default="nccl")
    ap.add_argument("--groups", default=",".join(dtensor_worker.GROUPS), help="the worker's groups")
    ap.add_argument("--parts", type=int, default=4, help="worlds sharing the conformance sample")
    ap.add_argument("--jobs", type=int, default=1, help="worlds at once")
    ap.add_argument("--timeout", type=float, default=400, help="seconds per world")
    ap.add_argument("--report", default="", help="JSON file for every process's report")
    a = ap.parse_args()
    engines = [e for e in a.engines.split(",") if e]
    groups = [g for g in a.groups.split(",") if g]
    if sorted(set(engines) - {"torch", "triton"}) or not engines:
        ap.error(f"--engines {a.engines!r}: name torch and/or triton")
    if sorted(set(groups) - set(dtensor_worker.GROUPS)) or not groups:
        ap.error(f"--groups {a.groups!r}: name some of {', '.join(dtensor_worker.GROUPS)}")
    for name in ("world", "parts", "jobs"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} {getattr(a, name)}: at least 1")
    print(
        f"world {a.world}, device {a.device}, backend {a.backend}, groups {','.join(groups)}, "
        f"engines {','.join(engines)}, conformance in {a.parts} parts, {a.jobs} worlds at once",
        flush=True,
    )
    common = ["--device", a.device, "--backend", a.backend]
    todo = [
        (engine, group, f"{j}/{a.parts}" if group == "conformance" else "0/1")
        for engine in engines
        for group in groups
        for j in range(a.parts if group == "conformance" else 1)
    ]
    results: list[dict] = []
    start = time.monotonic()
    with ThreadPoolExecutor(a.jobs) as pool:
        futures = [pool.submit(run, a.world, *job, common, a.timeout) for job in todo]
        for future in as_completed(futures):
            r = future.result()
            results.append(r)
            if a.report:
                Path(a.report).write_text(json.dumps(results, indent=1))
            what = f"{r['engine']} {r['group']} {r['part']}"
            if "error" in r:
                print(f"{what}: FAILED in {r['seconds']:.0f} s\n{r['error'][-6000:]}", flush=True)
                continue
            checked = [p["checked"] for p in r["reports"]]
            failures = [f for p in r["reports"] for f in p["failures"]]
            print(
                f"{what}: {len(failures)} failures, checks per process {checked} "
                f"({r['seconds']:.0f} s; {time.monotonic() - start:.0f} s in all)",
                flush=True,
            )
            for f in failures[:20]:
                print(f"  {f}", flush=True)
    ok = True
    for engine in engines:
        mine = [r for r in results if r["engine"] == engine]
        crashed = [f"{r['group']} {r['part']}" for r in mine if "error" in r]
        done = [r for r in mine if "error" not in r]
        failures = sum(len(p["failures"]) for r in done for p in r["reports"])
        checked = [sum(r["reports"][p]["checked"] for r in done) for p in range(a.world)]
        ok = ok and not failures and not crashed
        print(
            f"{engine}: {failures} failures; raw-bit checks per process {checked} in "
            f"{len(done)} worlds" + (f"; FAILED or hung: {', '.join(crashed)}" if crashed else ""),
            flush=True,
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
