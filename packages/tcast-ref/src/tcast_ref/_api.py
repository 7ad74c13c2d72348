"""The public functions of the reference engine: :func:`cast`, :func:`cast_dual`, :func:`upcast`."""

from __future__ import annotations

import numpy as np

from tcast import CastMode, CastResult, DataType, Hadamard, RoundMode, ScaleLayout, ScaleMode

from ._engine import engine

__all__ = ["cast", "cast_dual", "upcast"]


def cast(
    x: np.ndarray,
    dtype: DataType | str,
    *,
    castmode: CastMode | str = "virtual",
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    seed: int | None = None,
    rbits: np.ndarray | None = None,
    saturate: bool = True,
    transpose_scale: bool = False,
    scale_layout: ScaleLayout | str = "plain",
    transform: Hadamard | None = None,
    stream: int = 0,
    scale: np.ndarray | float | None = None,
    zero: np.ndarray | float | None = None,
    tensor_scale: float | np.ndarray | None = None,
) -> np.ndarray | CastResult:
    """Cast a NumPy array bit-exactly as SEMANTICS.md defines.

    Args:
        x: float32, float16 or ``ml_dtypes.bfloat16`` array of any rank (views allowed).
        dtype: a DataType, catalog name or code pair.
        castmode: virtual (an array of x's dtype), actual or compress (a CastResult).
        roundmode: even, away (nearest), zero, trunc, stochastic.
        scalemode: floor, ceil, midmax, option3, topbinade (rceil).
        seed: stochastic rounding: Philox seed (bits by flat C-order index), any integer
            type in [0, 2**64).
        rbits: stochastic rounding: array of x's shape of ``tcast.rbits_width(dtype)``-bit
            integers: uint8 for element formats of at most 8 bits, else uint16.
        saturate: unscaled casts: overflow to +-max, or IEEE (Inf/NaN).
        transpose_scale: swap the two segments of a 2-D tile.
        scale_layout: plain, or blocked (the 128 x 4 GEMM layout, SEMANTICS.md §8.1).
        transform: a ``tcast.Hadamard`` applied along the datatype's tiled dimension before
            the cast (SEMANTICS.md §5.11); the result records it and upcast inverts it.
        stream: stochastic rounding from a seed: the Philox stream, in [0, 2**32) (the
            second result of :func:`cast_dual` draws stream 1).
        scale: given block scales (SEMANTICS.md §5.12): a float32, float16 or bfloat16
            array of the scale array's shape (a real number for a tensor scale), encoded
            into the scale format; default: computed from the blocks.
        zero: given zero points of uint data, laid out as ``scale``.
        tensor_scale: a given tensor scale of a two-level datatype (NVFP4): one pass, no
            tensor amax.

    Returns:
        The virtual array, or a CastResult.

    Raises:
        UnsupportedError: for input that is not a float32/float16/bfloat16 NumPy array.
        SpecError: for bad datatypes, modes, random bits, or tile dimensions; a transform
            the datatype and shape do not take; given parts the datatype has no place for,
            of the wrong shape or dtype, or with a NaN, infinite or negative scale.
    """
    return engine.cast_args(
        x,
        dtype,
        castmode=castmode,
        roundmode=roundmode,
        scalemode=scalemode,
        seed=seed,
        rbits=rbits,
        saturate=saturate,
        transpose_scale=transpose_scale,
        scale_layout=scale_layout,
        transform=transform,
        stream=stream,
        scale=scale,
        zero=zero,
        tensor_scale=tensor_scale,
    )


def cast_dual(
    x: np.ndarray,
    dtype: DataType | str,
    *,
    castmode: CastMode | str = "actual",
    roundmode: RoundMode | str = "even",
    scalemode: ScaleMode | str = "floor",
    seed: int | None = None,
    rbits: np.ndarray | None = None,
    saturate: bool = True,
    transposed: bool = False,
    scale_layout: ScaleLayout | str = "plain",
    row_transform: Hadamard | None = None,
    column_transform: Hadamard | None = None,
    row_scale: np.ndarray | float | None = None,
    column_scale: np.ndarray | float | None = None,
    row_zero: np.ndarray | float | None = None,
    column_zero: np.ndarray | float | None = None,
    tensor_scale: np.ndarray | float | None = None,
) -> tuple[np.ndarray | CastResult, np.ndarray | CastResult]:
    """The row and column casts of ``x`` (``tcast.cast_dual``; two casts here).

    ``row_transform`` and ``column_transform``: each side's transform (``tcast.cast_dual``).
    ``row_scale``, ``column_scale``, ``row_zero``, ``column_zero``, ``tensor_scale``: each
    result's given scale parts (``tcast.cast_dual``, SEMANTICS.md §5.12).

    Raises:
        SpecError, UnsupportedError: as :func:`tcast.cast_dual`.
    """
    return engine.cast_dual_args(
        x,
        dtype,
        castmode=castmode,
        roundmode=roundmode,
        scalemode=scalemode,
        seed=seed,
        rbits=rbits,
        saturate=saturate,
        transposed=transposed,
        scale_layout=scale_layout,
        row_transform=row_transform,
        column_transform=column_transform,
        row_scale=row_scale,
        column_scale=column_scale,
        row_zero=row_zero,
        column_zero=column_zero,
        tensor_scale=tensor_scale,
    )


def upcast(result: CastResult) -> np.ndarray:
    """Decode an actual or compress result to float32 (equal to the virtual cast in float32).

    Raises:
        SpecError: if ``result`` is not an actual/compress CastResult of NumPy arrays.
    """
    return engine.upcast(result)
