"""The API reference (``make docs``, docs/build_api.py) builds without a pdoc warning.

``tcast`` (with ``tcast.kit`` and ``tcast.exact``) and ``tcast_ref`` are built here, in this
process; the torch and Triton engines' pages are left to ``make docs`` (their imports alone
take seconds). The last test shows that a warning is caught, so a clean build means clean.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("pdoc")

ROOT = Path(__file__).resolve().parents[1]


def _build_api():
    spec = importlib.util.spec_from_file_location("tcast_build_api", ROOT / "docs/build_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_api = _build_api()


def test_api_reference_of_the_spec_and_reference_engine_builds_without_warnings(tmp_path):
    problems = build_api.build(tmp_path, ["tcast", "tcast_ref"])
    assert problems == []
    pages = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.html")}
    assert {"tcast.html", "tcast/kit.html", "tcast/exact.html", "tcast_ref.html"} <= pages
    assert "cast_block" in (tmp_path / "tcast/exact.html").read_text(encoding="utf-8")


def test_the_reference_lists_every_public_package():
    assert set(build_api.MODULES) >= {
        "tcast",
        "tcast_ref",
        "tcast_ref.golden",
        "tcast_ref.conformance",
        "tcast_torch",
        "tcast_triton",
    }


def test_a_pdoc_warning_fails_the_build(tmp_path, monkeypatch, capsys):
    src = tmp_path / "src"
    src.mkdir()
    (src / "tcast_docs_probe.py").write_text('"""Probe."""\n\n__all__ = ["missing"]\n')
    monkeypatch.syspath_prepend(str(src))
    # main() sets TRITON_INTERPRET for Triton's first import: restored after this test, so
    # that a later test of this process importing Triton gets the mode it would have had
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))
    try:
        status = build_api.main([str(tmp_path / "site"), "tcast_docs_probe"])
    finally:
        sys.modules.pop("tcast_docs_probe", None)
    assert status == 1
    err = capsys.readouterr().err
    assert "pdoc warning" in err and "missing" in err
