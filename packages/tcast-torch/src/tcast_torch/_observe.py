"""Observers on torch tensors: calibrated scale parts (SEMANTICS.md §5.13).

The same statistics as the reference engine's observers, in torch operations on any device:
every rule that is not array arithmetic is read from :mod:`tcast.observe`, and the scale parts
come from the datatype's own scale recipe (``tcast.kit``) applied to the chosen ranges. Each
float operation rounds once (no fused multiply-add: eager operations, or a compiled update
whose Triton kernels are built without contraction), so CPU and CUDA give the reference
engine's bits.
"""

from __future__ import annotations

import hashlib
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
from ._compiled import compiled_as, compiled_or_eager
from ._run import INPUT_DTYPES
from ._scale import Ops, round_f32
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
        self._reads = 0
        self._values_fn = None  # the compiled scale recipe, once reads run it

    def __getstate__(self) -> dict:
        """The observer's state without its compiled recipe (a function of this process)."""
        state = self.__dict__.copy()
        state["_values_fn"] = None
        return state

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
            self._extremes(rows, "lohi", ("lo", "hi"))
        elif isinstance(m, ob.HistogramPercentile | ob.Entropy):
            self._histogram(rows)
        elif isinstance(m, ob.Percentile):
            real = til.to_blocks(torch.isfinite(x.detach())).reshape(rows.shape).sum(dim=1)
            self._percentile(_finite(rows), real)
        elif isinstance(m, ob.MinMax | ob.Mse):
            self._extremes(rows, "amax", ("amax",))
        else:
            self._history(rows)
        self.batches += 1

    def _extremes(self, rows: torch.Tensor, kind: str, names: tuple[str, ...]) -> None:
        """The running extremes (or their moving average) of the blocks' statistics."""
        st = self._stats
        c = getattr(self.method, "momentum", None)
        old = tuple(st[n] for n in names) if names[0] in st else ()
        # maxima and minima (or the moving average) are merged in the reduction's own kernel;
        # the average's constant k (a float32 value) is a tensor: no graph per momentum
        k = ()
        if c is not None and old:
            k = st.get("k")
            if k is None:
                k = st["k"] = torch.tensor(
                    ob.moving_average_constant(c), dtype=torch.float32, device=rows.device
                )
            k = (k,)
        st.update(zip(names, _observed(rows, kind, old, *k), strict=True))

    def _history(self, rows: torch.Tensor) -> None:
        """TransformerEngine's amax history (SEMANTICS.md §5.13), kept lazily.

        An update only stores its batch amaxes in a ring of ``length`` tensors (the
        reduction's own output: no copy); the chosen amax is derived when the scales are read
        (:meth:`_history_pieces`). The reference engine's chosen amax after batch ``T`` is
        ``scaled(pick)`` of the last batch whose pick was positive: ``scaled(window max)``
        where that is positive, otherwise ``scaled`` of the last positive batch amax, which
        then lies before the window (for ``most_recent``, always the last positive batch
        amax). So at the end of each round its amaxes fold into ``older``, the last positive
        amax of every finished round, before the next round overwrites them.
        """
        m, st = self.method, self._stats
        ring = st.get("history")
        if ring is None:
            ring = st["history"] = [None] * m.length  # None: no batch yet (amax 0)
            st["slot"] = 0
            st["suffix_from"] = m.length  # no row of a previous round turned yet
        j = st["slot"]
        (ring[j],) = _observed(rows, "amax", ())
        st["slot"] = (j + 1) % m.length
        if j + 1 == m.length:  # the round is complete: fold it before it is overwritten
            st["older"] = _last_positive(st.get("older"), ring)
            st["suffix_from"] = m.length  # no row holds a suffix maximum yet
            st.pop("round", None)

    def _history_pieces(self) -> tuple:
        """The pieces of an amax history's chosen amax after the last batch (``_history``).

        Returns ``(part, prev, older, factor)`` for :func:`_history_pick`. A read costs O(1)
        amortized whether scales are read after every batch (delayed scaling) or once: what
        it derives is kept for the next read. With ``s`` batches of the current round
        observed, the window is this round's rows ``0 .. s - 1`` (their max, or for
        ``most_recent`` their last positive amax after ``older``, kept as ``round`` and
        extended by the rows observed since: ``part``) and the previous round's rows ``s ..``
        (turned in place, from the last row down, into their suffix maxima: ``suffix_from``
        is the lowest row turned; each row once per round; ``prev`` is row ``s``).
        """
        m, st = self.method, self._stats
        ring, s = st["history"], st["slot"]
        k, part = st.get("round", (0, st.get("older") if m.algo == "most_recent" else None))
        for t in ring[k:s]:
            if part is None:
                part = t
            elif m.algo == "max":
                part = torch.maximum(part, t)
            else:
                part = torch.where(t > 0, t, part)
        st["round"] = (s, part)
        prev = older = None
        if m.algo == "max":
            if ring[s] is not None:  # the previous round's batches s .. in the window
                # the last row is its own suffix maximum
                for i in range(min(st["suffix_from"], m.length - 1) - 1, s - 1, -1):
                    torch.maximum(ring[i], ring[i + 1], out=ring[i])
                st["suffix_from"] = min(st["suffix_from"], s)
                prev = ring[s]
            older = st.get("older")
        if "factor" not in st:  # kept: a host-to-device copy per read costs more than a kernel
            like = part if part is not None else prev
            st["factor"] = torch.tensor(2.0**m.margin, dtype=torch.float32, device=like.device)
            # stand-ins for absent pieces, which change nothing (amaxes are +0 or more):
            # always tensors, and three apart, so that a compiled read has one graph
            st["absent"] = tuple(torch.zeros_like(like) for _ in range(3))
        zp, zq, zo = st["absent"]
        return (
            zp if part is None else part,
            zq if prev is None else prev,
            zo if older is None else older,
            st["factor"],
        )

    def _percentile(self, rows: torch.Tensor, real: torch.Tensor) -> None:
        """Add each block's ``k``-th smallest ``|x|`` of its ``real`` finite elements.

        ``rows`` hold 0 for non-finite elements and padding, which sort below every finite
        ``|x|``: the ``k``-th smallest finite one is entry ``k - 1 + pad`` of the row in
        ascending order, entry ``real - k`` in descending order. Long rows select only the
        entries up to the deepest such index from the nearer end (``torch.topk``; CPU, one
        row of 2**24: 146 ms, a full sort 1992 ms); short rows are sorted.
        """
        q, n = self.method.q, rows.shape[1]
        mag = rows.abs()
        sizes, where = torch.unique(real, return_inverse=True)  # few distinct block sizes
        sizes = sizes.tolist()
        ks = [ob.percentile_rank(q, int(r)) for r in sizes]
        k = torch.tensor(ks, dtype=torch.int64, device=rows.device)[where]
        pad = n - real
        # the deepest index needed from each end (blocks without finite elements need none)
        up = max((kk - 1 + n - r for r, kk in zip(sizes, ks, strict=True) if kk), default=0)
        down = max((r - kk for r, kk in zip(sizes, ks, strict=True) if kk), default=0)
        if n < _SELECT:
            part, idx = torch.sort(mag, dim=1).values, k - 1 + pad
        elif down <= up:
            part, idx = torch.topk(mag, down + 1, dim=1).values, real - k
        else:
            part, idx = torch.topk(mag, up + 1, dim=1, largest=False).values, k - 1 + pad
        idx = torch.where(k > 0, idx, torch.zeros_like(idx))
        v = torch.gather(part, 1, idx[:, None])[:, 0]
        v = torch.where(k > 0, v, torch.zeros_like(v))
        st = self._stats
        st["sum"] = v.double() if "sum" not in st else st["sum"] + v.double()

    def _histogram(self, rows: torch.Tensor) -> None:
        st, m = self._stats, self.method
        amax = float(_observed(rows, "amax", ())[0].amax()) if rows.numel() else 0.0  # a sync
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
        itype = torch.int32 if nb < 2**31 - 1 else torch.int64  # top + 1 must fit too
        top = torch.tensor(nb - 1, dtype=itype, device=rows.device)
        idx = _bins(rows.reshape(-1), w, top)
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
        if isinstance(m, ob.AmaxHistory):
            return _history_pick(*self._history_pieces())
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
        # reads after every batch (delayed scaling) run the recipe compiled: eagerly it is a
        # few hundred small kernels (H200: 3.1 ms for a float32 tensor scale)
        self._reads += 1
        fused = self._reads > _EAGER_READS
        if self.dtype.nspec.is_uint:
            return self._parts(None, lo=st["lo"], hi=st["hi"], fused=fused)
        if isinstance(self.method, ob.AmaxHistory):
            # the chosen amax is picked from its pieces inside the compiled recipe (and the
            # tensor amax taken there): one compiled call per read, not five more kernels
            part, *pick = self._history_pieces()
            return self._parts(part, pick=tuple(pick), fused=fused)
        amax = self._chosen()
        tamax = None
        if self.dtype.is_multiscale:
            tamax = self._tamax(st["amax"] if self._mse_tiles else amax)
        return self._parts(amax, tamax=tamax, fused=fused)

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

    def _parts(
        self, amax, *, tamax=None, lo=None, hi=None, pick=None, fused: bool = False
    ) -> dict[str, torch.Tensor]:
        """The scale parts the datatype's scale recipe gives for the ranges (float32 values).

        ``pick``: ``amax`` and ``pick`` are an amax history's pieces (:func:`_history_pick`).
        ``fused``: on CUDA, run the recipe as one compiled kernel (the same bits: its float
        arithmetic is correctly rounded integer and float64 work, compiled without
        contraction).
        """
        key = (self._rules, self.tensor_scale_only)
        ranges = (amax, tamax, lo, hi, pick)
        some = amax if amax is not None else lo
        dt = self.dtype
        # float32 tile scales under a tensor scale stay eager, as the compiled casts do: an
        # ulp apart from the reference in 4 of 842 of an H200's conformance cases
        exact = not (dt.is_multiscale and dt.sspec.scale.bits >= 32)
        if fused and exact and _compilable(some):
            if self._values_fn is None:  # kept: hashing the rules on every read costs more
                self._values_fn = _compiled_values(*key, pick is not None)
            vals = _run_compiled(self._values_fn, _scale_values, *key, *ranges)
        else:
            vals = _scale_values(*key, *ranges)
        til = self._til
        for n in ("scale", "zero"):
            if n in vals:
                v = vals[n].reshape(self._block_shape)
                vals[n] = til.scales_from_blocks(v).contiguous()
        return vals


#: Reads of an observer's scales that run the scale recipe eagerly before it is compiled
#: (CUDA): a read after calibration does not wait for a compilation; reads after every batch
#: soon run one fused kernel.
_EAGER_READS = 8


def _scale_values(
    rules, tensor_scale_only: bool, amax, tamax, lo, hi, pick=None
) -> dict[str, torch.Tensor]:
    """The scale parts (float32 values, one per block) of the ranges by the scale recipe.

    ``pick``: the chosen amax is :func:`_history_pick` of ``amax`` and ``pick``. A two-level
    datatype's tensor amax is the blocks' maximum where ``tamax`` is None.
    """
    dt = rules.dtype
    ops = Ops(rules)
    if pick is not None:
        amax = _history_pick(amax, *pick)
    if dt.nspec.is_uint:
        out = run_recipe(rules.scale, ops, rules.constants, lo=lo, hi=hi)
    else:
        inputs = {"amax": amax}
        if dt.is_multiscale:
            if tamax is None:
                tamax = amax.amax() if amax.numel() else amax.new_zeros(())
            inputs["tamax"] = tamax
        out = run_recipe(rules.scale, ops, rules.constants, **inputs)

    def value(codes: torch.Tensor, which: str) -> torch.Tensor:
        return ops.decode(codes.to(torch.int32), which).to(torch.float32)

    # tensor_scale_only: the tile scales are each cast's own
    vals = {} if tensor_scale_only else {"scale": value(out["scale"], "scale")}
    if dt.nspec.is_uint:
        vals["zero"] = value(out["zero"], "zero")
    if dt.is_multiscale:
        vals["tensor_scale"] = value(out["tenscale"].reshape(1), "tenscale").reshape(())
    return vals


def _history_pick(part, prev, older, factor) -> torch.Tensor:
    """An amax history's chosen amax from its pieces (``Observer._history_pieces``).

    The window's max (this round's ``part``, the previous round's suffix maximum ``prev``)
    where that is positive, else ``older`` (the last positive amax of the finished rounds),
    times ``factor`` (``2**margin``), kept finite: TransformerEngine's rule (SEMANTICS.md
    §5.13). An absent piece is zeros.
    """
    amax = torch.maximum(part, prev)
    # a window of zeros: the last positive amax lies before it, in a finished round
    amax = torch.where(amax > 0, amax, older)
    # the product is exact in float64; clamped there and rounded once to float32 it has the
    # bits of the float32 product clamped, and no compiled kernel can flush it to zero where
    # it is a float32 subnormal
    top = torch.finfo(torch.float32).max
    return round_f32(torch.clamp_max(amax.to(torch.float64) * factor.to(torch.float64), top))


@cache
def _compiled_values(rules, tensor_scale_only: bool, history: bool):
    """:func:`_scale_values` compiled for one datatype (its own code object, one graph).

    ``history``: for an amax history's pieces (``pick``), a code object of its own too: each
    keeps its graphs and Dynamo's recompile limit (8) apart. ``compiled_as``'s exact options:
    the recipe's float32 products must round as eager ones do.
    """
    # a digest, not hash(): the same name in every process, for logs and caches
    key = repr((rules.dtype, tensor_scale_only, history)).encode()
    digest = hashlib.sha1(key).hexdigest()[:12]
    return compiled_as(_scale_values, f"tcast_scale_values_{digest}")


def _run_compiled(fn, eager, *args):
    """``fn(*args)`` compiled, or ``eager(*args)`` from the first time compiling fails."""
    return compiled_or_eager(fn, eager, "an observer's step", "", *args)


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
    # 0 is in every range (SEMANTICS.md §5.7); + 0 makes a -0 minimum (or maximum: max(-0,
    # +0) may be either zero) +0
    return torch.minimum(v.amin(dim=1), zero) + 0.0, torch.maximum(v.amax(dim=1), zero) + 0.0


def _chunked(rows: torch.Tensor, kind: str, chunk: int):
    """:func:`_row_stats` of each row, reduced as chunks of ``chunk`` elements first (0: not)."""
    if not chunk:
        return _row_stats(rows, kind)
    n = rows.shape[0]
    out = _row_stats(rows.reshape(-1, chunk), kind)
    if kind == "amax":
        return out.reshape(n, -1).amax(dim=1)
    lo, hi = out
    return lo.reshape(n, -1).amin(dim=1), hi.reshape(n, -1).amax(dim=1)


def _row_update(rows: torch.Tensor, kind: str, chunk: int, old: tuple, *args):
    """The rows' statistics merged with the earlier ones, as one fused pass when compiled.

    A tuple of the rows' maxima (``amax``) or of their minima and maxima (``lohi``), with
    ``old`` (the same tuple so far) merged in: their running max (min, max), exact operations;
    or, with ``args`` = ``(k,)`` (a float32 0-d tensor), the moving average ``o + k·(v − o)``
    of each, three operations that each round once (see :func:`_compiled_update`).
    """
    out = _chunked(rows, kind, chunk)
    if kind == "amax":
        out = (out,)
    if not old:
        return out
    if args:
        (k,) = args
        return tuple(o + k * (v - o) for o, v in zip(old, out, strict=True))
    if kind == "amax":
        return (torch.maximum(old[0], out[0]),)
    return torch.minimum(old[0], out[0]), torch.maximum(old[1], out[1])


@cache
def _compiled_update(length: int, kind: str, chunked: bool):
    """The compiled :func:`_row_update` of ``kind`` for reductions over ``length`` elements.

    One function (code object) per length, kind and whether rows are chunked: Dynamo keeps
    its compiled graphs per code object (a few: past its recompile limit a call runs
    eagerly), and a graph made dynamic in the reduced length reduces about 15 times slower
    than one specialized on it (H200, rows of 32; chunked rows of 16384 and rows of 128
    sharing one code object made the latter 4.5 times slower). Shapes start static (H200,
    16384^2 bfloat16 in rows of 32: 0.138 ms static, 0.162 ms with the row count marked
    dynamic); Dynamo makes the row count dynamic itself once it changes.

    ``emulate_precision_casts`` builds the Triton kernels without floating-point contraction
    (Inductor's ``enable_fp_fusion=False``): the moving average's product and sum stay two
    roundings, not one fused multiply-add (with contraction, 50492 of 2**23 averages of an
    H200 run differed from the eager bits; without, none).
    """
    name = f"_row_update_{kind}_{length}{'_chunks' if chunked else ''}"
    return compiled_as(_row_update, name, {"emulate_precision_casts": True})


#: Percentile selects in rows at least this long (``torch.topk`` from the nearer end) and
#: sorts shorter ones.
_SELECT = 1024

#: Rows longer than this (channels, tensors) are reduced in chunks of this length first
#: (H200, 16384^2 bfloat16: 1024-chunks reduce in 0.165 ms, rows of 32 in 0.143).
_CHUNK = 128


def _compilable(t: torch.Tensor) -> bool:
    """Whether work on ``t`` runs compiled: CUDA (not ROCm) with Triton, outside a trace."""
    return (
        t.is_cuda
        and torch.version.hip is None
        and not torch.compiler.is_compiling()
        and find_spec("triton") is not None
    )


def _observed(rows: torch.Tensor, kind: str, old: tuple, *args):
    """:func:`_row_update`, one fused pass over the rows on CUDA (Inductor), eager elsewhere.

    Compiled for rows of at most ``_CHUNK`` elements and for longer rows that split into whole
    chunks; other rows run eagerly, so that only a few reduced lengths are ever compiled.
    Ranges (``lohi``) of rows with contiguous elements run a hand-written Triton kernel
    instead (``_ranges``: Inductor's two-output reduction reads at about two thirds of
    its speed).
    """
    length = rows.shape[1]
    if kind == "lohi" and _compilable(rows) and (length <= 1 or rows.stride(1) == 1):
        from ._ranges import row_ranges  # imports Triton: only here

        return row_ranges(rows, old, *args)
    chunk = _CHUNK if length > _CHUNK and length % _CHUNK == 0 and rows.is_contiguous() else 0
    if _compilable(rows) and (chunk or length <= _CHUNK):
        fn = _compiled_update(chunk or length, kind, bool(chunk))
        return _run_compiled(fn, _row_update, rows, kind, chunk, old, *args)
    return _row_update(rows, kind, chunk, old, *args)


#: An amax history's rounds fold into one tensor in groups of this many batch amaxes, one
#: compiled kernel per group. A short group is padded with zeros, which change nothing: one
#: graph for every group (padding by repeating a tensor would alias two inputs, and Dynamo
#: compiles another graph for aliased inputs).
_FOLD = 16


def _fold(older: torch.Tensor, *amaxes: torch.Tensor) -> torch.Tensor:
    """``older`` replaced by each later amax that is positive, in order."""
    for t in amaxes:
        older = torch.where(t > 0, t, older)
    return older


@cache
def _compiled_fold():
    return torch.compile(_fold, dynamic=None)


def _last_positive(older: torch.Tensor | None, amaxes: list) -> torch.Tensor:
    """Per block, the last positive amax of ``older`` followed by ``amaxes`` (oldest first).

    Blocks with none get 0 (amaxes are never negative). ``older`` may be None (no earlier
    round) where ``amaxes`` is not empty.
    """
    ts = list(amaxes)
    if older is None:
        # a copy where nothing folds into it (a history of one): a read then passes the ring's
        # row and this apart, and a compiled read compiles no graph for aliased inputs
        older, ts = (ts[0].clone() if len(ts) == 1 else ts[0]), ts[1:]
    compiled = _compilable(older)
    for i in range(0, len(ts), _FOLD):
        group = ts[i : i + _FOLD]
        if compiled:
            pad = [torch.zeros_like(older) for _ in range(_FOLD - len(group))]
            older = _compiled_fold()(older, *group, *pad)
        else:
            older = _fold(older, *group)
    return older


def _bin_index(v: torch.Tensor, width: torch.Tensor, top: torch.Tensor) -> torch.Tensor:
    """The histogram bin of each element: ``min(floor(fl64(|x|) / w), top)``.

    A non-finite element gets ``top + 1``, a bin the caller drops.
    """
    a = v.to(torch.float32)
    keep = torch.isfinite(a)
    mag = torch.where(keep, a.abs(), torch.zeros((), dtype=a.dtype, device=a.device))
    # int32 indices where they fit: bincount reads half the bytes (H200, 2**28 elements:
    # 1.87 ms, not 2.33)
    idx = torch.minimum(torch.floor(mag.double() / width), top.double()).to(top.dtype)
    return torch.where(keep, idx, top + 1)


@lru_cache(maxsize=1)
def _compiled_bin_index():
    return torch.compile(_bin_index, dynamic=None)


def _bins(v: torch.Tensor, width: torch.Tensor, top: torch.Tensor) -> torch.Tensor:
    """:func:`_bin_index`, fused on CUDA (the width and top are tensors: no recompiling)."""
    if _compilable(v):
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
