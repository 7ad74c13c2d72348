"""The conformance battery: inputs, cases, oracles and array adapters of ``test_conformance.py``.

Not a test module (pytest does not collect it): ``test_conformance.py`` loads it by path.

* **Cases** (:class:`Case`): one datatype of ``tcast.combinations()`` under one set of modes,
  checked in every cast mode. :func:`fast_cases` gives every datatype once with the modes
  rotated over the datatypes; :func:`full_cases` gives every datatype under every round mode
  and every scale mode (and both values of ``saturate``, ``transpose_scale`` and the stochastic
  bit source).
* **Battery** (:func:`battery`): the inputs every case is cast on. The values are built per
  datatype from the element format's grid and from the datatype's blocks
  (``tcast.exact.block_indices``): edge blocks (amax at ``M * 2^k``, at ``2^k`` and just below,
  above the element max and midmax, ties and sticky neighbours, carries into the next binade,
  all-zero blocks with both signs, scale underflow, float32 subnormals, amax near float32 max,
  equal magnitudes for sparsity ties), special values (NaN, -NaN, +-Inf, +-0), seeded random
  data, an empty array and a non-contiguous view; shapes of rank 1 to 3 with full and partial
  tiles; float32, float16 and bfloat16 inputs. Every entry has explicit random bits (uint32 of
  the input shape, with 0 and 2^32 - 1 among them) and a 64-bit Philox seed.
* **Oracles** (:class:`ExactOracle`, :class:`RefOracle`): the expected bits of a case. The
  ``ref`` engine is judged by the exact model (``tcast.exact.cast_array``, pure Python, so every
  entry has at most :data:`EXACT_MAX_ELEMENTS` elements); every other engine by ``tcast_ref``.
* **Adapters** (:class:`Adapter`): how the NumPy battery reaches an engine that works on another
  array type, and how its results come back, bit for bit.
"""

from __future__ import annotations

import importlib
import math
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

import tcast
from tcast import CastMode, CastModes, DataType, NumberSpec, RoundMode, ScaleMode, SpecError, exact
from tcast.kit import cast_with

__all__ = [
    "ADAPTER_ENV",
    "CAST_MODES",
    "DEVICE_ENV",
    "ENGINES_ENV",
    "EXACT_MAX_ELEMENTS",
    "INPUT_DTYPES",
    "ROUND_MODES",
    "SCALE_MODES",
    "Adapter",
    "Case",
    "Entry",
    "ExactOracle",
    "Expected",
    "RefOracle",
    "adapter_for",
    "battery",
    "check_case",
    "compare",
    "empty_entries",
    "fast_cases",
    "full_cases",
    "large_battery",
    "oracle_for",
    "tile_code",
]

#: Largest entry the exact (pure-Python) oracle is given.
EXACT_MAX_ELEMENTS = 64
#: Device the torch adapter moves inputs to (``cpu`` by default).
DEVICE_ENV = "TCAST_CONFORMANCE_DEVICE"
#: ``module:attribute`` of an extra adapter factory (tried before the built-in ones).
ADAPTER_ENV = "TCAST_CONFORMANCE_ADAPTER"
#: Comma-separated engine names to test (default: every installed engine).
ENGINES_ENV = "TCAST_CONFORMANCE_ENGINES"

ROUND_MODES: tuple[RoundMode, ...] = tuple(RoundMode)
SCALE_MODES: tuple[ScaleMode, ...] = tuple(ScaleMode)
CAST_MODES: tuple[CastMode, ...] = tuple(CastMode)
INPUT_DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}
_UINT_OF_WIDTH = {1: np.uint8, 2: np.uint16, 4: np.uint32}


# =============================================================================== cases
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
    """

    dtype: DataType
    roundmode: RoundMode
    scalemode: ScaleMode = ScaleMode.FLOOR
    saturate: bool = True
    transpose_scale: bool = False
    rsource: str | None = None
    castmodes: tuple[CastMode, ...] = CAST_MODES

    def modes(self, castmode: CastMode) -> CastModes:
        """The CastModes an engine's ``supports`` receives for one cast mode."""
        return CastModes.of(
            castmode, self.roundmode, self.scalemode, self.saturate, self.transpose_scale
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
        return "/".join(parts)


def _rsource(mode: RoundMode, choice: int) -> str | None:
    return ("seed", "rbits")[choice % 2] if mode is RoundMode.STOCHASTIC else None


def fast_cases() -> list[Case]:
    """Every datatype of ``tcast.combinations()`` once, the modes rotated over them.

    Datatype ``i`` gets round mode ``i mod 5``; the scale mode, ``saturate``,
    ``transpose_scale`` and the stochastic bit source rotate on other periods, so that
    every mode meets every kind of datatype (``test_fast_tier_touches_every_axis_value``
    checks this on the list). Each case is checked in every cast mode.
    """
    out = []
    scaled: dict[str, int] = {}  # power-of-two-scaled datatypes seen, per element kind
    for i, dt in enumerate(tcast.combinations()):
        rm = ROUND_MODES[i % len(ROUND_MODES)]
        j = 0
        if _uses_scalemode(dt):
            kind = "int" if dt.nspec.is_int else "float"
            j = scaled[kind] = scaled.get(kind, -1) + 1
        out.append(Case(
            dt, rm,
            scalemode=SCALE_MODES[j % len(SCALE_MODES)],
            saturate=i % 2 == 0,
            transpose_scale=(i // 2) % 2 == 1,
            rsource=_rsource(rm, i // len(ROUND_MODES)),
        ))
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


# =============================================================================== battery
@dataclass(eq=False)
class Entry:
    """One input of the battery.

    Attributes:
        name: what the entry exercises (``edge``, ``special``, ``random`` ...).
        x: the input array (float32, float16 or bfloat16; possibly a non-contiguous view).
        rbits: explicit random bits, uint32 of ``x.shape`` (C-contiguous).
        seed: the Philox seed for the seeded stochastic cast (uses both key words).
    """

    name: str
    x: np.ndarray
    rbits: np.ndarray
    seed: int
    origin: str = ""

    @property
    def input_dtype(self) -> str:
        """float32, float16 or bfloat16."""
        return next(k for k, v in INPUT_DTYPES.items() if v == self.x.dtype)

    @property
    def label(self) -> str:
        """Name, shape, input dtype (and layout) for failure messages."""
        view = ", transposed view" if not self.x.flags.c_contiguous else ""
        return f"{self.name} {self.x.shape} {self.input_dtype}{view}"

    def repro(self) -> str:
        """Python lines that rebuild ``x`` bit for bit (and ``rbits``)."""
        if self.x.size > 256 and self.origin:
            return (
                "import importlib.util, sys, tcast  # from the repository root\n"
                "path = 'tests/conformance_battery.py'\n"
                "spec = importlib.util.spec_from_file_location('cb', path)\n"
                "cb = sys.modules['cb'] = importlib.util.module_from_spec(spec)\n"
                "spec.loader.exec_module(cb)\n"
                f"x, rbits = {self.origin}.x, {self.origin}.rbits"
            )
        width = self.x.dtype.itemsize
        uint = _UINT_OF_WIDTH[width].__name__
        bits = np.ascontiguousarray(self.x).view(_UINT_OF_WIDTH[width]).reshape(-1)
        dtype = {"bfloat16": "ml_dtypes.bfloat16"}.get(self.input_dtype, f"np.{self.input_dtype}")
        hexes = ", ".join(f"0x{int(b):0{2 * width}x}" for b in bits)
        lines = [
            "import ml_dtypes, numpy as np, tcast",
            f"x = np.array([{hexes}], np.{uint}).view({dtype}).reshape({self.x.shape})",
        ]
        if not self.x.flags.c_contiguous and self.x.ndim == 2:
            lines.append("x = np.ascontiguousarray(x.T).T  # a non-contiguous view, as cast")
        r = ", ".join(str(int(v)) for v in self.rbits.reshape(-1))
        lines.append(f"rbits = np.array([{r}], np.uint32).reshape({self.x.shape})")
        return "\n".join(lines)


# (name, shape, input dtype, first edge pattern, non-contiguous view); the unscaled edge
# entries take consecutive slices of one list of edge values
_LAYOUT: tuple[tuple[str, tuple[int, ...], str, int, bool], ...] = (
    ("edge", (2, 32), "float32", 2, False),
    ("edge", (64,), "bfloat16", 0, False),
    ("edge", (9, 7), "float16", 5, False),
    ("special", (2, 3, 10), "float32", 0, False),
    ("special", (5, 8), "float16", 1, False),
    ("random", (16, 4), "float32", 0, True),
    ("random", (2, 3, 10), "bfloat16", 0, False),
    ("zeros", (3, 5), "float32", 0, False),
    ("tiny", (5, 3), "float32", 0, False),
)
# larger inputs, for engines judged by tcast_ref (no element limit): many blocks, odd sizes
_LARGE: tuple[tuple[str, tuple[int, ...], str, int, bool], ...] = (
    ("edge", (33, 130), "bfloat16", 0, False),
    ("special", (3, 40, 33), "float16", 0, False),
    ("random", (4, 96, 40), "float32", 0, False),
    ("random", (200, 24), "float32", 0, True),
)
# empty inputs: a scaled dimension of size 0, and an empty last (tiled) dimension
_EMPTY: tuple[tuple[tuple[int, ...], str], ...] = (((0, 5), "float32"), ((4, 0), "bfloat16"))


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _f32(v: float | Fraction) -> np.float32:
    with np.errstate(over="ignore"):
        return np.float32(float(v))


_F32 = np.dtype(np.float32)


def _step(v: np.float32, to: float, idt: np.dtype) -> np.float32:
    """The neighbour of ``v`` toward ``to`` in the input dtype ``idt`` (sticky bits survive)."""
    with np.errstate(over="ignore"):
        w = np.asarray(v, np.float32).astype(idt)
        return np.float32(np.nextafter(w, np.asarray(to, np.float32).astype(idt)))


def _up(v: np.float32, idt: np.dtype = _F32) -> np.float32:
    return _step(v, np.inf, idt)


def _down(v: np.float32, idt: np.dtype = _F32) -> np.float32:
    return _step(v, 0.0, idt)


@dataclass(frozen=True)
class _Grid:
    """The element format's geometry, relative to a unit block scale.

    Attributes:
        top: the element max ``M`` (for ints under a power-of-two scale, ``maxint * 2^(2-K)``).
        emax: ``floor_log2(M)``.
        ties: midpoints of neighbouring grid values, with their float32 neighbours.
        points: grid values (exact), including the carries' landing points.
        above: values above ``M`` (ties into overflow, midmax, just below ``2^(emax+1)``).
    """

    top: Fraction
    emax: int
    ties: tuple[Fraction, ...]
    points: tuple[Fraction, ...]
    above: tuple[Fraction, ...]


def _pairs(n: NumberSpec, unit: Fraction) -> list[tuple[Fraction, Fraction]]:
    """Neighbouring positive grid values at chosen codes: zero, subnormals, binade edges, top."""
    if n.is_integer:
        top = n.maxint
        cs = {0, 1, 2, 3, top // 2 - 1, top // 2, top - 2, top - 1}
        return [(Fraction(c) * unit, Fraction(c + 1) * unit) for c in sorted(cs) if 0 <= c < top]
    top, m = n.max_code, n.mbits
    if n.bits <= 8:
        cs = set(range(top))  # every neighbour pair of a small format
    else:
        cs = {0, 1, 2, (1 << m) - 2, (1 << m) - 1, 1 << m, (2 << m) - 1, top // 2, top - 2, top - 1}
    return [(n.magnitude_value(c), n.magnitude_value(c + 1)) for c in sorted(cs) if 0 <= c < top]


def _grid(dt: DataType) -> _Grid:
    n = dt.nspec
    unit = Fraction(1)
    if n.is_int and dt.sspec is not None and dt.sspec.scale.is_exponent:
        unit = Fraction(1, 1 << (n.bits - 2))  # MXINT fixed point (SEMANTICS.md §5.4)
    pairs = _pairs(n, unit)
    if n.bits <= 8 and not n.is_integer and len(pairs) > 24:
        # keep the interesting neighbours of a small float: around 0, the subnormal/normal
        # boundary, every binade edge and the top
        m = n.mbits
        keep = [
            p for i, p in enumerate(pairs)
            if i < 3 or i >= len(pairs) - 3 or (i % (1 << m)) in (0, (1 << m) - 1)
        ]
        pairs = keep
    top = Fraction(n.maxint) * unit if n.is_integer else n.max_value
    emax = top.numerator.bit_length() - top.denominator.bit_length()
    if Fraction(2) ** emax > top:
        emax -= 1
    ties, points = [], []
    for a, b in pairs:
        ties.append((a + b) / 2)
        points.extend((a, b))
    if n.is_integer:
        u = unit
    else:
        u = Fraction(2) ** (max(emax, 1 - n.bias) - n.mbits)
    nxt = Fraction(2) ** (emax + 1)
    above = [top + u / 2, top + u, top + 3 * u / 2, (top + nxt) / 2, nxt - u / 4]
    above = [a for a in above if a > top]
    return _Grid(top, emax, tuple(ties), tuple(sorted(set(points))), tuple(above))


def _scaled(v: Fraction, k: int) -> np.float32:
    return _f32(v * Fraction(2) ** k)


def _tie_values(
    g: _Grid, k: int, rng: np.random.Generator, count: int, limit: float, idt: np.dtype
) -> list:
    """``count`` tie/sticky/grid values at block scale ``2^k``, each at most ``limit``."""
    cands = []
    for t in g.ties:
        v = _scaled(t, k)
        cands.extend((v, _up(v, idt), _down(v, idt)))
    cands.extend(_scaled(p, k) for p in g.points)
    cands = [c for c in cands if 0 < c <= limit and np.isfinite(c)]
    if not cands:
        return [np.float32(0)] * count
    picks = rng.choice(len(cands), size=count, replace=count > len(cands))
    return [cands[i] for i in picks]


_F32_MAX = np.float32(np.finfo(np.float32).max)
_F32_SUBNORMALS = (
    np.float32(2.0 ** -149), np.float32(3 * 2.0 ** -149), _down(np.float32(2.0 ** -126)),
    np.float32(2.0 ** -127), np.float32(2.0 ** -126), np.float32(1.5 * 2.0 ** -140),
)
_N_PATTERNS = 10


def _block_values(g: _Grid, pattern: int, size: int, rng, idt: np.dtype) -> list:
    """Values of one block of ``size`` elements under edge pattern ``pattern``."""
    if size == 0:
        return []
    k = int(rng.integers(-6, 7))
    p = pattern % _N_PATTERNS
    if p == 4:  # all zero, both signs
        return [np.float32(0)] * size
    if p == 5:  # scale underflow: every element 2^-139; or float32 subnormals, alone or
        # under one small normal amax (wide elements under a float scale keep subnormal codes)
        kind = int(rng.integers(3))
        if kind == 0:
            return [np.float32(2.0 ** -139)] * size
        sub = [_F32_SUBNORMALS[i] for i in rng.integers(len(_F32_SUBNORMALS), size=size)]
        return sub if kind == 1 else [np.float32(2.0 ** int(rng.integers(-126, -110))), *sub[1:]]
    if p == 6:  # seeded random, heavy-tailed
        return list((rng.standard_normal(size) * 2.0 ** k).astype(np.float32))
    if p == 7:  # equal magnitudes: sparsity ties keep the lower index
        return [_scaled(g.top / 3, k)] * size
    if p == 8:  # amax near float32 max: the scale's top, products overflowing to Inf
        big = [_F32_MAX, np.float32(2.0 ** 127), np.float32(1.5 * 2.0 ** 126), _down(_F32_MAX)]
        amax = big[int(rng.integers(len(big)))]
        rest = list((rng.standard_normal(size - 1) * 2.0 ** 120).astype(np.float32))
        return [amax, *rest]
    amaxes = {
        0: _scaled(g.top, k),  # amax = M * 2^k
        1: _scaled(Fraction(2) ** g.emax, k),  # amax a power of two
        2: _down(_scaled(Fraction(2) ** (g.emax + 1), k), idt),  # the largest value below 2^k
        3: _scaled(g.above[int(rng.integers(len(g.above)))], k) if g.above else _up(
            _scaled(g.top, k), idt),  # scaled amax above M (ties into overflow, midmax ...)
        9: _scaled(g.top, k),  # M * 2^k and carries from the subnormals / binade edges
    }
    amax = amaxes[p]
    rest = _tie_values(g, k, rng, size - 1, float(amax), idt)
    if p == 9:
        rest = [_scaled(t, k) for t in g.ties[:2]] + rest
        rest = rest[: size - 1]
    return [amax, *rest]


def _unscaled_values(dt: DataType, start: int, size: int, idt: np.dtype) -> list:
    """Edge values of an unscaled cast, slice ``[start, start + size)`` of a fixed list.

    The list starts with the named edges (the max, ties into overflow and beyond, powers of
    two and the float32 values just below them, subnormals), then the ties between
    neighbouring grid values, then their float32 neighbours above and below (sticky bits).
    """
    g = _grid(dt)
    n = dt.nspec
    emin = 1 - n.bias
    vals = [_f32(g.top), *(_f32(a) for a in g.above)]
    if g.above:
        vals.append(_up(_f32(g.above[0]), idt))  # just above the tie into overflow
    for e in (emin - n.mbits - 1, emin - n.mbits, emin, 0, g.emax, g.emax + 1, g.emax + 2):
        v = _f32(Fraction(2) ** e)
        vals.extend((v, _down(v, idt)))
    vals.extend(_F32_SUBNORMALS)
    vals.extend((_F32_MAX, np.float32(1)))
    mids = [_f32(t) for t in g.ties]
    vals += mids + [_up(v, idt) for v in mids] + [_down(v, idt) for v in mids]
    vals = [v for v in vals if np.isfinite(v)]
    return [vals[(start + i) % len(vals)] for i in range(size)]


def _blocks(dt: DataType, shape: tuple[int, ...]) -> list[list[int]] | None:
    """Flat indices of each block (None: unscaled, or a shape the tiles do not fit)."""
    if dt.sspec is None:
        return None
    try:
        _, blocks = exact.block_indices(shape, dt)
    except SpecError:
        return None
    return [idx for _, idx in blocks]


def _signs(rng, size: int) -> np.ndarray:
    return np.where(rng.integers(2, size=size) == 1, np.float32(-1), np.float32(1))


def _fill(
    dt: DataType, name: str, shape: tuple[int, ...], first: int, start: int, rng,
    idt: np.dtype,
) -> np.ndarray:
    """The float32 values of one entry, C order.

    ``first`` is the edge pattern of the first block, ``start`` where an unscaled edge entry
    starts in the list of unscaled edge values.
    """
    size = math.prod(shape)
    out = np.zeros(size, np.float32)
    if size == 0:
        return out
    blocks = _blocks(dt, shape)
    if name == "zeros":
        return out * _signs(rng, size)
    if name == "random":
        v = rng.standard_normal(size) * np.exp2(rng.integers(-8, 9, size))
        v[rng.random(size) < 0.1] = 0
        return (v.astype(np.float32) * _signs(rng, size)).astype(np.float32)
    if blocks is None:
        if name == "tiny":
            vals = _block_values(_grid(dt), 5, size, rng, idt)
        elif dt.sspec is None or name == "edge":
            vals = _unscaled_values(dt, start, size, idt)
        else:
            vals = list((rng.standard_normal(size) * 4).astype(np.float32))
        out[:] = vals
    else:
        g = _grid(dt)
        for j, idx in enumerate(blocks):
            pattern = {"special": 6, "tiny": 5}.get(name, first + j)
            vals = np.array(_block_values(g, pattern, len(idx), rng, idt), np.float32)
            out[np.array(idx, np.int64)[rng.permutation(len(idx))]] = vals
    out = (out * _signs(rng, size)).astype(np.float32)
    if name == "special":
        _place_specials(out, blocks, first, rng)
    return out


def _place_specials(out: np.ndarray, blocks, first: int, rng) -> None:
    """NaN, -NaN, +-Inf and +-0 in some blocks; other blocks stay finite."""
    nan = np.float32(np.nan)
    specials = [nan, -nan, np.float32(np.inf), np.float32(-np.inf), np.float32(0),
                np.float32(-0.0)]
    if blocks is None:  # elementwise: every special, at random places
        where = rng.choice(out.size, size=min(out.size, len(specials)), replace=False)
        for i, w in enumerate(where):
            out[w] = specials[i]
        return
    for j, idx in enumerate(blocks):
        if not idx:
            continue
        kind = (j + 2 * first) % 4  # a tensor scale (one block) gets kinds 0 and 2
        pos = [idx[int(i)] for i in rng.permutation(len(idx))]
        if kind == 0:
            out[pos[0]] = nan  # one NaN in a finite block
        elif kind == 1:
            out[pos[0]] = np.float32(np.inf) if rng.integers(2) else np.float32(-np.inf)
        elif kind == 2:  # -NaN beside +-Inf (sparsity: NaN ranks above Inf), -0 and +0
            news = (-nan, np.float32(np.inf), np.float32(-np.inf), np.float32(-0.0),
                    np.float32(0))
            for s, p in zip(news, pos, strict=False):
                out[p] = s
        # kind 3: the block stays finite


def _rbits(rng, shape: tuple[int, ...]) -> np.ndarray:
    r = rng.integers(0, 1 << 32, size=shape, dtype=np.uint64).astype(np.uint32)
    flat = r.reshape(-1)
    if flat.size >= 2:
        flat[0], flat[-1] = 0, 0xFFFFFFFF  # never up / up from any nonzero fraction
    return r


_BATTERY_CACHE: dict[DataType, tuple[Entry, ...]] = {}


def battery(dt: DataType) -> tuple[Entry, ...]:
    """The inputs cast for ``dt`` (deterministic; each at most EXACT_MAX_ELEMENTS elements)."""
    if dt not in _BATTERY_CACHE:
        _BATTERY_CACHE[dt] = _entries(dt, _LAYOUT, "small")
    return _BATTERY_CACHE[dt]


def large_battery(dt: DataType) -> tuple[Entry, ...]:
    """The battery plus larger inputs (thousands of elements), for the tcast_ref oracle."""
    return battery(dt) + _entries(dt, _LARGE, "large")


def _entries(dt: DataType, layout, tag: str) -> tuple[Entry, ...]:
    out = []
    start = 0
    for i, (name, shape, in_dtype, first, view) in enumerate(layout):
        rng = _rng(dt.code, tag, i)
        # a view entry is a transposed view of a C-contiguous array: strides must not matter
        fill_shape = shape[::-1] if view else shape
        idt = INPUT_DTYPES[in_dtype]
        values = _fill(dt, name, fill_shape, first, start, rng, idt).reshape(fill_shape)
        start += math.prod(shape) if name == "edge" else 0
        with np.errstate(over="ignore"):  # float32 beyond float16: +-Inf inputs, on purpose
            x = values.astype(idt)
        x = x.T if view else x
        seed = (0x9E3779B97F4A7C15 + 0x1000193 * i) % (1 << 64)
        fn = "cb.battery" if tag == "small" else "cb.large_battery"
        k = i if tag == "small" else i + len(_LAYOUT)
        origin = f"{fn}(tcast.datatype({dt.code!r}))[{k}]"
        out.append(Entry(name, x, _rbits(rng, shape), seed, origin))
    return tuple(out)


def empty_entries(dt: DataType) -> tuple[Entry, ...]:
    """Inputs with no elements (checked apart from the battery: a separate rule)."""
    return tuple(
        Entry("empty", np.zeros(shape, INPUT_DTYPES[idt]), np.zeros(shape, np.uint32),
              0x9E3779B97F4A7C15)
        for shape, idt in _EMPTY
    )


# =============================================================================== oracles
@dataclass(eq=False)
class Expected:
    """The expected bits of one case on one entry (NumPy; codes as unsigned integers).

    Attributes:
        error: the TcastError subclass the cast must raise (then nothing else is set).
        virtual: the virtual result viewed as unsigned integers of the input's width.
        upcast: the float32 upcast, viewed as uint32.
        codes: one code per element (uint64, the input's shape).
        scale: scale codes in the scale shape (uint64), or None.
        zero: zero-point codes (uint64, the scale shape), or None.
        tenscale: the tensor-scale code, or None.
        mask: the keep-mask (bool, the input's shape), or None.
        packed: the compress data.
        packed_mask: the compress mask, or None.
    """

    error: type[Exception] | None = None
    virtual: np.ndarray | None = None
    upcast: np.ndarray | None = None
    codes: np.ndarray | None = None
    scale: np.ndarray | None = None
    zero: np.ndarray | None = None
    tenscale: int | None = None
    mask: np.ndarray | None = None
    packed: bytes = b""
    packed_mask: bytes | None = None


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(_UINT_OF_WIDTH[a.dtype.itemsize])


def _cast_kwargs(case: Case, entry: Entry) -> dict[str, Any]:
    return {
        "roundmode": case.roundmode,
        "scalemode": case.scalemode,
        "seed": entry.seed if case.rsource == "seed" else None,
        "saturate": case.saturate,
        "transpose_scale": case.transpose_scale,
    }


class ExactOracle:
    """``tcast.exact.cast_array``: the oracle of the ``ref`` engine (small inputs only)."""

    name = "exact"
    max_elements = EXACT_MAX_ELEMENTS

    def expect(self, case: Case, entry: Entry) -> Expected:
        """Cast ``entry`` exactly under ``case``."""
        x, dt = entry.x, case.dtype
        if x.size > self.max_elements:
            raise ValueError(f"entry {entry.label} is too large for the exact oracle")
        vals = np.asarray(x, np.float32).reshape(-1).tolist()
        kw = _cast_kwargs(case, entry)
        rbits = entry.rbits.reshape(-1).tolist() if case.rsource == "rbits" else None
        try:
            # float32 values first (codes and upcast), then rounded to the input dtype (§7)
            r = exact.cast_array(vals, x.shape, dt, input_dtype="float32", rbits=rbits, **kw)
        except SpecError:
            return Expected(error=SpecError)
        in_name = entry.input_dtype
        virtual = [exact.to_input_dtype(v, in_name) for v in r.values]
        if dt.sspec is None:  # §8: upcast decodes the codes (an input NaN in FP4 gives +0)
            up = [exact.decode(c, dt.nspec) for c in r.codes]
        else:
            up = list(r.values)
        shape = x.shape
        ss = r.scale_shape
        return Expected(
            virtual=_bits(_to_dtype(virtual, x.dtype).reshape(shape)),
            upcast=_bits(_to_dtype(up, np.dtype(np.float32)).reshape(shape)),
            codes=np.array(r.codes, np.uint64).reshape(shape),
            scale=None if r.scale is None else np.array(r.scale, np.uint64).reshape(ss),
            zero=None if r.zero is None else np.array(r.zero, np.uint64).reshape(ss),
            tenscale=r.tenscale,
            mask=None if r.mask is None else np.array(r.mask, bool).reshape(shape),
            packed=r.packed(),
            packed_mask=r.packed_mask(),
        )


def _to_dtype(values: list[float], dtype: np.dtype) -> np.ndarray:
    """Python floats already representable in ``dtype`` (NaN signs kept) as an array."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array(values, np.float64).astype(np.float32).astype(dtype)


class RefOracle:
    """``tcast_ref``: the oracle of every engine other than ``ref``."""

    name = "tcast_ref"
    max_elements = None

    def expect(self, case: Case, entry: Entry) -> Expected:
        """Cast ``entry`` with tcast_ref under ``case``."""
        import tcast_ref

        x, dt = entry.x, case.dtype
        kw = _cast_kwargs(case, entry)
        kw["rbits"] = entry.rbits if case.rsource == "rbits" else None
        try:
            v = tcast_ref.cast(x, dt, castmode="virtual", **kw)
            a = tcast_ref.cast(x, dt, castmode="actual", **kw)
            c = tcast_ref.cast(x, dt, castmode="compress", **kw)
        except SpecError:
            return Expected(error=SpecError)

        def u64(arr):
            return None if arr is None else np.asarray(arr).astype(np.uint64)

        return Expected(
            virtual=_bits(v),
            upcast=_bits(np.asarray(tcast_ref.upcast(a), np.float32)),
            codes=u64(a.data),
            scale=u64(a.scale),
            zero=u64(a.zero),
            tenscale=None if a.tenscale is None else int(a.tenscale),
            mask=None if a.mask is None else np.asarray(a.mask, bool),
            packed=np.asarray(c.data, np.uint8).tobytes(),
            packed_mask=None if c.mask is None else np.asarray(c.mask, np.uint8).tobytes(),
        )


def oracle_for(engine_name: str) -> ExactOracle | RefOracle:
    """The exact model for ``ref``, tcast_ref for every other engine."""
    return ExactOracle() if engine_name == "ref" else RefOracle()


# =============================================================================== adapters
@dataclass(frozen=True)
class Adapter:
    """Moves NumPy battery arrays to an engine's array type and results back, bit for bit.

    Attributes:
        name: a label (``numpy``, ``torch:cuda`` ...).
        to_engine: NumPy array (float32/float16/bfloat16 inputs, uint32 rbits) -> engine array.
        to_numpy: engine array (or scalar, or None) -> NumPy array (None stays None).
        sample: a small float32 input in the engine's array type, for ``accepts``.
    """

    name: str
    to_engine: Callable[[np.ndarray], Any]
    to_numpy: Callable[[Any], Any]
    sample: Callable[[], Any] = field(repr=False, default=lambda: None)


def numpy_adapter() -> Adapter:
    """The identity: engines that take NumPy arrays (``tcast_ref``)."""

    def back(a: Any) -> Any:
        return None if a is None else np.asarray(a)

    return Adapter("numpy", lambda a: a, back, lambda: np.zeros((2, 32), np.float32))


def torch_adapter(device: str | None = None) -> Adapter:
    """torch tensors on ``device`` (default: ``$TCAST_CONFORMANCE_DEVICE`` or ``cpu``).

    bfloat16 crosses as 16-bit integers viewed as ``torch.bfloat16`` (NumPy has no bfloat16
    torch knows, and torch's float32 -> bfloat16 conversion does not keep NaN bits); unsigned
    integer tensors come back through the signed type of their width, viewed unsigned.

    Raises:
        ImportError: when torch is not installed.
    """
    import torch

    dev = torch.device(device or os.environ.get(DEVICE_ENV, "cpu"))
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}
    unsigned = {torch.uint16: np.uint16, torch.uint32: np.uint32, torch.uint64: np.uint64}

    def to_engine(a: np.ndarray) -> Any:
        if a.dtype == ml_dtypes.bfloat16:
            return torch.from_numpy(_bits(a).view(np.int16)).view(torch.bfloat16).to(dev)
        return torch.from_numpy(a).to(dev)

    def to_numpy(t: Any) -> Any:
        if t is None or not isinstance(t, torch.Tensor):
            return None if t is None else np.asarray(t)
        t = t.detach().cpu()
        if t.dtype == torch.bfloat16:
            return t.contiguous().view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        if t.dtype in signed:
            return t.contiguous().view(signed[t.dtype]).numpy().view(unsigned[t.dtype])
        return t.numpy()

    def sample() -> Any:
        return torch.zeros((2, 32), dtype=torch.float32, device=dev)

    return Adapter(f"torch:{dev}", to_engine, to_numpy, sample)


def _external_adapters() -> list[Callable[[], Adapter]]:
    spec = os.environ.get(ADAPTER_ENV)
    if not spec:
        return []
    module, _, attr = spec.partition(":")
    return [getattr(importlib.import_module(module), attr)]


def adapter_for(engine: Any) -> Adapter | None:
    """The first adapter whose sample array ``engine.accepts`` (None: no adapter fits)."""
    for factory in (*_external_adapters(), numpy_adapter, torch_adapter):
        try:
            adapter = factory()
        except ImportError:
            continue
        if engine.accepts(adapter.sample()):
            return adapter
    return None


# =============================================================================== checking
def _diff(what: str, got: np.ndarray | None, want: np.ndarray | None) -> str | None:
    if want is None or got is None:
        return None if want is None and got is None else (
            f"{what}: got {'None' if got is None else 'an array'}, "
            f"expected {'None' if want is None else 'an array'}")
    if got.shape != want.shape:
        return f"{what}: shape {got.shape}, expected {want.shape}"
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    if bad.size == 0:
        return None
    i = int(bad[0])
    g, w = got.reshape(-1)[i], want.reshape(-1)[i]
    return (f"{what}: {bad.size} of {want.size} differ; first at flat index {i}: "
            f"got 0x{int(g):x}, expected 0x{int(w):x}")


def _codes(what: str, a: Any, bits: int) -> tuple[np.ndarray | None, str | None]:
    """Codes as uint64, after checking they are stored unsigned and wide enough."""
    if a is None:
        return None, None
    a = np.asarray(a)
    if a.dtype.kind != "u" or a.dtype.itemsize * 8 < bits:
        return None, f"{what}: stored as {a.dtype}, expected unsigned codes of >= {bits} bits"
    return a.astype(np.uint64), None


def compare(
    castmode: CastMode, want: Expected, got: Any, up: Any, entry: Entry, dt: DataType,
    engine_name: str, transpose: bool,
) -> list[str]:
    """Differences between an engine's (NumPy-converted) result and the oracle's bits."""
    out: list[str] = []
    if castmode is CastMode.VIRTUAL:
        got = np.asarray(got)
        if got.dtype != entry.x.dtype:
            return [f"virtual: dtype {got.dtype}, expected the input dtype {entry.x.dtype}"]
        d = _diff("virtual", _bits(got), want.virtual)
        return [d] if d else []
    r = got
    if not isinstance(r, tcast.CastResult):
        return [f"{castmode.value}: returned {type(r).__name__}, expected a tcast.CastResult"]
    meta = {
        "dtype": (r.dtype, dt), "shape": (tuple(r.shape), entry.x.shape),
        "castmode": (r.castmode, castmode), "input_dtype": (r.input_dtype, entry.input_dtype),
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
    else:
        data = np.asarray(r.data)
        if data.dtype != np.uint8 or data.ndim != 1:
            out.append(f"compress data: {data.dtype} of rank {data.ndim}, expected 1-D uint8")
        elif data.tobytes() != want.packed:
            out.append(f"compress data: {data.tobytes().hex()} != expected {want.packed.hex()}")
        pm = None if r.mask is None else np.asarray(r.mask, np.uint8).tobytes()
        if pm != want.packed_mask:
            out.append(f"compress mask: {pm!r} != expected {want.packed_mask!r}")
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
        d = _diff(f"upcast({castmode.value})", _bits(up), want.upcast)
        out += [d] if d else []
    return out


def check_case(
    engine: Any, adapter: Adapter, want: Expected, case: Case, entry: Entry,
    castmodes: tuple[CastMode, ...],
) -> Iterator[tuple[CastMode, str]]:
    """Cast ``entry`` with ``engine`` in each of ``castmodes``; yield every difference."""
    kw = _cast_kwargs(case, entry)
    kw["rbits"] = adapter.to_engine(entry.rbits) if case.rsource == "rbits" else None
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
            for msg in compare(cm, want, adapter.to_numpy(got), None, entry, case.dtype,
                               engine.name, case.transpose_scale):
                yield cm, msg
            continue
        try:
            up = adapter.to_numpy(engine.upcast(got))
        except Exception as err:  # report, with the cast's other differences
            up = np.zeros(0, np.float32)
            yield cm, f"upcast raised {type(err).__name__}: {err}"
        if isinstance(got, tcast.CastResult):
            got = _result_to_numpy(got, adapter)
        for msg in compare(cm, want, got, up, entry, case.dtype, engine.name,
                           case.transpose_scale):
            yield cm, msg


def _result_to_numpy(r: tcast.CastResult, adapter: Adapter) -> tcast.CastResult:
    conv = adapter.to_numpy
    return tcast.CastResult(
        data=conv(r.data), scale=conv(r.scale), zero=conv(r.zero), tenscale=conv(r.tenscale),
        mask=conv(r.mask), meta=r.meta, dtype=r.dtype, shape=tuple(r.shape),
        castmode=r.castmode, input_dtype=r.input_dtype, transpose_scale=r.transpose_scale,
        engine=r.engine, extra=r.extra,
    )
