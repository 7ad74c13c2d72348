"""The Triton upcast kernel decodes results to tcast_ref's bits (SEMANTICS.md §2, §5, §8).

Actual and compress results of a covering set of datatypes (unscaled FP8/FP6/FP4/16-bit,
MX float and int, NVFP4 and a narrow two-level scale, tensor, channel and column scales,
uint with zero points, float and narrow exponent scales, 12-bit codes) with non-finite
blocks, zero blocks and partial tiles: ``tcast_triton.upcast`` equals ``tcast_ref.upcast``
and the virtual cast in float32; every code of an unscaled format and random codes in
every part of a scaled result decode as ``tcast_ref`` decodes them; results of the torch
engine and of ``tcast_ref`` (moved to torch) decode alike; 2-D tiles and sparsity go to
``tcast_torch`` with the same bits.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import tcast
import tcast_ref
import tcast_torch
import tcast_triton
from tcast import CastMode, CastResult
from tcast_triton import _pack as tri_pack
from tcast_triton import _upcast

MODES = ("actual", "compress")
_WIDE = {torch.uint16: (torch.int16, np.uint16), torch.uint32: (torch.int32, np.uint32)}
_NP_WIDE = {np.dtype(np.uint16): torch.uint16, np.dtype(np.uint32): torch.uint32}
PARTS = ("data", "scale", "zero", "tenscale", "mask")

# (datatype, shape): partial tiles wherever the tiled dimension allows
SCALED = [
    ("mxfp8", (3, 37)),
    ("mxfp8", (2, 64)),  # whole tiles: the flat row geometry
    ("mxfp4", (3, 37)),
    ("mxfp6e2", (2, 45)),
    ("mxint8", (3, 37)),
    ("mxint4", (2, 40)),
    ("bfp16", (3, 21)),
    ("nvfp4", (3, 37)),
    ("e2m1f_e4m3fn_e3m2fn_t16", (2, 40)),  # two-level with a 6-bit tensor scale
    ("e4m3fn_float32", (5, 7)),  # tensor scale
    ("int8_float32_t0", (3, 37)),  # channel scale, rows
    ("int8_float32_t0", (2, 1100)),  # a channel longer than a 2-D block: elementwise
    ("int4_float32_t0d0", (6, 5)),  # channel along dim 0: columns
    ("e4m3fn_e8m0_t32d0", (37, 3)),  # column tiles
    ("e2m1f_e8m0_t32d1", (2, 40, 3)),  # tiles along a middle dimension
    ("uint8_float32_uint8_t0", (3, 37)),  # uint with a zero point
    ("uint4_e8m0_int4_t32", (3, 37)),  # uint, exponent scale, int4 zero point
    ("e4m3fn_bfloat16_t32", (3, 37)),  # a float scale
    ("e2m1f_e5m0_t32", (3, 37)),  # a narrow exponent scale
    ("int12_e8m0_t32", (3, 37)),  # 12-bit codes: two bytes each in compress
]
UNSCALED = ["e4m3fn", "e5m2", "e4m3b8fnuz", "e3m2f", "e2m1f", "binary8p3", "bfloat16"]


def _to_numpy(a):
    if not isinstance(a, torch.Tensor):
        return a
    a = a.cpu()
    if a.dtype in _WIDE:
        signed, unsigned = _WIDE[a.dtype]
        return a.view(signed).numpy().view(unsigned)
    return a.numpy()


def _to_torch(a, device):
    if not isinstance(a, np.ndarray):
        return a
    a = a.copy(order="C")
    if a.dtype in _NP_WIDE:
        return (
            torch.from_numpy(a.view(a.dtype.str.replace("u", "i")))
            .view(_NP_WIDE[a.dtype])
            .to(device)
        )
    return torch.from_numpy(a).to(device)


def numpy_result(r: CastResult) -> CastResult:
    return dataclasses.replace(r, **{p: _to_numpy(getattr(r, p)) for p in PARTS})


def torch_result(r: CastResult, device) -> CastResult:
    return dataclasses.replace(r, **{p: _to_torch(getattr(r, p), device) for p in PARTS})


def _bits(a) -> np.ndarray:
    a = _to_numpy(a) if isinstance(a, torch.Tensor) else a
    return np.asarray(a, np.float32).view(np.uint32)


def _inputs(shape: tuple[int, ...], seed: int) -> dict[str, np.ndarray]:
    """Finite data with a zero run and tiny values; the same with NaN and Inf in it."""
    rng = np.random.default_rng(seed)
    x = (rng.normal(0, 4, shape) * 2.0 ** rng.integers(-8, 8, shape)).astype(np.float32)
    flat = x.reshape(-1)
    flat[: min(20, flat.size)] = 0.0  # an all-zero block (most tilings)
    flat[-3:] = np.float32(1e-40)  # float32 subnormals
    specials = x.copy()
    sf = specials.reshape(-1)
    sf[21 % sf.size] = np.nan
    sf[-5] = -np.inf
    return {"finite": x, "specials": specials}


def _check(got, r_torch: CastResult, x: np.ndarray, code: str, label: str) -> None:
    want = _bits(tcast_ref.upcast(numpy_result(r_torch)))
    assert got.dtype == torch.float32 and tuple(got.shape) == tuple(r_torch.shape)
    np.testing.assert_array_equal(_bits(got), want, err_msg=f"{label}: against tcast_ref.upcast")
    virtual = _bits(tcast_ref.cast(x, code))
    if tcast.datatype(code).sspec is None and not tcast.datatype(code).nspec.has_nan:
        keep = ~np.isnan(x)  # §8: an input NaN in a finite-only format upcasts to +0
        virtual, want = virtual[keep], _bits(got)[keep]
    else:
        want = _bits(got)
    np.testing.assert_array_equal(want, virtual, err_msg=f"{label}: against the virtual cast")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("code", "shape"), SCALED, ids=lambda v: str(v))
def test_scaled_results_upcast_to_the_ref_and_virtual_bits(code, shape, mode, device):
    dt = tcast.datatype(code)
    assert _upcast.upcast_supported(dt)
    for kind, x in _inputs(shape, len(code)).items():
        r = tcast_triton.cast(torch.from_numpy(x).to(device), code, castmode=mode)
        got = tcast_triton.upcast(r)
        assert got.device.type == device
        _check(got, r, x, code, f"{code} {shape} {mode} {kind}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("code", UNSCALED)
def test_unscaled_results_upcast_to_the_ref_and_virtual_bits(code, mode, device):
    x = _inputs((3, 37), 5)["specials"]
    r = tcast_triton.cast(torch.from_numpy(x).to(device), code, castmode=mode)
    _check(tcast_triton.upcast(r), r, x, code, f"{code} {mode}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "code", ["e4m3fn", "e2m1f", "e3m2f", "e4m3b11fnuz", "binary8p1", "bfloat16"]
)
def test_every_code_of_an_unscaled_format_decodes_as_ref(code, mode, device):
    bits = tcast.datatype(code).nspec.bits
    codes = torch.arange(1 << bits, dtype=torch.int32)
    shape = (codes.numel(),)
    r = tcast_triton.cast(torch.zeros(shape, device=device), code, castmode=mode)
    data = codes.to(r.data.dtype if mode == "actual" else torch.int32)
    if bits == 16:
        data = codes.to(torch.int16).view(torch.uint16) if mode == "actual" else codes
    if mode == "compress":
        data = tri_pack.pack_codes(data, bits)
    r = dataclasses.replace(r, data=data.to(device))
    want = _bits(tcast_ref.upcast(numpy_result(r)))
    np.testing.assert_array_equal(_bits(tcast_triton.upcast(r)), want)


@pytest.mark.parametrize(
    "code",
    [
        "mxfp8",
        "mxint8",
        "nvfp4",
        "e2m1f_e4m3fn_e3m2fn_t16",
        "e4m3fn_float32",
        "uint4_e8m0_int4_t32",
        "uint8_float32_uint8_t0",
        "e4m3fn_bfloat16_t32",
        "int8_float32_t0",
        "e4m3fn_e8m0_t32d0",
        "int12_e8m0_t32",
    ],
)
def test_random_codes_in_every_part_decode_as_ref(code, device):
    # SEMANTICS §8: every code of its width is valid: NaN, zero, negative and subnormal
    # scales, NaN element codes, the int code -2^(K-1), NaN tensor scales
    shape = (37, 3) if code.endswith("d0") else (3, 37)
    base = tcast_ref.cast(np.ones(shape, np.float32), code, castmode="actual")
    dt = tcast.datatype(code)
    widths = {"data": dt.nspec.bits, "scale": dt.sspec.scale.bits}
    if dt.zero is not None:
        widths["zero"] = dt.zero.bits
    if dt.tenscale is not None:
        widths["tenscale"] = dt.tenscale.bits
    rng = np.random.default_rng(len(code))
    for draw in range(3):
        changes = {}
        for part, bits in widths.items():
            a = getattr(base, part)
            changes[part] = rng.integers(0, 1 << bits, a.shape, dtype=np.uint64).astype(a.dtype)
        if draw == 2:  # a NaN scale code marks a non-finite block
            changes["scale"].reshape(-1)[0] = dt.sspec.scale.nan_code
        rand = dataclasses.replace(base, **changes)
        want = _bits(tcast_ref.upcast(rand))
        for mode in MODES:
            r = rand
            if mode == "compress":
                packed = tcast_ref.pack_codes(rand.data.reshape(-1), dt.nspec.bits)
                r = dataclasses.replace(rand, data=packed, castmode=CastMode.COMPRESS)
            got = tcast_triton.upcast(torch_result(r, device))
            np.testing.assert_array_equal(_bits(got), want, err_msg=f"{code} draw {draw} {mode}")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("code", ["mxfp4", "nvfp4", "uint4_e8m0_int4_t32", "e3m2f"])
def test_results_of_the_torch_engine_and_of_ref_decode_alike(code, mode, device):
    x = _inputs((3, 37), 9)["specials"]
    want = _bits(tcast_ref.upcast(tcast_ref.cast(x, code, castmode=mode)))
    from_torch = tcast_torch.cast(torch.from_numpy(x).to(device), code, castmode=mode)
    assert from_torch.engine == "torch"
    np.testing.assert_array_equal(_bits(tcast_triton.upcast(from_torch)), want)
    from_ref = torch_result(tcast_ref.cast(x, code, castmode=mode), device)
    np.testing.assert_array_equal(_bits(tcast_triton.upcast(from_ref)), want)
    with pytest.raises(tcast.SpecError):  # NumPy parts are not this engine's arrays
        tcast_triton.upcast(tcast_ref.cast(x, code, castmode=mode))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("code", ["mxfp8", "nvfp4"])
def test_16_bit_inputs_upcast_as_ref(code, mode, device):
    x = _inputs((2, 48), 4)["specials"]
    for dtype in (torch.bfloat16, torch.float16):
        xt = torch.from_numpy(x).to(dtype)
        r = tcast_triton.cast(xt.to(device), code, castmode=mode)
        want = _bits(tcast_ref.upcast(numpy_result(r)))
        np.testing.assert_array_equal(_bits(tcast_triton.upcast(r)), want)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("code", ["mxfp8_2d", "e2m1f_e8m0_t32n2m4"])
def test_2d_tiles_and_sparsity_fall_back_to_torch_with_the_ref_bits(code, mode, device):
    x = _inputs((40, 37), 6)["specials"]
    # the kernels do not cast these yet either: the torch engine's result
    r = tcast_torch.cast(torch.from_numpy(x).to(device), code, castmode=mode)
    assert not _upcast.upcast_supported(r.dtype) and _upcast.run_upcast(r) is None
    want = _bits(tcast_ref.upcast(numpy_result(r)))
    np.testing.assert_array_equal(_bits(tcast_triton.upcast(r)), want)


@pytest.mark.parametrize("mode", MODES)
def test_empty_and_zero_d_results(mode, device):
    empty = tcast_triton.cast(torch.zeros(0, 32, device=device), "mxfp4", castmode=mode)
    out = tcast_triton.upcast(empty)
    assert out.shape == (0, 32) and out.dtype == torch.float32
    x = np.array(-2.75, np.float32)
    for code in ("e4m3fn_float32", "e2m1f"):
        r = tcast_triton.cast(torch.from_numpy(x).to(device), code, castmode=mode)
        got = tcast_triton.upcast(r)
        assert got.shape == ()
        np.testing.assert_array_equal(_bits(got), _bits(tcast_ref.upcast(numpy_result(r))))


@pytest.mark.parametrize(
    ("code", "part", "codes"),
    [
        ("e4m3fn_bfloat16_t32", "scale", [0x7F81, 0xFF81, 0x7FC0, 0x7F80, 0x0000, 0x8001]),
        ("e2m1f_e5m2_t32", "scale", [0x7D, 0xFD, 0x7C, 0x7E, 0x00, 0x80]),
        ("nvfp4", "scale", [0x7F, 0xFF, 0x00, 0x80, 0x01, 0x7E]),
        ("uint4_float32_float32_t32", "zero", [0x7FC00000, 0x7F800001, 0xFF800000, 0x7F800000]),
        ("uint4_bfloat16_bfloat16_t32", "zero", [0x7FC0, 0x7F81, 0xFFC0, 0x7F80]),
    ],
)
def test_nan_and_infinite_scale_or_zero_codes_decode_to_the_reference_bits(
    code, part, codes, device
):
    """NaN scale codes other than the format's NaN code, Inf scales, NaN or Inf zero points.

    Their products are NaN (a NaN operand, or 0 * Inf): the bits must be the reference's,
    not the GPU's single NaN pattern.
    """
    tile = tcast.datatype(code).sspec.tiles[0].size
    base = tcast_ref.cast(np.zeros((len(codes), tile), np.float32), code, castmode="actual")
    data = np.asarray(base.data).copy()
    data[:, :4] = [0, 1, 2, 7]  # zero and nonzero element codes in every block
    dt = getattr(base, part)
    new = np.asarray(codes, dtype=np.uint64).astype(dt.dtype).reshape(dt.shape)
    r = dataclasses.replace(base, data=data, **{part: new})
    want = _bits(tcast_ref.upcast(r))
    got = _bits(tcast_triton.upcast(torch_result(r, device)))
    np.testing.assert_array_equal(got, want)
