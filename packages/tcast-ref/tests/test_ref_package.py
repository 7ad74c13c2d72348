"""Packaging of tcast-ref: version, exact pin of the spec, engine registration."""

from importlib.metadata import entry_points, requires, version

import numpy as np

import tcast
import tcast_ref


def test_version_matches_metadata_and_spec():
    assert tcast_ref.__version__ == version("tcast-ref") == tcast.__version__


def test_pins_the_spec_exactly_and_declares_ranges_for_the_rest():
    reqs = requires("tcast-ref") or []
    assert f"tcast-spec=={tcast.__version__}" in reqs
    assert any(r.startswith("numpy>=") for r in reqs)
    assert any(r.replace("_", "-").startswith("ml-dtypes>=") for r in reqs)


def test_registers_the_ref_engine_through_the_entry_point():
    (ep,) = [e for e in entry_points(group="tcast.engines") if e.name == "ref"]
    assert ep.load() is tcast_ref.engine
    assert tcast.engines()["ref"] is tcast_ref.engine


def test_front_door_reaches_the_reference_for_numpy_arrays():
    x = np.array([1.0, 3.0, -448.0, 0.125] * 8, np.float32)
    assert np.array_equal(tcast.cast(x, "mxfp8"), tcast_ref.cast(x, "mxfp8"))
    res = tcast.cast(x, "mxfp8", castmode="actual")
    assert res.engine == "ref"
    assert np.array_equal(tcast.upcast(res), tcast_ref.upcast(res))


def test_the_reference_never_imports_torch():
    import subprocess
    import sys

    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, tcast_ref, numpy as np; "
            "tcast_ref.cast(np.ones(32, np.float32), 'mxfp4'); print('torch' in sys.modules)",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == "False"
