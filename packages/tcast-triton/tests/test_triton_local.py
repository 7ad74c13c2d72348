"""The Triton engine's array work on a DTensor shard's window (``tcast_triton._local``).

Single-process checks of what ``tcast_torch.toolkit.cast_dtensor`` asks of it, on CPU tensors
through the interpreter (CUDA tensors on a GPU):

* ``stats``: the kernels' block statistics (``_tile_stats``, the amax pass) equal the same
  maxima computed here with torch over the exact model's blocks (``tcast.exact.block_indices``);
* ``cast`` with the window's own statistics equals the engine's cast of the window;
* ``cast`` with other statistics (a block's amax raised, as another shard's elements raise
  a cut block's; NaN, Inf, a tensor amax) equals the torch engine's cast with the same
  statistics (``tcast_torch.toolkit.TORCH_LOCAL``, the independent implementation), and the
  cast is the Triton kernels' (the torch engine is not called);
* the saturate gradient with given statistics equals the torch engine's.
"""

from __future__ import annotations

import pytest
import torch
import triton_checks as tc

import tcast
from tcast.exact import block_indices
from tcast.kit import CastRequest
from tcast_torch.toolkit import TORCH_LOCAL, BlockStats
from tcast_triton import _engine, _local
from tcast_triton._launch import interpreting

DEVICE = "cpu" if interpreting() else "cuda"
PARTS = ("data", "scale", "zero", "tenscale", "mask")

# (datatype, shape): row tiles, column tiles, channels along either dimension (a long column
# channel loops: 1100 > MAX_TILE), uint data with zero points, two-level scaling, a tensor
# scale, uint data with a tensor scale
CASES = [
    ("mxfp8", (6, 96)),
    ("mxfp4", (4, 64)),
    ("e4m3fn_e8m0_t32d0", (70, 5)),
    ("int8_float32_t0", (5, 40)),
    ("int8_float32_t0d0", (1100, 3)),
    ("uint8_float32_uint8_t0", (5, 40)),
    ("uint4_e8m0_int8_t16", (4, 48)),
    ("nvfp4", (4, 64)),
    ("e4m3fn_float32", (6, 20)),
    ("uint8_float32_uint8", (6, 20)),
]


def _x(shape, dtype=torch.float32, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    x = x * torch.exp2(torch.randint(-8, 9, shape, generator=g).float())
    return x.to(DEVICE, dtype)


def _request(x, code, castmode="actual", roundmode="even", seed=None, rbits=None) -> CastRequest:
    eng = tc.engine()
    modes = tcast.CastModes.of(castmode=castmode, roundmode=roundmode)
    return eng.request(x, tcast.datatype(code), modes, seed, rbits)


def _bits(t: torch.Tensor) -> torch.Tensor:
    width = {1: torch.uint8, 2: torch.int16, 4: torch.int32}[t.element_size()]
    return t.detach().contiguous().view(width)


def _same(got, want) -> None:
    if isinstance(want, torch.Tensor):
        assert torch.equal(_bits(got), _bits(want))
        return
    for part in PARTS:
        g, w = getattr(got, part), getattr(want, part)
        assert (g is None) == (w is None), part
        if w is not None:
            assert torch.equal(_bits(g), _bits(w)), part


def _kernel_definitions(x: torch.Tensor, req: CastRequest) -> BlockStats:
    """The kernels' statistics computed here: maxima of magnitude bits per block (uint data:
    of the positive bits and of the negative magnitude bits), in the scale array's shape."""
    layout = req.layout
    b = x.to(torch.float32).view(torch.int32)
    mag = b & 0x7FFFFFFF
    u = req.dtype.nspec.is_uint
    if not layout.dims:
        mx = mag.max()
        if u:
            hi = torch.where(b > 0, b, 0).max()
            lo = torch.where(b < 0, mag, 0).max()
            return BlockStats(hi.reshape(()), lo.reshape(()))
        return BlockStats(mx.reshape(()))
    # the blocks as the exact model partitions them (SEMANTICS.md §5.1)
    shape, members = block_indices(req.shape, req.dtype, req.transpose_scale)

    def per_block(v: torch.Tensor) -> torch.Tensor:
        flat = v.reshape(-1)
        out = [flat[torch.tensor(idx, dtype=torch.long)].max() for _, idx in members]
        return torch.stack(out).reshape(shape)

    tamax = mx_all = None
    if u:
        hi = per_block(torch.where(b > 0, b, 0))
        lo = per_block(torch.where(b < 0, mag, 0))
    else:
        hi, lo = per_block(mag), None
    if req.dtype.is_multiscale:
        mx_all = mag.max()
        tamax = mx_all.reshape(())
    return BlockStats(hi, lo, tamax)


def _raised(stats: BlockStats, req: CastRequest, nan: bool = False) -> BlockStats:
    """Statistics as another shard's elements change them: some blocks' maxima raised (and
    a NaN or Inf), the tensor amax with them."""

    def up(a: torch.Tensor | None, k: int) -> torch.Tensor | None:
        if a is None:
            return None
        flat = a.reshape(-1).clone()
        flat[k % flat.numel()] = max(int(flat[k % flat.numel()]), 0x41200000)  # 10.0
        if flat.numel() > 2:
            flat[(k + 1) % flat.numel()] = 0x7FC00001 if nan else 0x7F800000  # NaN / Inf
        return flat.reshape(a.shape)

    hi, lo = up(stats.hi, 0), up(stats.lo, 1)
    tamax = stats.tamax
    if tamax is not None:
        tamax = torch.maximum(tamax, hi.max())
    return BlockStats(hi, lo, tamax)


@pytest.mark.parametrize("code,shape", CASES)
def test_statistics_are_the_kernels_maxima(code, shape):
    x = _x(shape)
    x.reshape(-1)[3] = float("nan")
    x.reshape(-1)[7] = float("-inf")
    x.reshape(-1)[1] = -0.0
    req = _request(x, code)
    got = _engine.TRITON_LOCAL.stats(x, req, True)
    want = _kernel_definitions(x, req)
    for name in ("hi", "lo", "tamax"):
        g, w = getattr(got, name), getattr(want, name)
        assert (g is None) == (w is None), name
        if w is not None:
            assert torch.equal(g.cpu(), w.cpu()), name
    if tcast.datatype(code).is_multiscale:
        only = _engine.TRITON_LOCAL.stats(x, req, False)
        assert only.hi is None and torch.equal(only.tamax.cpu(), want.tamax.cpu())


@pytest.mark.parametrize("castmode", ["virtual", "actual"])
@pytest.mark.parametrize("code,shape", CASES)
def test_own_statistics_give_the_window_cast(code, shape, castmode):
    x = _x(shape, torch.bfloat16, seed=1)
    req = _request(x, code, castmode)
    stats = _engine.TRITON_LOCAL.stats(x, req, True)
    got = _engine.TRITON_LOCAL.cast(x, req, stats, "ste")
    _same(got, tc.engine().run(x, req))


@pytest.mark.parametrize("nan", [False, True])
@pytest.mark.parametrize("castmode", ["virtual", "actual"])
@pytest.mark.parametrize("code,shape", CASES)
def test_given_statistics_cast_as_the_torch_engine(code, shape, castmode, nan, monkeypatch):
    x = _x(shape, seed=2)
    rbits = _rbits(code, shape, signed=nan)
    req = _request(x, code, castmode, roundmode="stochastic", rbits=rbits)
    stats = _raised(_engine.TRITON_LOCAL.stats(x, req, True), req, nan)
    want = TORCH_LOCAL.cast(x, req, _local._torch_stats(x, req, stats), "ste")
    monkeypatch.setattr(TORCH_LOCAL, "cast", _no_torch)
    got = _engine.TRITON_LOCAL.cast(x, req, stats, "ste")
    _same(got, want)


def _rbits(code, shape, signed: bool) -> torch.Tensor:
    """K random bits per element (SEMANTICS.md §3.3): torch.uint8 for K = 8, torch.int16
    for K = 16; ``signed``: torch.int8 for K = 8 (the same bits)."""
    k = tcast.rbits_width(code)
    g = torch.Generator().manual_seed(5)
    if k == 8 and not signed:
        return torch.randint(0, 256, shape, generator=g, dtype=torch.uint8).to(DEVICE)
    half = 1 << (k - 1)
    dtype = torch.int8 if k == 8 else torch.int16
    return torch.randint(-half, half, shape, generator=g, dtype=dtype).to(DEVICE)


def _no_torch(*args, **kwargs):
    raise AssertionError("the torch engine cast a window the kernels take")


# two-level scaling: 1-D tiles (_cast_tiles) and 2-D tiles (the N-d kernel)
@pytest.mark.parametrize("code", ["nvfp4", "e2m1f_e4m3fn_float32_t16_t16"])
@pytest.mark.parametrize("castmode", ["virtual", "actual"])
def test_a_given_tensor_amax_alone(code, castmode, monkeypatch):
    """No block cut: the tensor amax of two-level scaling is the only statistic given."""
    x = _x((32, 64), seed=3)
    req = _request(x, code, castmode)
    own = _engine.TRITON_LOCAL.stats(x, req, False)
    assert own.hi is None
    raised = torch.tensor(0x4B000000, dtype=torch.int32, device=DEVICE)  # 2**23
    big = BlockStats(None, None, torch.maximum(own.tamax, raised))
    want = TORCH_LOCAL.cast(x, req, _local._torch_stats(x, req, big), "ste")
    monkeypatch.setattr(TORCH_LOCAL, "cast", _no_torch)
    got = _engine.TRITON_LOCAL.cast(x, req, big, "ste")
    _same(got, want)
    if castmode == "actual":  # the raised amax changed the cast
        with pytest.raises(AssertionError):
            _same(got, tc.engine().run(x, req))


@pytest.mark.parametrize("grad", ["ste", "saturate"])
@pytest.mark.parametrize(
    "code", ["mxfp4", "nvfp4", "uint8_float32_uint8_t0", "uint4_e8m0_int8_t16"]
)
def test_gradients_with_given_statistics(code, grad):
    """The saturate mask of a window cast with the kernels' statistics (NaN and -Inf in some
    blocks: the uint statistics' conversion to the torch engine's terms) equals the torch
    engine's with its own statistics of the same window (computed there, independently)."""
    x = _x((4, 64), seed=4) * 100
    x[1, 3] = float("nan")
    x[2, 40] = float("-inf")
    req = _request(x, code, "virtual")
    weights = torch.arange(64.0, device=DEVICE)
    a = x.clone().requires_grad_(True)
    stats = _engine.TRITON_LOCAL.stats(x, req, True)
    (_engine.TRITON_LOCAL.cast(a, req, stats, grad) * weights).sum().backward()
    b = x.clone().requires_grad_(True)
    own = TORCH_LOCAL.stats(x, req, True)
    if req.dtype.is_multiscale:
        own = BlockStats(own.hi, own.lo, own.hi.max())
    (TORCH_LOCAL.cast(b, req, own, grad) * weights).sum().backward()
    assert torch.equal(_bits(a.grad), _bits(b.grad))
    if grad == "saturate":  # the mask cut something: the check compares masks, not ones
        assert not torch.equal(_bits(a.grad), _bits(weights.expand_as(x).contiguous()))
