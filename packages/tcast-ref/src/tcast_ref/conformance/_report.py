"""The conformance report: a summary table for the terminal, JSON for tools, Markdown for people."""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import tcast
from tcast import SpecError

from ._check import describe
from ._run import EngineRun

__all__ = ["REPORT_SCHEMA", "Report", "check_report_path", "engine_version", "versions"]

#: Version of the report's JSON layout.
REPORT_SCHEMA = 1
#: Failures listed per engine (every one is counted).
MAX_LISTED = 200
#: Failures shown in the terminal summary per engine.
MAX_SHOWN = 5


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def engine_version(engine: Any) -> str | None:
    """The version of the distribution that provides ``engine`` (its top-level module's)."""
    top = type(engine).__module__.partition(".")[0]
    for dist in metadata.packages_distributions().get(top, []):
        return _dist_version(dist)
    return getattr(sys.modules.get(top), "__version__", None)


def _device_name(adapter: str) -> str:
    if not adapter.startswith("torch"):
        return "cpu (numpy)" if adapter == "numpy" else adapter
    dev = adapter.partition(":")[2]
    torch = sys.modules.get("torch")  # loaded by the torch adapter
    if torch is not None and dev.startswith("cuda") and torch.cuda.is_available():
        return f"{dev} ({torch.cuda.get_device_name(torch.device(dev))})"
    return dev


def versions() -> dict[str, str | None]:
    """Python, the platform, tcast, and the array libraries installed (None: not installed)."""
    out: dict[str, str | None] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "tcast": tcast.__version__,
    }
    for dist in ("tcast-ref", "numpy", "ml_dtypes", "torch", "triton"):
        out[dist] = _dist_version(dist)
    return out


def check_report_path(path: str | os.PathLike[str]) -> Path:
    """``path`` if a report can be written there (``.json`` or ``.md``, a writable folder).

    Raises:
        SpecError: another suffix, a missing or unwritable folder, or a folder at ``path``.
    """
    p = Path(path)
    if p.suffix not in (".json", ".md"):
        raise SpecError(
            f"--report {str(path)!r}: the file name must end in .json (for tools) "
            f"or .md (for people)"
        )
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise SpecError(f"--report {str(path)!r}: the folder {str(parent)!r} does not exist")
    if p.is_dir() or not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise SpecError(f"--report {str(path)!r}: cannot write there")
    return p


@dataclass
class Report:
    """Every engine's results on one tier, with what was run and on what.

    Attributes:
        tier: ``smoke``, ``fast`` or ``full``.
        datatypes: the ``--datatypes`` patterns (None: every datatype).
        runs: one per engine, in the order asked.
        versions: :func:`versions`, plus each engine's (``engines``) and device.
    """

    tier: str
    datatypes: Sequence[str] | None
    runs: list[EngineRun]
    versions: dict[str, Any]

    @property
    def exit_status(self) -> int:
        """0 when every check matched bit for bit, else 1."""
        return 1 if any(r.mismatches for run in self.runs for r in run.results) else 0

    # ------------------------------------------------------------------ data
    def engine_data(self, run: EngineRun) -> dict[str, Any]:
        """One engine's part of the JSON report."""
        datatypes = {}
        failures = []
        for r in run.results:
            # a datatype the engine refuses in every mode (and refuses properly) is not a pass
            result = "fail" if r.mismatches else "pass" if r.compared else "unsupported"
            datatypes[r.datatype] = {
                "cases": r.checks,
                "mismatches": r.mismatches,
                "result": result,
            }
            failures += r.failures
        mismatches = sum(r.mismatches for r in run.results)
        return {
            "engine": run.engine,
            "version": self.versions.get("engines", {}).get(run.engine),
            "device": _device_name(run.adapter),
            "adapter": run.adapter,
            "oracle": run.oracle,
            "result": "fail" if mismatches else "pass",
            "cases": sum(r.checks for r in run.results),
            "mismatches": mismatches,
            "datatypes": datatypes,
            "failures_listed": min(len(failures), MAX_LISTED),
            "failures": [asdict(f) for f in failures[:MAX_LISTED]],
        }

    def data(self) -> dict[str, Any]:
        """The JSON report as Python data."""
        engines = [self.engine_data(run) for run in self.runs]
        return {
            "report_schema": REPORT_SCHEMA,
            "tool": "tcast conformance",
            "tier": self.tier,
            "datatypes_selected": list(self.datatypes) if self.datatypes else None,
            "versions": self.versions,
            "result": "fail" if self.exit_status else "pass",
            "cases": sum(e["cases"] for e in engines),
            "mismatches": sum(e["mismatches"] for e in engines),
            "engines": engines,
        }

    # ----------------------------------------------------------------- texts
    def summary(self) -> str:
        """The table printed at the end of a run, then the first failures of each engine."""
        rows = [("engine", "device", "datatypes", "cases", "mismatches", "result")]
        shown: list[str] = []
        for run in self.runs:
            e = self.engine_data(run)
            rows.append(
                (
                    run.engine,
                    e["device"],
                    str(len(e["datatypes"])),
                    str(e["cases"]),
                    str(e["mismatches"]),
                    e["result"],
                )
            )
            for f in e["failures"][:MAX_SHOWN]:
                what = describe(f["datatype"], f["modes"], f["input"])
                shown.append(f"{run.engine}: {what}: {f['differences'][0]}")
            if e["failures"]:
                shown.append(
                    f"{run.engine}: reproducer of the first:\n"
                    f"{_indent(e['failures'][0]['reproducer'])}"
                )
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [
            f"tcast conformance, tier {self.tier}"
            + (f", datatypes {', '.join(self.datatypes)}" if self.datatypes else "")
        ]
        for i, row in enumerate(rows):
            lines.append(
                "  ".join(
                    c.rjust(w) if 2 <= j <= 4 else c.ljust(w)
                    for j, (c, w) in enumerate(zip(row, widths, strict=True))
                ).rstrip()
            )
            if i == 0:
                lines.append("  ".join("-" * w for w in widths))
        return "\n".join(lines + shown) + "\n"

    def markdown(self) -> str:
        """The Markdown report: the same content as the JSON, for people."""
        d = self.data()
        out = [f"# tcast conformance report: tier {d['tier']}, {d['result'].upper()}", ""]
        sel = ", ".join(d["datatypes_selected"]) if d["datatypes_selected"] else "all"
        out += [
            f"Datatypes selected: {sel}. Cases: {d['cases']}; mismatches: {d['mismatches']}.",
            "",
            "## Versions",
            "",
            "| component | version |",
            "|---|---|",
        ]
        out += [f"| {k} | {v} |" for k, v in d["versions"].items() if k != "engines"]
        out += [
            "",
            "## Engines",
            "",
            "| engine | version | device | oracle | datatypes | cases | mismatches | result |",
            "|---|---|---|---|---:|---:|---:|---|",
        ]
        for e in d["engines"]:
            out.append(
                f"| {e['engine']} | {e['version']} | {e['device']} | {e['oracle']} | "
                f"{len(e['datatypes'])} | {e['cases']} | {e['mismatches']} | "
                f"{e['result']} |"
            )
        for e in d["engines"]:
            out += ["", f"## {e['engine']}: failures", ""]
            if not e["failures"]:
                out.append("None: every case matched bit for bit.")
            if e["failures_listed"] < e["mismatches"]:
                out.append(f"The first {e['failures_listed']} of {e['mismatches']}.")
            for i, f in enumerate(e["failures"], 1):
                what = describe(f["datatype"], f["modes"], f["input"])
                out += [f"### {i}. `{what}`", "", f"* input: {f['input']}"]
                out += [f"* {msg}" for msg in f["differences"]]
                out += ["", "```python", f["reproducer"], "```", ""]
            out += [
                "",
                f"## {e['engine']}: datatypes",
                "",
                "| datatype | cases | mismatches | result |",
                "|---|---:|---:|---|",
            ]
            out += [
                f"| `{code}` | {r['cases']} | {r['mismatches']} | {r['result']} |"
                for code, r in e["datatypes"].items()
            ]
        return "\n".join(out).rstrip() + "\n"

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the report (JSON for ``.json``, Markdown for ``.md``) atomically.

        Raises:
            SpecError: as :func:`check_report_path`.
        """
        p = check_report_path(path)
        text = (
            json.dumps(self.data(), indent=2, sort_keys=False) + "\n"
            if p.suffix == ".json"
            else self.markdown()
        )
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent or ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return p


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())
