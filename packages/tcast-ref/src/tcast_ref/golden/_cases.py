"""The inputs of a golden set: coverage levels for unscaled casts, tiles and decodes.

Values are built in float64 (every value used here is exact there), then rounded to the
input dtype with round-to-nearest-even (float64 -> float32 -> float16/bfloat16 where needed:
both conversions are IEEE-defined, so the inputs are the same on every machine). Random parts
come from the set's Philox stream (``_random.Stream``) only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np

from tcast import DataType, NumberSpec

from .._codec import decode
from ._random import Stream

__all__ = [
    "INPUT_TYPES",
    "LEVELS",
    "PARTIAL_PATTERNS",
    "TilePlan",
    "codebook_magnitudes",
    "element_max",
    "exhaustive_inputs",
    "partial_extents",
    "partial_inputs",
    "positive_grid",
    "tile_inputs",
    "tile_pool",
    "unscaled_inputs",
]

#: Input dtypes: (NumPy dtype, unsigned view dtype, bits).
INPUT_TYPES = {
    "float32": (np.dtype(np.float32), np.dtype(np.uint32), 32),
    "float16": (np.dtype(np.float16), np.dtype(np.uint16), 16),
    "bfloat16": (np.dtype(ml_dtypes.bfloat16), np.dtype(np.uint16), 16),
}
#: Coverage levels.
LEVELS = ("1", "2", "exhaustive")
#: Default size of the random part: unscaled values / random tiles, per level.
DEFAULT_COUNT = {"1": (1024, 128), "2": (65536, 4096)}
#: The most random elements a set may ask for (``count`` values, or ``count`` tiles times the
#: elements of a tile): 2**24, a set of a few hundred MB, generated in about a minute.
MAX_RANDOM_ELEMENTS = 1 << 24
#: Largest number of positive grid values used as-is (wider formats are sampled).
_GRID_CAP = 512

_SPECIALS = {
    32: (
        0x7F800000,
        0xFF800000,
        0x7FC00000,
        0xFFC00000,
        0x7F800001,
        0x7FFFFFFF,
        0x7F7FFFFF,
        0xFF7FFFFF,
        0x00000001,
        0x80000001,
        0x00800000,
        0x007FFFFF,
    ),
    16: (
        0x7C00,
        0xFC00,
        0x7E00,
        0xFE00,
        0x7C01,
        0x7FFF,
        0x7BFF,
        0xFBFF,
        0x0001,
        0x8001,
        0x0400,
        0x03FF,
    ),
    "bfloat16": (
        0x7F80,
        0xFF80,
        0x7FC0,
        0xFFC0,
        0x7F81,
        0x7FFF,
        0x7F7F,
        0xFF7F,
        0x0001,
        0x8001,
        0x0080,
        0x007F,
    ),
}


def _specials(idt: str) -> np.ndarray:
    key = "bfloat16" if idt == "bfloat16" else INPUT_TYPES[idt][2]
    return np.array(_SPECIALS[key], dtype=INPUT_TYPES[idt][1])


def to_input(values: np.ndarray, idt: str) -> np.ndarray:
    """float64 values rounded to the input dtype (RNE), as that dtype."""
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        f32 = np.asarray(values, np.float64).astype(np.float32)
        return f32 if idt == "float32" else f32.astype(INPUT_TYPES[idt][0])


def _bits(a: np.ndarray, idt: str) -> np.ndarray:
    return np.ascontiguousarray(a).view(INPUT_TYPES[idt][1])


def _from_bits(b: np.ndarray, idt: str) -> np.ndarray:
    return np.ascontiguousarray(b.astype(INPUT_TYPES[idt][1])).view(INPUT_TYPES[idt][0])


def _neighbours(a: np.ndarray, idt: str, offsets: tuple[int, ...]) -> np.ndarray:
    """Values ``k`` representable steps away in the input dtype (same sign; no wrap)."""
    b = _bits(a, idt).astype(np.int64)
    width = INPUT_TYPES[idt][2]
    sign = b & (1 << (width - 1))
    mag = b & ((1 << (width - 1)) - 1)
    top = (0xFF << 23) if width == 32 else (0x1F << 10) if idt == "float16" else (0xFF << 7)
    finite = mag < top
    out = []
    for k in offsets:
        m = mag + k
        ok = finite & (m >= 0) & (m <= top)
        out.append((sign | m)[ok])
    return _from_bits(np.concatenate(out) if out else np.zeros(0, np.int64), idt)


def _dedupe(a: np.ndarray, idt: str) -> np.ndarray:
    """Drop repeated bit patterns, keeping the first of each (order is part of the set)."""
    b = _bits(a, idt)
    _, first = np.unique(b, return_index=True)
    return a[np.sort(first)]


def positive_grid(n: NumberSpec, pow2_scale: bool = False) -> np.ndarray:
    """Positive finite values of a format (ints under a power-of-two scale: fixed point).

    Formats with more than ``_GRID_CAP`` positive values (16-bit and wider) give a sample: the
    64 smallest, the 64 largest and evenly spaced ones between (``grid_rule`` says so).
    """
    if n.is_codebook:
        return np.unique(np.concatenate(codebook_magnitudes(n)))[1:]
    # the codes or integers 1..count, or the sampled ones among them, made without the whole
    # range (2**31 of them for 32-bit formats: 16 GiB as int64)
    count = n.max_code if n.is_float else n.maxint
    ks = _sample_indices(count) + 1 if count > _GRID_CAP else np.arange(1, count + 1)
    if n.is_float:
        v = decode(ks.astype(np.int64), n).astype(np.float64)
        v = np.unique(v[np.isfinite(v) & (v > 0)])
    else:
        v = ks.astype(np.float64)
        if n.is_int and pow2_scale:
            v = v / float(1 << (n.bits - 2))
    return _sample(v) if v.size > _GRID_CAP else v


def _sample_indices(size: int) -> np.ndarray:
    """The 64 first, the 64 last and evenly spaced indices between (``_GRID_CAP`` in all)."""
    return np.unique(
        np.concatenate(
            [
                np.arange(64),
                np.arange(size - 64, size),
                np.linspace(0, size - 1, _GRID_CAP - 128).astype(np.int64),
            ]
        )
    )


def _sample(v: np.ndarray) -> np.ndarray:
    """The elements of ``v`` at :func:`_sample_indices`."""
    return v[_sample_indices(v.size)]


def codebook_magnitudes(n: Any) -> list[np.ndarray]:
    """Per mapping of a codebook, the distinct magnitudes of its entries, ascending, 0 first."""
    return [np.unique(np.abs(np.array((0.0, *t), np.float64))) for t in n.tables]


def tile_pool(n: NumberSpec, pow2_scale: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The positive grid of a tile set and the pool its fill values come from.

    The pool is the grid followed by the midpoints between neighbouring grid values (and
    between 0 and the smallest); for a codebook, the midpoints of each mapping's own
    magnitudes (the ties of its table), not of the union.
    """
    grid = positive_grid(n, pow2_scale)
    if not n.is_codebook:
        return grid, np.concatenate([grid, _midpoints(grid)])
    mids = np.unique(np.concatenate([(m[1:] + m[:-1]) / 2 for m in codebook_magnitudes(n)]))
    return grid, np.concatenate([grid, mids])


def grid_rule(n: NumberSpec) -> str:
    """How the grid of ``n`` was taken (for the header)."""
    if n.is_codebook:
        return (
            "every positive entry magnitude of every mapping; the fill pool adds each "
            "mapping's midpoints (the ties between its neighbouring entries, and between 0 "
            "and its smallest)"
        )
    count = n.max_code if n.is_float else n.maxint
    if count > _GRID_CAP:
        return (
            f"a sample of the {count} positive values: the 64 smallest, the 64 largest and "
            f"{_GRID_CAP - 128} evenly spaced between"
        )
    return "every positive finite value"


def element_max(dt: DataType) -> float:
    """M: the largest element magnitude (ints under an exponent scale: fixed point)."""
    n = dt.nspec
    if n.is_float or n.is_codebook:
        return float(n.max_value)
    if n.is_int and dt.sspec is not None and dt.sspec.scale.is_exponent:
        return float(Fraction(n.maxint, 1 << (n.bits - 2)))
    return float(n.maxint)


def _midpoints(grid: np.ndarray) -> np.ndarray:
    lo = np.concatenate([[0.0], grid[:-1]])
    return (lo + grid) / 2


def unscaled_inputs(n: NumberSpec, idt: str, level: str, count: int, rng: Stream) -> np.ndarray:
    """Level 1/2 inputs of an unscaled cast into ``n``, in the input dtype.

    Every code's value, every midpoint between neighbouring values (and between 0 and the
    smallest), the overflow boundary (max, the tie above it, one step above, twice max) — each
    with both signs and with its neighbours in the input dtype (level 1: one step either side;
    level 2: 1, 2, 3, 16 and 256 steps) — the input dtype's specials, then ``count`` random
    values: half random bit patterns, half of random sign, exponent in the format's range (two
    binades beyond each end) and random significand.
    """
    grid = positive_grid(n)
    top = grid[-1]
    gap = top - grid[-2] if grid.size > 1 else top
    mids = _midpoints(grid)
    edges = np.array([grid[0] / 4, top + gap / 2, top + gap, 2 * top])
    base = np.concatenate([[0.0], grid, mids, edges])
    base = np.concatenate([base, -base])
    vals = to_input(base, idt)
    offsets = (-1, 1) if level == "1" else (-256, -16, -3, -2, -1, 1, 2, 3, 16, 256)
    near = _neighbours(to_input(np.concatenate([mids, -mids, edges, -edges]), idt), idt, offsets)
    parts = [vals, near, _from_bits(_specials(idt), idt), _random_values(n, idt, count, rng)]
    return _dedupe(np.concatenate(parts), idt)


def _random_values(n: NumberSpec, idt: str, count: int, rng: Stream) -> np.ndarray:
    half = count // 2
    width = INPUT_TYPES[idt][2]
    raw = rng.words(half)
    if width == 16:
        raw = raw & np.uint32(0xFFFF)
    patterns = _from_bits(raw, idt)
    k = count - half
    lo = n.emin - n.mbits - 2 if n.is_float else -2
    hi = (n.emax if n.is_float else n.maxint.bit_length()) + 2
    e = lo + rng.below(hi - lo + 1, k)
    frac = rng.words(k).astype(np.float64) / 2.0**32
    v = np.ldexp(1.0 + frac, e.astype(np.int32))
    v = np.where(rng.signs(k), -v, v)
    return np.concatenate([patterns, to_input(v, idt)])


def exhaustive_inputs(idt: str) -> np.ndarray:
    """Every 16-bit input.

    All float16 and all bfloat16 patterns widened exactly to float32 (float32 input), or every
    pattern of the 16-bit input dtype.
    """
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    if idt == "float16":
        return every.view(np.float16)
    if idt == "bfloat16":
        return every.view(ml_dtypes.bfloat16)
    return np.concatenate([_widen_f16(every), _widen_bf16(every)])


def _widen_bf16(b: np.ndarray) -> np.ndarray:
    """bfloat16 patterns as float32, exactly (NaN payloads and signalling bits kept)."""
    return (b.astype(np.uint32) << 16).view(np.float32)


def _widen_f16(b: np.ndarray) -> np.ndarray:
    """float16 patterns as float32, exactly, by integer operations.

    No platform conversion: some quiet signalling NaNs.
    """
    b = b.astype(np.uint32)
    sign = (b & 0x8000) << 16
    e = (b >> 10) & 0x1F
    m = b & 0x3FF
    normal = ((e + 112) << 23) | (m << 13)
    special = np.uint32(0x7F800000) | (m << 13)
    # subnormal m * 2**-24: shift the leading bit of m up to the hidden-bit position
    lead = np.floor(np.log2(np.maximum(m, 1))).astype(np.uint32)  # exact for m < 2**10
    sub = ((lead + 103) << 23) | ((m << (23 - lead)) & 0x7FFFFF)
    out = np.where(e == 31, special, np.where(e > 0, normal, np.where(m > 0, sub, 0)))
    return (sign | out.astype(np.uint32)).view(np.float32)


# ------------------------------------------------------------------------- tiles
@dataclass(frozen=True)
class TilePlan:
    """Which tiles a scaled set holds (recorded in the header).

    Attributes:
        exponents: the scale positions k (amax near ``M * 2**k``).
        patterns: the tile patterns made at every position.
        random: how many random tiles follow.
        reach: grid fill values move up to this many steps in the input dtype.
    """

    exponents: tuple[int, ...]
    patterns: tuple[str, ...]
    random: int
    reach: int = 1


#: Tile patterns and what they exercise (header.json lists them).
PATTERNS = {
    "grid": "amax = M*2^k; other elements are grid values and midpoints at scale 2^k (ties), "
    "and their neighbours in the input dtype",
    "binade_low": "amax = 2^(floor_log2(M)+k): the bottom of the binade (scale-mode boundary)",
    "binade_high": "amax = the largest input value below 2^(floor_log2(M)+k+1)",
    "overflow": "amax = (M + half the top gap)*2^k: elements tie into overflow at the scale",
    "outlier": "amax = M*2^k; the others 2^-12 smaller (they underflow to zero or subnormals)",
    "equal": "every element of the same magnitude, random signs (sparsity ties)",
    "positive": "grid tile with every element >= 0 (uint ranges that must still include 0)",
    "negative": "grid tile with every element <= 0",
    "nan": "grid tile with one NaN (non-finite block)",
    "inf": "grid tile with one +Inf (non-finite block)",
}
#: Tiles made once per set (after the per-position patterns, before the random tiles).
SINGLE_TILES = {
    "zeros": "every element +0 or -0 (all-zero block: scale code 0 / smallest normal)",
    "input_max": "one element +-the input dtype's largest finite value, the others grid "
    "values at the top position (the largest reachable scale)",
}


def _scale_range(dt: DataType) -> tuple[int, int]:
    """floor_log2 of the smallest and largest scale values a cast produces."""
    s = dt.sspec.scale
    if s.is_exponent:
        return -s.bias, s.max_code - s.bias
    return s.emin, s.emax  # float scales are clamped to the normal range (SEMANTICS.md 5.5)


def _input_range(idt: str) -> tuple[int, int]:
    """floor_log2 of the smallest subnormal and of the largest finite input."""
    return {"float32": (-149, 127), "float16": (-24, 15), "bfloat16": (-133, 127)}[idt]


def tile_plan(dt: DataType, idt: str, level: str, count: int) -> TilePlan:
    """The scale positions and patterns of a tile set.

    Level 1: k at both ends of the scale range (two beyond, the end, one inside), at both ends
    of what the input dtype reaches, and around 0 (-8, -1, 0, 1, 8), where it fits the input
    dtype; level 2: every k from the lowest to the
    highest that fits, each pattern twice with different random fill.
    """
    smin, smax = _scale_range(dt)
    m = element_max(dt)
    elog = int(np.floor(np.log2(m)))
    lo_in, hi_in = _input_range(idt)
    kmin, kmax = lo_in - elog + 1, hi_in - elog
    if level == "1":
        ks = sorted(
            {
                smin - 2,
                smin - 1,
                smin,
                smin + 1,
                -8,
                -1,
                0,
                1,
                8,
                smax - 1,
                smax,
                smax + 1,
                smax + 2,
                kmin,
                kmin + 1,
                kmax - 1,
                kmax,
            }
        )
    else:
        ks = list(range(smin - 3, smax + 3))
    ks = tuple(k for k in ks if kmin <= k <= kmax)
    pats = tuple(PATTERNS) if level == "1" else tuple(PATTERNS) * 2
    return TilePlan(ks, pats, count, 1 if level == "1" else 3)


def tile_inputs(
    dt: DataType,
    size: int,
    idt: str,
    plan: TilePlan,
    rng: Stream,
    bar: Any = None,
    special: Callable[[str, int, Stream], np.ndarray] | None = None,
) -> np.ndarray:
    """Tiles of ``size`` elements (one per row) in the input dtype, following ``plan``.

    ``bar`` (a progress bar: ``update(n)``) advances by one per tile made. ``special``
    makes the tiles of patterns that are not in :data:`PATTERNS` (the subtile and codebook
    patterns) from the pattern, the scale position and the stream.
    """
    n = dt.nspec
    pow2 = dt.sspec.scale.is_exponent
    grid, pool = tile_pool(n, pow2)
    m = element_max(dt)
    gap = grid[-1] - grid[-2] if grid.size > 1 else grid[-1]
    elog = int(np.floor(np.log2(m)))
    rows = []
    for k in plan.exponents:
        for pat in plan.patterns:
            if pat not in PATTERNS and special is not None:
                rows.append(special(pat, k, rng))
            else:
                rows.append(_tile(pat, k, size, m, gap, elog, pool, idt, rng, plan.reach))
            if bar is not None:
                bar.update(1)
    signs = rng.signs(size)
    rows.append(to_input(np.where(signs, -0.0, 0.0), idt))
    top_k = plan.exponents[-1] if plan.exponents else 0
    x = _grid_fill(top_k, size, pool, idt, rng, plan.reach)
    biggest = _from_bits(_specials(idt)[6:8], idt)  # +max, -max
    x[int(rng.below(size, 1)[0])] = biggest[int(rng.below(2, 1)[0])]
    rows.append(x)
    for _ in range(plan.random):
        k = int(plan.exponents[int(rng.below(len(plan.exponents), 1)[0])]) if plan.exponents else 0
        rows.append(_random_tile(k, size, m, idt, rng))
        if bar is not None:
            bar.update(1)
    if not rows:
        return np.zeros((0, size), INPUT_TYPES[idt][0])
    return np.stack(rows)


def _grid_fill(
    k: int, size: int, pool: np.ndarray, idt: str, rng: Stream, reach: int = 1
) -> np.ndarray:
    """Grid values and midpoints at scale 2**k with random signs.

    Each value then moves a random number of steps in [-reach, reach] in the input dtype
    (the sticky neighbours of ties).
    """
    v = pool[rng.below(pool.size, size)] * 2.0**k
    v = np.where(rng.signs(size), -v, v)
    x = to_input(v, idt)
    step = rng.below(2 * reach + 1, size) - reach
    b = _bits(x, idt).astype(np.int64)
    width = INPUT_TYPES[idt][2]
    mag = b & ((1 << (width - 1)) - 1)
    top = int(_bits(_from_bits(_specials(idt)[6:7], idt), idt)[0])  # the largest finite
    new = mag + step
    ok = (new >= 0) & (new <= top) & (mag <= top)  # never past the largest finite, never Inf
    moved = np.where(ok, b + step, b)
    return _from_bits(moved, idt)


def _tile(
    pat: str,
    k: int,
    size: int,
    m: float,
    gap: float,
    elog: int,
    pool: np.ndarray,
    idt: str,
    rng: Stream,
    reach: int,
) -> np.ndarray:
    """One tile of pattern ``pat`` at scale position ``k`` (see ``PATTERNS``)."""
    at = int(rng.below(size, 1)[0])
    x = _grid_fill(k, size, pool, idt, rng, reach)
    top = {
        "grid": m * 2.0**k,
        "binade_low": 2.0 ** (elog + k),
        "outlier": m * 2.0**k,
        "overflow": (m + gap / 2) * 2.0**k,
    }.get(pat)
    if pat == "binade_high":
        edge = to_input(np.array([2.0 ** (elog + k + 1)]), idt)
        below = _neighbours(edge, idt, (-1,))
        # an edge beyond the input dtype (Inf) leaves its largest finite value
        top = float(below[0] if below.size else _from_bits(_specials(idt)[6:7], idt)[0])
    if pat == "outlier":
        x = _grid_fill(k - 12, size, pool, idt, rng, reach)
    if pat == "equal":
        x = to_input(np.where(rng.signs(size), -m, m) * 2.0**k, idt)
    if pat == "positive":
        x = np.abs(x)
    if pat == "negative":
        x = -np.abs(x)
    if top is not None:
        biggest = float(_from_bits(_specials(idt)[6:7], idt)[0])
        top = min(top, biggest)  # at the top position a pattern may pass the input's range
        x[at] = to_input(np.array([-top if rng.signs(1)[0] else top]), idt)[0]
    if pat in ("nan", "inf"):
        x[at] = to_input(np.array([np.nan if pat == "nan" else np.inf]), idt)[0]
    return x


def random_tiles(dt: DataType, size: int, idt: str, k: int, count: int, rng: Stream) -> np.ndarray:
    """``count`` random tiles at scale position ``k`` (as the plan's random tiles)."""
    m = element_max(dt)
    rows = [_random_tile(k, size, m, idt, rng) for _ in range(count)]
    return np.stack(rows) if rows else np.zeros((0, size), INPUT_TYPES[idt][0])


def _random_tile(k: int, size: int, m: float, idt: str, rng: Stream) -> np.ndarray:
    """Random significands, exponents spread over 24 binades below amax's (k +- 2)."""
    lo_in, hi_in = _input_range(idt)
    e = k + int(np.floor(np.log2(m))) - rng.below(24, size) + int(rng.below(5, 1)[0]) - 2
    e = np.clip(e, lo_in, hi_in - 1)
    frac = rng.words(size).astype(np.float64) / 2.0**32
    v = np.ldexp(1.0 + frac, e.astype(np.int32))
    return to_input(np.where(rng.signs(size), -v, v), idt)


# ------------------------------------------------------------------ partial tiles
#: Patterns of the partial tiles (finite: a NaN or Inf block is covered by the whole tiles).
PARTIAL_PATTERNS = ("grid", "overflow", "binade_high", "outlier")


def partial_extents(
    tile_shape: tuple[int, ...], channel: tuple[bool, ...], level: str
) -> list[tuple[int, ...]]:
    """The extents of the partial tiles of a set, one length per tile segment.

    A segment of T elements takes 1, 3, T/2 and T-1 (level 1) or every length from 1 to T-1
    (level 2); a channel segment is always whole. 2-D tiles: every segment is partial
    together (the i-th length of each), then each one alone (the others whole).
    """

    def lengths(t: int) -> list[int]:
        if t < 2:
            return []
        picks = range(1, t) if level == "2" else (1, 3, t // 2, t - 1)
        return sorted({p for p in picks if 1 <= p < t})

    per = [[] if ch else lengths(t) for t, ch in zip(tile_shape, channel, strict=True)]
    if len(tile_shape) == 1:
        return [(n,) for n in per[0]]
    out: list[tuple[int, ...]] = []
    a, b = per
    for i in range(max(len(a), len(b))):
        if a and b:
            out.append((a[min(i, len(a) - 1)], b[min(i, len(b) - 1)]))
    out += [(n, tile_shape[1]) for n in a] + [(tile_shape[0], n) for n in b]
    return list(dict.fromkeys(out))


def partial_inputs(
    dt: DataType,
    tile_shape: tuple[int, ...],
    extents: list[tuple[int, ...]],
    repeat: int,
    idt: str,
    rng: Stream,
) -> tuple[np.ndarray, np.ndarray]:
    """Partial tiles: lines of ``prod(tile_shape)`` words, absent elements +0, and their LEN.

    For each extent, ``repeat`` lines cycling over :data:`PARTIAL_PATTERNS` at k = 0 (each
    built on the live elements only, so amax is among them).

    Returns:
        The lines (input dtype) and the extents (uint16, one column per tile segment).
    """
    grid, pool = tile_pool(dt.nspec, dt.sspec.scale.is_exponent)
    m = element_max(dt)
    gap = grid[-1] - grid[-2] if grid.size > 1 else grid[-1]
    elog = int(np.floor(np.log2(m)))
    size = int(np.prod(tile_shape))
    rows, lens = [], []
    for ext in extents:
        live = int(np.prod(ext))
        for j in range(repeat):
            pat = PARTIAL_PATTERNS[j % len(PARTIAL_PATTERNS)]
            vals = _tile(pat, 0, live, m, gap, elog, pool, idt, rng, 1)
            line = np.zeros(tile_shape, INPUT_TYPES[idt][0])
            line[tuple(slice(0, e) for e in ext)] = vals.reshape(ext)
            rows.append(line.reshape(size))
            lens.append(ext)
    if not rows:
        return np.zeros((0, size), INPUT_TYPES[idt][0]), np.zeros((0, len(tile_shape)), np.uint16)
    return np.stack(rows), np.array(lens, np.uint16)
