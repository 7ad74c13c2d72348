"""The Triton packing kernels give the bytes of tcast_torch and tcast_ref (SEMANTICS.md §8).

Every width 1..32 at counts that end inside a byte and inside a group of eight, code
streams round-tripped through the kernels, masks, the errors, and compress results of the
engine (whose ``OPS`` packs with these kernels) byte for byte against ``tcast_torch``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tcast
import tcast_ref as ref_pack
import tcast_torch
import tcast_torch as torch_pack
import tcast_triton
from tcast_triton import _pack as tri_pack

COUNTS = (0, 1, 3, 7, 8, 9, 15, 37, 8 * 1024 + 13)  # the last spans two programs


def _codes(bits: int, count: int, seed: int) -> torch.Tensor:
    """``count`` random codes of ``bits`` as int32 patterns, the extremes among them."""
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 1 << bits, count, dtype=np.uint64)
    if count >= 2:
        u[0], u[1] = 0, (1 << bits) - 1
    return torch.from_numpy(u.astype(np.uint32).view(np.int32))


def _ref_bytes(codes: torch.Tensor, bits: int) -> np.ndarray:
    return np.asarray(ref_pack.pack_codes(codes.numpy().view(np.uint32), bits))


@pytest.mark.parametrize("bits", range(1, 33))
def test_every_width_packs_to_the_bytes_of_torch_and_ref_and_unpacks_back(bits, device):
    for count in COUNTS:
        codes = _codes(bits, count, bits * 1000 + count).to(device)
        packed = tri_pack.pack_codes(codes, bits)
        want = torch_pack.pack_codes(codes.cpu(), bits)
        assert packed.dtype == torch.uint8 and packed.device == codes.device
        assert torch.equal(packed.cpu(), want), (bits, count)
        assert np.array_equal(packed.cpu().numpy(), _ref_bytes(codes.cpu(), bits))
        assert packed.numel() == tri_pack.packed_bytes(bits, count)
        if bits < 8 and (count * bits) % 8:  # the unused high bits of the last byte are 0
            assert int(packed[-1]) >> ((count * bits) % 8) == 0
        back = tri_pack.unpack_codes(packed, bits, count)
        assert back.dtype == torch.int32 and torch.equal(back.cpu(), codes.cpu()), (bits, count)


@pytest.mark.parametrize("bits", [3, 4, 6, 12, 24])
def test_codes_of_any_unsigned_dtype_pack_alike(bits, device):
    codes = _codes(bits, 29, bits)
    want = torch_pack.pack_codes(codes, bits)
    wide = torch.uint8 if bits <= 8 else torch.uint16 if bits <= 16 else torch.uint32
    as_unsigned = codes.to(torch.int64).to(wide) if bits <= 8 else codes.view(torch.int32)
    if bits > 8 and wide == torch.uint16:
        as_unsigned = codes.to(torch.int16).view(torch.uint16)  # values < 2**16 wrap alike
    elif bits > 16:
        as_unsigned = codes.view(torch.uint32)
    got = tri_pack.pack_codes(as_unsigned.to(device).reshape(29, 1), bits)  # any shape: C order
    assert torch.equal(got.cpu(), want)


@settings(max_examples=40, deadline=None)
@given(bits=st.integers(1, 8), count=st.integers(0, 300), seed=st.integers(0, 2**16))
def test_packed_streams_round_trip(bits, count, seed):
    codes = _codes(bits, count, seed)
    packed = tri_pack.pack_codes(codes, bits)
    assert torch.equal(packed, torch_pack.pack_codes(codes, bits))
    assert torch.equal(tri_pack.unpack_codes(packed, bits, count), codes)
    # a stream read for fewer codes gives their prefix
    k = count // 2
    assert torch.equal(tri_pack.unpack_codes(packed, bits, k), codes[:k])


@pytest.mark.parametrize("count", [0, 1, 7, 8, 9, 111])
def test_masks_pack_eight_per_byte_and_unpack_back(count, device):
    mask = torch.from_numpy(np.random.default_rng(count).random(count) < 0.5).to(device)
    packed = tri_pack.pack_mask(mask)
    assert torch.equal(packed.cpu(), torch_pack.pack_mask(mask.cpu()))
    assert np.array_equal(packed.cpu().numpy(), ref_pack.pack_mask(mask.cpu().numpy()))
    back = tri_pack.unpack_mask(packed, count)
    assert back.dtype == torch.bool and torch.equal(back.cpu(), mask.cpu())
    assert torch.equal(tri_pack.OPS.pack_mask(mask.reshape(-1, 1)).cpu(), packed.cpu())


def test_bad_widths_and_short_streams_are_spec_errors(device):
    codes = torch.zeros(9, dtype=torch.int32, device=device)
    for bits in (0, 33):
        with pytest.raises(tcast.SpecError, match=r"not in 1\.\.32"):
            tri_pack.pack_codes(codes, bits)
        with pytest.raises(tcast.SpecError, match=r"not in 1\.\.32"):
            tri_pack.unpack_codes(codes.to(torch.uint8), bits, 1)
    for bits in (3, 8, 12):
        data = tri_pack.pack_codes(codes, bits)[:-1]
        with pytest.raises(tcast.SpecError, match="fewer than 9 codes"):
            tri_pack.unpack_codes(data, bits, 9)


def test_an_unaligned_byte_view_of_wide_codes_unpacks(device):
    codes = _codes(16, 10, 3).to(device)
    packed = tri_pack.pack_codes(codes, 16)
    shifted = torch.cat([packed.new_zeros(1), packed])[1:]  # storage offset 1
    assert torch.equal(tri_pack.unpack_codes(shifted, 16, 10).cpu(), codes.cpu())


@pytest.mark.parametrize(
    "code", ["mxfp4", "e2m3f_e8m0_t32", "e3m2f", "uint4_e8m0_int4_t32", "int12_e8m0_t32"]
)
def test_compress_results_of_the_engine_have_torchs_bytes(code, device):
    x = torch.from_numpy(np.random.default_rng(2).normal(0, 3, (3, 37)).astype(np.float32))
    got = tcast_triton.cast(x.to(device), code, castmode="compress")
    want = tcast_torch.cast(x, code, castmode="compress")
    assert torch.equal(got.data.cpu(), want.data)
    assert torch.equal(tcast_triton.upcast(got).cpu(), tcast_torch.upcast(want))


def test_the_engine_uses_the_kernel_ops():
    from tcast_triton import _launch
    from tcast_triton._engine import engine

    assert engine.result_ops is tri_pack.OPS and _launch.OPS is tri_pack.OPS
