"""Array adapters: how the NumPy battery reaches an engine, and its results come back."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

from tcast import SpecError
from tcast.kit import quote

from ._battery import bits_of

__all__ = [
    "ADAPTER_ENV",
    "DEVICE_ENV",
    "Adapter",
    "adapter_for",
    "check_device",
    "numpy_adapter",
    "torch_adapter",
]

#: Device the torch adapter moves inputs to (``cpu`` by default).
DEVICE_ENV = "TCAST_CONFORMANCE_DEVICE"
#: ``module:attribute`` of an extra adapter factory (tried before the built-in ones).
ADAPTER_ENV = "TCAST_CONFORMANCE_ADAPTER"


@dataclass(frozen=True)
class Adapter:
    """Moves NumPy battery arrays to an engine's array type and results back, bit for bit.

    Attributes:
        name: a label (``numpy``, ``torch:cuda`` ...).
        to_engine: NumPy array (float32/float16/bfloat16 inputs, uint8/uint16 rbits) ->
            engine array.
        to_numpy: engine array (or scalar, or None) -> NumPy array (None stays None).
        sample: a small float32 input in the engine's array type, for ``accepts``.
    """

    name: str
    to_engine: Callable[[np.ndarray], Any]
    to_numpy: Callable[[Any], Any]
    sample: Callable[[], Any] = field(repr=False, default=lambda: None)


def numpy_adapter() -> Adapter:
    """The identity: engines that take NumPy arrays (``tcast_ref``)."""

    def back(a: Any) -> Any:
        return None if a is None else np.asarray(a)

    return Adapter("numpy", lambda a: a, back, lambda: np.zeros((2, 32), np.float32))


def torch_adapter(device: str | None = None) -> Adapter:
    """Torch tensors on ``device`` (default: ``$TCAST_CONFORMANCE_DEVICE`` or ``cpu``).

    bfloat16 crosses as 16-bit integers viewed as ``torch.bfloat16`` (NumPy has no bfloat16
    torch knows, and torch's float32 -> bfloat16 conversion does not keep NaN bits); unsigned
    integer tensors come back through the signed type of their width, viewed unsigned.

    Raises:
        ImportError: when torch is not installed.
    """
    import torch

    dev = _torch_device(torch, device or os.environ.get(DEVICE_ENV, "cpu"))
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}
    unsigned = {torch.uint16: np.uint16, torch.uint32: np.uint32, torch.uint64: np.uint64}

    def to_engine(a: np.ndarray) -> Any:
        if a.dtype == ml_dtypes.bfloat16:
            return torch.from_numpy(bits_of(a).view(np.int16)).view(torch.bfloat16).to(dev)
        if a.dtype == np.uint16:  # 16-bit random bits: through int16, the same bits
            return torch.from_numpy(a.view(np.int16)).view(torch.uint16).to(dev)
        return torch.from_numpy(a).to(dev)

    def to_numpy(t: Any) -> Any:
        if t is None or not isinstance(t, torch.Tensor):
            return None if t is None else np.asarray(t)
        t = t.detach().cpu()
        if t.dtype == torch.bfloat16:
            return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        if t.dtype in signed:
            return t.contiguous().view(signed[t.dtype]).numpy().view(unsigned[t.dtype])
        return t.numpy()

    def sample() -> Any:
        return torch.zeros((2, 32), dtype=torch.float32, device=dev)

    return Adapter(f"torch:{dev}", to_engine, to_numpy, sample)


def _torch_device(torch: Any, name: str) -> Any:
    """``torch.device(name)``, refused unless it names a device whose tensors hold data."""
    shown = quote(name, 40)
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError, TypeError):
        raise SpecError(f"device {shown} is not a torch device; give cpu, cuda or cuda:N") from None
    if dev.type == "meta":
        raise SpecError(
            f"device {shown}: tensors on the meta device hold no data, so no results come back "
            "to compare; give cpu, cuda or cuda:N"
        )
    return dev


def check_device(device: str | None = None) -> Any:
    """Refuse a device (default ``$TCAST_CONFORMANCE_DEVICE``) this machine cannot use.

    Nothing is checked when no device is named or torch is not installed (then only engines
    on NumPy arrays run, and the others say why not). The one check of a device name for
    ``tcast conformance`` and ``tcast verify``.

    Returns:
        The ``torch.device``, or None when nothing was checked.

    Raises:
        tcast.SpecError: not a torch device, the meta device, or one this machine lacks.
    """
    name = device or os.environ.get(DEVICE_ENV)
    if not name:
        return None
    try:
        import torch
    except ImportError:
        return None
    dev = _torch_device(torch, name)
    try:
        torch.zeros(1, device=dev).cpu()
    except (RuntimeError, AssertionError, NotImplementedError) as err:
        why = str(err).splitlines()[0][:120] if str(err) else type(err).__name__
        raise SpecError(
            f"device {quote(str(dev), 40)} is not usable on this machine ({why}); give cpu or "
            "a device it has"
        ) from None
    return dev


def _external_adapters() -> list[Callable[[], Adapter]]:
    spec = os.environ.get(ADAPTER_ENV)
    if not spec:
        return []
    module, _, attr = spec.partition(":")
    return [getattr(importlib.import_module(module), attr)]


def adapter_for(engine: Any, device: str | None = None) -> Adapter | None:
    """The first adapter whose sample array ``engine.accepts`` (None: no adapter fits).

    Tried in order: ``$TCAST_CONFORMANCE_ADAPTER`` (if set), NumPy, torch on ``device``
    (default ``$TCAST_CONFORMANCE_DEVICE`` or ``cpu``).
    """
    for factory in (*_external_adapters(), numpy_adapter, lambda: torch_adapter(device)):
        try:
            adapter = factory()
        except ImportError:
            continue
        if engine.accepts(adapter.sample()):
            return adapter
    return None
