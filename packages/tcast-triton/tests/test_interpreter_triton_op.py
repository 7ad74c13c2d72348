"""``tcast_triton::cast`` under ``torch.compile``: the kernels are nodes of the traced graph.

The op is a ``torch.library.triton_op``: AOTAutograd traces its body (the engine's eager path
on fake tensors) and each kernel launch becomes a ``triton_kernel_wrapper_functional`` node,
with no opaque ``tcast_triton.cast`` node left. Every path the op takes traces, and the graph
(run by ``aot_eager``: under the interpreter the nodes run the interpreted kernels) gives the
eager bits: unscaled, row tiles, the N-d kernel (2-D tiles, sparsity and its mask packed
by the pack kernel), two-level scaling's amax pass, 4-bit codes packed by the cast kernel,
blocked scales, stochastic rounding from a seed (a constant, then a symbol with no
recompile) and from random bits, tcast_torch's cast past the grid limit and of empty
tensors, Inductor's re-emitted source of each kernel, and a size that turns symbolic.
On CUDA the same tests run the real kernels; ``test_gpu_triton_op.py`` compiles with Inductor.
"""

from __future__ import annotations

import inspect
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch._dynamo
import triton_checks as tc
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

import tcast
import tcast_ref
import tcast_triton
from tcast_torch.toolkit import traced_launches

HOP = torch.ops.higher_order.triton_kernel_wrapper_functional

# dynamo instantiates autograd.Function classes while tracing them and warns about its own
# call (a DeprecationWarning from inside torch)
pytestmark = pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")


class _NoMutationAnalysis(logging.Filter):
    """Without a GPU, torch cannot lower a kernel to find the tensors it writes: it logs a
    warning per launch and takes every tensor argument as written (right bits, more copies).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "identify_accessed_tensors" not in record.getMessage()


@pytest.fixture(autouse=True)
def _quiet_mutation_analysis():
    log = logging.getLogger("torch._dynamo")  # torch's triton_kernel_wrap logs through it
    quiet = _NoMutationAnalysis()
    log.addFilter(quiet)
    yield
    log.removeFilter(quiet)


class Graphs:
    """An ``aot_eager`` backend that keeps the forward graphs it compiles."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []
        self.backend = aot_autograd(fw_compiler=self._keep)

    def _keep(self, gm: torch.fx.GraphModule, example_inputs):
        self.graphs.append(gm)
        return make_boxed_func(gm.forward)

    def kernels(self) -> list[str]:
        """The names of the kernels launched by the HOP nodes of every graph, in order."""
        names = []
        for gm in self.graphs:
            for node in gm.graph.nodes:
                if node.target is HOP:
                    k = kernel_side_table.get_kernel(node.kwargs["kernel_idx"])
                    while not hasattr(k, "arg_names") or hasattr(k, "configs"):
                        k = k.fn  # a one-config autotuner around the kernel (num_warps)
                    names.append(k.fn.__name__)
        return names

    def opaque(self) -> list[str]:
        """Nodes that call a tcast_triton op (none once the kernels are in the graph)."""
        return [
            str(n.target)
            for gm in self.graphs
            for n in gm.graph.nodes
            if n.op == "call_function" and "tcast_triton" in str(n.target)
        ]


def _x(device, shape=(32, 64), dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(shape, generator=g) * 4
    x.view(-1)[5] = float("nan")
    return x.to(dtype).to(device)


# (datatype, options, the kernels its launch runs)
PATHS = [
    ("float8_e4m3fn", {"castmode": "virtual"}, ["_cast_unscaled"]),
    ("mxfp8", {"castmode": "actual"}, ["_cast_row_pieces"]),
    ("mxfp8_2d", {"castmode": "actual", "transpose_scale": True}, ["_cast_nd"]),
    ("e4m3fn_e8m0_t32n2m4", {"castmode": "compress"}, ["_cast_nd", "_pack_kernel"]),
    ("nvfp4", {"castmode": "actual", "scale_layout": "blocked"}, ["_amax_pass", "_cast_tiles"]),
    ("mxfp4", {"castmode": "compress"}, ["_cast_tiles"]),
    # seeded row tiles: a tile's Philox calls in one thread (_cast_row_pieces)
    ("mxint8", {"roundmode": "stochastic", "seed": 2**64 - 5}, ["_cast_row_pieces"]),
    (
        "mxfp8",
        {"castmode": "actual", "roundmode": "stochastic", "seed": 5, "stream": 1},
        ["_cast_row_pieces"],
    ),
]


def test_every_launch_path_traces_to_kernel_nodes_with_the_eager_bits(device):
    """One compiled function holds every path: one trace, each cast's kernels in order."""
    x = _x(device)
    small = _x(device, (4, 32))  # sparsity: the interpreter's slowest kernel
    # K = 8 random bits per element of mxfp8 (SEMANTICS.md §3.3)
    rb = torch.randint(0, 256, x.shape, dtype=torch.uint8, device=device)

    def fn(v, s, r):
        outs = [tcast_triton.cast(s if "n2m4" in code else v, code, **kw) for code, kw, _ in PATHS]
        outs.append(tcast_triton.cast(v, "mxfp8", roundmode="stochastic", rbits=r))
        outs.append(tcast_triton.cast(v[:0], "nvfp4", castmode="actual"))  # tcast_torch's
        return outs

    seen = Graphs()
    torch._dynamo.reset()
    got = torch.compile(fn, fullgraph=True, backend=seen.backend)(x, small, rb)
    want = fn(x, small, rb)
    assert len(seen.graphs) == 1 and seen.opaque() == []
    expected = [k for _, _, ks in PATHS for k in ks] + ["_cast_row_pieces"]
    assert seen.kernels() == expected
    for (code, _, _), a, b in zip(PATHS, got, want, strict=False):
        assert tc.same_bytes(a, b), code
    assert tc.same_bytes(got[-2], want[-2]) and tc.same_bytes(got[-1], want[-1])
    assert got[-1].data.shape == (0, 64)
    # the stream reaches the traced kernel: the reference's stream-1 bits
    ref = tcast_ref.cast(x.float().cpu().numpy(), "mxfp8", **PATHS[-1][1])
    for part in ("data", "scale"):
        traced = getattr(got[len(PATHS) - 1], part).cpu().numpy()
        assert np.array_equal(traced, getattr(ref, part)), part
    assert not traced_launches()  # set only while the op's body is traced


def test_a_new_seed_is_a_symbol_of_the_traced_graph(device):
    """After the second seed, seeds below 2**63 reuse the graph: the kernels read its bits.

    A seed of 2**63 or more is a constant of a graph of its own (its int64 is negative); one
    whose int64 is below -2**31 (Inductor would pass it as int32) traces tcast_torch's cast.
    """
    x = _x(device, dtype=torch.float32)
    seen = Graphs()

    @torch.compile(fullgraph=True, backend=seen.backend)
    def f(v, seed):
        return tcast_triton.cast(v, "mxfp8", roundmode="stochastic", seed=seed)

    torch._dynamo.reset()
    seeds = [11, 2**40, 2**62 + 7, 0, 2**63 + 5]
    outs = [f(x, s) for s in seeds[:2]]
    with torch._dynamo.config.patch(error_on_recompile=True):
        outs += [f(x, s) for s in seeds[2:4]]
    outs.append(f(x, seeds[4]))
    for s, o in zip(seeds, outs, strict=True):
        want = tcast_triton.cast(x, "mxfp8", roundmode="stochastic", seed=s)
        assert torch.equal(o.view(torch.int32), want.view(torch.int32)), s
    assert seen.opaque() == [] and len(seen.graphs) == 3
    assert seen.kernels() == ["_cast_row_pieces"] * 2  # the third graph: torch operations


def test_grids_past_the_limit_trace_tcast_torchs_cast(device, monkeypatch):
    """Where the kernels step aside, the body traces tcast_torch's cast (torch operations).

    Seeded: tcast_torch gets the seed in [0, 2**64), a constant and then a symbol.
    """
    import tcast_triton._launch as launch_1d

    monkeypatch.setattr(launch_1d, "MAX_PROGRAMS", 0)
    x = _x(device, (8, 32), torch.float32)

    def fn(v, seed):
        return tcast_triton.cast(v, "mxfp8", roundmode="stochastic", seed=seed)

    seen = Graphs()
    torch._dynamo.reset()
    f = torch.compile(fn, fullgraph=True, backend=seen.backend)
    for seed in (3, 2**62 + 9):  # a constant, then a symbol
        assert tc.same_bytes(f(x, seed), fn(x, seed)), seed
    assert seen.kernels() == [] and seen.opaque() == [] and len(seen.graphs) == 2


def test_a_second_size_compiles_again_with_the_kernels_in_the_graph(device):
    """A size that turns symbolic still traces (the body's plans need concrete sizes).

    The second size makes Dynamo's first dimension a symbol; Dynamo's fake pass then runs
    the body on symbolic sizes, where it calls the opaque ``tcast_triton::cast_dynamic``
    (shapes from the kit's ``result_form``). tcast's checks specialize the size before
    AOTAutograd traces, so the graph holds the kernels again.
    """
    seen = Graphs()

    def fn(v):
        return tcast_triton.cast(v, "mxfp8", castmode="actual")

    torch._dynamo.reset()
    f = torch.compile(fn, fullgraph=True, backend=seen.backend)
    for n in (8, 16):
        x = _x(device, (n, 32))
        assert tc.same_bytes(f(x), fn(x)), n
    assert len(seen.graphs) == 2 and seen.kernels() == ["_cast_row_pieces"] * 2
    assert seen.opaque() == []


def test_a_non_finite_compile_time_float_is_refused_while_tracing():
    """Inductor writes compile-time arguments by ``repr``: ``inf`` would not parse."""
    from tcast_triton._fastlaunch import _TracedKernel
    from tcast_triton._kernels import _amax_pass

    with pytest.raises(
        tcast.TcastError, match=r"argument E holds a non-finite float \(\(1\.0, inf"
    ):
        _TracedKernel(_amax_pass)[(1,)](torch.empty(1), E=(1.0, float("inf")))


# Inductor re-emits a user kernel as source: the kernel and every jitted or constexpr
# function it calls, in one flat module, with the int, str, bool and constexpr globals they
# read; other globals are dropped, and two globals of one name keep the first. This walks
# each kernel's callees as Inductor does and checks that each global a function reads has,
# in the emitted module, the value it has in the function's own module (a float global read
# by a kernel and by a constexpr function is checked first, to show that the check can
# fail). Real kernels (no interpreter): a fresh process.
_EMITTED = '''
import importlib.util, os, tempfile, types
from triton import JITFunction
from triton.language import constexpr
from triton.runtime.jit import ConstexprFunction
from torch._inductor.codegen.triton import TritonKernel
from torch._inductor.codegen.wrapper import (
    user_defined_triton_kernel_transitive_closure_source_code as closure,
)
from tcast_triton import _kernels, _kernels_2d, _pack

tmp = tempfile.mkdtemp()


def load(name, src):
    path = os.path.join(tmp, name + ".py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def problems(kernel):
    src = TritonKernel.gen_common_triton_imports() + closure(kernel)
    mod = load("emitted_" + kernel.__name__, src)
    out, seen = [], set()

    def walk(f):
        for name in f.fn.__code__.co_names:
            if name not in f.fn.__globals__:
                continue  # an attribute or a builtin
            old = f.fn.__globals__[name]
            if name not in vars(mod):
                out.append(f"{f.__name__} reads {name}, not emitted")
                continue
            new = vars(mod)[name]
            if isinstance(old, (JITFunction, ConstexprFunction)):
                # a jitted callee, or a constexpr function (run while compiling): its code
                # and, walked in turn, the globals it reads
                code = old.fn.__code__.co_code
                if not (type(new) is type(old) and new.fn.__code__.co_code == code):
                    out.append(f"{f.__name__} calls {name}, emitted as another function")
                elif id(old) not in seen:
                    seen.add(id(old))
                    walk(old)
            elif not isinstance(old, types.ModuleType):
                a = old.value if isinstance(old, constexpr) else old
                b = new.value if isinstance(new, constexpr) else new
                if type(a) is not type(b) or a != b:
                    out.append(f"{f.__name__} reads {name} = {a!r}, emitted {b!r}")

    walk(kernel)
    return out


BAD = """
import triton
import triton.language as tl
SCALE = 2.0
@triton.jit
def scaled(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) * SCALE)
"""
bad = load("bad", BAD).scaled
assert problems(bad) == ["scaled reads SCALE, not emitted"], problems(bad)
BAD_CONSTEXPR = """
import triton
import triton.language as tl
SCALE = 2.0
@triton.constexpr_function
def factor():
    return SCALE
@triton.jit
def scaled(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) * factor())
"""
bad = load("bad_constexpr", BAD_CONSTEXPR).scaled
assert problems(bad) == ["factor reads SCALE, not emitted"], problems(bad)
kernels = [
    _kernels._cast_unscaled, _kernels._cast_tiles, _kernels._cast_row_pieces,
    _kernels._amax_pass, _kernels_2d._cast_nd, _pack._pack_kernel, _pack._unpack_kernel,
]
found = [f"{k.__name__}: {p}" for k in kernels for p in problems(k)]
# Inductor writes the source into a string literal of its module: an escape breaks it
found += [f"{k.__name__}: a backslash in its source" for k in kernels if chr(92) in closure(k)]
print("; ".join(found) or "ok")
'''


def test_inductor_re_emits_each_kernel_with_the_globals_it_reads():
    """Inductor's copy of each cast kernel reads the constants and callees the kernel reads."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run(
        [sys.executable, "-c", _EMITTED], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", (out.stdout + out.stderr)[-3000:]


@pytest.mark.parametrize(
    ("code", "h"),
    [
        ("nvfp4", None),  # the plain amax pass
        ("nvfp4", tcast.Hadamard.te_wgrad()),  # groups along the rows
        ("e2m1f_e4m3fn_float32_t16d0", tcast.Hadamard.te_wgrad()),  # down the columns
        ("e2m1f_e8m0_t32d0", tcast.Hadamard.seeded(32, 1)),
        ("mxfp8", None),
    ],
)
def test_every_launch_names_every_compile_time_parameter(code, h, monkeypatch, device):
    """Under torch.compile a kernel parameter a launch leaves out arrives as None, whatever
    its default: the plans name them all (the cast kernel's and its amax pass's)."""
    from tcast_triton import _launch

    monkeypatch.setattr(_launch, "_PLANS", {})
    tcast_triton.cast(_x(device, (64, 96)), code, castmode="actual", transform=h)
    (plan,) = _launch._PLANS.values()
    launches = [(plan.kernel, plan.kw)] + (
        [(plan.amax_launch.kernel, plan.amax_kw)] if plan.amax_kw else []
    )
    for kernel, kw in launches:
        params = inspect.signature(getattr(kernel, "fn", kernel)).parameters.values()
        const = [p.name for p in params if "constexpr" in str(p.annotation)]
        missing = [n for n in const if n not in kw]
        assert const and not missing, (kernel, missing)
