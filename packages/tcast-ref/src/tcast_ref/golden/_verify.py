"""Check a device's results file or an installed engine against a golden set."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tcast import (
    CastModes,
    CastResult,
    SpecError,
    UnsupportedError,
    nearest_names,
    number,
)
from tcast.engine import engine_names, failure, load_engine
from tcast.kit import cast_with

from .._codec import decode
from ..conformance import check_device
from ._cases import INPUT_TYPES
from ._flags import FLAGS
from ._generate import _cast_set, _decode_set
from ._geometry import geometry
from ._given import GIVEN_COLUMNS
from ._layout import Field, Layout
from ._progress import progress
from ._read import GoldenSetError, LoadedSet, load

__all__ = [
    "EngineRefusesError",
    "GoldenSetError",
    "LoadedSet",
    "Mismatch",
    "compare",
    "describe_word",
    "engine_columns",
    "load",
    "read_actual",
    "report",
]


@dataclass(frozen=True)
class Mismatch:
    """One differing word: line (1-based case number), field, word index within the field."""

    line: int
    field: str
    index: int
    observed: int
    expected: int


_BOMS = (
    (b"\xef\xbb\xbf", "utf-8", "UTF-8"),
    (b"\xff\xfe", "utf-16-le", "UTF-16 little-endian"),
    (b"\xfe\xff", "utf-16-be", "UTF-16 big-endian"),
)


def results_limit(lset: LoadedSet) -> int:
    """The most bytes a results file of ``lset`` may have.

    Four times the larger of the set's ``vectors.txt`` and ``vectors.memh`` (room for UTF-16,
    CRLF line ends and comment lines), plus 64 KiB.
    """
    files = lset.header["files"]
    return 4 * max(files["vectors.txt"]["bytes"], files["vectors.memh"]["bytes"]) + (1 << 16)


def _results_text(path: Path, limit: int) -> str:
    """The text of a results file: ASCII, or ASCII content saved as UTF-8/UTF-16 with a BOM.

    Editors and PowerShell's ``Out-File`` write a byte-order mark; its content is still hex
    words, so it is read. Any other non-ASCII byte is an error naming where it is. At most
    ``limit`` bytes are read: a longer file (or a device such as ``/dev/zero``) is refused.

    Raises:
        GoldenSetError: for an unreadable file, one longer than ``limit`` bytes, or one that
            is not ASCII text.
    """
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as err:
        raise GoldenSetError(f"{path}: cannot read the results file ({err})") from None
    if len(data) > limit:
        raise GoldenSetError(
            f"{path}: more than {limit} bytes, longer than any results file of this set can "
            "be (each case is one line of the set's width): not a results file of this set"
        )
    encoding, what = "ascii", "ASCII"
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            data, encoding, what = data[len(bom) :], codec, f"{name} (with a byte-order mark)"
            break
    try:
        text = data.decode(encoding)
        text.encode("ascii")
    except UnicodeError:
        pos = next((i for i, b in enumerate(data) if b > 0x7F), 0)
        raise GoldenSetError(
            f"{path}: not a text file of hex words: byte {pos} ({data[pos : pos + 1].hex()}) "
            f"is not {what}; a results file is ASCII (UTF-8 or UTF-16 with a byte-order mark "
            f"are read too)"
        ) from None
    return text


def _check_line_shape(
    path: Path | str, no: int, line: str, memh: bool, layout: Layout, lset: LoadedSet
) -> None:
    """Refuse a first case line of hex words whose shape is another set's, saying so."""
    compact = line.replace("_", "") if memh else None
    words = [compact] if memh else line.split()
    if not all(w and all(c in "0123456789abcdefABCDEF" for c in w) for w in words):
        return  # not hex words at all: parse_line names the bad word
    if memh:
        got, want = f"{len(compact)} hex digits", f"{layout.digits} hex digits"
        same = len(compact) == layout.digits
    else:
        widths = [f.digits for f in layout.fields for _ in range(f.count)]
        same = [len(w) for w in words] == widths
        got = f"{len(words)} words of {_widths([len(w) for w in words])} hex digits"
        want = f"{layout.words} words of {_widths(widths)} hex digits"
    if not same:
        fields = ", ".join(f"{f.name} {f.count}x{f.digits}" for f in layout.fields)
        raise GoldenSetError(
            f"{path}:{no}: the results file does not fit this set (it belongs to another set, "
            f"or its words are misformatted): its first case line has {got}, the lines of "
            f"{lset.path} ({lset.header['datatype']['name']}: {fields}) have {want}"
        )


def _widths(ws: list[int]) -> str:
    """Run-length text of word widths: [2, 2, 8] -> '2x2, 1x8'."""
    runs: list[list[int]] = []
    for w in ws:
        if runs and runs[-1][1] == w:
            runs[-1][0] += 1
        else:
            runs.append([1, w])
    return ", ".join(f"{n}x{w}" for n, w in runs)


def read_actual(
    path: Path | str, lset: LoadedSet, flags_optional: bool = False
) -> dict[str, np.ndarray]:
    """Parse a results file (``vectors.txt`` or ``vectors.memh`` syntax) into columns.

    Lines starting with ``#``, ``//`` or ``@`` (a ``$writememh`` address) and blank lines are
    skipped. A line with whitespace inside is txt syntax, one without is a memh word
    (underscores ignored). With ``flags_optional`` (``--ignore-flags``), lines may leave
    out the FLAGS words (a device without flags); the columns then have no ``FLAGS``.

    Raises:
        GoldenSetError: for unreadable syntax, a file longer than :func:`results_limit`, a
            wrong number of lines, or inputs that differ from the set's (the file belongs to
            another set).
    """
    layout = lset.layout
    no_flags = Layout(tuple(f for f in layout.fields if f.name != "FLAGS"))
    text = _results_text(Path(path), results_limit(lset))
    rows, numbers = [], []
    chosen = False
    for no, raw in enumerate(text.splitlines(), 1):
        s = raw.strip()
        if not s or s.startswith(("#", "//", "@")):
            continue
        memh = len(s.split()) == 1
        if not chosen:  # the first case line says whether FLAGS were left out
            chosen = True
            size = len(s.replace("_", "")) if memh else len(s.split())
            if (
                flags_optional
                and no_flags.fields != layout.fields
                and size == (no_flags.digits if memh else no_flags.words)
            ):
                layout = no_flags
            _check_line_shape(path, no, s, memh, layout, lset)
        try:
            rows.append(layout.parse_line(s, memh))
        except SpecError as err:
            raise GoldenSetError(f"{path}:{no}: {err}") from None
        numbers.append(no)
    if len(rows) != lset.lines:
        raise GoldenSetError(f"{path}: {len(rows)} cases, but the set has {lset.lines}")
    words = np.array(rows, dtype=np.uint64).reshape(len(rows), layout.words)
    cols, off = {}, 0
    for f in layout.fields:
        cols[f.name] = words[:, off : off + f.count]
        off += f.count
    for f in layout.fields:
        if f.role != "input":
            continue
        exp = lset.columns[f.name].reshape(len(rows), f.count).astype(np.uint64)
        bad = np.nonzero((cols[f.name] != exp).any(axis=1))[0]
        if bad.size:
            raise GoldenSetError(
                f"{path}:{numbers[bad[0]]}: {f.name} differs from case {bad[0] + 1} of the set: "
                "the results file does not belong to this set"
            )
    return cols


# ------------------------------------------------------------------------ engines
class EngineUnavailableError(GoldenSetError):
    """The engine loaded but takes no array type this machine can make (e.g. no GPU)."""


class EngineRefusesError(UnsupportedError):
    """The engine's ``supports`` refuses the set's datatype or modes (it does not cast them)."""


class _EngineArrays:
    """Calls an engine with NumPy or torch arrays and returns NumPy results.

    Arrays are tried in order: NumPy, torch on ``device`` (when given), torch on the CPU,
    torch on CUDA (when a CUDA device is present).
    """

    def __init__(self, engine: Any, device: str | None = None) -> None:
        self.engine = engine
        self.torch = None
        self.device = None
        if device is None and engine.accepts(np.zeros(2, np.float32)):
            return
        try:
            import torch
        except ImportError:
            raise EngineUnavailableError(
                f"engine {engine.name!r} takes no NumPy arrays and torch is not installed"
            ) from None
        if device is not None:
            try:
                tried = [check_device(device)]
            except SpecError as err:
                raise GoldenSetError(str(err)) from None
        else:
            tried = [torch.device("cpu")]
            if torch.cuda.is_available():
                tried.append(torch.device("cuda"))
        for dev in tried:
            try:
                sample = torch.zeros(2, device=dev)
                sample.cpu()  # results must come back from it
            except (RuntimeError, AssertionError, NotImplementedError) as err:  # not here
                raise EngineUnavailableError(
                    f"device {str(dev)!r} is not usable here: {err}"
                ) from None
            if engine.accepts(sample):
                self.torch, self.device = torch, dev
                return
        where = ", ".join(str(d) for d in tried)
        raise EngineUnavailableError(
            f"engine {engine.name!r} takes no arrays this machine can make (it casts "
            f"{getattr(engine, 'array_what', 'arrays')}; tried NumPy and torch on {where}); "
            f"give --device for the device it runs on"
        )

    def _native(self, a: Any) -> Any:
        if a is None or self.torch is None or not isinstance(a, np.ndarray):
            return a
        t = self.torch
        if a.dtype == INPUT_TYPES["bfloat16"][0]:
            out = t.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(t.bfloat16)
        elif a.dtype in (np.uint16, np.uint32, np.uint64):
            out = t.from_numpy(np.ascontiguousarray(a).view(a.dtype.str.replace("u", "i"))).view(
                {2: t.uint16, 4: t.uint32, 8: t.uint64}[a.itemsize]
            )
        else:
            out = t.from_numpy(np.ascontiguousarray(a))
        return out.to(self.device)

    def _numpy(self, a: Any) -> Any:
        if a is None or self.torch is None or not isinstance(a, self.torch.Tensor):
            return None if a is None else np.asarray(a)
        t = self.torch
        a = a.detach().cpu().contiguous()
        if a.dtype == t.bfloat16:
            return a.view(t.int16).numpy().view(INPUT_TYPES["bfloat16"][0])
        signed = {
            t.uint16: (t.int16, np.uint16),
            t.uint32: (t.int32, np.uint32),
            t.uint64: (t.int64, np.uint64),
        }
        if a.dtype in signed:
            s, u = signed[a.dtype]
            return a.view(s).numpy().view(u)
        if a.dtype.is_floating_point and a.element_size() == 1:
            return a.view(t.uint8).numpy()
        return a.numpy()

    def cast_numpy(
        self,
        x: np.ndarray,
        dt: Any,
        *,
        castmode: str,
        rbits: Any,
        roundmode: Any,
        scalemode: Any,
        saturate: bool,
        transform: Any = None,
        **given: Any,
    ) -> Any:
        modes = CastModes.of(castmode, roundmode, scalemode, saturate, transform=transform)
        if given and not getattr(self.engine, "given_scales", False):
            raise EngineRefusesError(
                f"engine {self.engine.name!r} does not cast with given scale parts "
                f"({', '.join(given)}; SEMANTICS.md 5.12): it does not set given_scales"
            )
        if not self.engine.supports(dt, modes):
            raise EngineRefusesError(
                f"engine {self.engine.name!r} does not support {dt.code} (castmode "
                f"{modes.castmode.value}, roundmode {modes.roundmode.value}, scalemode "
                f"{modes.scalemode.value}"
                + ("" if transform is None else f", a Hadamard transform of {transform.size}")
                + "): its supports() refuses it"
            )
        out = cast_with(
            self.engine,
            self._native(x),
            dt,
            castmode=modes.castmode,
            roundmode=modes.roundmode,
            scalemode=modes.scalemode,
            rbits=self._native(rbits),
            saturate=saturate,
            transform=transform,
            **{k: self._native(v) for k, v in given.items()},  # given scale parts (5.12)
        )
        if not isinstance(out, CastResult):
            return self._numpy(out)
        conv = {
            k: self._numpy(getattr(out, k))
            for k in ("data", "scale", "zero", "tenscale", "mask", "meta")
        }
        res = replace(out, **conv)
        res.extra = {**out.extra, "_native": out}
        return res

    def upcast_numpy(self, result: CastResult) -> np.ndarray:
        native = result.extra.get("_native") if result.extra else None
        if native is not None and result.transform is None and native.transform is not None:
            native = replace(native, transform=None)  # the decoded values of T, not inverted
        if native is None:
            conv = {
                k: self._native(getattr(result, k))
                for k in ("data", "scale", "zero", "tenscale", "mask", "meta")
            }
            native = replace(result, **conv, engine=self.engine.name)
        return self._numpy(self.engine.upcast(native))

    def hadamard_numpy(self, x: np.ndarray, h: Any, dim: int) -> np.ndarray:
        """The engine's own transform of ``x`` along ``dim`` (the T column), as NumPy."""
        return self._numpy(self.engine.hadamard(self._native(x), h, dim, False))


def engine_columns(
    lset: LoadedSet, name: str, quiet: bool = True, device: str | None = None
) -> dict[str, np.ndarray]:
    """The columns an installed engine produces for the set's inputs.

    Args:
        lset: the loaded golden set.
        name: an installed engine's name.
        quiet: no progress bar.
        device: torch device for the engine's inputs (default: NumPy, then torch on the CPU,
            then on CUDA when present, whichever the engine accepts first).

    Raises:
        GoldenSetError: when the engine is not installed or takes no array type we have
            (``EngineUnavailableError`` for the latter).
        EngineRefusesError: when the engine does not support the set's datatype and modes.
    """
    engine = load_engine(name)  # this engine only: checking 'ref' imports no torch
    if engine is None:
        why = failure(name)
        have = ", ".join(engine_names()) or "none"
        close = nearest_names(name, engine_names())
        raise GoldenSetError(
            f"engine {name!r} is not installed"
            + (f" ({why})" if why else "")
            + f"; installed: {have}"
            + (f"; did you mean: {', '.join(close)}?" if close and not why else "")
        )
    eng = _EngineArrays(engine, device)
    st = lset.settings()
    if st.operation == "decode":  # load() checked that the set's inputs are these
        _, cols, _ = _decode_set(st, quiet, engine=eng)
        return cols
    idt = INPUT_TYPES[st.input_dtype][0]
    x2 = np.ascontiguousarray(lset.columns["IN"]).view(idt)
    rb = lset.columns.get("RBITS")
    lens = lset.columns.get("LEN")
    given = {c: lset.columns[c].reshape(-1) for c in GIVEN_COLUMNS.values() if c in lset.columns}
    _, cols, _ = _cast_set(st, quiet, engine=eng, x2=x2, rbits=rb, lens=lens, given=given or None)
    return cols


# ---------------------------------------------------------------------- comparing
def _nan_codes(fmt: str, width: int) -> np.ndarray | None:
    """A table: True where a code of ``fmt`` decodes to NaN (None: no NaN rule)."""
    if fmt in ("uint32", "rbits8", "rbits16", "flags8", "mask") or width > 16:
        return None
    try:
        spec = number(fmt)
    except SpecError:
        return None
    if not (spec.is_float or spec.is_exponent) or spec.nan_code is None:
        return None
    return np.isnan(decode(np.arange(1 << spec.bits, dtype=np.int64), spec))


def _absent_subtiles(lset: LoadedSet) -> np.ndarray | None:
    """(lines, META count) bool: subtiles beyond a partial tile's extent (None: no META)."""
    if lset.layout.field("META") is None:
        return None
    lens = lset.columns.get("LEN")
    return ~geometry(lset.settings().dtype).meta_live(lens, lset.lines)


def _is_nan32(w: np.ndarray) -> np.ndarray:
    return (w & 0x7FFFFFFF) > 0x7F800000


def compare(
    lset: LoadedSet,
    observed: dict[str, np.ndarray],
    *,
    strict_nan: bool = False,
    ignore_flags: bool = False,
    quiet: bool = True,
) -> tuple[list[Mismatch], int]:
    """Every differing output word, and the number of output words compared.

    Two NaNs match unless ``strict_nan`` (their sign and payload are then compared too).
    The OUT and FLAGS words of absent elements (beyond a partial tile's extent, flagged
    ``absent`` in the set) are not compared.

    Raises:
        GoldenSetError: when ``observed`` lacks an output field that is to be compared.
    """
    out: list[Mismatch] = []
    compared = 0
    absent = None
    if "FLAGS" in lset.columns:
        absent = (lset.columns["FLAGS"].astype(np.int64) & FLAGS["absent"]) != 0
    skipped = {"OUT": absent, "FLAGS": absent, "META": _absent_subtiles(lset)}
    fields = [
        f
        for f in lset.layout.fields
        if f.role == "output" and not (ignore_flags and f.name == "FLAGS")
    ]
    missing = [f.name for f in fields if f.name not in observed]
    if missing:
        raise GoldenSetError(
            f"{lset.path}: the results have no {', '.join(missing)}: nothing to compare them with"
        )
    with progress(len(fields), "verify", quiet) as bar:
        for f in fields:
            exp = lset.columns[f.name].reshape(lset.lines, f.count).astype(np.uint64)
            obs = np.asarray(observed[f.name]).reshape(lset.lines, f.count).astype(np.uint64)
            diff = obs != exp
            gone = skipped.get(f.name)
            if gone is not None:
                diff &= ~gone
            if not strict_nan:
                if f.bits == 32 and f.format == "float32":
                    diff &= ~(_is_nan32(obs) & _is_nan32(exp))
                else:
                    table = _nan_codes(f.format, f.bits)
                    if table is not None:
                        m = np.uint64(table.size - 1)
                        both = table[(obs & m).astype(np.intp)] & table[(exp & m).astype(np.intp)]
                        diff &= ~both
            compared += diff.size - (0 if gone is None else int(gone.sum()))
            for line, idx in zip(*np.nonzero(diff), strict=True):
                out.append(
                    Mismatch(
                        int(line) + 1, f.name, int(idx), int(obs[line, idx]), int(exp[line, idx])
                    )
                )
            bar.update(1)
    order = {f.name: i for i, f in enumerate(lset.layout.fields)}
    out.sort(key=lambda m: (m.line, order[m.field], m.index))
    return out, compared


# ---------------------------------------------------------------------- reporting
def describe_word(value: int, fmt: str) -> str:
    """A word with its fields split: ``0 0111 000 = 1`` for a float, flag names for flags."""
    if fmt == "flags8":
        names = [n for n, b in FLAGS.items() if value & b]
        return "|".join(names) or "none"
    if fmt == "mask":
        return f"{value:b}"
    if fmt in ("uint32", "rbits8", "rbits16", "extent", "offset", "mapping"):
        return str(value)
    spec = number(fmt)
    if spec.is_codebook:  # the entry's value depends on the mapping (META): the index alone
        return f"{value:0{spec.bits}b} = index {value}"
    if spec.is_float:
        s = value >> (spec.bits - 1)
        e = (value >> spec.mbits) & ((1 << spec.ebits) - 1)
        m = value & ((1 << spec.mbits) - 1)
        v = _value(value, spec)
        mant = f" {m:0{spec.mbits}b}" if spec.mbits else ""
        return f"{s} {e:0{spec.ebits}b}{mant} = {v}"
    return f"{value:0{spec.bits}b} = {_value(value, spec)}"  # exponent, int, uint


def _value(code: int, spec: Any) -> str:
    from tcast.cli import format_value

    if spec.bits == 32 and spec.is_float:
        v = float(np.array([code], np.uint32).view(np.float32)[0])
    else:
        v = float(decode(np.array([code], np.int64), spec)[0])
    return format_value(v)


def report(lset: LoadedSet, mismatches: list[Mismatch], max_errors: int) -> list[str]:
    """Text for the first ``max_errors`` mismatches: inputs => observed, expected."""
    lines = []
    fields = {f.name: f for f in lset.layout.fields}
    per_element = fields["IN"].count if "IN" in fields else 1
    for m in mismatches[:max_errors]:
        f = fields[m.field]
        ins = []
        for inf in lset.layout.fields:
            if inf.role != "input":
                continue
            words = lset.columns[inf.name].reshape(lset.lines, inf.count)[m.line - 1]
            if inf.count == per_element and per_element > 1 and f.count == per_element:
                j = m.index
                ins.append(
                    f"{inf.name}[{j}]={_hex(int(words[j]), inf)} "
                    f"[{describe_word(int(words[j]), inf.format)}]"
                )
            elif inf.count == 1:
                ins.append(
                    f"{inf.name}={_hex(int(words[0]), inf)} "
                    f"[{describe_word(int(words[0]), inf.format)}]"
                )
            else:
                ins.append(f"{inf.name}=<{inf.count} words>")
        where = f"{m.field}[{m.index}]" if f.count > 1 else m.field
        lines.append(
            f"case {m.line}: {' '.join(ins)} => {where} observed {_hex(m.observed, f)} "
            f"[{describe_word(m.observed, f.format)}], expected {_hex(m.expected, f)} "
            f"[{describe_word(m.expected, f.format)}]"
        )
    return lines


def _hex(v: int, f: Field) -> str:
    return f"{v:0{f.digits}X}"
