"""float32 bit patterns as int32 tensors: the arithmetic every rule is written in.

torch has no unsigned 32-bit arithmetic, so a uint32 pattern lives in an int32
tensor (two's complement) and Python constants above 2**31 - 1 are written
through :func:`s32`. Every helper here is elementwise and free of data-dependent
Python branches, so the cast path stays one graph under ``torch.compile``.
"""

from __future__ import annotations

import torch

__all__ = [
    "F32_MAX_BITS",
    "NAN_BITS",
    "SIGN",
    "clamp_finite",
    "floor_log2_small",
    "nan_like_bits",
    "pick",
    "pow2",
    "s32",
    "shl1",
    "split_f32",
    "to_bits",
    "to_f32",
    "unsigned_codes",
    "widen_codes",
]

#: int32 of the float32 sign bit (0x80000000).
SIGN = -(1 << 31)
#: The canonical quiet NaN of float32 (0x7FC00000).
NAN_BITS = 0x7FC00000
#: The bits of the largest finite float32.
F32_MAX_BITS = 0x7F7FFFFF

_UNSIGNED = {8: torch.uint8, 16: torch.uint16, 32: torch.uint32}
_SIGNED = {16: torch.int16, 32: torch.int32}


def s32(v: int) -> int:
    """An unsigned 32-bit pattern as the signed int an int32 tensor holds."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def to_bits(x: torch.Tensor) -> torch.Tensor:
    """The int32 bit patterns of a float32 tensor (a view)."""
    return x.view(torch.int32)


def to_f32(b: torch.Tensor) -> torch.Tensor:
    """float32 values of int32 bit patterns (a view)."""
    return b.view(torch.float32)


def pick(cond: torch.Tensor, a: int, b: int) -> torch.Tensor:
    """int32 ``a`` where ``cond`` else ``b`` (torch.where of two Python ints gives int64)."""
    return torch.where(cond, torch.full((), a, dtype=torch.int32, device=cond.device), b)


def nan_like_bits(neg: torch.Tensor | None) -> torch.Tensor | int:
    """Canonical float32 NaN bits, negative where ``neg`` (positive everywhere when None)."""
    if neg is None:
        return NAN_BITS
    return pick(neg, s32(0xFFC00000), NAN_BITS)


def floor_log2_small(s: torch.Tensor) -> torch.Tensor:
    """floor(log2 s) of int32 values 0 < s < 2**24, exactly (from the float32 exponent field).

    The conversion to float32 is exact below 2**24, so the exponent field is the answer.
    """
    return (to_bits(s.to(torch.float32)) >> 23) - 127


def split_f32(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Split float32 values into (bits, negative, magnitude bits, exponent field, S, q).

    ``|x| = S * 2**q`` with the integer significand ``S < 2**24`` (hidden bit included for
    normals) and ``q = max(field, 1) - 150``.
    """
    b = to_bits(x)
    neg = b < 0
    mag = b & 0x7FFFFFFF
    e32 = mag >> 23
    m32 = mag & 0x7FFFFF
    s = torch.where(e32 > 0, m32 | 0x800000, m32)
    q = torch.clamp_min(e32, 1) - 150
    return b, neg, mag, e32, s, q


def shl1(k: torch.Tensor) -> torch.Tensor:
    """2**k as an integer tensor of k's dtype (``1 << tensor`` would promote to int64)."""
    return torch.ones_like(k) << k


def pow2(k: torch.Tensor) -> torch.Tensor:
    """2**k as float32 for int32 k in [-149, 127], built from the bits (exact, no exp2)."""
    normal = (torch.clamp(k, -126, 127) + 127) << 23
    sub = shl1(torch.clamp(k + 149, 0, 22))
    return to_f32(torch.where(k >= -126, normal, sub))


def clamp_finite(x: torch.Tensor, hi: float) -> torch.Tensor:
    """``torch.clamp(x, -hi, hi)``, NaN kept, in the form each mode runs fastest.

    Eagerly one clamp kernel. Under ``torch.compile`` two compare-and-selects: Inductor
    lowers a clamp to a NaN-propagating max and min of four instructions each, which shows in
    the time of a cast bound by memory. The results are the same for every input (NaN fails
    both comparisons and stays NaN).
    """
    if torch.compiler.is_compiling():
        return torch.where(x > hi, hi, torch.where(x < -hi, -hi, x))
    return torch.clamp(x, -hi, hi)


def unsigned_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """int32 codes of a ``bits``-bit format as torch.uint8/uint16/uint32 (SEMANTICS.md §8)."""
    if bits <= 8:
        return codes.to(torch.uint8)
    if bits <= 16:
        # sign-extend bit 15 so that the int16 conversion is exact, then reinterpret
        return ((codes << 16) >> 16).to(torch.int16).view(torch.uint16)
    return codes.to(torch.int32).view(torch.uint32)


def widen_codes(codes: torch.Tensor) -> torch.Tensor:
    """Unsigned (or signed) integer codes of up to 32 bits as int32 bit patterns."""
    dt = codes.dtype
    if dt in (torch.uint16, torch.int16):
        return codes.view(torch.int16).to(torch.int32) & 0xFFFF
    if dt in (torch.uint32, torch.int32):
        return codes.view(torch.int32)
    if dt == torch.uint64 or dt == torch.int64:
        v = codes.view(torch.int64) & 0xFFFFFFFF
        return torch.where(v >= 1 << 31, v - (1 << 32), v).to(torch.int32)
    return codes.to(torch.int32)
