"""The Triton engine's entry takes what the torch engine's takes: a tensor with the negative
bit (``x._neg_view()``) casts as the materialized ``(-x).clone()``, in raw bits, by the
single and the dual kernels; results on the meta device (which no kernel reads) are refused.
"""

from __future__ import annotations

import pytest
import torch

import tcast
import tcast_triton
from tcast import UnsupportedError

PARTS = ("data", "scale", "tenscale")


def _x(device: str) -> torch.Tensor:
    return torch.randn(4, 64, generator=torch.Generator().manual_seed(7)).to(device)


def _assert_same_bits(got, want) -> None:
    if isinstance(want, torch.Tensor):
        assert torch.equal(got.view(torch.int32), want.view(torch.int32))
        return
    assert got.engine == "triton"
    for part in PARTS:
        g, w = getattr(got, part), getattr(want, part)
        assert (g is None) == (w is None), part
        if w is not None:
            assert g.dtype == w.dtype and torch.equal(g, w), part


@pytest.mark.parametrize("mode", ["virtual", "actual"])
@pytest.mark.parametrize("name", ["mxfp4", "float8_e4m3fn", "nvfp4"])
def test_negative_bit_input_casts_as_its_materialized_negation(name, mode, device):
    x = _x(device)
    want = tcast_triton.cast((-x).clone(), name, castmode=mode)
    for cast in (tcast_triton.cast, tcast.cast):
        _assert_same_bits(cast(x._neg_view(), name, castmode=mode), want)


def test_negative_bit_input_of_the_dual_kernel(device):
    x = _x(device)
    want = tcast_triton.cast_dual((-x).clone(), "mxfp8")
    for dual in (tcast_triton.cast_dual, tcast.cast_dual):
        for got, ref in zip(dual(x._neg_view(), "mxfp8"), want, strict=True):
            _assert_same_bits(got, ref)


def test_meta_results_are_refused_naming_the_device():
    r = tcast.cast(torch.randn(4, 64, device="meta"), "nvfp4", castmode="actual")
    with pytest.raises(UnsupportedError, match=r"meta device"):
        tcast_triton.upcast(r)
