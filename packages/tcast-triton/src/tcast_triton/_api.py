"""The public functions of the Triton engine: :func:`cast`, :func:`cast_dual`, :func:`upcast`."""

from __future__ import annotations

from typing import Any

import torch

from tcast import (
    CastMode,
    CastModes,
    CastResult,
    DataType,
    Hadamard,
    RoundMode,
    ScaleLayout,
    ScaleMode,
)
from tcast.kit import (
    arguments_key,
    check_transposed,
    dual_args,
    dual_givens,
    given_or_none,
    normalize_args,
    normalize_seed,
    run_dual,
)
from tcast_torch.toolkit import check_run_options, is_dtensor

from ._engine import engine
from ._fastcast import FastCast, fast_cast, plain_input

__all__ = ["cast", "cast_dual", "upcast"]

#: Checked (datatype, modes) of :func:`cast`'s arguments without given random bits, by the
#: arguments as given: parsing and checking them costs more host time than a launch.
_CHECKED: dict[tuple, tuple[DataType, CastModes]] = {}
#: Call objects (``_fastcast.FastCast``, or None where a call needs the general path) by
#: :data:`_CHECKED`'s key and the tensor's shape, dtype and device.
_CALLS: dict[tuple, FastCast | None] = {}
_MAX_REMEMBERED = 1024


def _remember(memo: dict, key: tuple, value: Any) -> Any:
    """``memo[key] = value``, the memo emptied first when full; returns ``value``."""
    if len(memo) >= _MAX_REMEMBERED:
        memo.clear()
    memo[key] = value
    return value


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
    stream: int = 0,
    scale: torch.Tensor | float | None = None,
    zero: torch.Tensor | float | None = None,
    tensor_scale: torch.Tensor | float | None = None,
) -> torch.Tensor | CastResult:
    """Cast a CUDA tensor bit-exactly as SEMANTICS.md defines (the same bits as tcast_ref).

    Args:
        x: float32, float16 or bfloat16 CUDA tensor of any rank and strides.
        dtype: a DataType, catalog name or code pair.
        castmode: virtual (a tensor of x's dtype), actual or compress (a CastResult).
        roundmode: even, away (nearest), zero, trunc, stochastic.
        scalemode: floor, ceil, midmax, option3, topbinade (rceil).
        seed: stochastic rounding: Philox seed (bits by flat C-order index).
        rbits: stochastic rounding: tensor of x's shape and device of
            ``tcast.rbits_width(dtype)``-bit integers: torch.uint8 (or int8) for element
            formats of at most 8 bits, else torch.uint16 (or int16).
        saturate: unscaled casts: overflow to +-max, or IEEE (Inf/NaN).
        transpose_scale: swap the two segments of a 2-D tile.
        scale_layout: plain, or blocked (the 128 x 4 layout block-scaled GEMMs read,
            SEMANTICS.md §8.1), written by the cast kernel itself.
        transform: a ``tcast.Hadamard`` applied along the datatype's tiled dimension before
            the cast (SEMANTICS.md §5.11): fused into the cast kernel where it takes the cast
            (``_launch.fused_transform``), else ``tcast_torch.hadamard`` and then the cast
            kernels, with the same bits; the result records it and upcast inverts it. Plain
            tensors only.
        grad: the gradient of a virtual cast of a tensor that requires grad, as in
            ``tcast_torch.cast``: ``"ste"`` (straight through) or ``"saturate"`` (zero where
            the cast clipped the input).
        stream: stochastic rounding from a seed: the Philox stream, in [0, 2**32) (the
            second result of :func:`cast_dual` draws stream 1).
        scale: given block scales (SEMANTICS.md §5.12): a float32, float16 or bfloat16
            tensor on x's device of the scale array's shape (a real number for a tensor
            scale), encoded into the scale format by the cast kernel; default: computed.
            Plain tensors (inside torch.compile too: inputs of the graph).
        zero: given zero points of uint data, laid out as ``scale``.
        tensor_scale: a given tensor scale of a two-level datatype (NVFP4): the tile scales
            come from it and each tile's amax, in one pass over ``x``.

    Returns:
        The virtual tensor, or a CastResult whose tensors live on x's device.

    Raises:
        UnsupportedError: for input that is not a float32/float16/bfloat16 CUDA tensor, or
            a datatype this engine does not cast yet (``engine.supports``; ``tcast.cast``
            falls back to ``tcast_torch`` for those); given parts of a DTensor.
        SpecError: for bad datatypes, modes, random bits, or tile dimensions; a transform
            the datatype and shape do not take; given parts the datatype has no place for,
            of the wrong shape, dtype or device, or with a NaN, infinite or negative scale.
    """
    if (
        rbits is None
        and scale is None
        and zero is None
        and tensor_scale is None
        and not torch.compiler.is_compiling()
    ):
        # the host path: the checked arguments of a repeated call are remembered (outside
        # a trace: a compiled function reading this dict would be guarded on its contents);
        # a seed's presence is part of the key, its value is checked on every call
        key = (
            grad,
            seed is None,
            *arguments_key(
                dtype,
                castmode,
                roundmode,
                scalemode,
                saturate,
                transpose_scale,
                scale_layout,
                transform,
                stream,
            ),
        )
        try:
            known = _CHECKED.get(key)
        except TypeError:  # an unhashable argument: checked (and refused) below
            known = key = None
        if known is None:
            dt, modes, seed = normalize_args(
                dtype,
                castmode,
                roundmode,
                scalemode,
                seed,
                None,
                saturate,
                transpose_scale,
                scale_layout,
                transform,
                stream,
            )
            check_run_options(grad, None)
            known = (dt, modes)
            if key is not None:
                _remember(_CHECKED, key, known)
        elif seed is not None:
            seed = normalize_seed(seed)
        if type(x) is torch.Tensor and key is not None:
            # a plain tensor: the call object of this kind of call, made by the first one (by
            # the arguments as given: they name the datatype, whose name labels the result)
            calls = (key, x.shape, x.dtype, x.device)
            fast = _CALLS.get(calls, False)
            if fast is False and plain_input(x):  # made once (None: the general path)
                req = engine.request(x, *known, seed, None)
                engine.check_request(x, req)
                fast = _remember(_CALLS, calls, fast_cast(x, req))
            if fast and fast.takes(x):
                return fast(x) if seed is None else fast(x, seed)
        elif seed is None and key is not None and is_dtensor(x) and not x.requires_grad:
            # a DTensor: the call object of a cast without collectives (toolkit.DTensorCall),
            # kept as a plain tensor's is (it takes only DTensors of its mesh, placements
            # and shapes, which the engine's checks answered alike for the first)
            calls = (key, x.shape, x.dtype, x.device, "dtensor")
            call = _CALLS.get(calls)
            if call is not None and call.takes(x):
                return call(x)
            req = engine.request(x, *known, None, None)
            call = engine.dtensor_call(x, req, grad)
            if call is not None and call.takes(x):
                _remember(_CALLS, calls, call)
                return call(x)
            return engine.cast_grad(x, req, grad)
        dt, modes = known
        return engine.cast_grad(x, engine.request(x, dt, modes, seed, None), grad)
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
    check_run_options(grad, None)
    given = given_or_none(scale, zero, tensor_scale)
    return engine.cast_grad(x, engine.request(x, dt, modes, seed, rbits, given), grad)


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
    row_scale: torch.Tensor | float | None = None,
    column_scale: torch.Tensor | float | None = None,
    row_zero: torch.Tensor | float | None = None,
    column_zero: torch.Tensor | float | None = None,
    tensor_scale: torch.Tensor | float | None = None,
) -> tuple[torch.Tensor | CastResult, torch.Tensor | CastResult]:
    """The row and column casts of ``x`` (``tcast.cast_dual``), reading ``x`` once.

    ``grad`` is :func:`cast`'s (virtual casts of a tensor that requires grad).
    ``row_transform`` and ``column_transform``: each side's transform (``tcast.cast_dual``);
    with either, the two casts are made one after the other, each as :func:`cast` makes it
    (the transform fused or composed). ``row_scale``, ``column_scale``, ``row_zero``,
    ``column_zero``, ``tensor_scale``: each result's given scale parts (``tcast.cast_dual``,
    SEMANTICS.md §5.12; plain tensors): two casts too, each reading its own.

    Raises:
        SpecError, UnsupportedError: as :func:`tcast.cast_dual`.
    """
    transposed = check_transposed(transposed)
    dt, modes, seed, transforms = dual_args(
        dtype, castmode, roundmode, scalemode, seed, rbits, saturate, scale_layout,
        row_transform, column_transform,
    )  # fmt: skip
    check_run_options(grad, None)
    # the engine with this gradient option: run_dual checks the requests and calls it
    runner = _DualRunner(engine, grad)
    givens = dual_givens(row_scale, column_scale, row_zero, column_zero, tensor_scale)
    return run_dual(runner, x, dt, modes, seed, rbits, transposed, transforms, givens)


def upcast(result: CastResult) -> torch.Tensor:
    """Decode an actual or compress result to float32 (equal to the virtual cast in float32).

    Raises:
        SpecError: if ``result`` is not an actual/compress CastResult of tensors that fit
            its datatype and shape.
    """
    return engine.upcast(result)


class _DualRunner:
    """The engine with one gradient option, as ``tcast.kit.run_dual`` calls it.

    A plain class rather than a namespace: Dynamo traces it inside
    ``torch.compile(fullgraph=True)``.
    """

    def __init__(self, engine: Any, grad: str) -> None:
        self.name = engine.name
        self.result_ops = engine.result_ops  # lays out a transposed result's given parts
        self._engine, self._grad = engine, grad

    def supports(self, dtype: DataType, modes: CastModes) -> bool:
        return self._engine.supports(dtype, modes)

    def request(self, *args: Any) -> Any:
        return self._engine.request(*args)

    def cast_dual(self, *args: Any, **kwargs: Any) -> Any:
        return self._engine.cast_dual(*args, grad=self._grad, **kwargs)
