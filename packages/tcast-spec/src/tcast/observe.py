"""Observers: calibration methods that choose a datatype's scales from data (SEMANTICS.md §5.13).

An observer watches calibration batches and produces the scale parts of a datatype — block
scales, zero points, a tensor scale — to pass to a cast as given parts (§5.12). Every method
chooses a *range* per block (an amax; a minimum and maximum for uint data) and the datatype's
own scale rule (§5.3-§5.7) turns the range into scales, so an observer that saw the same data
as a cast gives that cast's scales.

This module holds the methods' settings (frozen dataclasses) and every rule that is not array
arithmetic: ranks, candidate grids, histogram growth, the percentile and entropy searches over
histogram counts. The engines (``tcast_ref.Observer``, ``tcast_torch.Observer``) hold the
array statistics and read these rules, so every engine gives the same bits.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction

from .datatype import DataType
from .errors import SpecError
from .kit import CastRules, as_datatype, cast_rules
from .modes import ScaleMode, scale_mode

__all__ = [
    "HISTOGRAM_GROWTH",
    "METHODS",
    "AmaxHistory",
    "Entropy",
    "HistogramPercentile",
    "MinMax",
    "Mse",
    "ObserverBase",
    "ObserverSpec",
    "Percentile",
    "check_observer",
    "entropy_index",
    "histogram_bins",
    "histogram_percentile_index",
    "histogram_width",
    "moving_average_constant",
    "mse_multipliers",
    "percentile_rank",
]


def _f32(v: float) -> float:
    """``v`` rounded to float32 (ties to even), as a Python float."""
    return struct.unpack("<f", struct.pack("<f", v))[0]


@dataclass(frozen=True)
class ObserverSpec:
    """The settings of one calibration method (a base class; see the methods below)."""

    #: Whether the method keeps one histogram per tensor (and so takes tensor scales only).
    histogram = False
    #: Whether the method needs a second pass over the data (``search``).
    two_pass = False
    #: Whether the method takes uint (affine, zero point) datatypes.
    affine = False

    @property
    def name(self) -> str:
        """The method's name, as ``METHODS`` lists it."""
        return _NAMES[type(self)]


@dataclass(frozen=True)
class MinMax(ObserverSpec):
    """The range of the data: the running maximum of ``|x|`` (minimum and maximum for uint).

    Attributes:
        momentum: None for the running extremes over all batches; a constant ``c`` in
            ``(0, 1]`` for a moving average of each batch's extremes, ``m ← m + c·(cur − m)``
            (torch.ao's ``MovingAverageMinMaxObserver``: 0.01).
    """

    momentum: float | None = None
    affine = True

    def __post_init__(self) -> None:
        if self.momentum is not None:
            moving_average_constant(self.momentum)


@dataclass(frozen=True)
class AmaxHistory(ObserverSpec):
    """Delayed scaling: a window of the last ``length`` batch amaxes (TransformerEngine).

    Attributes:
        length: how many batches the window holds (TransformerEngine: ``amax_history_len``).
        algo: ``"max"``: the window's largest amax; ``"most_recent"``: the last batch's.
        margin: the amax is multiplied by ``2**margin`` (headroom).
    """

    length: int = 1024
    algo: str = "max"
    margin: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.length, bool) or not isinstance(self.length, int) or self.length < 1:
            raise SpecError(f"AmaxHistory length must be an int >= 1, got {self.length!r}")
        if self.algo not in ("max", "most_recent"):
            raise SpecError(f"AmaxHistory algo must be 'max' or 'most_recent', got {self.algo!r}")
        if isinstance(self.margin, bool) or not isinstance(self.margin, int):
            raise SpecError(f"AmaxHistory margin must be an int, got {self.margin!r}")
        if not -126 <= self.margin <= 126:
            raise SpecError(f"AmaxHistory margin {self.margin} is outside -126..126")


def _check_q(cls: str, q: object) -> None:
    if isinstance(q, bool) or not isinstance(q, int | float) or not 0 < q <= 100:
        raise SpecError(f"{cls} q must be a number in (0, 100], got {q!r}")


def _check_bins(cls: str, bins: object, least: int) -> None:
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < least:
        raise SpecError(f"{cls} bins must be an int >= {least}, got {bins!r}")


@dataclass(frozen=True)
class Percentile(ObserverSpec):
    """The exact ``q``-th percentile of ``|x|`` per block and batch, averaged over batches.

    The k-th smallest ``|x|`` of a block's N finite elements with ``k`` from
    :func:`percentile_rank` (Brevitas's rule); the batches' values are averaged.

    Attributes:
        q: the percentile, in (0, 100].
    """

    q: float = 99.99

    def __post_init__(self) -> None:
        _check_q("Percentile", self.q)


@dataclass(frozen=True)
class HistogramPercentile(ObserverSpec):
    """The ``q``-th percentile of ``|x|`` read off a streaming histogram (ModelOpt's method).

    Attributes:
        q: the percentile, in (0, 100].
        bins: the histogram's bins over the first batch's range (it grows by whole bins).
    """

    q: float = 99.99
    bins: int = 2048
    histogram = True

    def __post_init__(self) -> None:
        _check_q("HistogramPercentile", self.q)
        _check_bins("HistogramPercentile", self.bins, 1)


@dataclass(frozen=True)
class Entropy(ObserverSpec):
    """The amax whose clipped, requantized histogram is nearest (in KL divergence) the data's.

    ModelOpt's entropy calibration over a streaming histogram of ``|x|`` (§5.13).

    Attributes:
        bins: the histogram's bins over the first batch's range.
        start: the first candidate bin edge.
    """

    bins: int = 2048
    start: int = 128
    histogram = True

    def __post_init__(self) -> None:
        _check_bins("Entropy", self.bins, 2)
        if isinstance(self.start, bool) or not isinstance(self.start, int) or self.start < 1:
            raise SpecError(f"Entropy start must be an int >= 1, got {self.start!r}")


@dataclass(frozen=True)
class Mse(ObserverSpec):
    """The candidate amax per block whose cast has the least squared error.

    Pass one (``update``) takes each block's amax; pass two (``search``) casts the data with
    the scales of every candidate ``amax · m`` and sums the squared errors (§5.13).

    Attributes:
        multipliers: the candidate multipliers ``m``, or None for the datatype's grid
            (:func:`mse_multipliers`).
    """

    multipliers: tuple[float, ...] | None = None
    two_pass = True

    def __post_init__(self) -> None:
        m = self.multipliers
        if m is None:
            return
        if not isinstance(m, tuple) or not m:
            raise SpecError(f"Mse multipliers must be a non-empty tuple of floats, got {m!r}")
        for v in m:
            ok = not isinstance(v, bool) and isinstance(v, int | float)
            if not ok or not (math.isfinite(v) and v > 0) or _f32(v) != v:
                raise SpecError(
                    f"Mse multiplier {v!r} must be a positive finite float32 value "
                    f"(round it to float32 first)"
                )


_NAMES = {
    MinMax: "minmax",
    AmaxHistory: "amax_history",
    Percentile: "percentile",
    HistogramPercentile: "histogram_percentile",
    Entropy: "entropy",
    Mse: "mse",
}
#: The calibration methods by name.
METHODS = {v: k for k, v in _NAMES.items()}


def check_observer(dt: DataType, spec: ObserverSpec, tensor_scale_only: bool = False) -> None:
    """Refuse a method the datatype cannot be calibrated with (SEMANTICS.md §5.13).

    ``tensor_scale_only``: calibrate only the tensor scale of a two-level datatype (its tile
    scales are computed by each cast), over the whole tensor as one block.

    Raises:
        SpecError: for an unscaled datatype, one with subtile offsets, a codebook or
            sparsity, a uint datatype with a method other than MinMax, or a histogram method
            with a datatype of more than one scale per tensor.
    """
    dt = as_datatype(dt)
    if not isinstance(spec, ObserverSpec) or type(spec) is ObserverSpec:
        raise SpecError(f"an observer takes a method such as tcast.observe.MinMax(), got {spec!r}")
    s = dt.sspec
    if s is None:
        raise SpecError(f"{dt.name} is unscaled: there is no scale to calibrate")
    if dt.nspec.is_codebook or s.offset_bits > 0:
        raise SpecError(
            f"{dt.name} chooses its metadata with its scales (subtile offsets or codebook "
            f"mappings): it cannot take calibrated scales"
        )
    if s.is_sparse:
        raise SpecError(f"{dt.name} is sparse: observers calibrate dense datatypes")
    if dt.nspec.is_uint and not spec.affine:
        raise SpecError(
            f"{dt.name} has uint data with a zero point: calibrate it with MinMax (the "
            f"{spec.name} method chooses a symmetric amax)"
        )
    if tensor_scale_only:
        if not dt.is_multiscale:
            raise SpecError(
                f"tensor_scale_only calibrates the tensor scale of a two-level datatype such as "
                f"nvfp4; {dt.name} has one scale level"
            )
    elif spec.histogram and not s.is_tensor:
        raise SpecError(
            f"{spec.name} keeps one histogram per tensor: use a datatype with one scale per "
            f"tensor (such as e4m3fn_float32 or int8_float32), or Percentile or Mse for "
            f"{dt.name}'s blocks (or tensor_scale_only=True for a two-level datatype's tensor "
            f"scale)"
        )


def moving_average_constant(momentum: object) -> float:
    """The moving average's constant as the float32 value the update multiplies by.

    Raises:
        SpecError: unless ``0 < momentum <= 1``.
    """
    if isinstance(momentum, bool) or not isinstance(momentum, int | float):
        raise SpecError(f"momentum must be a number in (0, 1], got {momentum!r}")
    if not 0 < momentum <= 1:
        raise SpecError(f"momentum must be in (0, 1], got {momentum!r}")
    return _f32(float(momentum))


def percentile_rank(q: float, n: int) -> int:
    """The rank ``k`` (1-based) of the ``q``-th percentile among ``n`` values.

    ``k = floor(0.01 · q · n + 0.5)`` in float64 (Brevitas's rule), clamped to ``[1, n]``;
    0 when ``n = 0``.
    """
    if n <= 0:
        return 0
    k = math.floor(0.01 * q * n + 0.5)
    return min(max(k, 1), n)


def mse_multipliers(dt: DataType) -> tuple[float, ...]:
    """The default candidate multipliers of :class:`Mse` for ``dt`` (float32 values).

    Power-of-two block scales: ``2**-3 … 2**1`` (every exponent from E−3 to E+1 of the
    amax's scale). Float scales: ModelOpt's 39 multipliers ``linspace(0.25, 4, 39)``, as
    ``torch.linspace`` computes them in float32: with the step ``h = fl32(3.75 / 38)``,
    ``m_i = fl32(0.25 + i · h)`` for ``i < 19`` and ``fl32(4 − (38 − i) · h)`` from there
    (the products exact).
    """
    if dt.sspec is not None and dt.sspec.scale.is_exponent:
        return (0.125, 0.25, 0.5, 1.0, 2.0)
    h = _f32(3.75 / 38)
    return tuple(_f32(0.25 + i * h) if i < 19 else _f32(4.0 - (38 - i) * h) for i in range(39))


def histogram_width(amax: float, bins: int) -> float:
    """The bin width of a histogram first filled by a batch whose largest ``|x|`` is ``amax``.

    ``fl64(amax / bins)``; 0 for an all-zero batch (no histogram is kept until a nonzero one).
    """
    return float(amax) / bins


#: A histogram grows to at most this many times its first bin count (SEMANTICS.md §5.13).
HISTOGRAM_GROWTH = 64


def histogram_bins(width: float, bins: int, amax: float, first: int) -> int:
    """The bin count after a batch with largest ``|x|`` ``amax``: grown by whole bins.

    The histogram covers ``[0, bins · width]``; a batch beyond it appends bins of the same
    width until ``amax ≤ bins' · width`` (``bins' = ceil(fl64(amax / width))``).

    Raises:
        SpecError: when ``bins'`` would exceed ``HISTOGRAM_GROWTH`` times ``first`` (the
            first batch's bin count): the batches' ranges are too far apart for one bin width.
    """
    if amax <= bins * width:
        return bins
    grown = max(bins, math.ceil(float(amax) / width))
    if grown > HISTOGRAM_GROWTH * first:
        raise SpecError(
            f"a batch's largest |x| {amax!r} is {amax / (first * width):.3g} times the first "
            f"histogram's range {first * width!r}: the histogram would need {grown} bins (more "
            f"than {HISTOGRAM_GROWTH} x {first}); calibrate with a first batch of the full "
            f"range, or with MinMax or Percentile"
        )
    return grown


def histogram_percentile_index(counts: list[int], q: float) -> int:
    """The bin whose left edge is the ``q``-th percentile (ModelOpt's rule, exactly).

    The first bin ``i`` whose cumulative count reaches ``q`` percent of the total:
    ``100 · cum[i] ≥ q · total`` in exact arithmetic; the amax is the bin's left edge.
    """
    total = sum(counts)
    target = Fraction(q) * total
    cum = 0
    for i, c in enumerate(counts):
        cum += c
        if 100 * cum >= target:
            return i
    return len(counts) - 1


def entropy_index(counts: list[int], levels: int, start: int) -> int:
    """The bin edge ``i`` with the least KL divergence (ModelOpt's entropy calibration).

    ``b`` is ``counts`` with ``b[0]`` replaced by ``b[1]`` (ModelOpt's rule, so that a mass of
    exact zeros does not dominate). For each ``i`` from ``start`` to ``len(b)``:

    * ``P``: ``b[:i]`` with the tail ``Σ b[i:]`` added to its last bin, over its sum ``ΣP``;
    * ``Q``: ``b[:i]`` merged into ``levels`` groups (bin ``j`` in group
      ``floor(j · levels / i)``), each group's sum ``G`` spread evenly over its ``n`` nonzero
      bins (zero bins get 0), over its sum ``ΣQ = Σ b[:i]``;
    * ``D(i) = Σ_{p_j > 0} (p_j/ΣP) · ln((p_j/ΣP) / (G/n/ΣQ))`` (+∞ where a ``p_j > 0`` meets
      ``q_j = 0``: the last bin when it is empty and the tail is not).

    ``D`` is evaluated in float64 as ``fsum(terms) / ΣP`` with, per group, ``Σ b·ln b``
    (``math.fsum`` over the group's bins) ``− G'·(ln ΣP − ln ΣQ + ln(G/n))``; the last ``i``
    of least ``D`` wins. Every engine calls this function on its exact integer counts.

    Returns:
        ``i``: the amax is the histogram's edge ``i`` (``i · width``); ``len(counts)`` (the
        top edge) when there are fewer than ``start`` bins.
    """
    b = list(counts)
    n = len(b)
    if n < 2 or start >= n:
        return n
    b[0] = b[1]
    blnb = [c * math.log(c) if c > 0 else 0.0 for c in b]
    csum = [0]  # prefix sums of counts and of nonzero bins (exact integers)
    cnz = [0]
    for c in b:
        csum.append(csum[-1] + c)
        cnz.append(cnz[-1] + (c > 0))
    total = csum[-1]
    best, best_i = math.inf, n
    for i in range(start, n + 1):
        tail = total - csum[i]
        sum_p = csum[i] + tail
        sum_q = csum[i]
        if sum_q == 0:
            continue
        ln_pq = math.log(sum_p) - math.log(sum_q)
        terms = []
        last_empty = b[i - 1] == 0
        for g in range(levels):
            lo = -(-g * i // levels)
            hi = min(-(-(g + 1) * i // levels), i)
            nz = cnz[hi] - cnz[lo]
            if nz == 0:
                continue
            big_g = csum[hi] - csum[lo]
            ln_q = math.log(big_g / nz)
            if hi == i and tail and not last_empty:
                # the last bin holds the tail too: its p is b + tail, its q the group's
                own = b[i - 1] + tail
                terms.append(math.fsum(blnb[lo : i - 1]) + own * math.log(own))
                terms.append(-(big_g - b[i - 1] + own) * (ln_pq + ln_q))
            else:
                terms.append(math.fsum(blnb[lo:hi]))
                terms.append(-big_g * (ln_pq + ln_q))
        if tail and last_empty:
            div = math.inf
        else:
            div = math.fsum(terms) / sum_p
        if div <= best:
            best, best_i = div, i
    return best_i


class ObserverBase:
    """What every engine's observer shares: its settings and the rules between its calls.

    Engines (``tcast_ref.Observer``, ``tcast_torch.Observer``) subclass it and keep the
    array statistics in ``_stats``; the arithmetic on them is theirs.

    Args:
        dtype: the datatype (a :class:`tcast.DataType`, catalog name or grammar code).
        method: the calibration method; default :class:`MinMax`.
        scalemode: the scale mode the scales are chosen under (SEMANTICS.md §5.3).
        transpose_scale: calibrate the transposed scales of 2-D tiles (§5.1).
        tensor_scale_only: a two-level datatype (nvfp4): calibrate its tensor scale alone,
            over each batch as one block; ``scales()`` gives ``{"tensor_scale": …}`` and each
            cast computes the tile scales under it (a one-pass cast). Batches of any shape.

    Raises:
        SpecError: for a method the datatype cannot be calibrated with
            (:func:`check_observer`), or an unknown scale mode.
    """

    def __init__(
        self,
        dtype: DataType | str,
        method: ObserverSpec | None = None,
        *,
        scalemode: ScaleMode | str = ScaleMode.FLOOR,
        transpose_scale: bool = False,
        tensor_scale_only: bool = False,
    ) -> None:
        self.dtype = as_datatype(dtype)
        self.method = MinMax() if method is None else method
        self.tensor_scale_only = bool(tensor_scale_only)
        check_observer(self.dtype, self.method, self.tensor_scale_only)
        self.scalemode = scale_mode(scalemode)
        self.transpose_scale = bool(transpose_scale)
        self._rules: CastRules = cast_rules(self.dtype, self.scalemode)
        self.batches = 0
        self._stats: dict = {}
        self._searching = False

    @property
    def multipliers(self) -> tuple[float, ...]:
        """Mse's candidate multipliers (the method's, or :func:`mse_multipliers`)."""
        return self.method.multipliers or mse_multipliers(self.dtype)

    @property
    def _mse_tiles(self) -> bool:
        """Mse over tile amaxes under the observed tensor amax (not ``tensor_scale_only``)."""
        return isinstance(self.method, Mse) and not self.tensor_scale_only

    def _begin_update(self) -> None:
        if self._searching:
            raise SpecError("Mse: update() after search() began; start a new Observer")

    def _begin_search(self) -> None:
        if not isinstance(self.method, Mse):
            raise SpecError(f"search() is Mse's second pass; {self.method.name} has none")
        if "amax" not in self._stats:
            raise SpecError("Mse: update() with the calibration batches before search()")
        self._searching = True

    def _observed(self, what: str) -> None:
        if self.batches == 0:
            raise SpecError(f"an observer has no {what} before its first update()")
        if isinstance(self.method, Mse) and "loss" not in self._stats:
            raise SpecError(
                "Mse: search() over the calibration batches before scales() or ranges()"
            )

    def _histogram_edge(self, counts: list[int]) -> int:
        """The chosen edge of the histogram methods over the exact counts."""
        m = self.method
        if isinstance(m, Entropy):
            return entropy_index(counts, 2 ** (self.dtype.nspec.bits - 1), m.start)
        return histogram_percentile_index(counts, m.q)
