"""Packaging of tcast-torch: version, exact pin of the spec, engine registration, imports."""

import ast
import pathlib
import subprocess
import sys
from importlib.metadata import entry_points, requires, version

import numpy as np
import torch

import tcast
import tcast_ref
import tcast_torch


def test_version_matches_metadata_and_spec():
    assert tcast_torch.__version__ == version("tcast-torch") == tcast.__version__


def test_pins_the_spec_exactly():
    reqs = requires("tcast-torch") or []
    assert f"tcast-spec=={tcast.__version__}" in reqs
    assert any(r.startswith("torch") and ">=" in r for r in reqs)


def test_registers_the_torch_engine_through_the_entry_point():
    (ep,) = [e for e in entry_points(group="tcast.engines") if e.name == "torch"]
    assert ep.load() is tcast_torch.engine
    assert tcast.engines()["torch"] is tcast_torch.engine
    assert isinstance(tcast_torch.engine, tcast.Engine)


def test_front_door_reaches_the_torch_engine_for_tensors():
    x = torch.tensor([1.0, 3.0, -448.0, 0.125] * 8)
    got = tcast.cast(x, "mxfp8")
    assert isinstance(got, torch.Tensor)
    want = tcast_ref.cast(x.numpy(), "mxfp8")
    assert np.array_equal(got.numpy().view(np.uint32), want.view(np.uint32))
    res = tcast.cast(x, "mxfp8", castmode="actual")
    assert res.engine == "torch" and isinstance(res.data, torch.Tensor)
    assert torch.equal(tcast.upcast(res).view(torch.int32), got.view(torch.int32))


def test_the_engine_accepts_tensors_only_and_supports_every_combination():
    eng = tcast_torch.engine
    assert eng.accepts(torch.zeros(2)) and not eng.accepts(np.zeros(2, np.float32))
    for dt in tcast.combinations():
        assert eng.supports(dt, tcast.CastModes.of("compress", "stochastic", "ceil"))


def test_the_engine_imports_neither_numpy_nor_the_reference():
    code = (
        "import sys, torch, tcast_torch; "
        "tcast_torch.cast(torch.ones(2, 32), 'mxfp4', castmode='compress'); "
        "tcast_torch.cast(torch.ones(2, 32), 'nvfp4', roundmode='stochastic', seed=3); "
        "print(sorted({'tcast_ref', 'ml_dtypes'} & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
    # torch imports numpy itself; no module of tcast_torch imports it (or the oracles)
    root = pathlib.Path(tcast_torch.__file__).parent
    for f in root.glob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            bad = [m for m in names if m.split(".")[0] in ("numpy", "tcast_ref", "ml_dtypes")]
            assert not bad, f"{f.name} imports {bad}"
