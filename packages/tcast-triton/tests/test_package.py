"""The package installs, matches the spec's version and registers the ``triton`` engine."""

from importlib.metadata import entry_points, requires, version

import tcast
import tcast_triton


def test_version_matches_metadata_and_spec():
    assert tcast_triton.__version__ == version("tcast-triton") == tcast.__version__


def test_pins_the_spec_exactly_and_the_torch_toolkit_by_minor_version():
    reqs = requires("tcast-triton") or []
    assert f"tcast-spec=={tcast.__version__}" in reqs
    # tcast_torch.toolkit is stable within a minor version: any patch release serves
    major, minor = tcast.__version__.split(".")[:2]
    (torch_req,) = [r for r in reqs if r.startswith("tcast-torch")]
    specs = set(torch_req.removeprefix("tcast-torch").replace(" ", "").split(","))
    assert specs == {f">={major}.{minor}", f"<{major}.{int(minor) + 1}"}


def test_registers_the_triton_engine():
    eps = [ep for ep in entry_points(group="tcast.engines") if ep.name == "triton"]
    assert [ep.value for ep in eps] == ["tcast_triton._engine:engine"]
    loaded = tcast.load_engines()
    assert not loaded.failures
    assert loaded.engines["triton"] is tcast_triton.engine
    assert loaded.engines["triton"].priority > loaded.engines["torch"].priority


def test_public_api():
    assert set(tcast_triton.__all__) >= {"cast", "upcast", "engine", "TritonEngine"}
    for name in tcast_triton.__all__:
        assert hasattr(tcast_triton, name)
