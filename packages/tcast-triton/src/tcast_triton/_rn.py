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
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._env import INTERPRETING

__all__ = ["mul_rn"]

if INTERPRETING:

    @triton.jit
    def mul_rn(a, b):
        """``a * b`` (float32), one rounding to nearest even."""
        return a * b

else:

    @triton.jit
    def mul_rn(a, b):
        """``a * b`` (float32), one rounding to nearest even, never fused into a sum.

        ``b`` may be a float32 constant (broadcast, as the ``*`` operator does).
        """
        tl.static_assert(a.dtype == tl.float32, "mul_rn multiplies float32 values")
        return tl.inline_asm_elementwise(
            "mul.rn.f32 $0, $1, $2;",
            "=f,f,f",
            [a, b],
            dtype=tl.float32,
            is_pure=True,
            pack=1,
        )
