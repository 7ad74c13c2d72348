"""The blockwise randomized Hadamard transform, exactly (SEMANTICS.md §5.10).

Each butterfly sum and difference, the signs and the power-of-two scaling are single float32
operations (:mod:`._f32`: exact, then rounded to nearest even once).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import SpecError
from ..hadamard import Hadamard, group_dim
from ._f32 import add, is_f32, mul, sub

__all__ = ["hadamard", "hadamard_array", "hadamard_inverse"]


def _check_transform(h: object) -> None:
    if not isinstance(h, Hadamard):
        raise SpecError(f"expected a tcast.Hadamard, got {type(h).__name__}")


def _floats(xs: Sequence[float]) -> list[float]:
    try:
        return [float(x) for x in xs]
    except (TypeError, ValueError):
        raise SpecError(f"the transform takes float32 values, not {str(xs)[:80]}") from None


def _group(xs: Sequence[float], h: Hadamard) -> list[float]:
    _check_transform(h)
    v = _floats(xs)
    if len(v) != h.size:
        raise SpecError(
            f"a group of the size-{h.size} transform holds {h.size} values, not {len(v)}"
        )
    for x in v:
        if not is_f32(x):
            raise SpecError(f"{x!r} is not a float32 value")
    return v


def _butterfly(v: list[float]) -> list[float]:
    """``H_n · v`` in Sylvester order, in place.

    Stages h = 1, 2, ..., n/2; at each, every j with ``j & h == 0`` takes
    ``(v[j] + v[j+h], v[j] − v[j+h])``, each rounded to float32.
    """
    n, h = len(v), 1
    while h < n:
        for j in range(n):
            if not j & h:
                a, b = v[j], v[j + h]
                v[j], v[j + h] = add(a, b), sub(a, b)
        h *= 2
    return v


def hadamard(xs: Sequence[float], h: Hadamard) -> list[float]:
    """The forward transform of one group: ``2^-c · H_n · (s ∘ x)`` in float32.

    Args:
        xs: ``h.size`` float32 values (Python floats), in position order.
        h: the transform.

    Returns:
        The transformed group, float32 values.

    Raises:
        SpecError: for a group of another size or a value that is not a float32 value.
    """
    v = _group(xs, h)
    v = [x if s > 0 else -x for x, s in zip(v, h.signs, strict=True)]
    scale = math.ldexp(1.0, -h.shift)
    return [_positive_nan(mul(y, scale)) for y in _butterfly(v)]


def _positive_nan(y: float) -> float:
    """``y``, or +NaN for any NaN (§5.10: the sign of a propagated NaN is not kept)."""
    return math.nan if math.isnan(y) else y


def hadamard_inverse(ys: Sequence[float], h: Hadamard) -> list[float]:
    """The inverse transform of one group: ``s ∘ (2^-(k−c) · H_n · y)`` in float32.

    ``H_n · H_n = n · I`` and ``s ∘ s`` is all ones, so this undoes :func:`hadamard` up to
    the roundings of both (exactly where no operation of either rounds).

    Raises:
        SpecError: as :func:`hadamard`.
    """
    v = _group(ys, h)
    scale = math.ldexp(1.0, -h.inverse_shift)
    out = [mul(y, scale) for y in _butterfly(v)]
    return [_positive_nan(y if s > 0 else -y) for y, s in zip(out, h.signs, strict=True)]


def hadamard_array(
    values: Sequence[float],
    shape: Sequence[int],
    dim: int,
    h: Hadamard,
    inverse: bool = False,
) -> list[float]:
    """The transform of every group of an array: ``h.size`` consecutive elements along ``dim``.

    Args:
        values: the array's float32 values, flat in C order.
        shape: its shape.
        dim: the dimension the groups run along (negative counts from the end); its length
            must be a multiple of ``h.size``.
        h: the transform.
        inverse: apply :func:`hadamard_inverse` instead.

    Returns:
        The transformed values, flat in C order.

    Raises:
        SpecError: for a dimension the shape lacks, a length that is not a multiple of the
            group size, or values that do not fill the shape.
    """
    shape = tuple(int(n) for n in shape)
    d = group_dim(shape, dim, h)
    out = _floats(values)
    if len(out) != math.prod(shape):
        raise SpecError(f"{len(out)} values do not fill shape {shape}")
    if not out:
        return out  # an empty array: no group
    step = math.prod(shape[d + 1 :])  # C-order distance between neighbours along d
    span = shape[d] * step
    f = hadamard_inverse if inverse else hadamard
    for outer in range(0, len(out), span):
        for inner in range(step):
            for g in range(0, shape[d], h.size):
                idx = [outer + inner + (g + i) * step for i in range(h.size)]
                for i, y in zip(idx, f([out[i] for i in idx], h), strict=True):
                    out[i] = y
    return out
