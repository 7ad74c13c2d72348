"""Tests of ``tcast.plot`` and ``tcast plot``: the data each picture draws, the PNG files the
command writes, and matplotlib staying optional (never imported by ``import tcast``).

Expected values come from outside the code under test: the OCP FP4 value list, hand-computed
rounding errors, and a golden set's ``vectors.txt`` read as text.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tcast import TcastError, plot
from tcast.errors import SpecError, UnsupportedError

REPO = Path(__file__).resolve().parents[3]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
#: OCP MX v1.0, FP4 E2M1: every finite value (one zero).
OCP_FP4 = sorted({s * v for v in (0, 0.5, 1, 1.5, 2, 3, 4, 6) for s in (1, -1)})


@pytest.fixture
def mpl() -> None:
    pytest.importorskip("matplotlib")


def _offsets(fig: object, prefix: str) -> dict[str, list[tuple[float, float]]]:
    """The scatter points of each collection whose gid starts with ``prefix``."""
    out = {}
    for ax in fig.axes:  # type: ignore[attr-defined]
        for c in ax.collections:
            gid = c.get_gid() or ""
            if gid.startswith(prefix):
                out[gid.removeprefix(prefix)] = [tuple(p) for p in c.get_offsets().tolist()]
    return out


def _line(fig: object, gid: str) -> tuple[list[float], list[float]]:
    (line,) = [ln for ax in fig.axes for ln in ax.lines if ln.get_gid() == gid]  # type: ignore[attr-defined]
    xs, ys = line.get_data()
    return list(xs), list(ys)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tcast")
    plot.register(parser.add_subparsers(dest="command", required=True))
    return parser


# ------------------------------------------------------------------------------- values
def test_values_of_e2m1f_are_the_15_ocp_fp4_values_by_class(mpl: None) -> None:
    points = _offsets(plot.values("e2m1f"), "values:")
    xs = sorted(x for pts in points.values() for x, _ in pts)
    assert xs == OCP_FP4
    assert sorted(x for x, _ in points["max"]) == [-6, 6]
    assert sorted(x for x, _ in points["subnormal"]) == [-0.5, 0.5]
    assert [x for x, _ in points["zero"]] == [0]
    assert set(points) == {"zero", "subnormal", "normal", "max"}


def test_values_of_e4m3fn_name_its_two_nan_codes_and_no_infinity(mpl: None) -> None:
    fig = plot.values("float8_e4m3fn")
    points = _offsets(fig, "values:")
    # 256 codes - 2 NaN codes - (-0, the same value as 0)
    assert sum(len(p) for p in points.values()) == 253
    assert sorted(x for x, _ in points["max"]) == [-448, 448]
    (ax,) = fig.axes
    texts = {t.get_gid(): t.get_text() for t in ax.texts}
    assert texts["values:specials"] == "NaN: 0x7F, 0xFF"
    assert ax.get_xscale() == "symlog"  # auto: 448 / 2**-9 is wider than 1024


def test_values_of_e5m2_point_at_both_infinities(mpl: None) -> None:
    (ax,) = plot.values("e5m2").axes
    texts = {t.get_gid(): t.get_text() for t in ax.texts}
    assert texts["values:+Inf"] == "+Inf" and texts["values:-Inf"] == "-Inf"
    assert texts["values:specials"].splitlines() == [
        "+Inf: 0x7C",
        "-Inf: 0xFC",
        "NaN: 0x7D .. 0xFF (6 codes)",
    ]


def test_values_of_a_codebook_draw_one_row_per_mapping(mpl: None) -> None:
    fig = plot.values("cb41fi_e2m2fnuz")  # two mappings: 0..6 and 0..7 (docs/v2-formats.md)
    rows: dict[float, set[float]] = {}
    for pts in _offsets(fig, "values:").values():
        for x, y in pts:
            rows.setdefault(y, set()).add(abs(x))
    assert sorted(rows) == [0, 1]
    assert max(rows[0]) == 6 and max(rows[1]) == 7


def test_values_of_int4_mark_the_code_encode_never_produces(mpl: None) -> None:
    points = _offsets(plot.values("int4"), "values:")
    assert [x for x, _ in points["unproduced"]] == [-8]  # 0x8 decodes, encode gives -7..7
    assert sorted(x for x, _ in points["max"]) == [-7, 7]
    assert sorted(x for x, _ in points["value"]) == [v for v in range(-6, 7) if v]


def test_values_refuse_formats_wider_than_16_bits() -> None:
    with pytest.raises(UnsupportedError, match=r"float32 has 32 bits.*16 bits"):
        plot.values("float32")


# ------------------------------------------------------------------------------- errors
def test_error_of_e2m1f_is_zero_at_its_values_and_at_most_half_an_ulp(mpl: None) -> None:
    xs, ys = _line(plot.errors(["e2m1f"], points=16), "error:e2m1f")
    err = dict(zip(xs, ys, strict=True))
    for v in OCP_FP4:
        if v > 0:
            assert err[v] == 0, v
    assert all(y <= 2**-2 for x, y in err.items() if 1 <= x <= 6)  # normal range: 2**-(m+1)
    # a tie is half a gap from both neighbours: 5 (4|6), 2.5 (2|3), 0.25 (0|0.5); above the
    # maximum the cast saturates: 12 -> 6
    assert (err[5.0], err[2.5], err[0.25], err[12.0]) == (0.2, 0.2, 1.0, 0.5)


def test_error_of_a_scaled_datatype_is_its_element_error_at_scale_1(mpl: None) -> None:
    xs, ys = _line(plot.errors("mxfp4", points=8), "error:mxfp4 (e2m1f, block amax 6)")
    err = dict(zip(xs, ys, strict=True))  # x relative to the block amax 6
    assert all(err[v / 6] == 0 for v in OCP_FP4 if v > 0)
    assert err[5 / 6] == 0.2  # the tie between 4 and 6, as unscaled


def test_error_refuses_amax_for_unscaled_formats_and_bare_codebooks() -> None:
    with pytest.raises(SpecError, match="amax is for scaled datatypes"):
        plot.errors(["e2m1f"], amax=2.0)
    with pytest.raises(UnsupportedError, match=r"bare codebook.*mxfi4"):
        plot.errors(["cb41fi_e2m2fnuz"])
    with pytest.raises(SpecError, match="points must be an int of at least 2"):
        plot.errors(["e2m1f"], points=1)
    with pytest.raises(SpecError, match="at most the largest float32 value, got 1e"):
        plot.errors(["mxfp4"], amax=1e300)


# ----------------------------------------------------------------------------- coverage
def _vectors(name: str) -> list[list[int]]:
    text = (REPO / "tests" / "golden" / name / "vectors.txt").read_text()
    return [[int(w, 16) for w in line.split()] for line in text.splitlines()[1:]]


def test_coverage_counts_a_committed_sets_classes_from_its_words(mpl: None) -> None:
    pytest.importorskip("tcast_ref")
    fig = plot.coverage(REPO / "tests" / "golden" / "float8_e4m3fn")
    counts = _class_counts(fig)
    lines = _vectors("float8_e4m3fn")  # IN OUT FLAGS, one element per line
    outs = [out for _, out, _ in lines]
    mag = [o & 0x7F for o in outs]
    nan_in = sum((x >> 23) & 0xFF == 0xFF and x & 0x7FFFFF != 0 for x, _, _ in lines)
    assert counts["nan"] == sum(m == 0x7F for m in mag)
    assert counts["max"] == sum(m == 0x7E for m in mag)
    assert counts["zero"] == sum(m == 0 for m in mag)
    assert counts["subnormal"] == sum(0 < m < 8 for m in mag)
    assert counts["NaN input"] == nan_in > 0
    assert "inf" not in counts  # e4m3fn has no Inf code
    hits = [p.get_height() for p in fig.axes[1].patches if p.get_gid() == "coverage:codes"]
    assert hits == [outs.count(c) for c in range(256)]


def _class_counts(fig: object) -> dict[str, int]:
    ax = fig.axes[0]  # type: ignore[attr-defined]
    bars = [p for p in ax.patches if p.get_gid() == "coverage:classes"]
    names = [t.get_text() for t in ax.get_yticklabels()]
    return dict(zip(names, [round(b.get_width()) for b in bars], strict=True))


def test_coverage_of_scaled_sets_agrees_with_the_generators_flags(
    mpl: None, tmp_path: Path
) -> None:
    golden = pytest.importorskip("tcast_ref.golden")
    sparse = tmp_path / "sparse"  # keep 2 of every 4: a MASK column
    golden.write(golden.generate(golden.Settings.of("e2m1f_e8m0_t8n2m4", count=4)), sparse)
    # nvfp4: the largest decoded magnitude is a float32 product (M * tile * tensor scale)
    for path in (REPO / "tests" / "golden" / "mxfp4", REPO / "tests" / "golden" / "nvfp4", sparse):
        counts = _class_counts(plot.coverage(path))
        flagged = json.loads((path / "header.json").read_text())["counts"]["flagged"]
        assert counts["beyond max"] == flagged["overflow"] > 0
        assert counts["nan"] == flagged["nanblock"] > 0
        assert counts.get("pruned", 0) == flagged["pruned"]
        assert counts["NaN input"] == flagged["invalid"] > 0
    assert counts["pruned"] > 0


def test_coverage_refuses_what_is_not_a_path() -> None:
    with pytest.raises(SpecError, match="a golden set is a directory path, not None"):
        plot.coverage(None)  # type: ignore[arg-type]


def test_coverage_without_tcast_ref_says_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tcast_ref", None)
    monkeypatch.setitem(sys.modules, "tcast_ref.golden", None)
    with pytest.raises(UnsupportedError, match=r"needs tcast-ref.*pip install tcast-ref"):
        plot.coverage(REPO / "tests" / "golden" / "mxfp4")


# --------------------------------------------------------------------- command and imports
@pytest.mark.parametrize(
    "argv", [["values", "e2m1f"], ["error", "e2m1f", "mxfp4", "--points", "8"]]
)
def test_command_writes_a_png_file(mpl: None, tmp_path: Path, argv: list[str]) -> None:
    out = tmp_path / "picture.png"
    args = _parser().parse_args(["plot", *argv, "--out", str(out), "--dpi", "20"])
    assert args.func(args) == 0
    assert out.read_bytes()[:8] == PNG_MAGIC


def test_command_names_a_file_it_cannot_write(mpl: None, tmp_path: Path) -> None:
    out = tmp_path / "missing" / "v.png"
    args = _parser().parse_args(["plot", "values", "e2m1f", "--out", str(out), "--dpi", "10"])
    with pytest.raises(TcastError, match=r"cannot write '.*: No such file or directory"):
        args.func(args)


def test_without_matplotlib_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    with pytest.raises(
        UnsupportedError, match=r'needs matplotlib.*pip install "tcast-spec\[plot\]"'
    ):
        plot.values("e2m1f")


def test_import_tcast_does_not_import_matplotlib() -> None:
    code = (
        "import sys, tcast, tcast.plot, tcast.cli\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'numpy'))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
