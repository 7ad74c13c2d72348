"""The reference cast and upcast (SEMANTICS.md §4-§8), vectorized and processed in chunks.

A scaled cast views the array as a matrix of blocks (one row per block, see
``_tiles``) and runs two passes over pieces of at most ``CHUNK`` elements:
the first reduces each row to its amax (or range) and sparsity mask, the
second encodes and decodes the elements with the row's scale (datatypes with
metadata: each subtile's exponent offset or codebook mapping too, ``_meta``;
their pieces hold whole subtiles, or whole blocks where the metadata is per
block). Peak extra memory is the output plus a few chunk-sized temporaries.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tcast import (
    CastResult,
    DataType,
    NumberSpec,
    RoundMode,
    SpecError,
)
from tcast.kit import (
    CastRequest,
    CastRules,
    ExponentScaleRule,
    build_result,
    cast_rules,
    given_exponent_rule,
    given_scale_recipe,
    run_recipe,
    scale_bounds,
    upcast_parts,
)

from ._codec import (
    code_dtype,
    decode,
    encode,
    encode_words,
    floor_log2,
    rbits_words,
    round_even_values,
    split_f32,
)
from ._given import given_inputs
from ._meta import MetaRule, decode_units, encode_units, meta_rule
from ._native import numpy_native_view
from ._pack import pack_codes, pack_mask, unpack_codes, unpack_mask
from ._philox import random_bits
from ._tiles import Tiling, from_layout, tiling
from ._work import Workspace

__all__ = ["CHUNK", "INPUT_DTYPES", "check_rbits", "run_cast", "run_upcast"]

#: Accepted input dtypes by name (SEMANTICS.md §9).
INPUT_DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}
#: Elements per processing piece (bounds the temporaries).
CHUNK = 1 << 18
_NAN32 = np.uint32(0x7FC00000).view(np.float32)


# ----------------------------------------------------------------- rule operations
def exponent_codes(v: np.ndarray, rule: ExponentScaleRule) -> np.ndarray:
    """Power-of-two scale codes of float32 ``v >= 0`` by the kit's rule (SEMANTICS.md §5.3).

    ``floor(log2 v)`` and the 24-bit significand come from the bits, never a float log2;
    0 gives code 0 and +Inf (a uint range that overflowed) the largest code.
    """
    _, _, inf, sig, q = split_f32(v)
    zero = sig == 0
    sig = np.where(zero, 1, sig)
    lg = floor_log2(sig)
    norm = sig << (23 - lg).astype(np.uint64)  # sigma * 2**23, in [2**23, 2**24)
    bump = (norm > np.uint64(rule.threshold)).astype(np.int64)
    code = np.clip(lg + q + rule.offset + bump, 0, rule.max_code)
    code = np.where(inf, rule.max_code, np.where(zero, 0, code))
    return code.astype(np.uint32)


def float_scale(v: np.ndarray, s: NumberSpec) -> np.ndarray:
    """RNE_S(clamp(v, smallest_normal_S, max_S)) as codes, NaN -> max (SEMANTICS.md §5.5)."""
    lo, hi = (np.float32(b) for b in scale_bounds(s))
    v = np.where(np.isnan(v), hi, v)
    return encode(np.clip(v, lo, hi).astype(np.float32), s, RoundMode.EVEN, None, True)


def _f32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


class _Ops:
    """The kit's recipe operations on NumPy float32 arrays (each one rounding)."""

    def __init__(self, dt: DataType, rules) -> None:
        self.specs = {
            "scale": dt.sspec.scale if dt.sspec else None,
            "tenscale": dt.tenscale,
            "zero": dt.zero,
        }
        self.rules = rules

    def div(self, a, b):
        return np.divide(_f32(a), _f32(b), dtype=np.float32)

    def mul(self, a, b):
        return np.multiply(_f32(a), _f32(b), dtype=np.float32)

    def add(self, a, b):
        return np.add(_f32(a), _f32(b), dtype=np.float32)

    def sub(self, a, b):
        return np.subtract(_f32(a), _f32(b), dtype=np.float32)

    def min(self, a, b):
        return np.minimum(_f32(a), _f32(b))

    def scale_code(self, v, which):
        return float_scale(_f32(v).reshape(-1), self.specs[which]).reshape(np.shape(v))

    def exp_code(self, v):
        return exponent_codes(_f32(v).reshape(-1), self.rules.exponent).reshape(np.shape(v))

    def ceil_code(self, v, which):
        rule = given_exponent_rule(self.specs[which])
        return exponent_codes(_f32(v).reshape(-1), rule).reshape(np.shape(v))

    def zero_code(self, v):
        z = self.specs["zero"]
        return encode(_f32(v).reshape(-1), z, RoundMode.EVEN, None, True).reshape(np.shape(v))

    def decode(self, codes, which):
        c = np.asarray(codes)
        return decode(c.reshape(-1).astype(np.uint32), self.specs[which]).reshape(c.shape)


class _PieceOps(_Ops):
    """Element recipe operations on a piece, writing into two alternating scratch buffers.

    Each element step reads the previous step's output (or the piece) and a per-row column,
    so a step never overwrites an operand it still needs; scratch buffers avoid fresh
    chunk-sized temporaries (``_work``).
    """

    def __init__(self, dt: DataType, rules, ws: Workspace) -> None:
        super().__init__(dt, rules)
        self.ws = ws
        self.turn = 0

    def _out(self, a, b) -> np.ndarray:
        # ``a`` is the piece or the previous step's output: the operand of the piece's shape
        self.turn ^= 1
        return self.ws.get(f"step{self.turn}", a.shape, np.float32)

    def mul(self, a, b):
        return np.multiply(a, _f32(b), out=self._out(a, b), dtype=np.float32)

    def add(self, a, b):
        return np.add(a, _f32(b), out=self._out(a, b), dtype=np.float32)

    def sub(self, a, b):
        return np.subtract(a, _f32(b), out=self._out(a, b), dtype=np.float32)


# ----------------------------------------------------------------- the plan
@dataclass
class _Plan:
    """Per-block (row) scales of a scaled cast and how to apply them.

    Attributes:
        scale: scale codes per row.
        zero: zero-point codes per row (uint data).
        tenscale: tensor-scale code (two-level).
        nonfinite: rows holding NaN or Inf (decode to NaN).
        recip: float32 encode multiplier per row.
        zval: float32 zero point per row (uint data), added after the multiply.
        dec: float32 decode multiplier per row.
        keep: sparsity keep-mask, rows x block length, or None.
    """

    scale: np.ndarray
    zero: np.ndarray | None
    tenscale: int | None
    nonfinite: np.ndarray
    recip: np.ndarray
    zval: np.ndarray | None
    dec: np.ndarray
    keep: np.ndarray | None

    def columns(self, rs: slice, recipe_inputs: tuple[str, ...]) -> dict:
        """The per-row values an element recipe reads, as columns of the rows ``rs``."""
        cols = {"recip": self.recip, "dec": self.dec, "zval": self.zval}
        return {k: cols[k][rs, None] for k in recipe_inputs if k in cols}


def _pieces(rows: int, cols: int, group: int) -> list[tuple[slice, slice]]:
    """Split a rows x cols matrix into pieces of about CHUNK elements (cols cut on groups)."""
    if rows == 0 or cols == 0:
        return []
    if cols <= CHUNK:
        step = max(1, CHUNK // max(cols, 1))
        return [(slice(r, min(r + step, rows)), slice(0, cols)) for r in range(0, rows, step)]
    width = max(group, (CHUNK // group) * group)
    return [
        (slice(r, r + 1), slice(c, min(c + width, cols)))
        for r in range(rows)
        for c in range(0, cols, width)
    ]


def _keep_mask(chunk: np.ndarray, til: Tiling) -> np.ndarray:
    """N-of-M sparsity over a piece of whole blocks or whole groups (SEMANTICS.md §6)."""
    g, back = (
        til.groups(chunk)
        if len(til.dims) == 2
        else (chunk.reshape(*chunk.shape[:-1], -1, til.sparse_m), lambda v: v.reshape(chunk.shape))
    )
    # rank by magnitude bits: NaN (all payloads alike) above +-Inf above every finite value
    mag = np.minimum(
        np.ascontiguousarray(g).view(np.uint32) & np.uint32(0x7FFFFFFF), np.uint32(0x7F800001)
    )
    key = -mag.astype(np.int64)
    order = np.argsort(key, axis=-1, kind="stable")  # ties: lower index first
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(til.sparse_m)[None], axis=-1)
    return back(ranks < til.sparse_n)


def _f32_piece(rows: np.ndarray, rs: slice, cs: slice, ws: Workspace) -> np.ndarray:
    """A piece as float32: a view of float32 input, else converted into a scratch buffer."""
    piece = rows[rs, cs]
    if piece.dtype == np.float32:
        return piece
    out = ws.get("piece", piece.shape, np.float32)
    np.copyto(out, piece, casting="unsafe")
    return out


def _row_reduce(op: np.ufunc, a: np.ndarray) -> np.ndarray:
    """Reduce each row with ``op``, halving while the width is even, then along the axis.

    NumPy reduces short rows slowly; NaN propagates through np.maximum and np.minimum.
    """
    while a.shape[1] > 8 and a.shape[1] % 2 == 0:
        half = a.shape[1] // 2
        a = op(a[:, :half], a[:, half:])
    return op.reduce(a, axis=1)


def _plan(rows: np.ndarray, req: CastRequest, til: Tiling, ws: Workspace) -> _Plan:
    """Pass 1: reduce every row to its scale (SEMANTICS.md §5), by the kit's recipe."""
    dt, rules = req.dtype, req.rules
    n, snum = dt.nspec, dt.sspec.scale
    nrows, k = rows.shape
    sparse = til.sparse_m > 0
    keep = np.empty(rows.shape, bool) if sparse else None
    if n.is_uint:
        lo = np.zeros(nrows, np.float32)  # the range always holds 0 (§5.7)
        hi = np.zeros(nrows, np.float32)
    else:
        amax = np.zeros(nrows, np.float32)
    for rs, cs in _pieces(nrows, k, _group(til, k)):
        if k == 0:
            break
        chunk = _f32_piece(rows, rs, cs, ws)
        if sparse:
            kp = _keep_mask(chunk, til)
            keep[rs, cs] = kp
            chunk = np.where(kp, chunk, np.float32(0))
        if n.is_uint:
            lo[rs] = np.minimum(lo[rs], _row_reduce(np.minimum, chunk))
            hi[rs] = np.maximum(hi[rs], _row_reduce(np.maximum, chunk))
        else:
            mag = np.abs(chunk, out=ws.get("abs", chunk.shape, np.float32))
            amax[rs] = np.maximum(amax[rs], _row_reduce(np.maximum, mag))
    ops = _Ops(dt, rules)
    # given parts (SEMANTICS.md §5.12): the kit's recipe for them, the given values per row
    given = {} if req.given is None else given_inputs(req.given, til, nrows)
    recipe = rules.scale if req.given is None else given_scale_recipe(rules, *req.given.parts)
    if n.is_uint:
        nonfinite = ~(np.isfinite(lo) & np.isfinite(hi))
        out = run_recipe(
            recipe,
            ops,
            rules.constants,
            lo=np.where(nonfinite, np.float32(0), lo),
            hi=np.where(nonfinite, np.float32(0), hi),
            **given,
        )
        z = dt.zero
        zero = np.where(nonfinite, z.nan_code if z.has_nan else 0, out["zero"])
        scale = np.where(nonfinite, snum.nan_code, out["scale"]).astype(code_dtype(snum.bits))
        return _Plan(
            scale,
            zero.astype(code_dtype(z.bits)),
            None,
            nonfinite,
            out["recip"],
            out["zval"],
            out["dec"],
            keep,
        )
    nonfinite = ~np.isfinite(amax)
    amax = np.where(nonfinite, np.float32(0), amax)
    inputs = {"amax": amax, **given}
    tcode = None
    if dt.is_multiscale and "gtenscale" not in given:  # a given tensor scale: no tensor amax
        t_amax = np.max(np.where(nonfinite, np.float32(np.inf), amax), initial=np.float32(0))
        if not np.isfinite(t_amax):  # a non-finite tensor: every block is NaN (§5.6)
            scale = np.full(nrows, snum.nan_code, code_dtype(snum.bits))
            zeros = np.zeros(nrows, np.float32)
            return _Plan(
                scale,
                None,
                int(dt.tenscale.nan_code),
                np.ones(nrows, bool),
                zeros,
                None,
                zeros,
                keep,
            )
        inputs["tamax"] = np.float32(t_amax)
    out = run_recipe(recipe, ops, rules.constants, **inputs)
    if dt.is_multiscale:
        tcode = int(out["tenscale"])
    scale = np.where(nonfinite, snum.nan_code, out["scale"]).astype(code_dtype(snum.bits))
    return _Plan(scale, None, tcode, nonfinite, out["recip"], None, out["dec"], keep)


def _scaled_inputs(chunk, plan: _Plan, rs, req: CastRequest, pops: _PieceOps) -> np.ndarray:
    """The element encode recipe of a piece: fl32(x * r) [+ zero point] [* 2**(K-2)]."""
    enc = req.rules.encode
    return run_recipe(enc, pops, req.rules.constants, x=chunk, **plan.columns(rs, enc.inputs))["xs"]


def _element_values(q, plan: _Plan, rs, rules: CastRules, pops: _PieceOps) -> np.ndarray:
    """The element decode recipe of a piece: decoded codes ``q`` to float32 values."""
    dec = rules.decode
    return run_recipe(dec, pops, rules.constants, q=q, **plan.columns(rs, dec.inputs))["v"]


def _encode_piece(chunk, plan, rs, cs, req, rbits, pops) -> np.ndarray:
    """Pass 2a: element codes of a piece (SEMANTICS.md §5.3-§5.7)."""
    xs = _scaled_inputs(chunk, plan, rs, req, pops)
    codes = encode_words(xs, req.dtype.nspec, req.roundmode, rbits, True, pops.ws)
    nonfinite = plan.nonfinite[rs]
    if plan.keep is not None:
        zero_out = nonfinite[:, None] | ~plan.keep[rs, cs]
    elif nonfinite.any():
        zero_out = nonfinite[:, None]
    else:
        return codes
    return np.where(zero_out, 0, codes).astype(codes.dtype, copy=False)


def _virtual_piece_fast(chunk, plan, rs, cs, req, pops) -> np.ndarray | None:
    """Round-to-nearest-even virtual values of a piece without forming codes, or None.

    Same bits as decoding the codes (checked by the tests over every combination).
    """
    n = req.dtype.nspec
    if n.is_integer and n.bits > 24:
        return None
    if not n.is_integer and round_even_values(chunk[:0], n) is None:
        return None
    xs = _scaled_inputs(chunk, plan, rs, req, pops)
    if n.is_integer:
        lo, hi = req.rules.int_limits
        q = np.rint(xs, out=xs)
        np.clip(q, np.float32(lo), np.float32(hi), out=q)
    else:
        q = round_even_values(xs, n, pops.ws)
    v = _element_values(q, plan, rs, req.rules, pops)
    if n.is_integer:
        v = v + np.float32(0)  # integers have no -0
    # q is not passed: it may share a scratch buffer with the recipe's steps, and is never a
    # NaN in a finite block (the scaled inputs are finite)
    return _finish(v, plan, rs, cs)


def _finish(
    v: np.ndarray, plan: _Plan, rs: slice, cs: slice, q: np.ndarray | None = None
) -> np.ndarray:
    """NaN bits, NaN throughout non-finite blocks, +0 where pruned (SEMANTICS.md §5.2, §6, §8).

    A NaN value gets the bits §8 fixes: the element's own NaN where ``q`` (decoded codes that
    can be NaN codes) is one, else +0x7FC00000. NumPy's NaN bits follow the processor (an
    invalid operation such as 0 * Inf gives 0xFFC00000 on x86, 0x7FC00000 on Arm); upcasts of
    codes a cast does not produce meet such NaNs, and so does a cast whose two-level
    multiplier ``fl32(t * s)`` overflowed (zero elements times Inf).
    """
    nan = np.isnan(v)
    if nan.any():
        fill = np.uint32(0x7FC00000)
        if q is not None:
            fill = np.where(np.isnan(q), np.asarray(q, np.float32).view(np.uint32), fill)
        v = np.where(nan, np.asarray(fill, np.uint32).view(np.float32), v)
    nonfinite = plan.nonfinite[rs, None]
    if nonfinite.any():
        v = np.where(nonfinite, _NAN32, v)
    if plan.keep is not None:
        v = np.where(plan.keep[rs, cs] | nonfinite, v, np.float32(0))
    return v.astype(np.float32, copy=False)


def _decode_piece(codes, plan, rs, cs, rules: CastRules, pops) -> np.ndarray:
    """Pass 2b: decoded float32 values of a piece (the virtual result before the input dtype)."""
    q = decode(codes, rules.dtype.nspec)
    return _finish(_element_values(q, plan, rs, rules, pops), plan, rs, cs, q)


# ----------------------------------------------------------------- the cast
@dataclass(frozen=True)
class _SeedBits:
    """Random bits to draw from Philox by flat index, as pieces need them (codec words)."""

    seed: int
    width: int
    stream: int

    def flat(self, start: int, count: int) -> np.ndarray:
        """The words of flat indices ``start .. start + count - 1``."""
        r = random_bits(self.seed, count, start, width=self.width, stream=self.stream)
        return rbits_words(r, self.width)

    def full(self, shape: tuple[int, ...]) -> np.ndarray:
        """The words of a whole array."""
        return self.flat(0, int(np.prod(shape, dtype=np.int64))).reshape(shape)


#: The NumPy dtype of explicit random bits, by width (SEMANTICS.md §3.3).
RBITS_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16)}


def check_rbits(x: np.ndarray, rbits: object, width: int) -> np.ndarray:
    """Explicit random bits: a uint8 (``width`` 8) or uint16 (16) NumPy array of x's shape.

    Returns:
        The codec's uint32 words of them (:func:`_codec.rbits_words`).

    Raises:
        SpecError: for anything else, naming the dtype the datatype needs.
    """
    want = RBITS_DTYPES[width]
    if not isinstance(rbits, np.ndarray) or rbits.dtype != want:
        got = f"{type(rbits).__name__} {getattr(rbits, 'dtype', '')}".rstrip()
        raise SpecError(
            f"rbits must be a {want} NumPy array ({width} random bits per element for this "
            f"datatype, SEMANTICS.md §3.3), got {got}"
        )
    if rbits.shape != x.shape:
        raise SpecError(f"rbits has shape {rbits.shape}, the input has shape {x.shape}")
    return rbits_words(rbits, width)


def run_cast(x: np.ndarray, req: CastRequest) -> np.ndarray | CastResult:
    """Cast a checked request (``RefEngine.run``)."""
    if req.roundmode is not RoundMode.STOCHASTIC:
        rb = None
    elif req.dtype.nspec.is_codebook:
        raise SpecError(
            f"stochastic rounding is not defined for codebook datatypes (their entries are not "
            f"evenly spaced) such as {req.dtype.name}: use even, away, zero or trunc"
        )
    else:
        width = req.dtype.nspec.rbits_width
        rb = req.rbits if req.seed is None else _SeedBits(req.seed, width, req.modes.stream)
    # float32 overflow to Inf is part of the semantics (§0), not an accident to warn about
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        if req.layout is None:
            return _unscaled(x, req, rb)
        return _scaled(x, req, from_layout(req.layout), rb)


def _unscaled(x, req: CastRequest, rb):
    n = req.dtype.nspec
    rmode = req.roundmode
    flat = x.reshape(-1)
    rflat = rb.reshape(-1) if isinstance(rb, np.ndarray) else None
    virtual = req.virtual
    out = np.empty(flat.shape, x.dtype if virtual else code_dtype(n.bits))
    ws = Workspace()
    for lo in range(0, flat.size, CHUNK):
        sl = slice(lo, lo + CHUNK)
        x32 = _f32_piece(flat[None, :], slice(0, 1), sl, ws)[0]
        if virtual and rmode is RoundMode.EVEN and req.saturate:
            values = round_even_values(x32, n, ws)
            if values is not None:
                nan = np.isnan(x32)
                if nan.any():
                    nanv = np.copysign(_NAN32, x32) if req.rules.nan_keeps_sign else _NAN32
                    values = np.where(nan, nanv, values)
                out[sl] = values
                continue
        bits = (
            rflat[sl]
            if rflat is not None
            else (rb.flat(lo, x32.size) if isinstance(rb, _SeedBits) else None)
        )
        codes = encode_words(x32, n, rmode, bits, req.saturate, ws)
        if not virtual:
            out[sl] = codes
            continue
        values = decode(codes, n)
        if not n.has_nan:  # §4.2/§7: an input NaN stays NaN in the virtual result
            nan = np.isnan(x32)
            if nan.any():
                values = np.where(nan, np.copysign(_NAN32, x32), values)
        out[sl] = values.astype(x.dtype, copy=False)
    out = out.reshape(x.shape)
    if virtual:
        return out
    return build_result(req, out, OPS, "ref")


def _group(til: Tiling, cols: int) -> int:
    """Column pieces must hold whole sparsity groups (whole blocks for 2-D sparsity)."""
    if not til.sparse_m:
        return 1
    return til.sparse_m if len(til.dims) == 1 else cols


def _scaled(x, req: CastRequest, til: Tiling, rb):
    blocks = til.to_blocks(x)
    rows = blocks.reshape(-1, blocks.shape[-1])
    # Seeded bits are drawn per piece when block rows are runs of flat indices (tensor
    # scales, and tiles along the last dimension without padding); otherwise the whole
    # stream is drawn and laid out like the blocks.
    shape = tuple(x.shape)
    flat_rows = not til.dims or (til.dims == (len(shape) - 1,) and shape[-1] % til.sizes[0] == 0)
    if isinstance(rb, _SeedBits) and not flat_rows:
        rb = rb.full(shape)
    rrows = til.to_blocks(rb).reshape(rows.shape) if isinstance(rb, np.ndarray) else None
    seed_bits = rb if isinstance(rb, _SeedBits) else None
    ws = Workspace()
    plan = _plan(rows, req, til, ws)
    pops = _PieceOps(req.dtype, req.rules, ws)
    virtual = req.virtual
    out = np.empty(rows.shape, x.dtype if virtual else code_dtype(req.dtype.nspec.bits))
    mrule = meta_rule(req.dtype, req.rules, til, shape)
    meta = None if mrule is None else np.zeros((rows.shape[0], mrule.units.count), np.uint8)
    keep_meta = req.dtype.has_meta
    group = _group(til, rows.shape[1]) if mrule is None else mrule.units.group
    fast = virtual and req.roundmode is RoundMode.EVEN and mrule is None
    for rs, cs in _pieces(rows.shape[0], rows.shape[1], group):
        chunk = _f32_piece(rows, rs, cs, ws)
        if mrule is not None:
            if seed_bits is not None:
                start = rs.start * rows.shape[1] + cs.start
                bits = seed_bits.flat(start, chunk.size).reshape(chunk.shape)
            else:
                bits = None if rrows is None else rrows[rs, cs]
            out[rs, cs] = _meta_piece(chunk, plan, rs, cs, req, bits, pops, mrule, meta)
            continue
        if fast:
            v = _virtual_piece_fast(chunk, plan, rs, cs, req, pops)
            if v is not None:
                out[rs, cs] = v
                continue
        if seed_bits is not None:
            start = rs.start * rows.shape[1] + cs.start
            bits = seed_bits.flat(start, chunk.size).reshape(chunk.shape)
        else:
            bits = None if rrows is None else rrows[rs, cs]
        codes = _encode_piece(chunk, plan, rs, cs, req, bits, pops)
        if virtual:
            v = _decode_piece(codes, plan, rs, cs, req.rules, pops)
            out[rs, cs] = v.astype(x.dtype, copy=False)
        else:
            out[rs, cs] = codes
    full = til.from_blocks(out.reshape(blocks.shape))
    if virtual:
        return np.asarray(full, order="C")
    counts = til.scale_counts_shape
    zero = mask = tens = None
    if plan.zero is not None:
        zero = til.scales_from_blocks(plan.zero.reshape(counts))
    if plan.tenscale is not None:
        tens = np.array(plan.tenscale, dtype=np.uint32)
    if plan.keep is not None:
        mask = np.asarray(
            til.from_blocks(plan.keep.reshape(*counts, plan.keep.shape[-1])), order="C"
        )
    meta = mrule.units.meta_from_blocks(meta, til.meta_shape) if keep_meta else None
    return build_result(
        req,
        np.asarray(full, order="C"),
        OPS,
        "ref",
        scale=til.scales_from_blocks(plan.scale.reshape(counts)),
        zero=zero,
        tenscale=tens,
        mask=mask,
        meta=meta,
    )


def _meta_piece(chunk, plan, rs, cs, req, rbits, pops, rule: MetaRule, meta) -> np.ndarray:
    """Codes (actual, compress) or values (virtual) of a piece with metadata (§5.8, §5.9).

    Writes the piece's metadata codes into ``meta`` (rows x units), 0 in non-finite blocks.
    """
    xs = _scaled_inputs(chunk, plan, rs, req, pops)
    real = None if rule.real is None else rule.real[rs, cs]
    codes, q, m = encode_units(xs, rule, req.dtype.nspec, req.roundmode, rbits, real)
    nonfinite = plan.nonfinite[rs]
    if nonfinite.any():
        m[nonfinite] = 0
        codes = np.where(nonfinite[:, None], 0, codes)
    meta[rs, rule.units.unit_slice(cs)] = m
    if not req.virtual:
        return codes
    return _finish(_element_values(q, plan, rs, req.rules, pops), plan, rs, cs)


# ----------------------------------------------------------------- results
class _ResultOps:
    """The kit's array operations for CastResult assembly and unpacking (NumPy)."""

    def unsigned(self, codes, bits):
        a = np.asarray(codes).astype(code_dtype(bits), copy=False)
        return a if a.flags.c_contiguous else a.copy(order="C")

    def flatten(self, a):
        return np.asarray(a).reshape(-1)

    def select(self, flat, keep, count):
        return flat[keep]

    def pack_codes(self, codes, bits):
        return pack_codes(codes, bits)

    def pack_mask(self, mask):
        return pack_mask(mask)

    def unpack_codes(self, data, bits, count):
        return unpack_codes(data, bits, count).astype(code_dtype(bits), copy=False)

    def unpack_mask(self, data, count):
        return unpack_mask(data, count)

    def scatter(self, kept, keep, count):
        codes = np.zeros(count, kept.dtype)
        codes[keep] = kept
        return codes

    def reshape(self, a, shape):
        return np.asarray(a).reshape(shape)

    def count(self, keep):
        return int(np.count_nonzero(keep))

    def dtype_name(self, a):
        return a.dtype.name

    def code_max(self, a):
        return int(a.max()) if a.size else 0

    def last(self, a):
        return int(a[-1])

    def permute(self, a, order):
        return np.ascontiguousarray(np.transpose(a, order))

    def pad(self, a, shape):
        out = np.zeros(shape, a.dtype)
        out[tuple(slice(0, n) for n in a.shape)] = a
        return out

    def crop(self, a, shape):
        return np.ascontiguousarray(a[tuple(slice(0, n) for n in shape)])

    def native_view(self, a, name):
        """``a``'s codes viewed as the NumPy/ml_dtypes dtype ``name``, or None (tcast.native)."""
        return numpy_native_view(a, name)


#: The result operations of this engine.
OPS = _ResultOps()


def run_upcast(result: CastResult) -> np.ndarray:
    """Decode a checked actual or compress result to float32 (``RefEngine.run_upcast``)."""
    dt = result.dtype
    parts = upcast_parts(result, OPS)
    codes = parts.codes.astype(code_dtype(dt.nspec.bits), copy=False)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        if dt.sspec is None:
            return decode(codes, dt.nspec)
        return _upcast_scaled(result, cast_rules(dt), codes, parts.mask, parts.meta)


def _upcast_scaled(result, rules, codes, mask, meta=None):
    dt = result.dtype
    til = tiling(tuple(result.shape), dt, result.transpose_scale)
    snum = dt.sspec.scale
    scale = til.scales_to_blocks(np.asarray(result.scale)).reshape(-1).astype(np.uint32)
    nonfinite = scale == snum.nan_code
    inputs = {"scale": scale}
    ops = _Ops(dt, rules)
    if result.tenscale is not None:
        inputs["tenscale"] = np.asarray(result.tenscale).astype(np.uint32)
        nonfinite = nonfinite | bool(np.isnan(ops.decode(inputs["tenscale"], "tenscale")))
    if result.zero is not None:
        inputs["zero"] = til.scales_to_blocks(np.asarray(result.zero)).reshape(-1)
    out = run_recipe(rules.upcast, ops, rules.constants, **inputs)
    dec = np.broadcast_to(out["dec"], scale.shape)
    blocks = til.to_blocks(codes)
    rows = blocks.reshape(-1, blocks.shape[-1])
    keep = None if mask is None else til.to_blocks(np.asarray(mask, bool)).reshape(rows.shape)
    plan = _Plan(scale, None, None, nonfinite, dec, out.get("zval"), dec, keep)
    pops = _PieceOps(dt, rules, Workspace())
    vals = np.empty(rows.shape, np.float32)
    mrule = meta_rule(dt, rules, til, tuple(result.shape), padded_rows=False)
    if mrule is None:
        for rs, cs in _pieces(rows.shape[0], rows.shape[1], _group(til, rows.shape[1])):
            vals[rs, cs] = _decode_piece(rows[rs, cs], plan, rs, cs, rules, pops)
    else:
        units = mrule.units
        if meta is None:  # one mapping (a codebook with meta_bits 0)
            mrows = np.zeros((rows.shape[0], units.count), np.uint8)
        else:
            mrows = units.meta_to_blocks(meta, til.meta_shape)
        for rs, cs in _pieces(rows.shape[0], rows.shape[1], units.group):
            piece = rows[rs, cs]
            m = mrows[rs, units.unit_slice(cs)]
            q = decode_units(piece, m, mrule, dt.nspec)
            vals[rs, cs] = _finish(_element_values(q, plan, rs, rules, pops), plan, rs, cs)
    return np.asarray(til.from_blocks(vals.reshape(blocks.shape)), order="C")
