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

import re

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
    [
        ("float8_e4m3fn", torch.float8_e4m3fn, True),
        ("float8_e5m2", torch.float8_e5m2, False),
        ("float8_e4m3fnuz", torch.float8_e4m3fnuz, False),
        ("float8_e5m2fnuz", torch.float8_e5m2fnuz, False),
    ],
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
    x = torch.tensor([3.0, 0.75, 6.0, 1.5 * 2.0**-127, 5.0, 1.0, 2.0**-128])
    ours = tcast_torch.encode(x, "e8m0").tolist()
    theirs = x.to(torch.float8_e8m0fnu).view(torch.uint8).tolist()
    assert ours == [128, 126, 130, 0, 129, 127, 0]
    assert theirs == [129, 127, 130, 1, 129, 127, 0]  # ties up: the one documented difference
    # a float32 subnormal between 2**-127 and 2**-126: nearest is code 0, torch rounds up
    sub = torch.tensor([1.25 * 2.0**-127])
    assert tcast_torch.encode(sub, "e8m0").tolist() == [0]
    assert sub.to(torch.float8_e8m0fnu).view(torch.uint8).tolist() == [1]
    # away from ties both agree: every power of two, and values between them
    k = torch.arange(-126, 127, dtype=torch.int32)  # exact powers, from the bits
    p = torch.cat([torch.tensor([2.0**-127]), ((k + 127) << 23).view(torch.float32)])
    for v in (p, p[1:] * 1.25, p[1:] * 1.75):
        assert (
            tcast_torch.encode(v, "e8m0").tolist()
            == v.to(torch.float8_e8m0fnu).view(torch.uint8).to(torch.int32).tolist()
        )


@pytest.mark.parametrize(
    "name",
    [
        "mxfp8",
        "mxfp8e5",
        "nvfp4",
        "mxfp4",
        "e4m3fn_float32_t32",
        "e5m2b16fnuz_bfloat16_t0",
        "bfloat16",
        "float16",
    ],
)
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
    view = tcast_torch.as_torch_dtype(
        tcast_torch.cast(x.reshape(-1, 2), "e2m1f", castmode="actual")
    ).data
    assert view.dtype == torch.float4_e2m1fn_x2
    assert torch.equal(view.view(torch.uint8).reshape(-1), packed)


#: The codes torch has a dtype for (by tcast code; written out here, not read from the package).
WITH_TORCH_DTYPE = {
    "e4m3fn": torch.float8_e4m3fn,
    "e5m2": torch.float8_e5m2,
    "e4m3b8fnuz": torch.float8_e4m3fnuz,
    "e5m2b16fnuz": torch.float8_e5m2fnuz,
    "e8m0": torch.float8_e8m0fnu,
    "e2m1f": torch.float4_e2m1fn_x2,
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
_UNSIGNED = {1: torch.uint8, 2: torch.uint16, 4: torch.uint32}


def _parts(dt) -> dict[str, tcast.NumberSpec]:
    specs = {
        "data": dt.nspec,
        "scale": dt.sspec.scale if dt.sspec else None,
        "zero": dt.zero,
        "tenscale": dt.tenscale,
    }
    return {k: v for k, v in specs.items() if v is not None}


def _as_ints(t: torch.Tensor) -> list[int]:
    """Raw bits as Python ints (unsigned)."""
    return t.contiguous().view(_UNSIGNED[t.element_size()]).reshape(-1).tolist()


def _check_view(view: torch.Tensor, codes: torch.Tensor, spec, packed_pairs: bool) -> None:
    want = _as_ints(codes)
    if packed_pairs:  # actual e2m1f: pairs along the last dimension, element 2i low
        got = []
        for b in _as_ints(view.view(torch.uint8)):
            got += [b & 0xF, b >> 4]
        assert got == want
        return
    assert view.untyped_storage().data_ptr() == codes.untyped_storage().data_ptr()  # a view
    assert _as_ints(view) == want
    if view.dtype == torch.float4_e2m1fn_x2:
        return
    # the same bits mean the same values: torch's reading equals tcast's decode
    ours = tcast_torch.decode(tcast_torch._bits.widen_codes(codes), spec)
    theirs = view.to(torch.float32)
    nan = torch.isnan(ours)
    assert torch.equal(nan, torch.isnan(theirs))
    assert torch.equal(ours[~nan].view(torch.int32), theirs[~nan].view(torch.int32))


@pytest.mark.parametrize("castmode", ["actual", "compress"])
def test_as_torch_dtype_views_every_catalog_datatype_or_raises_naming_it(castmode):
    """Every part of every catalog datatype's result (and of wide ints, 23-bit floats, e5m0
    scales) is viewed as torch's dtype of the same
    bits (raw bits equal to the codes, values equal to tcast's decode), or the call raises a
    TcastError naming the datatype: exactly where a part has no torch dtype."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(8, 64, generator=g) * torch.exp2(torch.randint(-8, 8, (8, 1), generator=g))
    viewed = refused = 0
    wide = {
        n: tcast.datatype(n)
        for n in (
            "int16_e8m0_t32",
            "int32_float32_t8",
            "e8m15_e8m0_t32",
            "e4m3fn_e5m0_t32",
            "e3m2f_bfloat16_t16",
        )
    }
    for name, dt in {**tcast.CATALOG, **wide}.items():
        r = tcast_torch.cast(x, dt, castmode=castmode)
        parts = _parts(dt)
        whole_bytes = castmode == "actual" or dt.nspec.bits in (4, 8, 16, 32)
        expect = whole_bytes and all(p.code in WITH_TORCH_DTYPE for p in parts.values())
        if not expect:
            with pytest.raises(tcast.TcastError, match=re.escape(dt.name)):
                tcast_torch.as_torch_dtype(r)
            refused += 1
            continue
        v = tcast_torch.as_torch_dtype(r)
        for part, spec in parts.items():
            view, codes = getattr(v, part), getattr(r, part)
            assert view.dtype == WITH_TORCH_DTYPE[spec.code], (name, part)
            if part == "data" and castmode == "compress":
                assert _as_ints(view.view(torch.uint8)) == _as_ints(codes), name
                continue
            _check_view(view, codes, spec, view.dtype == torch.float4_e2m1fn_x2)
        for part in {"data", "scale", "zero", "tenscale"} - set(parts):
            assert getattr(v, part) is None
        viewed += 1
    assert viewed > 40 and refused > 20  # both outcomes are exercised


def test_formats_without_a_torch_dtype_raise_naming_the_datatype():
    r = tcast_torch.cast(torch.randn(4, 32), "mxfp6e3", castmode="actual")
    with pytest.raises(tcast.UnsupportedError, match=r"mxfp6e3 has data codes of e3m2f"):
        tcast_torch.as_torch_dtype(r)
    r = tcast_torch.cast(torch.randn(4, 32), "e4m3fn_e5m0_t32", castmode="actual")
    with pytest.raises(tcast.UnsupportedError, match=r"e4m3fn_e5m0_t32 has scale codes of e5m0"):
        tcast_torch.as_torch_dtype(r)
    assert tcast_torch.torch_dtype("e3m2f") is None
    assert tcast_torch.torch_dtype("e4m3b8fnuz") == torch.float8_e4m3fnuz
    with pytest.raises(tcast.SpecError, match=r"e2m1f.*odd"):
        tcast_torch.as_torch_dtype(tcast_torch.cast(torch.randn(3), "e2m1f", castmode="actual"))
    with pytest.raises(tcast.SpecError, match="actual or compress"):
        tcast_torch.as_torch_dtype(torch.zeros(2))


def test_eight_bit_integer_codes_view_as_torch_int8_and_uint8():
    x = torch.tensor([[-130.0, -1.0, 0.0, 1.0, 2.5, 3.5, 127.0, 300.0]])
    v = tcast_torch.as_torch_dtype(tcast_torch.cast(x, "int8_float32_t8", castmode="actual"))
    assert v.data.dtype == torch.int8 and v.scale.dtype == torch.float32
    assert torch.equal(v.data.float() * v.scale.float(), tcast_torch.cast(x, "int8_float32_t8"))
    u = tcast_torch.as_torch_dtype(tcast_torch.cast(x.abs(), "uint8_FF", castmode="actual"))
    assert u.data.dtype == torch.uint8 and u.zero.dtype == torch.float32
