"""Compiling a kernel for a GPU without one: its SASS, for tests and benchmarks (no cast path).

``tests/gluon_offline.py`` (CI compiles the Gluon dual kernel for sm_90) and
``bench/sass_offline.py`` (instructions per element on a machine without a GPU) give a kernel the
specializations a launch gets: 16-byte aligned pointers, integers typed by their magnitude,
``== 1`` as a constant and divisibility by 16 (except the kernel's ``do_not_specialize``
arguments). Needs Triton's bundled ``ptxas`` and ``cuobjdump``, not a GPU; never under the
interpreter.

The listing is :func:`sass_listing`'s, not Triton's ``asm["sass"]``: Triton 3.6's listing
(``triton.tools.disasm``) matches instruction offsets of four hex digits and so stops at
instruction 4096 (byte offset 0x10000) without a word; the Triton dual kernels of spilling
configurations run past 7,000 instructions.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from typing import Any

import torch
from triton import compile as triton_compile
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.experimental.gluon._runtime import GluonASTSource, GluonJITFunction
from triton.tools.disasm import parseCtrl

__all__ = ["compile_sass", "parse_listing", "sass_listing"]

# cuobjdump -sass: "/*0a30*/  INSTRUCTION ;  /* 0x<encoding> */", then "/* 0x<control> */";
# offsets have as many hex digits as the code needs (five from instruction 4096 on)
_INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s*([^;]*;)\s*/\* 0x[0-9a-f]{16} \*/\s*$", re.I)
_CTRL = re.compile(r"\s*/\* 0x[0-9a-f]{16} \*/\s*$", re.I)

_PTR = {
    torch.int16: "*i16",
    torch.int32: "*i32",
    torch.float32: "*fp32",
    torch.uint8: "*u8",
    torch.uint16: "*u16",
    torch.uint32: "*u32",
}


def compile_sass(kernel: Any, args: dict, kw: dict, num_warps: int, capability: int = 90) -> str:
    """SASS of ``kernel`` (Triton or Gluon) for ``cuda:capability``.

    Args:
        kernel: a ``@triton.jit`` or ``@gluon.jit`` function.
        args: its run-time arguments by name (a tensor stands for a pointer of its dtype;
            None for a pointer a launch leaves at its default, compiled as a constant).
        kw: its compile-time arguments (others take their defaults); ``enable_fp_fusion``
            is passed on as an option.
        num_warps: the launch's warps.
        capability: the target's compute capability (90: sm_90).
    """
    sig, consts, attrs = {}, {}, {}
    skip = set(getattr(kernel, "do_not_specialize", ()) or ())
    skip |= {kernel.params[i].name for i in getattr(kernel, "do_not_specialize_idx", ()) or ()}
    for i, p in enumerate(kernel.params):
        n = p.name
        if n in args:
            v = args[n]
            if isinstance(v, torch.Tensor):
                sig[n] = _PTR[v.dtype]
                attrs[(i,)] = [["tt.divisibility", 16]]
            elif v is None:  # as Triton specializes None: a constant
                sig[n] = "constexpr"
                consts[(i,)] = None
            elif v == 1 and n not in skip:
                sig[n] = "constexpr"
                consts[(i,)] = 1
            else:
                sig[n] = "i64" if abs(v) >= 2**31 else "i32"
                if v % 16 == 0 and n not in skip:
                    attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            sig[n] = "constexpr"
            consts[(i,)] = kw[n] if n in kw else p.default
    source = GluonASTSource if isinstance(kernel, GluonJITFunction) else ASTSource
    src = source(kernel, sig, consts, attrs)
    opts = {"num_warps": num_warps, **{k: v for k, v in kw.items() if k == "enable_fp_fusion"}}
    target = GPUTarget("cuda", capability, 32)
    return sass_listing(triton_compile(src, target=target, options=opts).asm["cubin"])


def parse_listing(text: str) -> str:
    """``cuobjdump -sass`` output as ``control<TAB>instruction;`` lines, every instruction.

    The format of Triton's listing (its control-word decoding, ``parseCtrl``), without
    labels: a branch keeps its target's byte offset. Raises ``ValueError`` unless the
    offsets run from 0 in steps of 16, so a listing cut short or misread never passes for a
    whole kernel.
    """
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = _INSTR.match(line)
        if m is None:
            continue
        offset, instr = int(m.group(1), 16), m.group(2)
        if offset != 16 * len(out):
            raise ValueError(f"instruction {len(out)} at offset {offset:#x}: {line.strip()}")
        if i + 1 >= len(lines) or not _CTRL.match(lines[i + 1]):
            raise ValueError(f"no control word after offset {offset:#x}: {line.strip()}")
        if instr.endswith(" ;"):
            instr = instr[:-2] + ";"
        out.append(f"{parseCtrl(lines[i + 1])}\t{instr}")
    if not out:
        raise ValueError("no SASS instruction in the listing")
    return "\n".join(out) + "\n"


def sass_listing(cubin: bytes) -> str:
    """Every SASS instruction of ``cubin`` (Triton's ``cuobjdump``; :func:`parse_listing`)."""
    fd, path = tempfile.mkstemp(suffix=".cubin")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        text = subprocess.run(
            [knobs.nvidia.cuobjdump.path, "-sass", path],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        os.unlink(path)
    return parse_listing(text)
