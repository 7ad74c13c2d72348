"""The self-description of a set in ``header.json``: formats, policies, modes."""

from __future__ import annotations

from typing import Any

from tcast import CastMode, DataType, NumberSpec, RoundMode, ScaleMode, exact
from tcast.cli import format_value

__all__ = ["codebook_description", "datatype_description", "number_description", "policies"]

_STYLES = {
    "ieee": "IEEE 754: Inf = exponent all-ones and mantissa 0, NaN = exponent all-ones and "
    "mantissa != 0; has -0",
    "fn": "no Inf; NaN = the all-ones magnitude (both signs); has -0",
    "fnuz": "no Inf, no -0; the -0 code (sign bit only) is the single NaN",
    "uz": "IEEE P3109: Inf = the all-ones magnitudes; NaN = the -0 code; no -0",
    "finite": "finite-only (suffix f): no Inf, no NaN, every code is a number; has -0",
}


def codebook_description(n: Any) -> dict:
    """Every fact of a codebook element format, its tables included.

    Each mapping's entries are listed in code (index) order three ways: as codes of the
    compute format, as float32 bit patterns (what a decoder multiplies by the scale) and as
    exact text, so a testbench needs nothing but the header.
    """
    half = 1 << (n.bits - 1)
    tables = []
    for m, table in enumerate(n.tables):
        tables.append(
            {
                "mapping": m,
                "compute_codes": [f"0x{exact.encode(v, n.compute):X}" for v in table],
                "float32": [f"0x{exact.bits32(v):08X}" for v in table],
                "values": [format_value(v) for v in table],
            }
        )
    return {
        "code": n.code,
        "kind": "codebook",
        "bits": n.bits,
        "index_bits": n.index_bits,
        "meta_bits": n.meta_bits,
        "mappings": n.mappings,
        "description": n.desc,
        "label": n.label,
        "symmetric": n.symmetric,
        "layout": (
            f"code c = s * {half} + k: s the sign (the top bit), k in 0..{half - 1}; k = 0 is "
            "zero (+0 for s = 0, -0 for s = 1), k >= 1 the k-th positive entry of the mapping "
            "in ascending order; value (-1)^s * v_k (SEMANTICS.md 5.9)"
            if n.symmetric
            else "code = index into the mapping's table; entries strictly ascending "
            "(SEMANTICS.md 5.9)"
        ),
        "max": format_value(float(n.max_value)),
        "emax": n.emax,
        "compute": number_description(n.compute),
        "tables": tables,
    }


def number_description(n: NumberSpec) -> dict:
    """Every field of a number format, values as exact text."""
    if n.is_codebook:
        return codebook_description(n)
    out = {
        "code": n.code,
        "kind": n.kind.value,
        "bits": n.bits,
        "ebits": n.ebits,
        "mbits": n.mbits,
        "bias": n.bias,
    }
    if n.is_float:
        out.update(
            {
                "style": n.style.value,
                "style_meaning": _STYLES[n.style.value],
                "max": format_value(float(n.max_value)),
                "smallest_normal": format_value(n.smallest_normal),
                "smallest_subnormal": format_value(n.smallest_subnormal),
                "nan_code": None if n.nan_code is None else f"0x{n.nan_code:X}",
                "inf_code": None if n.inf_code is None else f"0x{n.inf_code:X}",
                "sign_bit": f"0x{n.sign_bit:X}",
            }
        )
    elif n.is_exponent:
        out.update(
            {
                "value": "2^(code - bias)",
                "nan_code": f"0x{n.nan_code:X}",
                "max": format_value(float(n.max_value)),
            }
        )
    else:
        out.update(
            {
                "encoding": "two's complement, symmetric" if n.is_int else "unsigned",
                "min": n.minint,
                "max": n.maxint,
            }
        )
    return out


def _tile_description(t: Any, subtiles: bool) -> dict:
    out = {
        "code": t.code,
        "size": t.size,
        "channel": t.is_channel,
        "dim": t.dim,
        "sparse_n": t.sparse_n,
        "sparse_m": t.sparse_m,
    }
    if subtiles:  # only where the datatype has them: other sets' headers stay as they were
        out["subtile"] = t.subtile
        out["offset_bits"] = t.offset
    return out


def _meta_description(dt: DataType) -> dict:
    """The metadata of a datatype with subtile offsets or codebook mappings."""
    ss = dt.sspec
    sizes = list(ss.subtile_sizes) if ss.tiles else []
    if dt.nspec.is_codebook:
        kind, meaning = (
            "mapping",
            "the index of the codebook mapping (table) chosen for the subtile: the one of "
            "least squared error, ties to the lowest index (SEMANTICS.md 5.9)",
        )
    else:
        kind, meaning = (
            "offset",
            "the subtile's exponent offset d in 0..2^B - 1: its elements encode "
            "fl32(x' * 2^d) and decode fl32(fl32(dec(code) * 2^-d) * X) (SEMANTICS.md 5.8)",
        )
    return {
        "format": kind,
        "bits": dt.meta_bits,
        "subtile_sizes": sizes,
        "subtile_sizes_rule": "per tile segment: the subtile's extent (0: the whole tile)",
        "meaning": meaning,
    }


def datatype_description(dt: DataType) -> dict:
    """The datatype: element format, scale formats and tiles."""
    ss = dt.sspec
    out = {
        "name": dt.name or dt.code,
        "code": dt.code,
        "element": number_description(dt.nspec),
        "scale": None if ss is None else number_description(ss.scale),
        "zero_point": None if dt.zero is None else number_description(dt.zero),
        "tensor_scale": None if dt.tenscale is None else number_description(dt.tenscale),
        "tiles": None if ss is None else [_tile_description(t, ss.has_subtile) for t in ss.tiles],
    }
    if dt.meta_bits:
        out["meta"] = _meta_description(dt)
    return out


def policies(
    dt: DataType, roundmode: RoundMode, scalemode: ScaleMode, saturate: bool, castmode: CastMode
) -> dict:
    """Every implementation-defined rule of SEMANTICS.md that this set depends on, by name."""
    n, ss = dt.nspec, dt.sspec
    k = None if n.is_codebook else n.rbits_width
    p = {
        "rounding": {
            RoundMode.EVEN: "to nearest, ties to the even code (also for formats without "
            "mantissa bits: the parity of the code) (3.2)",
            RoundMode.AWAY: "to nearest, ties away from zero (3.2)",
            RoundMode.ZERO: "to nearest, ties toward zero (3.2)",
            RoundMode.TRUNC: "toward zero (3.2)",
            RoundMode.STOCHASTIC: f"up iff floor(frac * 2^{k}) + r >= 2^{k} for the "
            f"element's {k}-bit random integer r (RBITS column) (3.2)",
        }[roundmode],
        "sign_magnitude": "the magnitude is rounded and the sign reapplied (3)",
        "negative_zero": "a zero result keeps the input's sign where the format has -0; "
        "fnuz and uz give +0 (4.2)",
        "input_conversion": "inputs are converted to float32 exactly first (9)",
    }
    if ss is None:
        p["overflow"] = (
            "saturate: overflowing results and +-Inf inputs give +-max (4.1)"
            if saturate
            else "IEEE: an overflowing result gives +-Inf, else NaN, else +-max; trunc never "
            "overflows a finite input (4.1)"
        )
        p["nan_input"] = (
            "the format's NaN code (sign kept for IEEE/fn styles, canonical "
            "payload); finite-only formats give code 0 (+0) (4.2)"
        )
    else:
        p["block_amax"] = "largest |x| over the block's kept elements, in float32 (5.2)"
        p["nonfinite_block"] = (
            "a NaN or Inf among a block's kept elements: scale = the scale format's NaN code, "
            "element codes 0, every element decodes to NaN (pruned ones included) (5.2)"
        )
        p["element_saturation"] = "elements always saturate to +-M in scaled casts (5.2)"
        if ss.scale.is_exponent:
            p["exponent_scale"] = (
                "e = floor_log2(amax) - emax(M) + bump(scale mode); code = clamp(e + bias, 0, "
                "maxcode); an all-zero block has code 0; elements are x * 2^-e exactly (5.3)"
            )
            p["scale_mode"] = {
                ScaleMode.FLOOR: "floor: no bump (OCP MX)",
                ScaleMode.CEIL: "ceil: bump when amax is not a power of two",
                ScaleMode.MIDMAX: "midmax: bump when amax's significand exceeds (tau+2)/2",
                ScaleMode.OPTION3: "option3: bump when amax rounded to the element precision "
                "(ties to even) reaches the next power of two",
                ScaleMode.TOPBINADE: "topbinade (= rceil): bump when amax's significand "
                "exceeds tau = M / 2^emax",
            }[scalemode] + " (5.3)"
        else:
            p["float_scale"] = (
                "s = RNE_S(clamp(fl32(amax / M), smallest_normal_S, max_S)); elements encode "
                "fl32(x * fl32(1 / s)); decode fl32(element * s) (5.5)"
            )
        if n.is_int and ss.scale.is_exponent:
            p["int_fixed_point"] = (
                f"int data under a power-of-two scale is fixed point with {n.bits - 2} fraction "
                f"bits: M = {n.maxint}/2^{n.bits - 2} (5.4)"
            )
        if dt.is_multiscale:
            p["two_level"] = (
                "t = RNE_T(clamp(fl32(tensor_amax / fl32(M_S * M)), smallest_normal_T, max_T)); "
                "s = RNE_S(clamp(fl32(fl32(amax / M) / t), smallest_normal_S, max_S)); "
                "r = min(fl32(fl32(1 / t) / s), FLT_MAX); element encode(fl32(x * r)); "
                "value fl32(dec(code) * fl32(t * s)); the tensor is lines_per_tensor "
                "consecutive lines (5.6; torchao nvfp4_quantize numerics)"
            )
        if ss.offset_bits:
            p["subtile_offset"] = (
                "per subtile: x' = the element's scaled input fl32(x * multiplier) as above; "
                "a = max |x'| over the subtile; d = 2^B - 1 if a = 0, else clamp(emax - "
                "floor_log2(a), 0, 2^B - 1) (emax: the element format's under this scale); code "
                "= encode(fl32(x' * 2^d)) with the round mode, saturating to +-M; value = "
                "fl32(fl32(dec(code) * 2^-d) * X); a non-finite block has every offset 0 (5.8)"
            )
        if n.is_codebook:
            p["codebook_scale"] = (
                "the scale rules above with the element format's M = the codebook's largest "
                "|entry|, emax = floor_log2(M), precision = the compute format's (5.9)"
            )
            p["codebook_rounding"] = (
                "the scaled input t = fl32(x * multiplier) rounds to the mapping's table by "
                "exact comparison: "
                + (
                    "|t| among 0 = v_0 < v_1 < ... < v_P, the sign of t reapplied (-0 and "
                    "negatives rounding to 0 give the -0 code); ties: even = the even k, away "
                    "= the larger magnitude, zero = the smaller; trunc = the largest v_k <= "
                    "|t|; above v_P: v_P"
                    if n.symmetric
                    else "the nearest entry on the signed line; ties: even = the even index, "
                    "away = the larger magnitude, zero = the smaller; trunc = the neighbour "
                    "nearer zero; beyond the first or last entry: that entry"
                )
                + " (5.9)"
            )
            p["codebook_mapping"] = (
                "per subtile (per block without subtiles), for each mapping j in index order: "
                "E_j = sum over the subtile's elements in C order of fl32(fl32(q - t)^2), "
                "accumulated acc = fl32(acc + term) from +0; the chosen mapping is the first "
                "j with E_j < every earlier E (ties: the lowest index); codes index the chosen "
                "mapping's table, META holds its index; value = fl32(table[m][code] * X); a "
                "non-finite block has META 0 (5.9)"
            )
        if dt.zero is not None:
            p["zero_point"] = (
                "lo = min(lo, 0), hi = max(hi, 0); float scale s = RNE_S(clamp(fl32(fl32(hi - lo)"
                " / maxint), ...)), exponent scale the smallest 2^e with fl32(hi - lo) <= "
                "maxint * 2^e; r = fl32(1 / s); z = encode(fl32(fl32(0 - lo) * r), Z); code = "
                "clamp(round(fl32(fl32(x * r) + dec(z))), 0, maxint); value = "
                "fl32(fl32(fl32(code) - dec(z)) * s) (5.7)"
            )
        if ss.is_sparse:
            p["sparsity"] = (
                "keep the N largest magnitudes of every M consecutive elements along the sparse "
                "dimension (NaN > Inf > finite; ties: lower index kept); pruned elements have "
                "code 0 and are not in the packed stream (6)"
            )
    if castmode is CastMode.VIRTUAL:
        p["virtual"] = (
            "the decoded value rounded to the input dtype, round-to-nearest-even, "
            "IEEE overflow to +-Inf (7)"
        )
    if castmode is CastMode.COMPRESS:
        p["packing"] = (
            "packed.bin holds the kept codes in line order: codes of 1 to 8 bits form one "
            "little-endian bit stream (code i of width w in stream bits [w*i, w*i+w), stream "
            "bit j = bit j mod 8 of byte j/8: 4-bit element 2i in the low nibble of byte i, "
            "2-bit four per byte from the low bits, 3-, 5-, 6- and 7-bit codes across byte "
            "boundaries); 9..16-bit codes 2 bytes little-endian, 17..32-bit 4 bytes; unused "
            "high bits 0; masks 8 per byte, first element in the lowest bit, 1 = kept (8)"
        )
        if dt.meta_bits:
            p["packing"] += (
                "; packed_meta.bin: the META words of every line in line order (absent "
                f"subtiles' 0 included), {dt.meta_bits} bits each, in the same bit stream"
            )
    return p
