"""Tensors torch represents lazily or without values: the negative bit and the meta device.

A tensor with the negative bit (``x._neg_view()``, ``z.conj().imag``) stands for ``-x``:
every cast path gives the raw bits of the cast of the materialized ``(-x).clone()``. Codes
in a CastResult are never negated (refused), random bits are (int8, uint8, int16; torch
negates no uint16, which is refused). Meta tensors cast to
meta results of the CPU cast's dtypes and shapes, and those results upcast to float32 meta
tensors after the same checks of their parts.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

import tcast
import tcast_torch
from tcast import CastResult, SpecError

#: One datatype of each cast path: unscaled, MX (fast path and 6-bit codes), two-level,
#: channel scales, integer elements, 2-D tiles, uint with zero points, N-of-M sparsity,
#: 16-bit codes.
NAMES = [
    "float8_e4m3fn",
    "mxfp4",
    "mxfp6e2",
    "nvfp4",
    "int8_Fc",
    "mxint8",
    "mxfp8_2d",
    "uint4_FFc",
    "e4m3fn_e8m0_t32n2m4",
    "bfloat16",
]
MODES = ["virtual", "actual", "compress"]
CASTS = {"tcast": tcast.cast, "tcast_torch": tcast_torch.cast}
PARTS = ("data", "scale", "zero", "tenscale", "mask")


def _x() -> torch.Tensor:
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(3))
    x[0, :4] = torch.tensor([0.0, -0.0, 1e-30, -448.0])
    return x


def _raw(t: torch.Tensor) -> torch.Tensor:
    """The raw bits (an integer view of the same width)."""
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32}
    t = t.detach().contiguous()
    return t if t.dtype in (torch.bool, torch.uint8) else t.view(ints[t.element_size()])


def _assert_same_bits(got, want) -> None:
    if isinstance(want, CastResult):
        assert isinstance(got, CastResult)
        for part in PARTS:
            g, w = getattr(got, part), getattr(want, part)
            assert (g is None) == (w is None), part
            if w is not None:
                assert g.dtype == w.dtype and torch.equal(_raw(g), _raw(w)), part
    else:
        assert got.dtype == want.dtype and torch.equal(_raw(got), _raw(want))


# ------------------------------------------------------------ the negative bit
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_negative_bit_input_casts_as_its_materialized_negation(name, mode):
    x = _x()
    neg = x._neg_view()
    assert neg.is_neg()
    want = tcast_torch.cast((-x).clone(), name, castmode=mode)
    for cast in CASTS.values():
        _assert_same_bits(cast(neg, name, castmode=mode), want)
    assert neg.is_neg()  # the caller's tensor is left as it was


@pytest.mark.parametrize("entry", ["tcast", "tcast_torch"])
def test_negative_bit_takes_every_path_seeded_compiled_and_dual(entry):
    x = _x()
    neg, plain = x._neg_view(), (-x).clone()
    kw = {"roundmode": "stochastic", "seed": 11}
    cast = CASTS[entry]
    _assert_same_bits(cast(neg, "mxfp4", **kw), cast(plain, "mxfp4", **kw))
    dual = tcast.cast_dual if entry == "tcast" else tcast_torch.cast_dual
    for got, want in zip(dual(neg, "nvfp4"), dual(plain, "nvfp4"), strict=True):
        _assert_same_bits(got, want)
    if entry == "tcast":
        # traced by dynamo (a fake tensor with the negative bit; the front door reaches the
        # same run_cast; Inductor's kernels would take seconds to build on the CPU)
        traced = torch.compile(lambda t: cast(t, "mxfp8"), backend="eager", fullgraph=True)
        _assert_same_bits(traced(neg), cast(plain, "mxfp8"))


def test_imaginary_part_of_a_conjugate_casts_as_its_values():
    z = torch.complex(_x(), _x().flip(0))
    im = z.conj().imag
    assert im.is_neg()
    want = tcast_torch.cast((-z.imag).clone(), "nvfp4", castmode="actual")
    _assert_same_bits(tcast.cast(im, "nvfp4", castmode="actual"), want)


def test_negative_bit_input_keeps_its_gradient():
    x = _x().requires_grad_()
    tcast_torch.cast(x._neg_view(), "mxfp8").sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, -1.0))  # straight through -x


@pytest.mark.parametrize(
    ("name", "dtype"),
    [("mxfp4", torch.int8), ("mxfp4", torch.uint8), ("e5m10_e8m0_t32", torch.int16)],
)
def test_negative_bit_rbits_are_the_bits_of_the_negated_values(name, dtype):
    """K-bit bits with the negative bit stand for their negation modulo 2**K (two's
    complement: -(-128) is -128 in int8), computed here in int32."""
    x = _x()
    width = 8 if dtype.itemsize == 1 else 16
    r = torch.randint(0, 1 << width, x.shape, generator=torch.Generator().manual_seed(4))
    r[0, :3] = torch.tensor([0, 1, 1 << (width - 1)])  # 0, -1 and the most negative
    unsigned = torch.uint8 if width == 8 else torch.uint16
    bits = r.to(unsigned).view(dtype)
    negated = ((-r) & ((1 << width) - 1)).to(unsigned)
    kw = {"roundmode": "stochastic"}
    want = tcast_torch.cast(x, name, rbits=negated, **kw)
    for cast in CASTS.values():
        _assert_same_bits(cast(x, name, rbits=bits._neg_view(), **kw), want)


def test_negative_bit_uint16_rbits_are_refused_torch_cannot_negate_them():
    x = _x()
    bits = torch.zeros(x.shape, dtype=torch.uint16)._neg_view()
    for cast in CASTS.values():
        for name in ("e5m10_e8m0_t32", "bfloat16"):
            with pytest.raises(SpecError, match=r"rbits is a torch.uint16 tensor with a pending"):
                cast(x, name, roundmode="stochastic", rbits=bits)


@pytest.mark.parametrize("name", ["nvfp4", "bfloat16", "e4m3fn_e8m0_t32n2m4"])
def test_result_parts_with_the_negative_bit_are_refused_codes_are_not_numbers(name):
    r = tcast_torch.cast(_x(), name, castmode="actual")
    for part in PARTS:
        if getattr(r, part) is None:
            continue
        bad = dataclasses.replace(r, **{part: getattr(r, part)._neg_view()})
        for upcast in (tcast.upcast, tcast_torch.upcast):
            with pytest.raises(SpecError, match=rf"CastResult.{part} has a pending negation"):
                upcast(bad)


def test_dtensor_with_a_negative_bit_local_shard_casts_as_its_values(mesh):
    from torch.distributed.tensor import DTensor, Shard

    x = _x()
    d = DTensor.from_local(x._neg_view(), mesh, [Shard(0)], run_check=False)
    want = tcast_torch.cast((-x).clone(), "nvfp4", castmode="actual")
    for cast in CASTS.values():
        got = cast(d, "nvfp4", castmode="actual")
        local = dataclasses.replace(
            got, **{p: getattr(got, p).to_local() for p in ("data", "scale", "tenscale")}
        )
        _assert_same_bits(local, want)


# ------------------------------------------------------------ the meta device
@pytest.mark.parametrize("mode", ["actual", "compress"])
@pytest.mark.parametrize("name", NAMES)
def test_meta_results_have_the_cpu_casts_parts_and_upcast_to_meta(name, mode):
    x = _x()
    want = tcast_torch.cast(x, name, castmode=mode)
    got = tcast.cast(x.to("meta"), name, castmode=mode)
    for part in PARTS:
        g, w = getattr(got, part), getattr(want, part)
        assert (g is None) == (w is None), part
        if w is not None:
            assert g.device.type == "meta" and (g.dtype, g.shape) == (w.dtype, w.shape), part
    for upcast in (tcast.upcast, tcast_torch.upcast):
        up = upcast(got)
        assert (up.device.type, up.dtype, up.shape) == ("meta", torch.float32, x.shape)


def test_meta_virtual_cast_is_a_meta_tensor_of_the_input_dtype():
    x = _x().to(device="meta", dtype=torch.bfloat16)
    for cast in CASTS.values():
        v = cast(x, "mxfp4")
        assert (v.device.type, v.dtype, v.shape) == ("meta", torch.bfloat16, x.shape)


def test_meta_results_are_still_checked_part_by_part():
    r = tcast.cast(_x().to("meta"), "nvfp4", castmode="actual")
    bad = {
        "data": (dataclasses.replace(r, data=r.data[:, :8]), r"data has shape"),
        "scale": (dataclasses.replace(r, scale=r.scale.to(torch.int32)), r"scale must be"),
        "device": (dataclasses.replace(r, tenscale=torch.zeros((), dtype=torch.uint32)), "one"),
        "virtual": (dataclasses.replace(r, castmode=tcast.CastMode.VIRTUAL), "actual or"),
    }
    for result, match in bad.values():
        for upcast in (tcast.upcast, tcast_torch.upcast):
            with pytest.raises(SpecError, match=match):
                upcast(result)
