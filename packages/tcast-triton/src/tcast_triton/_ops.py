"""The Triton engine as ``torch.library`` custom ops: casts inside ``torch.compile``.

Dynamo cannot trace a Triton launch through the engine's Python (plans, caches, the launch
objects of ``_fastlaunch``), so while it traces, ``TritonEngine.run`` and ``cast_dual`` call
these ops instead: ``tcast_triton::cast`` and ``tcast_triton::cast_dual`` take the input, the
datatype's code, the modes as one string, the seed and the random bits, run the engine's
eager path, and return the result's tensors (a fresh empty tensor for a part the datatype
lacks). Their fake (meta) implementations give the output shapes and dtypes from the kit's
``result_form``, so a compiled graph holds one opaque node per cast and no graph break.

Every argument but the tensors is a compile-time constant of the graph, except the seed:
an ``int`` (two's complement of the 64-bit seed), which Dynamo turns into a symbol once it
sees a second value, so a new seed per step does not recompile. Symbols are int64: a seed
of 2**63 or more reaches the compiled function as a constant (right bits, one recompile per
such seed); ``quantize_model``'s derived seeds are 64-bit hashes, so half of them are. Outside
a trace the engine runs its Python directly (no op dispatch in eager calls).
"""

from __future__ import annotations

from typing import Any

import torch

from tcast import CastMode, CastModes, CastResult, DataType, datatype
from tcast.kit import CastRequest, column_datatype, result_form, transposed_request

__all__ = ["cast_traced", "dual_traced"]

_DTYPES = {
    "uint8": torch.uint8,
    "uint16": torch.uint16,
    "uint32": torch.uint32,
    "bool": torch.bool,
}
_PARTS = ("data", "scale", "zero", "tenscale", "mask")
# datatypes and modes by their strings, inside the ops only (never traced)
_SEEN_DTYPES: dict[str, DataType] = {}
_SEEN_MODES: dict[str, CastModes] = {}


def _modes_text(m: CastModes) -> str:
    return "/".join(
        (
            m.castmode.value,
            m.roundmode.value,
            m.scalemode.value,
            str(int(m.saturate)),
            str(int(m.transpose_scale)),
            m.scale_layout.value,
        )
    )


def _modes_of(text: str) -> CastModes:
    m = _SEEN_MODES.get(text)
    if m is None:
        cm, rm, sm, sat, tr, lay = text.split("/")
        m = _SEEN_MODES[text] = CastModes.of(cm, rm, sm, sat == "1", tr == "1", lay)
    return m


def _dtype_of(code: str) -> DataType:
    dt = _SEEN_DTYPES.get(code)
    if dt is None:
        dt = _SEEN_DTYPES[code] = datatype(code)
    return dt


def _seed_arg(seed: int | None) -> int | None:
    """The 64-bit seed as an int64 (two's complement)."""
    if seed is None:
        return None
    return seed - (1 << 64) if seed >= 1 << 63 else seed


def _seed_of(arg: int | None) -> int | None:
    return None if arg is None else arg % (1 << 64)


def _engine():
    from ._engine import engine

    return engine


def _tensors(out: Any, like: torch.Tensor) -> list[torch.Tensor]:
    """A virtual tensor, or a result's parts with fresh empty tensors for missing ones."""
    if isinstance(out, torch.Tensor):
        return [out]
    return [
        p if p is not None else like.new_empty(0, dtype=torch.uint8)
        for p in (getattr(out, name) for name in _PARTS)
    ]


def _fake_parts(dt: DataType, shape: tuple[int, ...], m: CastModes, like: torch.Tensor):
    """Empty tensors of a result's parts (``result_form``), placeholders for missing ones."""
    if m.castmode is CastMode.VIRTUAL:
        return [like.new_empty(shape)]
    forms = result_form(dt, shape, m.castmode, m.transpose_scale, m.scale_layout)
    out = []
    for name in _PARTS:
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
    eng = _engine()
    req = eng.request(x, _dtype_of(code), _modes_of(modes), _seed_of(seed), rbits)
    return _tensors(eng.run(x, req), x)


@_cast_op.register_fake
def _(x, code, modes, seed, rbits):
    return _fake_parts(_dtype_of(code), tuple(x.shape), _modes_of(modes), x)


@torch.library.custom_op("tcast_triton::cast_dual", mutates_args=())
def _dual_op(
    x: torch.Tensor,
    code: str,
    modes: str,
    seed: int | None,
    rbits: torch.Tensor | None,
    transposed: bool,
) -> list[torch.Tensor]:
    eng = _engine()
    dt, m = _dtype_of(code), _modes_of(modes)
    rows = eng.request(x, dt, m, _seed_of(seed), rbits)
    cols = eng.request(x, column_datatype(dt), m, _seed_of(seed), rbits)
    a, b = eng.cast_dual_eager(x, rows, cols, transposed)
    return _tensors(a, x) + _tensors(b, x)


@_dual_op.register_fake
def _(x, code, modes, seed, rbits, transposed):
    dt, m = _dtype_of(code), _modes_of(modes)
    shape = tuple(x.shape)
    if transposed:
        second = (dt, (*shape[:-2], shape[-1], shape[-2]))
    else:
        second = (column_datatype(dt), shape)
    return _fake_parts(dt, shape, m, x) + _fake_parts(*second, m, x)


def _result(req: CastRequest, parts: list[torch.Tensor]) -> torch.Tensor | CastResult:
    """The engine's result of ``req`` from the op's tensors."""
    if req.virtual:
        return parts[0]
    dt = req.dtype
    forms = result_form(dt, req.shape, req.castmode, req.transpose_scale, req.modes.scale_layout)
    have = {name: (p if name in forms else None) for name, p in zip(_PARTS, parts, strict=True)}
    return CastResult(
        data=have["data"],
        scale=have["scale"],
        zero=have["zero"],
        tenscale=have["tenscale"],
        mask=have["mask"],
        meta=None,
        dtype=dt,
        shape=req.shape,
        castmode=req.castmode,
        input_dtype=req.input_dtype,
        transpose_scale=req.transpose_scale and req.layout is not None,
        engine="triton",
        extra={"bits": dt.nspec.bits},
        scale_layout=req.modes.scale_layout,
    )


def cast_traced(x: torch.Tensor, req: CastRequest) -> torch.Tensor | CastResult:
    """The cast of a checked request through ``tcast_triton::cast`` (while Dynamo traces)."""
    parts = torch.ops.tcast_triton.cast(
        x, req.dtype.code, _modes_text(req.modes), _seed_arg(req.seed), req.rbits
    )
    return _result(req, parts)


def dual_traced(
    x: torch.Tensor, rows: CastRequest, cols: CastRequest, transposed: bool
) -> tuple[Any, Any]:
    """Both casts of ``cast_dual`` through ``tcast_triton::cast_dual`` (while Dynamo traces)."""
    parts = torch.ops.tcast_triton.cast_dual(
        x,
        rows.dtype.code,
        _modes_text(rows.modes),
        _seed_arg(rows.seed),
        rows.rbits,
        transposed,
    )
    second = transposed_request(rows, cols) if transposed else cols
    k = 1 if rows.virtual else len(_PARTS)
    return _result(rows, parts[:k]), _result(second, parts[k:])
