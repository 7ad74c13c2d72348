"""Golden sets are byte-identical under the oldest NumPy and ml_dtypes tcast-ref supports.

tcast-ref declares ``numpy>=1.26`` and ``ml_dtypes>=0.5``; the development pins are NumPy 2.4
and ml_dtypes 0.6. This test installs NumPy 1.26.4 and ml_dtypes 0.5.1 from the package registry
into a fresh virtual environment, installs tcast-spec and tcast-ref from this checkout there,
regenerates every core set and compares the bytes with the committed sets in ``tests/golden``
(``header.json`` included), then verifies the reference engine there against them.
"""

import subprocess
import venv
from pathlib import Path

import pytest

from tcast_ref.golden import CORE

ROOT = Path(__file__).resolve().parents[1]
OLDEST = ["numpy==1.26.4", "ml_dtypes==0.5.1", "tqdm==4.70.1"]


@pytest.mark.slow
def test_oldest_supported_numpy_gives_the_committed_bytes(tmp_path):
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    py = str(env / "bin" / "python")
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *OLDEST], check=True)
    subprocess.run(
        [
            *pip,
            "--no-deps",
            str(ROOT / "packages" / "tcast-spec"),
            str(ROOT / "packages" / "tcast-ref"),
        ],
        check=True,
    )
    ver = subprocess.run(
        [py, "-c", "import numpy, ml_dtypes; print(numpy.__version__, ml_dtypes.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ver.stdout.split() == ["1.26.4", "0.5.1"]
    out = tmp_path / "sets"
    tcast = str(env / "bin" / "tcast")
    subprocess.run([tcast, "golden", "--core", "--out", str(out), "--quiet"], check=True)
    for name in CORE:
        for f in sorted((ROOT / "tests" / "golden" / name).iterdir()):
            assert (out / name / f.name).read_bytes() == f.read_bytes(), f"{name}/{f.name}"
    run = subprocess.run(
        [tcast, "verify", *(str(out / n) for n in CORE), "--engine", "ref", "--quiet"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
