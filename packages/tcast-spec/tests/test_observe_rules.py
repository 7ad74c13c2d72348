"""The observers' host rules (SEMANTICS.md §5.13): ranks, grids, histograms, the searches."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import tcast
from tcast import SpecError
from tcast import observe as ob


def test_percentile_rank_is_brevitas_rule() -> None:
    # k = floor(0.01 q N + 0.5), clamped to [1, N]
    assert ob.percentile_rank(50, 4) == 2  # 2.5 -> floor = 2
    assert ob.percentile_rank(50, 5) == 3  # 3.0 -> 3
    assert ob.percentile_rank(99.99, 32) == 32
    assert ob.percentile_rank(99.0, 1000) == 990
    assert ob.percentile_rank(0.001, 10) == 1  # clamped up
    assert ob.percentile_rank(100, 7) == 7
    assert ob.percentile_rank(99, 0) == 0


def test_histogram_percentile_index_is_exact_at_the_boundary() -> None:
    counts = [1, 1, 1, 1]
    assert ob.histogram_percentile_index(counts, 50) == 1  # 100 * 2 >= 50 * 4, exactly
    assert ob.histogram_percentile_index(counts, 50.000001) == 2
    assert ob.histogram_percentile_index(counts, 100) == 3
    assert ob.histogram_percentile_index([5, 0, 0], 1) == 0  # the left edge of bin 0 is 0


def test_histogram_grows_by_whole_bins() -> None:
    w = ob.histogram_width(8.0, 4)
    assert w == 2.0
    assert ob.histogram_bins(w, 4, 8.0, 4) == 4  # the top edge is inside
    assert ob.histogram_bins(w, 4, 8.5, 4) == 5
    assert ob.histogram_bins(w, 4, 14.0, 4) == 7
    assert ob.histogram_bins(w, 6, 3.0, 4) == 6  # never shrinks
    assert ob.histogram_bins(w, 4, 2.0 * 4 * ob.HISTOGRAM_GROWTH, 4) == 4 * ob.HISTOGRAM_GROWTH
    with pytest.raises(SpecError, match="first batch of the full range"):
        ob.histogram_bins(w, 4, 2.0 * 4 * ob.HISTOGRAM_GROWTH + 1, 4)


def test_mse_multipliers() -> None:
    assert ob.mse_multipliers(tcast.mxfp8) == (0.125, 0.25, 0.5, 1.0, 2.0)
    m = ob.mse_multipliers(tcast.datatype("int8_float32_t0"))
    assert len(m) == 39 and m[0] == 0.25 and m[-1] == 4.0 and m[19] == 2.125
    assert all(np.float32(v) == v for v in m)
    assert list(m) == sorted(m)


def _modelopt_entropy(counts: list[int], levels: int, start: int) -> int:
    """ModelOpt's entropy search re-derived in its own structure (np.digitize over
    np.linspace group edges, per-bin spreading, a normalized KL summed by NumPy)."""
    bins = np.array(counts, np.float64)
    bins[0] = bins[1]
    divs = []
    for i in range(start, len(bins) + 1):
        space = np.linspace(0, i, num=levels + 1)
        dig = np.digitize(range(i), space) - 1
        dig[bins[:i] == 0] = -1
        dens = np.zeros(levels)
        for j, d in enumerate(dig):
            if d != -1:
                dens[d] += bins[j]
        for key, val in Counter(dig).items():
            if key != -1:
                dens[key] /= val
        q = np.array([dens[d] if d != -1 else 0.0 for d in dig])
        p = bins[:i].copy()
        p[-1] += bins[i:].sum()
        p, q = p / p.sum(), q / q.sum()
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(p > 0, p * np.log(p / q), 0.0)
        divs.append(terms.sum())
    divs = np.array(divs)
    return start + len(divs) - 1 - int(np.argmin(divs[::-1]))


@pytest.mark.parametrize("seed", range(4))
def test_entropy_index_against_modelopt_structure(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 96
    # a heavy-tailed histogram with empty bins, as |x| of activations gives
    counts = np.bincount(
        np.minimum((np.abs(rng.standard_t(3, 4000)) * 12).astype(int), n - 1), minlength=n
    )
    counts[rng.integers(0, n, 8)] = 0
    c = [int(v) for v in counts]
    assert ob.entropy_index(c, 16, 24) == _modelopt_entropy(c, 16, 24)


def test_entropy_index_edges() -> None:
    assert ob.entropy_index([3, 4], 4, 8) == 2  # fewer bins than start: the top edge
    # an empty last bin with a nonzero tail diverges (+inf): never chosen over a finite one
    c = [9, 9, 9, 9, 0, 1]
    assert ob.entropy_index(c, 2, 2) != 5
    assert ob.entropy_index(c, 2, 2) == _modelopt_entropy(c, 2, 2)


def test_check_observer_refusals() -> None:
    with pytest.raises(SpecError, match="unscaled"):
        ob.check_observer(tcast.float8_e4m3fn, ob.MinMax())
    with pytest.raises(SpecError, match="MinMax"):
        ob.check_observer(tcast.datatype("uint8_float32_uint8_t0"), ob.Percentile())
    with pytest.raises(SpecError, match="one histogram per tensor"):
        ob.check_observer(tcast.mxfp8, ob.Entropy())
    with pytest.raises(SpecError, match="metadata"):
        ob.check_observer(tcast.mx6, ob.MinMax())
    with pytest.raises(SpecError, match="sparse"):
        ob.check_observer(tcast.datatype("e4m3fn_e8m0_t32n2m4"), ob.MinMax())
    with pytest.raises(SpecError, match="method"):
        ob.check_observer(tcast.mxfp8, "minmax")
    ob.check_observer(tcast.datatype("e4m3fn_float32"), ob.Entropy())
    ob.check_observer("nvfp4", ob.Entropy(), tensor_scale_only=True)  # names are datatypes
    ob.check_observer(tcast.nvfp4, ob.Mse())


@pytest.mark.parametrize(
    "make",
    [
        lambda: ob.MinMax(momentum=0),
        lambda: ob.MinMax(momentum=1.5),
        lambda: ob.MinMax(momentum=True),
        lambda: ob.AmaxHistory(length=0),
        lambda: ob.AmaxHistory(algo="mean"),
        lambda: ob.AmaxHistory(margin=1.5),
        lambda: ob.AmaxHistory(margin=200),
        lambda: ob.Percentile(q=0),
        lambda: ob.Percentile(q=101),
        lambda: ob.HistogramPercentile(bins=0),
        lambda: ob.Entropy(bins=1),
        lambda: ob.Entropy(start=0),
        lambda: ob.Mse(multipliers=()),
        lambda: ob.Mse(multipliers=(0.1,)),  # not a float32 value
        lambda: ob.Mse(multipliers=(-1.0,)),
    ],
)
def test_bad_settings_name_the_value(make) -> None:
    with pytest.raises(SpecError):
        make()


def test_methods_are_frozen_and_named() -> None:
    m = ob.Percentile(99.9)
    assert hash(m) == hash(ob.Percentile(99.9)) and m.name == "percentile"
    assert set(ob.METHODS) == {
        "minmax",
        "amax_history",
        "percentile",
        "histogram_percentile",
        "entropy",
        "mse",
    }
    with pytest.raises(AttributeError):
        m.q = 1.0  # type: ignore[misc]
