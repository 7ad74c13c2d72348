"""Custom ops that carry an engine's casts through ``torch.compile`` (:class:`CastOps`).

Dynamo cannot trace an engine's launch code (plans, caches, kernel launch objects), so while
it traces, the engine calls two ``torch.library`` ops instead: ``<namespace>::cast`` and
``<namespace>::cast_dual``. They take the input, the datatype's code, the modes as one
string, the seed, the random bits and, as optional tensors after them, the given scale parts
(SEMANTICS.md §5.12: ``scale``, ``zero``, ``tensor_scale``; the dual op each result's and one
tensor scale); their real implementations make the engine's request from them and run its
eager path. Given parts are inputs of the graph like ``x``: new values of the same shape run
the same compiled graph. The request is made when the op runs, on real tensors, without
reading the given values (``_accept.values_unread``): a value a check would refuse makes its
blocks non-finite, on every backend (SEMANTICS.md §5.12, "Values a check cannot read").

By default both are opaque custom ops: their fake (meta) implementations give the output
shapes and dtypes from the kit's ``result_form``, so a compiled graph holds one opaque node
per cast and no graph break. An engine whose kernels are Triton ``@triton.jit`` functions may
register ``<namespace>::cast`` through ``torch.library.triton_op`` instead
(``CastOps(namespace, engine, triton=True)``): AOTAutograd then traces the op's body, the
engine's eager path run on fake tensors, and the kernels it launches reach the graph as
``triton_kernel_wrapper_functional`` nodes that Inductor compiles, schedules and fuses with
their neighbours (``mode="reduce-overhead"`` captures them in its CUDA graphs). While that
body runs, :func:`traced_launches` is True and the engine launches each kernel through
``torch.library.wrap_triton(kernel)[grid](...)``; every other host step of that path must work
on fake tensors (no ``data_ptr``, no ``.item()``, no device synchronization). On symbolic
sizes the body calls the opaque ``<namespace>::cast_dynamic`` instead. The dual op
stays opaque: ``wrap_triton`` takes ``@triton.jit`` kernels, and Inductor re-emits a user
kernel as ``@triton.jit`` source, which a Gluon kernel is not.

Every argument but the tensors is a compile-time constant of the graph, except the seed: an
``int`` (two's complement of the 64-bit seed), which Dynamo turns into a symbol once it sees a
second value, so a new seed per step does not recompile. Symbols are int64: a seed of 2**63
or more reaches the compiled function as a constant (right bits, one recompile per such
seed).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import warnings
from collections.abc import Iterator
from typing import Any, Protocol

import torch

from tcast import CastMode, CastModes, CastResult, DataType, NameWarning, datatype
from tcast.kit import (
    CastRequest,
    GivenScales,
    column_datatype,
    given_or_none,
    result_form,
    transposed_request,
)

from ._accept import resolved, values_unread

__all__ = [
    "PARTS",
    "CastOps",
    "EagerEngine",
    "modes_of",
    "modes_text",
    "seed_arg",
    "seed_of",
    "traced_launches",
]

#: The result's parts, in the order the ops return them.
PARTS = ("data", "scale", "zero", "tenscale", "mask")

# modes and datatypes by their strings, read by the ops' implementations (never traced by
# Dynamo); a handful of entries each
_MODES: dict[str, CastModes] = {}
_DATATYPES: dict[str, DataType] = {}


# set while the body of a triton_op cast is traced (one value per thread and async task)
_TRACED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "tcast_traced_launches", default=False
)


def traced_launches() -> bool:
    """Whether kernel launches are being traced into a graph rather than run.

    True only while the body of a ``CastOps(..., triton=True)`` cast op runs to be traced
    (Dynamo's fake-tensor pass, AOTAutograd's functional pass): the engine then launches
    each ``@triton.jit`` kernel through ``torch.library.wrap_triton(kernel)[grid](...)``,
    whose call becomes a node of the graph, and does no host work that needs real tensors
    (``data_ptr``, ``.item()``, device synchronization). The request's seed there is the
    int64 two's complement of the 64-bit seed (:func:`seed_arg`), an ``int`` or a symbol:
    the kernels read its 64 bits; :func:`seed_of` gives the seed in ``[0, 2**64)``.
    False everywhere else, including the op's own eager implementation.
    """
    return _TRACED.get()


@contextlib.contextmanager
def _tracing() -> Iterator[None]:
    token = _TRACED.set(True)
    try:
        yield
    finally:
        _TRACED.reset(token)


def _datatype(code: str) -> DataType:
    """The datatype of a request's code (one object per code), without a look-alike warning.

    The code is the engine's own spelling of a datatype the caller chose; a NameWarning, if
    its name deserves one, was the caller's when the name was parsed.
    """
    dt = _DATATYPES.get(code)
    if dt is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NameWarning)
            dt = _DATATYPES[code] = datatype(code)
    return dt


_DTYPES = {
    "uint8": torch.uint8,
    "uint16": torch.uint16,
    "uint32": torch.uint32,
    "bool": torch.bool,
}


class EagerEngine(Protocol):
    """What :class:`CastOps` calls on the engine, outside any trace."""

    name: str

    def request(
        self,
        x: torch.Tensor,
        dtype: DataType,
        modes: CastModes,
        seed: int | None,
        rbits: Any,
        given: GivenScales | None = None,
    ) -> CastRequest:
        """The checked request (``tcast.kit.EngineBase.request``).

        ``given`` is passed only for a cast with given scale parts (an engine that takes
        none may leave the argument out).
        """
        ...

    def run_eager(self, x: torch.Tensor, request: CastRequest) -> torch.Tensor | CastResult:
        """The cast's values by the engine's kernels, no autograd, outside any trace."""
        ...

    def cast_dual_eager(
        self, x: torch.Tensor, rows: CastRequest, cols: CastRequest, transposed: bool
    ) -> tuple[Any, Any]:
        """Both casts of ``tcast.cast_dual`` outside any trace."""
        ...


def modes_text(m: CastModes) -> str:
    """The modes as the ops' one string: ``castmode/roundmode/scalemode/sat/tr/layout/stream``."""
    return "/".join(
        (
            m.castmode.value,
            m.roundmode.value,
            m.scalemode.value,
            str(int(m.saturate)),
            str(int(m.transpose_scale)),
            m.scale_layout.value,
            str(m.stream),
        )
    )


def modes_of(text: str) -> CastModes:
    """The modes of :func:`modes_text`'s string (one object per string)."""
    m = _MODES.get(text)
    if m is None:
        cm, rm, sm, sat, tr, lay, stream = text.split("/")
        m = _MODES[text] = CastModes.of(cm, rm, sm, sat == "1", tr == "1", lay, stream=int(stream))
    return m


def seed_arg(seed: int | None) -> int | None:
    """The 64-bit seed as an int64 (two's complement)."""
    if seed is None:
        return None
    return seed - (1 << 64) if seed >= 1 << 63 else seed


def seed_of(arg: int | None) -> int | None:
    """The 64-bit seed of :func:`seed_arg`'s int64."""
    return None if arg is None else arg % (1 << 64)


def _request(
    engine: EagerEngine,
    x: torch.Tensor,
    dt: DataType,
    modes: CastModes,
    seed: int | None,
    rbits: torch.Tensor | None,
    given: GivenScales | None,
) -> CastRequest:
    """The engine's request of an op's arguments (``given`` passed only where there is one)."""
    if given is None:
        return engine.request(x, dt, modes, seed, rbits)
    return engine.request(x, dt, modes, seed, rbits, given)


def _given_args(req: CastRequest) -> tuple[torch.Tensor | None, ...]:
    """A request's given parts as the cast op's trailing arguments (none when none given)."""
    g = req.given
    return () if g is None else (g.scale, g.zero, g.tensor_scale)


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


class CastOps:
    """The two ops of one engine, and the casts through them while Dynamo traces.

    ``CastOps("myengine", engine)`` registers ``myengine::cast`` and ``myengine::cast_dual``
    (once per process: build it at import, next to the engine). While Dynamo traces, the
    engine's ``run`` calls :meth:`cast` and its ``cast_dual`` calls :meth:`dual`; outside a
    trace it runs its own Python directly (no op dispatch in eager calls).

    With ``triton=True``, ``myengine::cast`` is a ``torch.library.triton_op``: the engine's
    kernels become nodes of the compiled graph. Its body is ``engine.request`` and
    ``engine.run_eager`` with :func:`traced_launches` True, run on fake tensors while the
    graph is traced; ``run_eager`` must then launch every kernel through
    ``torch.library.wrap_triton`` and do only what fake tensors allow. The op's eager
    implementation (a graph that keeps the op, as ``backend="eager"`` or
    ``torch.export`` do) is ``run_eager`` with :func:`traced_launches` False. Inputs of
    symbolic sizes (dynamic shapes) take the opaque custom op ``myengine::cast_dynamic``.
    ``myengine::cast_dual`` is an opaque custom op either way.

    Args:
        namespace: the ``torch.library`` namespace (the engine's package name).
        engine: the engine (:class:`EagerEngine`).
        triton: register ``<namespace>::cast`` with ``torch.library.triton_op``.
    """

    def __init__(self, namespace: str, engine: EagerEngine, *, triton: bool = False) -> None:
        self.namespace = namespace
        self.engine = engine
        self.triton = triton
        self._define()

    def _define(self) -> None:
        ns, engine = self.namespace, self.engine

        def cast_eager(
            x: torch.Tensor,
            code: str,
            modes: str,
            seed: int | None,
            rbits: torch.Tensor | None,
            scale: torch.Tensor | None = None,
            zero: torch.Tensor | None = None,
            tensor_scale: torch.Tensor | None = None,
        ) -> list[torch.Tensor]:
            given = given_or_none(scale, zero, tensor_scale)
            # a graph's op: given values are not read (SEMANTICS.md §5.12), on every backend
            with values_unread():
                req = _request(
                    engine, x, _datatype(code), modes_of(modes), seed_of(seed), rbits, given
                )
            return _tensors(engine.run_eager(resolved(x), req), x)

        opaque = torch.library.custom_op(
            f"{ns}::cast_dynamic" if self.triton else f"{ns}::cast", cast_eager, mutates_args=()
        )

        @opaque.register_fake
        def _(x, code, modes, seed, rbits, scale=None, zero=None, tensor_scale=None):
            return _fake_parts(_datatype(code), tuple(x.shape), modes_of(modes), x)

        if self.triton:

            def cast_op(x, code, modes, seed, rbits, scale=None, zero=None, tensor_scale=None):
                if not all(type(n) is int for n in x.shape):
                    # symbolic sizes (dynamic shapes): the engine plans for concrete sizes;
                    # the opaque op's fake implementation needs only the kit's result_form
                    return opaque(x, code, modes, seed, rbits, scale, zero, tensor_scale)
                # traced: the seed stays the op's int64 (a symbol after Dynamo's second seed)
                given = given_or_none(scale, zero, tensor_scale)
                req = _request(engine, x, _datatype(code), modes_of(modes), seed, rbits, given)
                with _tracing():
                    return _tensors(engine.run_eager(resolved(x), req), x)

            # the opaque op's schema: triton_op infers it from the signature
            cast_op.__signature__ = inspect.signature(cast_eager)
            cast_op = torch.library.triton_op(f"{ns}::cast", mutates_args=())(cast_op)
            # real tensors take the engine's own launches, not wrap_triton's plain path
            cast_op.register_kernel(None, cast_eager)

        @torch.library.custom_op(f"{ns}::cast_dual", mutates_args=())
        def dual_op(
            x: torch.Tensor,
            code: str,
            modes: str,
            seed: int | None,
            rbits: torch.Tensor | None,
            transposed: bool,
            row_scale: torch.Tensor | None = None,
            column_scale: torch.Tensor | None = None,
            row_zero: torch.Tensor | None = None,
            column_zero: torch.Tensor | None = None,
            tensor_scale: torch.Tensor | None = None,
        ) -> list[torch.Tensor]:
            dt, m, s = _datatype(code), modes_of(modes), seed_of(seed)
            # a seeded column cast draws stream 1 (SEMANTICS.md §8.2); the column parts are
            # laid out for the column cast of x (tcast.kit.run_dual moved them back)
            cm = m if seed is None else dataclasses.replace(m, stream=1)
            with values_unread():  # a graph's op: given values are not read (§5.12)
                rows = _request(
                    engine, x, dt, m, s, rbits, given_or_none(row_scale, row_zero, tensor_scale)
                )
                cols = _request(
                    engine,
                    x,
                    column_datatype(dt),
                    cm,
                    s,
                    rbits,
                    given_or_none(column_scale, column_zero, tensor_scale),
                )
            a, b = engine.cast_dual_eager(resolved(x), rows, cols, transposed)
            return _tensors(a, x) + _tensors(b, x)

        @dual_op.register_fake
        def _(x, code, modes, seed, rbits, transposed, *given):
            dt, m = _datatype(code), modes_of(modes)
            shape = tuple(x.shape)
            if transposed:
                second = (dt, (*shape[:-2], shape[-1], shape[-2]))
            else:
                second = (column_datatype(dt), shape)
            return _fake_parts(dt, shape, m, x) + _fake_parts(*second, m, x)

        self._cast_op = getattr(torch.ops, ns).cast
        self._dual_op = getattr(torch.ops, ns).cast_dual

    def result(self, req: CastRequest, parts: list[torch.Tensor]) -> torch.Tensor | CastResult:
        """The engine's result of ``req`` from an op's tensors."""
        if req.virtual:
            return parts[0]
        dt = req.dtype
        forms = result_form(
            dt, req.shape, req.castmode, req.transpose_scale, req.modes.scale_layout
        )
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
            engine=self.engine.name,
            extra={"bits": dt.nspec.bits},
            scale_layout=req.modes.scale_layout,
        )

    def cast(self, x: torch.Tensor, req: CastRequest) -> torch.Tensor | CastResult:
        """The cast of a checked request through ``<namespace>::cast``.

        The request's given scale parts (SEMANTICS.md §5.12) are the op's tensor inputs.
        """
        m, seed = modes_text(req.modes), seed_arg(req.seed)
        parts = self._cast_op(x, req.dtype.code, m, seed, req.rbits, *_given_args(req))
        return self.result(req, parts)

    def dual(
        self, x: torch.Tensor, rows: CastRequest, cols: CastRequest, transposed: bool
    ) -> tuple[Any, Any]:
        """Both casts of ``cast_dual`` through ``<namespace>::cast_dual``.

        Each request's given scale parts (the column ones laid out for the column cast of
        ``x``) are the op's tensor inputs; one tensor scale serves both.
        """
        given = ()
        if rows.given is not None or cols.given is not None:
            none = GivenScales()
            r = none if rows.given is None else rows.given
            c = none if cols.given is None else cols.given
            tensor_scale = r.tensor_scale if r.tensor_scale is not None else c.tensor_scale
            given = (r.scale, c.scale, r.zero, c.zero, tensor_scale)
        parts = self._dual_op(
            x,
            rows.dtype.code,
            modes_text(rows.modes),
            seed_arg(rows.seed),
            rows.rbits,
            transposed,
            *given,
        )
        second = transposed_request(rows, cols) if transposed else cols
        k = 1 if rows.virtual else len(PARTS)
        return self.result(rows, parts[:k]), self.result(second, parts[k:])
