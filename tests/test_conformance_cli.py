"""``tcast conformance``: the command door over the machinery ``test_conformance.py`` uses.

End to end through ``tcast.cli.main`` (and one subprocess through the installed ``tcast``
script): exit status 0/1/2, the summary table, both report formats, ``--datatypes`` globs,
``--jobs 2`` giving the same report as one process, and a deliberately broken engine giving
exit 1 with a reproducer that rebuilds its input bit for bit.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tcast
from tcast.cli import main
from tcast_ref import conformance as conf
from tcast_ref.conformance import _run

# a few datatypes: unscaled and scaled e2m1f (the smoke tier of them is small and fast)
GLOB = "e2m1f*"


def _main(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["conformance", *args])
    out, err = capsys.readouterr()
    return status, out, err


# ------------------------------------------------------------------ bad usage: exit 2
@pytest.mark.parametrize(
    ("args", "named", "valid"),
    [
        (["--engine", "nosuch"], "'nosuch'", "ref"),
        (["--engine", "ref", "--tier", "quick"], "'quick'", "smoke, fast, full"),
        (["--engine", "ref", "--datatypes", "zz*"], "'zz*'", "tcast info --catalog"),
        (["--engine", "ref", "--jobs", "0"], "0", "1 or more"),
        (["--engine", "ref", "--report", "r.txt"], "'r.txt'", ".json"),
        (["--engine", "ref", "--report", "no/such/dir/r.json"], "no/such/dir", "does not exist"),
    ],
    ids=["engine", "tier", "glob", "jobs", "report-suffix", "report-folder"],
)
def test_bad_usage_exits_2_naming_the_value_and_what_is_valid(capsys, args, named, valid):
    status, out, err = _main(capsys, *args)
    assert status == 2
    assert out == ""
    assert err.startswith("tcast conformance: error: ")
    assert named in err and valid in err
    assert "Traceback" not in err


def test_missing_engine_option_is_a_usage_error(capsys):
    status, _, err = _main(capsys, "--tier", "smoke")
    assert status == 2
    assert "--engine" in err


def test_report_path_that_is_a_folder_exits_2_before_running(capsys, tmp_path):
    (tmp_path / "r.json").mkdir()
    status, out, err = _main(capsys, "--engine", "ref", "--report", str(tmp_path / "r.json"))
    assert status == 2 and out == "" and "cannot write there" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_report_into_a_read_only_folder_exits_2_before_running(capsys, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        status, out, err = _main(capsys, "--engine", "ref", "--report", str(locked / "r.json"))
    finally:
        locked.chmod(0o700)
    assert status == 2 and out == "" and "cannot write there" in err


def test_engine_that_fails_to_load_exits_2(capsys, monkeypatch):
    monkeypatch.setattr(_run, "engine_names", lambda: ("ref", "broken-import"))
    monkeypatch.setattr(_run, "load_engine", lambda name: None)
    monkeypatch.setattr(_run, "failure", lambda name: "ImportError: no module named 'x'")
    status, _, err = _main(capsys, "--engine", "broken-import", "--tier", "smoke")
    assert status == 2
    assert "'broken-import' is installed but failed to load: ImportError" in err


# ------------------------------------------------------------------ passing runs: exit 0
def test_smoke_tier_passes_with_a_json_report(capsys, tmp_path):
    report = tmp_path / "r.json"
    status, out, err = _main(
        capsys, "--engine", "ref", "--tier", "smoke", "--datatypes", GLOB, "--report", str(report)
    )
    assert status == 0, out
    assert err == ""  # no progress line off a terminal
    assert out.splitlines()[0] == f"tcast conformance, tier smoke, datatypes {GLOB}"
    d = json.loads(report.read_text())
    assert d["tier"] == "smoke" and d["result"] == "pass" and d["mismatches"] == 0
    assert d["versions"]["tcast"] == tcast.__version__
    assert d["versions"]["numpy"] == np.__version__
    assert {"torch", "triton", "ml_dtypes", "python"} <= set(d["versions"])
    (e,) = d["engines"]
    assert e["engine"] == "ref" and e["oracle"] == "exact" and e["device"] == "cpu (numpy)"
    assert e["version"] == tcast.__version__
    assert e["cases"] == d["cases"] > 0
    codes = set(e["datatypes"])
    assert codes and all(c.startswith("e2m1f") for c in codes)
    assert all(v["result"] == "pass" and v["cases"] > 0 for v in e["datatypes"].values())
    assert e["failures"] == []
    row = next(line for line in out.splitlines() if line.startswith("ref "))
    assert row.split()[-4:] == [str(len(codes)), str(e["cases"]), "0", "pass"]


def test_datatypes_an_engine_refuses_are_reported_unsupported_not_failed():
    """MSFP and codebook datatypes on an engine without them (the reference engine with
    ``subtiles_and_codebooks`` off, as every other engine has it): supports() refuses them,
    the casts raise UnsupportedError, and the report says unsupported, not pass or fail;
    the reference engine itself passes the same item."""
    import tcast_ref

    class WithoutSubtiles(type(tcast_ref.engine)):
        subtiles_and_codebooks = False

    refusing = WithoutSubtiles()
    dt = tcast.datatype("int8_e8m0_t16s2o1")
    item = conf.Item(dt, (conf.Case(dt, tcast.RoundMode.EVEN),))
    for engine, want in ((refusing, "unsupported"), (tcast_ref.engine, "pass")):
        run = conf.run_engine("ref", [item], quiet=True, loaded=(engine, conf.numpy_adapter()))
        (r,) = run.results
        assert r.mismatches == 0 and r.failures == []
        data = conf.Report("smoke", None, [run], {}).engine_data(run)
        assert data["datatypes"][dt.code]["result"] == want


def test_an_engine_variant_runs_by_its_name(capsys, tmp_path):
    report = tmp_path / "r.json"
    status, out, _ = _main(
        capsys, "--engine", "torch:eager", "--tier", "smoke", "--datatypes", GLOB,
        "--report", str(report),
    )  # fmt: skip
    assert status == 0, out
    (e,) = json.loads(report.read_text())["engines"]
    assert e["engine"] == "torch:eager" and e["oracle"] == "tcast_ref"
    assert e["version"] == tcast.__version__ and e["cases"] > 0 and e["failures"] == []
    assert any(line.startswith("torch:eager ") for line in out.splitlines())


def test_an_unknown_variant_exits_2_naming_the_variants(capsys):
    status, _, err = _main(capsys, "--engine", "torch:jit", "--tier", "smoke")
    assert status == 2
    assert "engine 'torch' offers no variant 'jit'" in err
    assert "its variants: compiled, eager" in err


def test_markdown_report_holds_the_same_content(capsys, tmp_path):
    status, _, _ = _main(
        capsys,
        "--engine",
        "ref",
        "--tier",
        "smoke",
        "--datatypes",
        "mxfp4",
        "--report",
        str(tmp_path / "r.md"),
    )
    assert status == 0
    md = (tmp_path / "r.md").read_text()
    assert md.startswith("# tcast conformance report: tier smoke, PASS")
    assert f"| tcast | {tcast.__version__} |" in md
    assert "| `e2m1f_e8m0_t32` |" in md
    assert "None: every case matched bit for bit." in md


def test_datatype_globs_match_codes_and_catalog_names():
    names = [dt.code for dt in conf.select_datatypes(["mxfp8", "*_e8m0_t8d0"])]
    assert names[0] == tcast.mxfp8.code or tcast.mxfp8.code in names
    assert all(n == tcast.mxfp8.code or n.endswith("_e8m0_t8d0") for n in names)
    assert len(conf.select_datatypes(None)) == len(list(tcast.conformance_space()))


def test_jobs_2_gives_the_report_of_one_process(tmp_path):
    """Two spawned workers, through the installed ``tcast`` script: same report, same order."""
    reports = []
    for jobs in ("1", "2"):
        path = tmp_path / f"r{jobs}.json"
        done = subprocess.run(
            [
                str(Path(sys.executable).with_name("tcast")),
                "conformance",
                "--engine",
                "ref",
                "--tier",
                "smoke",
                "--datatypes",
                "e4m3fn*",
                "--jobs",
                jobs,
                "--report",
                str(path),
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        reports.append(json.loads(path.read_text()))
    assert len(reports[0]["engines"][0]["datatypes"]) >= 2  # shards for both workers
    assert reports[0]["engines"] == reports[1]["engines"]
    assert list(reports[1]["engines"][0]["datatypes"]) == list(
        reports[0]["engines"][0]["datatypes"]
    )


# ---------------------------------------------------------- a broken engine: exit 1
@pytest.fixture
def flip_one_bit(monkeypatch, flip_one_bit_engine):
    """``flip-one-bit`` installed as far as ``tcast conformance`` can tell."""
    monkeypatch.setattr(_run, "engine_names", lambda: ("flip-one-bit", "ref"))
    monkeypatch.setattr(
        _run, "load_engine", lambda name: flip_one_bit_engine if name == "flip-one-bit" else None
    )
    return flip_one_bit_engine


def _flip_run(capsys, report: Path) -> tuple[int, str]:
    args = ("--engine", "flip-one-bit", "--tier", "smoke", "--datatypes", "mxfp4")
    status, out, _ = _main(capsys, *args, "--report", str(report))
    return status, out


def test_broken_engine_exits_1_with_a_reproducer(capsys, tmp_path, flip_one_bit):
    report = tmp_path / "r.json"
    status, out = _flip_run(capsys, report)
    assert status == 1
    assert "flip-one-bit: reproducer of the first:" in out
    d = json.loads(report.read_text())
    (e,) = d["engines"]
    assert d["result"] == e["result"] == "fail"
    assert e["mismatches"] == d["mismatches"] > 0
    assert e["datatypes"][tcast.mxfp4.code]["result"] == "fail"
    f = e["failures"][0]
    assert f["datatype"] == tcast.mxfp4.code
    assert f["modes"]["castmode"] == "virtual"
    assert set(f["modes"]) == {
        "castmode",
        "roundmode",
        "scalemode",
        "saturate",
        "transpose_scale",
        "random_bits",
        "transform",
        "given",
    }
    assert "virtual: 1 of " in f["differences"][0]
    # the reproducer rebuilds the input bit for bit and names the engine and the modes
    *setup, call = f["reproducer"].splitlines()
    ns: dict = {}
    exec("\n".join(setup), ns)
    entry = next(x for x in conf.large_battery(tcast.mxfp4) if x.label == f["input"])
    assert ns["x"].dtype == entry.x.dtype and ns["x"].shape == entry.x.shape
    assert (conf.bits_of(ns["x"]) == conf.bits_of(entry.x)).all()
    assert call.startswith(f'tcast.cast(x, "{tcast.mxfp4.code}", castmode="virtual"')
    assert 'engine="flip-one-bit"' in call
    # the Markdown report lists the same failure
    assert _flip_run(capsys, tmp_path / "r.md")[0] == 1
    md = (tmp_path / "r.md").read_text()
    assert "FAIL" in md.splitlines()[0] and f["reproducer"] in md


# ------------------------------------------------------------------ the progress line
class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_line_on_a_terminal_only_and_not_when_quiet():
    tty = _Tty()
    bar = _run._Progress("tcast conformance: ref", 4, quiet=False, stream=tty)
    bar.update(0)
    bar.update(2)
    bar.close()
    assert "tcast conformance: ref: 2/4 datatypes (50%), 2 mismatches" in tty.getvalue()
    for stream, quiet in ((_Tty(), True), (io.StringIO(), False)):
        bar = _run._Progress("x", 4, quiet=quiet, stream=stream)
        bar.update(1)
        bar.close()
        assert stream.getvalue() == ""


def test_tiers_grow_and_the_smoke_tier_covers_every_datatype_kind():
    smoke, fast = conf.tier_items("smoke"), conf.tier_items("fast")
    assert 0 < len(smoke) < len(fast) == len(list(tcast.conformance_space()))
    assert sum(len(i.cases) for i in conf.tier_items("full", conf.select_datatypes(["mxfp4"]))) > 5


def test_without_tcast_ref_the_command_exits_2_saying_what_to_install(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tcast_ref", None)  # import tcast_ref raises ImportError
    status, out, err = _main(capsys, "--engine", "ref")
    assert status == 2 and out == ""
    assert "needs the reference engine, tcast-ref (pip install tcast-ref)" in err
