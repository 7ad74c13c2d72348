"""tcast.native on torch results: codes viewed as torch's dtypes of the same bits.

The proof that the name mapping is right is torch's own conversion: every code of every
format torch has a dtype for, read by torch (``.to(torch.float32)``), equals tcast's upcast
of it, bit for bit.
"""

from __future__ import annotations

import dataclasses
import math
import struct

import pytest
import torch

import tcast
import tcast_torch

#: Codes with a torch twin, and the dtype (written out here, not read from the package).
#: e2m1f only as the compress stream (float4_e2m1fn_x2 packs two codes a byte).
TWINS = {
    "e4m3fn": torch.float8_e4m3fn,
    "e5m2": torch.float8_e5m2,
    "e4m3b8fnuz": torch.float8_e4m3fnuz,
    "e5m2b16fnuz": torch.float8_e5m2fnuz,
    "e8m0": torch.float8_e8m0fnu,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "uint8": torch.uint8,
    "uint16": torch.uint16,
    "uint32": torch.uint32,
}
_UNSIGNED = {1: torch.uint8, 2: torch.uint16, 4: torch.uint32}


def _specs(dt: tcast.DataType) -> dict[str, object]:
    specs = {
        "data": dt.nspec,
        "scale": dt.sspec.scale if dt.sspec else None,
        "zero": dt.zero,
        "tenscale": dt.tenscale,
    }
    return {k: v for k, v in specs.items() if v is not None}


def _twin(spec, packed: bool) -> torch.dtype | None:
    code = getattr(spec, "code", None)
    if code == "e2m1f":
        return torch.float4_e2m1fn_x2 if packed else None
    if packed and spec.bits % 8:
        return None
    return TWINS.get(code)


@pytest.mark.parametrize("castmode", ["actual", "compress"])
def test_every_catalog_part_with_a_twin_is_a_view_of_its_codes_and_the_rest_keep_codes(castmode):
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(3)) * 7
    viewed = kept = 0
    for name, dt in tcast.CATALOG.items():
        xin = x.abs() if dt.nspec.kind is tcast.Kind.UINT else x
        r = tcast_torch.cast(xin, dt, castmode=castmode)
        v = tcast.native(r)
        for part, spec in _specs(dt).items():
            codes, view = getattr(r, part), getattr(v, part)
            twin = _twin(spec, castmode == "compress" and part == "data")
            if twin is None:
                assert view is codes and v.dtype_names[part] is None, (name, part)
                assert v.notes[part], (name, part)
                kept += 1
                continue
            assert view.dtype == twin, (name, part)
            assert view.untyped_storage().data_ptr() == codes.untyped_storage().data_ptr()
            assert view.data_ptr() == codes.data_ptr(), (name, part)  # zero-copy
            back = view.view(torch.uint8) if view.element_size() != codes.element_size() else view
            assert torch.equal(back.view(codes.dtype), codes), (name, part)  # raw bits
            viewed += 1
    assert viewed > 100 and kept > 20  # both outcomes are exercised


def _result(codes: torch.Tensor, code: str) -> tcast.CastResult:
    """An actual result of ``code`` data whose every scale is 1.0.

    Int data takes a float32 scale: under a power-of-two scale its codes are fixed point.
    """
    scale, one, sdtype = (
        ("float32", 0x3F800000, torch.int32) if "int" in code else ("e8m0", 127, torch.uint8)
    )
    data = codes.reshape(-1, 32)
    s = torch.full((data.shape[0], 1), one, dtype=sdtype)
    return tcast.CastResult(
        data=data,
        scale=s.view(torch.uint32) if sdtype == torch.int32 else s,
        zero=None,
        tenscale=None,
        mask=None,
        meta=None,
        dtype=tcast.datatype(f"{code}_{scale}_t32"),
        shape=tuple(data.shape),
        castmode=tcast.CastMode.ACTUAL,
        engine="torch",
    )


@pytest.mark.parametrize(
    "code", ["e4m3fn", "e5m2", "e4m3b8fnuz", "e5m2b16fnuz", "bfloat16", "float16", "int8", "int16"]
)
def test_torch_converts_every_code_as_tcast_upcast_does(code):
    bits = tcast.number(code).bits
    every = torch.arange(1 << bits, dtype=torch.int32)
    codes = every.to(torch.uint8) if bits == 8 else every.to(torch.int16).view(torch.uint16)
    r = _result(codes, code)
    ours = tcast.upcast(r)  # tcast's decode, times the scale 1.0
    theirs = tcast.native(r).data.to(torch.float32)  # torch's conversion
    nan = torch.isnan(ours)
    assert torch.equal(nan, torch.isnan(theirs))
    assert torch.equal(ours[~nan].view(torch.int32), theirs[~nan].view(torch.int32))


def test_e8m0_scales_are_float8_e8m0fnu_powers_of_two_and_255_is_nan():
    r = _result(torch.zeros(256 * 32, dtype=torch.uint8), "e4m3fn")
    r = dataclasses.replace(r, scale=torch.arange(256, dtype=torch.int32).to(torch.uint8)[:, None])
    scale = tcast.native(r).scale
    assert scale.dtype == torch.float8_e8m0fnu
    got = scale.to(torch.float32).reshape(-1)
    assert torch.isnan(got[255])
    assert got[:255].tolist() == [math.ldexp(1.0, c - 127) for c in range(255)]


def test_nvfp4_tensor_scale_is_float32_and_compress_data_is_float4_e2m1fn_x2():
    x = torch.randn(2, 32, generator=torch.Generator().manual_seed(1))
    a = tcast_torch.cast(x, "nvfp4", castmode="actual")
    c = tcast_torch.cast(x, "nvfp4", castmode="compress")
    va, vc = tcast.native(a), tcast.native(c)
    want = struct.unpack("<f", struct.pack("<I", int(a.tenscale)))[0]
    assert a.tenscale.dtype == torch.uint32 and va.tenscale.dtype == torch.float32
    assert float(va.tenscale) == want
    assert va.scale.dtype == torch.float8_e4m3fn
    assert va.data is a.data and "float4_e2m1fn_x2" in va.notes["data"]
    assert vc.data.dtype == torch.float4_e2m1fn_x2 and vc.data.shape == (32,)
    # element 2i in the low nibble: the pairs of the actual codes
    pairs = a.data.reshape(-1, 2).to(torch.int32)
    assert torch.equal(vc.data.view(torch.uint8).to(torch.int32), pairs[:, 0] | pairs[:, 1] << 4)


def test_compress_stream_of_16_bit_codes_is_one_bfloat16_per_code():
    x = torch.randn(3, 5, generator=torch.Generator().manual_seed(2))
    a = tcast_torch.cast(x, "bfloat16", castmode="actual")
    v = tcast.native(tcast_torch.cast(x, "bfloat16", castmode="compress"))
    assert v.data.dtype == torch.bfloat16 and v.data.shape == (15,)
    assert torch.equal(v.data.view(torch.uint16), a.data.reshape(-1))


def test_native_and_as_torch_dtype_agree_and_results_stay_codes():
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(6))
    r = tcast_torch.cast(x, "mxfp8", castmode="actual")
    v, t = tcast.native(r), tcast_torch.as_torch_dtype(r)
    assert v.data.dtype == t.data.dtype == torch.float8_e4m3fn
    assert v.scale.dtype == t.scale.dtype == torch.float8_e8m0fnu
    assert r.data.dtype == torch.uint8 and r.scale.dtype == torch.uint8  # codes by default


def test_native_keeps_codes_without_a_torch_twin_and_says_so():
    x = torch.linspace(-4, 4, 64).reshape(2, 32)
    r = tcast_torch.cast(x, "mxfp6e3", castmode="actual")
    v = tcast.native(r)
    assert v.codes_kept == ("data",) and v.data is r.data
    assert "no float6_e3m2fn dtype" in v.notes["data"]
    r = tcast_torch.cast(x, "e4m3b7fnuz_e8m0_t32", castmode="actual")  # bias 7: no twin
    assert tcast.native(r).codes_kept == ("data",)
    with pytest.raises(tcast.UnsupportedError, match="mxfp6e3 has data codes of e3m2f"):
        tcast_torch.as_torch_dtype(tcast_torch.cast(x, "mxfp6e3", castmode="actual"))


def test_native_views_meta_device_results():
    x = torch.empty(4, 64, device="meta")
    r = tcast_torch.cast(x, "mxfp8", castmode="actual")
    v = tcast.native(r)
    assert v.data.device.type == "meta" and v.data.dtype == torch.float8_e4m3fn
