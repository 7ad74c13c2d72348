"""Which tensors the torch engine casts as they are (``TorchEngine.refusal``; tcast.kit._arrays).

Plain strided tensors on any device, and tensor subclasses that leave torch's operations as
they are: ``nn.Parameter`` and ``nn.Buffer`` (their ``__torch_function__`` is torch's disabled
one), subclasses that only add Python attributes, and torch's tracing stand-ins for plain
tensors (FakeTensor, FunctionalTensor: ``torch.compile`` and ``torch.export`` run the cast on
them). DTensors: :func:`tensor_refusal` refuses them (kernels would run on shards and
placements they do not know: wrong values); the torch and Triton engines cast them by
``_shards`` and ask :func:`is_dtensor` first. Refused, with the conversion to
apply: other subclasses with their own ``__torch_function__`` or ``__torch_dispatch__``
(MaskedTensor, tensor wrappers), nested tensors and sparse layouts. A tensor with the
negative bit (``x._neg_view()``, ``z.conj().imag``) is cast as the values it stands for:
:func:`resolved` at each engine's entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch._subclasses.functional_tensor import FunctionalTensor

from tcast.kit import own_hooks

__all__ = ["has_values", "is_dtensor", "resolved", "tensor_refusal", "values_unread"]

#: Set while a compiled graph's cast op runs (:func:`values_unread`).
_UNREAD: ContextVar[bool] = ContextVar("tcast_torch_values_unread", default=False)


@contextmanager
def values_unread() -> Iterator[None]:
    """Within: :func:`has_values` is False, as while tracing (the body of a graph's op)."""
    token = _UNREAD.set(True)
    try:
        yield
    finally:
        _UNREAD.reset(token)


_HOOKS = ("__torch_function__", "__torch_dispatch__")
_INERT = (torch._C._disabled_torch_function_impl, torch._C._disabled_torch_dispatch_impl)
#: Stand-ins for plain tensors while torch traces a function (their own dispatch records or
#: fakes torch's plain operations).
_TRACING = (FakeTensor, FunctionalTensor)


def _is_dtensor(cls: type) -> bool:
    """Whether ``cls`` is a DTensor (by name: torch.distributed.tensor is not imported)."""
    return any(
        c.__name__ == "DTensor" and c.__module__.startswith("torch.distributed")
        for c in cls.__mro__
    )


def is_dtensor(x: torch.Tensor) -> bool:
    """Whether ``x`` is a DTensor (the torch engine casts those by ``_shards``)."""
    cls = type(x)
    if cls is torch.Tensor:
        return False
    if torch.compiler.is_compiling():
        return _is_dtensor_class(cls)
    # eagerly, by class: the constant-result wrapper costs microseconds per call
    known = _DTENSOR_CLASSES.get(cls)
    if known is None:
        if len(_DTENSOR_CLASSES) >= 64:
            _DTENSOR_CLASSES.clear()
        known = _DTENSOR_CLASSES[cls] = _is_dtensor(cls)
    return known


#: :func:`is_dtensor`'s answers by tensor class, outside a trace.
_DTENSOR_CLASSES: dict[type, bool] = {}


@torch.compiler.assume_constant_result
def _is_dtensor_class(cls: type) -> bool:
    """:func:`_is_dtensor` as a constant to dynamo (which cannot walk ``__mro__``)."""
    return _is_dtensor(cls)


def has_values(t: torch.Tensor) -> bool:
    """Whether ``t``'s values can be read on the host here.

    Not while torch.compile traces (reading one would break the graph), not inside a compiled
    graph's cast op (:func:`values_unread`: the graph's casts follow one rule whatever the
    backend), and not of a tensor that has none: on the meta device, or a tracing stand-in
    (FakeTensor, FunctionalTensor).
    """
    if torch.compiler.is_compiling() or _UNREAD.get():
        return False
    return t.device.type != "meta" and not isinstance(t, _TRACING)


def resolved(x: torch.Tensor) -> torch.Tensor:
    """``x`` with a pending negation applied: the same values, a tensor bit views can read.

    torch negates lazily (the negative bit of ``x._neg_view()`` or ``z.conj().imag``) and
    refuses ``view(dtype)`` of such a tensor; the casts read bits by such views. Other
    tensors come back as they are (no copy); the negation keeps autograd's history.
    """
    return x.resolve_neg()


def tensor_refusal(x: torch.Tensor) -> str | None:
    """Why the torch engine cannot use ``x`` as it is, with the conversion to apply, or None."""
    if x.is_nested:
        return (
            "a nested tensor; cast its components (x.unbind()) or its padded form "
            "(x.to_padded_tensor(0.0))"
        )
    if x.layout != torch.strided:
        return f"a tensor of layout {x.layout}; cast x.to_dense()"
    cls = type(x)
    return None if cls is torch.Tensor else _class_refusal(cls)


@torch.compiler.assume_constant_result
def _class_refusal(cls: type) -> str | None:
    """The refusal of a tensor subclass, a constant to dynamo (which cannot walk ``__mro__``)."""
    if issubclass(cls, _TRACING):
        return None
    if _is_dtensor(cls):
        return (
            "a DTensor; cast its local shard x.to_local() (or the whole tensor, "
            "x.full_tensor()): this engine does not cast DTensors (tcast_torch does)"
        )
    hooks = own_hooks(cls, torch.Tensor, _HOOKS, _INERT)
    if hooks:
        return (
            f"a {cls.__module__}.{cls.__qualname__}, a tensor subclass with its own "
            f"{' and '.join(hooks)}; convert it to a plain torch.Tensor first"
        )
    return None
