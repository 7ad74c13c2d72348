"""Observers on NumPy arrays: calibrated scale parts (SEMANTICS.md §5.13).

The statistics are array arithmetic here; every rule that is not (ranks, candidate grids,
histogram growth, the percentile and entropy searches) is read from :mod:`tcast.observe`, and
the scale parts come from the datatype's own scale recipe (``tcast.kit``) applied to the
chosen ranges, as a cast applies it to its blocks' maxima.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import tcast
from tcast import SpecError
from tcast import observe as ob
from tcast.kit import run_recipe

from ._accept import array_refusal
from ._api import cast
from ._cast import INPUT_DTYPES, _Ops
from ._tiles import Tiling, tiling

__all__ = ["Observer"]

_DTYPES = tuple(INPUT_DTYPES.values())
#: A datatype with one scale per tensor: the block layout of ``tensor_scale_only``.
_WHOLE = tcast.datatype("e4m3fn_float32")


class Observer(ob.ObserverBase):
    """Calibrates the scale parts of a datatype from batches of NumPy arrays.

    >>> obs = Observer("mxfp8", tcast.observe.Percentile(99.9))
    >>> for x in batches:
    ...     obs.update(x)
    >>> y = tcast_ref.cast(x, "mxfp8", **obs.scales())

    Arguments and errors as :class:`tcast.observe.ObserverBase`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._til: Tiling | None = None
        self._block_shape: tuple[int, ...] = ()

    # ------------------------------------------------------------------ input
    def _blocks(self, x: object) -> tuple[Tiling, np.ndarray, np.ndarray]:
        """The blocks of x as rows (float32), non-finite elements and padding set to 0."""
        if not isinstance(x, np.ndarray) or array_refusal(x) is not None:
            raise SpecError(
                f"an observer takes float32, float16 or bfloat16 NumPy arrays, got "
                f"{type(x).__name__}"
            )
        if x.dtype not in _DTYPES:
            raise SpecError(
                f"an observer takes float32, float16 or bfloat16 arrays, got {x.dtype}: "
                f"convert x first"
            )
        til = self._tiling(tuple(x.shape))
        if self._til is not None and til.scale_shape != self._til.scale_shape:
            raise SpecError(
                f"x of shape {x.shape} has scales of shape {til.scale_shape}, the batches "
                f"before had {self._til.scale_shape}: every batch must have the same blocks"
            )
        a = np.asarray(x, dtype=np.float32)
        finite = np.isfinite(a)
        rows = til.to_blocks(np.where(finite, a, np.float32(0)))
        if self._til is None:
            self._til, self._block_shape = til, rows.shape[:-1]
        rows = rows.reshape(-1, rows.shape[-1])
        real = til.to_blocks(finite).reshape(rows.shape).sum(axis=1)
        return til, rows, real

    def _tiling(self, shape: tuple[int, ...]) -> Tiling:
        if self.tensor_scale_only:  # the whole tensor as one block
            return tiling(shape, _WHOLE)
        return tiling(shape, self.dtype, self.transpose_scale)

    # ------------------------------------------------------------------ batches
    def update(self, x: np.ndarray) -> None:
        """Observe one batch.

        Raises:
            SpecError: for an array of another type or dtype, blocks unlike the earlier
                batches', or (Mse) an update after :meth:`search` began.
        """
        m = self.method
        self._begin_update()
        _, rows, real = self._blocks(x)
        if self.dtype.nspec.is_uint:
            # the range holds 0 (SEMANTICS.md §5.7); + 0 makes a -0 minimum +0
            lo = np.minimum(rows.min(axis=1, initial=np.float32(0)), np.float32(0)) + np.float32(0)
            hi = np.maximum(rows.max(axis=1, initial=np.float32(0)), np.float32(0))
            self._extremes(("lo", lo), ("hi", hi))
        elif isinstance(m, ob.HistogramPercentile | ob.Entropy):
            self._histogram(np.abs(rows).reshape(-1), int(real.sum()))
        else:
            amax = np.abs(rows).max(axis=1, initial=np.float32(0))
            if isinstance(m, ob.MinMax | ob.Mse):
                self._extremes(("amax", amax))
            elif isinstance(m, ob.AmaxHistory):
                self._history(amax)
            else:
                self._percentile(rows, real)
        self.batches += 1

    def _extremes(self, *parts: tuple[str, np.ndarray]) -> None:
        st = self._stats
        c = getattr(self.method, "momentum", None)
        for name, cur in parts:
            old = st.get(name)
            if old is None:
                st[name] = cur.astype(np.float32)
            elif c is None:
                pick = np.maximum if name != "lo" else np.minimum
                st[name] = pick(old, cur)
            else:
                k = np.float32(ob.moving_average_constant(c))
                st[name] = old + k * (cur - old)

    def _history(self, amax: np.ndarray) -> None:
        m, st = self.method, self._stats
        hist = st.get("history")
        if hist is None:
            hist = st["history"] = np.zeros((m.length, amax.size), np.float32)
            st["amax"] = np.zeros(amax.size, np.float32)
            st["slot"] = 0
        # a ring of the last `length` batches: TransformerEngine's roll, without the copy
        slot = st["slot"]
        hist[slot] = amax
        st["slot"] = (slot + 1) % m.length
        pick = hist.max(axis=0) if m.algo == "max" else amax
        with np.errstate(over="ignore"):  # beyond float32: saturates to its max
            scaled = np.minimum(pick * np.float32(2.0**m.margin), np.finfo(np.float32).max)
        st["amax"] = np.where(pick > 0, scaled, st["amax"])

    def _percentile(self, rows: np.ndarray, real: np.ndarray) -> None:
        q = self.method.q
        srt = np.sort(np.abs(rows), axis=1)
        counts, where = np.unique(real, return_inverse=True)  # few distinct block sizes
        k = np.array([ob.percentile_rank(q, int(n)) for n in counts], np.int64)[where]
        pad = rows.shape[1] - real
        idx = np.where(k > 0, k - 1 + pad, 0)
        v = np.where(k > 0, np.take_along_axis(srt, idx[:, None], axis=1)[:, 0], 0)
        st = self._stats
        st["sum"] = st.get("sum", 0) + v.astype(np.float64)

    def _histogram(self, mag: np.ndarray, finite: int) -> None:
        """Count ``mag`` (non-finite elements set to 0; ``finite`` of them are finite)."""
        st, m = self._stats, self.method
        amax = float(mag.max(initial=np.float32(0)))
        width = st.get("width", 0.0)
        if width == 0.0:
            if amax == 0.0:
                st["zeros"] = st.get("zeros", 0) + finite
                return
            width = st["width"] = ob.histogram_width(amax, m.bins)
            st["counts"] = np.zeros(m.bins, np.int64)
            st["counts"][0] = st.pop("zeros", 0)
        counts = st["counts"]
        nb = ob.histogram_bins(width, counts.size, amax, m.bins)
        if nb > counts.size:
            counts = np.concatenate([counts, np.zeros(nb - counts.size, np.int64)])
        idx = np.minimum(np.floor(mag.astype(np.float64) / width), nb - 1).astype(np.int64)
        new = np.bincount(idx, minlength=nb)
        new[0] -= mag.size - finite  # non-finite elements were counted as zeros: take them out
        st["counts"] = counts + new

    def search(self, x: np.ndarray) -> None:
        """Mse's second pass: add each candidate's squared error on one batch.

        Raises:
            SpecError: for a method other than Mse, before any :meth:`update`, or for blocks
                unlike the first pass's.
        """
        self._begin_search()
        til, _, _ = self._blocks(x)
        st = self._stats
        base = st["amax"]
        mults = self.multipliers
        a = np.asarray(x, dtype=np.float32)
        xf = np.where(np.isfinite(a), a, np.float32(0))
        losses = []
        for mult in mults:
            cand = base * np.float32(mult)
            # tensor_scale_only: the candidates are tensor amaxes; else the tile amaxes under
            # the tensor scale of the observed amax
            tamax = self._tamax(cand if self.tensor_scale_only else base)
            parts = self._parts(til, cand, tamax=tamax)
            q = cast(
                xf,
                self.dtype,
                scalemode=self.scalemode,
                transpose_scale=self.transpose_scale,
                **parts,
            )
            e = xf.astype(np.float64) - np.asarray(q, np.float64)
            sq = til.to_blocks(e * e)
            losses.append(tree_sum(sq.reshape(-1, sq.shape[-1])))
        loss = np.stack(losses)
        st["loss"] = loss if "loss" not in st else st["loss"] + loss

    # ------------------------------------------------------------------ results
    def _tamax(self, amax: np.ndarray) -> np.float32:
        return np.float32(amax.max(initial=np.float32(0)))

    def _chosen(self) -> np.ndarray:
        """The chosen amax per block (signed data)."""
        m, st = self.method, self._stats
        if isinstance(m, ob.Percentile):
            return (st["sum"] / np.float64(self.batches)).astype(np.float32)
        if isinstance(m, ob.HistogramPercentile | ob.Entropy):
            counts = st.get("counts")
            if counts is None:
                return np.zeros(1, np.float32)
            c = [int(v) for v in counts]
            i = self._histogram_edge(c)
            return np.full(1, np.float32(i * st["width"]))
        if isinstance(m, ob.Mse):  # searched: _observed checked
            loss = st["loss"]
            best = np.zeros(loss.shape[1], np.int64)
            for j in range(1, loss.shape[0]):  # strict <: ties keep the earlier candidate
                best = np.where(loss[j] < loss[best, np.arange(loss.shape[1])], j, best)
            mults = np.array(self.multipliers, np.float32)
            return st["amax"] * mults[best]
        return st["amax"]

    def scales(self) -> dict[str, np.ndarray]:
        """The calibrated scale parts, as keyword arguments of a cast (SEMANTICS.md §5.12).

        Returns:
            ``{"scale": …}`` in the scale array's shape, with ``"zero"`` for uint data and
            ``"tensor_scale"`` (shape ``()``) for two-level datatypes; float32 values.

        Raises:
            SpecError: before any batch was observed.
        """
        self._observed("scales")
        til = self._til
        if self.dtype.nspec.is_uint:
            return self._parts(til, None, lo=self._stats["lo"], hi=self._stats["hi"])
        amax = self._chosen()
        tamax = self._tamax(self._stats["amax"] if self._mse_tiles else amax)
        return self._parts(til, amax, tamax=tamax)

    def ranges(self) -> dict[str, np.ndarray]:
        """The calibrated ranges the scales are chosen from (SEMANTICS.md §5.13).

        Returns:
            ``{"amax": …}`` per block in the scale array's shape (signed data) or ``{"lo": …,
            "hi": …}`` (uint data: the range always holds 0), float32.

        Raises:
            SpecError: before any batch was observed, or (Mse) before :meth:`search`.
        """
        self._observed("ranges")
        til, st = self._til, self._stats
        if self.dtype.nspec.is_uint:
            vals = {"lo": st["lo"], "hi": st["hi"]}
        else:
            vals = {"amax": self._chosen()}
        return {n: til.scales_from_blocks(v.reshape(self._block_shape)) for n, v in vals.items()}

    def _parts(self, til: Tiling, amax, *, tamax=None, lo=None, hi=None) -> dict:
        """The scale parts the datatype's scale recipe gives for the ranges (float32 values)."""
        dt, rules = self.dtype, self._rules
        ops = _Ops(dt, rules)
        if dt.nspec.is_uint:
            out = run_recipe(rules.scale, ops, rules.constants, lo=lo, hi=hi)
        else:
            inputs = {"amax": amax}
            if dt.is_multiscale:
                inputs["tamax"] = tamax
            out = run_recipe(rules.scale, ops, rules.constants, **inputs)

        def lay(codes, which: str) -> np.ndarray:
            v = ops.decode(np.asarray(codes), which).astype(np.float32)
            return til.scales_from_blocks(v.reshape(self._block_shape))

        # tensor_scale_only: the tile scales are each cast's own
        parts = {} if self.tensor_scale_only else {"scale": lay(out["scale"], "scale")}
        if dt.nspec.is_uint:
            parts["zero"] = lay(out["zero"], "zero")
        if dt.is_multiscale:
            t = ops.decode(np.asarray(out["tenscale"]).reshape(1), "tenscale")
            parts["tensor_scale"] = t.astype(np.float32).reshape(())
        return parts


def tree_sum(v: np.ndarray) -> np.ndarray:
    """Sum each row of float64 ``v`` by halving (SEMANTICS.md §5.13): a fixed order."""
    n = v.shape[1]
    p = 1 << max(n - 1, 0).bit_length()
    if p != n:
        v = np.pad(v, ((0, 0), (0, p - n)))
    while v.shape[1] > 1:
        h = v.shape[1] // 2
        v = v[:, :h] + v[:, h:]
    return v[:, 0]
