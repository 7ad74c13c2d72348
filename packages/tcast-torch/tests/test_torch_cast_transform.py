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


def _matrix(h: Hadamard, inverse: bool) -> np.ndarray:
    """The transform of one group as a float64 matrix (SEMANTICS.md §5.10, without rounding)."""
    n = h.size
    sylvester = np.array([[(-1) ** bin(i & j).count("1") for j in range(n)] for i in range(n)])
    signs = np.diag(np.array(h.signs, np.float64))
    if inverse:
        return signs @ sylvester * 2.0**-h.inverse_shift
    return sylvester @ signs * 2.0**-h.shift


def test_the_gradient_is_straight_through_exactly_or_masked_in_the_transformed_domain():
    """STE: the incoming gradient itself (a random one, not ones). ``saturate``: the mask of
    the clipped transformed values, carried back through the transform's matrices (float64,
    within float32 rounding)."""
    h = Hadamard.seeded(32, 5)
    x = torch.randn(4, 64, requires_grad=True)
    g = torch.randn(4, 64)
    (got,) = torch.autograd.grad(tcast_torch.cast(x, "mxfp4", transform=h), x, g)
    assert torch.equal(got, g)
    (sat,) = torch.autograd.grad(tcast_torch.cast(x, "mxfp4", transform=h, grad="saturate"), x, g)
    # the clipped transformed values: |t| beyond 6 times their block's scale (floor scales)
    xn = x.detach().numpy()
    t = tcast_ref.hadamard(xn, h)
    r = tcast_ref.cast(xn, "mxfp4", castmode="actual", transform=h)
    scale = np.exp2(r.scale.astype(np.float64) - 127).repeat(32, axis=1)
    kept = ~(np.abs(t) > 6 * scale)
    assert not kept.all()  # the floor scale clips some values
    fwd, inv = _matrix(h, False), _matrix(h, True)
    gt = (g.numpy().astype(np.float64).reshape(-1, 32) @ inv) * kept.reshape(-1, 32)
    want = (gt @ fwd).reshape(4, 64)
    np.testing.assert_allclose(sat.numpy(), want, rtol=0, atol=1e-5)


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
    # upcast: the same values widened, the NaN as +NaN 0x7FC00000 (CUDA widens a float16
    # NaN to 0x7FFFFFFF)
    r = tcast_torch.cast(x.to(device), "mxfp8", castmode="actual", transform=h)
    up = tcast_torch.upcast(r).cpu().view(torch.int32)
    assert set(up[0, :32].tolist()) == {0x7FC00000}
