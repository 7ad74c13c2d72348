"""The Triton engine inside a training step: torch.compile, autograd, quantize_model.

Under the interpreter (CPU tensors, ``make test``) and on CUDA: ``tcast.cast`` /
``tcast_triton.cast`` / ``cast_dual`` trace with ``fullgraph=True`` into one graph with the
eager bits (the kernels behind the ``tcast_triton::cast`` custom ops); a new seed does not
recompile after the first; the ops' fake implementations agree with the real ones
(``torch.library.opcheck``); gradients (straight-through and saturate masks) equal
``tcast_torch``'s, eager and compiled; ``quantize_model`` casts through the Triton engine and
gives ``tcast_torch``'s outputs and gradients. On CUDA also: CUDA-graph capture and replay.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch
import torch._dynamo
import triton_checks as tc

import tcast
import tcast_torch
import tcast_triton
from tcast_torch.toolkit import modes_of

# torch's dynamo instantiates autograd.Function classes while tracing them and warns about
# its own call (a DeprecationWarning from inside torch)
pytestmark = pytest.mark.filterwarnings("ignore:.*should not be instantiated:DeprecationWarning")


def _x(device, shape=(64, 96), dtype=torch.bfloat16, seed=3):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * 4
    x[3, 5] = float("nan")
    x[7] = 0.0
    return x.to(dtype).to(device)


CASES = [
    ("mxfp8", {"castmode": "virtual"}),
    ("mxfp8", {"castmode": "actual", "scale_layout": "blocked"}),
    ("nvfp4", {"castmode": "actual"}),
    ("mxfp4", {"castmode": "compress"}),
    ("mxint8", {"castmode": "virtual", "roundmode": "stochastic", "seed": 2**64 - 5}),
    ("uint4_e8m0_int8_t16", {"castmode": "actual"}),
    ("e4m3fn_e8m0_t32n2m4", {"castmode": "compress"}),
    ("mxfp8_2d", {"castmode": "actual", "transpose_scale": True}),
    ("float8_e4m3fn", {"castmode": "virtual"}),
]


@pytest.mark.parametrize(("code", "kw"), CASES, ids=[f"{c}-{k['castmode']}" for c, k in CASES])
def test_fullgraph_trace_gives_the_eager_bits(code, kw, device):
    x = _x(device)

    def fn(v):
        return tcast.cast(v, code, engine="triton", **kw)

    torch._dynamo.reset()
    traced = torch.compile(fn, fullgraph=True, backend="eager")
    got = traced(x)
    want = fn(x)
    assert tc.same_bytes(got, want)
    if not isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype and got.scale_layout == want.scale_layout
        assert got.shape == want.shape and got.engine == "triton"


@pytest.mark.parametrize("code", ["nvfp4", "mxfp8", "mxfp4"])  # MX: the Gluon kernel on sm_90
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("castmode", ["actual", "virtual"])
def test_cast_dual_traces_in_one_graph(code, transposed, castmode, device):
    x = _x(device)

    def fn(v):
        return tcast.cast_dual(v, code, castmode=castmode, transposed=transposed)

    torch._dynamo.reset()
    got = torch.compile(fn, fullgraph=True, backend="eager")(x)
    assert tc.same_bytes(got, fn(x))
    torch._dynamo.reset()
    ex = torch._dynamo.explain(fn)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0


def test_explain_finds_one_graph_and_the_custom_op():
    x = _x("cpu" if tcast_triton.engine.accepts(torch.zeros(1)) else "cuda")
    torch._dynamo.reset()
    ex = torch._dynamo.explain(lambda v: tcast.cast(v, "mxfp8", castmode="actual").data)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0
    code = ex.graphs[0].code
    assert "tcast_triton.cast" in code


def test_a_new_seed_does_not_recompile_after_the_second(device):
    """Dynamo makes the seed argument a symbol once it sees a second value.

    Symbols are int64: a seed of 2**63 or more is a constant of its own graph (correct bits,
    one recompile each), as tcast_torch.toolkit's compile-ops docstring says.
    """
    x = _x(device, dtype=torch.float32)

    @torch.compile(fullgraph=True, backend="eager")
    def f(v, seed):
        return tcast.cast(v, "mxfp8", roundmode="stochastic", seed=seed)

    torch._dynamo.reset()
    seeds = [11, 12, 2**62 + 7, 2**63 - 1, 0, 99]
    outs = [f(x, s) for s in seeds[:2]]
    with torch._dynamo.config.patch(error_on_recompile=True):
        outs += [f(x, s) for s in seeds[2:]]
    seeds.append(2**64 - 1)
    outs.append(f(x, seeds[-1]))
    for s, o in zip(seeds, outs, strict=True):
        want = tcast_triton.cast(x, "mxfp8", roundmode="stochastic", seed=s)
        assert torch.equal(o.view(torch.int32), want.view(torch.int32)), s


def test_the_custom_ops_pass_opcheck(device):
    """Schema, fake (meta) shapes and dtypes against the real kernels, and autograd wiring."""
    x = _x(device, dtype=torch.float32)
    # K = 8 random bits per element of an 8-bit element format (SEMANTICS.md §3.3)
    rb = torch.randint(0, 256, x.shape, dtype=torch.uint8, device=device)
    cast, dual = torch.ops.tcast_triton.cast, torch.ops.tcast_triton.cast_dual
    mx, nv, u4 = "e4m3fn_e8m0_t32", "e2m1f_e4m3fn_float32_t16", "uint4_e8m0_int8_t16"
    # the modes text: castmode/roundmode/scalemode/sat/tr/layout/stream
    cases = [
        (cast, (x, mx, "actual/even/floor/1/0/blocked/0", None, None)),
        (cast, (x, nv, "compress/even/floor/1/0/plain/0", None, None)),
        (cast, (x, mx, "virtual/stochastic/floor/1/0/plain/0", None, rb)),
        (cast, (x, mx, "virtual/stochastic/floor/1/0/plain/0", None, rb.view(torch.int8))),
        (cast, (x, mx, "actual/stochastic/ceil/1/0/plain/0", -5, None)),
        (cast, (x, mx, "actual/stochastic/ceil/1/0/plain/1", -5, None)),
        (dual, (x, mx, "actual/even/floor/1/0/blocked/0", None, None, True)),
        (dual, (x, u4, "compress/even/floor/1/0/plain/0", None, None, False)),
        (dual, (x, mx, "actual/stochastic/floor/1/0/plain/0", 7, None, False)),
    ]
    for op, args in cases:
        torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor"))


def test_fake_shapes_follow_the_kit(device):
    """The fake implementation's parts for a blocked dual cast: the kit's result_form."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.empty(300, 200, device=device))
        parts = torch.ops.tcast_triton.cast_dual(
            x, "e4m3fn_e8m0_t32", "actual/even/floor/1/0/blocked/0", None, None, True
        )
    shapes = [(tuple(p.shape), p.dtype) for p in parts]
    u8 = torch.uint8
    assert shapes[:2] == [((300, 200), u8), ((384, 8), u8)]  # rows: 300 x 7 scales, blocked
    assert shapes[5:7] == [((200, 300), u8), ((256, 12), u8)]  # xᵀ: 200 x 10 scales
    assert modes_of("actual/even/floor/1/0/blocked/0").scale_layout is tcast.ScaleLayout.BLOCKED
    assert modes_of("actual/stochastic/floor/1/0/plain/1").stream == 1


@pytest.mark.parametrize("grad", ["ste", "saturate"])
@pytest.mark.parametrize("code", ["mxfp4", "nvfp4", "uint4_e8m0_int8_t16"])
def test_gradients_equal_tcast_torchs_eager_and_compiled(grad, code, device):
    w0 = _x(device, (32, 64), torch.float32, seed=1).nan_to_num() * 300

    def loss(w, cast):
        return (cast(w, code, grad=grad) ** 2).sum()

    w_torch = w0.clone().requires_grad_()
    loss(w_torch, tcast_torch.cast).backward()
    w_eager = w0.clone().requires_grad_()
    loss(w_eager, tcast_triton.cast).backward()
    w_comp = w0.clone().requires_grad_()
    torch._dynamo.reset()
    torch.compile(lambda w: loss(w, tcast_triton.cast), fullgraph=True, backend="aot_eager")(
        w_comp
    ).backward()
    assert torch.equal(w_eager.grad, w_torch.grad)
    assert torch.equal(w_comp.grad, w_torch.grad)
    if grad == "saturate":
        assert (w_torch.grad == 0).any()  # the mask clipped something: the test can fail


def test_dual_virtual_casts_are_differentiable(device):
    w0 = _x(device, (64, 32), torch.float32, seed=2).nan_to_num()
    w = w0.clone().requires_grad_()
    a, b = tcast_triton.cast_dual(w, "mxfp8", castmode="virtual", transposed=True)
    assert b.shape == (32, 64)
    (a.sum() + 2 * b.sum()).backward()
    assert torch.equal(w.grad, torch.full_like(w0, 3.0))


def test_quantize_model_casts_with_the_triton_engine(device, monkeypatch):
    """The same outputs and gradients as tcast_torch's casts; the Triton engine ran them."""
    torch.manual_seed(0)
    base = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.GELU(), torch.nn.Linear(96, 32))
    x = torch.randn(16, 64)
    rules = [
        tcast_torch.QuantRule("0", weight="mxfp8", input="mxfp8"),
        tcast_torch.QuantRule("2", weight="nvfp4", input="nvfp4", grad="saturate"),
    ]

    def step(route_to_triton: bool):
        model = copy.deepcopy(base).to(device)
        calls = []
        real = tcast_triton.engine.cast_grad

        def counting(*a, **k):
            calls.append(1)
            return real(*a, **k)

        monkeypatch.setattr(tcast_triton.engine, "cast_grad", counting)
        chosen = rules if route_to_triton else [replace(r, engine="torch") for r in rules]
        tcast_torch.quantize_model(model, chosen)
        y = model(x.to(device))
        y.square().sum().backward()
        monkeypatch.undo()
        grads = [p.grad for p in model.parameters()]
        return y.detach(), grads, len(calls)

    y_t, g_t, n_t = step(True)
    y_r, g_r, n_r = step(False)
    assert n_t == 4 and n_r == 0  # two weights and two inputs through the Triton kernels
    assert torch.equal(y_t, y_r)
    assert all(torch.equal(a, b) for a, b in zip(g_t, g_r, strict=True))
    with pytest.raises(tcast.SpecError, match="engine 'cuda' is not defined"):
        tcast_torch.QuantRule("*", weight="mxfp8", engine="cuda")


def test_a_calibrated_model_casts_with_the_triton_engine(device, monkeypatch):
    """Static scales from calibration (given parts) go through the Triton kernels too, with
    tcast_torch's outputs and gradients; each site checks its parts once per input shape."""
    torch.manual_seed(1)
    base = torch.nn.Sequential(torch.nn.Linear(64, 96), torch.nn.GELU(), torch.nn.Linear(96, 32))
    rules = [
        tcast_torch.QuantRule("0", weight="mxfp8", input="int8_float32"),
        tcast_torch.QuantRule("2", weight="int8_float32_t0", input="nvfp4"),
    ]
    batches = [torch.randn(16, 64) * (1 + i) for i in range(3)]
    cal_model = copy.deepcopy(base)
    cal = tcast_torch.prepare_model(cal_model, rules)
    with torch.no_grad():
        for b in batches:
            cal_model(b)
    state = cal.convert().calibration_state()
    assert state  # static input scales and weight scales

    def step(route_to_triton: bool):
        model = copy.deepcopy(base).to(device)
        calls, checks = [], []
        real, real_req = tcast_triton.engine.cast_grad, tcast_triton.engine.request

        def counting(*a, **k):
            calls.append(1)
            return real(*a, **k)

        def requesting(*a, **k):
            checks.append(len(a) > 5 and a[5] is not None)
            return real_req(*a, **k)

        monkeypatch.setattr(tcast_triton.engine, "cast_grad", counting)
        monkeypatch.setattr(tcast_triton.engine, "request", requesting)
        chosen = rules if route_to_triton else [replace(r, engine="torch") for r in rules]
        parts = {k: {n: t.to(device) for n, t in v.items()} for k, v in state.items()}
        tcast_torch.quantize_model(model, chosen, calibration=parts)
        x = batches[0].to(device)
        y = model(x)
        model(x)  # a second forward pass: the checked requests are kept
        y.square().sum().backward()
        monkeypatch.undo()
        grads = [p.grad for p in model.parameters()]
        return y.detach(), grads, len(calls), sum(checks)

    y_t, g_t, n_t, k_t = step(True)
    y_r, g_r, n_r, _ = step(False)
    assert n_t == 8 and n_r == 0  # four casts a pass, two passes, all by the Triton kernels
    assert k_t == len(state)  # each calibrated cast's parts checked once
    assert torch.equal(y_t, y_r)
    assert all(torch.equal(a, b) for a, b in zip(g_t, g_r, strict=True))


@pytest.mark.parametrize("part_dtype", [torch.float32, torch.float16])
def test_a_calibrated_part_changed_in_place_is_read_and_checked_again(part_dtype, device):
    """The parts ``calibrated()`` hands out, changed in place, are what the next forward
    pass casts with (float16 parts are converted by the check: the copy is not kept), and a
    NaN put there is refused as in any eager cast (SEMANTICS.md §5.12)."""
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32)).to(device)
    w = model[0].weight.detach().clone()
    scale = torch.full((32, 1), 0.05, dtype=part_dtype, device=device)
    rules = [tcast_torch.QuantRule("0", weight="int8_float32_t0")]
    handle = tcast_torch.quantize_model(model, rules, calibration={"0:weight": {"scale": scale}})
    x = torch.randn(4, 64, device=device)

    def want(s):
        q = tcast_torch.cast(w, "int8_float32_t0", scale=s.float(), compile=False)
        return torch.nn.functional.linear(x, q, model[0].bias)

    with torch.no_grad():
        assert torch.equal(model(x), want(scale))
        part = handle.calibrated("0", "weight")["scale"]
        part.mul_(4)
        assert torch.equal(model(x), want(part))
        part[3, 0] = float("nan")
        with pytest.raises(tcast.SpecError, match=r"scale\[3, 0\] is nan"):
            model(x)


def test_cuda_graph_capture_replays_the_cast(device):
    if device != "cuda":
        pytest.skip("CUDA graphs need a GPU (run by gpu_check.sh)")
    x = _x(device)
    static = x.clone()
    want = tcast_triton.cast_dual(x, "mxfp8", transposed=True)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = tcast_triton.cast_dual(static, "mxfp8", transposed=True)
    static.copy_(x * 2)
    g.replay()
    assert tc.same_bytes(out, tcast_triton.cast_dual(x * 2, "mxfp8", transposed=True))
    assert not tc.same_bytes(out, want)
