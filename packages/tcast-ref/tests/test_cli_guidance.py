"""The command line guides: what a missing path, a folder of sets, a missing wheel or a missing
device means and what to do, and the help and version texts.

* ``tcast verify`` of a path that does not exist says so; of the ``--out`` of ``golden --core``
  (a folder of sets) verifies each set; it imports neither torch nor Triton to check ``ref``.
* ``--engine all`` ends with the engines verified and those that could not run here, and says
  how to run Triton without a GPU (``TRITON_INTERPRET=1``).
* Without tcast-ref, ``tcast golden`` and ``tcast verify`` name the wheel to install.
* Unknown names are answered with the nearest ones; ``golden --help`` explains every mode;
  ``tcast --version`` lists every installed engine's wheel.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import numpy as np
import pytest

import tcast
from tcast import EngineNotFoundError, cli
from tcast.cli import main
from tcast.engine import LoadedEngines, load_engine
from tcast_ref.conformance import load_engine_for_run, select_datatypes
from tcast_ref.golden import _verify


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    """Two small sets in one folder, as ``tcast golden --core --out`` lays them out."""
    root = tmp_path_factory.mktemp("golden")
    for name in ("mxfp4", "float8_e5m2"):
        assert main(["golden", name, "--out", str(root / name), "--quiet", "--count", "1"]) == 0
    return root


def test_verify_of_a_missing_path_says_no_such_path(tmp_path, capsys):
    assert main(["verify", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "nowhere: no such file or directory" in err and "header.json" not in err


def test_verify_of_a_folder_of_sets_verifies_each(sets, capsys):
    assert main(["verify", str(sets)]) == 0
    out = capsys.readouterr().out
    assert f"{sets / 'mxfp4'}: ref: all" in out and f"{sets / 'float8_e5m2'}: ref: all" in out


def test_actual_results_of_a_folder_of_sets_ask_for_one(sets, capsys):
    assert main(["verify", str(sets), "--actual", str(sets / "mxfp4" / "vectors.txt")]) == 2
    assert "--actual checks one set" in capsys.readouterr().err


def test_verify_of_ref_imports_neither_torch_nor_triton(sets):
    # a fresh interpreter: is torch imported by checking the reference engine?
    code = (
        "import sys; from tcast.cli import main; "
        f"rc = main(['verify', {str(sets / 'mxfp4')!r}, '--quiet']); "
        "print(rc, 'torch' in sys.modules, 'triton' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-3:] == ["0", "False", "False"], out.stdout + out.stderr


class _GpuOnly:
    """An engine named like Triton that takes no array this machine makes."""

    name = "triton"
    priority = 0

    def accepts(self, x):
        return False


def test_engine_all_names_the_engines_verified_and_those_not_run(sets, capsys, monkeypatch):
    loaded = LoadedEngines({"ref": load_engine("ref"), "triton": _GpuOnly()}, {})
    monkeypatch.setattr(tcast, "load_engines", lambda: loaded)
    real = _verify.load_engine
    monkeypatch.setattr(_verify, "load_engine", lambda n: _GpuOnly() if n == "triton" else real(n))
    monkeypatch.setitem(sys.modules, "torch", None)  # no torch: no array the engine takes
    assert main(["verify", str(sets / "mxfp4"), "--engine", "all", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "engines verified: ref; not run on this machine: triton"
    assert "TRITON_INTERPRET=1" in err


def test_golden_and_verify_without_tcast_ref_name_the_wheel(capsys, monkeypatch):
    monkeypatch.setattr(cli, "_command_entry_points", list)  # only tcast-spec installed
    assert main(["golden", "mxfp4", "--out", "x"]) == 2
    assert "pip install tcast-ref" in capsys.readouterr().err
    assert main(["verify", "x"]) == 2
    assert "pip install tcast-ref" in capsys.readouterr().err
    main(["--help"])
    assert "needs tcast-ref" in capsys.readouterr().out


def test_unknown_names_are_answered_with_the_nearest(sets, tmp_path, capsys):
    assert main(["golden", "mxfp44", "--out", str(tmp_path / "g")]) == 2
    assert "did you mean: " in capsys.readouterr().err
    assert main(["verify", str(sets / "mxfp4"), "--engine", "reff"]) == 2
    assert "did you mean: ref?" in capsys.readouterr().err
    with pytest.raises(EngineNotFoundError, match=r"did you mean: ref\?"):
        load_engine_for_run("reff", None)  # tcast conformance --engine reff


def test_conformance_datatypes_match_catalog_names_in_any_case():
    assert select_datatypes(["MXFP4"]) == select_datatypes(["mxfp4"]) == [tcast.mxfp4]


def test_golden_help_explains_every_mode(capsys):
    assert main(["golden", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for meanings in (tcast.ROUND_MODE_MEANINGS, tcast.SCALE_MODE_MEANINGS):
        for mode, text in meanings.items():
            assert f"{mode} {' '.join(text.split())}" in out


def test_version_lists_every_installed_engine_and_its_wheel(capsys):
    assert main(["--version"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"tcast-spec {version('tcast-spec')}"
    assert f"engine ref: tcast-ref {version('tcast-ref')}" in out


def test_a_numpy_cast_by_the_reference_engine_still_works():
    # the guidance above changed no result
    x = np.linspace(-6, 6, 32, dtype=np.float32)
    assert tcast.cast(x, "MXFP4").tobytes() == tcast.cast(x, "mxfp4").tobytes()
