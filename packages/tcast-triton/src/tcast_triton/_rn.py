"""Float32 products that no compiler fuses into the sum they feed (SEMANTICS.md §0).

``a * b + c`` must round twice, after the product and after the sum. The engine compiles its
kernels with ``enable_fp_fusion=False``, but a kernel compiled with Triton's default options
(torch Inductor compiles user kernels so) gets the product and the sum contracted into one
fused multiply-add, rounded once: by LLVM, or by ``ptxas`` from a ``mul.f32`` and an
``add.f32`` without a rounding modifier; ``ptxas`` also folds a product times 2, 4 or 8
(or their reciprocals) into one scaled multiplication (``FMUL.M4``), rounded once. PTX's
``mul.rn.f32`` is never contracted, so a product written with :func:`mul_rn` rounds on its
own whatever the options; the kernels use it where a product feeds an addition, a
subtraction or such a scaling, nowhere else.

Not ``libdevice.mul_rn``: its ``__nv_fmul_rn`` flushes subnormals to zero under Triton's
libdevice settings (``FMUL.FTZ``), and the interpreter runs neither it nor inline assembly.
Under the interpreter (NumPy) a product is a product: nothing is ever fused there.

:func:`mul_rz` is a product rounded toward zero (``mul.rz.f32``), which stochastic rounding
takes to scale a magnitude down to the format's grid without rounding up into the bits it
adds to (``_codec.fast_round_stochastic``); the interpreter emulates it.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._env import INTERPRETING

__all__ = ["mul_rn", "mul_rz"]

if INTERPRETING:

    @triton.jit
    def mul_rn(a, b):
        """``a * b`` (float32), one rounding to nearest even."""
        return a * b

    @triton.jit
    def mul_rz(a, p, p_inv):
        """``a * p`` (float32) rounded toward zero, for ``a >= 0`` and a power of two ``p``.

        NumPy rounds the product to nearest even; where that rounded up (the exact product
        ``t * p_inv`` exceeds ``a``, ``p_inv = 1 / p``), the float32 below it is the
        product truncated: the error of one rounding is under one unit in the last place.
        """
        t = a * p
        up = (t * p_inv) > a
        return tl.where(up, (t.to(tl.int32, bitcast=True) - 1).to(tl.float32, bitcast=True), t)

else:

    @triton.jit
    def _mul_ptx(a, b, INSTR: tl.constexpr):
        """``a * b`` by the float32 PTX multiplication ``INSTR`` (its rounding modifier)."""
        tl.static_assert(a.dtype == tl.float32, "the PTX products multiply float32 values")
        return tl.inline_asm_elementwise(
            INSTR + " $0, $1, $2;", "=f,f,f", [a, b], dtype=tl.float32, is_pure=True, pack=1
        )

    @triton.jit
    def mul_rn(a, b):
        """``a * b`` (float32), one rounding to nearest even, never fused into a sum.

        ``b`` may be a float32 constant (broadcast, as the ``*`` operator does).
        """
        return _mul_ptx(a, b, "mul.rn.f32")

    @triton.jit
    def mul_rz(a, p, p_inv):
        """``a * p`` (float32) rounded toward zero, for ``a >= 0`` and a power of two ``p``.

        One ``mul.rz.f32`` (subnormal results kept: no ``.ftz``); ``p_inv`` serves the
        interpreter's emulation only.
        """
        return _mul_ptx(a, p, "mul.rz.f32")
