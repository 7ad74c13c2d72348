"""Compiled kernels behind eager calls: ``cast(..., compile=None|True)``.

An eager cast runs one PyTorch kernel per tensor operation (tens of them, each a full pass
over memory); ``torch.compile`` fuses the same operations into one or two kernels. When
:func:`use_compiled` says so, an eager call runs a compiled version of the same function (the
same bits: the tests and the CUDA conformance runs compare the two), built on the first call
of each datatype, modes, input dtype and rank and reused after: a few seconds once, then the
compiled speed. Shapes are specialized first and made dynamic by torch.compile when a second
shape appears.

Always eager: calls being traced already (inside the caller's own ``torch.compile``), casts
seeded by an integer (the seed would be a compile-time constant), casts that record
gradients, casts with given scale parts (the compiled function takes x and the random bits
only), and CPU casts with partial tiles (an Inductor CPU bug, below). Eager unless
``compile=True``: everything but the fast-path casts of CUDA tensors, float32 block scales,
ROCm and machines without Triton; and, under ``compile=None``, a cast whose compilation failed
(it warns once and stays eager).
"""

from __future__ import annotations

import hashlib
import types
import warnings
from collections.abc import Callable
from functools import lru_cache
from importlib.util import find_spec

import torch

from tcast import CastModes, DataType
from tcast.kit import cast_rules, make_request

from ._run import cast_checked

__all__ = [
    "call_compiled",
    "compiled_as",
    "compiled_cast",
    "compiled_or_eager",
    "exact_inductor_options",
    "use_compiled",
]


def use_compiled(
    x: torch.Tensor,
    compile: bool | None,
    seeded: bool,
    *,
    fast: bool,
    padded: bool,
    scale_bits: int,
) -> bool:
    """Whether this call runs the compiled kernel.

    ``compile=None`` (the default) means: for the casts of the fast path (``fast``: RNE MX and
    NVFP4-style casts along the last dimension, ``tcast_torch._fast``) of CUDA tensors, when
    Triton is installed, not on ROCm (whose compiled arithmetic no conformance run has
    checked), and not with float32 block scales (``scale_bits``). Those are the casts where
    tens of eager kernels cost the most, and their compiled kernel is one fused pass that the
    CUDA conformance runs check.

    Casts of CPU tensors with partial tiles (``padded``) run eagerly even under
    ``compile=True``: torch 2.13's Inductor CPU backend miscompiles a reduction over
    zero-padded tiles whose output is then cut back to the real length (the last partial
    tile is left unwritten; ``tests/test_torch_compile.py`` pins it down).
    """
    if compile is False or torch.compiler.is_compiling():
        return False  # off, or already inside the caller's graph
    if padded and x.device.type == "cpu":
        return False
    if compile is None and not (
        fast and x.device.type == "cuda" and torch.version.hip is None and _has_triton()
    ):
        return False
    if compile is None and scale_bits >= 32:
        # float32 block scales: on an H200 the compiled scale arithmetic differs from the
        # reference by an ulp in 4 of 842 conformance cases (float32 under a float32 tensor
        # scale); they stay eager unless compile=True is asked for
        return False
    return not seeded


@lru_cache(maxsize=1)
def _has_triton() -> bool:
    """Whether Inductor can generate GPU kernels here (CUDA builds of torch ship Triton)."""
    return find_spec("triton") is not None


@lru_cache(maxsize=256)
def compiled_cast(dt: DataType, modes: CastModes, in_name: str, ndim: int) -> Callable:
    """The compiled cast of one datatype, set of modes and input rank.

    Returns:
        ``f(x, rbits_int32_or_None, fast)``. One function per rank, because a new rank always
        recompiles and dynamo allows each function eight.
    """
    rules = cast_rules(dt, modes.scalemode)  # computed here, read as a constant when traced

    def run(x: torch.Tensor, rbits: torch.Tensor | None, fast: bool):
        req = make_request(dt, modes, None, rbits, tuple(x.shape), in_name, rules)
        return cast_checked(x, req, fast)

    # a code object and a name of its own: dynamo keeps its cache, its recompile limit (8)
    # and its automatic-dynamic record (which turns an int that differs between two compiles
    # into a symbol, and then breaks the graph on the spec arithmetic) per function
    # (a digest, not hash(): the same name in every process, for logs and caches)
    key = repr((dt, modes, in_name, ndim)).encode()
    return compiled_as(run, f"tcast_cast_{hashlib.sha1(key).hexdigest()[:12]}")


def compiled_as(fn: Callable, name: str, options: dict | None = None) -> Callable:
    """``torch.compile`` of a copy of ``fn`` with a code object and name of its own.

    Dynamo keeps its compiled graphs, its recompile limit (8: past it a call runs eagerly)
    and its automatic-dynamic record per code object: one per key keeps each key's graphs
    apart. ``options``: Inductor's (default :func:`exact_inductor_options`). Shapes start
    static; Dynamo makes a size dynamic itself once it changes.
    """
    code = fn.__code__.replace(co_name=name)
    copy = types.FunctionType(code, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    opts = exact_inductor_options() if options is None else options
    return torch.compile(copy, dynamic=None, options=opts)


def call_compiled(
    fn: Callable,
    x: torch.Tensor,
    rbits: torch.Tensor | None,
    fast: bool,
    eager: Callable[[], object],
    required: bool,
):
    """Run a compiled cast; unless ``required`` (``compile=True``), fall back to ``eager``.

    The default (``compile=None``) must never make a cast fail that works eagerly: if
    compiling fails (no C compiler for Triton's launcher, an Inductor error), this warns
    once, marks ``fn`` so that later calls skip it, and casts eagerly. Running out of memory
    is not a compiler failure and propagates.
    """
    if required and not getattr(fn, "tcast_failed", False):
        return fn(x, rbits, fast)
    return compiled_or_eager(
        fn,
        lambda *_: eager(),
        "the cast",
        "compile=False skips the attempt, compile=True raises",
        x,
        rbits,
        fast,
    )


def compiled_or_eager(fn: Callable, eager: Callable, what: str, hint: str, *args):
    """``fn(*args)``, or ``eager(*args)`` (the same bits) from the first time compiling fails.

    A compiled path must never make a call fail that works eagerly: a compiler failure (no C
    compiler for Triton's launcher, an Inductor error) warns once, naming ``what`` was
    compiled (and ``hint``), and marks ``fn`` so that later calls skip it. Running out of
    memory is not a compiler failure and propagates.
    """
    if getattr(fn, "tcast_failed", False):
        return eager(*args)
    try:
        return fn(*args)
    except torch.OutOfMemoryError:
        raise
    except Exception as err:  # any compiler failure: the eager path gives the same bits
        fn.tcast_failed = True
        warnings.warn(
            f"tcast_torch: compiling {what} failed ({type(err).__name__}: {str(err)[:200]}); "
            f"running it eagerly from now on{f' ({hint})' if hint else ''}",
            RuntimeWarning,
            stacklevel=4,
        )
        return eager(*args)


def exact_inductor_options() -> dict:
    """Inductor options that keep float32 arithmetic as eager rounds it.

    Triton contracts a multiply and an add into one FMA (one rounding instead of two),
    divides float32 approximately (``div.full``) and flushes float32 subnormals to zero
    unless told otherwise; each changes bits of the scale and zero-point arithmetic (the
    last one of tiny float32 scales). ``emulate_precision_casts`` turns FMA contraction off,
    and ``eager_numerics.division_rounding`` and ``eager_numerics.disable_ftz`` (newer
    torch) ask for correctly rounded division and kept subnormals. Pass the same options to
    your own ``torch.compile`` around tcast_torch casts.
    """
    import torch._inductor.config as inductor

    options = {}
    if hasattr(inductor, "emulate_precision_casts"):
        options["emulate_precision_casts"] = True
    numerics = getattr(inductor, "eager_numerics", None)
    for name in ("division_rounding", "disable_ftz"):
        if hasattr(numerics, name):
            options[f"eager_numerics.{name}"] = True
    return options
