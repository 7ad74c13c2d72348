"""Observers on torch tensors: calibrated scale parts (SEMANTICS.md §5.13).

The same statistics as the reference engine's observers, in torch operations on any device:
every rule that is not array arithmetic is read from :mod:`tcast.observe`, and the scale parts
come from the datatype's own scale recipe (``tcast.kit``) applied to the chosen ranges. Each
float operation rounds once (no fused multiply-add: the updates are separate eager
operations), so CPU and CUDA give the reference engine's bits.
"""

from __future__ import annotations

import types
from functools import cache, lru_cache
from importlib.util import find_spec
from typing import Any

import torch

import tcast
from tcast import SpecError
from tcast import observe as ob
from tcast.kit import run_recipe

from ._accept import is_dtensor
from ._api import cast
from ._run import INPUT_DTYPES
from ._scale import Ops
from ._tiles import Tiling, tiling

__all__ = ["Observer"]

_DTYPES = tuple(INPUT_DTYPES.values())
#: A datatype with one scale per tensor: the block layout of ``tensor_scale_only``.
_WHOLE = tcast.datatype("e4m3fn_float32")


class Observer(ob.ObserverBase):
    """Calibrates the scale parts of a datatype from batches of torch tensors.

    >>> obs = tcast_torch.Observer("mxfp8", tcast.observe.Percentile(99.9))
    >>> for x in batches:
    ...     obs.update(x)
    >>> y = tcast_torch.cast(x, "mxfp8", **obs.scales())

    The statistics live on the device of the first batch. Updates of MinMax, AmaxHistory and
    Mse's first pass never synchronize with the host; the histograms' growth, Percentile's
    ranks and the searches of :meth:`scales` are host arithmetic and read values back.

    Arguments and errors as :class:`tcast.observe.ObserverBase`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._til: Tiling | None = None
        self._block_shape: tuple[int, ...] = ()
        self._last_tiling: Tiling | None = None

    # ------------------------------------------------------------------ input
    def _blocks(self, x: object) -> tuple[Tiling, torch.Tensor]:
        """The blocks of x as rows, in x's dtype (padding 0; non-finite elements kept)."""
        if not isinstance(x, torch.Tensor) or is_dtensor(x):
            raise SpecError(
                f"an observer takes float32, float16 or bfloat16 torch tensors (not DTensors: "
                f"observe x.full_tensor() or each rank's local tensor), got {type(x).__name__}"
            )
        if x.dtype not in _DTYPES:
            raise SpecError(
                f"an observer takes float32, float16 or bfloat16 tensors, got {x.dtype}: "
                f"convert x first"
            )
        dev = self._stats.get("device")
        if dev is not None and x.device != dev:
            raise SpecError(f"x is on {x.device}, the observer's statistics on {dev}")
        til = self._tiling(tuple(x.shape))
        if self._til is not None and til.scale_shape != self._til.scale_shape:
            raise SpecError(
                f"x of shape {tuple(x.shape)} has scales of shape {til.scale_shape}, the "
                f"batches before had {self._til.scale_shape}: every batch must have the same "
                f"blocks"
            )
        rows = til.to_blocks(x.detach())  # a view for whole tiles of contiguous data
        if self._til is None:
            self._til, self._block_shape = til, tuple(rows.shape[:-1])
            self._stats["device"] = x.device
        return til, rows.reshape(-1, rows.shape[-1])

    def _tiling(self, shape: tuple[int, ...]) -> Tiling:
        # the last batch's layout is kept: calibration batches mostly share one shape, and
        # the layout costs more host time than a small batch's reduction
        last = self._last_tiling
        if last is not None and last.shape == shape:
            return last
        if self.tensor_scale_only:  # the whole tensor as one block
            til = tiling(shape, _WHOLE)
        else:
            til = tiling(shape, self.dtype, self.transpose_scale)
        self._last_tiling = til
        return til

    # ------------------------------------------------------------------ batches
    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Observe one batch.

        Raises:
            SpecError: for a tensor of another type, dtype or device, blocks unlike the
                earlier batches', or (Mse) an update after :meth:`search` began.
        """
        m = self.method
        self._begin_update()
        til, rows = self._blocks(x)
        if self.dtype.nspec.is_uint:
            lo, hi = _stats(rows, "lohi")
            self._extremes(("lo", lo), ("hi", hi))
        elif isinstance(m, ob.HistogramPercentile | ob.Entropy):
            self._histogram(rows)
        elif isinstance(m, ob.Percentile):
            real = til.to_blocks(torch.isfinite(x.detach())).reshape(rows.shape).sum(dim=1)
            self._percentile(_finite(rows), real)
        else:
            amax = _stats(rows, "amax")
            if isinstance(m, ob.MinMax | ob.Mse):
                self._extremes(("amax", amax))
            else:
                self._history(amax)
        self.batches += 1

    def _extremes(self, *parts: tuple[str, torch.Tensor]) -> None:
        st = self._stats
        c = getattr(self.method, "momentum", None)
        for name, cur in parts:
            old = st.get(name)
            if old is None:
                st[name] = cur
            elif c is None:
                st[name] = torch.minimum(old, cur) if name == "lo" else torch.maximum(old, cur)
            else:
                k = ob.moving_average_constant(c)  # a float32 value: exact as a tensor scalar
                st[name] = old + k * (cur - old)

    def _history(self, amax: torch.Tensor) -> None:
        m, st = self.method, self._stats
        hist = st.get("history")
        if hist is None:
            hist = st["history"] = amax.new_zeros((m.length, amax.numel()))
            st["amax"] = amax.new_zeros(amax.numel())
            st["slot"] = 0
        # a ring of the last `length` batches: TransformerEngine's roll, without the copy
        slot = st["slot"]
        hist[slot] = amax
        st["slot"] = (slot + 1) % m.length
        pick = hist.amax(dim=0) if m.algo == "max" else amax
        scaled = torch.clamp_max(pick * (2.0**m.margin), torch.finfo(torch.float32).max)
        st["amax"] = torch.where(pick > 0, scaled, st["amax"])

    def _percentile(self, rows: torch.Tensor, real: torch.Tensor) -> None:
        q = self.method.q
        srt = torch.sort(rows.abs(), dim=1).values
        sizes, where = torch.unique(real, return_inverse=True)  # few distinct block sizes
        ks = [ob.percentile_rank(q, int(n)) for n in sizes.tolist()]
        k = torch.tensor(ks, dtype=torch.int64, device=rows.device)[where]
        pad = rows.shape[1] - real
        idx = torch.where(k > 0, k - 1 + pad, torch.zeros_like(k))
        v = torch.gather(srt, 1, idx[:, None])[:, 0]
        v = torch.where(k > 0, v, torch.zeros_like(v))
        st = self._stats
        st["sum"] = v.double() if "sum" not in st else st["sum"] + v.double()

    def _histogram(self, rows: torch.Tensor) -> None:
        st, m = self._stats, self.method
        amax = float(_stats(rows, "amax").amax()) if rows.numel() else 0.0  # one host sync
        width = st.get("width", 0.0)
        if width == 0.0:
            if amax == 0.0:
                st["zeros"] = st.get("zeros", 0) + int(torch.isfinite(rows).sum())
                return
            width = st["width"] = ob.histogram_width(amax, m.bins)
            counts = torch.zeros(m.bins, dtype=torch.int64, device=rows.device)
            counts[0] = st.pop("zeros", 0)
            st["counts"] = counts
        counts = st["counts"]
        nb = ob.histogram_bins(width, counts.numel(), amax, m.bins)
        if nb > counts.numel():
            counts = torch.cat([counts, counts.new_zeros(nb - counts.numel())])
        w = torch.tensor(width, dtype=torch.float64, device=rows.device)
        idx = _bins(rows.reshape(-1), w, torch.tensor(nb - 1, device=rows.device))
        st["counts"] = counts + torch.bincount(idx, minlength=nb + 1)[:nb]  # non-finite dropped

    @torch.no_grad()
    def search(self, x: torch.Tensor) -> None:
        """Mse's second pass: add each candidate's squared error on one batch.

        Raises:
            SpecError: for a method other than Mse, before any :meth:`update`, or for blocks
                unlike the first pass's.
        """
        self._begin_search()
        til, _ = self._blocks(x)
        xf = _finite(x.detach())
        st = self._stats
        base = st["amax"]
        mults = self.multipliers
        x64 = xf.double()
        losses = []
        for mult in mults:
            cand = base * mult
            # tensor_scale_only: the candidates are tensor amaxes; else the tile amaxes under
            # the tensor scale of the observed amax
            tamax = self._tamax(cand if self.tensor_scale_only else base)
            parts = self._parts(cand, tamax=tamax)
            q = cast(
                xf,
                self.dtype,
                scalemode=self.scalemode,
                transpose_scale=self.transpose_scale,
                **parts,
            )
            e = x64 - q.double()
            sq = til.to_blocks(e * e)
            losses.append(tree_sum(sq.reshape(-1, sq.shape[-1])))
        loss = torch.stack(losses)
        st["loss"] = loss if "loss" not in st else st["loss"] + loss

    # ------------------------------------------------------------------ results
    def _tamax(self, amax: torch.Tensor) -> torch.Tensor:
        return amax.amax() if amax.numel() else amax.new_zeros(())

    def _chosen(self) -> torch.Tensor:
        """The chosen amax per block (signed data)."""
        m, st = self.method, self._stats
        dev = st["device"]
        if isinstance(m, ob.Percentile):
            return (st["sum"] / float(self.batches)).to(torch.float32)
        if isinstance(m, ob.HistogramPercentile | ob.Entropy):
            counts = st.get("counts")
            if counts is None:
                return torch.zeros(1, dtype=torch.float32, device=dev)
            c = counts.tolist()
            i = self._histogram_edge(c)
            v = torch.tensor([i * st["width"]], dtype=torch.float64, device=dev)
            return v.to(torch.float32)
        if isinstance(m, ob.Mse):  # searched: _observed checked
            loss = st["loss"]
            best = torch.zeros(loss.shape[1], dtype=torch.int64, device=dev)
            cols = torch.arange(loss.shape[1], device=dev)
            for j in range(1, loss.shape[0]):  # strict <: ties keep the earlier candidate
                best = torch.where(loss[j] < loss[best, cols], j, best)
            mults = self.multipliers
            mt = torch.tensor(mults, dtype=torch.float32, device=dev)
            return st["amax"] * mt[best]
        return st["amax"]

    @torch.no_grad()
    def scales(self) -> dict[str, torch.Tensor]:
        """The calibrated scale parts, as keyword arguments of a cast (SEMANTICS.md §5.12).

        Returns:
            ``{"scale": …}`` in the scale array's shape, with ``"zero"`` for uint data and
            ``"tensor_scale"`` (shape ``()``) for two-level datatypes; float32 tensors on the
            batches' device.

        Raises:
            SpecError: before any batch was observed.
        """
        self._observed("scales")
        st = self._stats
        if self.dtype.nspec.is_uint:
            return self._parts(None, lo=st["lo"], hi=st["hi"])
        amax = self._chosen()
        tamax = self._tamax(st["amax"] if self._mse_tiles else amax)
        return self._parts(amax, tamax=tamax)

    def ranges(self) -> dict[str, torch.Tensor]:
        """The calibrated ranges the scales are chosen from (SEMANTICS.md §5.13).

        Returns:
            ``{"amax": …}`` per block in the scale array's shape (signed data) or ``{"lo": …,
            "hi": …}`` (uint data: the range always holds 0), float32.

        Raises:
            SpecError: before any batch was observed, or (Mse) before :meth:`search`.
        """
        self._observed("ranges")
        til, st = self._til, self._stats
        names = ("lo", "hi") if self.dtype.nspec.is_uint else ("amax",)
        vals = {n: st[n] for n in names} if self.dtype.nspec.is_uint else {"amax": self._chosen()}
        return {n: til.scales_from_blocks(v.reshape(self._block_shape)) for n, v in vals.items()}

    def _parts(self, amax, *, tamax=None, lo=None, hi=None) -> dict[str, torch.Tensor]:
        """The scale parts the datatype's scale recipe gives for the ranges (float32 values)."""
        dt, rules, til = self.dtype, self._rules, self._til
        ops = Ops(rules)
        if dt.nspec.is_uint:
            out = run_recipe(rules.scale, ops, rules.constants, lo=lo, hi=hi)
        else:
            inputs = {"amax": amax}
            if dt.is_multiscale:
                inputs["tamax"] = tamax
            out = run_recipe(rules.scale, ops, rules.constants, **inputs)

        def lay(codes: torch.Tensor, which: str) -> torch.Tensor:
            v = ops.decode(codes.to(torch.int32), which).to(torch.float32)
            return til.scales_from_blocks(v.reshape(self._block_shape)).contiguous()

        # tensor_scale_only: the tile scales are each cast's own
        parts = {} if self.tensor_scale_only else {"scale": lay(out["scale"], "scale")}
        if dt.nspec.is_uint:
            parts["zero"] = lay(out["zero"], "zero")
        if dt.is_multiscale:
            t = ops.decode(out["tenscale"].reshape(1).to(torch.int32), "tenscale")
            parts["tensor_scale"] = t.to(torch.float32).reshape(())
        return parts


def _finite(a: torch.Tensor) -> torch.Tensor:
    """``a`` as float32 with NaN and ±Inf replaced by 0 (observers ignore them)."""
    a = a.to(torch.float32)
    return torch.where(torch.isfinite(a), a, torch.zeros((), dtype=a.dtype, device=a.device))


def _row_stats(rows: torch.Tensor, kind: str):
    """Per row: the largest finite |x| (``amax``), or (min, max) of finite x and 0 (``lohi``).

    Maxima and minima are exact, so a fused (compiled) kernel gives the eager bits.
    """
    a = rows.to(torch.float32)
    keep = torch.isfinite(a)
    zero = torch.zeros((), dtype=torch.float32, device=a.device)
    if rows.shape[1] == 0:
        z = a.new_zeros(rows.shape[0])
        return z if kind == "amax" else (z, z)
    if kind == "amax":
        return torch.where(keep, a.abs(), zero).amax(dim=1)
    v = torch.where(keep, a, zero)
    # 0 is in every range (SEMANTICS.md §5.7); + 0 makes a -0 minimum +0
    return torch.minimum(v.amin(dim=1), zero) + 0.0, torch.maximum(v.amax(dim=1), zero)


@cache
def _compiled_row_stats(length: int):
    """The compiled :func:`_row_stats` for rows of ``length`` elements.

    One function (code object) per row length: Dynamo keeps its compiled graphs per code
    object, and a graph made dynamic in the row length reduces about 15 times slower than one
    specialized on it (H200, rows of 32); the row count stays dynamic.
    """
    code = _row_stats.__code__.replace(co_name=f"_row_stats_{length}")
    fn = types.FunctionType(code, _row_stats.__globals__, code.co_name)
    return torch.compile(fn, dynamic=None)


#: Rows longer than this (channels, tensors) are reduced in chunks of this length first.
_CHUNK = 1024


def _stats(rows: torch.Tensor, kind: str):
    """:func:`_row_stats`, one fused pass over the rows on CUDA (Inductor), eager elsewhere.

    Compiled for rows of at most ``_CHUNK`` elements and for longer rows that split into whole
    chunks (reduced as chunks first, then over each row's chunks); other rows run eagerly, so
    that only a few row lengths are ever compiled.
    """
    n, length = rows.shape
    chunked = length > _CHUNK and length % _CHUNK == 0 and rows.is_contiguous()
    part = rows.reshape(-1, _CHUNK) if chunked else rows
    compiled = (
        rows.is_cuda
        and torch.version.hip is None
        and not torch.compiler.is_compiling()
        and part.shape[1] <= _CHUNK
        and find_spec("triton") is not None
    )
    if compiled:
        torch._dynamo.mark_dynamic(part, 0)
        out = _compiled_row_stats(part.shape[1])(part, kind)
    else:
        out = _row_stats(part, kind)
    if not chunked:
        return out
    if kind == "amax":
        return out.reshape(n, -1).amax(dim=1)
    lo, hi = out
    return lo.reshape(n, -1).amin(dim=1), hi.reshape(n, -1).amax(dim=1)


def _bin_index(v: torch.Tensor, width: torch.Tensor, top: torch.Tensor) -> torch.Tensor:
    """The histogram bin of each element: ``min(floor(fl64(|x|) / w), top)``.

    A non-finite element gets ``top + 1``, a bin the caller drops.
    """
    a = v.to(torch.float32)
    keep = torch.isfinite(a)
    mag = torch.where(keep, a.abs(), torch.zeros((), dtype=a.dtype, device=a.device))
    idx = torch.minimum(torch.floor(mag.double() / width), top.double()).to(torch.int64)
    return torch.where(keep, idx, top + 1)


@lru_cache(maxsize=1)
def _compiled_bin_index():
    return torch.compile(_bin_index, dynamic=None)


def _bins(v: torch.Tensor, width: torch.Tensor, top: torch.Tensor) -> torch.Tensor:
    """:func:`_bin_index`, fused on CUDA (the width and top are tensors: no recompiling)."""
    if v.is_cuda and torch.version.hip is None and not torch.compiler.is_compiling():
        if find_spec("triton") is not None:
            return _compiled_bin_index()(v, width, top)
    return _bin_index(v, width, top)


def tree_sum(v: torch.Tensor) -> torch.Tensor:
    """Sum each row of float64 ``v`` by halving (SEMANTICS.md §5.13): a fixed order."""
    n = v.shape[1]
    p = 1 << max(n - 1, 0).bit_length()
    if p != n:
        v = torch.nn.functional.pad(v, (0, p - n))
    while v.shape[1] > 1:
        h = v.shape[1] // 2
        v = v[:, :h] + v[:, h:]
    return v[:, 0]
