"""tcast-spec installs nothing else and `import tcast` loads no numpy, torch or triton.

Builds the tcast-spec wheel, installs it into a fresh virtual environment with no index
(so a declared dependency could not be satisfied and would fail the install), and imports it
there. Runs under every Python 3.11/3.12 found on the machine.
"""

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "packages" / "tcast-spec"

PROBE = """
import json, sys
import tcast
heavy = sorted(m for m in ("numpy", "torch", "triton", "ml_dtypes") if m in sys.modules)
print(json.dumps({"heavy": heavy, "mxfp4": str(tcast.mxfp4), "code": tcast.mxfp4.code,
                  "version": tcast.__version__, "file": tcast.__file__}))
"""


@pytest.fixture(scope="module")
def spec_wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(SPEC),
        ],
        check=True,
    )
    (wheel,) = out.glob("tcast_spec-*.whl")
    return wheel


def _pythons() -> list[str]:
    """This interpreter plus one of each other supported version found (PATH or pyenv)."""
    candidates = [shutil.which(n) for n in ("python3.11", "python3.12")]
    candidates += sorted(str(p) for p in Path.home().glob(".pyenv/versions/3.1[12]*/bin/python3"))
    found, versions = [sys.executable], {sys.version_info[:2]}
    for exe in filter(None, candidates):
        probe = subprocess.run(
            [exe, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True
        )
        if probe.returncode != 0:
            continue
        ver = tuple(int(v) for v in probe.stdout.split())
        if ver not in versions:
            versions.add(ver)
            found.append(exe)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("python", _pythons())
def test_spec_wheel_installs_alone_and_imports_nothing_heavy(spec_wheel, tmp_path, python):
    env_dir = tmp_path / "env"
    if python == sys.executable:
        venv.create(env_dir, with_pip=True)
    else:
        subprocess.run([python, "-m", "venv", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-index", "--no-cache-dir", str(spec_wheel)],
        check=True,
    )
    listed = subprocess.run(
        [str(py), "-m", "pip", "list", "--format=json"], check=True, capture_output=True, text=True
    )
    names = {d["name"].lower() for d in json.loads(listed.stdout)}
    assert names - {"pip", "setuptools"} == {"tcast-spec"}
    out = subprocess.run(
        [str(py), "-c", PROBE], check=True, capture_output=True, text=True, cwd=tmp_path
    )
    info = json.loads(out.stdout)
    assert info["heavy"] == []
    assert info["mxfp4"] == "mxfp4"
    assert info["code"] == "e2m1f_e8m0_t32"
    assert str(env_dir) in info["file"]  # the installed wheel, not the checkout
    semantics = subprocess.run(
        [
            str(py),
            "-c",
            "import importlib.resources as r; "
            "print(r.files('tcast').joinpath('SEMANTICS.md').read_text()[:20])",
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert semantics.stdout.startswith("# tcast semantics")


def test_import_tcast_in_this_process_loads_no_heavy_module():
    # A fresh interpreter: this test process has numpy and torch loaded by other tests.
    out = subprocess.run([sys.executable, "-c", PROBE], check=True, capture_output=True, text=True)
    assert json.loads(out.stdout)["heavy"] == []


def test_conformance_machinery_imports_no_torch():
    """tcast_ref.conformance (what `tcast conformance` loads) imports torch only in its adapter."""
    probe = (
        "import sys, tcast_ref.conformance as c; "
        "print(sorted(m for m in ('torch', 'triton', 'tcast_torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
