"""The torch cast and upcast (SEMANTICS.md §4-§8), structured like tcast_ref's.

A scaled cast views the tensor as a matrix of blocks (``_tiles``), reduces every block to
its scale (``_scale.make_plan``), then encodes and decodes every element with its block's
scale in int32 bit operations (``_codec``). The whole path is tensor operations branching
in Python only on shapes, dtypes and the datatype, so it runs on any device and traces
into one graph.
"""

from __future__ import annotations

import torch

from tcast import CastResult, RoundMode, SpecError
from tcast.kit import CastRequest, CastRules, build_result, cast_rules, run_recipe, upcast_parts

from ._bits import NAN_BITS, SIGN, nan_like_bits, to_bits, to_f32, unsigned_codes, widen_codes
from ._codec import decode, encode_words, round_even_applies, round_even_values
from ._dtypes import torch_native_view
from ._fast import fast_scaled
from ._pack import pack_codes, pack_mask, unpack_codes, unpack_mask
from ._philox import philox_gather, philox_stream, rbits_words
from ._pieces import BlockRows, by_blocks, cuts, piece_elements
from ._scale import Given, Ops, Plan, make_plan
from ._tiles import Tiling, from_layout, tiling

__all__ = [
    "INPUT_DTYPES",
    "OPS",
    "TorchResultOps",
    "cast_checked",
    "check_rbits",
    "run_upcast",
    "scaled_inputs",
    "to_input_dtype",
]

#: Accepted input dtypes by name (SEMANTICS.md §9).
INPUT_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
#: Canonical quiet NaN bits of the 16-bit input dtypes (SEMANTICS.md §2).
_NAN16 = {torch.float16: 0x7E00, torch.bfloat16: 0x7FC0}


def to_input_dtype(v: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """float32 values rounded to the input dtype (RNE, overflow to Inf), NaN canonical (§7).

    torch's own conversion keeps neither the sign nor the payload of NaN in every case (the
    CPU gives 0xFFFF for any NaN into bfloat16), so NaN bits are set here.
    """
    if dtype == torch.float32:
        return v
    out = v.to(dtype).view(torch.int16)
    canon = _NAN16[dtype]
    nan_bits = torch.where(to_bits(v) < 0, canon - 0x10000 + 0x8000, canon).to(torch.int16)
    return torch.where(torch.isnan(v), nan_bits, out).view(dtype)


# ----------------------------------------------------------------- arguments
#: The dtypes of explicit random bits, by width (SEMANTICS.md §3.3): unsigned, or the signed
#: type of the same width read as the same bits.
RBITS_DTYPES = {8: (torch.uint8, torch.int8), 16: (torch.uint16, torch.int16)}


def check_rbits(x: torch.Tensor, rbits: object, width: int) -> torch.Tensor:
    """Explicit random bits: a ``width``-bit integer tensor of x's shape and device.

    Returns:
        The bits as a torch.uint8 (``width`` 8) or int16 (16) view: the request keeps them
        so (an op of a compiled cast checks them again); a cast reads them as the codec's
        words (:func:`_philox.rbits_words`).

    Raises:
        SpecError: for anything else, naming the dtype the datatype needs.
    """
    ok = RBITS_DTYPES[width]
    if not isinstance(rbits, torch.Tensor) or rbits.dtype not in ok:
        got = f"{type(rbits).__name__} {getattr(rbits, 'dtype', '')}".rstrip()
        raise SpecError(
            f"rbits must be a {ok[0]} (or {ok[1]}) tensor: {width} random bits per element "
            f"for this datatype (SEMANTICS.md §3.3), got {got}"
        )
    if tuple(rbits.shape) != tuple(x.shape):
        raise SpecError(
            f"rbits has shape {tuple(rbits.shape)}, the input has shape {tuple(x.shape)}"
        )
    if rbits.device != x.device:
        raise SpecError(f"rbits is on {rbits.device}, the input on {x.device}")
    return rbits.view(torch.uint8 if width == 8 else torch.int16)


def seed_source(req: CastRequest) -> tuple[int, int, int]:
    """``(seed, width, stream)`` of a seeded request: what its Philox bits depend on."""
    return req.seed, req.dtype.nspec.rbits_width, req.modes.stream


def random_source_bits(req: CastRequest, x: torch.Tensor) -> torch.Tensor | None:
    """int32 codec words in x's (logical) shape: explicit, or Philox by flat C-order index."""
    if req.roundmode is not RoundMode.STOCHASTIC:
        return None
    if req.seed is None:
        return rbits_words(req.rbits, req.dtype.nspec.rbits_width)
    seed, width, stream = seed_source(req)
    return philox_stream(seed, 0, x.numel(), x.device, width, stream).reshape(x.shape)


# ----------------------------------------------------------------- the cast
def cast_checked(
    x: torch.Tensor, req: CastRequest, fast: bool, given: Given | None = None
) -> torch.Tensor | CastResult:
    """The eager cast of a checked request.

    ``fast`` is the caller's decision (:func:`tcast_torch._fast.fast_path_applies`); the
    tests pass False to compare the two paths. ``given``: the block statistics to use
    instead of reducing x's blocks (a shard's window, ``_local``); with ``fast``, only a
    given tensor amax (``given.hi`` None).
    """
    if req.layout is None:
        return _unscaled(x, req, random_source_bits(req, x))
    til = from_layout(req.layout)
    if fast:
        out = fast_scaled(x, req, til, None if given is None else given.tamax)
        if isinstance(out, torch.Tensor):
            return out
        codes, scale, tcode = out
        return build_result(req, codes, OPS, "torch", scale=scale, tenscale=tcode)
    # seeded bits made piece by piece where the stage is cut into pieces (eager CPU casts):
    # a full-size int32 stream would be the largest temporary of the cast
    seeded = req.roundmode is RoundMode.STOCHASTIC and req.seed is not None
    rb = None if seeded and cuts(x) else random_source_bits(req, x)
    return _scaled(x, req, til, rb, given)


def _seeded_rows(req: CastRequest, til: Tiling, rows: BlockRows, s: slice) -> torch.Tensor:
    """The seeded codec words (int32) of the block rows ``s``, by their elements' flat index."""
    seed, width, stream = seed_source(req)
    lo, hi, _ = s.indices(rows.shape[0])
    length = rows.shape[1]
    if til.rows_are_runs():
        bits = philox_stream(seed, lo * length, (hi - lo) * length, rows.device, width, stream)
        return bits.reshape(hi - lo, length)
    return philox_gather(seed, til.row_flat_index(lo, hi, rows.device), width, stream)


def _f32_keeping_nan_sign(x: torch.Tensor) -> torch.Tensor:
    """X as float32; NaN keeps its sign (CUDA converts a 16-bit NaN to +0x7FFFFFFF)."""
    x32 = x.to(torch.float32)
    if x.dtype == torch.float32:
        return x32
    neg_nan = torch.isnan(x32) & (x.view(torch.int16) < 0)
    return to_f32(torch.where(neg_nan, to_bits(x32) | SIGN, to_bits(x32)))


def _unscaled(x: torch.Tensor, req: CastRequest, rb: torch.Tensor | None):
    n = req.dtype.nspec
    x32 = _f32_keeping_nan_sign(x)  # the sign of an input NaN reaches the code (§4.2)
    virtual = req.virtual
    if virtual and req.roundmode is RoundMode.EVEN and req.saturate and round_even_applies(n):
        values = round_even_values(x32, n)
        nan_bits = nan_like_bits(to_bits(x32) < 0) if req.rules.nan_keeps_sign else NAN_BITS
        values = to_f32(torch.where(torch.isnan(x32), nan_bits, to_bits(values)))
        return to_input_dtype(values, x.dtype).contiguous()
    codes = encode_words(x32, n, req.roundmode, rb, req.saturate)
    if not virtual:
        return build_result(req, codes, OPS, "torch")
    values = decode(codes, n)
    if not n.has_nan:  # §4.2/§7: an input NaN stays NaN in the virtual result
        nan_bits = nan_like_bits(to_bits(x32) < 0)
        values = to_f32(torch.where(torch.isnan(x32), nan_bits, to_bits(values)))
    return to_input_dtype(values, x.dtype).contiguous()


def scaled_inputs(rows: torch.Tensor, plan: Plan, rules: CastRules) -> torch.Tensor:
    """The kit's element encode recipe: fl32(x * r) [+ zero point] [* 2**(K-2)]."""
    enc = rules.encode
    return run_recipe(enc, _ELEMENT_OPS, rules.constants, x=rows, **plan.columns(enc.inputs))["xs"]


def _element_values(q: torch.Tensor, plan: Plan, rules: CastRules) -> torch.Tensor:
    """The kit's element decode recipe: decoded codes ``q`` to float32 values."""
    dec = rules.decode
    return run_recipe(dec, _ELEMENT_OPS, rules.constants, q=q, **plan.columns(dec.inputs))["v"]


def _finish(v: torch.Tensor, plan: Plan, q: torch.Tensor | None = None) -> torch.Tensor:
    """NaN bits, NaN throughout non-finite blocks, +0 where pruned (SEMANTICS.md §5.2, §6, §8).

    A NaN value gets the bits §8 fixes: the element's own NaN where ``q`` (decoded codes that
    can be NaN codes) is one, else +0x7FC00000. torch's NaN bits follow the device
    (0x7FFFFFFF on CUDA, the x86 default 0xFFC00000 for 0 * Inf on the CPU); upcasts of codes
    a cast does not produce meet such NaNs, and so does a cast whose two-level multiplier
    ``fl32(t * s)`` overflowed (zero elements times Inf).
    """
    nonfinite = plan.nonfinite[:, None]
    bad = nonfinite | torch.isnan(v)
    if q is None:
        b = torch.where(bad, NAN_BITS, to_bits(v))
    else:
        own = torch.where(torch.isnan(q) & ~nonfinite, to_bits(q), NAN_BITS)
        b = torch.where(bad, own, to_bits(v))
    if plan.keep is not None:
        b = torch.where(plan.keep | nonfinite, b, 0)
    return to_f32(b)


def _virtual_fast(
    rows: BlockRows, plan: Plan, rules: CastRules, dtype: torch.dtype
) -> torch.Tensor | None:
    """Round-to-nearest-even virtual values (``dtype``) without forming codes, or None.

    Same bits as decoding the codes (checked by the tests over every combination). The
    values are in the input's layout (:func:`by_blocks`).
    """
    n = rules.dtype.nspec
    if n.is_integer and n.bits > 24:
        return None
    if not n.is_integer and not round_even_applies(n):
        return None

    def stage(s: slice) -> torch.Tensor:
        p = plan.rows(s)
        xs = scaled_inputs(rows[s], p, rules)
        if n.is_integer:
            lo, hi = rules.int_limits
            v = _element_values(torch.clamp(torch.round(xs), float(lo), float(hi)), p, rules)
            v = torch.where(v == 0, 0.0, v)  # integers have no -0
        else:
            v = _element_values(round_even_values(xs, n), p, rules)
        # a finite block's rounded values are never NaN
        return to_input_dtype(_finish(v, p), dtype)

    return by_blocks(rows, stage)


def _decode_rows(codes: torch.Tensor, plan: Plan, rules: CastRules) -> torch.Tensor:
    """Decoded float32 values of block rows (the virtual result before the input dtype)."""
    q = decode(codes, rules.dtype.nspec)
    return _finish(_element_values(q, plan, rules), plan, q)


def _scaled(
    x: torch.Tensor,
    req: CastRequest,
    til: Tiling,
    rb: torch.Tensor | None,
    given: Given | None = None,
):
    # block rows made piece by piece from boxes of x where they are not a view of it (2-D
    # and column tiles on the CPU): a whole copy would be as large as the input
    rows = BlockRows(x, til, torch.float32)
    plan = make_plan(rows, req, til, given=given)
    virtual = req.virtual
    rules = req.rules
    full = None
    if virtual and req.roundmode is RoundMode.EVEN:
        full = _virtual_fast(rows, plan, rules, x.dtype)
    if full is None:
        rrows = None if rb is None else BlockRows(rb, til)
        # no bits given for a seeded stochastic cast: each piece makes its own
        seeded = rb is None and req.roundmode is RoundMode.STOCHASTIC
        n = req.dtype.nspec

        def stage(s: slice) -> torch.Tensor:
            p = plan.rows(s)
            rr = None if rrows is None else rrows[s]
            if seeded:
                rr = _seeded_rows(req, til, rows, s)
            codes = encode_words(scaled_inputs(rows[s], p, rules), n, req.roundmode, rr, True)
            zero_out = p.nonfinite[:, None]
            if p.keep is not None:
                zero_out = zero_out | ~p.keep
            codes = torch.where(zero_out, 0, codes)
            if virtual:
                return to_input_dtype(_decode_rows(codes, p, rules), x.dtype)
            # codes of up to 8 bits narrowed to their stored uint8 piece by piece (the result
            # operations take uint8 codes as they are; wider ones stay int32 patterns)
            return unsigned_codes(codes, n.bits) if n.bits <= 8 else codes

        full = by_blocks(rows, stage)
    if virtual:
        return full.contiguous()
    counts = til.scale_counts_shape
    zero = mask = None
    if plan.zero is not None:
        zero = til.scales_from_blocks(plan.zero.reshape(counts))
    if plan.keep is not None:
        mask = til.from_blocks(plan.keep.reshape(*counts, plan.keep.shape[-1])).contiguous()
    return build_result(
        req,
        full,
        OPS,
        "torch",
        scale=til.scales_from_blocks(plan.scale.reshape(counts)),
        zero=zero,
        tenscale=plan.tenscale,
        mask=mask,
    )


class _ElementOps:
    """The element recipes' steps: float32 tensor arithmetic (one rounding each)."""

    def mul(self, a, b):
        return a * b

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b


_ELEMENT_OPS = _ElementOps()


# ----------------------------------------------------------------- results
def _select_in_pieces(flat: torch.Tensor, keep: torch.Tensor, count: int) -> torch.Tensor:
    """``flat[keep]`` (``count`` codes, C order) made over pieces of the elements."""
    out = flat.new_empty(count)
    step = piece_elements(flat.numel())
    at = 0
    for lo in range(0, flat.numel(), step):
        kept = flat[lo : lo + step][keep[lo : lo + step]]
        out[at : at + kept.numel()] = kept
        at += kept.numel()
    return out


class TorchResultOps:
    """The kit's array operations for CastResult assembly and unpacking (torch)."""

    def unsigned(self, codes, bits):
        if codes.dtype in (torch.uint8, torch.uint16, torch.uint32):  # the fast path's
            return codes.contiguous()
        return unsigned_codes(codes.contiguous(), bits)

    def flatten(self, a):
        return a.reshape(-1)

    def select(self, flat, keep, count):
        if cuts(flat):
            # eager CPU: a boolean index keeps the codes in C order without the int32
            # positions below (four int32 temporaries of the input's size), piece by piece:
            # it makes the int64 positions of what it keeps
            return _select_in_pieces(flat, keep, count)
        # the kept codes in C order; pruned codes go to a scratch slot past the end
        pos = torch.cumsum(keep.to(torch.int32), 0) - 1
        idx = torch.where(keep, pos, count)
        out = flat.new_zeros(count + 1)
        return out.scatter_(0, idx, flat)[:count]

    def pack_codes(self, codes, bits):
        return pack_codes(codes, bits)

    def pack_mask(self, mask):
        return pack_mask(mask)

    def unpack_codes(self, data, bits, count):
        return unpack_codes(data, bits, count)

    def unpack_mask(self, data, count):
        return unpack_mask(data, count)

    def scatter(self, kept, keep, count):
        codes = torch.zeros(count, dtype=torch.int32, device=kept.device)
        return codes.masked_scatter(keep, kept)

    def reshape(self, a, shape):
        return a.reshape(shape)

    def count(self, keep):
        return int(keep.sum())

    def dtype_name(self, a):
        return str(a.dtype).removeprefix("torch.")

    def code_max(self, a):
        if a.numel() == 0:
            return 0
        # torch has no max of uint16/uint32 (2.13): widen the bit patterns, unsigned
        wide = {torch.uint16: (torch.int16, torch.int32), torch.uint32: (torch.int32, torch.int64)}
        if a.dtype in wide:
            signed, bigger = wide[a.dtype]
            a = a.view(signed).to(bigger) & ((1 << (8 * a.element_size())) - 1)
        return int(a.max())  # uint8, or the int32 codes of unpack_codes

    def last(self, a):
        return int(a[-1])

    def permute(self, a, order):
        return a.permute(order).contiguous()

    def pad(self, a, shape):
        out = a.new_zeros(shape)
        out[tuple(slice(0, n) for n in a.shape)] = a
        return out

    def crop(self, a, shape):
        return a[tuple(slice(0, n) for n in shape)].contiguous()

    def native_view(self, a, name):
        """``a``'s codes viewed as torch's dtype ``name``, or None (``tcast.native``)."""
        return torch_native_view(a, name)


#: The result operations of this engine.
OPS = TorchResultOps()


# ----------------------------------------------------------------- upcast
def run_upcast(result: CastResult) -> torch.Tensor:
    """Decode a checked actual or compress result to float32 (``TorchEngine.run_upcast``)."""
    dt = result.dtype
    with torch.no_grad():
        parts = upcast_parts(result, OPS)
        codes = widen_codes(parts.codes)
        if dt.sspec is None:
            return decode(codes, dt.nspec)
        return _upcast_scaled(result, cast_rules(dt), codes, parts.mask)


def _upcast_scaled(result: CastResult, rules: CastRules, codes, mask) -> torch.Tensor:
    dt = result.dtype
    til = tiling(tuple(result.shape), dt, result.transpose_scale)
    snum = dt.sspec.scale
    scale = widen_codes(til.scales_to_blocks(result.scale)).reshape(-1)
    nonfinite = scale == snum.nan_code
    inputs = {"scale": scale}
    ops = Ops(rules)
    if result.tenscale is not None:
        inputs["tenscale"] = widen_codes(result.tenscale).reshape(1)
        nonfinite = nonfinite | torch.isnan(ops.decode(inputs["tenscale"], "tenscale"))
    if result.zero is not None:
        inputs["zero"] = widen_codes(til.scales_to_blocks(result.zero)).reshape(-1)
    out = run_recipe(rules.upcast, ops, rules.constants, **inputs)
    blocks = til.to_blocks(codes)
    rows = blocks.reshape(-1, blocks.shape[-1])
    keep = None if mask is None else til.to_blocks(mask.to(torch.bool)).reshape(rows.shape)
    plan = Plan(scale, None, None, nonfinite, out["dec"], out.get("zval"), out["dec"], keep)
    v = _decode_rows(rows, plan, rules)
    return til.from_blocks(v.reshape(blocks.shape)).contiguous()
