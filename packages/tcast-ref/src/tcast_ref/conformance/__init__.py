"""tcast_ref.conformance: check any tcast engine against the reference, bit for bit.

One implementation behind two doors: the ``tcast conformance`` command (:func:`run`, then
:class:`Report`) and ``tests/test_conformance.py`` (:func:`check` per pytest item). See
docs/conformance.md.

* **Cases** (:class:`Case`): one datatype of ``tcast.combinations()`` under one set of modes,
  checked in every cast mode. Tiers: :func:`smoke_cases` (every axis value once),
  :func:`pairwise_cases` (:func:`fast_cases`, every datatype once with the modes rotated, plus
  a cover of every pair of axis values), :func:`full_cases` (every
  datatype under every round mode and scale mode, both ``saturate`` and ``transpose_scale``
  values, seed and rbits).
* **Battery** (:func:`battery`, :func:`large_battery`, :func:`empty_entries`): the inputs,
  deterministic per datatype: edge blocks, special values, random data, non-contiguous views,
  ranks 1 to 3 with partial tiles, float32/float16/bfloat16 inputs, explicit rbits and seeds.
* **Oracles**: :class:`ExactOracle` (``tcast.exact``, small inputs) judges ``ref``;
  :class:`RefOracle` (``tcast_ref``) judges every other engine.
* **Adapters** (:class:`Adapter`): NumPy, torch (imported only when used), or your own.
* **Checks**: :func:`check_case` (one case, one entry), :func:`check` (many, counted),
  :func:`check_refusals` (what ``supports`` rejects raises ``UnsupportedError``).

This package never imports torch at import time.
"""

from __future__ import annotations

from collections.abc import Sequence

from tcast import SpecError

from ._adapters import (
    ADAPTER_ENV,
    DEVICE_ENV,
    Adapter,
    adapter_for,
    check_device,
    numpy_adapter,
    torch_adapter,
)
from ._battery import (
    EXACT_MAX_ELEMENTS,
    INPUT_DTYPES,
    Entry,
    battery,
    bits_of,
    empty_entries,
    large_battery,
)
from ._cases import (
    CAST_MODES,
    ROUND_MODES,
    SCALE_MODES,
    Case,
    axis_values,
    case_pairs,
    fast_cases,
    feasible_pairs,
    full_cases,
    given_cases,
    given_values,
    pairwise_cases,
    smoke_cases,
    tile_code,
    transform_cases,
)
from ._check import (
    CheckResult,
    Failure,
    check,
    check_case,
    check_refusals,
    compare,
    describe,
    reproducer,
)
from ._oracles import ExactOracle, Expected, RefOracle, cast_kwargs, oracle_for
from ._report import REPORT_SCHEMA, Report, check_report_path, engine_version, versions
from ._run import (
    TIERS,
    EngineRun,
    Item,
    ItemResult,
    load_engine_for_run,
    run_engine,
    select_datatypes,
    tier_items,
)

__all__ = [
    "ADAPTER_ENV",
    "CAST_MODES",
    "DEVICE_ENV",
    "EXACT_MAX_ELEMENTS",
    "INPUT_DTYPES",
    "REPORT_SCHEMA",
    "ROUND_MODES",
    "SCALE_MODES",
    "TIERS",
    "Adapter",
    "Case",
    "CheckResult",
    "EngineRun",
    "Entry",
    "ExactOracle",
    "Expected",
    "Failure",
    "Item",
    "ItemResult",
    "RefOracle",
    "Report",
    "adapter_for",
    "axis_values",
    "battery",
    "bits_of",
    "case_pairs",
    "cast_kwargs",
    "check",
    "check_case",
    "check_device",
    "check_refusals",
    "check_report_path",
    "compare",
    "describe",
    "empty_entries",
    "engine_version",
    "fast_cases",
    "feasible_pairs",
    "full_cases",
    "given_cases",
    "given_values",
    "large_battery",
    "load_engine_for_run",
    "numpy_adapter",
    "oracle_for",
    "pairwise_cases",
    "reproducer",
    "run",
    "run_engine",
    "select_datatypes",
    "smoke_cases",
    "tier_items",
    "tile_code",
    "torch_adapter",
    "transform_cases",
    "versions",
]


def run(
    engines: Sequence[str],
    tier: str = "fast",
    *,
    datatypes: Sequence[str] | None = None,
    device: str | None = None,
    jobs: int = 1,
    quiet: bool = False,
    report: str | None = None,
) -> Report:
    """Check each engine of ``engines`` on ``tier``: what ``tcast conformance`` does.

    Every argument is checked before any cast (an unknown tier, engine or pattern, a report
    path that cannot be written, ``jobs`` below 1), and every engine is loaded first.

    Args:
        engines: installed engine names (the ``tcast.engines`` entry points).
        tier: ``smoke``, ``fast`` or ``full``.
        datatypes: shell patterns matched against datatype codes and catalog names.
        device: the torch device of engines on torch tensors (default ``cpu``).
        jobs: worker processes per engine.
        quiet: no progress line.
        report: where the caller will write the report (checked here, before the run).

    Returns:
        The report (write it with :meth:`Report.write`; its ``exit_status`` is 0 or 1).

    Raises:
        tcast.SpecError: bad tier, pattern, jobs, report path or device (not a torch device,
            the meta device, or one this machine lacks).
        tcast.EngineNotFoundError: an engine not installed, not loading, or with no adapter.
    """
    if not engines:
        raise SpecError("name at least one engine (--engine NAME)")
    if jobs < 1:
        raise SpecError(f"--jobs must be 1 or more, got {jobs}")
    if report is not None:
        check_report_path(report)
    check_device(device)
    items = tier_items(tier, select_datatypes(datatypes))
    loaded = {name: load_engine_for_run(name, device) for name in dict.fromkeys(engines)}
    runs = [
        run_engine(
            name,
            items,
            device=device,
            jobs=jobs,
            quiet=quiet,
            loaded=loaded[name] if jobs == 1 else None,
        )
        for name in loaded
    ]
    found = versions()
    found["engines"] = {name: engine_version(engine) for name, (engine, _) in loaded.items()}
    return Report(tier, list(datatypes) if datatypes else None, runs, found)
