"""Run one shard of a conformance tier through an engine, a line per datatype as it finishes.

A tier on the GPU is compile-bound (every datatype and mode compiles its own kernels), so it
is split over several device calls: shard K of N is the K-th of N contiguous runs of the
tier's items (one item per datatype, in the tier's order). Each finished datatype prints a
line at once, so a call cut off by its time limit still leaves what it checked; the report
(JSON) lands in $OUT (or /tmp) as ``conformance-<tier>-<K>of<N>.json``.

    python3 packages/tcast-triton/bench/conformance_shard.py --tier fast --shard 0/4 \
        --engine triton --device cuda --jobs 14

``--from I`` starts at the I-th item of the shard (to resume a cut-off call).

``--sample J/M`` keeps only the tier's cases whose index (in the tier's order) is J modulo M,
before sharding: a uniform sample of the full tier, whose M samples cover it exactly once
(a sample per run where the whole tier does not fit the device time).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from tcast_ref import conformance


def _shard(text: str) -> tuple[int, int]:
    k, _, n = text.partition("/")
    try:
        k_i, n_i = int(k), int(n)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: write it as K/N, e.g. 0/4") from None
    if not 0 <= k_i < n_i:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: need 0 <= K < N")
    return k_i, n_i


def _sample(items: list[conformance.Item], j: int, m: int) -> list[conformance.Item]:
    """The items holding only the cases of index ``j`` modulo ``m`` (items left empty go)."""
    if m == 1:
        return items
    out, index = [], 0
    for item in items:
        keep = tuple(c for i, c in enumerate(item.cases, index) if i % m == j)
        index += len(item.cases)
        if keep:
            out.append(conformance.Item(item.dtype, keep))
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the shard; exit 0 when every check matched, 1 otherwise."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tier", default="fast", choices=conformance.TIERS)
    p.add_argument("--shard", type=_shard, default=(0, 1))
    p.add_argument("--sample", type=_shard, default=(0, 1))
    p.add_argument("--from", dest="start", type=int, default=0)
    p.add_argument("--engine", default="triton")
    p.add_argument("--device", default="cuda")
    p.add_argument("--jobs", type=int, default=14)
    p.add_argument("--datatypes", action="append")
    a = p.parse_args(argv)
    k, n = a.shard
    items = _sample(
        conformance.tier_items(a.tier, conformance.select_datatypes(a.datatypes)), *a.sample
    )
    lo, hi = len(items) * k // n, len(items) * (k + 1) // n
    mine = items[lo + a.start : hi]
    cases = sum(len(it.cases) for it in mine)
    print(
        f"tier {a.tier}, sample {a.sample[0]}/{a.sample[1]}, shard {k}/{n}: "
        f"items {lo + a.start}..{hi - 1} of {len(items)} "
        f"({len(mine)} datatypes, {cases} cases), engine {a.engine} on {a.device}, "
        f"jobs {a.jobs}",
        flush=True,
    )
    t0 = time.perf_counter()
    done = [0]

    def line(r: conformance.ItemResult) -> None:
        done[0] += 1
        flag = "ok" if not r.mismatches else f"FAIL {r.mismatches}"
        print(
            f"{time.perf_counter() - t0:7.1f}s {lo + a.start + done[0] - 1:5d} "
            f"{r.datatype} checks {r.checks} {flag}",
            flush=True,
        )

    run = conformance.run_engine(
        a.engine, mine, device=a.device, jobs=a.jobs, quiet=True, on_item=line
    )
    found = conformance.versions()
    report = conformance.Report(a.tier, a.datatypes, [run], found)
    tag = f"{a.tier}-s{a.sample[0]}of{a.sample[1]}-{k}of{n}"
    out = Path(os.environ.get("OUT", "/tmp")) / f"conformance-{tag}.json"
    report.write(out)
    bad = sum(r.mismatches for r in run.results)
    print(
        f"shard {k}/{n} done in {time.perf_counter() - t0:.0f}s: {len(run.results)} datatypes, "
        f"{bad} mismatches; report {out}",
        flush=True,
    )
    return report.exit_status


if __name__ == "__main__":
    sys.exit(main())
