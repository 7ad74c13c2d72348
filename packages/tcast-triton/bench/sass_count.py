"""Instructions per element of the engine's compiled kernels, and the time they take to issue.

Not a test. On the GPU, each cast below runs once on a square bfloat16 input; every kernel it
launched is disassembled (``cuobjdump -sass`` by ``_offline.sass_listing``, every instruction:
Triton's ``asm["sass"]`` stops at instruction 4096) and its instructions counted (``NOP``
left out; the kernels are straight-line code except the long-tile loops, which these casts
do not take) by kind: integer, float, conversion, memory, other. With ``e`` elements per
thread, ``n/e`` instructions per element, and an SM issuing at most four warp instructions
per clock, the issue time of the whole input is ``elements * per_element / 32 / (SMs * 4 *
clock)``: when that approaches the measured kernel time, the kernel is bound by instruction
issue, not by memory.

    python packages/tcast-triton/bench/sass_count.py [--size 16384]
"""

from __future__ import annotations

import argparse
import re
import subprocess
from collections import Counter

import torch
import triton
from triton.testing import do_bench

import tcast_triton
from tcast_triton import _fastlaunch
from tcast_triton._offline import sass_listing

CASTS = [
    ("mxfp8 actual", "mxfp8", {"castmode": "actual"}),
    ("mxfp8 virtual", "mxfp8", {"castmode": "virtual"}),
    ("mxfp4 actual", "mxfp4", {"castmode": "actual"}),
    ("mxfp6 e2m3 actual", "e2m3f_e8m0_t32", {"castmode": "actual"}),
    ("mxint8 actual", "mxint8", {"castmode": "actual"}),
    ("mxfp8 actual, trunc", "mxfp8", {"castmode": "actual", "roundmode": "trunc"}),
    (
        "mxfp8 actual, stochastic",
        "mxfp8",
        {"castmode": "actual", "roundmode": "stochastic", "seed": 1},
    ),
    ("mxfp8 actual, column", "e4m3fn_e8m0_t32d0", {"castmode": "actual"}),
    ("nvfp4 actual", "nvfp4", {"castmode": "actual"}),
    ("int8 per-token actual", "int8_float32_t0", {"castmode": "actual"}),
]
KINDS = {
    # uniform-datapath (U...) and S2R/S2UR instructions: per warp, not per element
    "uniform": re.compile(r"^(U|S2U|S2R|CS2R)"),
    "int": re.compile(
        r"^(I|LOP|SHF|SEL|PRMT|LEA|POPC|FLO|BMSK|BREV|SGXT|VIADD|VIMNMX|MOV|P2R|R2P)"
    ),
    "float": re.compile(r"^(F|H)(ADD|MUL|FMA|MNMX|SETP|SEL|CHK|SWZ)"),
    "convert": re.compile(r"^(F2F|F2I|I2F|F2FP|I2FP|FRND|MUFU)"),
    "memory": re.compile(r"^(LDG|STG|LDS|STS|LD|ST|RED|ATOM|LDC|SHFL|BAR)"),
}

_SEEN: list = []
_orig_call = _fastlaunch.Launch.__call__


def _recording_call(self, grid, *args):
    _SEEN.append(self)
    return _orig_call(self, grid, *args)


def _elements_per_program(kw: dict) -> int:
    if "BL" in kw and "TP" in kw:
        return kw["BL"] * kw["TP"]
    if "D0" in kw:
        return kw["D0"] * kw["D1"] * kw["D2"]
    for k in ("BLOCK", "BL"):
        if k in kw:
            return kw[k]
    raise KeyError(f"no block size among {sorted(kw)}")


def _count(sass: str) -> Counter:
    """Instructions by kind in Triton's SASS listing (``control<TAB>instruction;`` lines)."""
    c: Counter = Counter()
    for line in sass.splitlines():
        if "\t" not in line:
            continue
        instr = line.split("\t", 1)[1].strip()
        if instr.startswith("@"):  # a predicate guard
            instr = instr.split(None, 1)[1]
        op = instr.split()[0].rstrip(";")
        if not op[:1].isalpha() or op.startswith("NOP"):
            continue
        kind = next((k for k, r in KINDS.items() if r.match(op)), "other")
        c[kind] += 1
        c["all"] += 1
    return c


def _sm_clock_ghz() -> float:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return float(out.split()[0]) / 1000 if out.strip() else 1.98


def main() -> None:
    """Count, time and print one row per kernel of each cast."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=16384)
    a = ap.parse_args()
    _fastlaunch.Launch.__call__ = _recording_call
    x = torch.randn(a.size, a.size, device="cuda", dtype=torch.bfloat16)
    n = x.numel()
    props = torch.cuda.get_device_properties(0)
    ghz = _sm_clock_ghz()
    issue_rate = props.multi_processor_count * 4 * ghz * 1e9  # warp instructions per second
    copy = do_bench(lambda: x.clone(), rep=100, return_mode="median")
    print(f"# {props.name}: {props.multi_processor_count} SMs, max SM clock {ghz:.2f} GHz; ")
    print(f"# triton {triton.__version__}; {a.size}x{a.size} bfloat16; copy {copy:.4f} ms")
    print(
        "| cast | kernel | warps | elems/thread | instr/elem | int | float | convert | memory "
        "| uniform | other | issue ms | cast ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, code, kw in CASTS:
        _SEEN.clear()
        tcast_triton.cast(x, code, **kw)
        torch.cuda.synchronize()
        ms = do_bench(lambda code=code, kw=kw: tcast_triton.cast(x, code, **kw), rep=100)
        done = set()
        for launch in _SEEN:
            for compiled, _ in launch._compiled.values():
                if id(compiled) in done:
                    continue
                done.add(id(compiled))
                warps = compiled.metadata.num_warps
                per_thread = _elements_per_program(launch.kw) / (warps * 32)
                sass = sass_listing(compiled.asm["cubin"])
                c = _count(sass)
                if not c:
                    raise RuntimeError(f"no instruction recognised in:\n{sass[:2000]}")
                per_elem = {k: v / per_thread for k, v in c.items()}
                issue_ms = n * per_elem["all"] / 32 / issue_rate * 1e3
                kinds = " | ".join(
                    f"{per_elem.get(k, 0):.1f}"
                    for k in ("int", "float", "convert", "memory", "other")
                )
                print(
                    f"| {label} | {launch.kernel.__name__} | {warps} | {per_thread:g} | "
                    f"{per_elem['all']:.1f} | {kinds} | {issue_ms:.3f} | {ms:.4f} |"
                )


if __name__ == "__main__":
    main()
