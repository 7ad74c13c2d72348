"""Compiling a kernel for a GPU without one: its SASS, for tests and benchmarks (no cast path).

``tests/gluon_offline.py`` (CI compiles the Gluon dual kernel for sm_90) and
``bench/sass_offline.py`` (instructions per element between GPU sessions) give a kernel the
specializations a launch gets: 16-byte aligned pointers, integers typed by their magnitude,
``== 1`` as a constant and divisibility by 16 (except the kernel's ``do_not_specialize``
arguments). Needs Triton's bundled ``ptxas`` and ``cuobjdump``, not a GPU; never under the
interpreter.
"""

from __future__ import annotations

from typing import Any

import torch
from triton import compile as triton_compile
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.experimental.gluon._runtime import GluonASTSource, GluonJITFunction

__all__ = ["compile_sass"]

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
        args: its run-time arguments by name (a tensor stands for a pointer of its dtype).
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
    return triton_compile(src, target=target, options=opts).asm["sass"]
