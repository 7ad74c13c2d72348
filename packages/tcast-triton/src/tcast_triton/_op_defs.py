"""The custom ops ``tcast_triton::cast`` and ``tcast_triton::cast_dual`` (``torch.library``).

Their real implementations run the engine's eager path; their fake (meta) implementations give
the parts' shapes and dtypes from the kit's ``result_form``. The arguments and results are
written and read by ``_ops``, whose casts call these ops while Dynamo traces. Importing this
module registers the ops: the package's ``__init__`` does, after the engine.
"""

from __future__ import annotations

from typing import Any

import torch

from tcast import CastMode, CastModes, DataType
from tcast.kit import column_datatype, result_form

from ._engine import engine
from ._ops import PARTS, dtype_of, modes_of, seed_of

__all__: list[str] = []

_DTYPES = {
    "uint8": torch.uint8,
    "uint16": torch.uint16,
    "uint32": torch.uint32,
    "bool": torch.bool,
}


def _tensors(out: Any, like: torch.Tensor) -> list[torch.Tensor]:
    """A virtual tensor, or a result's parts with fresh empty tensors for missing ones."""
    if isinstance(out, torch.Tensor):
        return [out]
    return [
        p if p is not None else like.new_empty(0, dtype=torch.uint8)
        for p in (getattr(out, name) for name in PARTS)
    ]


def _fake_parts(dt: DataType, shape: tuple[int, ...], m: CastModes, like: torch.Tensor):
    """Empty tensors of a result's parts (``result_form``), placeholders for missing ones."""
    if m.castmode is CastMode.VIRTUAL:
        return [like.new_empty(shape)]
    forms = result_form(dt, shape, m.castmode, m.transpose_scale, m.scale_layout)
    out = []
    for name in PARTS:
        f = forms.get(name)
        if f is None:
            out.append(like.new_empty(0, dtype=torch.uint8))
        else:
            out.append(like.new_empty(f.shape, dtype=_DTYPES[f.dtype]))
    return out


@torch.library.custom_op("tcast_triton::cast", mutates_args=())
def _cast_op(
    x: torch.Tensor, code: str, modes: str, seed: int | None, rbits: torch.Tensor | None
) -> list[torch.Tensor]:
    req = engine.request(x, dtype_of(code), modes_of(modes), seed_of(seed), rbits)
    return _tensors(engine.run(x, req), x)


@_cast_op.register_fake
def _(x, code, modes, seed, rbits):
    return _fake_parts(dtype_of(code), tuple(x.shape), modes_of(modes), x)


@torch.library.custom_op("tcast_triton::cast_dual", mutates_args=())
def _dual_op(
    x: torch.Tensor,
    code: str,
    modes: str,
    seed: int | None,
    rbits: torch.Tensor | None,
    transposed: bool,
) -> list[torch.Tensor]:
    dt, m = dtype_of(code), modes_of(modes)
    rows = engine.request(x, dt, m, seed_of(seed), rbits)
    cols = engine.request(x, column_datatype(dt), m, seed_of(seed), rbits)
    a, b = engine.cast_dual_eager(x, rows, cols, transposed)
    return _tensors(a, x) + _tensors(b, x)


@_dual_op.register_fake
def _(x, code, modes, seed, rbits, transposed):
    dt, m = dtype_of(code), modes_of(modes)
    shape = tuple(x.shape)
    if transposed:
        second = (dt, (*shape[:-2], shape[-1], shape[-2]))
    else:
        second = (column_datatype(dt), shape)
    return _fake_parts(dt, shape, m, x) + _fake_parts(*second, m, x)
