"""``tcast_triton::cast`` under ``torch.compile``: the kernels are nodes of the traced graph.

The op is a ``torch.library.triton_op``: AOTAutograd traces its body (the engine's eager path
on fake tensors) and each kernel launch becomes a ``triton_kernel_wrapper_functional`` node,
with no opaque ``tcast_triton.cast`` node left. Every path the op takes traces, and the graph
(run by ``aot_eager``: under the interpreter the nodes run the interpreted kernels) gives the
eager bits: unscaled, row and column tiles, the N-d kernel (2-D tiles, sparsity and its mask
packing), two-level scaling's amax pass, compress packing (in the kernel and by the pack
kernel), blocked scales, stochastic rounding from a seed (a constant, then a symbol with no
recompile) and from random bits, tcast_torch's cast past the grid limit, and empty tensors.
On CUDA the same tests run the real kernels; ``test_gpu_triton_op.py`` compiles with Inductor.
"""

from __future__ import annotations

import logging

import pytest
import torch
import torch._dynamo
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd
from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

import tcast_triton
from tcast_torch.toolkit import traced_launches

HOP = torch.ops.higher_order.triton_kernel_wrapper_functional

# dynamo instantiates autograd.Function classes while tracing them and warns about its own
# call (a DeprecationWarning from inside torch)
pytestmark = pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")


@pytest.fixture(autouse=True)
def _quiet_mutation_analysis():
    """Without a GPU, torch cannot lower a kernel to find the tensors it writes: it logs a
    warning per launch and takes every tensor argument as written (right bits, more copies).
    """
    log = logging.getLogger("torch._higher_order_ops.triton_kernel_wrap")
    level = log.level
    log.setLevel(logging.ERROR)
    yield
    log.setLevel(level)


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


def _bits(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out.reshape(-1).contiguous().view(torch.uint8)]
    return [
        p.reshape(-1).contiguous().view(torch.uint8)
        for p in (out.data, out.scale, out.zero, out.tenscale, out.mask)
        if p is not None
    ]


def _same(a, b) -> bool:
    pa, pb = _bits(a), _bits(b)
    return len(pa) == len(pb) and all(torch.equal(p, q) for p, q in zip(pa, pb, strict=True))


# (datatype, options, the kernels its launch runs)
PATHS = [
    ("float8_e4m3fn", {"castmode": "virtual"}, ["_cast_unscaled"]),
    ("mxfp8", {"castmode": "actual"}, ["_cast_row_pieces"]),
    ("e4m3fn_e8m0_t32d0", {"castmode": "actual"}, ["_cast_tiles"]),
    ("mxfp8_2d", {"castmode": "actual", "transpose_scale": True}, ["_cast_nd"]),
    ("e4m3fn_e8m0_t32n2m4", {"castmode": "compress"}, ["_cast_nd", "_pack_kernel"]),
    ("nvfp4", {"castmode": "actual", "scale_layout": "blocked"}, ["_amax_pass", "_cast_tiles"]),
    ("mxfp4", {"castmode": "compress"}, ["_cast_tiles"]),
    ("mxfp6e3", {"castmode": "compress"}, ["_cast_row_pieces", "_pack_kernel"]),
    ("mxint8", {"roundmode": "stochastic", "seed": 2**64 - 5}, ["_cast_tiles"]),
]


def test_every_launch_path_traces_to_kernel_nodes_with_the_eager_bits(device):
    """One compiled function holds every path: one trace, each cast's kernels in order."""
    x = _x(device)
    small = _x(device, (4, 32))  # sparsity: the interpreter's slowest kernel
    rb = torch.randint(-(2**31), 2**31 - 1, x.shape, dtype=torch.int32, device=device)

    def fn(v, s, r):
        outs = [tcast_triton.cast(s if "n2m4" in code else v, code, **kw) for code, kw, _ in PATHS]
        outs.append(tcast_triton.cast(v, "mxfp8", roundmode="stochastic", rbits=r))
        return outs

    seen = Graphs()
    torch._dynamo.reset()
    got = torch.compile(fn, fullgraph=True, backend=seen.backend)(x, small, rb)
    want = fn(x, small, rb)
    assert len(seen.graphs) == 1 and seen.opaque() == []
    expected = [k for _, _, ks in PATHS for k in ks] + ["_cast_row_pieces"]
    assert seen.kernels() == expected
    for (code, _, _), a, b in zip(PATHS, got, want, strict=False):
        assert _same(a, b), code
    assert _same(got[-1], want[-1])
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
    seeds = [11, 2**40, 2**62 + 7, 0, 2**64 - 9, 2**63 + 5]
    outs = [f(x, s) for s in seeds[:2]]
    with torch._dynamo.config.patch(error_on_recompile=True):
        outs += [f(x, s) for s in seeds[2:4]]
    outs += [f(x, s) for s in seeds[4:]]
    for s, o in zip(seeds, outs, strict=True):
        want = tcast_triton.cast(x, "mxfp8", roundmode="stochastic", seed=s)
        assert torch.equal(o.view(torch.int32), want.view(torch.int32)), s
    assert seen.opaque() == [] and len(seen.graphs) == 4
    assert seen.kernels() == ["_cast_tiles"] * 3  # the fourth graph: torch operations


def test_grids_past_the_limit_and_empty_tensors_trace_tcast_torchs_cast(device, monkeypatch):
    """Where the kernels step aside, the body traces tcast_torch's cast (torch operations).

    Seeded: tcast_torch gets the seed in [0, 2**64), a constant and then a symbol.
    """
    import tcast_triton._launch as launch_1d

    monkeypatch.setattr(launch_1d, "MAX_PROGRAMS", 0)
    x = _x(device, (8, 32), torch.float32)

    def fn(v, e, seed):
        return [
            tcast_triton.cast(v, "mxfp8", roundmode="stochastic", seed=seed),
            tcast_triton.cast(e, "nvfp4", castmode="actual"),
        ]

    seen = Graphs()
    torch._dynamo.reset()
    f = torch.compile(fn, fullgraph=True, backend=seen.backend)
    empty = torch.empty(0, 32, device=device)
    for seed in (3, 2**64 - 9):  # a constant, then a symbol (int64 -9)
        got, want = f(x, empty, seed), fn(x, empty, seed)
        assert all(_same(a, b) for a, b in zip(got, want, strict=True)), seed
    assert seen.kernels() == [] and seen.opaque() == [] and len(seen.graphs) == 2
