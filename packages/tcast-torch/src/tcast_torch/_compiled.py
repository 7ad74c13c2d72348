"""Compiled kernels behind eager calls: ``cast(..., compile=True)`` (opt-in).

An eager cast runs one PyTorch kernel per tensor operation (tens of them, each a full pass
over memory); ``torch.compile`` fuses the same operations into one or two kernels. With
``compile`` on, an eager call runs a compiled version of the same function (the same bits:
the tests compare the two), built on the first call of each datatype and modes and reused
after: a few seconds once, then the compiled speed. Shapes are specialized first and made
dynamic by torch.compile when a second shape appears. Calls that are being traced already
(inside the caller's own ``torch.compile``), casts seeded by an integer (the seed would be a
compile-time constant) and casts that record gradients run eagerly.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import torch

from tcast import CastMode, DataType, RoundMode, ScaleMode

__all__ = ["compiled_cast", "exact_inductor_options", "use_compiled"]


def use_compiled(x: torch.Tensor, compile: bool | None, rsrc) -> bool:
    """Whether this call runs the compiled kernel (``compile=None`` means on CUDA tensors)."""
    if compile is False or (compile is None and x.device.type != "cuda"):
        return False
    if torch.compiler.is_compiling():
        return False  # already inside the caller's graph
    return rsrc is None or rsrc[0] == "rbits"


@lru_cache(maxsize=256)
def compiled_cast(
    dt: DataType, cmode: CastMode, rmode: RoundMode, smode: ScaleMode, saturate: bool,
    transpose: bool, in_name: str,
) -> Callable:
    """The compiled cast of one datatype and set of modes: ``f(x, rbits_int32_or_None)``."""
    from ._cast import cast_checked
    from ._tiles import tiling

    def run(x: torch.Tensor, rbits: torch.Tensor | None):
        til = None if dt.sspec is None else tiling(tuple(x.shape), dt, transpose)
        rsrc = None if rbits is None else ("rbits", rbits)
        return cast_checked(x, dt, cmode, rmode, smode, rsrc, saturate, til, in_name,
                            transpose)

    return torch.compile(run, options=exact_inductor_options())


def exact_inductor_options() -> dict:
    """Inductor options that keep float32 arithmetic as eager rounds it.

    Triton contracts a multiply and an add into one FMA (one rounding instead of two) and
    divides float32 approximately (``div.full``) unless told otherwise; both change bits of
    the scale and zero-point arithmetic. ``emulate_precision_casts`` turns FMA contraction
    off and ``eager_numerics.division_rounding`` (newer torch) asks for correctly rounded
    division. Pass the same options to your own ``torch.compile`` around tcast_torch casts.
    """
    import torch._inductor.config as inductor

    options = {}
    if hasattr(inductor, "emulate_precision_casts"):
        options["emulate_precision_casts"] = True
    if hasattr(getattr(inductor, "eager_numerics", None), "division_rounding"):
        options["eager_numerics.division_rounding"] = True
    return options
