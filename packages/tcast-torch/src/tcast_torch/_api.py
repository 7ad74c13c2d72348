"""The public functions of the torch engine: :func:`cast`, :func:`cast_dual`, :func:`upcast`."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace
from typing import Any

import torch

from tcast import CastMode, CastResult, DataType, Hadamard, RoundMode, ScaleLayout, ScaleMode
from tcast.kit import (
    check_transposed,
    dual_args,
    dual_givens,
    given_or_none,
    normalize_args,
    run_dual,
)

from ._accept import is_dtensor
from ._cast import check_run_options, run_cast
from ._engine import engine
from ._run import OPS
from ._shards import dual_dtensor
from ._transform import cast_transformed_grad

__all__ = ["cast", "cast_dual", "upcast"]


def cast(
    x: torch.Tensor,
    dtype: DataType | str,
    *,
    castmode: CastMode | str = "virtual",
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    seed: int | None = None,
    rbits: torch.Tensor | None = None,
    saturate: bool = True,
    transpose_scale: bool = False,
    scale_layout: ScaleLayout | str = "plain",
    transform: Hadamard | None = None,
    grad: str = "ste",
    compile: bool | None = None,
    stream: int = 0,
    scale: torch.Tensor | float | None = None,
    zero: torch.Tensor | float | None = None,
    tensor_scale: torch.Tensor | float | None = None,
) -> torch.Tensor | CastResult:
    """Cast a torch tensor bit-exactly as SEMANTICS.md defines (the same bits as tcast_ref).

    Args:
        x: float32, float16 or bfloat16 tensor of any rank, any strides, on any device.
        dtype: a DataType, catalog name or code pair.
        castmode: virtual (a tensor of x's dtype), actual or compress (a CastResult).
        roundmode: even, away (nearest), zero, trunc, stochastic.
        scalemode: floor, ceil, midmax, option3, topbinade (rceil).
        seed: stochastic rounding: Philox seed (bits by flat C-order index), any integer
            type in [0, 2**64).
        rbits: stochastic rounding: tensor of x's shape and device of
            ``tcast.rbits_width(dtype)``-bit integers: torch.uint8 (or int8) for element
            formats of at most 8 bits, else torch.uint16 (or int16).
        saturate: unscaled casts: overflow to +-max, or IEEE (Inf/NaN).
        transpose_scale: swap the two segments of a 2-D tile.
        scale_layout: plain, or blocked (the 128 x 4 layout block-scaled GEMMs and
            ``torch._scaled_mm`` read, SEMANTICS.md §8.1).
        transform: a ``tcast.Hadamard`` applied along the datatype's tiled dimension before
            the cast (SEMANTICS.md §5.11); the result records it and upcast inverts it. Plain
            tensors only; the gradient passes through the transform and its inverse.
        grad: the gradient of a virtual cast of a tensor that requires grad: ``"ste"``
            (straight through, the default) or ``"saturate"`` (zero where the cast clipped
            the input; see ``tcast_torch._autograd``).
        compile: run a ``torch.compile``d version of the cast (one or two fused kernels
            instead of tens; the first call of each datatype, modes and input rank
            compiles, a few seconds): ``None`` (default) for the fast-path casts (round to
            nearest even, MX or NVFP4-style tiles along the last dimension that divide it,
            block scales narrower than float32) of CUDA tensors when Triton is installed,
            falling back to eager with a warning if compiling fails; ``True`` for every cast
            that can be compiled (compiler errors raise); ``False`` never. The compiled
            kernels use :func:`exact_inductor_options` and give the eager bits (the CUDA
            conformance runs in the package README); ``tcast_torch._compiled`` lists the
            calls that always run eagerly.
        stream: stochastic rounding from a seed: the Philox stream, in [0, 2**32) (the
            second result of :func:`cast_dual` draws stream 1).
        scale: given block scales (SEMANTICS.md §5.12): a float32, float16 or bfloat16
            tensor on x's device of the scale array's shape (a real number for a tensor
            scale), encoded into the scale format; default: computed. For a DTensor ``x``
            the whole scale array: a plain tensor (the same in every process) or a DTensor
            on x's mesh. The cast runs eagerly whatever ``compile`` says; inside the
            caller's torch.compile it traces, the parts graph inputs, and a value that
            would be refused (NaN, infinite, negative) is not read on the host: it makes
            its block non-finite (a tensor scale: every block).
        zero: given zero points of uint data, laid out as ``scale``.
        tensor_scale: a given tensor scale of a two-level datatype (NVFP4): no amax pass.

    Returns:
        The virtual tensor, or a CastResult whose tensors live on x's device.

    Raises:
        UnsupportedError: for input that is not a float32/float16/bfloat16 tensor; a DTensor
            with a transform.
        SpecError: for bad datatypes, modes, random bits, or tile dimensions; a transform
            the datatype and shape do not take; given parts the datatype has no place for,
            of the wrong shape, dtype or device, with a NaN, infinite or negative scale
            (outside torch.compile), or DTensor parts of a plain ``x`` or on another mesh.
    """
    dt, modes, seed = normalize_args(
        dtype,
        castmode,
        roundmode,
        scalemode,
        seed,
        rbits,
        saturate,
        transpose_scale,
        scale_layout,
        transform,
        stream,
    )
    check_run_options(grad, compile)
    given = given_or_none(scale, zero, tensor_scale)
    req = engine.request(x, dt, modes, seed, rbits, given)
    return _run_with(x, req, grad, compile)


def _run_with(
    x: torch.Tensor, req: Any, grad: str, compile: bool | None
) -> torch.Tensor | CastResult:
    """:func:`run_cast` with a cast's run options, composed with the request's transform."""
    if req.modes.transform is not None:
        run = lambda t, r: run_cast(t, r, grad, compile)  # noqa: E731
        return cast_transformed_grad(engine, run, x, req, grad)
    return run_cast(x, req, grad, compile)


def cast_dual(
    x: torch.Tensor,
    dtype: DataType | str,
    *,
    castmode: CastMode | str = "actual",
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    seed: int | None = None,
    rbits: torch.Tensor | None = None,
    saturate: bool = True,
    transposed: bool = False,
    scale_layout: ScaleLayout | str = "plain",
    row_transform: Hadamard | None = None,
    column_transform: Hadamard | None = None,
    grad: str = "ste",
    compile: bool | None = None,
    row_scale: torch.Tensor | float | None = None,
    column_scale: torch.Tensor | float | None = None,
    row_zero: torch.Tensor | float | None = None,
    column_zero: torch.Tensor | float | None = None,
    tensor_scale: torch.Tensor | float | None = None,
) -> tuple[torch.Tensor | CastResult, torch.Tensor | CastResult]:
    """The row and column casts of ``x`` (``tcast.cast_dual``): two casts of this engine.

    ``grad`` and ``compile`` are :func:`cast`'s; virtual results of a tensor that requires
    grad are both differentiable (the transposed one through its transpose).
    ``row_transform`` and ``column_transform``: each side's transform (``tcast.cast_dual``).
    ``row_scale``, ``column_scale``, ``row_zero``, ``column_zero``, ``tensor_scale``: each
    result's given scale parts (``tcast.cast_dual``; as :func:`cast`'s ``scale``).

    Raises:
        SpecError, UnsupportedError: as :func:`tcast.cast_dual`.
    """
    transposed = check_transposed(transposed)
    dt, modes, seed, transforms = dual_args(
        dtype, castmode, roundmode, scalemode, seed, rbits, saturate, scale_layout,
        row_transform, column_transform,
    )  # fmt: skip
    check_run_options(grad, compile)
    # the engine with these options: run_dual casts twice through it
    runner = SimpleNamespace(
        name=engine.name,
        supports=engine.supports,
        request=engine.request,
        cast=lambda t, req: _run_with(t, req, grad, compile),
        result_ops=OPS,
    )
    if is_dtensor(x):  # the transposed result's parts as DTensors (``_shards``)
        runner.cast_dual = partial(dual_dtensor, runner.cast)
    givens = dual_givens(row_scale, column_scale, row_zero, column_zero, tensor_scale)
    return run_dual(runner, x, dt, modes, seed, rbits, transposed, transforms, givens)


def upcast(result: CastResult) -> torch.Tensor:
    """Decode an actual or compress result to float32 (equal to the virtual cast in float32).

    Raises:
        SpecError: if ``result`` is not an actual/compress CastResult of torch tensors that
            fit its datatype and shape.
    """
    return engine.upcast(result)
