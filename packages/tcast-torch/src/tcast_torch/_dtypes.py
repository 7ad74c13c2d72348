"""torch's own low-precision dtypes for tcast codes, wherever the bits match (SEMANTICS.md §8).

``CastResult.data`` always holds unsigned codes (uint8/uint16/uint32), so every engine's
results compare alike; :func:`as_torch_dtype` reinterprets them as torch's float8 /
float4 / 16-bit dtypes for kernels that consume those (``torch._scaled_mm`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tcast import CastMode, CastResult, NumberSpec, SpecError, number

from ._bits import widen_codes

__all__ = ["TORCH_DTYPES", "TorchView", "as_torch_dtype", "torch_dtype"]

#: The torch dtype whose bit layout is each tcast number spec's code layout.
#: ``float4_e2m1fn_x2`` holds two e2m1f codes per byte, element 2i in the low nibble.
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
}


def torch_dtype(spec: NumberSpec | str) -> torch.dtype | None:
    """The torch dtype with ``spec``'s code layout, or None (e.g. e3m2f, int8 codes)."""
    return TORCH_DTYPES.get(number(spec))


@dataclass(frozen=True)
class TorchView:
    """A CastResult's codes as torch dtypes (None where torch has no matching dtype).

    Attributes:
        data: element codes (actual: the input's shape, except ``float4_e2m1fn_x2``, which
            packs pairs along the last dimension; compress: the packed 1-D stream).
        scale: scale codes in the scale shape.
        tenscale: the tensor-scale code (0-d).
    """

    data: torch.Tensor | None
    scale: torch.Tensor | None
    tenscale: torch.Tensor | None


def _view(t: torch.Tensor | None, spec: NumberSpec | None) -> torch.Tensor | None:
    if t is None or spec is None:
        return None
    dt = torch_dtype(spec)
    if dt is None or dt == torch.float4_e2m1fn_x2:
        return None
    return t.view(dt)


def as_torch_dtype(result: CastResult) -> TorchView:
    """Reinterpret an actual or compress result's codes as torch dtypes.

    8-bit and wider codes are views (no copy). Actual e2m1f codes are packed two per byte
    along the last dimension into ``torch.float4_e2m1fn_x2`` (a new tensor); compress e2m1f
    data already is that packing and is viewed.

    Raises:
        SpecError: for a virtual result, or actual e2m1f codes with an odd last dimension.
    """
    if not isinstance(result, CastResult) or result.castmode is CastMode.VIRTUAL:
        raise SpecError("as_torch_dtype takes the CastResult of an actual or compress cast")
    dt = result.dtype
    n = dt.nspec
    target = torch_dtype(n)
    data = None
    if target == torch.float4_e2m1fn_x2:
        if result.castmode is CastMode.COMPRESS:
            data = result.data.view(target)
        else:
            codes = widen_codes(result.data)
            if codes.dim() == 0 or codes.shape[-1] % 2:
                raise SpecError(
                    f"float4_e2m1fn_x2 packs pairs along the last dimension; shape "
                    f"{tuple(codes.shape)} has an odd (or no) last dimension"
                )
            pairs = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
            data = (pairs[..., 0] | (pairs[..., 1] << 4)).to(torch.uint8).view(target)
    elif target is not None:
        data = result.data.view(target)
    scale = _view(result.scale, dt.sspec.scale if dt.sspec is not None else None)
    tens = _view(result.tenscale, dt.tenscale)
    return TorchView(data, scale, tens)
