"""Casts with a transform and their decode (SEMANTICS.md §5.11), composed from engine steps.

A cast with a transform is the cast of the transformed float32 values, and its virtual values
and upcast are the inverse transform of the decoded ones rounded to the input dtype. The
composition lives here once; an engine supplies the array steps (:class:`TransformOps`:
the transform along a dimension, and rounding float32 values to an input dtype).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from ..engine import CastResult
from ..errors import SpecError
from ..hadamard import Hadamard
from ..layout import block_layout
from ._request import CastRequest, transform_dim

__all__ = ["TransformOps", "cast_transformed", "inner_request", "upcast_transformed"]


class TransformOps(Protocol):
    """The array steps of a cast with a transform (an engine that sets ``transforms``)."""

    def hadamard(self, x: Any, h: Hadamard, dim: int, inverse: bool) -> Any:
        """The transform of ``x`` (any input dtype) along ``dim``: a float32 array (§5.10)."""
        ...

    def round_to_input(self, v: Any, input_dtype: str) -> Any:
        """float32 values rounded to nearest even in ``input_dtype``, as an array of it."""
        ...

    def widen(self, v: Any) -> Any:
        """An array of an input dtype as float32 (exact)."""
        ...


def inner_request(request: CastRequest) -> CastRequest:
    """The cast of the transformed values: ``request`` for float32 input, without transform."""
    return replace(request, modes=replace(request.modes, transform=None), input_dtype="float32")


def cast_transformed(
    ops: TransformOps, run: Callable[[Any, CastRequest], Any], x: Any, request: CastRequest
) -> Any:
    """The cast of ``x`` under ``request``'s transform (SEMANTICS.md §5.11).

    Args:
        ops: the engine's array steps.
        run: the engine's cast of a checked request (``run(t, inner)``).
        x: the input (checked against ``request``).
        request: a request with a transform.

    Returns:
        The virtual array (the inverse transform of the decoded values, rounded to x's dtype)
        or the CastResult of the transformed values, recording the transform and x's dtype.
    """
    h = request.transform
    d = transform_dim(request.dtype, request.layout, h)
    out = run(ops.hadamard(x, h, d, False), inner_request(request))
    if request.virtual:
        return ops.round_to_input(ops.hadamard(out, h, d, True), request.input_dtype)
    return replace(out, input_dtype=request.input_dtype, transform=h)


def upcast_transformed(
    ops: TransformOps, run_upcast: Callable[[CastResult], Any], result: CastResult
) -> Any:
    """The decode of a checked result with a transform: the virtual cast's values in float32.

    Raises:
        SpecError: for a ``transform`` that is not a :class:`tcast.Hadamard`, or one the
            result's datatype and shape do not take (:func:`tcast.kit.transform_dim`).
    """
    h = result.transform
    if not isinstance(h, Hadamard):
        raise SpecError(
            f"CastResult.transform must be a tcast.Hadamard or None, not {type(h).__name__}"
        )
    layout = block_layout(tuple(result.shape), result.dtype, result.transpose_scale)
    d = transform_dim(result.dtype, layout, h)
    decoded = run_upcast(replace(result, input_dtype="float32", transform=None))
    values = ops.hadamard(decoded, h, d, True)
    return ops.widen(ops.round_to_input(values, result.input_dtype))
