"""Repeated casts go through a call object (``_fastcast``) and give the general path's results.

A call object is made by the first call of a kind (arguments, shape, dtype, device) and
serves later calls whose input the general path would cast as it is. Its results must be
the general path's field for field (the same bits, dtypes, shapes and labels), and inputs
it does not take (strided, misaligned, negated, requiring grad, another device) must go the
general way.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

import tcast
import tcast_triton
from tcast_triton import _api, _fastcast
from tcast_triton._engine import engine
from tcast_triton._launch import interpreting
from tcast_triton._plain import cast_eager

DEVICE = "cpu" if interpreting() else "cuda"

# (datatype, cast arguments): every kind of plan a call object serves
CASES = [
    ("e4m3fn", {"castmode": "actual"}),
    ("e2m1fn", {"castmode": "compress"}),  # unscaled, packed stream
    ("e5m2", {}),  # unscaled virtual
    ("mxfp8", {"castmode": "actual", "scalemode": "ceil"}),
    ("mxfp8", {}),  # virtual
    ("mxfp4", {"castmode": "compress"}),  # packed by the kernel
    ("mxfp6e2", {"castmode": "compress"}),  # 6-bit codes packed by the kernel
    ("nvfp4", {"castmode": "actual"}),  # amax pass, tensor scale
    ("uint4_float32_float32_t32", {"castmode": "actual"}),  # zero points
    ("mxfp8", {"castmode": "actual", "transpose_scale": True}),
    ("mxfp8", {"castmode": "actual", "scale_layout": "blocked"}),
    ("int8_float32_t0", {"castmode": "actual"}),  # channels
    ("mxfp8_2d", {"castmode": "actual"}),  # the N-d kernel (2-D tiles)
    ("mxfp8_2d", {}),
    ("mxfp8_2d", {"castmode": "compress"}),  # packed by build_result
]


def _fields(r):
    if isinstance(r, torch.Tensor):
        return r
    return {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}


def _same(a, b) -> None:
    """Equal results: raw bits of every tensor, its dtype and shape, every other field."""
    fa, fb = _fields(a), _fields(b)
    if isinstance(fa, torch.Tensor):
        fa, fb = {"values": fa}, {"values": fb}
    assert fa.keys() == fb.keys()
    for name, va in fa.items():
        vb = fb[name]
        if isinstance(va, torch.Tensor):
            assert isinstance(vb, torch.Tensor), name
            assert (va.dtype, va.shape) == (vb.dtype, vb.shape), name
            assert torch.equal(va.view(-1).view(torch.uint8), vb.view(-1).view(torch.uint8)), name
        else:
            assert va == vb, name


@pytest.fixture
def calls(monkeypatch):
    """The inputs each call object cast (a list, appended to per call)."""
    seen: list[torch.Tensor] = []
    real = _fastcast.FastCast.__call__

    def counted(self, x, *seed):
        seen.append(x)
        return real(self, x, *seed)

    monkeypatch.setattr(_fastcast.FastCast, "__call__", counted)
    monkeypatch.setattr(_api, "_CALLS", {})
    return seen


@pytest.mark.parametrize(("code", "kw"), CASES, ids=lambda v: str(v))
def test_a_repeated_cast_takes_the_call_object_and_gives_the_general_result(code, kw, calls):
    x = torch.randn(64, 96, device=DEVICE).to(torch.bfloat16) * 7
    first = tcast_triton.cast(x, code, **kw)
    again = tcast_triton.cast(x, code, **kw)
    assert len(calls) == 2  # the call object served both: made by the first call
    dt, modes = _api._CHECKED[("ste", True, *tcast.kit.arguments_key(code, *_args(kw)))]
    general = cast_eager(x, engine.request(x, dt, modes, None, None))
    _same(first, general)
    _same(again, general)


def _args(kw):
    return (
        kw.get("castmode", "virtual"),
        kw.get("roundmode", "even"),
        kw.get("scalemode", "floor"),
        kw.get("saturate", True),
        kw.get("transpose_scale", False),
        kw.get("scale_layout", "plain"),
    )


def test_inputs_the_call_object_does_not_take_go_the_general_way(calls):
    base = torch.randn(64 * 96 + 8, device=DEVICE)
    x = base[: 64 * 96].view(64, 96)
    want = tcast_triton.cast(x, "mxfp8", castmode="actual")
    assert len(calls) == 1
    others = {
        "misaligned": base[1 : 1 + 64 * 96].view(64, 96),
        "strided": torch.randn(96, 64, device=DEVICE).t(),
        "negated": x.neg()._neg_view(),  # the negative bit set: reads as x
    }
    for name, y in others.items():
        n = len(calls)
        got = tcast_triton.cast(y, "mxfp8", castmode="actual")
        assert len(calls) == n, name
        ref = tcast_triton.cast(y.resolve_neg().contiguous().clone(), "mxfp8", castmode="actual")
        assert len(calls) == n + 1, name
        assert torch.equal(got.data, ref.data) and torch.equal(got.scale, ref.scale), name
    n = len(calls)
    assert torch.equal(want.data, tcast_triton.cast(x, "mxfp8", castmode="actual").data)
    assert len(calls) == n + 1


def test_a_virtual_cast_that_needs_a_gradient_goes_the_general_way(calls, monkeypatch):
    x = torch.randn(4, 32, device=DEVICE)
    tcast_triton.cast(x, "mxfp8")
    w = x.clone().requires_grad_()
    y = tcast_triton.cast(w, "mxfp8")
    assert len(calls) == 1 and y.requires_grad
    y.sum().backward()
    assert torch.equal(w.grad, torch.ones_like(x))
    with torch.no_grad():
        assert not tcast_triton.cast(w, "mxfp8").requires_grad
    assert len(calls) == 2
    # through the front door: no call object is made for it (the engine answers None)
    made = []
    real = engine.call_for
    monkeypatch.setattr(engine, "call_for", lambda *a: made.append(real(*a)) or made[-1])
    for _ in range(3):
        w.grad = None
        tcast.cast(w, "mxfp8", engine="triton").sum().backward()
        assert torch.equal(w.grad, torch.ones_like(x))
    assert len(calls) == 2 and made and not any(made)


@pytest.mark.parametrize("code", ["mxfp8", "e4m3fn", "nvfp4"])
def test_seeded_stochastic_casts_take_the_call_object_with_each_seed(code, calls):
    from tcast.kit import EngineBase

    x = torch.randn(4, 64, device=DEVICE)
    dt = tcast.datatype(code)
    modes = tcast.CastModes.of("actual", "stochastic")
    for seed in (5, 2**40 + 3, 2**64 - 1, 5):  # int32, int64 and uint64 seeds, and again
        got = tcast_triton.cast(x, dt, castmode="actual", roundmode="stochastic", seed=seed)
        _same(got, cast_eager(x, EngineBase.request(engine, x, dt, modes, seed, None)))
    assert len(calls) == 4
    with pytest.raises(tcast.SpecError, match="seed"):
        tcast_triton.cast(x, dt, castmode="actual", roundmode="stochastic", seed=-1)
    with pytest.raises(tcast.SpecError, match="seed"):
        tcast_triton.cast(x, dt, castmode="actual", roundmode="stochastic", seed=True)
    with pytest.raises(tcast.SpecError, match="stochastic"):
        tcast_triton.cast(x, dt, castmode="actual", roundmode="stochastic")


def test_seeded_call_objects_keep_their_stream(calls):
    """A call object holds its cast's Philox stream (a launch argument): casts of streams 0,
    1 and 2**32 - 1 each take their own, with tcast_ref's bits of that stream."""
    import numpy as np

    import tcast_ref

    x = torch.randn(4, 64, device=DEVICE)
    xn = x.cpu().numpy()
    kw = {"castmode": "actual", "roundmode": "stochastic", "seed": 2**40 + 3}
    for stream in (1, 0, 2**32 - 1, 1, 0):
        got = tcast_triton.cast(x, "mxfp8", stream=stream, **kw)
        want = tcast_ref.cast(xn, "mxfp8", stream=stream, **kw)
        assert np.array_equal(got.data.cpu().numpy(), want.data), stream
        assert np.array_equal(got.scale.cpu().numpy(), want.scale), stream
    assert len(calls) == 5 and len(_api._CALLS) == 3  # one call object per stream


@pytest.mark.parametrize("code", ["mxfp8", "nvfp4"])
def test_seeded_front_door_casts_take_the_call_object_with_each_seed(code, calls):
    # tcast.cast remembers its checked arguments for seeded calls too (a seed's value is
    # checked on each), and the engine serves the seeded request through its call object
    from tcast.kit import EngineBase

    x = torch.randn(4, 64, device=DEVICE)
    dt = tcast.datatype(code)
    modes = tcast.CastModes.of("actual", "stochastic")
    for name in ("triton", None):
        for seed in (5, 2**40 + 3, 2**64 - 1, 5):
            got = tcast.cast(
                x, dt, castmode="actual", roundmode="stochastic", seed=seed, engine=name
            )
            # the expected result from a request made afresh (not the engine's remembered one)
            _same(got, cast_eager(x, EngineBase.request(engine, x, dt, modes, seed, None)))
    assert len(calls) == 8
    # a stochastic request without a seed, cast by the engine, makes no call object that
    # seeded casts would then take (it has no random source)
    seedless = engine.request(x, dt, modes, None, None)
    with pytest.raises(tcast.SpecError, match="needs a seed"):
        engine.cast(x, seedless)
    got = tcast.cast(x, dt, castmode="actual", roundmode="stochastic", seed=11)
    _same(got, cast_eager(x, EngineBase.request(engine, x, dt, modes, 11, None)))
    for bad in (-1, True, 2**64):
        with pytest.raises(tcast.SpecError, match="seed"):
            tcast.cast(x, dt, castmode="actual", roundmode="stochastic", seed=bad)
    with pytest.raises(tcast.SpecError, match="stochastic"):
        tcast.cast(x, dt, castmode="actual", seed=5)  # a seed without stochastic rounding


def test_given_random_bits_never_take_a_call_object(calls):
    x = torch.randn(4, 32, device=DEVICE)
    for dtype in (torch.uint8, torch.int8):
        rbits = torch.zeros(4, 32, dtype=dtype, device=DEVICE)
        for _ in range(2):
            tcast_triton.cast(x, "mxfp8", roundmode="stochastic", rbits=rbits)
    assert not calls


def test_the_front_door_and_engine_casts_take_the_call_object(calls):
    x = torch.randn(8, 64, device=DEVICE)
    dt = tcast.datatype("nvfp4")
    req = engine.request(x, dt, tcast.CastModes.of("actual"), None, None)
    general = cast_eager(x, req)
    for _ in range(2):
        _same(tcast.cast(x, dt, castmode="actual", engine="triton"), general)
        _same(engine.cast(x, req), general)
    # tcast.cast's calls reach the engine's cast: the call object of the engine's remembered
    # request serves every cast after the first (the front door's first call checks anew)
    assert len(calls) == 4


def test_an_engine_cast_checks_each_input_against_its_request(calls):
    x = torch.randn(8, 64, device=DEVICE)
    req = engine.request(x, tcast.datatype("mxfp8"), tcast.CastModes.of("actual"), None, None)
    engine.cast(x, req)
    engine.cast(x, req)
    assert len(calls) == 2
    with pytest.raises(tcast.SpecError, match="shape"):
        engine.cast(torch.randn(8, 32, device=DEVICE), req)
    with pytest.raises(tcast.SpecError):
        engine.cast(x.half(), req)  # another dtype than the request was made for
    with pytest.raises(tcast.UnsupportedError, match="layout"):
        engine.cast(x.to_sparse(), req)
    assert len(calls) == 2


def test_sparse_datatypes_go_the_general_way(calls):
    x = torch.randn(8, 64, device=DEVICE)
    for _ in range(2):
        got = tcast_triton.cast(x, "e4m3fn_e8m0_t32n2m4", castmode="compress")
    assert not calls
    dt, modes = tcast.datatype("e4m3fn_e8m0_t32n2m4"), tcast.CastModes.of("compress")
    _same(got, cast_eager(x, engine.request(x, dt, modes, None, None)))


def test_equal_datatypes_of_other_names_label_their_own_results(calls):
    x = torch.randn(8, 32, device=DEVICE)
    for name in ("mxfp8", "e4m3fn_e8m0_t32", "mxfp8"):
        dt = tcast.datatype(name)
        for _ in range(2):
            assert tcast_triton.cast(x, dt, castmode="actual").dtype.name == name
            assert tcast.cast(x, dt, castmode="actual", engine="triton").dtype.name == name


def test_a_call_object_answers_to_the_plan_cache_and_grid_limit_it_was_made_under(
    calls, monkeypatch
):
    from tcast_triton import _launch

    x = torch.randn(8, 3000, device=DEVICE)
    want = tcast_triton.cast(x, "e4m3fn", castmode="actual")
    assert len(calls) == 1
    monkeypatch.setattr(_launch, "_PLANS", {})  # another plan cache (tests switch kernels)
    _same(tcast_triton.cast(x, "e4m3fn", castmode="actual"), want)
    assert len(calls) == 1 and _launch._PLANS  # the general path planned anew
    monkeypatch.setattr(_launch, "MAX_PROGRAMS", 1)  # a grid past the limit: tcast_torch
    got = tcast_triton.cast(x, "e4m3fn", castmode="actual")
    assert len(calls) == 1 and torch.equal(got.data, want.data)


def test_compiled_launches_are_keyed_by_each_tensor_dtype_and_alignment():
    # one packing kernel reads uint8 or int32 codes: a kernel compiled for one must not
    # launch with the other (the pointer type is part of the compiled signature)
    from tcast_triton._fastlaunch import _spec

    u8 = torch.zeros(64, dtype=torch.uint8)
    i32 = torch.zeros(16, dtype=torch.int32)
    assert _spec(u8) != _spec(i32)
    assert _spec(u8) != _spec(u8[1:])  # 16-byte alignment
    assert _spec(u8) == _spec(torch.ones(32, dtype=torch.uint8))


@pytest.mark.parametrize(
    ("code", "h"),
    [("nvfp4", tcast.Hadamard.te_wgrad()), ("mxfp4", tcast.Hadamard.seeded(32, 6))],
)
def test_casts_with_a_transform_take_no_call_object_and_equal_the_reference(code, h, calls):
    """The kernels cast the transformed values (``tcast.kit.cast_transformed``), every time."""
    import ml_dtypes
    import numpy as np

    import tcast_ref

    x = (torch.randn(32, 64) * 3).to(torch.bfloat16)
    xn = x.float().numpy().astype(ml_dtypes.bfloat16)
    want = tcast_ref.cast(xn, code, castmode="actual", transform=h)
    want_v = tcast_ref.cast(xn, code, transform=h).view(np.int16)
    xd = x.to(DEVICE)
    for _ in range(2):
        for cast in (tcast_triton.cast, lambda *a, **k: tcast.cast(*a, engine="triton", **k)):
            got = cast(xd, code, castmode="actual", transform=h)
            assert got.transform == h and got.input_dtype == "bfloat16"
            np.testing.assert_array_equal(got.data.cpu().numpy(), want.data)
            np.testing.assert_array_equal(got.scale.cpu().numpy(), want.scale)
            v = cast(xd, code, transform=h)
            np.testing.assert_array_equal(v.cpu().view(torch.int16).numpy(), want_v)
            assert torch.equal(tcast.upcast(got).cpu(), v.cpu().float())
    assert not calls  # no call object served them
    # the dual cast with the transform on its column side: the reference's second result
    _, cols = tcast_triton.cast_dual(xd, code, transposed=True, column_transform=h)
    _, want_cols = tcast_ref.cast_dual(xn, code, transposed=True, column_transform=h)
    assert cols.transform == h
    np.testing.assert_array_equal(cols.data.cpu().numpy(), want_cols.data)
    np.testing.assert_array_equal(cols.scale.cpu().numpy(), want_cols.scale)
    # the straight-through gradient is the incoming one exactly (not through the butterfly)
    xg = x.float().to(DEVICE).requires_grad_()
    g = torch.randn(xg.shape, device=DEVICE)
    (got,) = torch.autograd.grad(tcast.cast(xg, code, transform=h, engine="triton"), xg, g)
    assert torch.equal(got, g)
