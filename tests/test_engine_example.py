"""A third-party engine, installed the way its users would, runs through ``tcast conformance``.

``examples/tcast-engine-example`` is built and installed (offline: no index, no build
isolation) into a fresh virtual environment that sees this environment's packages (a ``.pth``
file adds them) but not the example's source; there ``tcast conformance --engine example
--tier smoke`` must pass as written and fail, with a reproducer, once the example flips one bit
(``TCAST_ENGINE_EXAMPLE_FLIP=1``). The reproducer, run there, shows the flipped bit.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import tcast
from tcast_ref import conformance

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "tcast-engine-example"


def _sh(*args: str, env: dict | None = None, check: bool = True, cwd: Path | None = None):
    done = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
    if check and done.returncode != 0:
        pytest.fail(f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


@pytest.fixture(scope="module")
def example_env(tmp_path_factory) -> Path:
    """The python of a fresh venv holding the example engine (and this venv's packages)."""
    pytest.importorskip("hatchling")  # the example's build backend, used without isolation
    env = tmp_path_factory.mktemp("example-env") / "venv"
    _sh(sys.executable, "-m", "venv", "--without-pip", str(env))
    py = env / "bin" / "python"
    purelib = Path(
        _sh(str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip()
    )
    # this environment's packages (tcast, tcast_ref, numpy, hatchling; editable installs
    # included): addsitedir also runs their .pth files
    parents = [*site.getsitepackages(), sysconfig.get_path("purelib")]
    lines = "".join(f"import site; site.addsitedir({p!r})\n" for p in dict.fromkeys(parents))
    (purelib / "_parent_env.pth").write_text(lines)
    _sh(
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(py),
        "install",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "--no-cache-dir",
        str(EXAMPLE),
    )
    return py


def _conformance(py: Path, tmp: Path, report: str, *args: str, flip: bool = False):
    env = {k: v for k, v in os.environ.items() if k != "TCAST_ENGINE_EXAMPLE_FLIP"}
    if flip:
        env["TCAST_ENGINE_EXAMPLE_FLIP"] = "1"
    done = _sh(
        str(py),
        "-m",
        "tcast",
        "conformance",
        "--engine",
        "example",
        "--tier",
        "smoke",
        "--report",
        str(tmp / report),
        *args,
        env=env,
        check=False,
        cwd=tmp,
    )
    return done, tmp / report


@pytest.mark.slow
def test_example_engine_is_installed_outside_the_checkout(example_env, tmp_path):
    where = _sh(
        str(example_env), "-c", "import tcast_engine_example as m; print(m.__file__)", cwd=tmp_path
    ).stdout
    assert str(EXAMPLE) not in where and str(example_env.parents[1]) in where
    names = _sh(str(example_env), "-c", "import tcast.engine as e; print(e.engine_names())").stdout
    assert "'example'" in names


@pytest.mark.slow
def test_example_engine_passes_the_smoke_tier(example_env, tmp_path):
    done, report = _conformance(example_env, tmp_path, "r.json")
    assert done.returncode == 0, done.stdout + done.stderr
    d = json.loads(report.read_text())
    (e,) = d["engines"]
    assert (e["engine"], e["version"], e["oracle"]) == ("example", "0.1.0", "tcast_ref")
    assert e["result"] == "pass" and e["mismatches"] == 0 and e["cases"] > 1000
    # subtile and codebook datatypes: the kit refuses them for an engine that does not set
    # subtiles_and_codebooks, and the report says unsupported (refusals checked, no failure)
    refused = {c for c in e["datatypes"] if _subtiles_or_codebook(c)}
    assert refused
    # the example sets no `transforms` and no `given_scales`: a datatype the tier casts only
    # with a transform or given scale parts is refused likewise
    smoke = conformance.tier_items("smoke")
    refused |= {
        i.dtype.code for i in smoke if all(c.transform is not None or c.given for c in i.cases)
    }
    wrong = {
        c: v["result"]
        for c, v in e["datatypes"].items()
        if v["result"] != ("unsupported" if c in refused else "pass")
    }
    assert not wrong


def _subtiles_or_codebook(code: str) -> bool:
    dt = tcast.datatype(code)
    return dt.sspec is not None and (dt.sspec.has_subtile or dt.nspec.is_codebook)


@pytest.mark.slow
def test_example_engine_with_one_bit_flipped_fails_with_a_reproducer(example_env, tmp_path):
    done, report = _conformance(example_env, tmp_path, "r.md", "--datatypes", "mxfp*", flip=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "example: reproducer of the first:" in done.stdout
    md = report.read_text()
    assert md.startswith("# tcast conformance report: tier smoke, FAIL")
    # the first reproducer of the report, run in the example's environment, shows the flip
    repro = md.split("```python\n", 1)[1].split("\n```", 1)[0]
    *setup, call = repro.splitlines()
    assert 'engine="example"' in call
    ref_call = call.replace('engine="example"', 'engine="ref"')
    script = "\n".join(
        [
            *setup,
            "import numpy as np",
            f"got = {call}",
            f"want = {ref_call}",
            "g, w = (np.ascontiguousarray(a).view(np.uint8).reshape(-1) for a in (got, want))",
            "print(int((g != w).sum()), int(g[0] ^ w[0]))",
        ]
    )
    env = {**os.environ, "TCAST_ENGINE_EXAMPLE_FLIP": "1"}
    out = _sh(str(example_env), "-c", script, env=env, cwd=tmp_path).stdout.split()
    assert out == ["1", "1"]  # one byte differs, in its lowest bit
