"""torch's own dtypes for tcast codes, wherever the bits match (SEMANTICS.md §8).

``CastResult.data`` always holds unsigned codes (uint8/uint16/uint32), so every engine's
results compare alike. Which dtype has a format's bits is tcast's rule
(:func:`tcast.kit.native_name`, by name); :data:`TORCH_NATIVE` maps those names to torch's
dtype objects, and the engine's result operations view codes through it
(:func:`tcast.native`). :func:`as_torch_dtype` is the strict form for kernels that consume
those dtypes (``torch._scaled_mm`` ...): it packs actual e2m1f codes into
``float4_e2m1fn_x2`` and raises where torch has no dtype with a part's bit layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

import tcast
from tcast import CastMode, CastResult, DataType, NumberSpec, SpecError, UnsupportedError, number

from ._bits import widen_codes

__all__ = [
    "TORCH_DTYPES",
    "TORCH_NATIVE",
    "TorchView",
    "as_torch_dtype",
    "torch_dtype",
    "torch_native_view",
]

#: torch's dtype of each name :func:`tcast.kit.native_name` gives. ``float4_e2m1fn_x2``
#: holds two e2m1f codes per byte, element 2i in the low nibble (the compress stream of
#: e2m1f codes). Integer codes are two's complement, so ``int8`` codes viewed as
#: ``torch.int8`` are the values. No sub-byte integers: torch's ``int1``-``int7`` and
#: ``uint1``-``uint7`` are shell dtypes without operations or a defined layout in their byte.
TORCH_NATIVE: dict[str, torch.dtype] = {
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "float8_e4m3fnuz": torch.float8_e4m3fnuz,
    "float8_e5m2fnuz": torch.float8_e5m2fnuz,
    "float8_e8m0fnu": torch.float8_e8m0fnu,
    "float4_e2m1fn_x2": torch.float4_e2m1fn_x2,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int16": torch.int16,
    "uint16": torch.uint16,
    "int32": torch.int32,
    "uint32": torch.uint32,
}

_UNPACKED = {packed: one for one, packed in tcast.kit.PACKED_NAMES.items()}

#: The torch dtype whose bit layout is each tcast number spec's code layout
#: (``float4_e2m1fn_x2`` for e2m1f: two codes per byte).
TORCH_DTYPES: dict[NumberSpec, torch.dtype] = {
    number(_UNPACKED.get(name, name)): dtype for name, dtype in TORCH_NATIVE.items()
}


def torch_dtype(spec: NumberSpec | str) -> torch.dtype | None:
    """The torch dtype with ``spec``'s code layout, or None (e.g. e3m2f, int4 codes)."""
    return TORCH_DTYPES.get(number(spec))


@dataclass(frozen=True)
class TorchView:
    """A CastResult's codes as torch dtypes (None only for a part the result does not have).

    Attributes:
        data: element codes (actual: the input's shape, except ``float4_e2m1fn_x2``, which
            packs pairs along the last dimension; compress: the packed 1-D stream).
        scale: scale codes in the scale shape.
        tenscale: the tensor-scale code (0-d).
        zero: zero-point codes in the scale shape.
    """

    data: torch.Tensor
    scale: torch.Tensor | None
    tenscale: torch.Tensor | None
    zero: torch.Tensor | None = None


def _target(dt: DataType, part: str, spec: NumberSpec) -> torch.dtype:
    """The torch dtype of a part's codes; raises where torch has none."""
    target = torch_dtype(spec)
    if target is None:
        have = ", ".join(sorted({str(d).removeprefix("torch.") for d in TORCH_DTYPES.values()}))
        raise UnsupportedError(
            f"as_torch_dtype: {dt.name} has {part} codes of {spec.code}, and torch has no "
            f"dtype with their bits (torch dtypes of tcast codes: {have}); use the unsigned "
            f"codes of CastResult.{part}"
        )
    return target


def _pack_e2m1(codes: torch.Tensor, dt: DataType) -> torch.Tensor:
    """Actual e2m1f codes packed in pairs along the last dimension (a new tensor)."""
    codes = widen_codes(codes)
    if codes.dim() == 0 or codes.shape[-1] % 2:
        raise SpecError(
            f"as_torch_dtype: float4_e2m1fn_x2 packs pairs along the last dimension; the "
            f"{dt.name} codes of shape {tuple(codes.shape)} have an odd (or no) last dimension"
        )
    pairs = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    return (pairs[..., 0] | (pairs[..., 1] << 4)).to(torch.uint8).view(torch.float4_e2m1fn_x2)


def as_torch_dtype(result: CastResult) -> TorchView:
    """Reinterpret an actual or compress result's codes as torch dtypes.

    Every part the result has is viewed (no copy) as the torch dtype of the same bits
    (``TORCH_DTYPES``): float8, 16- and 32-bit floats, 8-, 16- and 32-bit integers. Actual
    e2m1f codes are packed two per byte along the last dimension into
    ``torch.float4_e2m1fn_x2`` (a new tensor); compress e2m1f data already is that packing and
    is viewed, as is compress data of 8-, 16- and 32-bit codes (the packed stream is their
    little-endian bytes).

    Raises:
        SpecError: for a virtual result or anything but a CastResult of torch tensors, parts
            whose element size is not their codes', or actual e2m1f codes with an odd last
            dimension.
        UnsupportedError: naming the datatype, where torch has no dtype with the bits of a
            part's codes (e3m2f, int4, e5m0 scales ...), or for parts ``tcast_torch`` refuses
            (DTensors ...).
    """
    if not isinstance(result, CastResult) or result.castmode is CastMode.VIRTUAL:
        raise SpecError("as_torch_dtype takes the CastResult of an actual or compress cast")
    # the checks of upcast and the views of tcast.native: a view of a valid result only
    native = tcast.native(result, engine="torch")
    dt = result.dtype
    views = {p: getattr(native, p) for p in ("data", "scale", "zero", "tenscale")}
    for part in native.codes_kept:
        spec = dt.nspec if part == "data" else _scale_spec(dt, part)
        target = _target(dt, part, spec)  # raises where torch has no dtype
        if part != "data" or target != torch.float4_e2m1fn_x2:
            raise UnsupportedError(f"as_torch_dtype: {dt.name}: {native.notes[part]}")
        views[part] = _pack_e2m1(result.data, dt)  # actual e2m1f: one code per byte
    return TorchView(views["data"], views["scale"], views["tenscale"], views["zero"])


def _scale_spec(dt: DataType, part: str) -> NumberSpec:
    return dt.sspec.scale if part == "scale" else getattr(dt, part)


def torch_native_view(a: torch.Tensor, name: str) -> torch.Tensor | None:
    """``a``'s codes viewed as torch's dtype ``name`` (:data:`TORCH_NATIVE`), or None.

    Codes of the dtype's width are viewed as they are; a contiguous 1-D uint8 stream of
    wider codes (a compress result's data, little-endian) becomes one element per code.
    None where torch has no dtype of that name or the bytes do not fill whole codes.
    """
    target = TORCH_NATIVE.get(name)
    if target is None:
        return None
    if a.element_size() == target.itemsize:
        return a.view(target)
    if a.dtype != torch.uint8 or a.dim() != 1 or a.numel() % target.itemsize:
        return None
    return a.contiguous().view(target)
