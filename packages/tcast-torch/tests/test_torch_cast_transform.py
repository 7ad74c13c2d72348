"""tcast_torch casts with a transform (SEMANTICS.md §5.11) against tcast_ref, bit for bit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import tcast
import tcast_ref
import tcast_torch
from tcast import Hadamard

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
CASES = [
    ("nvfp4", (3, 32), Hadamard.te_wgrad(), torch.bfloat16, {}),
    (
        "mxfp4",
        (2, 64),
        Hadamard.seeded(32, 3),
        torch.float32,
        {"roundmode": "stochastic", "seed": 4},
    ),
    ("e2m3f_e8m0_t32d0", (64, 3), Hadamard.seeded(16, 1), torch.float16, {}),
]
_NP = {torch.float32: np.float32, torch.float16: np.float16, torch.bfloat16: ml_dtypes.bfloat16}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("code", "shape", "h", "tdt", "kw"), CASES)
def test_casts_with_a_transform_equal_the_reference(code, shape, h, tdt, kw, device):
    x = (torch.from_numpy(np.random.default_rng(2).standard_t(3, shape)) * 2).to(tdt)
    xn = x.float().numpy().astype(_NP[tdt])
    xd = x.to(device)
    v = tcast_torch.cast(xd, code, transform=h, **kw)
    want_v = tcast_ref.cast(xn, code, transform=h, **kw)
    assert torch.equal(v.cpu().float(), torch.from_numpy(want_v.astype(np.float32)))
    for mode in ("actual", "compress"):
        for cast in (tcast_torch.cast, tcast.cast):
            got = cast(xd, code, castmode=mode, transform=h, **kw)
            want = tcast_ref.cast(xn, code, castmode=mode, transform=h, **kw)
            assert got.transform == h and got.input_dtype == want.input_dtype
            for part in ("data", "scale", "tenscale"):
                a, b = getattr(got, part), getattr(want, part)
                assert (a is None) == (b is None), part
                if a is not None:
                    np.testing.assert_array_equal(a.cpu().numpy(), b, err_msg=part)
            np.testing.assert_array_equal(
                tcast.upcast(got).cpu().numpy().view(np.uint32),
                tcast_ref.upcast(want).view(np.uint32),
            )


def test_the_gradient_passes_through_the_transform_and_its_inverse():
    """STE: the transform, the identity and the inverse multiply to the identity; with
    ``grad="saturate"`` the clipped positions of the transformed values are cut, and the
    gradient is that mask carried back through the transform (autograd of the steps)."""
    h = Hadamard.seeded(32, 5)
    x = torch.randn(4, 64, requires_grad=True)
    tcast_torch.cast(x, "mxfp4", transform=h).sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))
    got = torch.autograd.grad(tcast_torch.cast(x, "mxfp4", transform=h, grad="saturate").sum(), x)
    t = tcast_torch.hadamard(x, h)
    y = tcast_torch.hadamard(tcast_torch.cast(t, "mxfp4", grad="saturate"), h, inverse=True)
    (want,) = torch.autograd.grad(y.sum(), x)
    assert not torch.equal(want, torch.ones_like(x))  # the floor scale clips some values
    assert torch.equal(got[0], want)


@pytest.mark.parametrize("transposed", [False, True])
def test_cast_dual_with_a_column_transform_equals_the_reference(transposed):
    h = Hadamard.te_wgrad()
    x = (torch.from_numpy(np.random.default_rng(4).standard_t(3, (32, 48))) * 2).to(torch.bfloat16)
    xn = x.float().numpy().astype(ml_dtypes.bfloat16)
    want = tcast_ref.cast_dual(xn, "nvfp4", transposed=transposed, column_transform=h)
    got = tcast_torch.cast_dual(x, "nvfp4", transposed=transposed, column_transform=h)
    for g, w in zip(got, want, strict=True):
        assert g.transform == w.transform
        np.testing.assert_array_equal(g.data.numpy(), w.data)
        np.testing.assert_array_equal(g.scale.numpy(), w.scale)
        np.testing.assert_array_equal(
            tcast_torch.upcast(g).numpy().view(np.uint32), tcast_ref.upcast(w).view(np.uint32)
        )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("tdt", [torch.bfloat16, torch.float16])
def test_a_nan_group_is_the_canonical_nan_of_the_input_dtype(tdt, device):
    """§7: +NaN of the input dtype (torch converts a float32 NaN to bfloat16 0xFFFF on CPU)."""
    x = torch.randn(2, 32).to(tdt)
    x[0, 3] = float("nan")
    h = Hadamard.seeded(16, 3)
    v = tcast_torch.cast(x.to(device), "mxfp8", transform=h).cpu().view(torch.int16)
    canonical = 0x7FC0 if tdt is torch.bfloat16 else 0x7E00
    assert set(v[0, :32].tolist()) == {canonical}  # the NaN block of 32 (and its groups)
    want = tcast_ref.cast(x.float().numpy().astype(_NP[tdt]), "mxfp8", transform=h)
    np.testing.assert_array_equal(v.numpy(), want.view(np.int16))
