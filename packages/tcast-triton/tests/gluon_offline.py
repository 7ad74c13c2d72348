"""Compile the Gluon dual kernels for sm_90 without a GPU (run by ``test_gluon_offline.py``).

Run as a script in a process without ``TRITON_INTERPRET`` (Triton chooses the interpreter
when it is imported, and the interpreter does not run Gluon). For each case it builds the
launch plan ``_launch_dual`` would build on an sm_90 GPU (``hw_fp8`` answered True), checks
that the plan takes the Gluon kernel the case names (``_cast_dual_gl_hw`` for the hardware
FP8 conversion unless "two layouts", ``_cast_dual_gl`` for the pair encoder), compiles the
kernel with the specializations a launch gets (16-byte aligned pointers, sizes divisible by
16 where they are) for ``GPUTarget("cuda", 90, 32)``, and prints one JSON line per case:
the case, whether it compiled (else the error's first line), and the SASS's local-memory
instructions (register spills). Exit status 0 when every case compiled.

    python gluon_offline.py
"""

from __future__ import annotations

import json
import math
import sys

import torch

import tcast
from tcast.kit import cast_rules, make_request
from tcast_triton import _launch, _launch_dual
from tcast_triton._offline import compile_sass

#: (datatype, shape, input dtype, transposed, scale layout): the pair encoder and the
#: hardware conversion, whole and partial blocks, a batch, every input dtype, both layouts.
CASES = (
    ("mxfp8", (256, 512), torch.bfloat16, False, "plain"),
    ("mxfp8", (200, 1030), torch.bfloat16, True, "plain"),
    ("mxfp8", (256, 512), torch.bfloat16, True, "blocked"),
    ("mxfp8e5", (2, 96, 288), torch.float32, False, "plain"),
    ("mxfp8", (200, 1030), torch.float16, True, "blocked"),
    ("mxfp4", (256, 1024), torch.bfloat16, False, "plain"),
    ("mxfp4", (200, 1030), torch.bfloat16, True, "plain"),
    ("mxfp4", (256, 1024), torch.bfloat16, True, "blocked"),
    ("mxfp6e3", (200, 1030), torch.bfloat16, False, "blocked"),
    ("mxfp8", (70, 1031), torch.bfloat16, True, "plain"),  # odd rows: no pairs
    ("mxfp4", (65536, 32768), torch.bfloat16, True, "blocked"),  # 2**31 elements: int64
    ("mxfp8", (65536, 32768), torch.bfloat16, False, "plain"),
    ("mxfp8", (65536, 32768), torch.bfloat16, True, "blocked"),  # int64, xᵀ, blocked
    ("mxfp8", (256, 512), torch.bfloat16, False, "blocked"),
    ("e4m3fn_e5m0_t32", (2, 64, 1030), torch.float16, True, "plain"),  # a narrower scale
)
#: Cases compiled again with the column phase reading the block from L2 (``GLUON_ONCE`` off;
#: the FP8 conversion's through ``_cast_dual_gl``, ``GLUON_ONE_LAYOUT`` off).
RELOAD = (CASES[0], CASES[6])
#: The FP8 conversion's cases compiled again through ``_cast_dual_gl`` (``GLUON_ONE_LAYOUT``
#: off): whole, partial and batched blocks.
TWO_LAYOUTS = (CASES[0], CASES[1], CASES[3])


def compile_case(code: str, shape: tuple, dtype: torch.dtype, transposed: bool, layout: str):
    """The SASS of the Gluon kernel for one case (raises when the plan is not Gluon's)."""
    dt = tcast.datatype(code)
    modes = tcast.CastModes.of(castmode="actual", scale_layout=layout)
    req = make_request(dt, modes, None, None, shape, str(dtype)[6:], cast_rules(dt))
    xc = torch.empty(shape, dtype=dtype, device="meta")
    plan = _launch_dual._build(req, xc, 0, transposed)
    if not plan.gluon:
        raise AssertionError("the plan does not take the Gluon kernel")
    one_layout = _launch_dual.GLUON_ONE_LAYOUT and not plan.kw["PAIRS"]
    if plan.one_layout != one_layout:
        raise AssertionError(f"the plan's one_layout is {plan.one_layout}, not {one_layout}")
    if plan.kw["I64"] != (math.prod(shape) >= 2**31):
        raise AssertionError(f"I64 is {plan.kw['I64']} for {shape}")
    kw = plan.kw
    u8 = torch.empty(16, dtype=torch.uint8)
    bits = torch.empty(1, dtype=torch.float32 if dtype == torch.float32 else torch.int16)
    args = dict(
        x_ptr=bits, rb_ptr=bits, out_r=u8, out_c=u8, scale_r=u8, scale_c=u8, zero_r=u8,
        zero_c=u8, tcode_ptr=u8, stats_ptr=torch.empty(3, dtype=torch.int32),
        outer=math.prod(shape[:-2]),
        M=shape[-2], N=shape[-1], seed=0, stream_r=0, stream_c=1,  # run-time Philox streams
    )  # fmt: skip
    kernel = plan.launch.kernel
    # a run-time argument left out would be compiled as a constant (its default)
    missing = [p.name for p in kernel.params if not p.is_constexpr and p.name not in args]
    if missing:
        raise AssertionError(f"run-time arguments not given: {missing}")
    return compile_sass(kernel, args, kw, kw["num_warps"])


def main() -> int:
    # the launcher's answer on an sm_90 GPU, without one
    _launch.hw_fp8 = lambda device: True
    _launch_dual.hw_fp8 = lambda device: True
    failed = 0
    runs = [(c, True, True) for c in CASES]
    runs += [(c, False, False) for c in RELOAD] + [(c, True, False) for c in TWO_LAYOUTS]
    for (code, shape, dtype, transposed, layout), once, one_layout in runs:
        _launch_dual.GLUON_ONCE = once
        _launch_dual.GLUON_ONE_LAYOUT = one_layout
        case = f"{code} {shape} {str(dtype)[6:]} transposed={transposed} {layout}"
        case += "" if once else " reload"
        case += "" if one_layout or code.startswith("mxfp4") else " two layouts"
        try:
            sass = compile_case(code, shape, dtype, transposed, layout)
        except Exception as err:  # report every case, then fail
            failed += 1
            lines = [line for line in str(err).splitlines() if line.strip()] or [""]
            print(json.dumps({"case": case, "error": f"{type(err).__name__}: {lines[-1]}"}))
            continue
        spills = sum(1 for line in sass.splitlines() if "LDL" in line or "STL" in line)
        print(json.dumps({"case": case, "compiled": True, "spills": spills}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
