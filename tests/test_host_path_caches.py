"""The host path's caches: parsed datatypes, the front door's checked arguments and engine.

A repeated cast reuses what its first call parsed, checked and selected; these tests hold
that the reuse changes nothing a user can see: the same object for the same text, every bad
argument refused on every call, a compiled function neither broken nor recompiled by the
caches (they are bypassed while Dynamo traces), and the engine chosen again when the
engines or the selection change.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch._dynamo.testing

import tcast
import tcast_torch


def test_text_parsed_once_is_the_same_datatype():
    a = tcast.datatype("e2m3f_e8m0_t32")
    assert tcast.datatype("e2m3f_e8m0_t32") is a
    assert tcast.datatype("e2m3f", "e8m0_t32") is tcast.datatype("e2m3f", "e8m0_t32")
    assert tcast.datatype("e2m3f_e8m0_t32", name="mine").name == "mine"
    assert a.name == "e2m3f_e8m0_t32"  # the labelled one is another entry


@pytest.mark.parametrize("twice", [0, 1])
def test_bad_arguments_are_refused_on_every_call(twice):
    x = np.ones(32, np.float32)
    tcast.cast(x, "mxfp8", roundmode="even")  # a good call first: its entry is remembered
    with pytest.raises(tcast.SpecError, match="sideways"):
        tcast.cast(x, "mxfp8", roundmode="sideways")
    with pytest.raises(tcast.SpecError):
        tcast.cast(x, "mxfp8", seed=3)  # a seed without stochastic rounding
    with pytest.raises(tcast.SpecError):
        tcast.cast(x, ["mxfp8"])  # unhashable: checked, never remembered
    with pytest.raises(tcast.UnsupportedError, match="float64"):
        tcast.cast(x.astype(np.float64), "mxfp8")


def test_a_compiled_cast_by_name_neither_breaks_nor_recompiles():
    torch._dynamo.reset()
    counter = torch._dynamo.testing.CompileCounter()

    @torch.compile(fullgraph=True, backend=counter)
    def f(x):
        return tcast.cast(x, "mxfp8") + tcast_torch.cast(x, "e4m3fn_e8m0_t16")

    x = torch.linspace(-3, 3, 64).reshape(2, 32)
    want = tcast.cast(x, "mxfp8") + tcast_torch.cast(x, "e4m3fn_e8m0_t16")
    assert torch.equal(f(x), want)
    # eager casts between the compiled calls fill the caches with other entries
    tcast.cast(x, "mxfp6e2", castmode="actual")
    tcast.datatype("e5m2_e8m0_t8")
    assert torch.equal(f(x), want)
    assert torch.equal(
        f(x * 2), tcast.cast(x * 2, "mxfp8") + tcast_torch.cast(x * 2, "e4m3fn_e8m0_t16")
    )
    assert counter.frame_count == 1


def test_the_engine_is_chosen_again_when_the_selection_changes(monkeypatch):
    x = np.linspace(-2, 2, 32, dtype=np.float32)
    want = tcast.cast(x, "mxfp8")  # remembered: the ref engine
    chosen = []
    real = tcast.api.select_engine

    def spy(*args, **kwargs):
        eng = real(*args, **kwargs)
        chosen.append(eng.name)
        return eng

    monkeypatch.setattr(tcast.api, "select_engine", spy)
    assert np.array_equal(tcast.cast(x, "mxfp8").view(np.uint32), want.view(np.uint32))
    assert chosen == ["ref"]  # the substituted selection ran: the memo was not used
    monkeypatch.undo()
    tcast.refresh_engines()  # a new registry: engines are selected afresh
    assert np.array_equal(tcast.cast(x, "mxfp8").view(np.uint32), want.view(np.uint32))


def test_a_result_carries_the_name_it_was_asked_for():
    x = np.linspace(-2, 2, 32, dtype=np.float32)
    alpha = tcast.datatype("mxfp8", name="alpha")
    beta = tcast.datatype("mxfp8", name="beta")  # equal to alpha, another label
    assert tcast.cast(x, alpha, castmode="actual").dtype.name == "alpha"
    assert tcast.cast(x, beta, castmode="actual").dtype.name == "beta"
    t = torch.linspace(-2, 2, 64).reshape(2, 32)
    for fn in (tcast.cast, tcast_torch.cast):
        assert fn(t, alpha, castmode="actual").dtype.name == "alpha"
        assert fn(t, beta, castmode="actual").dtype.name == "beta"


@pytest.mark.parametrize("call", [0, 1])
def test_saturate_false_on_a_scaled_cast_warns_on_every_call(call):
    x = np.ones(32, np.float32)
    for _ in range(2):  # the second call is served from the memo
        with pytest.warns(tcast.ArgumentWarning, match="saturate=False has no effect"):
            tcast.cast(x, "mxfp4", saturate=False)


def test_an_engine_that_stops_accepting_is_passed_over(monkeypatch):
    t = torch.linspace(-2, 2, 64).reshape(2, 32)
    tcast.cast(t, "mxfp8")  # remembered: the torch engine
    eng = tcast.engine.load_engine("torch")
    monkeypatch.setattr(type(eng), "accepts", lambda self, x: x.dtype != torch.bfloat16)
    # asked afresh, no engine takes it: the selection's error, not the remembered engine's
    with pytest.raises(tcast.EngineNotFoundError):
        tcast.cast(t.bfloat16(), "mxfp8")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"seed": 10**5000, "roundmode": "stochastic"},
        {"saturate": 10**5000},
        {"saturate": "x" * 500},
        {"transpose_scale": 10**400},
    ],
    ids=["huge-seed", "huge-saturate", "long-saturate", "huge-transpose"],
)
def test_bad_values_are_named_briefly(kwargs):
    with pytest.raises(tcast.SpecError) as info:
        tcast.cast(np.ones(32, np.float32), "mxfp8", **kwargs)
    assert len(str(info.value)) < 200


@pytest.mark.parametrize("name", [["x"], 5])
def test_a_datatype_name_must_be_a_str(name):
    with pytest.raises(tcast.SpecError, match="must be a str"):
        tcast.datatype("mxfp8", name=name)
    with pytest.raises(tcast.SpecError, match="must be a str"):
        tcast.DataType(tcast.number("e4m3fn"), None, name)


def test_a_repeated_cast_goes_through_the_engines_call_object(monkeypatch):
    """``EngineBase.call_for``: asked by a repeated call, kept per shape and dtype, used for
    the arrays it takes, asked again for one it does not."""
    eng = tcast.engine.load_engine("ref")
    made, served = [], []

    class Call:
        def __init__(self, shape):
            self.shape = shape

        def takes(self, x):
            return x.shape == self.shape and x[0] != 99

        def __call__(self, x, seed=None):
            served.append(seed)
            return ("by the call object", seed)

    def call_for(self, x, dt, modes, seed):
        made.append((x.shape, dt.name, modes.roundmode.value, seed))
        return Call(x.shape)

    monkeypatch.setattr(type(eng), "call_for", call_for)
    monkeypatch.setattr(tcast.api, "_CHOSEN", {})
    monkeypatch.setattr(tcast.api, "_CALLS", {})
    x = np.linspace(-2, 2, 32, dtype=np.float32)
    want = tcast.cast(x, "mxfp8")  # the first call of its kind: checked and selected
    assert isinstance(want, np.ndarray) and not made
    assert tcast.cast(x, "mxfp8") == ("by the call object", None)
    assert tcast.cast(x + 1, "mxfp8") == ("by the call object", None)
    assert made == [((32,), "mxfp8", "even", None)]  # kept for the shape and dtype
    y = x.copy()
    y[0] = 99  # not taken (asked again, not taken again): the general path
    got = tcast.cast(y, "mxfp8")
    assert np.array_equal(got.view(np.uint32), tcast_ref_cast(y).view(np.uint32))
    assert len(made) == 2
    z = np.linspace(-2, 2, 64, dtype=np.float32)  # another shape: its own call object
    assert tcast.cast(z, "mxfp8") == ("by the call object", None) and len(made) == 3
    # seeded: the checked seed of each call (any integer type), a bad one refused first
    kw = {"roundmode": "stochastic"}
    assert isinstance(tcast.cast(x, "mxfp8", seed=3, **kw), np.ndarray)
    assert tcast.cast(x, "mxfp8", seed=np.uint64(2**63), **kw) == ("by the call object", 2**63)
    assert made[-1] == ((32,), "mxfp8", "stochastic", 2**63) and served[-1] == 2**63
    assert type(served[-1]) is int
    assert tcast.cast(x, "mxfp8", seed=7, **kw) == ("by the call object", 7)
    with pytest.raises(tcast.SpecError, match="seed"):
        tcast.cast(x, "mxfp8", seed=-1, **kw)
    # a transform never goes through a call object
    n = len(made)
    h = tcast.Hadamard.seeded(32, 0)
    for _ in range(2):
        assert isinstance(tcast.cast(x, "mxfp8", transform=h), np.ndarray)
    assert len(made) == n
    # saturate=False still warns on every call, at the caller's line
    with pytest.warns(tcast.ArgumentWarning) as rec:
        for _ in range(3):
            tcast.cast(x, "mxfp8", saturate=False)
    assert len(rec) == 3 and all(r.filename == __file__ for r in rec)


def test_a_repeated_cast_checks_the_engine_before_its_call_object(monkeypatch):
    """An array the engine refuses or no longer accepts never reaches a call object."""
    eng = tcast.engine.load_engine("torch")
    used = []

    class Call:
        def takes(self, x):
            return True

        def __call__(self, x, seed=None):
            used.append(x)
            return "by the call object"

    monkeypatch.setattr(type(eng), "call_for", lambda self, x, dt, modes, seed: Call())
    monkeypatch.setattr(tcast.api, "_CHOSEN", {})
    monkeypatch.setattr(tcast.api, "_CALLS", {})
    t = torch.linspace(-2, 2, 64).reshape(2, 32)
    tcast.cast(t, "mxfp8")
    assert tcast.cast(t, "mxfp8") == "by the call object"
    with warnings.catch_warnings():  # torch's prototype notice for this layout
        warnings.simplefilter("ignore", UserWarning)
        nested = torch.nested.nested_tensor([torch.ones(32)] * 2)  # refused, with a way out
    with pytest.raises(tcast.UnsupportedError, match="nested"):
        tcast.cast(nested, "mxfp8")
    monkeypatch.setattr(type(eng), "accepts", lambda self, x: x.dtype != torch.bfloat16)
    with pytest.raises(tcast.EngineNotFoundError):
        tcast.cast(t.bfloat16(), "mxfp8")
    assert len(used) == 1


def tcast_ref_cast(x):
    import tcast_ref

    return np.asarray(tcast_ref.cast(x, "mxfp8"))


def test_given_scales_take_no_cached_path_and_engines_without_them_refuse_each_call(
    monkeypatch,
):
    x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32)
    tcast.cast(x, "mxfp8", castmode="actual")  # a repeated call's path is known now
    one = tcast.cast(x, "mxfp8", castmode="actual", scale=np.ones((2, 1), np.float32))
    four = tcast.cast(x, "mxfp8", castmode="actual", scale=np.full((2, 1), 4.0, np.float32))
    assert one.scale.tolist() == [[127], [127]] and four.scale.tolist() == [[129], [129]]
    assert (one.data != four.data).any()
    t = torch.ones(2, 32)
    eng = tcast.load_engines().engines["torch"]
    monkeypatch.setattr(eng, "given_scales", False)
    for _ in range(2):
        with pytest.raises(tcast.UnsupportedError, match="given scales"):
            tcast.cast(t, "mxfp8", castmode="actual", scale=torch.ones(2, 1))
    with pytest.raises(tcast.UnsupportedError, match="given scales"):
        tcast.cast(t, "mxfp8", castmode="actual", scale=torch.ones(2, 1), engine="torch")
    with pytest.raises(tcast.UnsupportedError, match="given scales"):
        tcast.kit.cast_with(eng, t, "mxfp8", castmode="actual", scale=torch.ones(2, 1))
