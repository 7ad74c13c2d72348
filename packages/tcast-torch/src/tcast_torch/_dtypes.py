"""torch's own dtypes for tcast codes, wherever the bits match (SEMANTICS.md §8).

``CastResult.data`` always holds unsigned codes (uint8/uint16/uint32), so every engine's
results compare alike; :func:`as_torch_dtype` reinterprets them as torch's float8, float4,
16- and 32-bit float and integer dtypes for kernels that consume those (``torch._scaled_mm``
...), and raises where torch has no dtype with a part's bit layout.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tcast import CastMode, CastResult, DataType, NumberSpec, SpecError, UnsupportedError, number

from ._bits import widen_codes
from ._engine import engine

__all__ = ["TORCH_DTYPES", "TorchView", "as_torch_dtype", "torch_dtype"]

#: The torch dtype whose bit layout is each tcast number spec's code layout.
#: ``float4_e2m1fn_x2`` holds two e2m1f codes per byte, element 2i in the low nibble. Integer
#: codes are two's complement, so ``int8`` codes viewed as ``torch.int8`` are the values. No
#: sub-byte integers: torch's ``int1``-``int7``/``uint1``-``uint7`` are shell dtypes without
#: operations or a defined layout in their byte.
TORCH_DTYPES: dict[NumberSpec, torch.dtype] = {
    number("float8_e4m3fn"): torch.float8_e4m3fn,
    number("float8_e5m2"): torch.float8_e5m2,
    number("float8_e4m3fnuz"): torch.float8_e4m3fnuz,
    number("float8_e5m2fnuz"): torch.float8_e5m2fnuz,
    number("float8_e8m0fnu"): torch.float8_e8m0fnu,
    number("float4_e2m1fn"): torch.float4_e2m1fn_x2,
    number("bfloat16"): torch.bfloat16,
    number("float16"): torch.float16,
    number("float32"): torch.float32,
    number("int8"): torch.int8,
    number("uint8"): torch.uint8,
    number("int16"): torch.int16,
    number("uint16"): torch.uint16,
    number("int32"): torch.int32,
    number("uint32"): torch.uint32,
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


def _view(t: torch.Tensor, target: torch.dtype, dt: DataType, part: str) -> torch.Tensor:
    """Codes of ``target``'s width viewed as ``target``."""
    if t.element_size() != target.itemsize:
        raise SpecError(
            f"as_torch_dtype: CastResult.{part} of {dt.name} holds {t.dtype} codes, not the "
            f"{8 * target.itemsize}-bit codes of {target}"
        )
    return t.view(target)


def _view_stream(t: torch.Tensor, target: torch.dtype, dt: DataType) -> torch.Tensor:
    """A compress stream of whole-byte codes (little-endian, SEMANTICS.md §8) as ``target``."""
    if t.dtype != torch.uint8 or t.dim() != 1 or t.numel() % target.itemsize:
        raise SpecError(
            f"as_torch_dtype: compress data of {dt.name} must be a 1-D uint8 stream of whole "
            f"{8 * target.itemsize}-bit codes, got {t.dtype} of shape {tuple(t.shape)}"
        )
    return t.view(target)


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
    engine.check_result(result)  # the checks of upcast: a view of a valid result only
    dt = result.dtype
    specs = {
        "data": dt.nspec,
        "scale": None if dt.sspec is None else dt.sspec.scale,
        "zero": dt.zero,
        "tenscale": dt.tenscale,
    }
    views: dict[str, torch.Tensor | None] = {}
    for part, spec in specs.items():
        t = getattr(result, part)
        if t is None or spec is None:
            views[part] = None
            continue
        target = _target(dt, part, spec)
        if part == "data" and result.castmode is CastMode.COMPRESS:
            views[part] = _view_stream(t, target, dt)  # e2m1f: the packing of float4_x2
        elif target == torch.float4_e2m1fn_x2:
            views[part] = _pack_e2m1(t, dt)
        else:
            views[part] = _view(t, target, dt, part)
    return TorchView(views["data"], views["scale"], views["tenscale"], views["zero"])
