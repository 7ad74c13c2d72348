"""Launching a Triton kernel again without Triton's per-call binding (host time per cast).

``kernel[grid](*args, **kw)`` binds every argument, builds a specialization key, hashes the
options and checks every global the kernel reads, on each call; with the engine's many
compile-time arguments that is most of a cast's host time. :class:`Launch` goes through
that path once per argument specialization, keeps the compiled kernel, and launches it
directly afterwards with the same arguments in signature order. The specialization it keys
on is what Triton specializes run-time arguments on: a tensor's element type (the pointer
type of the compiled signature) and 16-byte alignment, an integer's type (by its
magnitude), ``== 1`` and divisibility by 16; and the current device (a compiled kernel is
loaded per device). Under the interpreter every call goes through ``kernel[grid]``
(nothing is compiled).

While the ``tcast_triton::cast`` op's body is traced for ``torch.compile``
(``tcast_torch.toolkit.traced_launches``), every launch goes through
``torch.library.wrap_triton(kernel)[grid](...)`` instead (:func:`launcher`), which records it
as a node of the graph for Inductor to compile.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch
from triton import knobs
from triton.runtime.driver import driver
from triton.runtime.jit import JITFunction

from tcast import TcastError
from tcast_torch.toolkit import traced_launches

from ._env import INTERPRETING, quiet_numpy

__all__ = ["Launch", "launcher"]


#: The specialization of each int argument seen (sizes repeat call after call; seeds vary,
#: so the table is emptied when full).
_INT_SPECS: dict[int, tuple] = {}
_MAX_INT_SPECS = 4096


def _spec(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        # the dtype is part of the compiled signature: uint8 and int32 codes reach one kernel
        return a.dtype, a.data_ptr() & 15 == 0
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
        if traced_launches():
            # every parameter named: Inductor's analysis of a wrapped kernel (which tensors
            # it writes) requires each one, defaults too (the given parts' None pointers)
            launcher(self.kernel)[grid](*args, **self.kw, **_defaults(self.kernel, args, self.kw))
            return
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

    def call_with(self, grid: tuple[int, ...], args: tuple, last: dict[str, Any]) -> None:
        """:meth:`__call__` with run-time arguments for the kernel's last parameters too.

        ``last``: by name, in signature order, the parameters after the compile-time ones
        (the given scale parts of a cast, which a launch by :meth:`__call__` leaves at their
        defaults); None for one that is not passed. Compiled once per specialization of
        ``args`` and ``last``, as :meth:`__call__` compiles.
        """
        if traced_launches():
            launcher(self.kernel)[grid](*args, **self.kw, **last)
            return
        if INTERPRETING:
            self.kernel[grid](*args, **self.kw, **last)
            return
        device = torch.cuda.current_device()
        values = tuple(last.values())
        key = (device, tuple(last), *map(_spec, args), *map(_spec, values))
        hit = self._compiled.get(key)
        if hit is None:
            compiled = self.kernel[grid](*args, **self.kw, **last)
            params = self.kernel.params
            between = params[len(args) : len(params) - len(values)]
            middle = tuple(self.kw[p.name] if p.name in self.kw else p.default for p in between)
            self._compiled[key] = (_runner(compiled), middle)
            return
        run, middle = hit
        run(grid, device, args + middle + values)

    def compiled(self, *args: Any) -> tuple[Any, tuple] | None:
        """The runner and trailing arguments a launch with ``args`` uses, once compiled.

        ``(run, tail)``: ``run(grid, device, args + tail)`` launches the kernel compiled for
        ``args``' specialization on the current device (as :meth:`__call__` does after its
        first call with them). None before that first call, and under the interpreter.
        """
        if INTERPRETING:
            return None
        return self._compiled.get((torch.cuda.current_device(), *map(_spec, args)))


def _defaults(kernel: Any, args: tuple, kw: dict) -> dict[str, Any]:
    """The defaults of ``kernel``'s parameters after ``args`` that ``kw`` does not name."""
    fn = getattr(kernel, "fn", kernel)  # the interpreter's kernels wrap the function
    params = list(inspect.signature(fn).parameters.values())[len(args) :]
    return {p.name: p.default for p in params if p.name not in kw}


def launcher(kernel: Any) -> Any:
    """``kernel``, or while launches are traced a stand-in that records its launch.

    Index either with a grid and call it with the kernel's arguments. Traced
    (``tcast_torch.toolkit.traced_launches``): the launch goes to
    ``torch.library.wrap_triton(kernel)``; see :class:`_TracedKernel`.
    """
    return _TracedKernel(kernel) if traced_launches() else kernel


#: Compile options a launch may carry that Inductor does not pass on: it compiles a user
#: kernel with Triton's defaults for them (the kernels' bits must not depend on them).
_DROPPED_OPTIONS = ("enable_fp_fusion",)


class _TracedKernel:
    """A kernel's launch recorded by ``torch.library.wrap_triton`` (one graph node).

    What ``wrap_triton`` and Inductor need, applied here:

    * compile options Inductor drops (:data:`_DROPPED_OPTIONS`) are left out;
    * Inductor writes each compile-time argument into its generated source by ``repr``:
      a non-finite float there would not parse, and is refused while tracing;
    * a tensor passed for a second parameter gets a buffer of its own (:func:`_distinct`);
    * under the interpreter, the kernel is a JITFunction twin (:func:`_jit_twin`).
    """

    __slots__ = ("grid", "kernel")

    def __init__(self, kernel: Any, grid: Any = None) -> None:
        self.kernel = kernel
        self.grid = grid

    def __getitem__(self, grid: Any) -> _TracedKernel:
        return _TracedKernel(self.kernel, grid)

    def __call__(self, *args: Any, **kw: Any) -> None:
        kw = {k: v for k, v in kw.items() if k not in _DROPPED_OPTIONS}
        for name, value in kw.items():
            if not _repr_safe(value):
                raise TcastError(
                    f"tcast_triton cannot trace {getattr(self.kernel, '__name__', 'a kernel')} "
                    f"for torch.compile: its compile-time argument {name} holds a non-finite "
                    f"float ({str(value)[:80]}), which Inductor cannot write into its code"
                )
        args = _distinct(args)
        torch.library.wrap_triton(_jit_twin(self.kernel))[self.grid](*args, **kw)


def _distinct(args: Any) -> tuple:
    """``args`` with each tensor passed again replaced by a one-element buffer of its own.

    The engine passes one tensor for several parameters only as a placeholder for parts a
    datatype lacks (zero points, a tensor scale, random bits), which the kernel does not
    read. Functionalization gives each parameter a tensor wrongly where two alias one
    another and either is written (it copies both and keeps the last).
    """
    out: list = []
    for a in args:
        if isinstance(a, torch.Tensor) and any(a is b for b in out):
            a = a.new_empty(1)
        out.append(a)
    return tuple(out)


def _repr_safe(value: Any) -> bool:
    """Whether ``repr(value)`` reads back as the same value (finite floats, nested tuples)."""
    if isinstance(value, float):
        return value - value == 0.0  # False for inf and nan
    if isinstance(value, tuple):
        return all(_repr_safe(v) for v in value)
    return True


#: The JITFunction twins of interpreted kernels, by kernel.
_TWINS: dict[Any, JITFunction] = {}


def _jit_twin(kernel: Any) -> Any:
    """The kernel ``wrap_triton`` traces: ``kernel``, or under the interpreter its twin.

    ``TRITON_INTERPRET=1`` makes ``@triton.jit`` return an interpreted function, which
    ``wrap_triton`` passes through untraced. The twin is a ``JITFunction`` of the same Python
    function (so the launch is traced into the graph as on a GPU) whose launches run the
    interpreted kernel: graphs traced on the CPU run the interpreter's bits.
    """
    if not INTERPRETING or isinstance(kernel, JITFunction):
        return kernel
    twin = _TWINS.get(kernel)
    if twin is None:
        twin = _TWINS[kernel] = _InterpretedTwin(kernel)
    return twin


class _InterpretedTwin(JITFunction):
    """A ``JITFunction`` whose launches run an interpreted kernel (see :func:`_jit_twin`)."""

    def __init__(self, interpreted: Any) -> None:
        super().__init__(interpreted.fn, **interpreted.kwargs)
        self.interpreted = interpreted

    def run(self, *args: Any, grid: Any, warmup: bool, **kw: Any) -> Any:
        with quiet_numpy():
            return self.interpreted.run(*args, grid=grid, warmup=warmup, **kw)

    # a JITFunction hashes its source and every global it reads, which must then be jitted
    # functions; the helpers an interpreted kernel calls are interpreted ones
    __hash__ = object.__hash__
    __eq__ = object.__eq__


def _runner(compiled: Any) -> Any:
    """A function launching ``compiled`` on a grid of the current stream of a device.

    Triton's own ``compiled[grid](*args)`` builds a closure and looks up the launcher, the
    kernel handle, the stream and the launch hooks on every call. Here the handles are read
    once and the launcher's compiled entry point is called directly (:func:`_direct_launch`);
    the stream and the hooks (profilers set them) are still read on every call, and while a
    hook is set the launch goes through Triton's path, which calls it. What Triton's
    ``kernel[grid]`` checks on each call besides is skipped after the first: a
    ``JITFunction``'s pre-run hooks, a change of its global variables, a later change of
    ``triton.knobs`` (debug, instrumentation); the engine's kernels use none of them.
    """
    compiled._init_handles()
    launcher, function, packed = compiled.run, compiled.function, compiled.packed_metadata
    stream_of = driver.active.get_current_stream
    hooks = knobs.runtime
    direct = _direct_launch(launcher)
    # the entry point's arguments after the function: cooperative grid, programmatic
    # dependent launch, the two scratch buffers (none), the kernel's metadata, then no launch
    # metadata and no hooks (while a hook is set the launch goes Triton's way, below)
    between: tuple = ()
    if direct is not None:
        coop, pdl = launcher.launch_cooperative_grid, launcher.launch_pdl
        between = (coop, pdl, None, None, packed, None, None, None)

    def run(grid: tuple[int, ...], device: int, args: tuple) -> None:
        g = (*grid, 1, 1)
        # a chain of hooks is set but empty unless a profiler added one
        if getattr(hooks.launch_enter_hook, "calls", hooks.launch_enter_hook) or getattr(
            hooks.launch_exit_hook, "calls", hooks.launch_exit_hook
        ):
            compiled[g[:3]](*args)
            return
        if direct is not None:
            direct(g[0], g[1], g[2], stream_of(device), function, *between, *args)
            return
        launcher(g[0], g[1], g[2], stream_of(device), function, packed, None, None, None, *args)

    return run


def _direct_launch(launcher: Any) -> Any:
    """The C entry point under Triton's CUDA launcher object, where calling it directly is safe.

    The launcher's ``__call__`` allocates per-launch scratch buffers (none for the engine's
    kernels: they use no global scratch and are not profiled) and then calls its compiled
    ``launch`` function; a launch costs a Python frame less without it. None (launch
    through the object) where the launcher is of another kind, wraps tensor descriptors
    (``launch`` is then a Python function), or wants scratch memory.
    """
    launch = getattr(launcher, "launch", None)
    if (
        type(launch).__name__ != "builtin_function_or_method"
        or getattr(launcher, "global_scratch_size", 1) != 0
        or getattr(launcher, "profile_scratch_size", 1) != 0
        or not hasattr(launcher, "launch_cooperative_grid")
        or not hasattr(launcher, "launch_pdl")
    ):
        return None
    return launch
