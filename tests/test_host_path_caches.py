"""The host path's caches: parsed datatypes, the front door's checked arguments and engine.

A repeated cast reuses what its first call parsed, checked and selected; these tests hold
that the reuse changes nothing a user can see: the same object for the same text, every bad
argument refused on every call, a compiled function neither broken nor recompiled by the
caches (they are bypassed while Dynamo traces), and the engine chosen again when the
engines or the selection change.
"""

from __future__ import annotations

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
