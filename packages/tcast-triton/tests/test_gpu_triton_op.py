"""Inductor compiles the Triton kernels of ``tcast_triton.cast`` with their neighbours (GPU only).

``tcast_triton::cast`` is a ``torch.library.triton_op``: under ``torch.compile`` its kernels
are user kernels of Inductor's graph, not an opaque extern call. A step of neighbour
operations and casts (MXFP8 virtual and actual, NVFP4 actual with its amax pass, MXFP4
compress, 2-D tiles, stochastic rounding from a seed) compiled with ``fullgraph=True``, in
the default mode and under ``mode="reduce-overhead"`` (CUDA graphs), must give the eager
bits; Inductor's generated code holds the cast kernels' own source; torch's analysis of
which tensors each kernel writes succeeds (else it copies every argument); a new seed below
2**31 reuses the graph, and seeds past int32 and int64 give the eager bits. The compiled
kernels are built without the engine's ``enable_fp_fusion=False`` (Inductor passes no such
option): equal bits show the kernels do not depend on it.
"""

from __future__ import annotations

import logging

import pytest
import torch
import torch._dynamo
from torch._inductor.utils import run_and_get_code

import tcast_triton

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="Inductor's Triton kernels need a GPU (gpu_check.sh)"
)

PARTS = ("data", "scale", "zero", "tenscale", "mask")
# the kernel each cast of step() launches, by name in Inductor's generated source
KERNELS = ("_cast_row_pieces", "_cast_tiles", "_amax_pass", "_cast_nd")


def step(x: torch.Tensor, w: torch.Tensor, seed: int):
    """Neighbour operations around casts of every kind the engine launches.

    The neighbours are exact in any precision and order (powers of two, selects, maxima):
    Inductor keeps float32 between fused operations and reorders reductions, eager does not,
    and only the casts are under test.
    """
    y = torch.where(x > 0, x * 4, x * 0.5)
    virtual = tcast_triton.cast(y, "mxfp8")
    actual = tcast_triton.cast(y, "mxfp8", castmode="actual")
    nv = tcast_triton.cast(y, "nvfp4", castmode="actual")
    packed = tcast_triton.cast(w.t(), "mxfp4", castmode="compress")
    tiles_2d = tcast_triton.cast(y, "mxfp8_2d", castmode="actual")
    sr = tcast_triton.cast(y, "mxfp8", roundmode="stochastic", seed=seed)
    return (virtual * 2).amax(-1), actual, nv, packed, tiles_2d, sr * 0.25


def _tensors(out) -> list[torch.Tensor]:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _tensors(o)]
    if isinstance(out, torch.Tensor):
        return [out]
    return [getattr(out, p) for p in PARTS if getattr(out, p) is not None]


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.contiguous()
    if t.dtype.is_floating_point:
        return t.view({4: torch.int32, 2: torch.int16}[t.element_size()])
    return t


def _same(a, b) -> bool:
    ta, tb = _tensors(a), _tensors(b)
    return len(ta) == len(tb) and all(
        p.shape == q.shape and torch.equal(_bits(p), _bits(q)) for p, q in zip(ta, tb, strict=True)
    )


def _inputs(seed: int):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = (torch.randn(256, 512, device="cuda", generator=g) * 3).to(torch.bfloat16)
    w = torch.randn(512, 128, device="cuda", generator=g) * 40
    return x, w


class _Records(logging.Handler):
    """Warnings of torch's kernel-mutation analysis (logged when it gives up)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "identify_accessed_tensors" in record.getMessage():
            self.messages.append(record.getMessage())


@pytest.fixture
def analysis_warnings():
    # torch._higher_order_ops.triton_kernel_wrap logs through dynamo's logger
    log = logging.getLogger("torch._dynamo")
    handler, level = _Records(), log.level
    log.addHandler(handler)
    log.setLevel(logging.WARNING)
    yield handler.messages
    log.removeHandler(handler)
    log.setLevel(level)


def test_inductor_compiles_the_cast_kernels_with_the_eager_bits(analysis_warnings):
    torch._dynamo.reset()
    f = torch.compile(step, fullgraph=True)
    x, w = _inputs(1)
    got, codes = run_and_get_code(f, x, w, 11)
    assert _same(got, step(x, w, 11))
    code = "\n".join(codes)
    missing = [k for k in KERNELS if f"def {k}(" not in code]
    assert missing == [], f"kernels not in Inductor's code: {missing}"
    assert "torch.ops.tcast_triton" not in code  # no opaque extern call
    # torch found the tensors each kernel writes (else it copies every argument each call)
    assert analysis_warnings == []
    x2, w2 = _inputs(2)
    assert _same(f(x2, w2, 11), step(x2, w2, 11))


def test_a_new_seed_reuses_the_compiled_graph():
    """The second seed makes the seed a symbol (one recompile); later seeds below 2**31 reuse
    that graph. Past int32 Inductor compiles once more (int64); seeds of 2**63 or more are
    constants of graphs of their own (some cast by tcast_torch's operations): bits only.
    """

    def g(x: torch.Tensor, seed: int) -> torch.Tensor:
        return tcast_triton.cast(x * 2, "mxfp8", roundmode="stochastic", seed=seed) * 0.5

    torch._dynamo.reset()
    f = torch.compile(g, fullgraph=True)
    x, _ = _inputs(3)
    for s in (11, 12):
        assert _same(f(x, s), g(x, s)), s
    with torch._dynamo.config.patch(error_on_recompile=True):
        for s in (13, 0, 2**31 - 1):
            assert _same(f(x, s), g(x, s)), s
    for s in (2**40 + 3, 2**62, 2**64 - 9, 2**63 + 5):
        assert _same(f(x, s), g(x, s)), s


# torch's CUDA-graph tree manager captures an empty graph when it starts (its own warning)
@pytest.mark.filterwarnings("ignore:The CUDA Graph is empty:UserWarning")
def test_reduce_overhead_replays_the_kernels_with_the_eager_bits():
    """CUDA graphs: each replay on new input values gives that input's eager bits."""
    torch._dynamo.reset()
    f = torch.compile(step, mode="reduce-overhead", fullgraph=True)
    for i in range(4):  # warm-up, recording, replays
        x, w = _inputs(10 + i)
        got = [t.clone() for t in _tensors(f(x, w, 5))]
        assert _same(got, _tensors(step(x, w, 5))), i
