"""Packing of codes and masks for compress results (SEMANTICS.md §8), in torch.

One rule for every width up to 8 bits: eight codes of ``w`` bits form ``w`` bytes of a
little-endian bit stream (code ``i`` in stream bits ``[w*i, w*i + w)``), built as one 64-bit
word per eight codes. 4-bit codes (the common FP4/INT4 case) take a shorter path with the
same bytes. Wider codes are 2 or 4 little-endian bytes each.
"""

from __future__ import annotations

import torch

from tcast import SpecError

from . import _pieces

__all__ = ["pack_codes", "pack_mask", "unpack_codes", "unpack_mask"]


def _check_bits(bits: int) -> None:
    if not 1 <= bits <= 32:
        raise SpecError(f"code width {bits} is not in 1..32")


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack codes (int32 patterns or unsigned, any shape: C order) into a 1-D uint8 tensor.

    Large CPU tensors are packed in pieces of whole bytes (``_pieces``): the same bytes,
    with piece-sized temporaries.

    Raises:
        SpecError: if ``bits`` is not in 1..32.
    """
    _check_bits(bits)
    c = codes.reshape(-1)
    n = c.numel()
    # a multiple of 8 codes: every piece but the last packs to whole bytes
    step = max(8, _pieces.piece_elements(n) & ~7)
    if n <= step or c.device.type != "cpu" or torch.compiler.is_compiling():
        return _pack(c, bits)
    out = torch.empty(_packed_bytes(n, bits), dtype=torch.uint8)
    for lo in range(0, n, step):
        piece = _pack(c[lo : lo + step], bits)
        at = _packed_bytes(lo, bits)
        out[at : at + piece.numel()] = piece
    return out


def _packed_bytes(count: int, bits: int) -> int:
    """Bytes of ``count`` packed codes of ``bits`` bits."""
    if bits > 8:
        return count * (2 if bits <= 16 else 4)
    return (count * bits + 7) // 8


def _pack(c: torch.Tensor, bits: int) -> torch.Tensor:
    """:func:`pack_codes` of 1-D codes, in one go."""
    if c.dtype != torch.int32:
        c = c.to(torch.int32)
    n = c.numel()
    if bits > 8:
        nb = 2 if bits <= 16 else 4
        parts = [(c >> (8 * j)) & 0xFF for j in range(nb)]
        return torch.stack(parts, -1).reshape(-1).to(torch.uint8)
    if bits == 8:
        return c.to(torch.uint8)
    if bits == 4:
        if n % 2:
            c = torch.cat([c, c.new_zeros(1)])
        pairs = c.reshape(-1, 2)
        return (pairs[:, 0] | (pairs[:, 1] << 4)).to(torch.uint8)
    pad = (-n) % 8
    if pad:
        c = torch.cat([c, c.new_zeros(pad)])
    eights = c.to(torch.int64).reshape(-1, 8)
    word = eights[:, 0]
    for i in range(1, 8):
        word = word | (eights[:, i] << (bits * i))  # at most 56 bits
    out = torch.stack([(word >> (8 * j)) & 0xFF for j in range(bits)], -1).reshape(-1)
    return out[: (n * bits + 7) // 8].to(torch.uint8)


def unpack_codes(data: torch.Tensor, bits: int, count: int) -> torch.Tensor:
    """Inverse of :func:`pack_codes`: ``count`` codes as int32 patterns.

    Raises:
        SpecError: if ``bits`` is not in 1..32 or ``data`` is too short.
    """
    _check_bits(bits)
    d = data.reshape(-1)
    need = count * (2 if bits <= 16 else 4) if bits > 8 else (count * bits + 7) // 8
    if d.numel() < need:
        raise SpecError(f"{d.numel()} bytes hold fewer than {count} codes of {bits} bits")
    d = d[:need].to(torch.int32)
    if bits > 8:
        nb = 2 if bits <= 16 else 4
        b = d.reshape(-1, nb)
        out = b[:, 0]
        for j in range(1, nb):
            out = out | (b[:, j] << (8 * j))
        return out
    if bits == 8:
        return d
    if bits == 4:
        return torch.stack([d & 0xF, d >> 4], -1).reshape(-1)[:count]
    pad = (-d.numel()) % bits
    if pad:
        d = torch.cat([d, d.new_zeros(pad)])
    b = d.to(torch.int64).reshape(-1, bits)
    word = b[:, 0]
    for j in range(1, bits):
        word = word | (b[:, j] << (8 * j))
    mask = (1 << bits) - 1
    out = torch.stack([(word >> (bits * i)) & mask for i in range(8)], -1).reshape(-1)
    return out[:count].to(torch.int32)


def pack_mask(mask: torch.Tensor) -> torch.Tensor:
    """Eight keep-bits per byte, the first element in the lowest bit."""
    # the bools go as they are: each piece widens its own (an int32 copy of a whole mask is
    # four times its size)
    return pack_codes(mask.reshape(-1), 1)


def unpack_mask(data: torch.Tensor, count: int) -> torch.Tensor:
    """Inverse of :func:`pack_mask`."""
    return unpack_codes(data, 1, count) != 0
