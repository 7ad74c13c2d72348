"""Element codes of datatypes with metadata: subtile offsets (§5.8) and codebooks (§5.9).

The scaled cast (``_cast``) computes a piece's scaled inputs ``x'`` as for any datatype; here
they are viewed as units (``_subtiles``), each unit gets its metadata code (an exponent
offset, or a mapping index), and the elements their codes and their values in the scaled
domain ``q`` (the decode recipe of the datatype turns ``q`` into the element value):

* offsets: code = encode(fl32(x' * 2**d)), q = decode(code) * 2**-d;
* codebooks: code = the chosen mapping's index, q = that mapping's entry.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from tcast import CodebookSpec, DataType, NumberSpec, RoundMode
from tcast.kit import CastRules

from ._codebook import Book, book, choose_mapping
from ._codec import decode, encode_words
from ._offsets import pow2, subtile_offsets
from ._subtiles import Units
from ._tiles import Tiling

__all__ = ["MetaRule", "decode_units", "encode_units", "meta_rule"]


def _floor_log2(v: Fraction) -> int:
    e = v.numerator.bit_length() - v.denominator.bit_length()
    return e - 1 if Fraction(2) ** e > v else e


@dataclass(frozen=True)
class MetaRule:
    """How one cast forms its metadata.

    Attributes:
        units: the unit geometry.
        offset_bits: the offset width (0 for codebooks).
        emax: offsets: floor_log2 of the element maximum in the scaled domain (for intK
            under a power-of-two scale, after the fixed-point factor: K - 2).
        book: codebooks: the tables as arrays, else None.
        real: codebooks whose padding could add error: where the block rows hold real
            elements, (rows, block length); else None.
    """

    units: Units
    offset_bits: int
    emax: int
    book: Book | None
    real: np.ndarray | None = None


def meta_rule(
    dtype: DataType, rules: CastRules, til: Tiling, shape: tuple[int, ...], padded_rows: bool = True
) -> MetaRule | None:
    """The metadata rule of a scaled datatype, or None when it has none.

    ``padded_rows``: build ``real`` (an array of the input's size, bool) when needed.
    """
    n, s = dtype.nspec, dtype.sspec
    bits = s.offset_bits
    if not n.is_codebook and not bits:
        return None
    units = Units(til, til.sub_sizes)
    if n.is_codebook:
        b = book(n)
        real = None
        if padded_rows and not b.zero_safe and til.padded:
            real = til.to_blocks(np.ones(shape, bool))
            real = real.reshape(-1, real.shape[-1])
        return MetaRule(units, 0, 0, b, real)
    emax = _floor_log2(Fraction(rules.elem_max))
    if rules.fixed:
        emax += rules.fixed.bit_length() - 1
    return MetaRule(units, bits, emax, None)


def encode_units(
    xs: np.ndarray,
    rule: MetaRule,
    n: NumberSpec | CodebookSpec,
    mode: RoundMode,
    rbits: np.ndarray | None,
    real: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes, scaled-domain values and metadata of a piece of block rows.

    Args:
        xs: float32 scaled inputs of a piece, (R, C): whole block rows, or for 1-D units a
            run of whole units of one row.
        rule: the metadata rule.
        n: the element number spec (or codebook spec).
        mode: the round mode.
        rbits: the random words of ``xs``'s shape (``_codec.encode_words``), else None.
        real: where ``xs`` holds real elements (codebooks whose padding adds error).

    Returns:
        ``(codes, q, meta)``: element codes (R, C), float32 values before the decode
        multiplier (R, C), and uint8 metadata codes (R, units).
    """
    units = rule.units
    cols = xs.shape[1]
    xu = units.to_units(xs)
    if rule.book is not None:
        if real is None and not rule.book.zero_safe:
            real = np.ones(xs.shape, bool)  # the units' own padding (a channel's overhang)
        ru = None if real is None else units.to_units(real, pad=False)
        codes, q, meta = choose_mapping(xu, rule.book, mode, ru)
        return units.from_units(codes, cols), units.from_units(q, cols), meta
    meta = subtile_offsets(xu, rule.emax, rule.offset_bits)
    up = pow2(meta)[..., None]
    bu = None if rbits is None else units.to_units(rbits)
    codes = encode_words(np.multiply(xu, up, dtype=np.float32), n, mode, bu, True)
    q = np.multiply(decode(codes, n), pow2(meta, -1)[..., None], dtype=np.float32)
    return units.from_units(codes, cols), units.from_units(q, cols), meta


def decode_units(
    codes: np.ndarray, meta: np.ndarray, rule: MetaRule, n: NumberSpec | CodebookSpec
) -> np.ndarray:
    """Scaled-domain values of stored codes (R, C) with their units' metadata (R, units)."""
    cols = codes.shape[1]
    per = rule.units.per_element(meta, cols)
    if rule.book is not None:
        return rule.book.values[per.astype(np.intp), codes.astype(np.intp)]
    return np.multiply(decode(codes, n), pow2(per, -1), dtype=np.float32)
