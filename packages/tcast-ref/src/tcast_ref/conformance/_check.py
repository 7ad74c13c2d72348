"""Checking one case on one entry: every output of an engine against the oracle, in raw bits."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import tcast
from tcast import CastMode, CastModes, DataType, RoundMode
from tcast.kit import cast_with

from ._adapters import Adapter
from ._battery import Entry, bits_of
from ._cases import CAST_MODES, ROUND_MODES, SCALE_MODES, Case, given_values
from ._oracles import Expected, cast_kwargs

__all__ = [
    "CheckResult",
    "Failure",
    "check",
    "check_case",
    "check_refusals",
    "compare",
    "describe",
    "reproducer",
]


def _diff(what: str, got: np.ndarray | None, want: np.ndarray | None) -> str | None:
    if want is None or got is None:
        return (
            None
            if want is None and got is None
            else (
                f"{what}: got {'None' if got is None else 'an array'}, "
                f"expected {'None' if want is None else 'an array'}"
            )
        )
    if got.shape != want.shape:
        return f"{what}: shape {got.shape}, expected {want.shape}"
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    if bad.size == 0:
        return None
    i = int(bad[0])
    g, w = got.reshape(-1)[i], want.reshape(-1)[i]
    return (
        f"{what}: {bad.size} of {want.size} differ; first at flat index {i}: "
        f"got 0x{int(g):x}, expected 0x{int(w):x}"
    )


def _codes(what: str, a: Any, bits: int) -> tuple[np.ndarray | None, str | None]:
    """Codes as uint64, after checking they are stored unsigned and wide enough."""
    if a is None:
        return None, None
    a = np.asarray(a)
    if a.dtype.kind != "u" or a.dtype.itemsize * 8 < bits:
        return None, f"{what}: stored as {a.dtype}, expected unsigned codes of >= {bits} bits"
    return a.astype(np.uint64), None


def compare(
    castmode: CastMode,
    want: Expected,
    got: Any,
    up: Any,
    entry: Entry,
    dt: DataType,
    engine_name: str,
    transpose: bool,
) -> list[str]:
    """Differences between an engine's (NumPy-converted) result and the oracle's bits."""
    out: list[str] = []
    if castmode is CastMode.VIRTUAL:
        got = np.asarray(got)
        if got.dtype != entry.x.dtype:
            return [f"virtual: dtype {got.dtype}, expected the input dtype {entry.x.dtype}"]
        d = _diff("virtual", bits_of(got), want.virtual)
        return [d] if d else []
    r = got
    if not isinstance(r, tcast.CastResult):
        return [f"{castmode.value}: returned {type(r).__name__}, expected a tcast.CastResult"]
    meta = {
        "dtype": (r.dtype, dt),
        "shape": (tuple(r.shape), entry.x.shape),
        "castmode": (r.castmode, castmode),
        "input_dtype": (r.input_dtype, entry.input_dtype),
        "engine": (r.engine, engine_name),
    }
    if dt.sspec is not None and dt.sspec.is_2d:  # elsewhere nothing is swapped: either value
        meta["transpose_scale"] = (bool(r.transpose_scale), transpose)
    out += [f"{castmode.value}: {k} {g!r}, expected {w!r}" for k, (g, w) in meta.items() if g != w]
    bits = dt.nspec.bits
    if castmode is CastMode.ACTUAL:
        codes, err = _codes("data", r.data, bits)
        out += [err] if err else []
        out += [d for d in [_diff("actual data (codes)", codes, want.codes)] if d]
        mask = None if r.mask is None else np.asarray(r.mask)
        if mask is not None and mask.dtype != bool:
            out.append(f"actual mask: dtype {mask.dtype}, expected bool")
        else:
            d = _diff("actual mask", mask, want.mask)
            out += [d] if d else []
        meta = None if r.meta is None else np.asarray(r.meta)
        if meta is not None and meta.dtype != np.uint8:
            out.append(f"actual meta: dtype {meta.dtype}, expected uint8")
        else:
            got_meta = None if meta is None else meta.astype(np.uint64)
            d = _diff("actual meta", got_meta, want.meta)
            out += [d] if d else []
    else:
        data = np.asarray(r.data)
        if data.dtype != np.uint8 or data.ndim != 1:
            out.append(f"compress data: {data.dtype} of rank {data.ndim}, expected 1-D uint8")
        elif data.tobytes() != want.packed:
            out.append(f"compress data: {data.tobytes().hex()} != expected {want.packed.hex()}")
        pm = None if r.mask is None else np.asarray(r.mask, np.uint8).tobytes()
        if pm != want.packed_mask:
            out.append(f"compress mask: {pm!r} != expected {want.packed_mask!r}")
        pmeta = None if r.meta is None else np.asarray(r.meta, np.uint8).tobytes()
        if pmeta != want.packed_meta:
            out.append(f"compress meta: {pmeta!r} != expected {want.packed_meta!r}")
    sbits = dt.sspec.scale.bits if dt.sspec is not None else 0
    scale, err = _codes("scale", r.scale, sbits)
    out += [err] if err else []
    out += [d for d in [_diff(f"{castmode.value} scale", scale, want.scale)] if d]
    zbits = dt.zero.bits if dt.zero is not None else 0
    zero, err = _codes("zero", r.zero, zbits)
    out += [err] if err else []
    out += [d for d in [_diff(f"{castmode.value} zero", zero, want.zero)] if d]
    tens = None if r.tenscale is None else int(np.asarray(r.tenscale).reshape(()))
    if tens != want.tenscale:
        out.append(f"{castmode.value} tenscale: {tens!r}, expected {want.tenscale!r}")
    up = np.asarray(up)
    if up.dtype != np.float32:
        out.append(f"upcast({castmode.value}): dtype {up.dtype}, expected float32")
    else:
        d = _diff(f"upcast({castmode.value})", bits_of(up), want.upcast)
        out += [d] if d else []
    return out


def check_case(
    engine: Any,
    adapter: Adapter,
    want: Expected,
    case: Case,
    entry: Entry,
    castmodes: tuple[CastMode, ...],
) -> Iterator[tuple[CastMode, str]]:
    """Cast ``entry`` with ``engine`` in each of ``castmodes``; yield every difference."""
    kw = cast_kwargs(case, entry)
    for part in ("scale", "zero"):  # given scale parts: the engine's arrays
        if part in kw:
            kw[part] = adapter.to_engine(kw[part])
    rb = entry.rbits_for(case.dtype) if case.rsource == "rbits" else None
    kw["rbits"] = None if rb is None else adapter.to_engine(rb)
    x = adapter.to_engine(entry.x)
    for cm in castmodes:
        try:
            got = cast_with(engine, x, case.dtype, castmode=cm, **kw)
        except Exception as err:  # an expected SpecError, or a difference to report
            if want.error is not None and isinstance(err, want.error):
                continue
            yield cm, f"raised {type(err).__name__}: {err}"
            continue
        if want.error is not None:
            yield cm, f"returned a result, expected {want.error.__name__}"
            continue
        if cm is CastMode.VIRTUAL:
            for msg in compare(
                cm,
                want,
                adapter.to_numpy(got),
                None,
                entry,
                case.dtype,
                engine.name,
                case.transpose_scale,
            ):
                yield cm, msg
            continue
        try:
            up = adapter.to_numpy(engine.upcast(got))
        except Exception as err:  # report, with the cast's other differences
            up = np.zeros(0, np.float32)
            yield cm, f"upcast raised {type(err).__name__}: {err}"
        if isinstance(got, tcast.CastResult):
            got = _result_to_numpy(got, adapter)
        for msg in compare(cm, want, got, up, entry, case.dtype, engine.name, case.transpose_scale):
            yield cm, msg


def _result_to_numpy(r: tcast.CastResult, adapter: Adapter) -> tcast.CastResult:
    conv = adapter.to_numpy
    return tcast.CastResult(
        data=conv(r.data),
        scale=conv(r.scale),
        zero=conv(r.zero),
        tenscale=conv(r.tenscale),
        mask=conv(r.mask),
        meta=conv(r.meta),
        dtype=r.dtype,
        shape=tuple(r.shape),
        castmode=r.castmode,
        input_dtype=r.input_dtype,
        transpose_scale=r.transpose_scale,
        engine=r.engine,
        extra=r.extra,
        scale_layout=r.scale_layout,
        transform=r.transform,
    )


@dataclass
class Failure:
    """One case, entry and cast mode whose result differs from the oracle's.

    Attributes:
        datatype: the datatype's code.
        modes: the modes (``castmode``, ``roundmode``, ``scalemode``, ``saturate``,
            ``transpose_scale``, ``random_bits``: ``seed``, ``rbits`` or None, and
            ``transform``: the transform's size and signs, or None).
        input: the entry's label (what it exercises, shape, input dtype, layout).
        differences: one line per differing output (or the exception raised).
        reproducer: Python lines that rebuild the input bit for bit and make the call.
    """

    datatype: str
    modes: dict[str, Any]
    input: str
    differences: list[str]
    reproducer: str

    @property
    def label(self) -> str:
        """``datatype/round/scale[/flags] [castmode] on <entry>`` for one-line messages."""
        return describe(self.datatype, self.modes, self.input)


def describe(datatype: str, modes: dict[str, Any], entry: str) -> str:
    """``datatype/round/scale[/flags] [castmode] on <entry>``: one failure, on one line."""
    parts = [datatype, modes["roundmode"], modes["scalemode"]]
    parts += ["ieee-overflow"] if not modes["saturate"] else []
    parts += ["transposed"] if modes["transpose_scale"] else []
    parts += [modes["random_bits"]] if modes["random_bits"] else []
    parts += [modes["transform"]] if modes.get("transform") else []
    parts += ["given-" + "+".join(modes["given"])] if modes.get("given") else []
    return f"{'/'.join(parts)} [{modes['castmode']}] on {entry}"


@dataclass
class CheckResult:
    """What :func:`check` found.

    Attributes:
        checks: cast calls compared (case x entry x cast mode).
        failures: the calls whose result differs, in the order checked.
        per_datatype: ``code -> [checks, mismatches]``.
    """

    checks: int = 0
    failures: list[Failure] = field(default_factory=list)
    per_datatype: dict[str, list[int]] = field(default_factory=dict)


def _to_engine_lines(adapter_name: str, entry: Entry, rsource: str | None) -> list[str]:
    """Lines that move the rebuilt NumPy input (and rbits) to a torch engine's device."""
    if not adapter_name.startswith("torch"):
        return []
    dev = adapter_name.partition(":")[2] or "cpu"
    x = (
        "torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)"
        if entry.input_dtype == "bfloat16"
        else "torch.from_numpy(x)"
    )
    lines = ["import torch", f"x = {x}.to({dev!r})  # bit for bit (tcast_ref.conformance)"]
    if rsource == "rbits":
        # int8 / int16: the same bits, as the torch engines take them
        lines.append(
            f"rbits = torch.from_numpy(rbits.view(f'int{{rbits.itemsize * 8}}')).to({dev!r})"
        )
    return lines


def reproducer(
    engine_name: str, case: Case, entry: Entry, castmode: CastMode, adapter_name: str = "numpy"
) -> str:
    """Python lines that rebuild ``entry`` bit for bit and cast it with ``engine_name``.

    ``adapter_name`` (``numpy``, ``torch:cuda:0`` ...) says where the engine takes its input.
    """
    stream = f", stream={entry.stream}" if entry.stream else ""
    stochastic = {"seed": f", seed={entry.seed}{stream}", "rbits": ", rbits=rbits"}.get(
        case.rsource, ""
    )
    h = case.transform
    transform = "" if h is None else f", transform=tcast.Hadamard.of({h.size}, {h.signs})"
    given = given_values(case, tuple(entry.x.shape))
    given_args = "".join(f", {k}={k}" for k in given)
    call = (
        f'tcast.cast(x, "{case.dtype.code}", castmode="{castmode.value}", '
        f'roundmode="{case.roundmode.value}", scalemode="{case.scalemode.value}", '
        f"saturate={case.saturate}, transpose_scale={case.transpose_scale}{stochastic}"
        f'{transform}{given_args}, engine="{engine_name}")'
    )
    lines = [entry.repro()]
    if case.rsource == "rbits":  # the datatype's K bits of the entry's words (§3.3)
        k = 8 if case.dtype.nspec.is_codebook else case.dtype.nspec.rbits_width
        lines.append(f"rbits = (rbits >> {32 - k}).astype(np.uint{k})")
    lines += [
        *_to_engine_lines(adapter_name, entry, case.rsource),
        *_given_lines(given, adapter_name),
        call,
    ]
    return "\n".join(lines)


def _given_lines(given: dict[str, Any], adapter_name: str) -> list[str]:
    """Lines that rebuild the given scale parts bit for bit (on a torch engine's device)."""
    lines = []
    for k, v in given.items():
        if isinstance(v, np.ndarray):
            src = f"np.frombuffer(bytes.fromhex({v.tobytes().hex()!r}), np.float32)"
            lines.append(f"{k} = {src}.reshape({v.shape})")
            if adapter_name.startswith("torch"):
                dev = adapter_name.partition(":")[2] or "cpu"
                lines.append(f"{k} = torch.from_numpy({k}.copy()).to({dev!r})")
        else:
            lines.append(f"{k} = {v!r}")
    return lines


def _modes(case: Case, castmode: CastMode) -> dict[str, Any]:
    return {
        "castmode": castmode.value,
        "roundmode": case.roundmode.value,
        "scalemode": case.scalemode.value,
        "saturate": case.saturate,
        "transpose_scale": case.transpose_scale,
        "random_bits": case.rsource,
        "transform": _transform_text(case.transform),
        "given": list(case.given) or None,
    }


def _transform_text(h: Any) -> str | None:
    """A transform as failure reports name it: ``hadamard16[++-+…]`` (None: none)."""
    if h is None:
        return None
    return f"hadamard{h.size}[{''.join('+' if s > 0 else '-' for s in h.signs)}]"


def check(
    engine: Any,
    adapter: Adapter,
    oracle: Any,
    cases: Iterable[Case],
    entries: Callable[[DataType], Iterable[Entry]],
    adapter_name: str = "numpy",
) -> CheckResult:
    """Compare ``engine`` with ``oracle`` on ``entries(dtype)`` for each case.

    Cast modes the engine's ``supports`` rejects are not compared (a separate rule:
    :func:`check_refusals`); entries larger than the oracle's ``max_elements`` are skipped.
    Oracle results are reused across cases with the same ``Case.oracle_key``.
    """
    out = CheckResult()
    cache: dict[tuple, Expected] = {}
    for case in cases:
        castmodes = tuple(
            cm for cm in case.castmodes if engine.supports(case.dtype, case.modes(cm))
        )
        if case.given and not getattr(engine, "given_scales", False):
            continue  # refused: check_refusals holds that it raises UnsupportedError
        if not castmodes:
            continue
        counts = out.per_datatype.setdefault(case.dtype.code, [0, 0])
        for k, entry in enumerate(entries(case.dtype)):
            if oracle.max_elements is not None and entry.x.size > oracle.max_elements:
                continue
            key = (k, case.oracle_key)
            if key not in cache:
                cache[key] = oracle.expect(case, entry)
            found: dict[CastMode, list[str]] = {}
            for cm, msg in check_case(engine, adapter, cache[key], case, entry, castmodes):
                found.setdefault(cm, []).append(msg)
            out.checks += len(castmodes)
            counts[0] += len(castmodes)
            for cm in castmodes:
                if cm in found:
                    counts[1] += 1
                    out.failures.append(
                        Failure(
                            case.dtype.code,
                            _modes(case, cm),
                            entry.label,
                            found[cm],
                            reproducer(engine.name, case, entry, cm, adapter_name),
                        )
                    )
    return out


def check_refusals(engine: Any, adapter: Adapter, dtypes: Iterable[DataType]) -> CheckResult:
    """Every request ``engine.supports`` rejects must raise ``tcast.UnsupportedError``.

    For every datatype x cast mode x round mode x scale mode x saturate x transpose_scale that
    ``supports`` rejects, the engine is asked to cast a 2 x 32 float32 input (a check each).

    Returns:
        The checks made and a failure for each rejected request that did not raise
        ``UnsupportedError``.
    """
    src = "np.linspace(-4, 4, 64, dtype=np.float32).reshape(2, 32)"
    x = adapter.to_engine(np.linspace(-4, 4, 64, dtype=np.float32).reshape(2, 32))
    out = CheckResult()
    for dt in dtypes:
        counts = out.per_datatype.setdefault(dt.code, [0, 0])
        for cm, rm, sm, sat, tr in itertools.product(
            CAST_MODES, ROUND_MODES, SCALE_MODES, (True, False), (False, True)
        ):
            if engine.supports(dt, CastModes.of(cm, rm, sm, sat, tr)):
                continue
            seed = 1 if rm is RoundMode.STOCHASTIC else None
            out.checks += 1
            counts[0] += 1
            try:
                cast_with(
                    engine,
                    x,
                    dt,
                    castmode=cm,
                    roundmode=rm,
                    scalemode=sm,
                    seed=seed,
                    saturate=sat,
                    transpose_scale=tr,
                )
            except tcast.UnsupportedError:
                continue
            except Exception as err:
                what = f"raised {type(err).__name__}: {err}"
            else:
                what = "returned a result"
            counts[1] += 1
            case = Case(dt, rm, sm, sat, tr, "seed" if seed else None)
            call = (
                f'tcast.cast(x, "{dt.code}", castmode="{cm.value}", roundmode="{rm.value}", '
                f'scalemode="{sm.value}", seed={seed}, saturate={sat}, transpose_scale={tr}, '
                f'engine="{engine.name}")  # must raise tcast.UnsupportedError'
            )
            out.failures.append(
                Failure(
                    dt.code,
                    _modes(case, cm),
                    "an unsupported request (2, 32) float32",
                    [f"{what}; supports() rejects it, so it must raise UnsupportedError"],
                    f"import numpy as np, tcast\nx = {src}\n{call}",
                )
            )
        _check_given_refused(engine, adapter, dt, x, src, out, counts)
    return out


def _check_given_refused(
    engine: Any, adapter: Adapter, dt: DataType, x: Any, src: str, out: CheckResult, counts: list
) -> None:
    """An engine without ``given_scales`` must refuse given scales (``UnsupportedError``)."""
    if getattr(engine, "given_scales", False) or dt.sspec is None:
        return
    if dt.nspec.is_codebook or dt.sspec.offset_bits:
        return
    try:
        shape = tcast.block_layout((2, 32), dt).scale_shape
    except tcast.SpecError:
        return  # the datatype does not tile this input
    out.checks += 1
    counts[0] += 1
    try:
        cast_with(engine, x, dt, castmode="actual", scale=adapter.to_engine(np.ones(shape, "f4")))
    except tcast.UnsupportedError:
        return
    except Exception as err:
        what = f"raised {type(err).__name__}: {err}"
    else:
        what = "returned a result"
    counts[1] += 1
    call = (
        f'tcast.kit.cast_with(engine, x, "{dt.code}", castmode="actual", '
        f"scale=np.ones({shape}, np.float32))  # must raise tcast.UnsupportedError"
    )
    out.failures.append(
        Failure(
            dt.code,
            {**_modes(Case(dt, RoundMode.EVEN), CastMode.ACTUAL), "given": ["scale"]},
            "an unsupported request (2, 32) float32",
            [f"{what}; the engine does not set given_scales, so it must raise UnsupportedError"],
            f"import numpy as np, tcast\nx = {src}\n{call}",
        )
    )
