"""docs/golden-vectors.md quotes real lines of the committed sets: they must still be there."""

import re
from pathlib import Path

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
    quoted = [ln.strip() for ln in text.splitlines()
              if re.fullmatch(r"[0-9A-F]{8}( [0-9A-F]{1,8})+", ln.strip())]
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
    quoted = [ln.strip() for ln in text.splitlines()
              if re.fullmatch(r"[0-9A-F]{8}( [0-9A-F]{1,8}){64,}", ln.strip())]
    assert quoted and _committed_lines()["mxfp8"].get(quoted[0]) == int(case)
