"""tcast.cast / tcast.upcast dispatch, engine discovery through entry points, input errors."""

import subprocess
import sys
import textwrap
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

import tcast
import tcast.engine as engine_mod
from tcast import CastModes, CastResult, EngineNotFoundError, SpecError, UnsupportedError
from tcast.engine import engine_variants, failure, load_engine
from tcast.kit import make_request


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

    def request(self, x, dtype, modes, seed, rbits):
        return make_request(dtype, modes, seed, rbits, (len(x),), "float32")

    def cast(self, x, request):
        self.calls.append((request.dtype.name, request))
        return ("cast-by", self.name)

    def upcast(self, result):
        return ("upcast-by", self.name)


@dataclass
class FakeEntryPoint:
    name: str
    obj: object
    value: str = "fake:engine"
    loads: list = field(default_factory=list)

    def load(self):
        self.loads.append(1)
        if isinstance(self.obj, Exception):
            raise self.obj
        return self.obj


@pytest.fixture
def installed(monkeypatch):
    """Replace the installed engines with fakes; ``arrays`` maps engine names to modules."""
    reads = []

    def install(*eps, arrays=None):
        groups = {
            tcast.ENTRY_POINT_GROUP: list(eps),
            tcast.ARRAYS_GROUP: [FakeEntryPoint(k, None, v) for k, v in (arrays or {}).items()],
        }

        def entry_points(group):
            reads.append(group)
            return groups[group]

        monkeypatch.setattr(engine_mod, "entry_points", entry_points)
        tcast.refresh_engines()
        return reads

    yield install
    monkeypatch.undo()
    tcast.refresh_engines()


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
    installed(
        FakeEntryPoint("low", low), FakeEntryPoint("high", high), FakeEntryPoint("picky", picky)
    )
    assert tcast.cast([1.0], "mxfp8") == ("cast-by", "high")
    assert tcast.cast([1.0], "mxfp4") == ("cast-by", "picky")
    name, req = high.calls[0]
    assert name == "mxfp8"
    assert req.roundmode is tcast.RoundMode.EVEN and req.scalemode is tcast.ScaleMode.FLOOR
    assert req.castmode is tcast.CastMode.VIRTUAL and req.saturate is True
    assert req.shape == (1,) and req.rules is tcast.kit.cast_rules(tcast.mxfp8)


def test_an_engine_refusing_the_array_as_it_is_gives_way_to_one_that_takes_it(installed):
    """A high-priority engine whose ``refusal`` refuses x (the Triton engine and a DTensor)
    is passed over for a lower one; if every one refuses, the best one is asked (and says
    why)."""
    choosy, plain = FakeEngine("choosy", 9), FakeEngine("plain", 1)
    choosy.refusal = lambda x: "a list of two" if len(x) == 2 else None
    installed(FakeEntryPoint("choosy", choosy), FakeEntryPoint("plain", plain))
    assert tcast.cast([1.0], "mxfp8") == ("cast-by", "choosy")
    assert tcast.cast([1.0, 2.0], "mxfp8") == ("cast-by", "plain")
    plain.refusal = lambda x: "no lists of two either" if len(x) == 2 else None
    assert tcast.cast([1.0, 2.0], "mxfp8") == ("cast-by", "choosy")


def test_an_entry_point_may_load_a_factory(installed):
    installed(FakeEntryPoint("made", lambda: FakeEngine("made")))
    assert tcast.cast([1.0], "mxfp8") == ("cast-by", "made")
    assert set(tcast.engines()) == {"made"}


def test_engine_by_name_bypasses_priority(installed):
    installed(FakeEntryPoint("a", FakeEngine("a", 1)), FakeEntryPoint("b", FakeEngine("b", 2)))
    assert tcast.cast([1.0], "mxfp8", engine="a") == ("cast-by", "a")


def test_a_variant_is_reached_by_its_name_only(installed):
    base = FakeEngine("made", 1)
    fast = FakeEngine("made:fast", 9)
    base.variants = {"fast": fast}
    installed(FakeEntryPoint("made", base))
    assert engine_variants(base) == {"fast": fast}
    assert engine_variants(fast) == {}
    assert load_engine("made:fast") is fast
    assert tcast.cast([1.0], "mxfp8") == ("cast-by", "made")  # never picked on its own
    assert tcast.cast([1.0], "mxfp8", engine="made:fast") == ("cast-by", "made:fast")
    assert set(tcast.engines()) == {"made"}


def test_an_unknown_variant_names_the_variants(installed):
    base = FakeEngine("made")
    base.variants = {"fast": FakeEngine("made:fast"), "slow": FakeEngine("made:slow")}
    installed(FakeEntryPoint("made", base))
    # before anything loaded the engine: failure() loads it to see what it offers
    assert failure("made:odd") == "engine 'made' offers no variant 'odd'; its variants: fast, slow"
    assert load_engine("made:odd") is None
    assert failure("made:fast") is None
    with pytest.raises(EngineNotFoundError, match="no variant 'odd'; its variants: fast, slow"):
        tcast.cast([1.0], "mxfp8", engine="made:odd")
    with pytest.raises(EngineNotFoundError, match="'gone:fast' is not installed; installed: made"):
        tcast.cast([1.0], "mxfp8", engine="gone:fast")


def test_an_engine_without_variants_has_none(installed):
    installed(FakeEntryPoint("a", FakeEngine("a")))
    assert load_engine("a:x") is None
    assert failure("a:x") == "engine 'a' offers no variant 'x'; its variants: none"


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
    installed(
        FakeEntryPoint("ok", FakeEngine("ok")),
        FakeEntryPoint("broken", ImportError("no triton")),
        FakeEntryPoint("wrong", object()),
    )
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
    res = CastResult(
        data=[0],
        scale=None,
        zero=None,
        tenscale=None,
        mask=None,
        meta=None,
        dtype=tcast.mxfp8,
        shape=(1,),
        castmode=tcast.CastMode.ACTUAL,
        engine="a",
    )
    assert tcast.upcast(res) == ("upcast-by", "a")
    res.engine = ""
    assert tcast.upcast(res) == ("upcast-by", "b")
    with pytest.raises(SpecError, match="CastResult"):
        tcast.upcast([0])


def test_upcast_without_a_capable_engine_names_the_wheel(installed):
    installed()
    res = CastResult(
        data=np.zeros(1, np.uint8),
        scale=None,
        zero=None,
        tenscale=None,
        mask=None,
        meta=None,
        dtype=tcast.mxfp8,
        shape=(1,),
        castmode=tcast.CastMode.ACTUAL,
        engine="ref",
    )
    with pytest.raises(EngineNotFoundError, match="tcast-ref"):
        tcast.upcast(res)


def test_cast_modes_accept_strings_enums_and_aliases():
    m = CastModes.of("actual", "nearest", "rceil")
    assert m == CastModes(tcast.CastMode.ACTUAL, tcast.RoundMode.AWAY, tcast.ScaleMode.TOPBINADE)
    assert hash(m) == hash(CastModes.of(tcast.CastMode.ACTUAL, "away", "topbinade"))
    # built directly from strings, the modes hold the enum members (engines compare by
    # identity: a "virtual" str would read as another cast mode)
    d = CastModes(castmode="virtual", roundmode="nearest", scale_layout="plain")
    assert d.castmode is tcast.CastMode.VIRTUAL and d.virtual_mode
    assert d.roundmode is tcast.RoundMode.AWAY and d.scale_layout is tcast.ScaleLayout.PLAIN
    with pytest.raises(tcast.SpecError, match="'bogus'"):
        CastModes(castmode="bogus")


def test_the_engine_protocol_is_runtime_checkable():
    assert isinstance(FakeEngine("x"), tcast.Engine)
    assert not isinstance(object(), tcast.Engine)


def test_engines_in_this_workspace_are_discovered_through_entry_points():
    # The reference engine registers as "ref", the PyTorch engine as "torch", the Triton
    # engine as "triton".
    loaded = tcast.load_engines()
    assert loaded.failures == {}
    assert {"ref", "torch", "triton"} <= set(loaded.engines)


def test_a_torch_tensor_reaches_the_torch_engine():
    x = torch.linspace(-4, 4, 64).reshape(2, 32)
    y = tcast.cast(x, "mxfp8")
    assert isinstance(y, torch.Tensor) and y.dtype == x.dtype and y.shape == x.shape
    r = tcast.cast(x, "mxfp8", castmode="actual")
    assert r.engine == "torch" and isinstance(r.data, torch.Tensor)
    assert torch.equal(tcast.upcast(r), y)


# ----------------------------------------------------------------- discovery and lazy loading
def test_discovery_reads_the_entry_points_once_per_process(installed):
    reads = installed(FakeEntryPoint("a", FakeEngine("a")))
    for _ in range(3):
        tcast.cast([1.0], "mxfp8")
    tcast.load_engines()
    assert sorted(reads) == sorted([tcast.ENTRY_POINT_GROUP, tcast.ARRAYS_GROUP])
    tcast.refresh_engines()
    tcast.cast([1.0], "mxfp8")
    assert len(reads) == 4  # refreshed: read again


def test_only_the_engines_for_the_arrays_library_are_loaded(installed):
    """An engine registered for numpy or torch arrays is not imported to cast a list; an
    engine that names no library is (it might take anything)."""
    np_ep = FakeEntryPoint("np", ImportError("numpy engine imported"))
    torch_ep = FakeEntryPoint("tor", ImportError("torch engine imported"))
    any_ep = FakeEntryPoint("any", FakeEngine("any"))
    installed(np_ep, torch_ep, any_ep, arrays={"np": "numpy", "tor": "torch"})
    assert tcast.cast([1.0], "mxfp8") == ("cast-by", "any")
    assert np_ep.loads == [] and torch_ep.loads == [] and any_ep.loads == [1]
    tcast.cast([2.0], "mxfp8")
    assert any_ep.loads == [1]  # loaded once
    loaded = tcast.load_engines()  # loading everything on request still reports failures
    assert "numpy engine imported" in loaded.failures["np"]


def test_casting_a_numpy_array_never_imports_torch():
    """In a fresh process with tcast-torch installed, a NumPy cast imports only tcast_ref."""
    code = textwrap.dedent("""
        import sys
        import numpy as np
        import tcast
        x = np.linspace(-4, 4, 512, dtype=np.float32).reshape(8, 64)
        r = tcast.cast(x, "mxfp4", castmode="actual")
        y = tcast.upcast(r)
        assert r.engine == "ref" and y.shape == x.shape
        bad = [m for m in ("torch", "tcast_torch", "triton") if m in sys.modules]
        assert not bad, bad
        assert "tcast_ref" in sys.modules
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_the_installed_engines_declare_their_array_library():
    from importlib.metadata import entry_points

    arrays = {ep.name: ep.value for ep in entry_points(group=tcast.ARRAYS_GROUP)}
    assert arrays.get("ref") == "numpy" and arrays.get("torch") == "torch"


@pytest.mark.parametrize("seed", [np.int64(7), np.uint64(7), 7])
def test_every_engine_accepts_any_integer_seed(seed):
    x = np.linspace(-4, 4, 64, dtype=np.float32).reshape(2, 32)
    a = tcast.cast(x, "mxfp8", roundmode="stochastic", seed=seed)
    b = tcast.cast(torch.from_numpy(x), "mxfp8", roundmode="stochastic", seed=seed)
    assert np.array_equal(a.view(np.uint32), b.numpy().view(np.uint32))


@pytest.mark.parametrize(
    "seed", [True, -1, 1 << 64, 1.0, "7", np.float32(7), np.array(7), torch.tensor(7)]
)
def test_every_engine_refuses_the_same_seeds(seed):
    x = np.zeros((2, 32), np.float32)
    for arr in (x, torch.from_numpy(x)):
        with pytest.raises(SpecError, match="seed"):
            tcast.cast(arr, "mxfp8", roundmode="stochastic", seed=seed)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: np.zeros(4, np.float64), "float64"),
        (lambda: np.zeros(4, np.int32), "int32"),
        (lambda: torch.zeros(4, dtype=torch.float64), "float64"),
        (lambda: torch.zeros(4, dtype=torch.int8), "int8"),
    ],
)
def test_a_rejected_input_dtype_is_named(make, name):
    with pytest.raises(UnsupportedError, match=rf"of dtype {name}:"):
        tcast.cast(make(), "mxfp8")


def test_an_engine_refuses_a_request_made_for_another_array():
    import tcast_ref

    x = np.zeros((2, 32), np.float32)
    dt, modes, _ = tcast.kit.normalize_args("mxfp8")
    req = tcast_ref.engine.request(x, dt, modes, None, None)
    with pytest.raises(SpecError, match="shape"):
        tcast_ref.engine.cast(np.zeros((4, 32), np.float32), req)
    with pytest.raises(SpecError, match="CastRequest"):
        tcast_ref.engine.cast(x, "mxfp8")


class _UserArray(np.ndarray):
    """An ndarray subclass defined outside NumPy (as user code or another library does)."""


class _UserTensor(torch.Tensor):
    """A tensor subclass defined outside torch."""


def test_array_subclasses_from_other_packages_reach_their_library_engine():
    x = np.linspace(-4, 4, 64, dtype=np.float32).reshape(2, 32)
    want = tcast.cast(x, "mxfp8").view(np.uint32)
    got = tcast.cast(x.view(_UserArray), "mxfp8")
    assert np.array_equal(np.asarray(got).view(np.uint32), want)
    t = torch.from_numpy(x).as_subclass(_UserTensor)
    r = tcast.cast(t, "mxfp8", castmode="actual")
    assert r.engine == "torch"


def test_unscaled_results_do_not_claim_transposed_scales():
    x = np.zeros((2, 32), np.float32)
    for arr in (x, torch.from_numpy(x)):
        assert (
            tcast.cast(arr, "e4m3fn", castmode="actual", transpose_scale=True).transpose_scale
            is False
        )
        assert (
            tcast.cast(arr, "mxfp8_2d", castmode="actual", transpose_scale=True).transpose_scale
            is True
        )


def test_a_tampered_compress_mask_is_a_spec_error_in_every_engine():
    x = np.linspace(-4, 4, 128, dtype=np.float32).reshape(2, 64)
    for arr in (x, torch.from_numpy(x)):
        r = tcast.cast(arr, "e2m1f_e8m0_t32n2m4", castmode="compress")
        mask = r.mask.copy() if isinstance(r.mask, np.ndarray) else r.mask.clone()
        mask[0] = 0xFF  # keeps more elements than 2 of every 4
        r.mask = mask
        with pytest.raises(SpecError, match="keeps"):
            tcast.upcast(r)


@dataclass
class _GivenEngine(FakeEngine):
    given_scales: bool = True
    refuse_given: str | None = None

    def given_refusal(self, x):
        return self.refuse_given


def test_given_parts_go_to_an_engine_that_takes_them_for_this_array(installed):
    """select_engine(given=True): engines without given_scales, and those whose
    given_refusal names x, give way; when every taker refuses, the best one says why."""
    plain = FakeEngine("plain", 9)  # no given_scales
    fast = _GivenEngine("fast", 5, refuse_given="fast takes no given parts of such arrays")
    slow = _GivenEngine("slow", 1)
    installed(
        FakeEntryPoint("plain", plain), FakeEntryPoint("fast", fast), FakeEntryPoint("slow", slow)
    )
    dt, modes = tcast.mxfp8, CastModes()
    assert tcast.select_engine([1.0], dt, modes).name == "plain"
    assert tcast.select_engine([1.0], dt, modes, given=True).name == "slow"
    fast.refuse_given = None
    assert tcast.select_engine([1.0], dt, modes, given=True).name == "fast"
    fast.refuse_given = slow.refuse_given = "no given parts here"
    with pytest.raises(UnsupportedError, match="no given parts here"):
        tcast.select_engine([1.0], dt, modes, given=True)
