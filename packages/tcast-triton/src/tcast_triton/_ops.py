"""Casts while Dynamo traces, through the ``torch.library`` custom ops, and the ops' arguments.

Dynamo cannot trace a Triton launch through the engine's Python (plans, caches, the launch
objects of ``_fastlaunch``), so while it traces, ``TritonEngine.run`` and ``cast_dual`` call
the ops instead (:func:`cast_traced`, :func:`dual_traced`): ``tcast_triton::cast`` and
``tcast_triton::cast_dual`` (defined in ``_op_defs``) take the input, the datatype's code, the
modes as one string, the seed and the random bits, run the engine's eager path, and return the
result's tensors (a fresh empty tensor for a part the datatype lacks; :data:`PARTS`). Their
fake (meta) implementations give the output shapes and dtypes from the kit's
``result_form``, so a compiled graph holds one opaque node per cast and no graph break.

Every argument but the tensors is a compile-time constant of the graph, except the seed:
an ``int`` (two's complement of the 64-bit seed), which Dynamo turns into a symbol once it
sees a second value, so a new seed per step does not recompile. Symbols are int64: a seed
of 2**63 or more reaches the compiled function as a constant (right bits, one recompile per
such seed); ``quantize_model``'s derived seeds are 64-bit hashes, so half of them are. Outside
a trace the engine runs its Python directly (no op dispatch in eager calls).

This module writes the arguments and reads the results; ``_op_defs`` reads the arguments (the
inverse functions here) and writes the results. It does not import the engine, which calls it.
"""

from __future__ import annotations

from typing import Any

import torch

from tcast import CastModes, CastResult, DataType, datatype
from tcast.kit import CastRequest, result_form, transposed_request

__all__ = [
    "PARTS",
    "cast_traced",
    "dtype_of",
    "dual_traced",
    "modes_of",
    "modes_text",
    "seed_arg",
    "seed_of",
]

#: The result's parts, in the order the ops return them.
PARTS = ("data", "scale", "zero", "tenscale", "mask")
# datatypes and modes by their strings, inside the ops only (never traced)
_SEEN_DTYPES: dict[str, DataType] = {}
_SEEN_MODES: dict[str, CastModes] = {}


def modes_text(m: CastModes) -> str:
    """The modes as the ops' one string: ``castmode/roundmode/scalemode/sat/tr/layout``."""
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


def modes_of(text: str) -> CastModes:
    """The modes of :func:`modes_text`'s string (one object per string)."""
    m = _SEEN_MODES.get(text)
    if m is None:
        cm, rm, sm, sat, tr, lay = text.split("/")
        m = _SEEN_MODES[text] = CastModes.of(cm, rm, sm, sat == "1", tr == "1", lay)
    return m


def dtype_of(code: str) -> DataType:
    """The datatype of a code (one object per code)."""
    dt = _SEEN_DTYPES.get(code)
    if dt is None:
        dt = _SEEN_DTYPES[code] = datatype(code)
    return dt


def seed_arg(seed: int | None) -> int | None:
    """The 64-bit seed as an int64 (two's complement)."""
    if seed is None:
        return None
    return seed - (1 << 64) if seed >= 1 << 63 else seed


def seed_of(arg: int | None) -> int | None:
    """The 64-bit seed of :func:`seed_arg`'s int64."""
    return None if arg is None else arg % (1 << 64)


def _result(req: CastRequest, parts: list[torch.Tensor]) -> torch.Tensor | CastResult:
    """The engine's result of ``req`` from the op's tensors."""
    if req.virtual:
        return parts[0]
    dt = req.dtype
    forms = result_form(dt, req.shape, req.castmode, req.transpose_scale, req.modes.scale_layout)
    have = {name: (p if name in forms else None) for name, p in zip(PARTS, parts, strict=True)}
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
        x, req.dtype.code, modes_text(req.modes), seed_arg(req.seed), req.rbits
    )
    return _result(req, parts)


def dual_traced(
    x: torch.Tensor, rows: CastRequest, cols: CastRequest, transposed: bool
) -> tuple[Any, Any]:
    """Both casts of ``cast_dual`` through ``tcast_triton::cast_dual`` (while Dynamo traces)."""
    parts = torch.ops.tcast_triton.cast_dual(
        x,
        rows.dtype.code,
        modes_text(rows.modes),
        seed_arg(rows.seed),
        rows.rbits,
        transposed,
    )
    second = transposed_request(rows, cols) if transposed else cols
    k = 1 if rows.virtual else len(PARTS)
    return _result(rows, parts[:k]), _result(second, parts[k:])
