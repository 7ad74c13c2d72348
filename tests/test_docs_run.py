"""Every Python block of every Markdown document runs as written.

Documents are found by glob (the READMEs, docs/, SEMANTICS.md, tests/README.md ...), so a new
document is covered without editing this file. The ``python`` blocks of one document run in
order, in one namespace (later blocks use earlier names), in an empty temporary directory.

A block is skipped only when the line before its fence says so, with the reason shown in the
pytest report:

* ``<!-- docs-test: gpu -->``: needs a CUDA GPU (skipped where torch has none);
* ``<!-- docs-test: skip reason="..." -->``: never run here (a template naming a library of
  yours, say); the reason must be given.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_SKIP_DIRS = {".venv", "node_modules", "out", "build", "dist"}
_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
_MARK = re.compile(r'<!--\s*docs-test:\s*(gpu|skip\s+reason="([^"]+)")\s*-->\s*$')


def _documents() -> list[Path]:
    out = []
    for p in sorted(ROOT.rglob("*.md")):
        rel = p.relative_to(ROOT)
        if any(part in _SKIP_DIRS or part.startswith(".") for part in rel.parts[:-1]):
            continue
        if rel.parts[:2] == ("tests", "golden"):
            continue
        out.append(p)
    return out


def _blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """(line number, source, skip reason or None) of each python block of ``path``."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        reason = None
        if mark and mark.group(1) == "gpu":
            reason = "gpu"
        elif mark:
            reason = mark.group(2)
        out.append((line, m.group(1), reason))
    return out


DOCS = [p for p in _documents() if _blocks(p)]


def test_documents_with_python_blocks_are_found():
    # the discovery itself must not silently find nothing
    names = {str(p.relative_to(ROOT)) for p in DOCS}
    assert {
        "README.md",
        "packages/tcast-ref/README.md",
        "packages/tcast-torch/README.md",
        "docs/golden-vectors.md",
    } <= names, names


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_every_python_block_runs(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    skipped = []
    for line, source, reason in _blocks(path):
        where = f"{path.relative_to(ROOT)}:{line}"
        if reason == "gpu":
            torch = pytest.importorskip("torch")
            if not torch.cuda.is_available():
                skipped.append(f"{where}: needs a CUDA GPU")
                continue
        elif reason is not None:
            skipped.append(f"{where}: {reason}")
            continue
        code = compile(source, where, "exec")
        exec(code, namespace)  # a failing block fails the test with its document and line
    if skipped and len(skipped) == len(_blocks(path)):
        pytest.skip("; ".join(skipped))
