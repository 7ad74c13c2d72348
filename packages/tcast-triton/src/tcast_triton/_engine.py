"""The ``triton`` engine object registered under the ``tcast.engines`` entry-point group."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import torch

from tcast import CastModes, CastResult, DataType, Hadamard, RoundMode, UnsupportedError
from tcast.kit import CastRequest, EngineBase, GivenScales, dual_by_casts, normalize_seed
from tcast_torch import engine as torch_engine
from tcast_torch.toolkit import (
    TORCH_TRANSFORMS,
    CastOps,
    DTensorCalls,
    cast_dtensor,
    cast_transformed_grad,
    dtensor_refusal,
    dtensor_result,
    dual_dtensor,
    is_dtensor,
    resolved,
    seed_of,
    tensor_refusal,
    traced_launches,
    upcast_dtensor,
)

from ._cast_launch import run_cast, tiled_supported
from ._device import on_device
from ._fallback import relabel, torch_cast
from ._fastcast import CallsByRequest, fast_cast, plain_input
from ._given import check_given, given_refusal
from ._launch import fused_transform, interpreting, tensor_maxima
from ._launch_dual import run_dual
from ._local import TritonLocal
from ._pack import OPS
from ._plain import cast_eager, cast_plain
from ._upcast import run_upcast

__all__ = ["CAST_OPS", "TritonEngine", "engine"]

#: Entries of each of the engine's host-path caches (emptied when full).
_MAX_REMEMBERED = 4096
#: The least int32: a traced seed's int64 below it goes to tcast_torch's cast (run_eager).
_I32_MIN = -(2**31)


class TritonEngine(EngineBase):
    """The Triton engine: CUDA tensors (CPU tensors only under ``TRITON_INTERPRET=1``).

    It outranks ``torch`` for the tensors it accepts; the front door falls back to
    ``tcast_torch`` for the requests :meth:`supports` refuses.
    """

    name = "triton"
    priority = 10
    array_type = torch.Tensor
    array_what = "CUDA torch tensors"
    array_one = "a CUDA torch tensor"
    result_ops = OPS
    transforms = True
    given_scales = True

    def accepts(self, x: Any) -> bool:
        """CUDA tensors; CPU tensors too while Triton interprets (``TRITON_INTERPRET=1``).

        DTensors of such local tensors too: each process casts its shard by the kernels
        (``tcast_torch.toolkit.cast_dtensor`` with this engine's ``_local.TritonLocal``).
        """
        if not isinstance(x, torch.Tensor):
            return False
        return x.device.type == "cuda" or (interpreting() and x.device.type == "cpu")

    def __init__(self) -> None:
        # checked requests and supports() answers of repeated calls (host time): see request()
        self._requests: dict[tuple, CastRequest] = {}
        self._supported: dict[tuple, bool] = {}
        # call objects of checked requests on plain tensors and DTensors: see cast()
        self._calls = CallsByRequest()
        # the seeded requests request() made lately, with the request each was made from
        # (held: an id is not reused while its entry lives)
        self._seeded: dict[int, tuple[CastRequest, CastRequest]] = {}
        self.dtensor_calls = DTensorCalls()

    def cast(self, x: Any, request: CastRequest) -> torch.Tensor | CastResult:
        """``EngineBase.cast``; a repeated cast of a plain tensor through its call object.

        The first cast of a request (this very object: :meth:`request` remembers them) is
        checked as ``EngineBase.cast`` checks it and makes the call object (``_fastcast``),
        which casts it; later casts of the request on a tensor of its shape and dtype that
        the call object takes skip the checks. A DTensor whose cast makes no collective
        likewise (``tcast_torch.toolkit.DTensorCalls``). Outside a trace only.
        """
        if (
            isinstance(request, CastRequest)
            and request.rbits is None
            and not torch.compiler.is_compiling()
        ):
            if type(x) is torch.Tensor:
                if request.seed is None:
                    fast = self._calls.get(x, request, self.check_request)
                else:
                    # a seeded request of request(): found by the one it was made from (the
                    # seed is a launch argument); another seeded request goes the general way
                    hit = self._seeded.get(id(request))
                    fast = None
                    if hit is not None and hit[0] is request:
                        fast = self._calls.get(x, hit[1], self.check_request, request)
                if fast is not None and fast.takes(x):
                    return fast(x) if request.seed is None else fast(x, request.seed)
            elif request.seed is None and is_dtensor(x):
                call = self.dtensor_call(x, request, "ste")
                if call is not None and call.takes(x):
                    return call(x)
        if isinstance(request, CastRequest) and request.modes.transform is not None:
            return self.cast_grad(x, request, "ste")  # the transform's exact gradient
        return super().cast(x, request)

    def call_for(self, x: Any, dtype: DataType, modes: CastModes, seed: int | None) -> Any:
        """``EngineBase.call_for``: the call object of a plain tensor's or a DTensor's cast.

        A plain tensor's is ``_fastcast``'s; a DTensor's is ``tcast_torch.toolkit``'s
        ``DTensorCall`` (a cast without a seed whose plan makes no collective:
        :meth:`dtensor_call`). None for tensor subclasses, inputs the general path copies
        first (:func:`_fastcast.plain_input`), a virtual cast that must give a gradient
        (asked on each such call: answered before any request is made), transforms, and
        requests the call objects do not serve (:func:`_fastcast.fast_cast`); the checks of
        a first cast run here.
        """
        if is_dtensor(x):
            if (
                seed is not None
                or modes.transform is not None
                or x.requires_grad
                or torch.compiler.is_compiling()
                or not self.accepts(x)
                or self.refusal(x) is not None
            ):
                return None
            return self.dtensor_call(x, self.request(x, dtype, modes, None, None), "ste")
        if (
            type(x) is not torch.Tensor
            or modes.transform is not None
            or (modes.virtual_mode and x.requires_grad and torch.is_grad_enabled())
            or torch.compiler.is_compiling()
            or not self.accepts(x)
            or self.refusal(x) is not None
            or not plain_input(x)
        ):
            return None
        req = self.request(x, dtype, modes, seed, None)
        self.check_request(x, req)
        return fast_cast(x, req)

    def dtensor_call(self, x: Any, request: CastRequest, grad: str) -> Any:
        """The call object of a repeated DTensor cast (``toolkit.DTensorCall``), or None.

        ``x`` is checked against ``request`` before a call object is made for it. None for a
        request with given scale parts (refused for DTensors: :meth:`run_grad`).
        """
        if request.given is not None:
            return None
        return self.dtensor_calls.get(x, request, TRITON_LOCAL, grad, self.check_request)

    def request(
        self,
        x: Any,
        dtype: DataType,
        modes: CastModes,
        seed: int | None,
        rbits: Any,
        given: GivenScales | None = None,
    ) -> CastRequest:
        """``EngineBase.request``, remembered for tensors and DTensors without given bits.

        A request depends on x only through its (global) shape and dtype name, and on the
        checks of x (:meth:`accepts`, :meth:`refusal`), which run on every call. A seeded
        request (stochastic rounding) is the remembered one with the seed, checked; the
        engine's :meth:`cast` serves it through the call object of the one without it.
        Outside a trace only: a compiled function reading the cache would be guarded on its
        contents.
        """
        if given is not None:  # checked afresh each time (check_given): never remembered
            return super().request(x, dtype, modes, seed, rbits, given)
        if (
            rbits is not None
            or torch.compiler.is_compiling()
            or (seed is not None and modes.roundmode is not RoundMode.STOCHASTIC)
        ):
            return super().request(x, dtype, modes, seed, rbits)
        plain = type(x) is torch.Tensor or is_dtensor(x)  # a DTensor's request: global shape
        if not plain or not self.accepts(x) or self.refusal(x) is not None:
            return super().request(x, dtype, modes, seed, rbits)  # refuses as it should
        key = (dtype, dtype.name, modes, x.shape, x.dtype)  # the name labels the result
        req = self._requests.get(key)
        if req is None:
            if len(self._requests) >= _MAX_REMEMBERED:
                self._requests.clear()
            # the request without a seed (a seeded one is made from it below)
            req = self._requests[key] = super().request(x, dtype, modes, None, None)
        if seed is None:
            return req
        # a seeded request: the remembered one with the checked seed, which cast() serves
        # through the call object of the request without it (the seed is a launch argument)
        seeded = replace(req, seed=normalize_seed(seed))
        if len(self._seeded) >= 64:
            self._seeded.clear()
        self._seeded[id(seeded)] = (seeded, req)
        return seeded

    def supports(self, dtype: DataType, modes: CastModes) -> bool:
        """Whether the kernels cover ``dtype`` under ``modes``.

        Unscaled datatypes, tensor scales and one or two tile segments along any dimensions
        (channels, ``transpose_scale``), dense or N-of-M sparse, every element format, scale
        format, round, scale and cast mode. Subtiles (exponent offsets) and codebook data
        are refused: ``EngineBase.supports`` refuses them (``subtiles_and_codebooks`` is
        False), and ``tiled_supported`` does not cover them.
        """
        if torch.compiler.is_compiling():
            return super().supports(dtype, modes) and tiled_supported(dtype)
        try:
            key = (dtype, modes)
            ok = self._supported.get(key)
        except TypeError:  # not a DataType and CastModes: refused
            return False
        if ok is None:
            ok = super().supports(dtype, modes) and tiled_supported(dtype)
            if len(self._supported) >= _MAX_REMEMBERED:
                self._supported.clear()
            self._supported[key] = ok
        return ok

    def refusal(self, a: torch.Tensor) -> str | None:
        """The torch engine's refusals.

        Sparse, nested and dispatching tensors; DTensors whose placements ``_shards``
        cannot split.
        """
        if is_dtensor(a):
            return dtensor_refusal(a)
        return tensor_refusal(a)

    def given_refusal(self, x: Any) -> str | None:
        """DTensors with given scale parts are the torch engine's (the front door picks it)."""
        return str(given_refusal("scale part")) if is_dtensor(x) else None

    def check_given(self, x: Any, part: Any, name: str, *, signed: bool) -> torch.Tensor:
        """A given scale part as a float32 tensor on x's device (``_given.check_given``).

        Checked as the torch engine checks it; plain tensors only.
        """
        return check_given(x, part, name, signed=signed)

    def check_rbits(self, x: Any, rbits: Any, width: int) -> torch.Tensor:
        """A ``width``-bit integer tensor of x's shape and device (uint8, or int16 view).

        As the torch engine takes them (SEMANTICS.md §3.3), DTensors included.
        """
        return torch_engine.check_rbits(x, rbits, width)

    def upcast(self, result: CastResult) -> torch.Tensor:
        """Decode a result; a DTensor cast's result (parts DTensors) to a DTensor.

        Raises:
            SpecError: as ``EngineBase.upcast``; a result mixing DTensor and plain parts.
            UnsupportedError: as ``EngineBase.upcast``.
        """
        if dtensor_result(result):
            return upcast_dtensor(result, super().upcast)
        return super().upcast(result)

    def check_result_arrays(self, result: CastResult) -> None:
        """Every part on one device (as the torch engine checks), not the meta device.

        Raises:
            UnsupportedError: for meta tensors, which this engine does not cast either
                (``tcast_torch.upcast`` decodes them to a meta tensor).
        """
        torch_engine.check_result_arrays(result)
        if result.data.device.type == "meta":
            raise UnsupportedError(
                "tcast_triton does not decode tensors on the meta device (they hold no "
                "values); tcast_torch.upcast gives the float32 meta tensor"
            )

    def run(self, x: torch.Tensor, request: CastRequest) -> torch.Tensor | CastResult:
        """The cast with the default options (straight-through gradient): :meth:`run_grad`."""
        return self.run_grad(x, request, "ste")

    def cast_grad(
        self, x: torch.Tensor, request: CastRequest, grad: str
    ) -> torch.Tensor | CastResult:
        """:meth:`cast` with a gradient option (``tcast_triton.cast(..., grad=...)``)."""
        self.check_request(x, request)
        # a fused transform outside traces only: the tcast_triton::cast op carries no transform
        if request.modes.transform is not None and not (
            fused_transform(request) and not is_dtensor(x) and not torch.compiler.is_compiling()
        ):
            # the transform by tcast_torch.hadamard around the kernels' cast (§5.11)
            run = lambda t, r: self.run_grad(t, r, grad)  # noqa: E731
            return cast_transformed_grad(self, run, x, request, grad)
        # the kernels (a fused transform: the cast kernel transforms the tiles it loads)
        return self.run_grad(x, request, grad)

    def hadamard(self, x: torch.Tensor, h: Hadamard, dim: int, inverse: bool) -> torch.Tensor:
        """The transform of a cast (``toolkit.TORCH_TRANSFORMS``: ``tcast_torch.hadamard``)."""
        return TORCH_TRANSFORMS.hadamard(x, h, dim, inverse)

    def round_to_input(self, v: torch.Tensor, input_dtype: str) -> torch.Tensor:
        """float32 values rounded to nearest even in the input dtype."""
        return TORCH_TRANSFORMS.round_to_input(v, input_dtype)

    def widen(self, v: torch.Tensor) -> torch.Tensor:
        """A tensor of an input dtype as float32."""
        return TORCH_TRANSFORMS.widen(v)

    def run_grad(
        self, x: torch.Tensor, request: CastRequest, grad: str
    ) -> torch.Tensor | CastResult:
        """The cast; a virtual cast of a tensor that requires grad is differentiable.

        Gradients as ``tcast_torch`` gives them (``grad``: ``"ste"`` or ``"saturate"``,
        ``tcast_torch.toolkit.virtual_with_grad``) around the Triton kernels' values. While
        Dynamo traces, the kernels are reached through the ``tcast_triton::cast`` op
        (:data:`CAST_OPS`, a ``torch.library.triton_op``: Inductor compiles the kernels
        with the rest of the graph). A plain tensor is cast by ``_plain.cast_plain``. A DTensor is
        cast shard by shard (``toolkit.cast_dtensor``, this engine's kernels on each window:
        ``_local``), eagerly. A pending negation is applied first (``toolkit.resolved``).
        Given scale parts (SEMANTICS.md §5.12) are read by the kernels (while Dynamo traces,
        inputs of the op); a request with them is refused for a DTensor (:meth:`check_given`
        refuses to make one).

        Raises:
            UnsupportedError: for given scale parts of a DTensor.
        """
        x = resolved(x)
        if request.given is not None and is_dtensor(x):
            raise given_refusal(request.given.items()[0][0])
        if is_dtensor(x):
            return cast_dtensor(x, request, TRITON_LOCAL, grad)
        return cast_plain(x, request, grad, CAST_OPS.cast)

    def run_eager(self, x: torch.Tensor, request: CastRequest) -> torch.Tensor | CastResult:
        """The cast by the Triton kernels (``_plain.cast_eager``); the body of the cast op.

        Empty inputs, and the rare shapes whose grid would pass CUDA's 2**31 - 1 programs
        (``_launch.MAX_PROGRAMS``), are cast by ``tcast_torch`` (the same bits).

        While the ``tcast_triton::cast`` op is traced (``toolkit.traced_launches``) this runs
        on fake tensors: the kernels are launched through ``torch.library.wrap_triton``
        (``_fastlaunch.launcher``), and the host work (plans, allocations, views) is what
        fake tensors allow. ``tcast_torch``'s cast, where it serves, is traced as torch
        operations, given the seed in ``[0, 2**64)`` (the traced request holds its int64).
        It serves too for a seed whose int64 is below -2**31 (a seed in
        ``[2**63, 2**64 - 2**31)``, always a constant of the graph: Dynamo's symbols are
        int64): Inductor types a kernel's integer argument as int32 wherever its value is
        at most 2**31 - 1, negative ones included, and such a seed would not fit.
        """
        if not traced_launches():
            return cast_eager(x, request)
        out = None
        seed = request.seed
        kernels_take_seed = (
            seed is None or request.roundmode is not RoundMode.STOCHASTIC or seed >= _I32_MIN
        )
        if x.numel() and kernels_take_seed:
            with on_device(x):
                out = run_cast(x, request)
        if out is None:
            seed = None if request.seed is None else seed_of(request.seed)
            out = relabel(torch_cast(x, replace(request, seed=seed)))
        return out

    def cast_dual(
        self,
        x: torch.Tensor,
        rows: CastRequest,
        cols: CastRequest,
        transposed: bool,
        grad: str = "ste",
    ) -> tuple[Any, Any]:
        """``tcast.cast_dual``: one kernel reads ``x`` once and writes both results.

        Virtual casts of a tensor that requires grad are two differentiable casts
        (:meth:`run_grad`; the transposed one through its transpose).

        Casts with a transform are two casts, each as :meth:`cast_grad` makes it (§5.11: the
        transform fused into the cast kernel or composed with it); so are casts with given
        scale parts (§5.12), each reading its own.
        Datatypes the dual kernel does not take (``_launch_dual.dual_supported``: channels,
        sparsity, tiles past 128), empty inputs and DTensors are two casts (the same bits).
        Two-level datatypes (NVFP4) the kernel does not cast (those it refuses, and their
        codes in x's layout with plain scales: ``_launch_dual.DUAL_TWO_LEVEL``) are two
        single kernels after one shared tensor-amax pass.
        While Dynamo traces: the ``tcast_triton::cast_dual`` custom op (:data:`CAST_OPS`). A pending
        negation is applied first, as :meth:`run_grad` does.
        """
        x = resolved(x)
        if (
            rows.modes.transform is not None
            or cols.modes.transform is not None
            or rows.given is not None
            or cols.given is not None
        ):
            # two casts, each with its transform (fused or composed: cast_grad) or given
            # scale parts
            return dual_by_casts(_DualRunner(self, "cast_grad", grad), x, rows, cols, transposed)
        if is_dtensor(x):
            return dual_dtensor(lambda t, r: self.run_grad(t, r, grad), x, rows, cols, transposed)
        if rows.virtual and x.requires_grad and torch.is_grad_enabled():
            return dual_by_casts(_DualRunner(self, "run_grad", grad), x, rows, cols, transposed)
        if torch.compiler.is_compiling():
            return CAST_OPS.dual(x, rows, cols, transposed)
        return self.cast_dual_eager(x, rows, cols, transposed)

    def cast_dual_eager(
        self, x: torch.Tensor, rows: CastRequest, cols: CastRequest, transposed: bool
    ) -> tuple[Any, Any]:
        """:meth:`cast_dual` outside any trace."""
        out = None
        if x.numel():
            with on_device(x):
                out = run_dual(x, rows, cols, transposed)
                if out is None and rows.dtype.is_multiscale:
                    return self._dual_shared_amax(x, rows, cols, transposed)
        return dual_by_casts(self, x, rows, cols, transposed) if out is None else out

    def _dual_shared_amax(
        self, x: torch.Tensor, rows: CastRequest, cols: CastRequest, transposed: bool
    ) -> tuple[Any, Any]:
        """Two casts of a two-level datatype (NVFP4) that share one tensor-amax pass.

        The single kernels take the tensor maxima given (``run_cast(x, req, given)``); see
        ``_launch_dual.DUAL_TWO_LEVEL`` for why the dual kernel does not cast these.
        """
        stats = tensor_maxima(x, rows)

        def cast(t: torch.Tensor, req: CastRequest) -> Any:
            out = run_cast(t, req, stats)
            return self.run(t, req) if out is None else out

        runner = SimpleNamespace(name=self.name, result_ops=self.result_ops, cast=cast)
        return dual_by_casts(runner, x, rows, cols, transposed)

    def run_upcast(self, result: CastResult) -> torch.Tensor:
        """The decode by the upcast kernel (``_upcast.run_upcast``).

        2-D tiles, several tile segments and sparsity, and parts on a device the kernels
        cannot read, are decoded by ``tcast_torch`` (the same bits).
        """
        with on_device(result.data):
            out = run_upcast(result)
        return torch_engine.run_upcast(result) if out is None else out

    def __repr__(self) -> str:
        return "tcast_triton.engine"


#: The engine instance (the entry point loads this).
engine = TritonEngine()
#: The ``tcast_triton::cast`` op (a ``torch.library.triton_op``: Inductor sees the kernels) and
#: the ``tcast_triton::cast_dual`` custom op (opaque: its Gluon kernels are not ``@triton.jit``
#: source Inductor could compile): the engine's casts while Dynamo traces.
CAST_OPS = CastOps("tcast_triton", engine, triton=True)
#: The engine's array work on one process's window of a DTensor.
TRITON_LOCAL = TritonLocal(CAST_OPS.cast)


class _DualRunner:
    """Each side of a dual cast as one single cast of the engine (``dual_by_casts``).

    A plain class rather than a namespace of lambdas: Dynamo traces it inside
    ``torch.compile(fullgraph=True)``.
    """

    def __init__(self, engine: TritonEngine, method: str, grad: str) -> None:
        self.name = engine.name
        self.result_ops = engine.result_ops
        self._engine, self._method, self._grad = engine, method, grad

    def cast(self, t: torch.Tensor, req: CastRequest) -> Any:
        return getattr(self._engine, self._method)(t, req, self._grad)
