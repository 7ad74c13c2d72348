"""Packing of compress codes and sparsity masks in Triton (SEMANTICS.md §8), and its inverse.

The byte layout is ``tcast_torch.pack_codes``'s (tested byte for byte): codes of ``w <= 8`` bits
form a little-endian bit stream, code ``i`` in stream bits ``[w*i, w*i + w)``; eight codes
are exactly ``w`` bytes, so a program packs ``G`` groups of eight codes as a ``[G, 8]``
block: one 64-bit word per group (the sum of the shifted codes, which never overlap, is
their OR), then its low ``w`` bytes. Unpacking reads the ``w`` bytes of a group back into
the word and shifts the eight codes out. The unused high bits of the last byte are 0
because the missing codes of the last group load as 0. Codes of 9..16 bits are 2
little-endian bytes and of 17..32 bits 4: on little-endian hardware (x86, Arm, every CUDA
GPU) that is the memory of a uint16 / uint32 array, so those widths are byte views and
need no kernel. Masks are 1-bit codes.

:data:`OPS` is the engine's :class:`~tcast.kit.ArrayOps`: ``tcast_torch``'s operations with
packing and unpacking by these kernels for the tensors the kernels can read (CUDA tensors;
CPU tensors under ``TRITON_INTERPRET=1``), ``tcast_torch.pack_codes`` and its kin for any
other tensor.
"""

from __future__ import annotations

import sys
from typing import Any

import torch
import triton
import triton.language as tl

import tcast_torch
from tcast import SpecError
from tcast_torch.toolkit import TorchResultOps

from ._env import INTERPRETING, quiet_numpy
from ._fastlaunch import Launch

__all__ = [
    "OPS",
    "TritonResultOps",
    "kernel_device",
    "pack_codes",
    "pack_mask",
    "unpack_codes",
    "unpack_mask",
]

#: Groups of eight codes per program (a [GROUPS, 8] block: 8192 codes).
GROUPS = 1024
# byte views of wide codes assume little-endian memory (true of every CUDA host and GPU)
_LITTLE = sys.byteorder == "little"


def kernel_device(t: torch.Tensor) -> bool:
    """Whether the Triton kernels can read ``t``: CUDA, or CPU while interpreting."""
    return t.device.type == "cuda" or (INTERPRETING and t.device.type == "cpu")


def _i64(n: int) -> bool:
    """Whether code or byte offsets (at most 4 bytes per code) may pass int32."""
    return 4 * n >= 2**31 - 65536


@triton.jit
def _pack_kernel(
    codes_ptr, out_ptr, n, nbytes, W: tl.constexpr, G: tl.constexpr, I64: tl.constexpr
):
    """Pack ``n`` codes of ``W <= 8`` bits: program ``p`` writes groups ``[p*G, p*G + G)``."""
    if I64:
        p = tl.program_id(0).to(tl.int64)
    else:
        p = tl.program_id(0)
    g = p * G + tl.arange(0, G)
    k = tl.arange(0, 8)
    idx = g[:, None] * 8 + k[None, :]
    c = tl.load(codes_ptr + idx, mask=idx < n, other=0).to(tl.int64) & ((1 << W) - 1)
    word = tl.sum(c << (k[None, :] * W).to(tl.int64), axis=1)  # disjoint bits: sum == OR
    byte = (word[:, None] >> (k[None, :] * 8).to(tl.int64)) & 0xFF
    pos = g[:, None] * W + k[None, :]
    tl.store(out_ptr + pos, byte.to(tl.uint8), mask=(k[None, :] < W) & (pos < nbytes))


@triton.jit
def _unpack_kernel(
    data_ptr, out_ptr, n, nbytes, W: tl.constexpr, G: tl.constexpr, I64: tl.constexpr
):
    """Unpack ``n`` codes of ``W <= 8`` bits as int32 (the inverse of :func:`_pack_kernel`)."""
    if I64:
        p = tl.program_id(0).to(tl.int64)
    else:
        p = tl.program_id(0)
    g = p * G + tl.arange(0, G)
    k = tl.arange(0, 8)
    pos = g[:, None] * W + k[None, :]
    b = tl.load(data_ptr + pos, mask=(k[None, :] < W) & (pos < nbytes), other=0)
    word = tl.sum(b.to(tl.int64) << (k[None, :] * 8).to(tl.int64), axis=1)
    c = (word[:, None] >> (k[None, :] * W).to(tl.int64)) & ((1 << W) - 1)
    idx = g[:, None] * 8 + k[None, :]
    tl.store(out_ptr + idx, c.to(tl.int32), mask=idx < n)


def _launch(kernel: Any, bits: int, i64: bool) -> Launch:
    """``kernel`` with the compile-time arguments of ``bits``-bit codes, as a ``Launch``.

    ``_fastlaunch.Launch`` launches with little host work: a compress cast packs its codes
    on each call.
    """
    key = (kernel, bits, i64)
    hit = _LAUNCHES.get(key)
    if hit is None:
        hit = _LAUNCHES[key] = Launch(kernel, {"W": bits, "G": GROUPS, "I64": i64})
    return hit


#: :func:`_launch`'s launch objects (a few: code widths 1..8, int32 or int64 offsets).
_LAUNCHES: dict[tuple, Launch] = {}


def _check_bits(bits: int) -> None:
    if not 1 <= bits <= 32:
        raise SpecError(f"code width {bits} is not in 1..32")


def packed_bytes(bits: int, count: int) -> int:
    """Bytes of ``count`` packed codes of ``bits`` (SEMANTICS.md §8)."""
    if bits > 8:
        return count * (2 if bits <= 16 else 4)
    return (count * bits + 7) // 8


def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack codes (any integer dtype holding the unsigned patterns, C order) into uint8.

    Raises:
        SpecError: if ``bits`` is not in 1..32.
    """
    _check_bits(bits)
    if not (_LITTLE and kernel_device(codes)):
        return tcast_torch.pack_codes(codes, bits)
    c = codes.reshape(-1)
    n = c.numel()
    if n == 0:
        return torch.empty(0, dtype=torch.uint8, device=c.device)
    if bits > 8:
        nb = 2 if bits <= 16 else 4
        if c.element_size() != nb:  # e.g. the int32 codes of tcast_torch's slow path
            c = c.to(torch.int32).contiguous().view(torch.uint8).reshape(n, 4)[:, :nb]
            return c.reshape(-1).contiguous()
        return c.contiguous().view(torch.uint8)
    if bits == 8 and c.dtype == torch.uint8:
        return c.contiguous()
    if c.dtype not in (torch.uint8, torch.int32):
        c = c.to(torch.int32)
    c = c.contiguous()
    nbytes = packed_bytes(bits, n)
    out = torch.empty(nbytes, dtype=torch.uint8, device=c.device)
    if n:
        grid = (triton.cdiv(triton.cdiv(n, 8), GROUPS),)
        with quiet_numpy():
            _launch(_pack_kernel, bits, _i64(n))(grid, c, out, n, nbytes)
    return out


def unpack_codes(data: torch.Tensor, bits: int, count: int) -> torch.Tensor:
    """``count`` codes (int32 patterns) from a packed stream: the inverse of :func:`pack_codes`.

    Raises:
        SpecError: if ``bits`` is not in 1..32 or ``data`` holds too few bytes.
    """
    _check_bits(bits)
    if not (_LITTLE and kernel_device(data)):
        return tcast_torch.unpack_codes(data, bits, count)
    d = data.reshape(-1)
    need = packed_bytes(bits, count)
    if d.numel() < need:
        raise SpecError(f"{d.numel()} bytes hold fewer than {count} codes of {bits} bits")
    d = d[:need]
    if d.dtype != torch.uint8:
        d = d.to(torch.uint8)
    if bits > 8:
        wide = torch.int16 if bits <= 16 else torch.int32
        if d.storage_offset() % (2 if bits <= 16 else 4) or not d.is_contiguous():
            d = d.clone()  # a view of wider elements must start aligned
        v = d.view(wide)
        return v.to(torch.int32) & 0xFFFF if bits <= 16 else v
    if bits == 8:
        return d.to(torch.int32)
    d = d.contiguous()
    out = torch.empty(count, dtype=torch.int32, device=d.device)
    if count:
        grid = (triton.cdiv(triton.cdiv(count, 8), GROUPS),)
        with quiet_numpy():
            _launch(_unpack_kernel, bits, _i64(count))(grid, d, out, count, need)
    return out


def pack_mask(mask: torch.Tensor) -> torch.Tensor:
    """Eight keep-bits per byte, the first element in the lowest bit."""
    if not kernel_device(mask):
        return tcast_torch.pack_mask(mask)
    m = mask.reshape(-1)
    return pack_codes(m.view(torch.uint8) if m.dtype == torch.bool else m.to(torch.uint8), 1)


def unpack_mask(data: torch.Tensor, count: int) -> torch.Tensor:
    """``count`` keep-flags (bool) from packed bits: the inverse of :func:`pack_mask`.

    Raises:
        SpecError: if ``data`` holds fewer than ``count`` bits.
    """
    return unpack_codes(data, 1, count) != 0


class TritonResultOps(TorchResultOps):
    """The kit's array operations of the Triton engine: ``tcast_torch``'s, packing by kernels."""

    def pack_codes(self, codes, bits):
        return pack_codes(codes, bits)

    def pack_mask(self, mask):
        return pack_mask(mask)

    def unpack_codes(self, data, bits, count):
        return unpack_codes(data, bits, count)

    def unpack_mask(self, data, count):
        return unpack_mask(data, count)


#: The result operations of this engine (``build_result``, ``check_result``, ``upcast_parts``).
OPS = TritonResultOps()
