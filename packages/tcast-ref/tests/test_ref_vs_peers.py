"""tcast_ref against independent MX implementations: torchao and gfloat.

* torchao ``to_mx`` (pure torch on the CPU) for MXFP8 e4m3/e5m2, MXFP6 e2m3/e3m2 and MXFP4
  under its FLOOR, CEIL, EVEN and RCEIL scale calculations (our ``floor``, ``ceil``,
  ``option3`` and ``topbinade``): e8m0 scale codes and element codes of a 256 x 1024 tensor,
  bit for bit;
* torchao ``nvfp4_quantize`` with ``per_tensor_amax_to_scale`` against our ``nvfp4`` (the
  tensor scale, the e4m3 tile-scale codes and the element codes; SEMANTICS.md §5.6 is
  defined to be its numerics);
* gfloat's block functions (``compute_scale_amax`` / ``encode_block`` / ``quantize_block``)
  for MXFP8/6/4 and MXINT8 under its floor rule, on float64-converted inputs: scale codes,
  element codes and values.

Inputs are seeded random float32 tensors whose 32-element blocks each have their own
magnitude (2^-100 .. 2^100) and kind: normal, many zeros of both signs, one outlier, float32
subnormals beside normal values, a wide dynamic range, and an amax on a scale-rule boundary.
Every intended difference from a peer is a named test below that shows it and cites
SEMANTICS.md; only those inputs are kept out of the equality tests.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import tcast
import tcast_ref

torch = pytest.importorskip("torch")
mx_tensor = pytest.importorskip("torchao.prototype.mx_formats.mx_tensor")
mx_config = pytest.importorskip("torchao.prototype.mx_formats.config")
mx_constants = pytest.importorskip("torchao.prototype.mx_formats.constants")
nvfp4_tensor = pytest.importorskip("torchao.prototype.mx_formats.nvfp4_tensor")
gblock = pytest.importorskip("gfloat.block")
gformats = pytest.importorskip("gfloat.formats")

SCM = mx_config.ScaleCalculationMode
BLOCK = 32
ROWS, COLS = 256, 1024

# our datatype -> torchao element dtype
TORCHAO_ELEM = {
    "mxfp8": torch.float8_e4m3fn,
    "mxfp8e5": torch.float8_e5m2,
    "mxfp6e2": mx_constants.DTYPE_FP6_E2M3,
    "mxfp6e3": mx_constants.DTYPE_FP6_E3M2,
    "mxfp4": torch.float4_e2m1fn_x2,
}
# torchao scale calculation -> our scale mode
TORCHAO_MODE = {
    SCM.FLOOR: "floor",
    SCM.CEIL: "ceil",
    SCM.EVEN: "option3",  # round amax to the element precision, then floor
    SCM.RCEIL: "topbinade",  # smallest 2^e with amax / 2^e <= max (rceil alias)
}
GFLOAT_FORMAT = {
    "mxfp8": gformats.format_info_mxfp8_e4m3,
    "mxfp8e5": gformats.format_info_mxfp8_e5m2,
    "mxfp6e3": gformats.format_info_mxfp6_e3m2,
    "mxfp6e2": gformats.format_info_mxfp6_e2m3,
    "mxfp4": gformats.format_info_mxfp4_e2m1,
    "mxint8": gformats.format_info_mxint8,
}


# ------------------------------------------------------------------ inputs
def _elem_max(name: str) -> Fraction:
    n = tcast.datatype(name).nspec
    return Fraction(n.maxint, 1 << (n.bits - 2)) if n.is_int else n.max_value


def _floor_log2(v: Fraction) -> int:
    e = v.numerator.bit_length() - v.denominator.bit_length()
    return e if Fraction(2) ** e <= v else e - 1


def random_tensor(seed: int, name: str, rows: int = ROWS, cols: int = COLS) -> np.ndarray:
    """Seeded float32 (rows, cols): each 32-block has its own magnitude and kind; all finite."""
    rng = np.random.default_rng(seed)
    nb = rows * cols // BLOCK
    m = _elem_max(name)
    top = float(m / Fraction(2) ** _floor_log2(m))  # max / 2^emax, in [1, 2)
    mbits = tcast.datatype(name).nspec.mbits
    e0 = rng.integers(-100, 100, nb)[:, None].astype(np.float64)
    scale = np.exp2(e0)
    x = rng.standard_normal((nb, BLOCK)) * scale
    kind = np.arange(nb) % 6
    # 1: many zeros of both signs, plus one clearly non-zero value
    k = kind == 1
    z = rng.random((nb, BLOCK)) < 0.5
    zeros = np.where(rng.random((nb, BLOCK)) < 0.5, 0.0, -0.0)
    x = np.where(k[:, None] & z, zeros, x)
    x[k, 7] = (rng.standard_normal(int(k.sum())) + 2.0) * scale[k, 0]
    # 2: one outlier 2^4 .. 2^20 above the rest
    k = kind == 2
    x[k, 11] *= np.exp2(rng.integers(4, 20, int(k.sum())))
    # 3: float32 subnormals beside normal values
    k = kind == 3
    sub = rng.integers(-(1 << 23), 1 << 23, (nb, BLOCK)) * 2.0**-149
    x = np.where(k[:, None] & (rng.random((nb, BLOCK)) < 0.35), sub, x)
    # 4: wide dynamic range, random signs
    k = kind == 4
    wide = (
        np.where(rng.random((nb, BLOCK)) < 0.5, -1.0, 1.0)
        * np.exp2(rng.uniform(-24, 1, (nb, BLOCK)))
        * scale
    )
    x = np.where(k[:, None], wide, x)
    # 5: amax on a scale-rule boundary, the rest below it
    k = np.flatnonzero(kind == 5)
    j = rng.integers(0, 2 ** (mbits + 1), k.size)
    candidates = np.stack(
        [
            np.ones(k.size),
            np.full(k.size, 1.0 - 2.0**-24),  # largest float32 below a power of two
            np.full(k.size, top),  # exactly max * 2^k
            np.full(k.size, top * (1 + 2.0**-23)),  # just above max * 2^k
            np.full(k.size, (top + 2) / 2),  # the midmax threshold
            1.0 + (j + 0.5) * 2.0**-mbits / 2,  # a tie at the element precision
            np.full(k.size, 2.0 - 2.0**-mbits / 2),  # the option3 tie at the top
        ]
    )
    pick = candidates[(np.arange(k.size) % candidates.shape[0]), np.arange(k.size)]
    x[k] = rng.uniform(-0.5, 0.5, (k.size, BLOCK)) * scale[k]
    x[k, 5] = pick * scale[k, 0]
    x[k] *= np.where(rng.random(k.size) < 0.5, -1.0, 1.0)[:, None]
    out = x.astype(np.float32).reshape(rows, cols)
    assert np.isfinite(out).all()
    return out


_TENSORS: dict[tuple[int, str], np.ndarray] = {}


def _tensor(seed: int, name: str) -> np.ndarray:
    if (seed, name) not in _TENSORS:
        _TENSORS[(seed, name)] = random_tensor(seed, name)
    return _TENSORS[(seed, name)]


def ours(x: np.ndarray, name: str, **kw) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scale codes (rows, blocks), element codes (rows, cols), virtual values) of tcast_ref."""
    res = tcast_ref.cast(x, name, castmode="actual", **kw)
    virt = tcast_ref.cast(x, name, **kw)
    up = tcast_ref.upcast(res)
    assert np.array_equal(up.view(np.uint32), virt.view(np.uint32))  # §8
    return res.scale.astype(np.int64), res.data.astype(np.int64), virt


# ----------------------------------------------------------------- torchao MX
def torchao_mx(x: np.ndarray, name: str, mode) -> tuple[np.ndarray, np.ndarray]:
    """torchao to_mx: (e8m0 scale codes (rows, blocks), element codes), fp4 unpacked."""
    scale, data = mx_tensor.to_mx(
        torch.from_numpy(np.ascontiguousarray(x)), TORCHAO_ELEM[name], BLOCK, scaling_mode=mode
    )
    s = scale.view(torch.uint8).numpy().astype(np.int64).reshape(x.shape[0], -1)
    d = data.view(torch.uint8).numpy().astype(np.int64)
    if name == "mxfp4":  # element 2i in the low nibble of byte i
        d = np.stack([d & 0xF, d >> 4], axis=-1).reshape(x.shape)
    return s, d.reshape(x.shape)


def _ratio_just_above_pow2(amax: float, m: Fraction) -> bool:
    # amax / M in (2^j, 2^j (1 + 2^-16)]: torchao's eager RCEIL takes a float32 log2 of
    # fl32(amax / M), which rounds such a quotient down to the integer j.
    if amax == 0:
        return False
    q = Fraction(amax) / m
    p = Fraction(2) ** _floor_log2(q)
    return p < q <= p * (1 + Fraction(1, 1 << 16))


def _torchao_excluded(x, s_ours, s_ao, name, mode) -> np.ndarray:
    """Blocks outside the equality test; each exclusion has its own named test below."""
    out = (s_ours == 0) | (s_ao == 0)  # test_torchao_scale_code_0_differs
    if mode is SCM.RCEIL:  # test_torchao_rceil_float_log2_differs
        m = _elem_max(name)
        amax = np.abs(x).reshape(x.shape[0], -1, BLOCK).max(axis=-1)
        out |= np.array([_ratio_just_above_pow2(float(a), m) for a in amax.reshape(-1)]).reshape(
            amax.shape
        )
    return out


@pytest.mark.parametrize("mode", list(TORCHAO_MODE), ids=lambda m: m.value)
@pytest.mark.parametrize("name", list(TORCHAO_ELEM))
def test_torchao_to_mx_scale_and_element_codes_equal(name, mode):
    x = _tensor(20251 + list(TORCHAO_ELEM).index(name), name)
    s_ours, c_ours, _ = ours(x, name, scalemode=TORCHAO_MODE[mode])
    s_ao, c_ao = torchao_mx(x, name, mode)
    assert s_ours.shape == s_ao.shape == (ROWS, COLS // BLOCK)
    keep = ~_torchao_excluded(x, s_ours, s_ao, name, mode)
    assert keep.sum() >= 0.97 * keep.size
    c_bad = (c_ours != c_ao).reshape(ROWS, -1, BLOCK).any(axis=-1)
    bad = np.argwhere(keep & ((s_ours != s_ao) | c_bad))
    if bad.size:
        r, b = bad[0]
        sl = slice(b * BLOCK, (b + 1) * BLOCK)
        pytest.fail(
            f"{name} {mode.value}: {len(bad)} blocks differ; block ({r},{b}) "
            f"{x[r, sl].tolist()}: scale {s_ours[r, b]} vs torchao {s_ao[r, b]}; "
            f"codes {c_ours[r, sl].tolist()} vs {c_ao[r, sl].tolist()}"
        )


@pytest.mark.parametrize("mode", list(TORCHAO_MODE), ids=lambda m: m.value)
@pytest.mark.parametrize("name", list(TORCHAO_ELEM))
def test_torchao_all_zero_block_agrees(name, mode):
    # §5.3 step 1 'all-zero block' (scale code 0, signed zeros kept): torchao agrees.
    x = np.zeros((2, BLOCK), np.float32)
    x[1, ::3] = -0.0
    s_ours, c_ours, v = ours(x, name, scalemode=TORCHAO_MODE[mode])
    s_ao, c_ao = torchao_mx(x, name, mode)
    assert (s_ours == 0).all()
    assert np.array_equal(s_ours, s_ao) and np.array_equal(c_ours, c_ao)
    assert np.array_equal(v.view(np.uint32), x.view(np.uint32))


@pytest.mark.parametrize("mode", [SCM.FLOOR, SCM.RCEIL], ids=lambda m: m.value)
@pytest.mark.parametrize("name", list(TORCHAO_ELEM))
def test_torchao_non_finite_block_differs(name, mode):
    # SEMANTICS.md §5.2 'non-finite block' (§11 'torchao MX, non-finite blocks'): NaN or
    # +-Inf in a block -> e8m0 scale 0xFF, element codes 0, every value NaN. torchao keeps a
    # NaN code for the NaN element (its scale is 0xFF too), and for Inf derives a finite scale
    # from Inf arithmetic and saturates the Inf element to +-max.
    base = np.linspace(-1.0, 1.0, BLOCK).astype(np.float32)
    x = np.stack([base, base, base, base])
    x[0, 3] = np.nan
    x[1, 5] = np.inf
    x[2, 7] = -np.inf
    s_ours, c_ours, v = ours(x, name, scalemode=TORCHAO_MODE[mode])
    assert s_ours[:3, 0].tolist() == [0xFF] * 3 and (c_ours[:3] == 0).all()
    assert (v[:3].view(np.uint32) == 0x7FC00000).all()
    s_ao, c_ao = torchao_mx(x, name, mode)
    assert s_ao[0, 0] == 0xFF  # NaN: the scale agrees ...
    assert c_ao[0, 3] != 0  # ... the NaN element's code does not
    assert (s_ao[1:3, 0] != 0xFF).all()  # Inf: a finite scale
    assert c_ao[1, 5] != 0 and c_ao[2, 7] != 0  # the Inf element saturated to +-max
    # the finite block agrees
    assert s_ao[3, 0] == s_ours[3, 0] and np.array_equal(c_ao[3], c_ours[3])


@pytest.mark.parametrize("mode", [SCM.FLOOR, SCM.RCEIL], ids=lambda m: m.value)
def test_torchao_scale_code_0_differs(mode):
    # SEMANTICS.md §5.3 steps 3-4 (§11 'torchao MX, scale code 0'): scale code 0 means
    # X = 2^-127 and x' = fl32(x * 2^127). torchao FLOOR divides by 2^-126 (its clamp to the
    # float32 smallest normal), RCEIL multiplies by 1.0 for code 0.
    x = np.array([[2.0**-119, 2.0**-120, -(2.0**-125), 2.0**-130] + [0.0] * 28], np.float32)
    s_ours, c_ours, v = ours(x, "mxfp8", scalemode=TORCHAO_MODE[mode])
    # amax 2^-119: floor e = -119 - 8 = -127 -> code 0; topbinade: 2^-119 / 2^-127 = 256 <=
    # 448 -> code 0. x * 2^127: 2^8 = 0x78, 2^7 = 0x70, -2^2 = 0xC8, 2^-3 = 0x20 (all exact).
    assert s_ours[0, 0] == 0
    assert c_ours[0, :4].tolist() == [0x78, 0x70, 0xC8, 0x20]
    assert np.array_equal(v[0, :4].view(np.uint32), x[0, :4].view(np.uint32))
    s_ao, c_ao = torchao_mx(x, "mxfp8", mode)
    assert s_ao[0, 0] == 0
    assert c_ao[0, :4].tolist() != c_ours[0, :4].tolist()


@pytest.mark.parametrize("k", [10, 20, 60, -20, -60])
def test_torchao_rceil_float_log2_differs(k):
    # SEMANTICS.md §5.3 rceil = topbinade, exact (§11 'torchao MX RCEIL (eager)'): amax =
    # next float32 above 448 * 2^k -> amax / 2^k > 448 -> e = k + 1, scaled amax 224.00002
    # -> 224 = 0x76. torchao computes ceil(log2(fl32(amax / 448))) with a float32 log2,
    # which rounds k + 1.7e-7 down to k: e = k, and the element saturates to 448 (0x7E).
    a = np.nextafter(np.float32(448 * 2.0**k), np.float32(np.inf))
    x = np.zeros((1, BLOCK), np.float32)
    x[0, 0] = a
    for mode in ("rceil", "topbinade"):
        s_ours, c_ours, _ = ours(x, "mxfp8", scalemode=mode)
        assert (s_ours[0, 0], c_ours[0, 0]) == (k + 1 + 127, 0x76)
    s_ao, c_ao = torchao_mx(x, "mxfp8", SCM.RCEIL)
    assert (s_ao[0, 0], c_ao[0, 0]) == (k + 127, 0x7E)


# ------------------------------------------------------------ torchao NVFP4
def torchao_nvfp4(x: np.ndarray, tensor_amax: np.float32):
    """(tensor scale bits, e4m3 tile-scale codes, e2m1 element codes) from nvfp4_quantize."""
    pts = nvfp4_tensor.per_tensor_amax_to_scale(torch.tensor(tensor_amax, dtype=torch.float32))
    scale, data = nvfp4_tensor.nvfp4_quantize(torch.from_numpy(np.ascontiguousarray(x)), 16, pts)
    s = scale.view(torch.uint8).numpy().astype(np.int64).reshape(x.shape[0], -1)
    d = data.numpy().astype(np.int64)
    t = int(np.float32(pts.item()).view(np.uint32))
    return t, s, np.stack([d & 0xF, d >> 4], axis=-1).reshape(x.shape)


def random_nvfp4_tensor(rng, rows=ROWS, cols=COLS) -> np.ndarray:
    """16-element blocks with their own magnitudes (2^-12..2^12), zeros of both signs,
    float32 subnormals and outliers."""
    e = rng.integers(-12, 12, size=(rows, cols // 16)).repeat(16, axis=1)
    x = rng.standard_normal((rows, cols)) * 2.0**e
    x[rng.random((rows, cols)) < 0.1] = 0.0
    x[rng.random((rows, cols)) < 0.05] = -0.0
    sub = rng.random((rows, cols)) < 0.03
    x[sub] = rng.integers(-(1 << 23), 1 << 23, int(sub.sum())) * 2.0**-149
    out = rng.random((rows, cols)) < 0.002
    x[out] *= 2.0**8
    return x.astype(np.float32)


@pytest.mark.parametrize("seed", [77, 78, 79])
def test_torchao_nvfp4_tensor_tile_and_element_codes_equal(seed):
    # SEMANTICS.md §5.6 is torchao's numerics (tensor amax = the data's amax).
    x = random_nvfp4_tensor(np.random.default_rng(seed))
    tamax = np.float32(np.abs(x).max())
    t_ao, s_ao, c_ao = torchao_nvfp4(x, tamax)
    res = tcast_ref.cast(x, "nvfp4", castmode="actual")
    assert int(res.tenscale) == t_ao
    assert res.scale.shape == s_ao.shape == (ROWS, COLS // 16)
    bad = np.argwhere(res.scale != s_ao)
    assert bad.size == 0, f"{len(bad)} tile scales differ, first at {bad[0]}"
    bad = np.argwhere(res.data != c_ao)
    assert bad.size == 0, f"{len(bad)} element codes differ, first at {bad[0]}"
    assert np.array_equal(
        tcast_ref.upcast(res).view(np.uint32), tcast_ref.cast(x, "nvfp4").view(np.uint32)
    )


def test_torchao_nvfp4_all_zero_tensor_differs():
    # SEMANTICS.md §5.6 (§11 'torchao NVFP4, all-zero tensor'): t and s clamp to their
    # smallest normals (float32 2^-126 = 0x00800000, e4m3fn 2^-6 = 0x08) and r stays finite,
    # so zeros keep their codes 0 / 0x8 and nothing is NaN. torchao divides by a zero
    # per-tensor scale: its tile scale is the e4m3 NaN code.
    x = np.zeros((1, 32), np.float32)
    x[0, 1::2] = -0.0
    res = tcast_ref.cast(x, "nvfp4", castmode="actual")
    assert int(res.tenscale) == 0x00800000
    assert res.scale.tolist() == [[0x08, 0x08]]
    assert res.data.tolist() == [[0, 0x8] * 16]
    assert np.array_equal(tcast_ref.cast(x, "nvfp4").view(np.uint32), x.view(np.uint32))
    _, s_ao, c_ao = torchao_nvfp4(x, np.float32(0.0))
    assert (s_ao & 0x7F == 0x7F).all()  # e4m3fn NaN (either sign)
    assert not np.array_equal(c_ao, res.data)


def test_torchao_nvfp4_tiny_tensor_amax_differs():
    # SEMANTICS.md §5.5 clamp rule / §5.6 step 1 (§11 'torchao NVFP4, tensor amax < 2688 *
    # 2^-126'): t clamps to 2^-126 (0x00800000); torchao keeps the subnormal quotient. For
    # amax = f32(1e-36): ours s = RNE_e4m3(fl32(1e-36/6) / 2^-126) = RNE(14.18) = 14 = 0x56;
    # torchao's tile scale is (1e-36/6) / (1e-36/2688) = 448 = 0x7E. The element codes
    # (1e-36 / (t s) -> 6 = 0x7) agree.
    x = np.full((1, 16), 1e-36, np.float32)
    res = tcast_ref.cast(x, "nvfp4", castmode="actual")
    assert int(res.tenscale) == 0x00800000
    assert res.scale.tolist() == [[0x56]]
    t_ao, s_ao, c_ao = torchao_nvfp4(x, x[0, 0])
    assert t_ao < 0x00800000  # a float32 subnormal
    assert s_ao.tolist() == [[0x7E]]
    assert np.array_equal(c_ao, res.data) and (res.data == 0x7).all()


def test_torchao_nvfp4_nan_tensor_differs():
    # SEMANTICS.md §5.2 and §5.6 step 1: a NaN anywhere makes the tensor amax non-finite:
    # the tensor scale is float32's NaN code, every block is non-finite (tile scale 0x7F,
    # codes 0, values NaN). torchao (given the finite amax of the other values) gives the NaN
    # block a NaN tile scale but element codes from NaN arithmetic, and the other blocks
    # ordinary codes.
    x = random_nvfp4_tensor(np.random.default_rng(5), rows=1, cols=32)
    x[0, 3] = np.nan
    res = tcast_ref.cast(x, "nvfp4", castmode="actual")
    assert int(res.tenscale) == 0x7FC00000
    assert res.scale.tolist() == [[0x7F, 0x7F]] and (res.data == 0).all()
    assert (tcast_ref.cast(x, "nvfp4").view(np.uint32) == 0x7FC00000).all()
    _, s_ao, c_ao = torchao_nvfp4(x, np.float32(np.nanmax(np.abs(x))))
    assert s_ao[0, 0] & 0x7F == 0x7F and (c_ao[0, :16] != 0).any()
    assert s_ao[0, 1] & 0x7F != 0x7F


# ------------------------------------------------------------------- gfloat
GF_ROWS = 16  # 16 x 1024: 512 blocks per format (gfloat is pure Python per element)


def gfloat_block(name: str, block: np.ndarray):
    """gfloat floor rule: (scale code, element codes, values) of one float64 block."""
    fi = GFLOAT_FORMAT[name]
    v = block.astype(np.float64)
    q = gblock.compute_scale_amax(fi.etype.emax, v)
    enc = list(gblock.encode_block(fi, q, v / q))
    vals = gblock.quantize_block(fi, v, gblock.compute_scale_amax)
    return enc[0], enc[1:], np.asarray(vals, np.float64)


def _mxint8_minus_128(block: np.ndarray) -> bool:
    # Elements whose scaled value rounds to -128 (x / 2^e * 64 <= -127.5, e = floor log2
    # amax): gfloat's int8 grid has -2.0 (0x80); ours clamps (§5.4).
    amax = Fraction(float(np.abs(block).max()))
    if amax == 0:
        return False
    e = _floor_log2(amax)
    return any(Fraction(float(x)) / Fraction(2) ** e * 64 <= Fraction(-255, 2) for x in block)


@pytest.mark.parametrize("name", list(GFLOAT_FORMAT))
def test_gfloat_block_scale_codes_and_values_equal(name):
    x = random_tensor(4242 + list(GFLOAT_FORMAT).index(name), name, GF_ROWS, COLS)
    x[0, :BLOCK] = 0.0  # §5.3 all-zero block, both signs: gfloat agrees
    x[0, BLOCK : 2 * BLOCK : 2] = -0.0
    if name == "mxint8":  # blocks whose minimum is -2^e (1 - 2^-8): codes near -128
        x[1, :BLOCK] = np.linspace(-1.0, 1.0, BLOCK) * np.float32(1.9)
    s_ours, c_ours, v_ours = ours(x, name)
    checked = 0
    for r in range(GF_ROWS):
        for b in range(COLS // BLOCK):
            sl = slice(b * BLOCK, (b + 1) * BLOCK)
            blk = x[r, sl]
            if name == "mxint8" and _mxint8_minus_128(blk):
                continue  # test_gfloat_mxint8_minus_128_differs
            s, c, v = gfloat_block(name, blk)
            assert (s_ours[r, b], c_ours[r, sl].tolist()) == (s, c), (r, b, blk.tolist())
            ours_v = v_ours[r, sl].astype(np.float64)
            assert np.array_equal(ours_v.view(np.uint64), v.view(np.uint64)), (r, b)
            checked += 1
    assert checked >= 480


@pytest.mark.parametrize("k", [0, 9, -30])
def test_gfloat_mxint8_minus_128_differs(k):
    # SEMANTICS.md §5.4 (§11 'gfloat MXINT8'): MXINT8 codes stay in +-127; -128 (0x80) is
    # never produced. -511/256 * 2^k: e = k, x' * 64 = -127.75 -> -128 -> clamp -127 = 0x81;
    # 2^k -> 64 = 0x40. gfloat's OCP int8 grid includes -2.0 and encodes 0x80.
    b = np.zeros(BLOCK, np.float32)
    b[0] = -1.99609375 * 2.0**k
    b[1] = 1.0 * 2.0**k
    s_ours, c_ours, v_ours = ours(b[None], "mxint8")
    assert (s_ours[0, 0], c_ours[0, 0], c_ours[0, 1]) == (127 + k, 0x81, 0x40)
    assert v_ours[0, 0] == np.float32(-127 / 64 * 2.0**k)
    s, c, v = gfloat_block("mxint8", b)
    assert (s, c[0], v[0]) == (127 + k, 0x80, -2.0 * 2.0**k)


@pytest.mark.parametrize("k", [5, 20, -20])
def test_gfloat_float32_log2_differs(k):
    # SEMANTICS.md §0 floor_log2 is read from the bits (§11 'gfloat on float32 arrays'): the
    # largest float32 below 2^k has floor_log2 = k - 1 -> mxfp8 code k - 9 + 127 and the
    # element saturates to 448 (0x7E). gfloat's compute_scale_amax takes np.log2 of the block;
    # on a float32 array that rounds to k -> code k - 8 + 127, element 256 (0x78). On float64
    # arrays (the equality test) it agrees.
    b = np.zeros(BLOCK, np.float32)
    b[0] = np.nextafter(np.float32(2.0**k), np.float32(0))
    s_ours, c_ours, _ = ours(b[None], "mxfp8")
    assert (s_ours[0, 0], c_ours[0, 0]) == (k - 9 + 127, 0x7E)
    fi = GFLOAT_FORMAT["mxfp8"]
    q = gblock.compute_scale_amax(fi.etype.emax, b)  # float32 input
    enc = list(gblock.encode_block(fi, q, b / q))
    assert (enc[0], enc[1]) == (k - 8 + 127, 0x78)
    s64, c64, _ = gfloat_block("mxfp8", b)
    assert (s64, c64[0]) == (s_ours[0, 0], c_ours[0, 0])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name", ["mxfp8", "mxfp4", "mxint8"])
def test_gfloat_non_finite_block_differs(name, bad):
    # SEMANTICS.md §5.2 'non-finite block' (§11): scale 0xFF, codes 0, values NaN. gfloat:
    # NaN -> scale 0xFF but a NaN element code (and a ValueError for element formats without
    # NaN: FP4, INT8); Inf -> log2 clipped to 127, scale 0xFE, the Inf element saturated.
    b = np.linspace(-1.0, 1.0, BLOCK).astype(np.float32)
    b[4] = bad
    s_ours, c_ours, v = ours(b[None], name)
    assert s_ours[0, 0] == 0xFF and (c_ours == 0).all()
    assert (v.view(np.uint32) == 0x7FC00000).all()
    if math.isnan(bad) and name != "mxfp8":
        with pytest.raises(ValueError, match="No NaN"):
            gfloat_block(name, b)
        return
    s, c, _ = gfloat_block(name, b)
    assert (s, c[4]) != (0xFF, 0)
