"""Launching a Triton kernel again without Triton's per-call binding (host time per cast).

``kernel[grid](*args, **kw)`` binds every argument, builds a specialization key, hashes the
options and checks every global the kernel reads, on each call; with the engine's many
compile-time arguments that is most of a cast's host time. :class:`Launch` goes through
that path once per argument specialization, keeps the compiled kernel, and launches it
directly afterwards with the same arguments in signature order. The specialization it keys
on is what Triton specializes run-time arguments on: a tensor's 16-byte alignment, an
integer's type (by its magnitude), ``== 1`` and divisibility by 16; and the current device
(a compiled kernel is loaded per device). Under the interpreter
every call goes through ``kernel[grid]`` (nothing is compiled).
"""

from __future__ import annotations

from typing import Any

import torch
from triton import knobs
from triton.runtime.driver import driver

from ._env import INTERPRETING

__all__ = ["Launch"]


#: The specialization of each int argument seen (sizes repeat call after call; seeds vary,
#: so the table is emptied when full).
_INT_SPECS: dict[int, tuple] = {}
_MAX_INT_SPECS = 4096


def _spec(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return a.data_ptr() & 15 == 0
    if a.__class__ is not int:  # bool, float, None: the type decides
        return type(a)
    s = _INT_SPECS.get(a)
    if s is None:
        if len(_INT_SPECS) >= _MAX_INT_SPECS:
            _INT_SPECS.clear()
        # Triton types an int by range: i32, i64 (or u64 past 2**63 - 1)
        s = _INT_SPECS[a] = (a == 1, a & 15 == 0, -(2**31) <= a < 2**31, -(2**63) <= a < 2**63)
    return s


class Launch:
    """One kernel with fixed compile-time arguments and options, launched with little host work.

    Args:
        kernel: a ``@triton.jit`` function.
        kw: its compile-time arguments and launch options (``num_warps`` ...), fixed.
    """

    __slots__ = ("_compiled", "kernel", "kw")

    def __init__(self, kernel: Any, kw: dict) -> None:
        self.kernel = kernel
        self.kw = kw
        self._compiled: dict[tuple, tuple] = {}

    def __call__(self, grid: tuple[int, ...], *args: Any) -> None:
        """Launch on ``grid`` with the run-time arguments ``args`` (the leading parameters)."""
        if INTERPRETING:
            self.kernel[grid](*args, **self.kw)
            return
        # a compiled kernel's handles belong to the device it was loaded on
        device = torch.cuda.current_device()
        key = (device, *map(_spec, args))
        hit = self._compiled.get(key)
        if hit is None:
            compiled = self.kernel[grid](*args, **self.kw)
            rest = self.kernel.params[len(args) :]
            tail = tuple(self.kw[p.name] if p.name in self.kw else p.default for p in rest)
            self._compiled[key] = (_runner(compiled), tail)
            return
        run, tail = hit
        run(grid, device, args + tail)


    def compiled(self, *args: Any) -> tuple[Any, tuple] | None:
        """The runner and trailing arguments a launch with ``args`` uses, once compiled.

        ``(run, tail)``: ``run(grid, device, args + tail)`` launches the kernel compiled for
        ``args``' specialization on the current device (as :meth:`__call__` does after its
        first call with them). None before that first call, and under the interpreter.
        """
        if INTERPRETING:
            return None
        return self._compiled.get((torch.cuda.current_device(), *map(_spec, args)))


def _runner(compiled: Any) -> Any:
    """A function launching ``compiled`` on a grid of the current stream of a device.

    Triton's own ``compiled[grid](*args)`` builds a closure and looks up the launcher, the
    kernel handle, the stream and the launch hooks on every call. Here the handles are read
    once; the stream and the hooks (profilers set them) are still read on every call, and
    while a hook is set the launch goes through Triton's path, which calls it. What Triton's
    ``kernel[grid]`` checks on each call besides is skipped after the first: a
    ``JITFunction``'s pre-run hooks, a change of its global variables, a later change of
    ``triton.knobs`` (debug, instrumentation); the engine's kernels use none of them.
    """
    compiled._init_handles()
    launcher, function, packed = compiled.run, compiled.function, compiled.packed_metadata
    stream_of = driver.active.get_current_stream
    hooks = knobs.runtime

    def run(grid: tuple[int, ...], device: int, args: tuple) -> None:
        g = (*grid, 1, 1)
        # a chain of hooks is set but empty unless a profiler added one
        if getattr(hooks.launch_enter_hook, "calls", hooks.launch_enter_hook) or getattr(
            hooks.launch_exit_hook, "calls", hooks.launch_exit_hook
        ):
            compiled[g[:3]](*args)
            return
        launcher(g[0], g[1], g[2], stream_of(device), function, packed, None, None, None, *args)

    return run
