"""Codes viewed as torch's own low-precision dtypes (SEMANTICS.md §8), against torch's
conversions (and torchao's FP4 packing, which torch lacks).

Where torch's conversion rounds by the same rule, its codes equal tcast's on every float16
and bfloat16 input; the differences are named tests:

* ``float8_e4m3fn``: torch saturates finite overflow and Inf to +-448 as ``saturate=True``.
* ``float8_e5m2`` and both fnuz types: torch overflows (Inf or the NaN code) as
  ``saturate=False``.
* ``float8_e5m2`` NaN: torch writes 0x7F/0xFF, tcast the canonical quiet NaN 0x7E/0xFE.
* ``float8_e8m0fnu``: torch rounds ties up (3.0 -> 4); tcast rounds ties to the even code
  (3.0 -> 2), SEMANTICS.md §4.3 and §11 (the ml_dtypes departure); torch also rounds float32
  subnormals up (1.25 * 2**-127 -> code 1), tcast to nearest (code 0).
"""

from __future__ import annotations

import pytest
import torch

import tcast
import tcast_torch


def _patterns(dtype) -> torch.Tensor:
    return torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(dtype)


def _codes(x: torch.Tensor, code: str, saturate: bool) -> torch.Tensor:
    return tcast_torch.cast(x, code, castmode="actual", saturate=saturate).data


@pytest.mark.parametrize(
    ("code", "tdtype", "saturate"),
    [("float8_e4m3fn", torch.float8_e4m3fn, True), ("float8_e5m2", torch.float8_e5m2, False),
     ("float8_e4m3fnuz", torch.float8_e4m3fnuz, False),
     ("float8_e5m2fnuz", torch.float8_e5m2fnuz, False)],
)
@pytest.mark.parametrize("src", [torch.float16, torch.bfloat16], ids=str)
def test_float8_codes_equal_torch_conversion_on_every_16_bit_input(code, tdtype, saturate, src):
    x = _patterns(src)
    ours = _codes(x, code, saturate)
    theirs = x.to(torch.float32).to(tdtype).view(torch.uint8)
    nan = torch.isnan(x)
    assert torch.equal(ours[~nan], theirs[~nan])
    # NaN: both give a NaN code with the same sign bit; the payloads differ for e5m2 only
    assert torch.isnan(ours[nan].view(tdtype).float()).all()
    assert torch.isnan(theirs[nan].view(tdtype).float()).all()
    assert torch.equal(ours[nan] & 0x80, theirs[nan] & 0x80)
    if code == "float8_e5m2":
        assert set((ours[nan] & 0x7F).tolist()) == {0x7E}  # canonical quiet NaN (§4.2)
        assert set((theirs[nan] & 0x7F).tolist()) == {0x7F}  # torch: all mantissa bits


def test_float8_e4m3fn_overflow_differs_from_torch_only_where_saturate_is_off():
    x = torch.tensor([464.0, 470.0, 480.0, 1e4, float("inf"), -float("inf")])
    torch_codes = x.to(torch.float8_e4m3fn).view(torch.uint8)
    assert torch.equal(_codes(x, "e4m3fn", True), torch_codes)  # saturating, as torch
    assert _codes(x, "e4m3fn", False).tolist() == [0x7E, 0x7F, 0x7F, 0x7F, 0x7F, 0xFF]


def test_e8m0_ties_round_to_the_even_code_where_torch_rounds_up():
    x = torch.tensor([3.0, 0.75, 6.0, 1.5 * 2.0 ** -127, 5.0, 1.0, 2.0 ** -128])
    ours = tcast_torch.encode(x, "e8m0").tolist()
    theirs = x.to(torch.float8_e8m0fnu).view(torch.uint8).tolist()
    assert ours == [128, 126, 130, 0, 129, 127, 0]
    assert theirs == [129, 127, 130, 1, 129, 127, 0]  # ties up: the one documented difference
    # a float32 subnormal between 2**-127 and 2**-126: nearest is code 0, torch rounds up
    sub = torch.tensor([1.25 * 2.0 ** -127])
    assert tcast_torch.encode(sub, "e8m0").tolist() == [0]
    assert sub.to(torch.float8_e8m0fnu).view(torch.uint8).tolist() == [1]
    # away from ties both agree: every power of two, and values between them
    k = torch.arange(-126, 127, dtype=torch.int32)  # exact powers, from the bits
    p = torch.cat([torch.tensor([2.0 ** -127]), ((k + 127) << 23).view(torch.float32)])
    for v in (p, p[1:] * 1.25, p[1:] * 1.75):
        assert tcast_torch.encode(v, "e8m0").tolist() == v.to(torch.float8_e8m0fnu).view(
            torch.uint8).to(torch.int32).tolist()


@pytest.mark.parametrize("name", ["mxfp8", "mxfp8e5", "nvfp4", "mxfp4", "e4m3fn_float32_t32",
                                  "e5m2b16fnuz_bfloat16_t0", "bfloat16", "float16"])
def test_viewed_codes_times_viewed_scales_equal_upcast(name):
    x = torch.randn(8, 64) * 10
    r = tcast_torch.cast(x, name, castmode="actual")
    v = tcast_torch.as_torch_dtype(r)
    dt = tcast.datatype(name)
    if dt.nspec.code == "e2m1f":
        assert v.data.dtype == torch.float4_e2m1fn_x2 and v.data.shape == (8, 32)
        c = tcast_torch.cast(x, name, castmode="compress")
        cv = tcast_torch.as_torch_dtype(c).data
        assert torch.equal(cv.view(torch.uint8), v.data.view(torch.uint8).reshape(-1))
        return
    vals = v.data.float()
    if dt.sspec is not None:
        t = dt.sspec.tiles[0].size or x.shape[-1]
        s = v.scale.float().repeat_interleave(t, -1)
        if v.tenscale is not None:
            s = s * v.tenscale.float()
        vals = vals * s
    assert torch.equal(vals.view(torch.int32), tcast_torch.upcast(r).view(torch.int32))


def test_e2m1_codes_and_packing_equal_torchao():
    kernels = pytest.importorskip("torchao.prototype.mx_formats.kernels")
    x = _patterns(torch.bfloat16).float()
    x = x[torch.isfinite(x)]
    x = x[: x.numel() // 2 * 2]
    ours = tcast_torch.cast(x, "e2m1f", castmode="actual").data
    theirs = kernels.f32_to_f4_unpacked(x)
    assert torch.equal(ours, theirs)
    packed = tcast_torch.cast(x, "e2m1f", castmode="compress").data
    assert torch.equal(packed, kernels.pack_uint4(theirs))
    view = tcast_torch.as_torch_dtype(tcast_torch.cast(x.reshape(-1, 2), "e2m1f",
                                                       castmode="actual")).data
    assert view.dtype == torch.float4_e2m1fn_x2
    assert torch.equal(view.view(torch.uint8).reshape(-1), packed)


def test_formats_without_a_torch_dtype_have_no_view():
    r = tcast_torch.cast(torch.randn(4, 32), "mxfp6e3", castmode="actual")
    v = tcast_torch.as_torch_dtype(r)
    assert v.data is None and v.scale.dtype == torch.float8_e8m0fnu
    assert tcast_torch.torch_dtype("e3m2f") is None
    assert tcast_torch.torch_dtype("e4m3b8fnuz") == torch.float8_e4m3fnuz
    with pytest.raises(tcast.SpecError, match="odd"):
        tcast_torch.as_torch_dtype(tcast_torch.cast(torch.randn(3), "e2m1f", castmode="actual"))
    with pytest.raises(tcast.SpecError, match="actual or compress"):
        tcast_torch.as_torch_dtype(torch.zeros(2))
