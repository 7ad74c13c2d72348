"""The GPU a Triton launch runs on: the tensor's own, made current for the launch."""

from __future__ import annotations

import contextlib
from typing import Any

import torch

__all__ = ["on_device"]


def on_device(t: torch.Tensor) -> contextlib.AbstractContextManager[Any]:
    """Make ``t``'s GPU current (Triton launches on the current device); else nothing."""
    if t.is_cuda and t.device.index != torch.cuda.current_device():
        return torch.cuda.device(t.device)
    return contextlib.nullcontext()
