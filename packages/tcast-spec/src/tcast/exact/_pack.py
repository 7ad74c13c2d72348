"""Exact packing of codes and masks for compress casts (SEMANTICS.md §8)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import SpecError

__all__ = ["pack_codes", "pack_mask", "storage_bytes", "unpack_codes", "unpack_mask"]


def storage_bytes(bits: int) -> int:
    """Bytes per code for codes wider than 8 bits (2 for 9..16 bits, 4 for 17..32).

    Raises:
        SpecError: for widths outside 9..32.
    """
    if not 8 < bits <= 32:
        raise SpecError(f"storage_bytes is for codes of 9..32 bits, not {bits}")
    return 2 if bits <= 16 else 4


def pack_codes(codes: Sequence[int], bits: int) -> bytes:
    """Pack codes into bytes.

    Codes of at most 8 bits form one little-endian bit stream: code ``i`` occupies
    stream bits ``[bits*i, bits*i + bits)`` and stream bit ``j`` is bit ``j % 8`` of
    byte ``j // 8`` (so 4-bit code ``2i`` is the low nibble of byte ``i``); unused
    high bits of the last byte are 0. Wider codes take 2 or 4 little-endian bytes each.

    Raises:
        SpecError: if ``bits`` is not in 1..32 or a code does not fit.
    """
    if not 1 <= bits <= 32:
        raise SpecError(f"code width {bits} is not in 1..32")
    limit = 1 << bits
    for c in codes:
        if not 0 <= c < limit:
            raise SpecError(f"code {c} does not fit in {bits} bits")
    if bits > 8:
        width = storage_bytes(bits)
        return b"".join(c.to_bytes(width, "little") for c in codes)
    stream = 0
    for i, c in enumerate(codes):
        stream |= c << (bits * i)
    return stream.to_bytes((bits * len(codes) + 7) // 8, "little")


def unpack_codes(data: bytes, bits: int, count: int) -> list[int]:
    """Inverse of :func:`pack_codes` for ``count`` codes.

    Raises:
        SpecError: if ``data`` is too short for ``count`` codes.
    """
    if not 1 <= bits <= 32:
        raise SpecError(f"code width {bits} is not in 1..32")
    if bits > 8:
        width = storage_bytes(bits)
        if len(data) < width * count:
            raise SpecError(f"{len(data)} bytes hold fewer than {count} codes of {bits} bits")
        return [int.from_bytes(data[i * width : (i + 1) * width], "little") for i in range(count)]
    if len(data) * 8 < bits * count:
        raise SpecError(f"{len(data)} bytes hold fewer than {count} codes of {bits} bits")
    stream = int.from_bytes(data, "little")
    mask = (1 << bits) - 1
    return [(stream >> (bits * i)) & mask for i in range(count)]


def pack_mask(mask: Sequence[bool]) -> bytes:
    """Pack a keep-mask eight per byte, the first element in the lowest bit (1 = kept)."""
    return pack_codes([1 if m else 0 for m in mask], 1)


def unpack_mask(data: bytes, count: int) -> list[bool]:
    """Inverse of :func:`pack_mask`."""
    return [bool(b) for b in unpack_codes(data, 1, count)]
