"""Repeated DTensor casts whose shard casts alone: a call object per kind of call (host time).

:func:`cast_dtensor` works out, on every call, the shard spec, the plan, the window and
each result part's placement, then wraps the parts with ``DTensor``'s constructor. When the
plan makes no collective (no block is cut by a shard boundary, no tensor statistic is
reduced, nothing is gathered) the same cast of the same kind of DTensor does the same every
time: :class:`DTensorCall` keeps what the first call works out and then does only the
array work: the engine's local cast of the shard and the wrapping of its parts, with the
``DTensorSpec`` of each part made once. Its results are :func:`cast_dtensor`'s, part for part.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

import torch

from tcast import CastMode, CastRequest, CastResult, RoundMode

from ._shards import (
    LocalCast,
    _cast_plan,
    _contiguous_strides,
    _local_tensor,
    _shard_spec,
    _spec_classes,
)

__all__ = ["DTensorCall", "DTensorCalls"]

#: A result's array parts, in CastResult's field order.
_PARTS = ("data", "scale", "zero", "tenscale", "mask")


class DTensorCall:
    """One kind of DTensor cast (request, mesh, placements, gradient option) made cheap.

    Made by :meth:`DTensorCalls.get` only for casts whose plan makes no collective; call it
    with a DTensor that :meth:`takes` (else cast it with :func:`cast_dtensor`). ``narrows``
    says per result part where it goes: None (every process holds it alike: Replicate, its
    own shape), or (placements, global shape, the ``(dim, start, length)`` cuts of the
    window's part to this shard's own).
    """

    __slots__ = (
        "_fast",
        "_wraps",
        "dtype",
        "given",
        "grad",
        "lengths",
        "local",
        "mesh",
        "narrows",
        "placements",
        "request",
        "window_request",
    )

    def __init__(
        self,
        request: CastRequest,
        mesh: Any,
        placements: tuple[Any, ...],
        lengths: tuple[int, ...],
        window_request: CastRequest,
        narrows: dict[str, tuple[tuple[Any, ...], tuple[int, ...], tuple] | None],
        local: LocalCast,
        grad: str,
        given: tuple[Any, ...] | None = None,
    ) -> None:
        self.request = request
        self.mesh = mesh
        self.placements = placements
        self.lengths = lengths
        self.window_request = window_request
        self.narrows = narrows
        self.local = local
        self.grad = grad
        # the placements object of the DTensor the call object was made for (a DTensor's
        # spec keeps one: compared by identity first, then by value)
        self.given = placements if given is None else given
        self.dtype = getattr(torch, request.input_dtype)
        # (part name, local dtype, local shape) -> its DTensorSpec, made by the first call
        self._wraps: dict[tuple, Any] = {}
        # the local cast's call object for shards like the first one it gave one for (False:
        # none yet)
        self._fast: Any = False

    def takes(self, x: torch.Tensor) -> bool:
        """Whether ``x`` is a DTensor this call object casts as :func:`cast_dtensor` would.

        The request's global shape and input dtype, this mesh and placements, a local shard
        of the split's shape, and no gradient to give.
        """
        if not (
            x.dtype is self.dtype
            and x.shape == self.request.shape
            and not x.requires_grad
            and x.device_mesh is self.mesh
            and tuple(_local_tensor(x).shape) == self.lengths
        ):
            return False
        given = x.placements
        return given is self.given or tuple(given) == tuple(self.given)

    def __call__(self, x: torch.Tensor) -> torch.Tensor | CastResult:
        """The cast of DTensor ``x`` (one that :meth:`takes`)."""
        local = _local_tensor(x)
        fast = self._fast
        if fast is False:
            # asked again while there is none (a first shard the local cast's call objects do
            # not take, such as a misaligned one, must not keep the later ones from them)
            fast = self._local_call(local)
            if fast is not None:
                self._fast = fast
        if fast is not None and fast.takes(local):
            out = fast(local)
        else:
            out = self.local.cast(local, self.window_request, None, self.grad)
        req = self.request
        if isinstance(out, torch.Tensor):
            return self._wrap("data", out.contiguous(), self.placements, req.shape)
        parts = []
        for name in _PARTS:
            a = getattr(out, name)
            if a is not None:
                how = self.narrows[name]
                if how is None:  # every process holds this part alike
                    a = a.contiguous()
                    a = self._wrap(name, a, None, tuple(a.shape))
                else:
                    placements, shape, cuts = how
                    for d, start, n in cuts:
                        a = a.narrow(d, start, n)
                    a = self._wrap(name, a.contiguous(), placements, shape)
            parts.append(a)
        data, scale, zero, tenscale, mask = parts
        return CastResult(
            data,
            scale,
            zero,
            tenscale,
            mask,
            out.meta,
            out.dtype,
            req.shape,
            out.castmode,
            out.input_dtype,
            out.transpose_scale,
            out.engine,
            out.extra,
            out.scale_layout,
        )

    def _local_call(self, local: torch.Tensor) -> Any:
        """The local cast's call object for shards like ``local`` (its own statistics), or None.

        Asked of a :class:`LocalCast` that has ``call_for(window, request)`` (optional: the
        Triton engine's), for a request without random bits or a seed: a call object has
        ``takes(window)`` and gives ``local.cast(window, request, None, grad)``'s result.
        """
        wreq = self.window_request
        maker = getattr(self.local, "call_for", None)
        if maker is None or wreq.seed is not None or wreq.rbits is not None:
            return None
        return maker(local, wreq)

    def _wrap(
        self, name: str, local: torch.Tensor, placements: Any, shape: tuple[int, ...]
    ) -> torch.Tensor:
        """``local`` (contiguous) as the DTensor of global ``shape`` (None: Replicate)."""
        key = (name, local.dtype, local.shape)
        spec = self._wraps.get(key)
        if spec is None:
            from torch.distributed.tensor import Replicate

            if placements is None:
                placements = (Replicate(),) * len(self.placements)
            spec_class, meta_class = _spec_classes()
            meta = meta_class(torch.Size(shape), _contiguous_strides(shape), local.dtype)
            spec = self._wraps[key] = spec_class(self.mesh, placements, tensor_meta=meta)
        # DTensor's constructor without its __init__, which only wraps a no-op in Dynamo's
        # guard: the same tensor as DTensor(local, spec, requires_grad=False)
        dtensor = _dtensor_class()
        return dtensor.__new__(dtensor, local, spec, requires_grad=False)


class DTensorCalls:
    """:class:`DTensorCall` objects by request, mesh, placements and gradient option.

    A repeated cast brings the same request object (the engine remembers its requests); a
    request that is not the one remembered under its ``id`` makes a new call object.
    """

    __slots__ = ("_calls", "_max")

    def __init__(self, most: int = 256) -> None:
        self._calls: dict[tuple, tuple[CastRequest, Any, Any, DTensorCall | None]] = {}
        self._max = most

    def get(
        self,
        x: torch.Tensor,
        req: CastRequest,
        local: LocalCast,
        grad: str = "ste",
        check: Callable[[Any, Any], None] | None = None,
    ) -> DTensorCall | None:
        """The call object of casting DTensors like ``x`` as ``req`` says, or None.

        None where :func:`cast_dtensor` must cast it (a plan with collectives, random bits,
        an input that requires grad, a shard it refuses, DTensor internals this torch lacks).
        ``check(x, req)`` (``EngineBase.check_request``) raises for an ``x`` the request may
        not cast; it runs before a call object is made (later DTensors are compared with it
        by :meth:`DTensorCall.takes` and the key: request, mesh, placements).
        """
        mesh, given = x.device_mesh, x.placements
        # by the objects' ids (a DTensor's spec keeps its placements object; hashing
        # placements is Python code of torch's); the entry holds the objects, so their ids
        # are not reused while it lives
        key = (id(req), id(mesh), id(given), grad, id(local))
        hit = self._calls.get(key)
        if hit is not None and hit[0] is req and hit[1] is mesh and hit[2] is given:
            return hit[3]
        if (
            x.requires_grad
            or req.rbits is not None
            or req.modes.transform is not None
            or req.given is not None
        ):
            # autograd, random bits made for each call, a transform (which refuses
            # DTensors: the general path says so), and given parts cut to each window
            return None
        if check is not None:
            check(x, req)
        call = _new_call(x, req, local, grad)
        if len(self._calls) >= self._max:
            self._calls.clear()
        self._calls[key] = (req, mesh, given, call)
        return call


def _new_call(x: torch.Tensor, req: CastRequest, local: LocalCast, grad: str) -> DTensorCall | None:
    """:class:`DTensorCall` of ``x``'s kind of cast, or None where the plan communicates."""
    if _spec_classes() is None or not hasattr(x, "_local_tensor"):
        return None
    spec, why = _shard_spec(x)
    if why:
        return None  # the general path agrees on the refusal with the other processes
    if spec.splits and (req.castmode is CastMode.COMPRESS or req.blocked is not None):
        return None  # gathered into the whole tensor's layout
    if spec.splits and req.roundmode is RoundMode.STOCHASTIC:
        return None  # the window's random bits are drawn by its place in the whole
    plan = _cast_plan(spec, req)
    if plan.gathered or plan.comm or plan.needs_reduce:
        return None
    sb = plan.window
    if any(sb.pads):
        return None  # a padded window: the general path pads and crops
    narrows: dict[str, Any] = {}
    # a compress result packs the whole tensor's codes (every mesh dimension replicates x)
    compress = req.castmode is CastMode.COMPRESS
    narrows["data"] = narrows["mask"] = None if compress else (spec.placements, spec.shape, ())
    narrows["tenscale"] = None
    wreq = req if not spec.splits else plan.window_request
    layout, scales = req.layout, plan.scales
    if scales is not None and scales.gathers:
        return None  # scale codes gathered from the other processes
    for name in ("scale", "zero"):
        if layout is None or scales is None or req.blocked is not None:
            # no scale, a tensor scale, or blocked scales (no splits here: the whole layout)
            narrows[name] = None
            continue
        # the shard's own scales within the window's (as _assemble cuts them)
        have = tuple(wreq.layout.scale_shape)
        cuts = tuple(
            (d, g - sb.grid_start[d], n)
            for d, (g, n) in enumerate(zip(scales.own.grid_start, scales.counts, strict=True))
            if g - sb.grid_start[d] or have[d] != n
        )
        narrows[name] = (scales.placements, tuple(layout.scale_shape), cuts)
    return DTensorCall(
        req, spec.mesh, spec.placements, spec.lengths, wreq, narrows, local, grad, x.placements
    )


@lru_cache(maxsize=1)
def _dtensor_class() -> type:
    """``torch.distributed.tensor.DTensor`` (imported on first use: a call object's wrap)."""
    from torch.distributed.tensor import DTensor

    return DTensor
