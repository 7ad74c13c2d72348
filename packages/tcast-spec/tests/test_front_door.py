"""tcast.cast / tcast.upcast dispatch, engine discovery through entry points, input errors."""

from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

import tcast
import tcast.engine as engine_mod
from tcast import CastModes, CastResult, EngineNotFoundError, SpecError, UnsupportedError


@dataclass
class FakeEngine:
    name: str
    priority: int = 0
    supported: frozenset = frozenset({"mxfp8"})
    calls: list = field(default_factory=list)

    def accepts(self, x):
        return isinstance(x, list)

    def supports(self, dtype, modes):
        return dtype.name in self.supported and modes.castmode is tcast.CastMode.VIRTUAL

    def cast(self, x, dtype, **kw):
        self.calls.append((dtype.name, kw))
        return ("cast-by", self.name)

    def upcast(self, result):
        return ("upcast-by", self.name)


@dataclass
class FakeEntryPoint:
    name: str
    obj: object
    value: str = "fake:engine"

    def load(self):
        if isinstance(self.obj, Exception):
            raise self.obj
        return self.obj


@pytest.fixture
def installed(monkeypatch):
    def install(*eps):
        monkeypatch.setattr(engine_mod, "entry_points", lambda group: list(eps))

    return install


def test_with_no_engine_a_numpy_array_names_the_reference_wheel(installed):
    installed()
    with pytest.raises(EngineNotFoundError, match="tcast-ref"):
        tcast.cast(np.zeros(4, np.float32), "mxfp8")


def test_with_no_engine_a_torch_tensor_names_the_torch_wheel(installed):
    installed()
    with pytest.raises(EngineNotFoundError, match="tcast-torch"):
        tcast.cast(torch.zeros(4), "mxfp8")


def test_with_no_engine_an_unknown_array_lists_the_engine_wheels(installed):
    installed()
    with pytest.raises(EngineNotFoundError, match=r"tcast-ref.*tcast-torch.*tcast-triton"):
        tcast.cast(object(), "mxfp8")


def test_dispatch_picks_the_highest_priority_engine_that_supports_the_request(installed):
    low, high = FakeEngine("low", 1), FakeEngine("high", 5)
    picky = FakeEngine("picky", 9, supported=frozenset({"mxfp4"}))
    installed(FakeEntryPoint("low", low), FakeEntryPoint("high", high),
              FakeEntryPoint("picky", picky))
    assert tcast.cast([1.0], "mxfp8") == ("cast-by", "high")
    assert tcast.cast([1.0], "mxfp4") == ("cast-by", "picky")
    name, kw = high.calls[0]
    assert name == "mxfp8"
    assert kw["roundmode"] is tcast.RoundMode.EVEN and kw["scalemode"] is tcast.ScaleMode.FLOOR
    assert kw["castmode"] is tcast.CastMode.VIRTUAL and kw["saturate"] is True


def test_an_entry_point_may_load_a_factory(installed):
    installed(FakeEntryPoint("made", lambda: FakeEngine("made")))
    assert tcast.cast([1.0], "mxfp8") == ("cast-by", "made")
    assert set(tcast.engines()) == {"made"}


def test_engine_by_name_bypasses_priority(installed):
    installed(FakeEntryPoint("a", FakeEngine("a", 1)), FakeEntryPoint("b", FakeEngine("b", 2)))
    assert tcast.cast([1.0], "mxfp8", engine="a") == ("cast-by", "a")


def test_unsupported_request_raises_unsupported_naming_the_engines(installed):
    installed(FakeEntryPoint("a", FakeEngine("a")))
    with pytest.raises(UnsupportedError, match="a"):
        tcast.cast([1.0], "mxfp4")
    with pytest.raises(UnsupportedError):
        tcast.cast([1.0], "mxfp8", castmode="actual")
    with pytest.raises(UnsupportedError):
        tcast.cast([1.0], "mxfp4", engine="a")


def test_unknown_engine_name_lists_the_installed_ones(installed):
    installed(FakeEntryPoint("a", FakeEngine("a")))
    with pytest.raises(EngineNotFoundError, match=r"'nope'.*installed: a"):
        tcast.cast([1.0], "mxfp8", engine="nope")


def test_a_broken_plugin_is_recorded_not_fatal(installed):
    installed(FakeEntryPoint("ok", FakeEngine("ok")),
              FakeEntryPoint("broken", ImportError("no triton")),
              FakeEntryPoint("wrong", object()))
    loaded = tcast.load_engines()
    assert set(loaded.engines) == {"ok"}
    assert "no triton" in loaded.failures["broken"]
    assert "does not implement" in loaded.failures["wrong"]
    with pytest.raises(EngineNotFoundError, match="no triton"):
        tcast.cast([1.0], "mxfp8", engine="broken")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"roundmode": "stochastic", "seed": 1, "rbits": [0]}, "not both"),
        ({"seed": 1}, "stochastic"),
        ({"rbits": [1]}, "stochastic"),
        ({"roundmode": "banker"}, "round mode 'banker'"),
        ({"scalemode": "max"}, "scale mode 'max'"),
        ({"castmode": "fake"}, "cast mode 'fake'"),
        ({"saturate": 1}, "saturate"),
        ({"transpose_scale": "yes"}, "transpose_scale"),
    ],
)
def test_bad_arguments_raise_spec_error_before_dispatch(installed, kwargs, match):
    eng = FakeEngine("a")
    installed(FakeEntryPoint("a", eng))
    with pytest.raises(SpecError, match=match):
        tcast.cast([1.0], "mxfp8", **kwargs)
    assert eng.calls == []


def test_bad_datatype_raises_spec_error(installed):
    installed(FakeEntryPoint("a", FakeEngine("a")))
    with pytest.raises(SpecError, match="e9m2"):
        tcast.cast([1.0], "e9m2")


def test_upcast_goes_to_the_engine_that_made_the_result(installed):
    installed(FakeEntryPoint("a", FakeEngine("a", 1)), FakeEntryPoint("b", FakeEngine("b", 2)))
    res = CastResult(data=[0], scale=None, zero=None, tenscale=None, mask=None, meta=None,
                     dtype=tcast.mxfp8, shape=(1,), castmode=tcast.CastMode.ACTUAL, engine="a")
    assert tcast.upcast(res) == ("upcast-by", "a")
    res.engine = ""
    assert tcast.upcast(res) == ("upcast-by", "b")
    with pytest.raises(SpecError, match="CastResult"):
        tcast.upcast([0])


def test_upcast_without_a_capable_engine_names_the_wheel(installed):
    installed()
    res = CastResult(data=np.zeros(1, np.uint8), scale=None, zero=None, tenscale=None,
                     mask=None, meta=None, dtype=tcast.mxfp8, shape=(1,),
                     castmode=tcast.CastMode.ACTUAL, engine="ref")
    with pytest.raises(EngineNotFoundError, match="tcast-ref"):
        tcast.upcast(res)


def test_cast_modes_accept_strings_enums_and_aliases():
    m = CastModes.of("actual", "nearest", "rceil")
    assert m == CastModes(tcast.CastMode.ACTUAL, tcast.RoundMode.AWAY, tcast.ScaleMode.TOPBINADE)
    assert hash(m) == hash(CastModes.of(tcast.CastMode.ACTUAL, "away", "topbinade"))


def test_the_engine_protocol_is_runtime_checkable():
    assert isinstance(FakeEngine("x"), tcast.Engine)
    assert not isinstance(object(), tcast.Engine)


def test_engines_in_this_workspace_are_discovered_through_entry_points():
    # The reference engine registers as "ref", the PyTorch engine as "torch"; the Triton
    # skeleton registers nothing yet.
    loaded = tcast.load_engines()
    assert loaded.failures == {}
    assert {"ref", "torch"} <= set(loaded.engines)
    assert "triton" not in loaded.engines


def test_a_torch_tensor_reaches_the_torch_engine():
    x = torch.linspace(-4, 4, 64).reshape(2, 32)
    y = tcast.cast(x, "mxfp8")
    assert isinstance(y, torch.Tensor) and y.dtype == x.dtype and y.shape == x.shape
    r = tcast.cast(x, "mxfp8", castmode="actual")
    assert r.engine == "torch" and isinstance(r.data, torch.Tensor)
    assert torch.equal(tcast.upcast(r), y)
