"""Running the conformance tiers on engines: selection, sharding over processes, progress.

One implementation behind both doors: ``tcast conformance`` calls :func:`run`, and
``tests/test_conformance.py`` calls :func:`check` (through the same cases, battery, oracles
and adapters) per pytest item.
"""

from __future__ import annotations

import fnmatch
import multiprocessing
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TextIO

import tcast
from tcast import CATALOG, DataType, EngineNotFoundError, SpecError
from tcast.engine import engine_names, failure, load_engine
from tcast.kit import quote

from ._adapters import Adapter, adapter_for
from ._battery import battery, empty_entries, large_battery
from ._cases import (
    ROUND_MODES,
    Case,
    full_cases,
    given_cases,
    pairwise_cases,
    smoke_cases,
    transform_cases,
)
from ._check import Failure, check, check_refusals
from ._oracles import oracle_for

__all__ = [
    "TIERS",
    "EngineRun",
    "Item",
    "ItemResult",
    "load_engine_for_run",
    "run_engine",
    "select_datatypes",
    "tier_items",
]

#: The tiers, smallest first (docs/conformance.md states their sizes).
TIERS = ("smoke", "fast", "full")


@dataclass(frozen=True)
class Item:
    """One unit of work: the cases of one datatype in a tier.

    Attributes:
        dtype: the datatype.
        cases: its cases (each checked in every cast mode the engine supports).
    """

    dtype: DataType
    cases: tuple[Case, ...]


def _names_by_datatype() -> dict[DataType, list[str]]:
    out: dict[DataType, list[str]] = {}
    for name, dt in CATALOG.items():
        out.setdefault(dt, []).append(name)
    return out


def select_datatypes(globs: Sequence[str] | None) -> list[DataType]:
    """The datatypes of ``tcast.conformance_space()`` whose code or catalog name matches a glob.

    A pattern that matches nothing as written is matched again ignoring case (``MXFP4``).

    Args:
        globs: shell-style patterns (``mxfp*``, ``*_e8m0_t32``); None or empty: every datatype.

    Returns:
        The matching datatypes, in the order of ``tcast.combinations()``.

    Raises:
        SpecError: a pattern that matches no datatype (the message names it).
    """
    every = list(tcast.conformance_space())
    if not globs:
        return every
    names = _names_by_datatype()
    chosen: set[DataType] = set()
    for glob in globs:
        hits = _matching(every, names, glob, str)
        if not hits:  # names in another case (MXFP4), unless the case told two apart
            hits = _matching(every, names, glob.casefold(), str.casefold)
            if len(hits) > 1 and not any(c in glob for c in "*?["):
                told = sorted(dt.code for dt in hits)
                raise SpecError(
                    f"--datatypes {quote(glob)} names no datatype in this case, and "
                    f"{len(hits)} ignoring case ({', '.join(told[:6])}): the case tells them "
                    f"apart (uint8_FF is float32 scales, uint8_ff float16); write one"
                )
        if not hits:
            close = tcast.nearest_names(
                glob, [*(dt.code for dt in every), *(n for ns in names.values() for n in ns)]
            )
            raise SpecError(
                f"--datatypes {quote(glob)} matches none of the {len(every)} datatypes of "
                f"tcast.conformance_space() (codes such as {every[0].code!r} or catalog names such "
                f"as 'mxfp8'; `tcast info --catalog` lists the names)"
                + (f"; did you mean: {', '.join(close)}?" if close else "")
            )
        chosen |= hits
    return [dt for dt in every if dt in chosen]


def _matching(
    every: list[DataType],
    names: dict[DataType, list[str]],
    glob: str,
    fold: Callable[[str], str],
) -> set[DataType]:
    """The datatypes whose code or a catalog name, passed through ``fold``, matches ``glob``."""
    return {
        dt
        for dt in every
        if any(fnmatch.fnmatchcase(fold(n), glob) for n in (dt.code, *names.get(dt, ())))
    }


def tier_items(tier: str, dtypes: Iterable[DataType] | None = None) -> list[Item]:
    """The work of ``tier`` on ``dtypes`` (default: the conformance space), one per datatype.

    * ``smoke``: the fast-tier cases that first touch an axis value (of the chosen datatypes);
    * ``fast``: every datatype once, the modes rotated, then the cases that cover every pair
      of axis values (:func:`pairwise_cases`);
    * ``full``: every datatype under every round mode and scale mode (:func:`full_cases`).

    Raises:
        SpecError: an unknown tier (the message lists the valid ones).
    """
    if tier not in TIERS:
        raise SpecError(f"unknown tier {tier!r}; valid tiers: {', '.join(TIERS)}")
    wanted = None if dtypes is None else set(dtypes)
    space = list(tcast.conformance_space())
    fast = [c for c in pairwise_cases(space) if wanted is None or c.dtype in wanted]
    if tier == "smoke":
        cases = smoke_cases(fast)
    elif tier == "fast":
        cases = fast
    else:
        dts = dict.fromkeys(c.dtype for c in fast)
        cases = [c for dt in dts for rm in ROUND_MODES for c in full_cases(dt, rm)]
    # casts with a transform (SEMANTICS.md §5.11), in every tier
    cases += transform_cases(set(space) if wanted is None else wanted & set(space))
    # casts with given scale parts (SEMANTICS.md §5.12), in every tier
    cases += given_cases(set(space) if wanted is None else wanted & set(space))
    grouped: dict[DataType, list[Case]] = {}
    for c in cases:
        grouped.setdefault(c.dtype, []).append(c)
    return [Item(dt, tuple(cs)) for dt, cs in grouped.items()]


@dataclass
class ItemResult:
    """What one item gave: checks, the per-datatype count, and the failures (in order).

    Attributes:
        datatype: the datatype's code.
        checks: casts compared with the oracle, and requests checked to be refused.
        mismatches: the checks that failed.
        failures: what failed, in order.
        compared: casts compared with the oracle (0: the engine supports no case of the
            datatype, which the report calls ``unsupported`` when its refusals are right).
    """

    datatype: str
    checks: int = 0
    mismatches: int = 0
    failures: list[Failure] = field(default_factory=list)
    compared: int = 0


def _check_item(engine: Any, adapter: Adapter, item: Item) -> ItemResult:
    oracle = oracle_for(engine.name)
    entries = battery if oracle.max_elements is not None else large_battery
    res = check(engine, adapter, oracle, item.cases, entries, adapter_name=adapter.name)
    empty = check(engine, adapter, oracle, item.cases[:1], empty_entries, adapter_name=adapter.name)
    refused = check_refusals(engine, adapter, [item.dtype])
    failures = res.failures + empty.failures + refused.failures
    return ItemResult(
        item.dtype.code,
        res.checks + empty.checks + refused.checks,
        len(failures),
        failures,
        res.checks + empty.checks,
    )


def load_engine_for_run(name: str, device: str | None) -> tuple[Any, Adapter]:
    """The installed engine ``name`` and the adapter of its arrays (on ``device``).

    ``name`` may be ``"NAME:VARIANT"``, a variant the engine ``NAME`` offers
    (``tcast.engine.engine_variants``: ``torch:eager``, ``torch:compiled``).

    Raises:
        EngineNotFoundError: not installed, failed to load, offers no such variant, or takes
            no array an adapter makes.
    """
    installed = engine_names()
    base = name.partition(":")[0]
    if base not in installed:
        close = tcast.nearest_names(base, installed)
        raise EngineNotFoundError(
            f"no engine {base!r} is installed; installed engines (the tcast.engines entry "
            f"points): {', '.join(installed) or 'none'}"
            + (f"; did you mean: {', '.join(close)}?" if close else "")
        )
    engine = load_engine(name)
    if engine is None:
        if base == name or failure(base) is not None:
            raise EngineNotFoundError(
                f"engine {base!r} is installed but failed to load: {failure(base)}"
            )
        raise EngineNotFoundError(str(failure(name)))  # loaded, without that variant
    adapter = adapter_for(engine, device)
    if adapter is None:
        raise EngineNotFoundError(
            f"engine {name!r} accepts none of the adapters' sample arrays (NumPy; torch on "
            f"device {device or 'cpu'!r}): give --device (cuda, cuda:1), or for the Triton "
            f"engine on a machine without a GPU set TRITON_INTERPRET=1; an engine on another "
            f"array library names its adapter in $TCAST_CONFORMANCE_ADAPTER (docs/conformance.md)"
        )
    return engine, adapter


# a worker process keeps its engine and adapter between items
_WORKER: dict[str, Any] = {}


def _worker_init(name: str, device: str | None) -> None:
    _WORKER["engine"], _WORKER["adapter"] = load_engine_for_run(name, device)


def _worker_item(item: Item) -> ItemResult:
    return _check_item(_WORKER["engine"], _WORKER["adapter"], item)


@dataclass
class EngineRun:
    """The results of one engine on one tier, item by item in the tier's order."""

    engine: str
    adapter: str
    oracle: str
    results: list[ItemResult]


class _Progress:
    """``engine: done/total datatypes, N mismatches`` on one rewritten line of stderr."""

    def __init__(self, label: str, total: int, quiet: bool, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.on = not quiet and self.stream.isatty()
        self.label, self.total, self.done, self.bad = label, total, 0, 0

    def update(self, mismatches: int) -> None:
        self.done += 1
        self.bad += mismatches
        if self.on:
            pct = 100 * self.done // max(self.total, 1)
            self.stream.write(
                f"\r{self.label}: {self.done}/{self.total} datatypes ({pct}%), "
                f"{self.bad} mismatches "
            )
            self.stream.flush()

    def close(self) -> None:
        if self.on:
            self.stream.write("\r\033[K")
            self.stream.flush()


def run_engine(
    name: str,
    items: Sequence[Item],
    *,
    device: str | None = None,
    jobs: int = 1,
    quiet: bool = False,
    loaded: tuple[Any, Adapter] | None = None,
    on_item: Callable[[ItemResult], None] | None = None,
) -> EngineRun:
    """Check the engine ``name`` on ``items``; the results come back in the items' order.

    Args:
        name: an installed engine.
        items: from :func:`tier_items`.
        device: the torch device for engines on torch tensors (default ``cpu``).
        jobs: worker processes (spawned; each loads the engine by name). 1: this process.
        quiet: no progress line on stderr (there is none when stderr is not a terminal).
        loaded: the engine and adapter to use in this process instead of loading ``name``
            (tests; only with ``jobs == 1``).
        on_item: called with each item's result, in order.

    Raises:
        EngineNotFoundError: as :func:`load_engine_for_run`.
        SpecError: ``jobs`` below 1, or ``loaded`` with ``jobs > 1``.
    """
    if jobs < 1:
        raise SpecError(f"--jobs must be 1 or more, got {jobs}")
    if loaded is not None and jobs != 1:
        raise SpecError("an engine given as an object runs in this process only (jobs=1)")
    engine, adapter = loaded or load_engine_for_run(name, device)
    bar = _Progress(f"tcast conformance: {name}", len(items), quiet)
    results: list[ItemResult] = []

    def take(r: ItemResult) -> None:
        results.append(r)
        bar.update(r.mismatches)
        if on_item is not None:
            on_item(r)

    try:
        if jobs == 1 or len(items) <= 1:
            for item in items:
                take(_check_item(engine, adapter, item))
        else:
            ctx = multiprocessing.get_context("spawn")
            workers = min(jobs, len(items))
            chunk = max(1, len(items) // (workers * 8))
            with ProcessPoolExecutor(
                workers, mp_context=ctx, initializer=_worker_init, initargs=(name, device)
            ) as pool:
                for r in pool.map(_worker_item, items, chunksize=chunk):  # in the items' order
                    take(r)
    finally:
        bar.close()
    return EngineRun(name, adapter.name, oracle_for(name).name, results)
