"""Packing of codes and masks for compress results (SEMANTICS.md §8)."""

from __future__ import annotations

import numpy as np

from tcast import SpecError

__all__ = ["pack_codes", "pack_mask", "unpack_codes", "unpack_mask"]

_PIECE = 1 << 16  # codes per piece of the bit-array paths (a multiple of 8)


def pack_codes(codes: np.ndarray, bits: int) -> np.ndarray:
    """Pack a flat array of codes (SEMANTICS.md §8).

    Widths up to 8 bits form a little-endian bit stream; wider codes take 2 or 4
    little-endian bytes each.

    Returns:
        uint8 array.
    """
    codes = np.asarray(codes).reshape(-1).astype(np.uint32)
    if not 1 <= bits <= 32:
        raise SpecError(f"code width {bits} is not in 1..32")
    if bits > 8:
        return codes.astype("<u2" if bits <= 16 else "<u4").view(np.uint8).copy()
    if bits == 8:
        return codes.astype(np.uint8)
    if bits == 4:
        c = codes.astype(np.uint8)
        if c.size % 2:
            c = np.append(c, np.uint8(0))
        return (c[0::2] | (c[1::2] << 4)).astype(np.uint8)
    if bits == 6:  # four codes in three bytes
        c = codes.astype(np.uint8)
        pad = (-c.size) % 4
        if pad:
            c = np.concatenate([c, np.zeros(pad, np.uint8)])
        c0, c1, c2, c3 = c[0::4], c[1::4], c[2::4], c[3::4]
        out = np.empty((c0.size, 3), np.uint8)
        out[:, 0] = c0 | (c1 << 6)
        out[:, 1] = (c1 >> 2) | (c2 << 4)
        out[:, 2] = (c2 >> 4) | (c3 << 2)
        return out.reshape(-1)[: (codes.size * 6 + 7) // 8]
    if 8 % bits == 0:  # 1, 2: whole codes per byte
        per = 8 // bits
        pad = (-codes.size) % per
        c = np.concatenate([codes, np.zeros(pad, np.uint32)]).reshape(-1, per)
        shifts = (np.arange(per, dtype=np.uint32) * bits)[None, :]
        return np.bitwise_or.reduce(c << shifts, axis=1).astype(np.uint8)
    # 3, 5, 7 bits: expand to a bit array, LSB first, and pack eight per byte; in pieces of
    # a multiple of 8 codes (a whole number of bytes) to bound the temporaries
    out = np.empty((codes.size * bits + 7) // 8, np.uint8)
    shifts = np.arange(bits, dtype=np.uint32)
    for lo in range(0, codes.size, _PIECE):
        part = codes[lo : lo + _PIECE]
        bitarr = ((part[:, None] >> shifts) & 1).astype(np.uint8)
        start = lo * bits // 8
        packed = np.packbits(bitarr.reshape(-1), bitorder="little")
        out[start : start + packed.size] = packed
    return out


def unpack_codes(data: np.ndarray, bits: int, count: int) -> np.ndarray:
    """Inverse of :func:`pack_codes`: ``count`` codes (uint8 up to 8 bits, else uint32).

    Raises:
        SpecError: if ``data`` is too short.
    """
    data = np.asarray(data, dtype=np.uint8).reshape(-1)
    if not 1 <= bits <= 32:
        raise SpecError(f"code width {bits} is not in 1..32")
    need = count * (2 if 8 < bits <= 16 else 4) if bits > 8 else (count * bits + 7) // 8
    if data.size < need:
        raise SpecError(f"{data.size} bytes hold fewer than {count} codes of {bits} bits")
    if bits > 8:
        return data[:need].view("<u2" if bits <= 16 else "<u4").astype(np.uint32)
    if bits == 8:
        return data[:count].copy()
    if bits == 4:
        out = np.empty(2 * need, np.uint8)
        np.bitwise_and(data[:need], np.uint8(0x0F), out=out[0::2])
        np.right_shift(data[:need], np.uint8(4), out=out[1::2])
        return out[:count]
    if bits == 2:
        out = np.empty(4 * need, np.uint8)
        for k in range(4):
            np.bitwise_and(data[:need] >> np.uint8(2 * k), np.uint8(3), out=out[k::4])
        return out[:count]
    # other widths: bits of whole pieces of 8 codes (whole bytes), LSB first
    out = np.empty(count, np.uint8)
    weights = (np.uint8(1) << np.arange(bits, dtype=np.uint8))[None, :]
    for lo in range(0, count, _PIECE):
        n = min(_PIECE, count - lo)
        start = lo * bits // 8
        raw = data[start : start + (n * bits + 7) // 8]
        bitarr = np.unpackbits(raw, bitorder="little")[: n * bits].reshape(n, bits)
        out[lo : lo + n] = (bitarr * weights).sum(axis=1, dtype=np.uint8)
    return out


def pack_mask(mask: np.ndarray) -> np.ndarray:
    """Eight keep-bits per byte, the first element in the lowest bit."""
    return np.packbits(np.asarray(mask, dtype=bool).reshape(-1), bitorder="little")


def unpack_mask(data: np.ndarray, count: int) -> np.ndarray:
    """Inverse of :func:`pack_mask`."""
    return np.unpackbits(np.asarray(data, np.uint8), bitorder="little")[:count].astype(bool)
