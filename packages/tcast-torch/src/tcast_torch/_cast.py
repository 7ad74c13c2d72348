"""How a checked torch cast runs, decided once per call: with gradients, compiled or eager.

``run_cast`` is the engine's ``run``: it picks the autograd wrapper (a virtual cast of a
tensor that requires grad), the compiled kernel (``_compiled``) or the eager path
(``_run.cast_checked``), and whether the fast path (``_fast``) applies, once; DTensors go
to ``_shards``.
"""

from __future__ import annotations

import torch

from tcast import CastResult, RoundMode, SpecError
from tcast.kit import CastRequest

from ._accept import is_dtensor, resolved
from ._autograd import GRAD_MODES, virtual_with_grad
from ._compiled import call_compiled, compiled_cast, use_compiled
from ._fast import fast_path_applies
from ._local import TORCH_LOCAL
from ._run import cast_checked
from ._shards import cast_dtensor

__all__ = ["check_run_options", "run_cast"]


def check_run_options(grad: object, compile: object) -> None:
    """Check tcast_torch's own options of a cast.

    Raises:
        SpecError: for a ``grad`` or ``compile`` value that is not defined.
    """
    if grad not in GRAD_MODES:
        raise SpecError(f"grad {grad!r} is not defined; valid: {', '.join(GRAD_MODES)}")
    if compile is not None and not isinstance(compile, bool):
        raise SpecError(f"compile must be True, False or None, got {compile!r}")


def run_cast(
    x: torch.Tensor, req: CastRequest, grad: str = "ste", compile: bool | None = None
) -> torch.Tensor | CastResult:
    """Run a checked request (the options checked by :func:`check_run_options`).

    A DTensor is cast shard by shard (``_shards``), eagerly whatever ``compile`` says. A
    pending negation is applied first (``_accept.resolved``).
    """
    x = resolved(x)
    if is_dtensor(x):
        return cast_dtensor(x, req, TORCH_LOCAL, grad)
    fast = req.layout is not None and fast_path_applies(x, req)
    if req.virtual and x.requires_grad and torch.is_grad_enabled():
        return virtual_with_grad(x, req, grad, fast)
    with torch.no_grad():
        seeded = req.roundmode is RoundMode.STOCHASTIC and req.seed is not None
        padded = req.layout is not None and req.layout.padded
        scale_bits = 0 if req.dtype.sspec is None else req.dtype.sspec.scale.bits
        # given parts run eagerly: a compiled function is built per datatype and modes and
        # takes x and the random bits only (inside the caller's own torch.compile they trace)
        if req.given is None and use_compiled(
            x, compile, seeded, fast=fast, padded=padded, scale_bits=scale_bits
        ):
            fn = compiled_cast(req.dtype, req.modes, req.input_dtype, x.ndim)
            out = call_compiled(
                fn, x, req.rbits, fast, lambda: cast_checked(x, req, fast), required=compile is True
            )
            # one compiled function serves equal datatypes of any name: label the result
            # with the one asked for
            if isinstance(out, CastResult) and out.dtype.name != req.dtype.name:
                out.dtype = req.dtype
            return out
        return cast_checked(x, req, fast)
