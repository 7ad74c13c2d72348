"""docs/golden-vectors.md quotes real lines of the committed sets: they must still be there."""

import re
from pathlib import Path

import tcast

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "golden-vectors.md"


def _committed_lines() -> dict[str, dict[str, int]]:
    out = {}
    for p in sorted((ROOT / "tests" / "golden").glob("*/vectors.txt")):
        out[p.parent.name] = {ln: i for i, ln in enumerate(p.read_text().splitlines())}
    return out


def test_quoted_vector_lines_exist_in_the_committed_sets():
    text = DOC.read_text()
    lines = _committed_lines()
    every = {ln for d in lines.values() for ln in d}
    quoted = [
        ln.strip()
        for ln in text.splitlines()
        if re.fullmatch(r"[0-9A-F]{8}( [0-9A-F]{1,8})+", ln.strip())
    ]
    assert quoted, "the guide quotes a whole vector line"
    for ln in quoted:
        assert ln in every, ln


def test_the_e4m3fn_table_cites_the_right_case_numbers():
    text = DOC.read_text()
    e4m3 = _committed_lines()["float8_e4m3fn"]
    rows = re.findall(r"\| (\d+) \| `([0-9A-F]{8} [0-9A-F]{2} [0-9A-F]{2})` \|", text)
    assert len(rows) >= 5
    for case, line in rows:
        assert e4m3.get(line) == int(case), (case, line)


def test_the_mxfp8_worked_example_is_the_case_it_names():
    text = DOC.read_text()
    (case,) = re.findall(r"### 5\.2 mxfp8, case (\d+)", text)
    quoted = [
        ln.strip()
        for ln in text.splitlines()
        if re.fullmatch(r"[0-9A-F]{8}( [0-9A-F]{1,8}){64,}", ln.strip())
    ]
    assert quoted and _committed_lines()["mxfp8"].get(quoted[0]) == int(case)


def test_the_stated_nvfp4_line_count_and_last_tensor_match_the_committed_set():
    import json

    text = " ".join(DOC.read_text().split())
    m = re.search(
        r"the committed nvfp4 set has (\d+) lines: the whole tiles are cases 1–(\d+) "
        r"\(their last tensor is cases (\d+)–(\d+)\), then (\w+) tensors of eight "
        r"partial tiles, cases (\d+)–(\d+)",
        text,
    )
    assert m, "section 3.7 states the nvfp4 line count"
    lines, whole, first, last, count, p_first, p_last = m.groups()
    lines, whole, first, last, p_first, p_last = map(
        int, (lines, whole, first, last, p_first, p_last)
    )
    header = json.loads((ROOT / "tests" / "golden" / "nvfp4" / "header.json").read_text())
    per = header["cases"]["geometry"]["lines_per_tensor"]
    partial = header["cases"]["inputs"]["partial_tiles"]
    assert lines == header["counts"]["lines"] == p_last
    assert whole + 1 == partial["first_line"] == p_first
    assert last == whole and first == (whole - 1) // per * per + 1
    assert partial["lines_per_extent"] == per == 8
    assert {"four": 4}[count] == len(partial["extents"]) == (lines - whole) // per


def test_docs_say_quark_saturates_an_offset_pair_value_rounding_up_to_2_pow_e():
    """Quark 0.13 clamps to 2^m - 1 as tcast does (test_quark_msfp.py checks Quark itself)."""
    text = " ".join(DOC.read_text().split())
    assert "Quark gives 2^E" not in text and "gives 1.0 = 2^E" not in text
    assert "as AMD Quark 0.13 does" in text


def test_docs_name_the_f_pattern_base_format_by_its_index_bits():
    """`f` with I-bit indices takes e2m(I-3): I = 4 is e2m1 (1 sign, 2 exponent, 1 mantissa)."""
    assert tcast.number("cb40f_e2m3fnuz").tables[0][1:8] == (0.5, 1, 1.5, 2, 3, 4, 6)
    for doc in ("docs/v2-formats.md", "packages/tcast-spec/SEMANTICS.md"):
        text = (ROOT / doc).read_text()
        assert "`e2m(I−3)`" in text and "e2m(I−2)" not in text, doc
