"""The skeleton installs, matches the spec's version and registers no engine yet."""

from importlib.metadata import entry_points, requires, version

import tcast
import tcast_triton


def test_version_matches_metadata_and_spec():
    assert tcast_triton.__version__ == version("tcast-triton") == tcast.__version__


def test_pins_the_spec_exactly():
    assert f"tcast-spec=={tcast.__version__}" in (requires("tcast-triton") or [])


def test_registers_no_engine_yet():
    eps = entry_points(group="tcast.engines")
    assert all(not ep.value.startswith("tcast_triton") for ep in eps)
