"""``tcast golden`` and ``tcast verify``: plugged into the ``tcast`` command line.

Registered under the ``tcast.commands`` entry-point group (see ``tcast.cli``).

Exit status of ``tcast golden``: 0 written, 2 bad options or datatype, or an ``--out`` it may
not replace. Of ``tcast verify``: 0 every output matches, 1 some differ, 2 unusable input
(a path that does not exist, damaged or malformed set, results file of another set or too
long, engine or device missing or unsupported, nothing compared).

``tcast verify DIR`` where DIR holds sets in its subdirectories (``tcast golden --core --out
DIR``) verifies every one of them. ``tcast verify`` loads only the engines it checks: the
default, ``ref``, imports neither torch nor Triton.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from tcast import (
    ROUND_MODE_MEANINGS,
    SCALE_MODE_MEANINGS,
    CastMode,
    Hadamard,
    RoundMode,
    ScaleMode,
    SpecError,
    TcastError,
)
from tcast.kit import GIVEN_PARTS

from .conformance import check_device
from .golden import (
    CORE,
    LEVELS,
    TRANSFORM_SETS,
    EngineRefusesError,
    EngineUnavailableError,
    LoadedSet,
    Settings,
    engine_columns,
    generate,
    load,
    read_actual,
    report,
    write,
)
from .golden import compare as compare_set
from .golden._cases import INPUT_TYPES
from .golden._files import check_destination
from .golden._generate import hadamard_of_text

__all__ = ["modes_epilog", "register_golden", "register_verify", "run_golden", "run_verify"]


def register_golden(sub: argparse._SubParsersAction) -> None:
    """Add ``tcast golden``."""
    p = sub.add_parser(
        "golden",
        help="generate a golden-vector set",
        description="Generate a golden-vector set for one datatype into --out, replacing "
        "only the files of an earlier set there.",
        epilog=modes_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("datatype", nargs="?", help="catalog name (mxfp8) or code pair (e2m1f_e8m0_t32)")
    p.add_argument("--out", required=True, type=Path, help="the set's directory (--core: parent)")
    p.add_argument(
        "--core",
        action="store_true",
        help=f"generate every core set into OUT/NAME: {', '.join(CORE)}",
    )
    p.add_argument(
        "--roundmode",
        default="even",
        choices=[m.value for m in RoundMode] + ["nearest"],
        metavar="MODE",
        help="round mode (default even; the modes are below)",
    )
    p.add_argument(
        "--scalemode",
        default="floor",
        choices=[m.value for m in ScaleMode] + ["rceil"],
        metavar="MODE",
        help="how power-of-two scales are chosen (default floor; the modes are below)",
    )
    p.add_argument("--castmode", default="actual", choices=[m.value for m in CastMode])
    sat = p.add_mutually_exclusive_group()
    sat.add_argument(
        "--saturate",
        dest="saturate",
        action="store_true",
        default=True,
        help="unscaled overflow saturates to +-max (default)",
    )
    sat.add_argument(
        "--ieee-overflow",
        dest="saturate",
        action="store_false",
        help="unscaled overflow gives Inf/NaN (SEMANTICS.md 4.1)",
    )
    p.add_argument("--level", default="1", choices=LEVELS)
    p.add_argument("--seed", type=int, default=0, help="Philox seed in [0, 2**64)")
    p.add_argument("--input-dtype", default="float32", choices=list(INPUT_TYPES))
    p.add_argument(
        "--count",
        type=int,
        default=None,
        help="size of the random part (values, or tiles for scaled datatypes); "
        "at most 2**24 random elements (count times the elements of a tile)",
    )
    p.add_argument(
        "--transform",
        type=_transform_arg,
        default=None,
        metavar="SPEC",
        help="a Hadamard transform before the cast (SEMANTICS.md 5.11): te_wgrad "
        "(TransformerEngine's 16 Wgrad signs), SIZE:SEED (signs drawn from SEED) or "
        "SIZE:SIGNS (SIZE characters + or -); 1-D tiled or channel datatypes, levels 1 and 2",
    )
    p.add_argument(
        "--given",
        type=_given_arg,
        default=(),
        metavar="PARTS",
        help="scale parts given as inputs (SEMANTICS.md 5.12), comma-separated: scale, zero "
        "(uint data), tensor_scale (two-level): input columns GSCALE, GZERO, GTENSCALE",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar, no summary line")
    p.set_defaults(func=run_golden)


def _given_arg(text: str) -> tuple[str, ...]:
    """``--given``: part names separated by commas."""
    parts = tuple(p.strip() for p in text.split(",") if p.strip())
    bad = [p for p in parts if p not in GIVEN_PARTS]
    if bad or not parts:
        raise argparse.ArgumentTypeError(
            f"{text!r}: give parts among {', '.join(GIVEN_PARTS)}, separated by commas"
        )
    return parts


def _transform_arg(text: str) -> Hadamard:
    """``--transform``: ``te_wgrad``, ``SIZE:SEED`` or ``SIZE:SIGNS``."""
    if text == "te_wgrad":
        return Hadamard.te_wgrad()
    size, sep, rest = text.partition(":")
    try:
        if not sep or not size.isdigit() or not rest:
            raise SpecError("")
        if rest.isdigit():
            return Hadamard.seeded(int(size), int(rest))
        return hadamard_of_text(int(size), rest)
    except SpecError as err:
        why = f": {err}" if str(err) else ""
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a transform{why}; give te_wgrad, SIZE:SEED (32:0) or SIZE:SIGNS "
            "(4:+-+-)"
        ) from None


def modes_epilog() -> str:
    """The meaning of every round and scale mode, from tcast's one table, for ``--help``."""
    out = []
    for title, meanings in (
        ("round modes (--roundmode):", ROUND_MODE_MEANINGS),
        ("scale modes (--scalemode; float scales and uint data ignore them):", SCALE_MODE_MEANINGS),
    ):
        out.append(title)
        width = max(len(name) for name in meanings) + 4
        for name, text in meanings.items():
            out.append(
                textwrap.fill(
                    text,
                    width=79,
                    initial_indent=f"  {name:<{width - 2}}",
                    subsequent_indent=" " * width,
                )
            )
    return "\n".join(out)


def run_golden(args: argparse.Namespace) -> int:
    """Handler of ``tcast golden``."""
    if args.core == bool(args.datatype):
        print("tcast golden: give a DATATYPE or --core (not both)", file=sys.stderr)
        return 2
    if args.core and args.given:
        print("tcast golden: --given goes with a DATATYPE, not --core", file=sys.stderr)
        return 2
    if args.core and args.transform is not None:
        print(
            "tcast golden: --transform goes with a DATATYPE; the core sets name their own "
            f"({', '.join(TRANSFORM_SETS)})",
            file=sys.stderr,
        )
        return 2
    names = CORE if args.core else (args.datatype,)
    try:
        for name in names:
            if args.core:  # a core set's own transform
                dtype, transform = TRANSFORM_SETS.get(name, (name, None))
            else:
                dtype, transform = name, args.transform
            st = Settings.of(
                dtype,
                roundmode=args.roundmode,
                scalemode=args.scalemode,
                castmode=args.castmode,
                saturate=args.saturate,
                level=args.level,
                seed=args.seed,
                input_dtype=args.input_dtype,
                count=args.count,
                transform=transform,
                given=args.given,
            )
            out = args.out / name if args.core else args.out
            check_destination(out)  # refuse before minutes of generation, not after
            gs = generate(st, quiet=args.quiet)
            for kept in write(gs, out):
                print(
                    f"tcast golden: kept {kept}: it holds the files of a set that a killed run "
                    "was replacing (move them back, or delete the directory)",
                    file=sys.stderr,
                )
            if not args.quiet:
                c = gs.header["counts"]
                print(
                    f"{out}: {st.dtype.code} {gs.header['operation']} level {st.level}: "
                    f"{c['lines']} lines, {c['elements']} elements"
                )
    except (TcastError, FileExistsError, OSError) as err:
        print(f"tcast golden: {err}", file=sys.stderr)
        return 2
    return 0


def register_verify(sub: argparse._SubParsersAction) -> None:
    """Add ``tcast verify``."""
    p = sub.add_parser(
        "verify",
        help="check results or an engine against golden-vector sets",
        description="Check a device's results file (--actual) or installed engines (--engine) "
        "against golden-vector sets. Every file's SHA-256 is checked first. Without --actual "
        "or --engine, the reference engine 'ref' is checked (only the engines named are "
        "loaded). A DIR that holds sets in its subdirectories (the --out of golden --core) "
        "stands for all of them. With --engine all, the last line names the engines verified "
        "and those that could not run on this machine.",
    )
    p.add_argument(
        "dirs",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="golden-vector set(s), or a directory of sets",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--actual", type=Path, help="results file (vectors.txt or .memh syntax)")
    src.add_argument(
        "--engine", action="append", help="installed engine name, or 'all' (repeatable)"
    )
    p.add_argument(
        "--device",
        help="torch device for the engines' inputs (cpu, cuda, cuda:1); "
        "default: whatever the engine takes, NumPy first, then torch on the CPU, "
        "then CUDA",
    )
    p.add_argument("--max-errors", type=int, default=20, help="failures to print (default 20)")
    p.add_argument("--strict-nan", action="store_true", help="compare NaN sign and payload too")
    p.add_argument("--ignore-flags", action="store_true", help="do not compare FLAGS")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bar and no line per passing set; failures and the summary "
        "table are still printed",
    )
    p.set_defaults(func=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    """Handler of ``tcast verify``."""
    from tcast import load_engines

    if args.max_errors < 0:
        print(
            f"tcast verify: --max-errors must be 0 or more, got {args.max_errors}", file=sys.stderr
        )
        return 2
    dirs, missing = _golden_sets(args.dirs)
    if args.actual is not None and len(dirs) + len(missing) != 1:
        held = f" ({', '.join(map(str, args.dirs))} hold {len(dirs)})" if len(dirs) > 1 else ""
        print(f"tcast verify: --actual checks one set; give one DIR{held}", file=sys.stderr)
        return 2
    if args.device is not None and args.actual is None:
        try:  # once, not once per set and engine
            check_device(args.device)
        except TcastError as err:
            print(f"tcast verify: --{err}", file=sys.stderr)  # "--device 'x' is not ..."
            return 2
    engines = args.engine or (["ref"] if args.actual is None else [])
    rows, status = [], 0
    for d in missing:
        print(f"tcast verify: {d}: no such file or directory", file=sys.stderr)
        rows.append((str(d), "-", "-", "no such path"))
        status = 2
    everything = "all" in engines
    unavailable: set[str] = set()
    if everything:
        loaded = load_engines()
        engines = sorted(loaded.engines)
        # an engine that is installed (registered) but does not load is a failure, not an
        # absence: "every engine verified" must not hide it
        for name, why in loaded.failures.items():
            print(
                f"tcast verify: engine {name!r} is installed but failed to load: {why}",
                file=sys.stderr,
            )
            rows.append(("-", "-", name, "failed to load"))
            status = 2
    for d in dirs:
        try:
            lset = load(d)
        except TcastError as err:
            # a damaged set is reported; the other sets are still checked
            print(f"tcast verify: {err}", file=sys.stderr)
            rows.append((str(d), "-", "-", "damaged"))
            status = 2
            continue
        name = _set_label(lset)
        sources = (
            [("actual", None)] if args.actual is not None else [("engine", e) for e in engines]
        )
        for kind, eng in sources:
            label = str(args.actual) if kind == "actual" else eng
            if eng in unavailable:
                continue
            try:
                observed = (
                    read_actual(args.actual, lset, args.ignore_flags)
                    if kind == "actual"
                    else engine_columns(lset, eng, quiet=args.quiet, device=args.device)
                )
                bad, compared = compare_set(
                    lset,
                    observed,
                    strict_nan=args.strict_nan,
                    ignore_flags=args.ignore_flags,
                    quiet=args.quiet,
                )
            except EngineRefusesError as err:
                if everything:
                    # 'all': an engine that does not implement the set's datatype says so in
                    # supports(); reported, not a failure (a named engine is a failure)
                    print(f"tcast verify: {d}: {label}: not supported: {err}", file=sys.stderr)
                    rows.append((name, lset.lines, label, "not supported"))
                    continue
                print(f"tcast verify: {d}: {label}: {err}", file=sys.stderr)
                rows.append((name, lset.lines, label, "unusable"))
                status = 2
                continue
            except EngineUnavailableError as err:
                if everything and args.device is None:
                    # 'all' means every engine this machine can run: an engine for hardware
                    # that is absent is reported once, not counted as a failure
                    print(f"tcast verify: not run: {err}{_run_here(eng)}", file=sys.stderr)
                    rows.append(("-", "-", eng, "no device here"))
                    unavailable.add(eng)
                    continue
                print(f"tcast verify: {d}: {label}: {err}{_run_here(eng)}", file=sys.stderr)
                rows.append((name, lset.lines, label, "unusable"))
                status = 2
                continue
            except TcastError as err:
                # a results file's errors name it already: its path is said once
                said = kind == "actual" and str(err).startswith(label)
                where = f"{d}: " if said else f"{d}: {label}: "
                print(f"tcast verify: {where}{err}", file=sys.stderr)
                rows.append((name, lset.lines, label, "unusable"))
                status = 2
                continue
            if not compared:  # a check of nothing must not read as a pass
                print(
                    f"tcast verify: {d}: {label}: no output word was compared "
                    f"({lset.lines} cases): the set checks nothing",
                    file=sys.stderr,
                )
                rows.append((name, lset.lines, label, "nothing compared"))
                status = 2
                continue
            if bad:
                status = max(status, 1)
                print(
                    f"{d}: {label}: {len(bad)} of {compared} output words differ "
                    f"(in {len({m.line for m in bad})} of {lset.lines} cases)"
                )
                for text in report(lset, bad, args.max_errors):
                    print("  " + text)
                if len(bad) > args.max_errors:
                    print(f"  ... {len(bad) - args.max_errors} more")
            elif not args.quiet:
                print(f"{d}: {label}: all {compared} output words of {lset.lines} cases match")
            rows.append((name, lset.lines, label, str(len(bad))))
    if len(rows) > 1 or args.quiet:
        _table(rows)
    if everything:
        print(_engines_line(engines, unavailable, rows))
    return status


#: How to run an engine on a machine without its hardware, by engine name.
_RUN_HERE = {
    "triton": "Triton's interpreter runs its kernels on the CPU (slowly): "
    "TRITON_INTERPRET=1 tcast verify ... --engine triton",
}


def _run_here(engine: str | None) -> str:
    """``"; <how to run it here>"`` for an engine that has a way, else ``""``."""
    hint = _RUN_HERE.get(engine or "")
    return f"; {hint}" if hint else ""


def _engines_line(engines: list[str], unavailable: set[str], rows: list[tuple]) -> str:
    """The last line of ``--engine all``: which engines were verified, which could not run."""
    failed = [r[2] for r in rows if r[3] == "failed to load"]
    verified = [e for e in engines if e not in unavailable]
    parts = [f"engines verified: {', '.join(verified) or 'none'}"]
    if unavailable:
        parts.append(f"not run on this machine: {', '.join(sorted(unavailable))}")
    if failed:
        parts.append(f"failed to load: {', '.join(failed)}")
    return "; ".join(parts)


def _golden_sets(dirs: list[Path]) -> tuple[list[Path], list[Path]]:
    """The sets to check, and the paths that do not exist.

    A directory without a ``header.json`` whose subdirectories hold sets (the ``--out`` of
    ``tcast golden --core``) stands for those sets, in name order; any other path for itself
    (``load`` says what is wrong with it).
    """
    sets, missing = [], []
    for d in dirs:
        if not d.exists():
            missing.append(d)
        elif d.is_dir() and not (d / "header.json").exists():
            inner = sorted(p for p in d.iterdir() if (p / "header.json").is_file())
            sets += inner or [d]
        else:
            sets.append(d)
    return sets, missing


def _set_label(lset: LoadedSet) -> str:
    """The datatype name, with every option that differs from the defaults.

    Built from the settings that loading checked, so a set cannot print what it likes.
    """
    st = lset.settings()
    opts = [
        v
        for v, default in (
            (st.castmode.value, "actual"),
            (st.roundmode.value, "even"),
            (st.scalemode.value, "floor"),
            (st.input_dtype, "float32"),
            (f"level {st.level}", "level 1"),
        )
        if v != default
    ]
    if not st.saturate:
        opts.append("ieee-overflow")
    if st.seed:
        opts.append(f"seed {st.seed}")
    if st.transform is not None:
        opts.append(f"RHT-{st.transform.size}")
    name = lset.header["datatype"]["name"]  # checked to name the set's datatype
    return f"{name} ({', '.join(opts)})" if opts else name


def _table(rows: list[tuple]) -> None:
    head = ("datatype", "cases", "engine/results", "mismatches")
    cells = [head, *[tuple(str(c) for c in r) for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(4)]
    for i, r in enumerate(cells):
        print(
            "  ".join(
                c.ljust(w) if j != 1 else c.rjust(w)
                for j, (c, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
        )
        if i == 0:
            print("  ".join("-" * w for w in widths))
