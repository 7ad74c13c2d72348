"""tcast results fed to torch._scaled_mm through tcast.native (CUDA only).

Row-wise FP8 (Hopper and later): e4m3fn data with one scale per row along K (``t0``), the
scale a float32 (``e4m3fn_float32_t0``) or a power of two (``e4m3fn_e8m0_t0``, converted to
float32 per row). Block-scaled MXFP8 (capability 10.0 and later): ``mxfp8`` data and
``float8_e8m0fnu`` scales in the blocked layout (``scale_layout="blocked"``).

The reference is the float64 product of the decoded operands (``tcast.upcast``), so only the
GEMM's own error remains: float32 accumulation and the bfloat16 output. The bound used,
``|out - ref| <= 2**-8 * |ref| + 2**-10 * (|A| @ |B|.T)``, is a half ulp of bfloat16 (2**-9)
doubled, plus an accumulation error of 2**-10 of the absolute products' sum: loose enough
for Hopper's FP8 tensor cores, whose accumulator keeps fewer than float32's 24 bits, and a
small fraction (about 1/50 at K = 256) of a typical product, where a misread scale or a
wrong element dtype is off by a factor of 2 or more.
"""

from __future__ import annotations

import pytest
import torch

import tcast

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

M, N, K = 64, 96, 256


def _capability() -> tuple[int, int]:
    return torch.cuda.get_device_capability() if torch.cuda.is_available() else (0, 0)


def _operands(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", generator=g)
    w = torch.randn(N, K, device="cuda", generator=g)
    # rows of different magnitudes, so that a scale applied to the wrong row shows
    a = a * torch.exp2(torch.randint(-6, 7, (M, 1), device="cuda", generator=g).float())
    w = w * torch.exp2(torch.randint(-6, 7, (N, 1), device="cuda", generator=g).float())
    return a, w


def _check(out: torch.Tensor, ra: tcast.CastResult, rw: tcast.CastResult) -> None:
    a64 = tcast.upcast(ra).double()
    w64 = tcast.upcast(rw).double()
    ref = a64 @ w64.T
    bound = 2.0**-8 * ref.abs() + 2.0**-10 * (a64.abs() @ w64.abs().T)
    err = (out.double() - ref).abs()
    assert torch.isfinite(out).all()
    assert (err <= bound).all(), f"largest error / bound: {(err / bound).max().item():.3g}"


@pytest.mark.skipif(_capability() < (8, 9), reason="FP8 GEMMs need capability 8.9 or later")
@pytest.mark.parametrize("name", ["e4m3fn_float32_t0", "e4m3fn_e8m0_t0"])
def test_rowwise_fp8_scaled_mm_of_native_views_matches_the_decoded_product(name):
    a, w = _operands(1)
    ra = tcast.cast(a, name, castmode="actual")
    rw = tcast.cast(w, name, castmode="actual")
    va, vw = tcast.native(ra), tcast.native(rw)
    assert va.data.dtype == torch.float8_e4m3fn and va.scale.shape == (M, 1)
    # row-wise scaled_mm takes float32 scales: (M, 1) for A, (1, N) for B
    sa = va.scale.to(torch.float32)
    sw = vw.scale.to(torch.float32).reshape(1, N)
    out = torch._scaled_mm(va.data, vw.data.t(), scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16)
    _check(out, ra, rw)


@pytest.mark.skipif(
    _capability() < (10, 0), reason="block-scaled MX GEMMs need capability 10.0 or later"
)
def test_block_scaled_mxfp8_scaled_mm_of_native_views_matches_the_decoded_product():
    a, w = _operands(2)
    ra = tcast.cast(a, "mxfp8", castmode="actual", scale_layout="blocked")
    rw = tcast.cast(w, "mxfp8", castmode="actual", scale_layout="blocked")
    va, vw = tcast.native(ra), tcast.native(rw)
    assert va.scale.dtype == torch.float8_e8m0fnu
    out = torch._scaled_mm(
        va.data,
        vw.data.t(),
        scale_a=va.scale.reshape(-1),
        scale_b=vw.scale.reshape(-1),
        out_dtype=torch.bfloat16,
    )
    _check(out, ra, rw)
