"""Tests of the ``tcast`` command line, docs/names.md and docs/catalog.md."""

from __future__ import annotations

import argparse
import importlib.util
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import tcast
from tcast import cli
from tcast.exact import decode

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = cli.main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


_ROW = re.compile(r"^\s+(0x[0-9A-F]+)  +(\S+)  +(.*?)(?:  \[(.*)\])?$")


def table_rows(out: str) -> list[tuple[str, str, str, str]]:
    """The rows of the code table: (hex, bits, value, note)."""
    rows = []
    for line in out.splitlines():
        if m := _ROW.match(line):
            rows.append((m[1], m[2], m[3], m[4] or ""))
    return rows


# ------------------------------------------------------------------ tcast info
def test_e2m1f_table_lists_exactly_the_16_values(capsys):
    rc, out, err = run_main(capsys, "info", "e2m1f")
    assert rc == 0 and err == ""
    rows = table_rows(out)
    expected = [
        "0", "0.5", "1", "1.5", "2", "3", "4", "6",
        "-0", "-0.5", "-1", "-1.5", "-2", "-3", "-4", "-6",
    ]  # fmt: skip
    assert [r[0] for r in rows] == [f"0x{c:X}" for c in range(16)]
    assert [r[2] for r in rows] == expected
    assert rows[5][1] == "0|10|1"  # sign|exponent|mantissa of 3.0
    assert "layout:             S EE M " in out


def test_e4m3fn_max_448_and_nan_at_7f_ff(capsys):
    rc, out, _ = run_main(capsys, "info", "e4m3fn")
    assert rc == 0
    assert re.search(r"^\s+maxfloat:\s+448$", out, re.M)
    assert re.search(r"^\s+nan_codes:\s+0x7F, 0xFF$", out, re.M)
    assert re.search(r"^\s+inf_codes:\s+none$", out, re.M)
    rows = {r[0]: r for r in table_rows(out)}
    assert len(rows) == 256
    assert rows["0x7F"][2] == "NaN" and rows["0xFF"][2] == "-NaN"
    assert rows["0x7E"][2] == "448" and rows["0xFE"][2] == "-448"
    assert rows["0x80"][2] == "-0"
    assert rows["0x7E"][1] == "0|1111|110"
    assert all(r[2] not in ("NaN", "-NaN") for k, r in rows.items() if k not in ("0x7F", "0xFF"))


def test_number_fields_for_several_codes(capsys):
    rc, out, _ = run_main(capsys, "info", "e8m0")
    assert rc == 0
    assert out.startswith("number: e8m0\n")
    assert re.search(r"^\s+kind:\s+exponent", out, re.M)
    assert re.search(r"^\s+bias:\s+127$", out, re.M)
    assert re.search(r"^\s+nan_codes:\s+0xFF$", out, re.M)
    rows = table_rows(out)
    assert rows[0][2] == "5.877471754111438e-39 (= 2^-127)" and rows[0][3] == "min"
    assert rows[127][2] == "1" and rows[255][2] == "NaN"
    assert rows[254][2] == "1.7014118346046923e+38 (= 2^127)" and rows[254][3] == "max"

    rc, out, _ = run_main(capsys, "info", "int8")
    rows = table_rows(out)
    assert rc == 0 and len(rows) == 256
    assert rows[0x80][2] == "-128" and rows[0x80][3] == "never produced by encode"
    assert re.search(r"^\s+minint:\s+-127$", out, re.M)

    rc, out, _ = run_main(capsys, "info", "float8_e4m3fnuz")
    assert rc == 0 and "code:        e4m3b8fnuz" in out
    assert re.search(r"^\s+bias:\s+8$", out, re.M)
    assert re.search(r"^\s+nan_codes:\s+0x80$", out, re.M)

    rc, out, _ = run_main(capsys, "info", "e4m3fnuz")
    assert rc == 0 and "bias 7" in out and "e4m3b8fnuz" in out

    rc, out, _ = run_main(capsys, "info", "binary8p3")
    assert rc == 0
    assert re.search(r"^\s+inf_codes:\s+\+Inf 0x7F, -Inf 0xFF$", out, re.M)
    assert re.search(r"^\s+nan_codes:\s+0x80$", out, re.M)
    assert re.search(r"^\s+bias:\s+16$", out, re.M)

    rc, out, _ = run_main(capsys, "info", "float32")
    assert rc == 0 and not table_rows(out)  # no table above 8 bits
    assert "0x7F800001..0x7FFFFFFF (8388607 codes)" in out
    assert "+Inf 0x7F800000, -Inf 0xFF800000" in out


@pytest.mark.parametrize("code", ["e4m3fn", "e5m2", "e4m3", "e3m4", "e2m1fn", "e3m0fn", "e5m2uz"])
def test_nan_code_ranges_match_decode(code):
    spec = tcast.number(code)
    listed = {c for lo, hi in cli.nan_code_ranges(spec) for c in range(lo, hi + 1)}
    decoded = {c for c in range(1 << spec.bits) if math.isnan(decode(c, spec))}
    assert listed == decoded


def test_every_8bit_catalog_table_matches_decode(capsys):
    for name in cli.primary_names():
        dt = tcast.CATALOG[name]
        if dt.nspec.bits > 8:
            continue
        rc, out, _ = run_main(capsys, "info", name)
        assert rc == 0
        rows = table_rows(out)
        assert len(rows) == 1 << dt.nspec.bits, name
        for code, row in enumerate(rows):
            assert int(row[0], 16) == code
            assert row[1].replace("|", "") == f"{code:0{dt.nspec.bits}b}"
            assert row[2] == cli.format_value(decode(code, dt.nspec))


def test_mxfp4_names_element_scale_and_tile(capsys):
    rc, out, _ = run_main(capsys, "info", "mxfp4")
    assert rc == 0
    assert out.startswith("datatype:    mxfp4\n")
    assert "code:        e2m1f_e8m0_t32" in out
    assert "description: OCP MXFP4 (E2M1), e8m0 scale per 32" in out
    assert "aliases:     mxfp4e2" in out
    assert re.search(r"^element: e2m1f \(", out, re.M)
    assert re.search(r"^  scale number: e8m0 \(", out, re.M)
    assert re.search(r"^  tiles: 1-D: 32 along dim -1$", out, re.M)
    assert re.search(r"^  tensor scale: none$", out, re.M)
    assert len(table_rows(out)) == 16  # the element table; the e8m0 scale gets a summary


def test_nvfp4_tensor_scale_float32(capsys):
    rc, out, _ = run_main(capsys, "info", "nvfp4")
    assert rc == 0
    assert re.search(r"^  scale number: e4m3fn \(", out, re.M)
    assert re.search(r"^  tensor scale: float32 \(", out, re.M)
    assert re.search(r"^  tiles: 1-D: 16 along dim -1$", out, re.M)
    assert "zero point" not in out


def test_uint8_bi_zero_point_int8(capsys):
    rc, out, _ = run_main(capsys, "info", "uint8_bi")
    assert rc == 0
    assert re.search(r"^  scale number: bfloat16 \(", out, re.M)
    assert re.search(r"^  zero point: int8 \(", out, re.M)
    assert "tensor scale:" not in out
    assert "tiles: none: one scale for the whole tensor" in out


def test_code_pair_scale_code_and_2d_sparse(capsys):
    rc, out, _ = run_main(capsys, "info", "e2m1f_e8m0_t32")
    assert rc == 0 and "catalog names: mxfp4" in out

    rc, out, _ = run_main(capsys, "info", "e8m0_t32")
    assert rc == 0 and out.startswith("scale: e8m0_t32\n")

    rc, out, _ = run_main(capsys, "info", "mxfp8_2d")
    assert rc == 0 and "tiles: 2-D: 32 along dim -2 x 32 along dim -1" in out

    rc, out, _ = run_main(capsys, "info", "int8_e8m0_t32n2m4d0")
    assert rc == 0
    assert "tiles: 1-D: 32 (keep 2 of 4) along dim 0" in out
    assert "keep the 2 largest of every 4" in out

    rc, out, _ = run_main(capsys, "info", "mxint8")
    assert rc == 0 and "fixed point with 6 fraction bits" in out and "127/64" in out

    rc, out, _ = run_main(capsys, "info", "int8_fc")
    assert rc == 0 and "tiles: 1-D: channel (whole dim -1)" in out


def test_catalog_lists_every_primary_name(capsys):
    rc, out, err = run_main(capsys, "info", "--catalog")
    assert rc == 0 and err == ""
    lines = out.splitlines()
    first = [line.split()[0] for line in lines if line.startswith("  ")]
    primaries = [n for n in tcast.CATALOG if n not in tcast.ALIASES]
    assert first == primaries + list(tcast.PREVIEW_CATALOG) + list(tcast.NOT_YET_SUPPORTED)
    mxfp4 = next(line for line in lines if line.split()[0] == "mxfp4")
    assert mxfp4.split()[1] == "e2m1f_e8m0_t32" and "mxfp4e2" in mxfp4
    mx9 = next(line for line in lines if line.split()[0] == "mx9")
    assert mx9.split()[1] == "int8_e8m0_t16s2o1"


def test_output_is_deterministic(capsys):
    outs = {run_main(capsys, "info", "--catalog")[1] for _ in range(2)}
    outs |= {run_main(capsys, "info", "--catalog")[1]}
    assert len(outs) == 1


@pytest.mark.parametrize(
    "token",
    ["e4m3fnx", "mxfp5", "e2m1f_e8m0_t33", "float8_e4m3fnux", "uint8_t32", "int9x"],
)
def test_bad_code_returns_2_naming_the_token(capsys, token):
    rc, out, err = run_main(capsys, "info", token)
    assert rc == 2
    assert out == ""
    assert token in err and "error" in err


def test_usage_errors(capsys):
    assert run_main(capsys, "info")[0] == 2
    assert run_main(capsys)[0] == 2
    assert run_main(capsys, "info", "--catalog", "mxfp4")[0] == 2
    rc, out, _ = run_main(capsys, "--version")
    assert rc == 0 and tcast.__version__ in out


def test_suggests_close_names(capsys):
    _, _, err = run_main(capsys, "info", "mxfp44")
    assert "did you mean: mxfp4" in err


def test_format_value():
    assert cli.format_value(-0.0) == "-0"
    assert cli.format_value(float("inf")) == "Inf"
    assert cli.format_value(-float("inf")) == "-Inf"
    assert cli.format_value(float("nan")) == "NaN"
    assert cli.format_value(2.0**-127) == "5.877471754111438e-39 (= 2^-127)"
    assert cli.format_value(tcast.number("float32").maxfloat) == (
        "3.4028234663852886e+38 (= 16777215*2^104)"
    )
    assert cli.format_value(-3 * 2.0**-140).endswith("(= -3*2^-140)")
    assert cli.format_value(0.001953125) == "0.001953125"


# ---------------------------------------------------------------- other ways in
def test_python_dash_m(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "tcast.cli", "info", "mxfp4"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "code:        e2m1f_e8m0_t32" in proc.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "tcast.cli", "info", "e9m9zz"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert bad.returncode == 2 and "e9m9zz" in bad.stderr and bad.stdout == ""


def test_installed_console_script(tmp_path, capsys):
    script = shutil.which("tcast", path=str(Path(sys.executable).parent))
    assert script is not None, "the tcast console script is not installed beside python"
    proc = subprocess.run(
        [script, "info", "--catalog"], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == run_main(capsys, "info", "--catalog")[1]


# ------------------------------------------------------------------- plugins
class FakeEntryPoint:
    def __init__(self, name: str, obj: object) -> None:
        self.name = name
        self._obj = obj

    def load(self) -> object:
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


def test_entry_point_command_is_discovered(capsys, monkeypatch):
    seen: list[argparse.Namespace] = []

    def handler(args: argparse.Namespace) -> int:
        seen.append(args)
        print(f"hello {args.who}")
        return 7

    def register(subparsers) -> None:
        p = subparsers.add_parser("hello", help="say hello")
        p.add_argument("who")
        p.set_defaults(func=handler)

    eps = [FakeEntryPoint("hello", register), FakeEntryPoint("broken", ImportError("nope"))]
    monkeypatch.setattr(cli, "_command_entry_points", lambda: eps)
    rc, out, err = run_main(capsys, "hello", "world")
    assert rc == 7 and out == "hello world\n"
    assert seen[0].who == "world"
    assert "'broken' skipped" in err and "ImportError: nope" in err
    # the built-in command still works next to plugins
    rc, out, _ = run_main(capsys, "info", "e2m1f")
    assert rc == 0 and len(table_rows(out)) == 16


def test_real_entry_point_lookup_uses_the_group(monkeypatch):
    calls = []

    def fake_entry_points(*, group):
        calls.append(group)
        return []

    monkeypatch.setattr("importlib.metadata.entry_points", fake_entry_points)
    assert cli._command_entry_points() == []
    assert calls == [cli.COMMAND_GROUP] == ["tcast.commands"]


# ---------------------------------------------------------------------- docs
def load_generator() -> ModuleType:
    path = DOCS / "gen_catalog.py"
    if not path.exists():
        pytest.skip("docs/ is not beside this checkout")
    spec = importlib.util.spec_from_file_location("tcast_docs_gen_catalog", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_catalog_md_is_up_to_date():
    gen = load_generator()
    text = (DOCS / "catalog.md").read_text(encoding="utf-8")
    assert gen.render() == text, (
        "docs/catalog.md is stale: run .venv/bin/python docs/gen_catalog.py"
    )
    for name in cli.primary_names():
        assert f"| `{name}` |" in text


def test_v2_formats_codebook_picture_is_up_to_date():
    path = DOCS / "gen_codebook_picture.py"
    if not path.exists():
        pytest.skip("docs/ is not beside this checkout")
    spec = importlib.util.spec_from_file_location("tcast_docs_gen_codebook_picture", path)
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    page = gen.PAGE.read_text(encoding="utf-8")
    assert gen.update(page, gen.render()) == page, (
        "docs/v2-formats.md is stale: run .venv/bin/python docs/gen_codebook_picture.py"
    )


_STYLE_COLUMN = {"ieee": "", "fn": "fn", "fnuz": "fnuz", "uz": "uz", "f": "f"}


def names_rows() -> list[list[str]]:
    path = DOCS / "names.md"
    if not path.exists():
        pytest.skip("docs/ is not beside this checkout")
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def test_names_md_every_row_parses_as_written():
    rows = [r for r in names_rows() if len(r) == 7]
    assert len(rows) > 40
    for spelling, example, code, bits, bias, style, _meaning in rows:
        ex = example.strip("`")
        spec = tcast.number(ex)
        assert spec.code == code.strip("`"), (spelling, ex, spec.code)
        assert str(spec.bits) == bits, (ex, spec.bits)
        assert str(spec.bias) == bias, (ex, spec.bias)
        if spec.is_float:
            assert _STYLE_COLUMN[style] == spec.style.suffix, (ex, style)
        else:
            assert style == spec.kind.value.replace("exponent", "exp"), (ex, style)
        # "= `code`" in the meaning column names the same spec
        for same in re.findall(r"= `([a-z0-9]+)`", _meaning):
            assert tcast.number(same) == spec, (ex, same)
        # the spelling column, when it is a literal name, means the example
        literal = spelling.strip("`")
        if re.fullmatch(r"[a-z0-9_.]+", literal) and "`" not in literal:
            assert tcast.number(literal) == spec, (literal, ex)


def test_names_md_scale_examples_parse_as_written():
    rows = [r for r in names_rows() if len(r) == 3]
    assert len(rows) >= 10
    for example, canonical, meaning in rows:
        code = example.strip("`")
        assert tcast.scale(code).code == canonical.strip("`"), code
        for name in re.findall(r"\(`([a-z0-9_]+)`\)", meaning):
            assert tcast.CATALOG[name].sspec == tcast.scale(code), (code, name)


def test_python_dash_m_tcast_runs_the_command_line():
    # `python -m tcast` is the same command line as the `tcast` script (tcast.__main__)
    run = subprocess.run(
        [sys.executable, "-m", "tcast", "info", "mxfp4"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    script = shutil.which("tcast", path=str(Path(sys.executable).parent))
    if script is not None:  # the console script beside this interpreter prints the same
        same = subprocess.run(
            [script, "info", "mxfp4"], capture_output=True, text=True, timeout=120, check=False
        )
        assert same.stdout == run.stdout
    assert run.stdout.startswith("datatype:    mxfp4\n")
    bad = subprocess.run(
        [sys.executable, "-m", "tcast", "info", "nosuchtype"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert bad.returncode == 2 and "nosuchtype" in bad.stderr
