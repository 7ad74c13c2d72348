"""Conformance cases: one datatype under one set of modes, and the tiers that list them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

import tcast
from tcast import CastMode, CastModes, DataType, Hadamard, RoundMode, ScaleMode, SpecError

__all__ = [
    "CAST_MODES",
    "ROUND_MODES",
    "SCALE_MODES",
    "Case",
    "axis_values",
    "case_pairs",
    "fast_cases",
    "feasible_pairs",
    "full_cases",
    "given_cases",
    "given_values",
    "pairwise_cases",
    "smoke_cases",
    "tile_code",
    "transform_cases",
]

ROUND_MODES: tuple[RoundMode, ...] = tuple(RoundMode)
SCALE_MODES: tuple[ScaleMode, ...] = tuple(ScaleMode)
CAST_MODES: tuple[CastMode, ...] = tuple(CastMode)


def tile_code(dt: DataType) -> str | None:
    """The tile segments of ``dt`` as in ``CombinationSpace.tiles`` ("" tensor, None unscaled)."""
    if dt.sspec is None:
        return None
    return "_".join(t.code for t in dt.sspec.tiles)


def _uses_scalemode(dt: DataType) -> bool:
    """SEMANTICS.md §5.3: scale modes select power-of-two scales of float and int data only."""
    s = dt.sspec
    return s is not None and s.scale.is_exponent and not dt.nspec.is_uint


def _uses_saturate(dt: DataType) -> bool:
    """SEMANTICS.md §5.2: ``saturate`` concerns unscaled casts only."""
    return dt.sspec is None


def _uses_transpose(dt: DataType) -> bool:
    """SEMANTICS.md §5.1: ``transpose_scale`` has no effect on tensor and 1-D scales."""
    return dt.sspec is not None and dt.sspec.is_2d


@dataclass(frozen=True)
class Case:
    """One datatype under one set of modes, checked in each of ``castmodes``.

    Attributes:
        dtype: the datatype.
        roundmode: the round mode.
        scalemode: the scale mode.
        saturate: the unscaled overflow option.
        transpose_scale: swap the 2-D tile segments.
        rsource: ``"seed"`` or ``"rbits"`` under stochastic rounding, else None.
        castmodes: the cast modes to check.
        transform: the cast's transform (SEMANTICS.md §5.11), else None.
        given: the scale parts given to the cast (SEMANTICS.md §5.12: ``scale``, ``zero``,
            ``tensor_scale``), their values made from the entry (``given_values``).
    """

    dtype: DataType
    roundmode: RoundMode
    scalemode: ScaleMode = ScaleMode.FLOOR
    saturate: bool = True
    transpose_scale: bool = False
    rsource: str | None = None
    castmodes: tuple[CastMode, ...] = CAST_MODES
    transform: Hadamard | None = None
    given: tuple[str, ...] = ()

    def modes(self, castmode: CastMode) -> CastModes:
        """The CastModes an engine's ``supports`` receives for one cast mode."""
        return CastModes.of(
            castmode,
            self.roundmode,
            self.scalemode,
            self.saturate,
            self.transpose_scale,
            transform=self.transform,
        )

    @property
    def oracle_key(self) -> tuple:
        """The modes that can change a bit (SEMANTICS.md): equal keys give equal results."""
        dt = self.dtype
        return (
            dt,
            self.roundmode,
            self.scalemode if _uses_scalemode(dt) else ScaleMode.FLOOR,
            self.saturate if _uses_saturate(dt) else True,
            self.transpose_scale if _uses_transpose(dt) else False,
            self.rsource,
            self.transform,
            self.given,
        )

    @property
    def label(self) -> str:
        """A short description for failure messages."""
        parts = [self.dtype.code, self.roundmode.value, self.scalemode.value]
        if not self.saturate:
            parts.append("ieee-overflow")
        if self.transpose_scale:
            parts.append("transposed")
        if self.rsource:
            parts.append(self.rsource)
        if self.transform is not None:
            h = self.transform
            parts.append(f"hadamard{h.size}[{''.join('+' if s > 0 else '-' for s in h.signs)}]")
        if self.given:
            parts.append("given-" + "+".join(self.given))
        return "/".join(parts)


def _rsource(mode: RoundMode, choice: int) -> str | None:
    return ("seed", "rbits")[choice % 2] if mode is RoundMode.STOCHASTIC else None


def fast_cases(dtypes: Iterable[DataType] | None = None) -> list[Case]:
    """Every datatype of ``dtypes`` (default ``tcast.combinations()``) once, the modes rotated.

    Datatype ``i`` gets round mode ``i mod 5``; the scale mode, ``saturate``,
    ``transpose_scale`` and the stochastic bit source rotate on other periods, so that
    every mode meets every kind of datatype (``test_fast_tier_touches_every_axis_value``
    checks this on the list). Each case is checked in every cast mode.
    """
    out = []
    scaled: dict[str, int] = {}  # power-of-two-scaled datatypes seen, per element kind
    for i, dt in enumerate(tcast.combinations() if dtypes is None else dtypes):
        rm = ROUND_MODES[i % len(ROUND_MODES)]
        j = 0
        if _uses_scalemode(dt):
            kind = "int" if dt.nspec.is_int else "float"
            j = scaled[kind] = scaled.get(kind, -1) + 1
        out.append(
            Case(
                dt,
                rm,
                scalemode=SCALE_MODES[j % len(SCALE_MODES)],
                saturate=i % 2 == 0,
                transpose_scale=(i // 2) % 2 == 1,
                rsource=_rsource(rm, i // len(ROUND_MODES)),
            )
        )
    return out


def full_cases(dt: DataType, roundmode: RoundMode) -> list[Case]:
    """``dt`` under ``roundmode`` and every scale mode, each checked in every cast mode.

    Where an option cannot change a bit (``saturate`` of a scaled cast, ``transpose_scale``
    of a tensor or 1-D scale) its other value is still cast once, under ``floor``, to check
    that the engine ignores it. Stochastic rounding is cast with a seed and with rbits.
    """
    sources = ("seed", "rbits") if roundmode is RoundMode.STOCHASTIC else (None,)
    out = []
    for sm in SCALE_MODES:
        sats = (True, False) if _uses_saturate(dt) or sm is ScaleMode.FLOOR else (True,)
        trs = (False, True) if _uses_transpose(dt) or sm is ScaleMode.FLOOR else (False,)
        for sat in sats:
            for tr in trs:
                for src in sources:
                    out.append(Case(dt, roundmode, sm, sat, tr, src))
    return out


def _scale_kind(dt: DataType) -> str:
    s = dt.sspec
    if s is None:
        return "unscaled"
    base = "exponent" if s.scale.is_exponent else "float"
    if dt.zero is not None:
        return f"{base} scale + zero point"
    if dt.is_multiscale:
        return "tile scale + tensor scale"
    return f"{base} scale"


def _data_kind(dt: DataType) -> str:
    n = dt.nspec
    kind = "uint" if n.is_uint else "int" if n.is_int else "float"
    return kind if dt.sspec is not None else f"{kind} unscaled"


def _datatype_axes(dt: DataType) -> set[tuple[str, object]]:
    """The datatype's own axis values (what the space decides, not the modes)."""
    out: set[tuple[str, object]] = {
        ("element format", dt.nspec.code),
        ("tile", tile_code(dt)),
        ("scale kind", _scale_kind(dt)),
        ("data kind", _data_kind(dt)),
    }
    if dt.sspec is not None:
        out.add(("scale format", dt.sspec.scale.code))
    if dt.zero is not None:
        out.add(("zero-point format", dt.zero.code))
    if dt.tenscale is not None:
        out.add(("tensor-scale format", dt.tenscale.code))
    return out


def axis_values(case: Case) -> set[tuple[str, object]]:
    """The ``(axis, value)`` pairs ``case`` touches: what the smoke tier must cover.

    Axes: element format, tile, scale kind, data kind, scale / zero-point / tensor-scale
    format, round mode (also per data kind), scale mode of power-of-two scales (also per data
    kind), cast mode, ``saturate`` of unscaled casts, ``transpose_scale`` of 2-D tiles, and the
    source of stochastic bits.
    """
    dt = case.dtype
    out = _datatype_axes(dt) | {
        ("round mode", case.roundmode),
        ("round mode x data kind", (case.roundmode, _data_kind(dt))),
    }
    out |= {("cast mode", cm) for cm in case.castmodes}
    if _uses_scalemode(dt):
        out.add(("scale mode (power-of-two scale)", case.scalemode))
        out.add(("scale mode x data kind", (case.scalemode, _data_kind(dt))))
    if _uses_saturate(dt):
        out.add(("saturate (unscaled)", case.saturate))
    if _uses_transpose(dt):
        out.add(("transpose_scale (2-D tiles)", case.transpose_scale))
    if case.rsource:
        out.add(("stochastic bits", case.rsource))
    return out


#: Casts with a transform in every tier (SEMANTICS.md §5.11): (catalog name or code, group
#: size, sign seed (None: TransformerEngine's Wgrad signs), round mode, bit source, scale
#: mode). Sizes 2..8 fit most battery shapes' tiled dimensions; 16 and 32 those of whole
#: MX/NVFP4 tiles; the others are refused as the oracle refuses them (a checked SpecError).
_TRANSFORMS = (
    ("nvfp4", 16, None, RoundMode.EVEN, None, ScaleMode.FLOOR),
    ("mxfp4", 32, 11, RoundMode.STOCHASTIC, "seed", ScaleMode.CEIL),
    ("mxfp8", 8, 12, RoundMode.AWAY, None, ScaleMode.MIDMAX),
    ("mxint8", 4, 13, RoundMode.STOCHASTIC, "rbits", ScaleMode.FLOOR),
    ("e5m2_e8m0_t8d0", 8, 14, RoundMode.ZERO, None, ScaleMode.FLOOR),
    ("uint4_float32_int8_t16", 2, 15, RoundMode.TRUNC, None, ScaleMode.FLOOR),
    ("e4m3fn_float32_t0", 4, 16, RoundMode.EVEN, None, ScaleMode.FLOOR),
)


def transform_cases(dtypes: Iterable[DataType] | None = None) -> list[Case]:
    """The casts with a transform of every tier (of ``dtypes``, default all of them)."""
    wanted = None if dtypes is None else set(dtypes)
    out = []
    for code, size, seed, rm, rsource, sm in _TRANSFORMS:
        dt = tcast.datatype(code)
        if wanted is not None and dt not in wanted:
            continue
        h = Hadamard.te_wgrad() if seed is None else Hadamard.seeded(size, seed)
        out.append(Case(dt, rm, scalemode=sm, rsource=rsource, transform=h))
    return out


#: Casts with given scale parts in every tier (SEMANTICS.md §5.12): (catalog name or code,
#: parts, round mode, bit source, scale mode, transpose_scale). Exponent and float scales,
#: tiles, channels, columns and 2-D tiles, each two-level part alone and both, uint zero
#: points; the values come from ``given_values``.
_GIVEN = (
    ("mxfp8", ("scale",), RoundMode.EVEN, None, ScaleMode.CEIL, False),
    ("mxint8", ("scale",), RoundMode.STOCHASTIC, "seed", ScaleMode.FLOOR, False),
    ("nvfp4", ("tensor_scale",), RoundMode.EVEN, None, ScaleMode.FLOOR, False),
    (
        "e2m1f_e4m3fn_float32_t16",
        ("scale", "tensor_scale"),
        RoundMode.AWAY,
        None,
        ScaleMode.FLOOR,
        False,
    ),
    ("e4m3fn_float32_t0", ("scale",), RoundMode.ZERO, None, ScaleMode.FLOOR, False),
    ("e4m3fn_e8m0_t32_t32", ("scale",), RoundMode.EVEN, None, ScaleMode.FLOOR, True),
    ("uint8_float32_uint8_t16", ("zero",), RoundMode.EVEN, None, ScaleMode.FLOOR, False),
    (
        "uint8_e8m0_int8_t16",
        ("scale", "zero"),
        RoundMode.STOCHASTIC,
        "rbits",
        ScaleMode.FLOOR,
        False,
    ),
)


def given_cases(dtypes: Iterable[DataType] | None = None) -> list[Case]:
    """The casts with given scale parts of every tier (of ``dtypes``, default all of them)."""
    wanted = None if dtypes is None else set(dtypes)
    out = []
    for code, parts, rm, rsource, sm, tr in _GIVEN:
        dt = tcast.datatype(code)
        if wanted is None or dt in wanted:
            out.append(Case(dt, rm, sm, True, tr, rsource, given=parts))
    return out


def given_values(case: Case, shape: tuple[int, ...]) -> dict[str, object]:
    """The given parts of ``case`` for an input of ``shape`` (none without ``case.given``).

    Block ``i`` (C order of the scale shape) is given the scale ``1.25 * 2**(i % 7 - 3)``
    and the zero point ``i % 5 - 1``; the tensor scale is 0.375. Where the datatype does not
    fit ``shape`` (the cast is refused for that), one value stands in.
    """
    if not case.given:
        return {}
    try:
        sshape = tcast.block_layout(shape, case.dtype, case.transpose_scale).scale_shape
    except SpecError:
        sshape = (1,)
    i = np.arange(int(np.prod(sshape)))
    out: dict[str, object] = {}
    if "scale" in case.given:
        out["scale"] = (np.exp2(i % 7 - 3) * 1.25).astype(np.float32).reshape(sshape)
    if "zero" in case.given:
        out["zero"] = (i % 5 - 1).astype(np.float32).reshape(sshape)
    if "tensor_scale" in case.given:
        out["tensor_scale"] = 0.375
    return out


def smoke_cases(cases: Iterable[Case] | None = None) -> list[Case]:
    """The cases (default: the fast tier) that first touch an axis value, in their order.

    A greedy cover: every ``(axis, value)`` pair of :func:`axis_values` that the fast tier
    touches, the smoke tier touches too.
    """
    seen: set[tuple[str, object]] = set()
    out = []
    for case in fast_cases() if cases is None else cases:
        values = axis_values(case)
        if values - seen:
            out.append(case)
            seen |= values
    return out


# ------------------------------------------------------------------ pairwise cover
#: Datatypes tried per uncovered pair (the first that can cover it, in space order).
_CANDIDATES = 32
#: Round mode and stochastic bit source as one axis (the source exists only when stochastic).
_ROUNDINGS: tuple[tuple[RoundMode, str | None], ...] = (
    *((rm, None) for rm in ROUND_MODES if rm is not RoundMode.STOCHASTIC),
    (RoundMode.STOCHASTIC, "seed"),
    (RoundMode.STOCHASTIC, "rbits"),
)


def _mode_axes(dt: DataType) -> dict[str, tuple[object, ...]]:
    """The modes that can change a bit of ``dt`` (SEMANTICS.md §5), and their values."""
    out: dict[str, tuple[object, ...]] = {"rounding": _ROUNDINGS}
    if _uses_scalemode(dt):
        out["scale mode"] = SCALE_MODES
    if _uses_saturate(dt):
        out["saturate"] = (True, False)
    if _uses_transpose(dt):
        out["transpose_scale"] = (False, True)
    return out


def _case_modes(case: Case) -> dict[str, object]:
    dt = case.dtype
    out: dict[str, object] = {"rounding": (case.roundmode, case.rsource)}
    if _uses_scalemode(dt):
        out["scale mode"] = case.scalemode
    if _uses_saturate(dt):
        out["saturate"] = case.saturate
    if _uses_transpose(dt):
        out["transpose_scale"] = case.transpose_scale
    return out


def _pairs(dt: DataType, modes: dict[str, object]) -> set[frozenset]:
    """The pairs a case covers: each datatype value with each mode value, and mode pairs."""
    mv = [(k, v) for k, v in modes.items()]
    out = {frozenset((d, m)) for d in _datatype_axes(dt) for m in mv}
    out |= {frozenset((a, b)) for i, a in enumerate(mv) for b in mv[i + 1 :]}
    return out


def case_pairs(case: Case) -> set[frozenset]:
    """The ``{(axis, value), (axis, value)}`` pairs ``case`` covers (see :func:`pairwise_cases`)."""
    return _pairs(case.dtype, _case_modes(case))


def feasible_pairs(dtypes: Iterable[DataType]) -> set[frozenset]:
    """Every pair some case of ``dtypes`` can cover.

    A datatype value with a mode value that matters to a datatype having it, and two mode
    values that matter to one datatype.
    """
    out: set[frozenset] = set()
    for dt in dtypes:
        axes = _mode_axes(dt)
        mv = [(k, v) for k, vs in axes.items() for v in vs]
        out |= {frozenset((d, m)) for d in _datatype_axes(dt) for m in mv}
        out |= {frozenset((a, b)) for i, a in enumerate(mv) for b in mv[i + 1 :] if a[0] != b[0]}
    return out


def pairwise_cases(dtypes: Iterable[DataType] | None = None) -> list[Case]:
    """:func:`fast_cases`, then cases that cover the pairs it leaves out (a covering design).

    Every pair of :func:`feasible_pairs` is covered at least once: every value of a datatype
    axis (element, scale, zero point, tensor scale, tile, kinds) with every value of each mode
    axis that matters to it (round mode with the stochastic bit source, scale mode, saturate,
    transpose_scale), and every two mode values. Datatype-axis pairs are covered by the
    datatypes themselves (every one is in the fast tier). Greedy and deterministic: for each
    uncovered pair in a fixed order, a datatype that can cover it, its other modes
    chosen one axis at a time to cover the most uncovered pairs, and of the first
    ``_CANDIDATES`` datatypes that can cover it the one that covers the most.
    """
    space = list(tcast.combinations() if dtypes is None else dtypes)
    out = fast_cases(space)
    covered: set[frozenset] = set().union(*(case_pairs(c) for c in out)) if out else set()
    missing = feasible_pairs(space) - covered
    axes = {dt: _mode_axes(dt) for dt in space}
    values = {dt: _datatype_axes(dt) for dt in space}
    for pair in sorted(missing, key=lambda p: sorted(map(repr, p))):
        if pair in covered:
            continue
        fits = [
            d
            for d in space
            if all(v in values[d] or (v[0] in axes[d] and v[1] in axes[d][v[0]]) for v in pair)
        ]
        best = None
        for dt in fits[:_CANDIDATES]:
            modes = {v[0]: v[1] for v in pair if v[0] in axes[dt]}
            for axis, choices in axes[dt].items():
                if axis not in modes:
                    modes[axis] = max(
                        choices,
                        key=lambda c, a=axis: len(_pairs(dt, {**modes, a: c}) - covered),
                    )
            gain = len(_pairs(dt, modes) - covered)
            if best is None or gain > best[0]:
                best = (gain, dt, modes)
        _, dt, modes = best
        rm, src = modes["rounding"]
        case = Case(
            dt,
            rm,
            scalemode=modes.get("scale mode", ScaleMode.FLOOR),
            saturate=modes.get("saturate", True),
            transpose_scale=modes.get("transpose_scale", False),
            rsource=src,
        )
        out.append(case)
        covered |= case_pairs(case)
    return out
