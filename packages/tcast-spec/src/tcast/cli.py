"""The ``tcast`` command line.

Usage::

    tcast info NAME_OR_CODE   # a catalog name, number code, datatype code pair or scale code
    tcast info --catalog      # every named datatype, then the names not supported yet
    tcast conformance --engine NAME [--tier smoke|fast|full] [--datatypes GLOB]
                      [--device DEV] [--jobs N] [--report FILE.json|FILE.md] [--quiet]
    tcast plot values|error|coverage ... --out FILE.png   # pictures (needs matplotlib)
    tcast --version           # tcast-spec's version and each installed engine's wheel

``tcast info X`` resolves ``X`` in this order: a catalog name or alias
(``mxfp4``), a number code (``e4m3fn``, ``int8``, ``e8m0``, ``binary8p3``,
``torch.float8_e4m3fnuz``), a datatype code pair (``e2m1f_e8m0_t32``), a scale
code (``e8m0_t32``). It prints every field of the format, its bit layout, its
range and, for formats of at most 8 bits, a table of every code with its exact
value. Output is deterministic. A bad name prints the error to stderr and exits
with status 2.

Plugins: other packages add subcommands through the ``tcast.commands``
entry-point group. Each entry point loads a callable ``register(subparsers)``
that adds one subparser to the ``argparse`` subparsers action it is given and
binds its handler with ``set_defaults(func=handler)``; the handler takes the
parsed ``argparse.Namespace`` and returns the exit status. tcast-ref plugs its
``golden`` and ``verify`` commands in this way::

    [project.entry-points."tcast.commands"]
    golden = "tcast_ref.cli:register_golden"

A plugin that fails to load or register is reported on stderr and skipped; it
never hides ``tcast info``. Without tcast-ref, ``tcast golden`` and ``tcast verify`` still
exist and say which wheel to install.

Warnings of tcast (a name that looks like a torch/ml_dtypes format but means another) print
as ``tcast COMMAND: warning: ...`` on stderr; ``tcast info`` prints them as notes instead.

``tcast conformance`` checks installed engines against the reference (docs/conformance.md).
Its machinery needs NumPy, so it lives in ``tcast_ref.conformance`` and is imported only
when the command runs: without tcast-ref the command says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any, NoReturn

from ._lookalike import lookalike_notes
from ._lookup import datatype, known_names, resolve_name
from ._similar import did_you_mean
from ._text import QUOTE_LIMIT, quote
from ._version import __version__
from .catalog import ALIASES, CATALOG, DESCRIPTIONS, NOT_YET_SUPPORTED, PREVIEW_CATALOG
from .codebook import CodebookSpec
from .datatype import DataType
from .engine import ENTRY_POINT_GROUP as _ENGINES_GROUP
from .errors import NameWarning, SpecError, TcastError, TcastWarning, UnsupportedError
from .exact import decode
from .number import NAMES, Kind, NumberSpec, Style, number
from .plot import register as register_plot
from .scale import ScaleSpec, TileSpec, scale

__all__ = [
    "COMMAND_GROUP",
    "build_parser",
    "catalog_text",
    "format_value",
    "info_text",
    "main",
    "nan_code_ranges",
    "number_summary",
    "primary_names",
    "tile_summary",
    "version_text",
]

#: The entry-point group that plugin subcommands register under.
COMMAND_GROUP = "tcast.commands"

_STYLE_WORDS = {
    Style.IEEE: (
        "IEEE 754 (no suffix): Inf = exponent all-ones with mantissa 0, NaN = exponent "
        "all-ones with mantissa != 0; has -0"
    ),
    Style.FN: "fn: no Inf; NaN = the all-ones magnitude (both signs); has -0",
    Style.FNUZ: "fnuz: no Inf, no -0; the -0 code (sign bit only) is the single NaN",
    Style.UZ: (
        "uz (IEEE P3109): Inf = the all-ones magnitudes (+Inf, -Inf); NaN = the -0 code; no -0"
    ),
    Style.FINITE: "f (finite-only): no Inf, no NaN, every code is a number; has -0",
}

_KIND_WORDS = {
    Kind.FLOAT: "float (signed minifloat)",
    Kind.EXPONENT: "exponent (unsigned power-of-two exponent type)",
    Kind.INT: "int (signed, symmetric two's complement)",
    Kind.UINT: "uint (unsigned integer)",
}

_INDENT = "  "


# ------------------------------------------------------------------ formatting
def format_value(v: float) -> str:
    """Format a value exactly and deterministically.

    NaN is ``NaN`` (``-NaN`` when the sign bit is set), infinities ``Inf`` and
    ``-Inf``, zeros ``0`` and ``-0``, integers below 2**53 without a fraction.
    Other values use Python's shortest repr when that repr is the exact value,
    else the repr followed by the exact dyadic form, e.g.
    ``5.877471754111438e-39 (= 2^-127)``.

    Args:
        v: the value (every tcast value is a dyadic rational, so a float holds it).

    Returns:
        The text.
    """
    if math.isnan(v):
        return "-NaN" if math.copysign(1.0, v) < 0 else "NaN"
    if math.isinf(v):
        return "-Inf" if v < 0 else "Inf"
    if v == 0:
        return "-0" if math.copysign(1.0, v) < 0 else "0"
    if v.is_integer() and abs(v) < 2**53:
        return str(int(v))
    text = repr(v)
    if Decimal(text) == Decimal(v):
        return text
    num, den = v.as_integer_ratio()
    exp = -(den.bit_length() - 1)
    while num % 2 == 0:
        num //= 2
        exp += 1
    dyadic = f"2^{exp}" if num == 1 else f"-2^{exp}" if num == -1 else f"{num}*2^{exp}"
    return f"{text} (= {dyadic})"


def _hex(code: int, bits: int) -> str:
    return f"0x{code:0{(bits + 3) // 4}X}"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _fields(lines: Iterable[tuple[str, str]], indent: str = "") -> list[str]:
    rows = list(lines)
    width = max(len(k) for k, _ in rows) + 1
    return [f"{indent}{k + ':':<{width}} {v}" for k, v in rows]


# --------------------------------------------------------------- number specs
def nan_code_ranges(spec: NumberSpec) -> list[tuple[int, int]]:
    """Every NaN code of a format, as inclusive ``(first, last)`` ranges in code order.

    Args:
        spec: the number spec.

    Returns:
        The ranges (empty when the format has no NaN).
    """
    if not spec.has_nan:
        return []
    if spec.kind is Kind.EXPONENT:
        assert spec.nan_code is not None
        return [(spec.nan_code, spec.nan_code)]
    sign = spec.sign_bit
    allones = (1 << (spec.ebits + spec.mbits)) - 1
    if spec.style is Style.IEEE:
        assert spec.inf_code is not None
        lo = spec.inf_code + 1
        return [(lo, allones), (sign | lo, sign | allones)]
    if spec.style is Style.FN:
        return [(allones, allones), (sign | allones, sign | allones)]
    return [(sign, sign)]


def _ranges_text(spec: NumberSpec, ranges: list[tuple[int, int]]) -> str:
    if not ranges:
        return "none"
    parts = []
    for lo, hi in ranges:
        if lo == hi:
            parts.append(_hex(lo, spec.bits))
        else:
            parts.append(f"{_hex(lo, spec.bits)}..{_hex(hi, spec.bits)} ({hi - lo + 1} codes)")
    return ", ".join(parts)


def _inf_text(spec: NumberSpec) -> str:
    if spec.inf_code is None:
        return "none"
    pos = spec.inf_code
    return f"+Inf {_hex(pos, spec.bits)}, -Inf {_hex(pos | spec.sign_bit, spec.bits)}"


def _layout(spec: NumberSpec) -> str:
    if spec.kind is Kind.FLOAT:
        fields = ["S", "E" * spec.ebits] + (["M" * spec.mbits] if spec.mbits else [])
        return (
            f"{' '.join(fields)}  (sign 1 + exponent {spec.ebits} + mantissa {spec.mbits} "
            f"= {spec.bits} bits)"
        )
    if spec.kind is Kind.EXPONENT:
        return f"{'E' * spec.ebits}  (exponent {spec.ebits} bits, no sign, no mantissa)"
    if spec.kind is Kind.INT:
        return f"S {'I' * (spec.bits - 1)}  (two's complement, {spec.bits} bits)"
    return f"{'I' * spec.bits}  (unsigned, {spec.bits} bits)"


def _style_text(spec: NumberSpec) -> str:
    if spec.kind is Kind.FLOAT:
        return _STYLE_WORDS[spec.style]
    if spec.kind is Kind.EXPONENT:
        return (
            "code c is 2^(c - bias); the all-ones code is NaN; no sign, no zero, no Inf "
            "(as OCP e8m0)"
        )
    if spec.kind is Kind.INT:
        low = _hex(1 << (spec.bits - 1), spec.bits)
        return (
            f"symmetric: encode gives -maxint..maxint; the code {low} "
            f"(-2^{spec.bits - 1}) decodes but is never produced; no Inf, no NaN"
        )
    return "unsigned binary integer; no Inf, no NaN"


def number_summary(spec: NumberSpec) -> str:
    """One line that says what a number spec is: ``e2m1f (float, 4 bits, ...)``.

    Args:
        spec: the number spec.

    Returns:
        The summary.
    """
    if spec.kind is Kind.FLOAT:
        style = spec.style.suffix or "ieee"
        return (
            f"{spec.code} (float, {spec.bits} bits = 1 sign + {spec.ebits} exponent + "
            f"{spec.mbits} mantissa, bias {spec.bias}, style {style}, "
            f"max {format_value(spec.maxfloat)})"
        )
    if spec.kind is Kind.EXPONENT:
        return (
            f"{spec.code} (exponent type, {spec.bits} bits, bias {spec.bias}, "
            f"2^{spec.emin} .. 2^{spec.emax}, NaN {_hex(spec.nan_code or 0, spec.bits)})"
        )
    if spec.kind is Kind.INT:
        return f"{spec.code} (signed int, {spec.bits} bits, {spec.minint} .. {spec.maxint})"
    return f"{spec.code} (unsigned int, {spec.bits} bits, 0 .. {spec.maxint})"


def _number_fields(spec: NumberSpec) -> list[tuple[str, str]]:
    rows = [
        ("code", spec.code),
        ("kind", _KIND_WORDS[spec.kind]),
        ("style", _style_text(spec)),
        ("layout", _layout(spec)),
        ("bits", str(spec.bits)),
        ("ebits", str(spec.ebits)),
        ("mbits", str(spec.mbits)),
        ("bias", str(spec.bias)),
        ("emax", str(spec.emax)),
        ("emin", str(spec.emin)),
        ("maxfloat", format_value(spec.maxfloat)),
        ("smallest_normal", format_value(spec.smallest_normal)),
        ("smallest_subnormal", format_value(spec.smallest_subnormal)),
        ("eps", format_value(spec.eps)),
        ("midmax", format_value(spec.midmax)),
        ("maxint", str(spec.maxint)),
        ("minint", str(spec.minint)),
        ("has_inf", _yes(spec.has_inf)),
        ("has_nan", _yes(spec.has_nan)),
        ("has_negzero", _yes(spec.has_negzero)),
        ("nan_code", "none" if spec.nan_code is None else _hex(spec.nan_code, spec.bits)),
        ("nan_codes", _ranges_text(spec, nan_code_ranges(spec))),
        ("inf_codes", _inf_text(spec)),
    ]
    return rows


def _binary(code: int, spec: NumberSpec) -> str:
    text = f"{code:0{spec.bits}b}"
    if spec.kind is Kind.FLOAT:
        parts = [text[:1], text[1 : 1 + spec.ebits]]
        if spec.mbits:
            parts.append(text[1 + spec.ebits :])
        return "|".join(parts)
    if spec.kind is Kind.INT:
        return f"{text[:1]}|{text[1:]}"
    return text


def _code_note(code: int, spec: NumberSpec) -> str:
    if spec.kind is Kind.INT:
        return "never produced by encode" if code == 1 << (spec.bits - 1) else ""
    if spec.kind is Kind.EXPONENT:
        if code == spec.max_code:
            return "max"
        return "min" if code == 0 else ""
    if spec.kind is Kind.UINT:
        return ""
    if spec.nan_code is not None and code == spec.nan_code:
        return "canonical NaN"
    mag = code & (spec.sign_bit - 1)
    if any(lo <= code <= hi for lo, hi in nan_code_ranges(spec)) or mag > spec.max_code:
        return ""
    if mag == spec.max_code:
        return "max"
    if mag == 1 << spec.mbits:
        return "smallest normal"
    if mag == 1 and spec.mbits:
        return "smallest subnormal"
    return ""


def _code_table(spec: NumberSpec) -> list[str]:
    count = 1 << spec.bits
    header = f"codes ({count}): code, bits"
    header += " (sign|exponent|mantissa)" if spec.kind is Kind.FLOAT else ""
    header += " (sign|low bits, two's complement)" if spec.kind is Kind.INT else ""
    rows = []
    for code in range(count):
        note = _code_note(code, spec)
        cells = [_hex(code, spec.bits), _binary(code, spec), format_value(decode(code, spec))]
        rows.append((cells, note))
    widths = [max(len(cells[i]) for cells, _ in rows) for i in range(2)]
    out = [header + ", value"]
    for cells, note in rows:
        line = f"{_INDENT}{cells[0]:<{widths[0]}}  {cells[1]:<{widths[1]}}  {cells[2]}"
        if note:
            line += f"  [{note}]"
        out.append(line)
    return out


def _number_block(spec: NumberSpec, indent: str = "") -> list[str]:
    out = _fields(_number_fields(spec), indent)
    if spec.bits <= 8:
        out += [indent + line for line in _code_table(spec)]
    return out


# ------------------------------------------------------------------ datatypes
def _tile_parts(tile: TileSpec) -> str:
    text = "channel (the whole dimension)" if tile.is_channel else f"{tile.size} elements"
    if tile.subtile:
        text += f", subtile {tile.subtile}"
    if tile.offset:
        text += f", a {tile.offset}-bit exponent offset per subtile"
    if tile.is_sparse:
        text += f", sparsity: keep the {tile.sparse_n} largest of every {tile.sparse_m}"
    return text


def _tile_dims(sspec: ScaleSpec) -> list[int]:
    defaults = (-1,) if len(sspec.tiles) == 1 else (-2, -1)
    return [d if t.dim is None else t.dim for t, d in zip(sspec.tiles, defaults, strict=False)]


def tile_summary(sspec: ScaleSpec) -> str:
    """Say over which elements one scale is shared, e.g. ``32 along dim -1``.

    Args:
        sspec: the scale spec.

    Returns:
        ``tensor`` for one scale per tensor, else one part per tile segment
        (``32 along dim -1``, ``channel (whole dim -1)``) joined by `` x ``.
    """
    if sspec.is_tensor:
        return "tensor"
    parts = []
    for tile, dim in zip(sspec.tiles, _tile_dims(sspec), strict=True):
        extras = []
        if tile.subtile:
            extras.append(f"subtile {tile.subtile}")
        if tile.offset:
            extras.append(f"{tile.offset}-bit offset")
        if tile.is_sparse:
            extras.append(f"keep {tile.sparse_n} of {tile.sparse_m}")
        extra = f" ({', '.join(extras)})" if extras else ""
        if tile.is_channel:
            parts.append(f"channel (whole dim {dim}){extra}")
        else:
            parts.append(f"{tile.size}{extra} along dim {dim}")
    return " x ".join(parts)


def _tile_lines(sspec: ScaleSpec, indent: str) -> list[str]:
    if sspec.is_tensor:
        return [f"{indent}tiles: none: one scale for the whole tensor"]
    kind = "2-D" if sspec.is_2d else "1-D"
    out = [f"{indent}tiles: {kind}: {tile_summary(sspec)}"]
    for tile, dim in zip(sspec.tiles, _tile_dims(sspec), strict=True):
        out.append(f"{indent}{_INDENT}dim {dim}: {_tile_parts(tile)} ({tile.code})")
    return out


def _scale_lines(sspec: ScaleSpec, data: NumberSpec | None, indent: str = "") -> list[str]:
    out = [
        f"{indent}scale: {sspec.code}",
        f"{indent}{_INDENT}scale number: {number_summary(sspec.scale)}",
    ]
    sub = indent + _INDENT
    second = sspec.second
    if data is None:
        if second is None:
            out.append(f"{sub}second number: none")
        else:
            out.append(
                f"{sub}second number: {number_summary(second)}: a zero point when the data "
                f"is uint, else a tensor scale over the tile scales"
            )
    elif data.is_uint:
        zp = "none" if second is None else number_summary(second)
        out.append(f"{sub}zero point: {zp}")
        out.append(f"{sub}{_INDENT}(the second number is a zero point because the data is uint)")
    elif second is None:
        out.append(f"{sub}tensor scale: none")
    else:
        out.append(f"{sub}tensor scale: {number_summary(second)}")
        out.append(
            f"{sub}{_INDENT}(the second number is a tensor scale over the tile scales because "
            f"the data is not uint)"
        )
    out += _tile_lines(sspec, sub)
    return out


def primary_names() -> list[str]:
    """The primary catalog names (no aliases), in catalog order."""
    return [name for name in CATALOG if name not in ALIASES]


def _aliases_of(name: str) -> list[str]:
    return [alias for alias, primary in ALIASES.items() if primary == name]


def _catalog_names_equal(dt: DataType) -> list[str]:
    return [name for name in primary_names() if CATALOG[name] == dt]


def _codebook_summary(cb: CodebookSpec) -> str:
    kind = f"implicit '{cb.desc}'" if cb.desc else f"given tables '{cb.label}'"
    return (
        f"{cb.code} (codebook, {kind}: {cb.bits}-bit indices into {cb.mappings} "
        f"mapping{'s' * (cb.mappings > 1)} of {1 << cb.bits} {cb.compute.code} values, "
        f"{cb.meta_bits} metadata bit{'s' * (cb.meta_bits != 1)}, max {format_value(cb.maxfloat)})"
    )


def _codebook_block(cb: CodebookSpec, indent: str = "") -> list[str]:
    """The compute format, then each mapping: one row per index (code in hex, value)."""
    out = [f"{indent}compute: {number_summary(cb.compute)}"]
    layout = "sign-magnitude (code s*2^(I-1)+k)" if cb.symmetric else "ascending"
    out.append(f"{indent}layout: {layout}")
    bits = cb.compute.bits
    for m in range(cb.mappings):
        out.append(f"{indent}mapping {m}: index, {cb.compute.code} code, value")
        out += [
            f"{indent}{_INDENT}{i:>3}  {_hex(cb.entry_code(m, i), bits)}  {format_value(v)}"
            for i, v in enumerate(cb.tables[m])
        ]
    return out


def _bit_layout_lines(dt: DataType) -> list[str]:
    """Bits per block and per value of a datatype with subtiles or a codebook."""
    s = dt.sspec
    if s is None or s.is_tensor or any(t.is_channel for t in s.tiles):
        return []  # the block is a whole tensor or dimension: no fixed bits per value
    block = math.prod(t.size for t in s.tiles)
    subtiles = math.prod(t.size // (t.subtile or t.size) for t in s.tiles)
    ebits = dt.nspec.bits
    total = s.scale.bits + dt.meta_bits * subtiles + block * ebits
    what = "offset" if s.offset_bits else "mapping"
    meta = f"{dt.meta_bits} {what} bit{'s' * (dt.meta_bits > 1)} per subtile x {subtiles}"
    rows = [
        ("element bits", str(ebits)),
        ("scale bits per tile", f"{s.scale.bits} (tile of {block})"),
        ("metadata", meta if dt.meta_bits else "none"),
        ("bits per value", f"{format_value(total / block)} = ({s.scale.bits} + "
         f"{dt.meta_bits} x {subtiles} + {block} x {ebits}) / {block}"),
    ]  # fmt: skip
    if dt.tenscale is not None:
        rows.append(("tensor scale", f"{dt.tenscale.bits} bits per tensor, not counted"))
    return ["bit layout:", *_fields(rows, _INDENT)]


def _datatype_lines(dt: DataType, asked: str, in_catalog: bool) -> list[str]:
    title = dt.name if dt.name == asked else f"{dt.name} (you asked for {asked})"
    rows = [("datatype", title), ("code", dt.code)]
    if in_catalog:
        rows.append(("description", DESCRIPTIONS.get(dt.name, "")))
        rows.append(("aliases", ", ".join(_aliases_of(dt.name)) or "none"))
    else:
        rows.append(("catalog names", ", ".join(_catalog_names_equal(dt)) or "none"))
    out = _fields(rows)
    if isinstance(dt.nspec, CodebookSpec):
        out.append(f"element: {_codebook_summary(dt.nspec)}")
        out += _codebook_block(dt.nspec, _INDENT)
    else:
        out.append(f"element: {number_summary(dt.nspec)}")
        out += _number_block(dt.nspec, _INDENT)
    if dt.sspec is None:
        out.append("scale: none (unscaled)")
    else:
        out += _scale_lines(dt.sspec, dt.nspec)
        if dt.has_meta or dt.nspec.is_codebook:
            out += _bit_layout_lines(dt)
        n = dt.nspec
        if n.is_int and dt.sspec.scale.is_exponent:
            frac = n.bits - 2
            out.append(
                f"note: {n.code} data under an exponent scale is fixed point with {frac} "
                f"fraction bits: code q means q * 2^-{frac} * 2^e, element max "
                f"{n.maxint}/{1 << frac} (as OCP MXINT8)"
            )
    return out


def _number_lines(spec: NumberSpec | CodebookSpec, asked: str) -> list[str]:
    out = [f"number: {spec.code}" + ("" if spec.code == asked else f" (you asked for {asked})")]
    if isinstance(spec, CodebookSpec):
        return [*out, f"{_INDENT}{_codebook_summary(spec)}", *_codebook_block(spec, _INDENT)]
    bare = asked.removeprefix("torch.")
    if bare in NAMES and bare != spec.code:
        out.append(f"note: {bare} is an ml_dtypes/torch/upstream name for {spec.code}")
    out += [f"note: {note}" for note in lookalike_notes([asked])]
    if spec.is_float:
        names = _catalog_names_equal(DataType(spec))
        if names:
            out.append(f"catalog names: {', '.join(names)}")
    out += _number_block(spec, _INDENT)
    return out


def _reason(why: str, said: str) -> str:
    """A reading's message without the token it starts with (the first line quotes it)."""
    if not why.startswith(said):
        return why
    rest = why.removeprefix(said).removeprefix(":").lstrip()
    return f"it {rest}" if rest.startswith("is ") else rest


def info_text(token: str) -> str:
    """The text ``tcast info TOKEN`` prints.

    Args:
        token: a catalog name or alias, number code, datatype code pair or scale
            code (tried in that order).

    Returns:
        The text, ending with a newline.

    Raises:
        SpecError: if ``token`` is none of these; the message names it and says
            why each reading failed.
        UnsupportedError: for a name tcast knows but does not support yet.
    """
    known = resolve_name(token)
    if known in NOT_YET_SUPPORTED:
        raise UnsupportedError(f"{known!r} is not supported yet: {NOT_YET_SUPPORTED[known]}")
    if known is not None:
        dt = CATALOG[known] if known in CATALOG else PREVIEW_CATALOG[known]
        notes = [f"note: {note}" for note in lookalike_notes([token])]
        return "\n".join([*notes, *_datatype_lines(dt, token, True)]) + "\n"
    errors: list[tuple[str, str]] = []
    try:
        return "\n".join(_number_lines(number(token), token)) + "\n"
    except SpecError as err:
        errors.append(("number", str(err)))
    if "_" in token:
        try:
            with warnings.catch_warnings():  # the notes say it, in the text
                warnings.simplefilter("ignore", NameWarning)
                dt = datatype(token)
            notes = [f"note: {note}" for note in lookalike_notes([token])]
            return "\n".join([*notes, *_datatype_lines(dt, token, False)]) + "\n"
        except TcastError as err:
            errors.append(("datatype", str(err)))
        try:
            return "\n".join(_scale_lines(scale(token), None)) + "\n"
        except SpecError as err:
            errors.append(("scale", str(err)))
    if token.lower() != token:  # codes are lower case; E4M3FN is e4m3fn
        try:
            return info_text(token.lower())
        except TcastError:
            pass
    said = quote(token)
    reasons = "".join(f"\n  as a {what}: {_reason(why, said)}" for what, why in errors)
    raise SpecError(
        f"{quote(token)} is not a catalog name, number code, datatype code or scale code"
        f"{reasons}{did_you_mean(token, known_names(), sep=chr(10) + '  ')}"
    )


def catalog_text() -> str:
    """The text ``tcast info --catalog`` prints.

    One line per primary catalog name (name, code, description, aliases), then the
    MSFP and codebook datatypes (:data:`tcast.PREVIEW_CATALOG`), then the names of
    upstream datatypes that are not supported yet (if any), with the reason.

    Returns:
        The text, ending with a newline.
    """
    rows = []
    for name in primary_names():
        aliases = _aliases_of(name)
        tail = f"  (aliases: {', '.join(aliases)})" if aliases else ""
        rows.append((name, CATALOG[name].code, DESCRIPTIONS.get(name, "") + tail))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    out = [f"catalog ({len(rows)} datatypes; name, code, description):"]
    out += [f"{_INDENT}{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in rows]
    preview = [(n, dt.code, DESCRIPTIONS.get(n, "")) for n, dt in PREVIEW_CATALOG.items()]
    out.append(f"subtile offsets and codebooks ({len(preview)}; the reference engine casts them):")
    w0 = max(len(r[0]) for r in preview)
    w1 = max(len(r[1]) for r in preview)
    out += [f"{_INDENT}{a:<{w0}}  {b:<{w1}}  {c}" for a, b, c in preview]
    if NOT_YET_SUPPORTED:
        out.append(f"not yet supported ({len(NOT_YET_SUPPORTED)}):")
        wn = max(len(n) for n in NOT_YET_SUPPORTED)
        out += [f"{_INDENT}{n:<{wn}}  {why}" for n, why in NOT_YET_SUPPORTED.items()]
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------- the parser
def _cmd_info(args: argparse.Namespace) -> int:
    text = catalog_text() if args.catalog else info_text(args.name)
    sys.stdout.write(text)
    return 0


def _register_info(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "info",
        help="describe a datatype, number, scale or the whole catalog",
        description=(
            "Describe NAME_OR_CODE: a catalog name or alias (mxfp4), a number code "
            "(e4m3fn, int8, e8m0, binary8p3, float8_e4m3fnuz), a datatype code pair "
            "(e2m1f_e8m0_t32) or a scale code (e8m0_t32), tried in that order."
        ),
    )
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("name", nargs="?", metavar="NAME_OR_CODE", help="what to describe")
    group.add_argument("--catalog", action="store_true", help="list every named datatype")
    p.set_defaults(func=_cmd_info)


def _cmd_conformance(args: argparse.Namespace) -> int:
    try:  # the machinery needs NumPy: it lives in tcast-ref, imported only here
        from tcast_ref import conformance
    except ImportError as err:
        print(
            "tcast conformance: error: needs the reference engine, tcast-ref (pip install "
            f"tcast-ref): {err}",
            file=sys.stderr,
        )
        return 2
    report = conformance.run(
        args.engine,
        args.tier,
        datatypes=args.datatypes,
        device=args.device,
        jobs=args.jobs,
        quiet=args.quiet,
        report=args.report,
    )
    if args.report is not None:
        report.write(args.report)
    sys.stdout.write(report.summary())
    if args.report is not None:
        print(f"report: {args.report}")
    return report.exit_status


def _register_conformance(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "conformance",
        help="check installed engines against the reference, bit for bit",
        description=(
            "Check each --engine (any engine installed under the tcast.engines entry points) "
            "against the reference (tcast.exact for 'ref', tcast_ref for every other engine) "
            "on every datatype of tcast.conformance_space() selected, in raw bits. Exit status: 0 "
            "every case matches, 1 some differ, 2 bad usage or an engine that cannot load. "
            "Needs tcast-ref. See docs/conformance.md."
        ),
    )
    p.add_argument(
        "--engine",
        action="append",
        required=True,
        metavar="NAME",
        help="an installed engine, or NAME:VARIANT for a variant it offers (torch:eager, "
        "torch:compiled) (repeatable)",
    )
    p.add_argument(
        "--tier",
        default="fast",
        metavar="TIER",
        help="smoke (every axis value once), fast (every datatype, every pair of mode "
        "values; default) or full (every mode)",
    )
    p.add_argument(
        "--datatypes",
        action="append",
        metavar="GLOB",
        help="only datatypes whose code or catalog name matches (repeatable): "
        "'mxfp*', '*_e8m0_t32'",
    )
    p.add_argument("--device", help="torch device for engines on torch tensors (default cpu)")
    p.add_argument("--jobs", type=int, default=1, metavar="N", help="worker processes (default 1)")
    p.add_argument("--report", metavar="FILE", help="write a report: FILE.json or FILE.md")
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    p.set_defaults(func=_cmd_conformance)


def _command_entry_points() -> list[Any]:
    """The entry points of the ``tcast.commands`` group, sorted by name."""
    from importlib.metadata import entry_points

    return sorted(entry_points(group=COMMAND_GROUP), key=lambda ep: ep.name)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors quote at most a prefix of a long argument.

    argparse echoes a rejected value whole (``invalid choice: '...'``); every subcommand's
    parser is of this class, plugins' included (``add_subparsers`` reuses the class).
    """

    def error(self, message: str) -> NoReturn:
        message = _LONG_QUOTED.sub(lambda m: quote(m.group(2)), message)
        if len(message) > _MESSAGE_LIMIT:  # a long value argparse quoted some other way
            message = f"{message[:_MESSAGE_LIMIT]}... ({len(message)} characters)"
        super().error(message)


#: A quoted value longer than ``quote`` keeps whole, as argparse writes them (``repr``).
_LONG_QUOTED = re.compile(rf"""(['"])((?:(?!\1).){{{QUOTE_LIMIT + 1},}}?)\1""")
#: The longest usage error printed whole (argparse's own texts are far shorter).
_MESSAGE_LIMIT = 1000


def build_parser() -> tuple[argparse.ArgumentParser, list[str]]:
    """Build the parser with ``info`` and every plugin subcommand.

    Returns:
        The parser and the warnings about plugins that failed to load or register.
    """
    parser = _Parser(
        prog="tcast", description="tcast: low-precision number formats, defined bit for bit."
    )
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _register_info(subparsers)
    _register_conformance(subparsers)
    register_plot(subparsers)
    problems = []
    for ep in _command_entry_points():
        try:
            register: Callable[[Any], None] = ep.load()
            register(subparsers)
        except Exception as err:  # a broken plugin must not hide the others
            problems.append(
                f"tcast: warning: command plugin {ep.name!r} skipped: {type(err).__name__}: {err}"
            )
    for name, (wheel, what) in _PLUGIN_COMMANDS.items():
        if name not in subparsers.choices:
            _register_missing(subparsers, name, wheel, what)
    return parser, problems


#: The commands other wheels add, and the wheel: without it, the command says what to install.
_PLUGIN_COMMANDS = {
    "golden": ("tcast-ref", "generate a golden-vector set"),
    "verify": ("tcast-ref", "check results or an engine against golden-vector sets"),
}


def _register_missing(subparsers: Any, name: str, wheel: str, what: str) -> None:
    """A stand-in for a plugin command whose wheel is not installed: it names the wheel."""
    p = subparsers.add_parser(
        name, help=f"{what} (needs {wheel}: pip install {wheel})", add_help=False
    )
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)

    def missing(_args: argparse.Namespace) -> int:
        print(
            f"tcast {name}: error: this command comes with {wheel}, which is not installed "
            f"(or failed to load): pip install {wheel}",
            file=sys.stderr,
        )
        return 2

    p.set_defaults(func=missing)


def version_text() -> str:
    """What ``tcast --version`` prints: tcast-spec's version, then each engine's wheel.

    Read from the installed packages' metadata; no engine is imported.
    """
    from importlib.metadata import entry_points

    lines = [f"tcast-spec {__version__}"]
    for ep in sorted(entry_points(group=_ENGINES_GROUP), key=lambda e: e.name):
        dist = getattr(ep, "dist", None)
        wheel = f"{dist.name} {dist.version}" if dist is not None else "(unknown package)"
        lines.append(f"engine {ep.name}: {wheel}")
    if len(lines) == 1:
        lines.append("no engine installed (pip install tcast-ref, tcast-torch or tcast-triton)")
    return "\n".join(lines) + "\n"


class _VersionAction(argparse.Action):
    """``--version``: :func:`version_text`, read only when asked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings,
            dest,
            nargs=0,
            default=argparse.SUPPRESS,
            help="print the versions of tcast-spec and of every installed engine, and exit",
        )

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any, **_kwargs: Any) -> None:
        sys.stdout.write(version_text())
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    """Run the ``tcast`` command line.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 for bad usage or a bad name or code.
    """
    parser, problems = build_parser()
    for problem in problems:
        print(problem, file=sys.stderr)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TcastWarning)
            try:
                return int(args.func(args) or 0)
            finally:
                _show(caught, args.command)
    except TcastError as err:
        print(f"tcast {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `tcast info e8m0 | head`: the reader left (Python docs' recipe)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _show(caught: list[warnings.WarningMessage], command: str) -> None:
    """Print tcast's warnings as the command's own lines; pass on any other warning."""
    for w in caught:
        if issubclass(w.category, TcastWarning):
            print(f"tcast {command}: warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)


if __name__ == "__main__":
    raise SystemExit(main())
