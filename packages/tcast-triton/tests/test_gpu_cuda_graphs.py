"""Every kind of cast can be captured in a CUDA graph and replayed (GPU only).

A cast is captured on a static input, the input is overwritten, the graph replayed, and the
replay's results must equal, bit for bit, a fresh eager cast of the new input: so nothing of
the first input was baked into the graph (a host copy, a value read back) and the capture did
not fall back to work outside the stream. One case per launch path: unscaled, row and column
tiles, channels, two-level scaling (its amax pass), a tensor scale, 2-D tiles, sparsity,
blocked scales, the packed compress stream, stochastic rounding from a seed and from random
bits, and the dual kernel. A second replay on the first input (of smaller maxima) checks that
an amax pass starts from zero on every replay.
"""

from __future__ import annotations

import pytest
import torch

import tcast_triton

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="CUDA graphs need a GPU (run by gpu_check.sh)"
)

PARTS = ("data", "scale", "zero", "tenscale", "mask")

CASES = [
    ("e4m3fn", {"castmode": "actual"}),
    ("mxfp8", {"castmode": "actual"}),
    ("mxfp8", {"castmode": "virtual"}),
    ("mxfp4", {"castmode": "compress"}),
    ("e4m3fn_e8m0_t32d0", {"castmode": "actual"}),
    ("int8_float32_t0", {"castmode": "actual"}),
    ("nvfp4", {"castmode": "actual"}),
    ("uint8_e8m0_int8_t0", {"castmode": "actual"}),
    ("mxfp8_2d", {"castmode": "actual"}),
    ("e2m1f_e8m0_t32n2m4", {"castmode": "compress"}),
    ("mxfp8", {"castmode": "actual", "scale_layout": "blocked"}),
    ("nvfp4", {"castmode": "actual", "scale_layout": "blocked"}),
    ("mxfp8", {"castmode": "actual", "roundmode": "stochastic", "seed": 11}),
]


def _bits(t: torch.Tensor) -> torch.Tensor:
    if t.dtype.is_floating_point:
        return t.view({4: torch.int32, 2: torch.int16}[t.element_size()])
    return t


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(_bits(a), _bits(b))
    if isinstance(a, tuple):
        return all(_same(p, q) for p, q in zip(a, b, strict=True))
    for part in PARTS:
        p, q = getattr(a, part), getattr(b, part)
        if (p is None) != (q is None) or (p is not None and not torch.equal(p, q)):
            return False
    return True


def _captured(fn, static: torch.Tensor, new: torch.Tensor):
    """``fn(static)`` captured, ``static`` overwritten by ``new``, the graph replayed.

    Returns (the graph, the captured result) for more replays.
    """
    fn(static)  # compiles the kernels outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn(static)
    static.copy_(new)
    g.replay()
    torch.cuda.synchronize()
    return g, out


def _replayed(g, static: torch.Tensor, new: torch.Tensor) -> None:
    static.copy_(new)
    g.replay()
    torch.cuda.synchronize()


def _inputs(dtype=torch.bfloat16):
    gen = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randn(256, 192, device="cuda", generator=gen).to(dtype)
    b = (torch.randn(256, 192, device="cuda", generator=gen) * 37).to(dtype)
    return a, b


@pytest.mark.parametrize(
    ("code", "kw"), CASES, ids=[f"{c}-{'-'.join(map(str, k.values()))}" for c, k in CASES]
)
def test_cast_replays_in_a_cuda_graph(code, kw):
    a, b = _inputs()
    static = a.clone()
    g, out = _captured(lambda t: tcast_triton.cast(t, code, **kw), static, b)
    assert _same(out, tcast_triton.cast(b, code, **kw))
    assert not _same(out, tcast_triton.cast(a, code, **kw))
    # a replay after one of larger maxima: an amax pass must start from zero every time
    _replayed(g, static, a)
    assert _same(out, tcast_triton.cast(a, code, **kw))


def test_cast_with_random_bits_replays_in_a_cuda_graph():
    a, b = _inputs()
    rbits = torch.randint(0, 256, a.shape, device="cuda", dtype=torch.uint8)  # K = 8 (mxfp8)

    def fn(t):
        return tcast_triton.cast(t, "mxfp8", castmode="actual", roundmode="stochastic", rbits=rbits)

    _, out = _captured(fn, a.clone(), b)
    assert _same(out, fn(b))


def test_dual_cast_replays_in_a_cuda_graph():
    a, b = _inputs()
    _, dual = _captured(lambda t: tcast_triton.cast_dual(t, "mxfp8", transposed=True), a.clone(), b)
    assert _same(dual, tcast_triton.cast_dual(b, "mxfp8", transposed=True))
