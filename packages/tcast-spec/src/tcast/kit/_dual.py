"""Dual casts (``tcast.cast_dual``): one datatype with its tiles along rows and along columns.

Training casts each tensor twice: with the datatype's 1-D tiles along the last dimension
(the forward GEMM reads ``x``) and along the second-to-last (the backward GEMM reads
``xᵀ``). Both results are exactly the single casts; under stochastic rounding from a seed the
row cast draws Philox stream 0 and the column cast stream 1, both by ``x``'s flat index
(SEMANTICS.md §8.2), given random bits serve both; ``transposed=True`` stores the second for
``xᵀ`` (C-contiguous), which is the cast of ``xᵀ`` with the row tiling in every part but the
random bits. The rules are here, once; an engine may override
``EngineBase.cast_dual`` with a fused kernel that reads ``x`` once.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .._text import quote
from ..datatype import DataType
from ..engine import CastResult
from ..errors import SpecError, UnsupportedError
from ..modes import CastMode, ScaleLayout
from ._blocked import require_ops
from ._given import GivenScales, given_or_none
from ._request import CastRequest, make_request, normalize_args
from ._results import build_result
from ._trace import tracing

__all__ = [
    "check_transposed",
    "column_datatype",
    "dual_args",
    "dual_by_casts",
    "dual_givens",
    "dual_requests",
    "dual_with",
    "run_dual",
    "transposed_request",
]


def _swap(shape: tuple[int, ...]) -> tuple[int, ...]:
    return (*shape[:-2], shape[-1], shape[-2])


def _swap_order(ndim: int) -> tuple[int, ...]:
    return (*range(ndim - 2), ndim - 1, ndim - 2)


def column_datatype(dtype: DataType) -> DataType:
    """``dtype`` with its one tile segment along the second-to-last dimension (``d-2``).

    Memoized on ``dtype`` (its rules memo, key ``"column"``), so that its own rules are
    memoized once too; not while torch.compile traces (a store would be a side effect dynamo
    must replay), as ``cast_rules``.

    Raises:
        SpecError: unless ``dtype`` has exactly one tile segment, along the last dimension
            (its default): the dual cast moves that segment.
    """
    memo = dtype.__dict__["_rules_memo"]
    col = memo.get("column")
    if col is None:
        col = _column(dtype)
        if not tracing():
            memo["column"] = col
    return col


def _column(dtype: DataType) -> DataType:
    ss = dtype.sspec
    if ss is None or len(ss.tiles) != 1 or ss.tiles[0].dim is not None:
        raise SpecError(
            f"cast_dual takes a datatype with one tile segment along the last dimension "
            f"(as mxfp8, nvfp4, int8_e8m0_t32, e4m3fn_float32_t0), not {dtype.name}"
        )
    t = ss.tiles[0]
    tile = dataclasses.replace(t, dim=-2)  # subtile, offset and sparsity stay with the tile
    return DataType(dtype.nspec, dataclasses.replace(ss, tiles=(tile,)))


def dual_requests(
    engine: Any,
    x: Any,
    dtype: DataType,
    modes: Any,
    seed: int | None,
    rbits: Any,
    transforms: tuple[Any, Any] = (None, None),
    givens: tuple[GivenScales | None, GivenScales | None] = (None, None),
) -> tuple[CastRequest, CastRequest]:
    """The requests of the row cast and of the column cast of ``x``.

    ``transforms``: the row cast's and the column cast's transform (SEMANTICS.md §5.11),
    each None or a ``tcast.Hadamard`` (it replaces ``modes.transform``). A seeded column
    request draws stream 1 (SEMANTICS.md §8.2), the row request stream 0. ``givens``: each
    cast's given scale parts (SEMANTICS.md §5.12), the column ones laid out for the column
    cast (not transposed), or None.

    Raises:
        SpecError: for an ``x`` of rank below 2, a datatype :func:`column_datatype` refuses,
            or a transform the datatype and shape do not take.
    """
    cols = column_datatype(dtype)
    if len(getattr(x, "shape", ())) < 2:
        raise SpecError(
            f"cast_dual casts arrays of rank 2 or more (rows and columns), got shape "
            f"{tuple(getattr(x, 'shape', ()))}"
        )
    streams = (0, 0 if seed is None else 1)
    row_modes, col_modes = (
        dataclasses.replace(modes, transform=t, stream=s)
        for t, s in zip(transforms, streams, strict=True)
    )
    return (
        _request(engine, x, dtype, row_modes, seed, rbits, givens[0]),
        _request(engine, x, cols, col_modes, seed, rbits, givens[1]),
    )


def _request(engine: Any, x: Any, dt: DataType, modes: Any, seed: Any, rbits: Any, given: Any):
    # an engine of the protocol alone takes no given parts: asked only when there are some
    if given is None:
        return engine.request(x, dt, modes, seed, rbits)
    return engine.request(x, dt, modes, seed, rbits, given)


def transposed_request(rows: CastRequest, cols: CastRequest) -> CastRequest:
    """The request whose result ``cast_dual(transposed=True)`` returns second.

    The row datatype over ``xᵀ``'s shape, with the column request's modes (its scale layout
    and cast mode), seed and random bits.
    """
    return make_request(
        rows.dtype,
        cols.modes,
        cols.seed,
        cols.rbits,
        _swap(cols.shape),
        cols.input_dtype,
        rows.rules,
    )


def dual_by_casts(
    engine: Any, x: Any, rows: CastRequest, cols: CastRequest, transposed: bool
) -> tuple[Any, Any]:
    """``cast_dual`` by two casts of ``engine`` (every engine's default).

    With ``transposed``, the column cast is made in actual form with plain scales, its parts
    transposed with the engine's ``result_ops.permute``, and the result assembled for ``xᵀ``
    (:func:`transposed_request`: packed, blocked as the request says).

    Raises:
        UnsupportedError: ``transposed`` on an engine without ``result_ops``.
    """
    if not transposed:
        return engine.cast(x, rows), engine.cast(x, cols)
    ops = getattr(engine, "result_ops", None)
    if ops is None:
        raise UnsupportedError(
            f"engine {engine.name!r} has no result_ops (tcast.kit.ArrayOps): it cannot "
            f"transpose the second result of cast_dual"
        )
    require_ops(ops, ("permute",), "cast_dual(transposed=True)")
    first = engine.cast(x, rows)
    order = _swap_order(len(cols.shape))
    if cols.virtual:
        return first, ops.permute(engine.cast(x, cols), order)
    plain = dataclasses.replace(
        cols.modes, castmode=CastMode.ACTUAL, scale_layout=ScaleLayout.PLAIN
    )
    r: CastResult = engine.cast(x, dataclasses.replace(cols, modes=plain))
    treq = transposed_request(rows, cols)
    second = build_result(
        treq,
        ops.permute(r.data, order),
        ops,
        r.engine or engine.name,
        scale=ops.permute(r.scale, order),
        zero=None if r.zero is None else ops.permute(r.zero, order),
        tenscale=r.tenscale,
        mask=None if r.mask is None else ops.permute(r.mask, order),
        meta=None if r.meta is None else ops.permute(r.meta, order),
    )
    return first, second


def check_transposed(transposed: object) -> bool:
    """``transposed`` as a bool.

    Raises:
        SpecError: for anything but True or False.
    """
    if not isinstance(transposed, bool):
        raise SpecError(f"transposed must be True or False, got {quote(transposed)}")
    return transposed


def run_dual(
    engine: Any,
    x: Any,
    dtype: DataType,
    modes: Any,
    seed: int | None,
    rbits: Any,
    transposed: bool,
    transforms: tuple[Any, Any] = (None, None),
    givens: tuple[GivenScales | None, GivenScales | None] = (None, None),
) -> tuple[Any, Any]:
    """``cast_dual`` of checked arguments by one engine (its ``cast_dual``, else two casts).

    ``transforms``: the row and column casts' transforms (:func:`dual_requests`). ``givens``:
    each result's given scale parts (SEMANTICS.md §5.12) laid out as that result's scale
    array (with ``transposed``, the second's for ``xᵀ``: moved back here with the engine's
    ``result_ops.permute``).

    Raises:
        SpecError, UnsupportedError: as ``tcast.cast_dual``.
    """
    if transposed and givens[1] is not None:
        givens = (givens[0], _untransposed(engine, givens[1], len(getattr(x, "shape", ()))))
    rows, cols = dual_requests(engine, x, dtype, modes, seed, rbits, transforms, givens)
    for req in (rows, cols):
        if not engine.supports(req.dtype, req.modes):
            raise UnsupportedError(
                f"engine {engine.name!r} does not support {req.dtype.name} with {req.modes}"
            )
    dual = getattr(engine, "cast_dual", None)
    if dual is None:
        return dual_by_casts(engine, x, rows, cols, transposed)
    return dual(x, rows, cols, transposed)


def _untransposed(engine: Any, given: GivenScales, ndim: int) -> GivenScales:
    """Given parts laid out for ``xᵀ``'s result, laid out for the column cast of ``x``."""
    ops = getattr(engine, "result_ops", None)
    parts = {}
    for name, part in given.items():
        if name == "tensor_scale" or ndim < 2 or len(getattr(part, "shape", ())) != ndim:
            parts[name] = part  # a number, or a shape the request refuses with its message
            continue
        if ops is None:
            raise UnsupportedError(
                f"engine {engine.name!r} has no result_ops (tcast.kit.ArrayOps): it cannot "
                f"lay out a given {name} of cast_dual(transposed=True)"
            )
        require_ops(ops, ("permute",), "cast_dual(transposed=True) with given scales")
        parts[name] = ops.permute(part, _swap_order(ndim))
    return GivenScales(**parts)


def dual_with(
    engine: Any,
    x: Any,
    dtype: DataType | str,
    *,
    castmode: Any = "actual",
    roundmode: Any = "even",
    scalemode: Any = "floor",
    seed: int | None = None,
    rbits: Any = None,
    saturate: bool = True,
    transposed: bool = False,
    scale_layout: Any = "plain",
    row_transform: Any = None,
    column_transform: Any = None,
    row_scale: Any = None,
    column_scale: Any = None,
    row_zero: Any = None,
    column_zero: Any = None,
    tensor_scale: Any = None,
) -> tuple[Any, Any]:
    """``cast_dual`` with one engine from keyword arguments (an engine's public function).

    Raises:
        SpecError, UnsupportedError: as ``tcast.cast_dual``.
    """
    transposed = check_transposed(transposed)
    dt, modes, seed, transforms = dual_args(
        dtype, castmode, roundmode, scalemode, seed, rbits, saturate, scale_layout,
        row_transform, column_transform,
    )  # fmt: skip
    givens = dual_givens(row_scale, column_scale, row_zero, column_zero, tensor_scale)
    return run_dual(engine, x, dt, modes, seed, rbits, transposed, transforms, givens)


def dual_givens(
    row_scale: Any, column_scale: Any, row_zero: Any, column_zero: Any, tensor_scale: Any
) -> tuple[GivenScales | None, GivenScales | None]:
    """Each result's given scale parts (SEMANTICS.md §5.12): one tensor scale serves both."""
    return (
        given_or_none(row_scale, row_zero, tensor_scale),
        given_or_none(column_scale, column_zero, tensor_scale),
    )


def dual_args(
    dtype: Any,
    castmode: Any,
    roundmode: Any,
    scalemode: Any,
    seed: Any,
    rbits: Any,
    saturate: Any,
    scale_layout: Any,
    row_transform: Any,
    column_transform: Any,
) -> tuple[DataType, Any, int | None, tuple[Any, Any]]:
    """:func:`normalize_args` of a dual cast, and its two transforms checked.

    Returns:
        ``(datatype, modes, seed, (row transform, column transform))``; the modes carry
        no transform.

    Raises:
        SpecError: as :func:`normalize_args`; a transform that is not a ``tcast.Hadamard``.
    """
    dt, modes, seed = normalize_args(
        dtype, castmode, roundmode, scalemode, seed, rbits, saturate, False, scale_layout
    )
    transforms = (row_transform, column_transform)
    for t in transforms:
        dataclasses.replace(modes, transform=t)  # CastModes checks the type
    return dt, modes, seed, transforms
