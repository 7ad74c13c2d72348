"""Helpers of the ``cast_dual`` and blocked-layout tests: expectations from tcast_ref alone.

Loaded by ``tests/conftest.py`` and by ``packages/tcast-triton/tests/conftest.py`` (the
Triton interpreter tier) as ``dual_checks``. An engine's ``cast_dual`` is compared with
results built here from single ``tcast_ref.cast`` calls, never with the kit's own
``dual_by_casts``:

* the first result is ``cast(x, dtype)``; the second ``cast(x, column_datatype(dtype))``,
  under stochastic rounding with a seed drawn from Philox stream 1 (``stream=1``; the first
  from stream 0), given ``rbits`` serving both (SEMANTICS.md §8.2);
* ``transposed=True``: for deterministic round modes the second result is
  ``cast(xᵀ, dtype)`` of a C-contiguous ``xᵀ`` (the claim itself); under stochastic rounding
  (whose random words follow ``x``'s flat indices) it is the plain column cast's parts
  transposed here with NumPy, packed by ``tcast_ref.pack_codes`` and laid out blocked by
  :func:`blocked_by_offsets`;
* blocked scales (SEMANTICS.md §8.1) by :func:`blocked_by_offsets`, one ``tcast.blocked_offset``
  per scale (itself pinned to hand-worked cases and to torchao's ``to_blocked``).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import tcast
import tcast_ref
from tcast import CastMode, CastResult, RoundMode
from tcast.layout import blocked_refusal

PARTS = ("data", "scale", "zero", "tenscale", "mask")


def blocked_by_offsets(plain: np.ndarray, dim: int) -> np.ndarray:
    """Plain scale codes in the blocked layout, one :func:`tcast.blocked_offset` per code."""
    moved = np.moveaxis(plain, dim, -1)
    cols = moved.shape[-1]
    rows = int(np.prod(moved.shape[:-1]))
    mat = moved.reshape(rows, cols)
    prow, pcol = -(-rows // 128) * 128, -(-cols // 4) * 4
    out = np.zeros(prow * pcol, plain.dtype)
    for r in range(rows):
        for c in range(cols):
            out[tcast.blocked_offset(r, c, cols)] = mat[r, c]
    return out.reshape(prow, pcol)


def to_numpy(a):
    """A torch tensor (any device) or NumPy array as a NumPy array (bfloat16 kept)."""
    if a is None or isinstance(a, np.ndarray):
        return a
    import torch

    t = a.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if t.dtype in (torch.uint16, torch.uint32):
        signed = {torch.uint16: (torch.int16, np.uint16), torch.uint32: (torch.int32, np.uint32)}
        s, u = signed[t.dtype]
        return t.view(s).numpy().view(u)
    return t.numpy()


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype.kind in "fV" or a.dtype == ml_dtypes.bfloat16:
        return a.view({2: np.uint16, 4: np.uint32}[a.dtype.itemsize])
    return a


def differences(got, want, label: str) -> list[str]:
    """What differs between two results (virtual arrays or CastResults), bit for bit."""
    out = []
    if isinstance(want, CastResult):
        if not isinstance(got, CastResult):
            return [f"{label}: a {type(got).__name__}, not a CastResult"]
        for attr in ("shape", "dtype", "castmode", "scale_layout", "input_dtype"):
            g, w = getattr(got, attr), getattr(want, attr)
            if (tuple(g) if attr == "shape" else g) != (tuple(w) if attr == "shape" else w):
                out.append(f"{label}.{attr}: {g!r} != {w!r}")
        for part in PARTS:
            g, w = to_numpy(getattr(got, part)), getattr(want, part)
            if (g is None) != (w is None):
                out.append(f"{label}.{part}: present {g is not None}, expected {w is not None}")
            elif w is not None:
                if g.shape != w.shape:
                    out.append(f"{label}.{part}: shape {g.shape} != {w.shape}")
                elif not np.array_equal(_bits(g), _bits(w)):
                    bad = int(np.count_nonzero(_bits(g) != _bits(w)))
                    out.append(f"{label}.{part}: {bad} of {w.size} differ")
        return out
    g = to_numpy(got)
    if g.shape != want.shape or g.dtype != want.dtype:
        return [f"{label}: {g.dtype}{g.shape} != {want.dtype}{want.shape}"]
    if not np.array_equal(_bits(g), _bits(want)):
        return [f"{label}: {int(np.count_nonzero(_bits(g) != _bits(want)))} values differ"]
    return out


def _swap(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.swapaxes(a, -1, -2))


def expected_dual(x: np.ndarray, dtype, *, transposed=False, scale_layout="plain", **kw):
    """``cast_dual``'s two results for a NumPy ``x``, from single tcast_ref casts.

    ``kw``: castmode (default actual), roundmode, scalemode, seed, rbits, saturate. With a
    seed the first result is the stream-0 cast and the second the stream-1 column cast.
    """
    dt = tcast.datatype(dtype) if isinstance(dtype, str) else dtype
    kw.setdefault("castmode", "actual")
    cm = tcast.cast_mode(kw["castmode"])
    lay = "plain" if cm is CastMode.VIRTUAL else scale_layout
    first = tcast_ref.cast(x, dt, scale_layout=lay, **kw)
    cdt = tcast.kit.column_datatype(dt)
    # the column result's own random bits: Philox stream 1 of the same seed (§3.3, §8.2)
    ckw = {**kw, "stream": 1} if kw.get("seed") is not None else kw
    if not transposed:
        return first, tcast_ref.cast(x, cdt, scale_layout=lay, **ckw)
    if cm is CastMode.VIRTUAL:
        return first, _swap(tcast_ref.cast(x, cdt, **ckw))
    if tcast.round_mode(kw.get("roundmode", "even")) is not RoundMode.STOCHASTIC:
        return first, tcast_ref.cast(_swap(x), dt, scale_layout=lay, **kw)
    col = tcast_ref.cast(x, cdt, **{**ckw, "castmode": "actual"})
    data = _swap(col.data)
    mask = None if col.mask is None else _swap(col.mask)
    scale = _swap(col.scale)
    zero = None if col.zero is None else _swap(col.zero)
    if lay == "blocked":
        scale = blocked_by_offsets(scale, scale.ndim - 1)
        zero = None if zero is None else blocked_by_offsets(zero, zero.ndim - 1)
    if cm is CastMode.COMPRESS:
        flat = data.reshape(-1) if mask is None else data.reshape(-1)[mask.reshape(-1)]
        data = tcast_ref.pack_codes(flat, dt.nspec.bits)
        mask = None if mask is None else tcast_ref.pack_mask(mask)
    second = CastResult(
        data=data,
        scale=scale,
        zero=zero,
        tenscale=col.tenscale,
        mask=mask,
        meta=None,
        dtype=dt,
        shape=data.shape if cm is CastMode.ACTUAL else tuple(_swap(col.data).shape),
        castmode=cm,
        input_dtype=col.input_dtype,
        engine="expected",
        scale_layout=tcast.scale_layout(lay),
    )
    return first, second


def dual_datatypes(codes) -> list:
    """The datatypes ``cast_dual`` takes: one tile segment along the last dimension.

    Datatypes with subtile metadata or codebook data are left out: only the reference engine
    casts them, and these checks compare no metadata.
    """
    out = []
    for dt in codes:
        ss = dt.sspec
        if ss is None or ss.has_subtile or dt.nspec.is_codebook:
            continue
        if len(ss.tiles) == 1 and ss.tiles[0].dim is None:
            out.append(dt)
    return out


CAST_MODES = ("actual", "compress", "virtual")
ROUND_MODES = ("even", "stochastic", "away", "zero", "trunc")
SCALE_MODES = ("floor", "ceil", "midmax", "option3", "topbinade")
IN_DTYPES = (np.float32, ml_dtypes.bfloat16, np.float16)
SHAPES = ((40, 96), (2, 33, 70), (64, 64), (3, 17))


def case(i: int, dt) -> tuple[np.ndarray, dict]:
    """Input and keywords of dual case ``i`` (NumPy; the modes rotated by ``i``).

    Cast mode, ``transposed``, scale layout, round mode (stochastic with a seed and with
    explicit bits), scale mode, input dtype and shape (partial tiles both ways, a batch
    dimension) change with ``i``; zeros, subnormals and non-finite blocks are sprinkled.
    """
    rng = np.random.default_rng(i)
    shape = SHAPES[i % len(SHAPES)]
    n = int(np.prod(shape))
    x = rng.standard_normal(n) * np.exp2(rng.integers(-10, 10, n))
    if i % 3 == 0:
        x[rng.choice(n, 4, replace=False)] = [0.0, -0.0, 1e-40, -3e-39]
    if i % 7 == 0:  # a non-finite block in both tilings
        x[rng.integers(n)] = np.inf if i % 2 else np.nan
    with np.errstate(over="ignore"):
        x = x.astype(np.float32).astype(IN_DTYPES[i % len(IN_DTYPES)]).reshape(shape)
    cm = CAST_MODES[i % len(CAST_MODES)]
    rm = ROUND_MODES[(i // 3) % len(ROUND_MODES)]
    kw = dict(
        castmode=cm,
        roundmode=rm,
        scalemode=SCALE_MODES[(i // 2) % len(SCALE_MODES)],
        transposed=bool(i // 5 % 2),
        # (i // 4) % 2: independent of the parity that picks seed or rbits below
        scale_layout="blocked"
        if cm != "virtual" and blocked_refusal(dt) is None and (i // 4) % 2
        else "plain",
    )
    if rm == "stochastic":
        if i % 2:
            kw["seed"] = 1000 + i
        else:  # K bits per element (uint8 or uint16, SEMANTICS.md §3.3), 0 and 2**K - 1 among them
            k = tcast.rbits_width(dt)
            r = rng.integers(0, 1 << k, n, dtype=np.uint8 if k == 8 else np.uint16)
            r[0], r[-1] = 0, (1 << k) - 1
            kw["rbits"] = r.reshape(shape)
    return x, kw


def _case_values(i: int, dt) -> set[tuple]:
    """The pairs of axis values case ``i`` of ``dt`` meets: its modes and input, and the
    datatype's element format, scale format, tile size, two-level scaling and zero points."""
    x, kw = case(i, dt)
    source = "seed" if "seed" in kw else "rbits" if "rbits" in kw else "none"
    values = sorted(
        {
            "castmode": kw["castmode"],
            "roundmode": kw["roundmode"],
            "scalemode": kw["scalemode"],
            "transposed": kw["transposed"],
            "scale_layout": kw["scale_layout"],
            "random": source,
            "input": x.dtype.name,
            "shape": x.shape,
            "element": dt.nspec.code,
            "scale": str(dt.sspec.scale),
            "tile": dt.sspec.tiles[0].size,
            "two_level": dt.is_multiscale,
            "zero": dt.zero is not None,
        }.items()
    )
    return {(a, b) for n, a in enumerate(values) for b in values[n + 1 :]}


def pair_cover(dtypes: list, indices) -> list[int]:
    """A subset of the cases ``indices`` (of ``dtypes``) meeting every pair of axis values
    they meet together (:func:`case`'s modes and inputs, the datatypes' formats), chosen
    greedily, first index on ties: the sample a slow engine runs in the default tier."""
    pairs = {i: _case_values(i, dtypes[i]) for i in indices}
    need = set().union(*pairs.values()) if pairs else set()
    chosen = []
    while need:
        best = max(pairs, key=lambda i: len(pairs[i] & need))
        chosen.append(best)
        need -= pairs[best]
    return sorted(chosen)
