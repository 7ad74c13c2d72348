"""Gradients of the virtual cast, inference mode.

The gradients are checked as values, not only that ``backward`` runs: the straight-through
estimator hands back exactly the incoming gradient; ``grad="saturate"`` zeroes it exactly
where the input lies beyond its block's range, computed here independently from the
reference's scales (tcast_ref) in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tcast_ref
import tcast_torch
from tcast import SpecError

NAMES = [
    "mxfp8",
    "mxfp4",
    "nvfp4",
    "e4m3fn",
    "mxint8",
    "uint4_fic",
    "mxfp4_2d",
    "e2m1f_e8m0_t32n2m4",
]


def _x(shape=(8, 64), seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g) * 3


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_straight_through_gradient_is_the_incoming_gradient(name, dtype):
    x = _x().to(dtype).requires_grad_()
    y = tcast_torch.cast(x, name)
    assert y.requires_grad and y.dtype == dtype
    assert torch.equal(y.detach(), tcast_torch.cast(x.detach(), name))  # same forward bits
    w = _x(seed=1).to(dtype)
    (y * w).sum().backward()
    assert torch.equal(x.grad, w)
    # d/dx sum(Q(x)^2) under STE is 2 Q(x), exactly
    x.grad = None
    (tcast_torch.cast(x, name) ** 2).sum().backward()
    assert torch.equal(x.grad, 2 * y.detach())


def test_saturate_gradient_is_zero_exactly_where_an_unscaled_cast_clips():
    x = torch.tensor([1.0, 447.0, 448.0, 449.0, 500.0, -1e6, float("inf"), float("nan"), 0.0])
    x.requires_grad_()
    tcast_torch.cast(x, "e4m3fn", grad="saturate").sum().backward()
    assert x.grad.tolist() == [1, 1, 1, 0, 0, 0, 0, 0, 1]


@pytest.mark.parametrize("name", ["mxfp4", "mxfp8", "e2m1f_e8m0_t16d0"])
def test_saturate_gradient_is_zero_exactly_where_the_scaled_input_exceeds_the_max(name):
    x = _x((32, 64), seed=3)
    x[0, :8] = torch.tensor([7.9, 6.0, 5.9, 1.0, 0.0, -7.5, 3.0, 2.0])  # amax 7.9: 6 clips
    xr = x.clone().requires_grad_()
    tcast_torch.cast(xr, name, grad="saturate").sum().backward()
    r = tcast_ref.cast(x.numpy(), name, castmode="actual")
    s = np.exp2(r.scale.astype(np.float64) - 127)
    axis = 0 if name.endswith("d0") else 1
    t = 16 if name.endswith("d0") else 32
    s = np.repeat(s, t, axis=axis)
    m = 6.0 if "fp4" in name or "e2m1" in name else 448.0
    expected = (np.abs(x.numpy().astype(np.float64)) / s <= m).astype(np.float32)
    np.testing.assert_array_equal(xr.grad.numpy(), expected)
    assert (expected == 0).any() and (expected == 1).any()


def test_unknown_gradient_option_is_a_spec_error():
    with pytest.raises(SpecError, match="grad"):
        tcast_torch.cast(_x().requires_grad_(), "mxfp8", grad="nope")


def test_actual_casts_of_tensors_requiring_grad_are_detached_results():
    r = tcast_torch.cast(_x().requires_grad_(), "mxfp8", castmode="actual")
    assert not r.data.requires_grad


@pytest.mark.parametrize("name", NAMES)
def test_inference_mode_gives_the_same_bits(name):
    x = _x()
    want = tcast_torch.cast(x, name)
    with torch.inference_mode():
        xi = x.clone()
        got = tcast_torch.cast(xi, name)
        r = tcast_torch.cast(xi, name, castmode="actual")
        up = tcast_torch.upcast(r)
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))
    assert torch.equal(up.view(torch.int32), want.view(torch.int32))


def test_tensors_requiring_grad_take_the_fast_path(monkeypatch):
    """The autograd wrapper runs the cast the dispatcher chose (the fast path here), with the
    bits of a cast of the detached tensor."""
    import tcast_torch._run as run

    calls = []
    real = run.fast_scaled

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(run, "fast_scaled", counting)
    x = torch.linspace(-5, 5, 256).reshape(4, 64).requires_grad_()
    y = tcast_torch.cast(x, "mxfp8", compile=False)
    assert calls == [1] and y.requires_grad
    want = tcast_torch.cast(x.detach(), "mxfp8", compile=False)
    assert torch.equal(y.detach().view(torch.int32), want.view(torch.int32))
