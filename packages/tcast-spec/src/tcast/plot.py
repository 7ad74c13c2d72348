"""Pictures of formats: values on the number line, rounding error, a golden set's coverage.

Needs matplotlib (``pip install "tcast-spec[plot]"``), imported only when a picture is
drawn: ``import tcast`` never imports it. Every function returns a
:class:`matplotlib.figure.Figure` drawn with the Agg canvas (no display needed); save it with
``fig.savefig("file.png")``. The numbers come from the exact model (:mod:`tcast.exact`), so
no engine is needed, except that :func:`coverage` reads a golden set with tcast-ref.

The same pictures from the command line::

    tcast plot values e4m3fn --out e4m3fn.png [--scale auto|linear|log]
    tcast plot error mxfp4 nvfp4 mxfp8 --out error.png [--points N] [--amax A]
    tcast plot coverage tests/golden/mxfp8 --out coverage.png

The drawn data can be read back from the figure: each class of :func:`values` is one
scatter collection with ``gid`` ``values:<class>``, each curve of :func:`errors` one line
with ``gid`` ``error:<label>``, and the panels of :func:`coverage` carry the ``gid``
``coverage:classes``, ``coverage:positions``, ``coverage:codes`` and ``coverage:scales``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._plot_coverage import Coverage, coverage_data, load_set
from ._plot_errors import error_curve
from ._plot_values import CLASSES, Special, element_of, resolve, special_codes, value_rows
from ._text import quote
from .codebook import CodebookSpec
from .datatype import DataType
from .errors import SpecError, TcastError, UnsupportedError
from .number import NumberSpec

if TYPE_CHECKING:  # for annotations only: matplotlib is imported when a picture is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["coverage", "errors", "register", "values"]

#: One colour per value class (colour-blind safe, Okabe-Ito).
_COLORS = {
    "zero": "#000000",
    "subnormal": "#E69F00",
    "normal": "#0072B2",
    "value": "#0072B2",
    "max": "#CC79A7",
    "unproduced": "#999999",
    "inf": "#D55E00",
    "nan": "#D55E00",
}
_INPUT_COLOR = "#009E73"
#: A value range wider than this ratio is drawn on a logarithmic axis by ``scale="auto"``.
_LOG_RATIO = 2**10
_SCALES = ("auto", "linear", "log")
_INSTALL = 'pip install "tcast-spec[plot]"'

Format = str | NumberSpec | CodebookSpec | DataType


def _new_figure(width: float, height: float) -> Figure:
    """A matplotlib Figure on the Agg canvas (headless)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise UnsupportedError(f"tcast.plot needs matplotlib ({err}): {_INSTALL}") from None
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _hex(code: int, bits: int) -> str:
    return f"0x{code:0{(bits + 3) // 4}X}"


def _codes_text(codes: Sequence[int], bits: int) -> str:
    if len(codes) <= 4:
        return ", ".join(_hex(c, bits) for c in codes)
    return f"{_hex(codes[0], bits)} .. {_hex(codes[-1], bits)} ({len(codes)} codes)"


def _axis_scale(spec: NumberSpec | CodebookSpec, scale: str, positive: list[float]) -> str:
    if scale not in _SCALES:
        raise SpecError(f"scale must be one of {', '.join(_SCALES)}, got {quote(scale)}")
    if scale == "auto":
        wide = max(positive) / min(positive) > _LOG_RATIO
        scale = "log" if wide or getattr(spec, "is_exponent", False) else "linear"
    return scale


def values(fmt: Format, ax: Axes | None = None, scale: str = "auto") -> Figure:
    """Draw every finite value of a format on the number line.

    Each distinct value is one tick, coloured by its class (zero, subnormal, normal, max;
    ``value`` for integers, exponent types and codebook entries; ``unproduced`` for the
    -2**(K-1) code of intK); the codes of +-Inf and NaN are named in a box, with arrows to
    the ends of the axis for the infinities. A codebook draws one row per mapping.

    Args:
        fmt: a number code of at most 16 bits (``e2m1f``, ``e4m3fn``, ``int8``, ``e8m0``,
            ``bfloat16``), a codebook (``cb41fi_e2m2fnuz``), or a datatype, whose element
            format's own values are drawn (an intK element as integers, not as the fixed
            point it stands for under a power-of-two scale), as a code, catalog name or
            spec object.
        ax: the matplotlib Axes to draw into (default: a new figure).
        scale: ``linear``, ``log`` (symmetric log around 0, linear below the smallest
            positive value) or ``auto`` (log when the largest value exceeds 1024 times the
            smallest positive one).

    Returns:
        The Figure.

    Raises:
        SpecError: for a bad format or scale.
        UnsupportedError: without matplotlib, or for a number format wider than 16 bits.
    """
    resolved = resolve(fmt)
    spec = element_of(resolved)
    rows = value_rows(spec)
    specials = special_codes(spec)
    positive = sorted({float(v) for r in rows for v, _ in r.points if v > 0})
    axis = _axis_scale(spec, scale, positive)
    if ax is None:
        fig = _new_figure(10, 1.9 + 0.4 * len(rows))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    for cls in CLASSES:
        pts = [(float(v), r.mapping) for r in rows for v, c in r.points if c == cls]
        if pts:
            xs, ys = zip(*pts, strict=True)
            ax.scatter(
                xs, ys, marker="|", s=220, linewidths=1.1, color=_COLORS[cls],
                label=f"{cls} ({len(pts)})", gid=f"values:{cls}",
            )  # fmt: skip
    if axis == "log":
        if min(float(v) for r in rows for v, _ in r.points) > 0:
            ax.set_xscale("log", base=2)
        else:
            ax.set_xscale("symlog", base=2, linthresh=positive[0], linscale=0.5)
    _annotate_specials(ax, spec, specials)
    ax.set_ylim(-0.8, len(rows) - 0.2)
    if isinstance(spec, CodebookSpec):
        ax.set_yticks(range(len(rows)), [f"mapping {r.mapping}" for r in rows])
    else:
        ax.set_yticks([])
    count = sum(len(r.points) for r in rows)
    name = f"{resolved.name}: element {spec.code}" if isinstance(resolved, DataType) else spec.code
    what = "entries" if isinstance(spec, CodebookSpec) else "distinct finite values"
    ax.set_title(f"{name}: {count} {what}, max {spec.maxfloat:g} ({axis} axis)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=8, frameon=False)
    return fig


def _annotate_specials(ax: Axes, spec: NumberSpec | CodebookSpec, specials: list[Special]) -> None:
    """Name the Inf and NaN codes; point at the axis ends for the infinities."""
    lines = []
    for s in specials:
        lines.append(f"{s.name}: {_codes_text(s.codes, spec.bits)}")
        if s.name.endswith("Inf"):
            right = s.name.startswith("+")
            ax.annotate(
                s.name, xy=(1.0 if right else 0.0, 0), xycoords=("axes fraction", "data"),
                xytext=(-28 if right else 28, 18), textcoords="offset points",
                ha="center", color=_COLORS["inf"], arrowprops={"arrowstyle": "->",
                "color": _COLORS["inf"]}, gid=f"values:{s.name}",
            )  # fmt: skip
    if lines:
        ax.text(
            0.01, 0.95, "\n".join(lines), transform=ax.transAxes, va="top", fontsize=8,
            bbox={"boxstyle": "round", "fc": "white", "ec": "0.7"}, gid="values:specials",
        )  # fmt: skip


def errors(
    fmts: Sequence[Format] | Format,
    points: int = 1000,
    amax: float | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Draw the relative error ``|q(x) - x| / |x|`` of round-to-nearest-even casts.

    Magnitudes are log-spaced over each format's range (a quarter of its smallest positive
    value up to twice its maximum), plus every value and midpoint of formats of at most 8
    bits, so each curve touches 0 at the format's values and peaks at the ties. Casts
    saturate: above the maximum the error grows toward 1. A scaled datatype is drawn
    within one block at a fixed scale: each ``x`` is cast by :func:`tcast.exact.cast_block`
    together with the block amax ``A`` (by default the element maximum ``M``, so the scale
    is 1 and the curve is the element format's; another ``A`` shows where that block's
    scale rule puts the element grid), ``x`` up to ``A``. A dashed line marks ``2**-(m+1)``,
    the largest relative error in the normal range of a float element with ``m`` mantissa
    bits.

    Args:
        fmts: one format or several (number codes, catalog names, datatype codes, specs).
        points: log-spaced magnitudes per format (at least 2).
        amax: the block amax of scaled datatypes (a positive number, rounded to float32).
        ax: the matplotlib Axes to draw every curve into (default: a new figure with one
            panel per format, side by side on the same axes).

    Returns:
        The Figure.

    Raises:
        SpecError: for a bad format, ``points`` or ``amax`` (or ``amax`` with an unscaled
            format).
        UnsupportedError: without matplotlib, or for a bare codebook (plot a scaled
            datatype that uses it).
    """
    many = [fmts] if isinstance(fmts, str | NumberSpec | CodebookSpec | DataType) else fmts
    if not many:
        raise SpecError("errors() needs at least one format")
    curves = [error_curve(resolve(f), points, amax) for f in many]
    if ax is None:  # side by side: one panel per format, sharing both axes
        fig = _new_figure(10, 0.9 + 1.5 * len(curves))
        axes = list(fig.subplots(len(curves), 1, sharex=True, sharey=True, squeeze=False)[:, 0])
    else:  # one given Axes: the curves on top of each other
        fig = ax.figure
        axes = [ax] * len(curves)
    # Scaled datatypes alone: x relative to the block amax, so every block's top is at 1.
    relative = all(c.amax is not None for c in curves)
    for i, (c, a) in enumerate(zip(curves, axes, strict=True)):
        color = f"C{i}"
        xs = [x / c.amax for x in c.xs] if relative and c.amax else list(c.xs)
        a.plot(xs, c.errors, lw=0.6, color=color, label=c.label, gid=f"error:{c.label}")
        if c.bound is not None:
            a.axhline(c.bound, ls="--", lw=0.7, color=color, gid=f"bound:{c.label}")
        a.grid(alpha=0.3, which="major")
        a.legend(fontsize=8, loc="lower left")
    first, last = axes[0], axes[-1]
    first.set_xscale("log", base=2)
    first.set_yscale("log", base=2, nonpositive="mask")  # exact values (error 0) leave gaps
    # The dips toward the exact values go as deep as the sampling happens to come: cut them
    # off a few binades below the smallest bound, where they say nothing.
    bounds = [c.bound for c in curves if c.bound is not None]
    positive = [e for c in curves for e in c.errors if e > 0]
    if positive:
        floor = min(bounds) / 16 if bounds else min(positive)
        first.set_ylim(max(floor, min(positive) / 2), 2.0)
    last.set_xlabel("|x| / block amax" if relative else "|x|")
    fig.supylabel("relative error |q(x) - x| / |x|", fontsize=10)
    first.set_title("Round to nearest even, saturating; dashed: 2^-(m+1)")
    return fig


def coverage(path: str | Path) -> Figure:
    """Draw what a golden set (``tcast golden``) exercises.

    Panels: the elements of each class (the outputs classified with the spec: zero,
    subnormal, normal, max, Inf, NaN, ...; then the inputs: zero, beyond the maximum at the
    line's scale, Inf, NaN, pruned by sparsity); tile sets: the same classes at each element
    position of a tile; unscaled sets: how often each code of the element format is an
    output; scaled sets: the lines at each scale exponent. Absent elements of partial tiles
    are left out. Needs tcast-ref, whose reader checks the set first.

    Args:
        path: the set's directory.

    Returns:
        The Figure.

    Raises:
        SpecError: if ``path`` is not a path.
        UnsupportedError: without matplotlib or tcast-ref.
        TcastError: for a missing, damaged or edited set.
    """
    if not isinstance(path, str | PathLike):
        raise SpecError(f"a golden set is a directory path, not {quote(path)}")
    data = coverage_data(load_set(path))
    middle = data.positions is not None or data.code_hits is not None
    panels = 1 + middle + (data.scale_exponents is not None)
    fig = _new_figure(10, 2.9 * panels + 0.3)
    axes = fig.subplots(panels, 1, squeeze=False)[:, 0]
    fig.suptitle(data.title)
    _class_panel(axes[0], data)
    k = 1
    if data.positions is not None:
        _positions_panel(fig, axes[k], data.positions)
        k += 1
    elif data.code_hits is not None:
        _codes_panel(axes[k], data.code_hits, data.output_of)
        k += 1
    if data.scale_exponents is not None:
        _scales_panel(axes[k], data.scale_exponents)
    return fig


def _class_panel(ax: Axes, data: Coverage) -> None:
    names = list(data.classes)
    counts = [data.classes[n] for n in names]
    colors = [_COLORS.get(n, _INPUT_COLOR) for n in names]
    bars = ax.barh(names, counts, color=colors, gid="coverage:classes")
    ax.bar_label(bars, [str(c) if c else "none" for c in counts], padding=3, fontsize=7)
    ax.invert_yaxis()
    if max(counts) > 0:
        ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel(f"elements (outputs: {data.output_of}; green: inputs)")
    ax.tick_params(axis="y", labelsize=8)


def _positions_panel(fig: Figure, ax: Axes, positions: dict[str, list[int]]) -> None:
    names = [n for n, row in positions.items() if any(row)]
    matrix = [[math.log10(1 + c) for c in positions[n]] for n in names]
    image = ax.imshow(matrix, aspect="auto", cmap="viridis", interpolation="nearest")
    image.set_gid("coverage:positions")
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xlabel("element position in the tile (C order)")
    fig.colorbar(image, ax=ax, label="log10(1 + elements)")


def _codes_panel(ax: Axes, hits: list[int], output_of: str) -> None:
    ax.bar(range(len(hits)), hits, width=1.0, color=_COLORS["normal"], gid="coverage:codes")
    ax.set_yscale("symlog", linthresh=1)
    missed = sum(1 for h in hits if not h)
    ax.set_xlabel(f"code ({output_of}); {missed} of {len(hits)} codes never an output")
    ax.set_xlim(-0.5, len(hits) - 0.5)


def _scales_panel(ax: Axes, exps: dict[int | str, int]) -> None:
    numeric = {k: v for k, v in exps.items() if isinstance(k, int)}
    ax.bar(list(numeric), list(numeric.values()), width=0.9, color="#56B4E9", gid="coverage:scales")
    other = ", ".join(f"{k} scale: {v} lines" for k, v in exps.items() if isinstance(k, str))
    ax.set_xlabel("scale exponent floor(log2(scale))" + (f"; {other}" if other else ""))
    ax.set_ylabel("lines")


# ---------------------------------------------------------------- command line
def _save(fig: Figure, out: str, dpi: int) -> None:
    """Write ``fig`` to exactly ``out``: its extension picks the format, PNG without one."""
    kind = Path(out).suffix.lstrip(".").lower() or "png"
    try:
        fig.savefig(out, dpi=dpi, format=kind)
    except OSError as err:
        raise TcastError(f"cannot write {quote(out)}: {err.strerror or err}") from None
    except ValueError as err:  # an extension matplotlib has no writer for
        raise SpecError(f"cannot write {quote(out)}: {err}; name a .png file") from None


def _cmd_plot(args: argparse.Namespace) -> int:
    if args.picture == "values":
        fig = values(args.format, scale=args.scale)
    elif args.picture == "error":
        fig = errors(args.formats, points=args.points, amax=args.amax)
    else:
        fig = coverage(args.set)
    _save(fig, args.out, args.dpi)
    print(f"wrote {args.out}")
    return 0


def _int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: an integer from ``lo`` to ``hi``."""

    def check(text: str) -> int:
        if not text.isdigit() or len(text) > len(str(hi)) or not lo <= int(text) <= hi:
            raise argparse.ArgumentTypeError(f"{quote(text)} is not an integer from {lo} to {hi}")
        return int(text)

    return check


def register(subparsers: Any) -> None:
    """Add the ``plot`` subcommand to the ``tcast`` command line.

    Args:
        subparsers: the ``argparse`` subparsers action of the ``tcast`` parser.
    """
    p = subparsers.add_parser(
        "plot",
        help="draw a format's values, rounding errors, or a golden set's coverage (PNG)",
        description=(
            "Draw a picture into a PNG file with matplotlib (pip install "
            '"tcast-spec[plot]"). values: every finite value of a format on the number line; '
            "error: relative error of round-to-nearest-even casts across magnitudes; "
            "coverage: what a golden set (tcast golden) exercises (needs tcast-ref)."
        ),
    )
    pictures = p.add_subparsers(dest="picture", metavar="PICTURE", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", required=True, metavar="FILE.png", help="the file to write")
    common.add_argument(
        "--dpi", type=_int_in(10, 600), default=100, help="dots per inch, 10..600 (default 100)"
    )
    v = pictures.add_parser(
        "values", parents=[common], help="every finite value of a format on the number line"
    )
    v.add_argument("format", metavar="FORMAT", help="a number code (<= 16 bits) or datatype")
    v.add_argument("--scale", choices=_SCALES, default="auto", help="axis (default auto)")
    e = pictures.add_parser(
        "error", parents=[common], help="relative rounding error across magnitudes"
    )
    e.add_argument("formats", nargs="+", metavar="FORMAT", help="number codes or datatypes")
    e.add_argument(
        "--points",
        type=_int_in(2, 100_000),
        default=1000,
        help="log-spaced magnitudes per format, 2..100000 (default 1000)",
    )
    e.add_argument("--amax", type=float, help="scaled datatypes: the block amax (default: M)")
    c = pictures.add_parser(
        "coverage", parents=[common], help="which value classes a golden set exercises"
    )
    c.add_argument("set", metavar="DIR", help="a golden set's directory (tcast golden --out)")
    p.set_defaults(func=_cmd_plot)
