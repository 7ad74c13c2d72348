"""Zeros and subnormals: tcast_torch against tcast_ref and the exact model, as raw bits.

The codes of values below a format's normals cannot be built as
``float32(v) * 2**(mbits - emin)``: that constant is Inf for every format with an 8-bit
exponent (emin = -126, mbits >= 2), so zeros would become NaN and then code 0x80000000
(visible in formats of 17 to 31 bits, ``e8m15_e8m0_t32``; narrower codes drop the bit), and
nonzero subnormal results code 0 (``bfloat16_e4m3fn_t4`` on the float32 subnormal 1e-42).
These tests hold the fast path's actual codes to the virtual cast and to tcast_ref there.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tcast
import tcast_ref
import tcast_torch
from tcast import SpecError
from tcast.cli import main
from tcast_torch._codec import round_even_applies
from tcast_torch._fast import codes_from_values

WIDTHS = range(17, 32)
STYLES = ("", "fn", "fnuz", "uz")


def _wide_float_specs() -> list[tcast.NumberSpec]:
    """Every eXmY of 17 to 31 bits in every style the grammar allows (default bias)."""
    specs = []
    for bits in WIDTHS:
        for e in range(1, 9):
            for style in STYLES:
                try:
                    specs.append(tcast.number(f"e{e}m{bits - 1 - e}{style}"))
                except SpecError:
                    continue  # outside float32, or a style this width cannot have
    return specs


def _u(t: torch.Tensor) -> np.ndarray:
    """Raw bits of a torch tensor as unsigned NumPy integers (int64, for comparisons)."""
    a = t.contiguous()
    a = a.view({1: torch.uint8, 2: torch.int16, 4: torch.int32}[a.element_size()]).numpy()
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.itemsize]).astype(np.int64)


def _raw(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.itemsize]).astype(np.int64)


def _f32(bits: list[int]) -> np.ndarray:
    return np.array(bits, dtype=np.uint32).view(np.float32)


def test_codes_from_values_of_zeros_and_subnormals_in_every_wide_format():
    """Every signed zero, the subnormal codes at both ends, the smallest normals and random
    codes of every 17- to 31-bit float format map back to their codes (values from the
    exact model; only formats whose virtual casts take the fast path use these codes)."""
    rng = np.random.default_rng(17)
    specs = [n for n in _wide_float_specs() if round_even_applies(n)]
    assert {n.bits for n in specs} == set(WIDTHS)
    assert any(n.ebits == 8 for n in specs)
    for n in specs:
        top = (1 << n.mbits) - 1  # the largest subnormal magnitude code
        mags = [
            0,
            1,
            2,
            3,
            top - 1,
            top,
            top + 1,
            top + 2,
            3 << n.mbits,
            *rng.integers(0, n.max_code + 1, 64).tolist(),
        ]
        codes, values = [], []
        for mag in mags:
            for c in (mag, mag | n.sign_bit):
                v = tcast.exact.decode(c, n)
                if v == v and abs(v) != float("inf"):
                    codes.append(c)
                    values.append(v)
        got = codes_from_values(torch.tensor(values, dtype=torch.float32), n)
        want = np.array(codes, dtype=np.int64)
        np.testing.assert_array_equal(
            got.numpy().astype(np.int64) & 0xFFFFFFFF, want, err_msg=n.code
        )


def _wide_inputs() -> np.ndarray:
    """Four blocks of 32: signed zeros and float32 subnormals; zeros only; random values of
    every magnitude with zeros; NaN and Inf among ordinary values."""
    rng = np.random.default_rng(31)
    x = np.empty((4, 32), np.float32)
    sub = rng.integers(1, 1 << 23, 16).astype(np.uint32)
    x[0, :16] = _f32(sub.tolist())
    x[0, 16:24] = _f32([0x80000000 | int(s) for s in sub[:8]])
    x[0, 24:] = _f32([0, 0x80000000, 1, 0x80000001, 0x7FFFFF, 0x807FFFFF, 0x800000, 0x80800000])
    x[1] = 0.0
    x[1, 1::3] = -0.0
    x[2] = rng.standard_normal(32) * np.exp2(rng.integers(-140, 60, 32))
    x[2, ::5] = 0.0
    x[2, 1::7] = -0.0
    x[3] = rng.standard_normal(32)
    x[3, 3], x[3, 9], x[3, 20] = np.nan, np.inf, -np.inf
    return x


def _wide_datatypes() -> list[str]:
    """For every width: 8-, 5- and 3-bit exponents (an fnuz and an fn style among them),
    unscaled, under e8m0 blocks of 32 and under e4m3fn blocks of 4; ints (scaled only)."""
    names = []
    for bits in WIDTHS:
        small, mid = max(3, bits - 24), max(5, bits - 24)  # at most 23 mantissa bits
        for elem in (
            f"e8m{bits - 9}",
            f"e{mid}m{bits - 1 - mid}fnuz",
            f"e{small}m{bits - 1 - small}fn",
        ):
            names += [elem, f"{elem}_e8m0_t32", f"{elem}_e4m3fn_t4"]
        names += [f"int{bits}_e8m0_t32", f"int{bits}_e4m3fn_t4"]
    return [*names, "e8m22_e8m0_t4"]


@pytest.mark.parametrize("name", _wide_datatypes())
def test_wide_formats_match_the_reference_and_the_exact_model(name):
    """Virtual and actual casts of 17- to 31-bit elements: codes, scales, virtual values and
    the upcast, as raw bits, under round to nearest even (the fast path of scaled floats)
    and truncation (the general path)."""
    x = _wide_inputs()
    xt = torch.from_numpy(x.copy())
    for mode in ("even", "trunc"):
        where = f"{name} {mode}"
        v_t = tcast_torch.cast(xt, name, roundmode=mode)
        a_t = tcast_torch.cast(xt, name, castmode="actual", roundmode=mode)
        v_r = tcast_ref.cast(x, name, roundmode=mode)
        a_r = tcast_ref.cast(x, name, castmode="actual", roundmode=mode)
        ex = tcast.exact.cast_array(x.ravel().tolist(), x.shape, name, roundmode=mode)
        np.testing.assert_array_equal(_u(a_t.data), _raw(a_r.data), err_msg=f"codes {where}")
        np.testing.assert_array_equal(_u(a_t.data).ravel(), ex.codes, err_msg=f"exact {where}")
        np.testing.assert_array_equal(_u(v_t), _raw(v_r), err_msg=f"virtual {where}")
        np.testing.assert_array_equal(
            _u(tcast_torch.upcast(a_t)), _u(v_t), err_msg=f"upcast {where}"
        )
        if a_r.scale is not None:
            np.testing.assert_array_equal(_u(a_t.scale), _raw(a_r.scale), err_msg=where)
            np.testing.assert_array_equal(_u(a_t.scale).ravel(), ex.scale, err_msg=where)


def test_golden_set_of_wide_elements_verifies_on_the_torch_engine(tmp_path, capsys):
    """``tcast golden e8m15_e8m0_t32`` then ``tcast verify --engine torch``: every word
    matches. ``e8m22_e8m0_t4`` is in the test above instead (its golden set takes half a
    minute to make)."""
    name = "e8m15_e8m0_t32"
    out = tmp_path / name
    assert main(["golden", name, "--out", str(out), "--quiet"]) == 0
    assert main(["verify", str(out), "--engine", "torch"]) == 0, capsys.readouterr().out


# -------------------------------------------------------------- float32 subnormal inputs

SUBNORMAL_ELEMENTS = [
    "e4m3fn",
    "e5m2",
    "e2m1f",
    "e3m2f",
    "e4m3fnuz",
    "bfloat16",
    "e8m7",
    "e8m22",
    "float16",
    "int8",
]
FLOAT_SCALES = [
    "e4m3fn",
    "e5m2",
    "bfloat16",
    "float16",
    "float32",
    "e4m3fn_float32",
    "e5m2_float16",
]
TWO_LEVEL = ["nvfp4", "e4m3fn_e4m3fn_float32_t16", "bfloat16_e4m3fn_float32_t4"]


def _subnormal_inputs() -> np.ndarray:
    """Blocks of 8: random float32 subnormals of both signs (all-subnormal blocks), the
    subnormal 1e-42 alone and with a zero, the smallest and largest subnormals, subnormals
    beside normals of every size, and a block of 2**-126 and its neighbours."""
    rng = np.random.default_rng(42)
    sub = rng.integers(1, 1 << 23, 64).astype(np.uint32)
    sub[::3] |= np.uint32(0x80000000)
    x = np.empty((16, 8), np.float32)
    x[:8] = _f32(sub.tolist()).reshape(8, 8)
    x[8] = np.float32(1e-42)
    x[9] = np.float32(-1e-42)
    x[9, 0] = 0.0
    x[10] = _f32([1, 0x80000001, 2, 0x7FFFFF, 0x807FFFFF, 0x400000, 0, 0x80000000])
    x[11, ::2] = _f32(rng.integers(1, 1 << 23, 4).astype(np.uint32).tolist())
    x[11, 1::2] = rng.standard_normal(4) * np.exp2(rng.integers(-126, 20, 4))
    x[12] = _f32([0x800000, 0x800001, 0x7FFFFF, 0x80800000, 1, 0x1000000, 0x7FFFFE, 0x3])
    x[13] = rng.standard_normal(8) * np.float32(2.0**-120)
    x[14, :4] = _f32(rng.integers(1, 1 << 10, 4).astype(np.uint32).tolist())  # tiny ones
    x[14, 4:] = np.float32(2.0**-100)
    x[15] = np.float32(1e-42)
    x[15, 7] = np.float32(3.0)
    return x


def _subnormal_datatypes() -> list[str]:
    return [f"{e}_{s}_t8" for e in SUBNORMAL_ELEMENTS for s in FLOAT_SCALES] + TWO_LEVEL


@pytest.mark.parametrize("name", _subnormal_datatypes())
def test_float32_subnormal_inputs_under_float_scales_match_the_reference(name):
    """Codes, scales and tensor scale equal tcast_ref's, the virtual cast equals tcast_ref's,
    and the upcast of the actual codes equals the virtual cast, in every round mode."""
    x = _subnormal_inputs()
    xt = torch.from_numpy(x.copy())
    for mode in ("even", "away", "trunc", "stochastic"):
        kw = {"roundmode": mode, "seed": 9 if mode == "stochastic" else None}
        where = f"{name} {mode}"
        v_t = tcast_torch.cast(xt, name, **kw)
        a_t = tcast_torch.cast(xt, name, castmode="actual", **kw)
        v_r = tcast_ref.cast(x, name, **kw)
        a_r = tcast_ref.cast(x, name, castmode="actual", **kw)
        np.testing.assert_array_equal(_u(a_t.data), _raw(a_r.data), err_msg=f"codes {where}")
        np.testing.assert_array_equal(_u(a_t.scale), _raw(a_r.scale), err_msg=f"scale {where}")
        if a_r.tenscale is not None:
            assert int(_u(a_t.tenscale)) == int(a_r.tenscale), where
        np.testing.assert_array_equal(_u(v_t), _raw(v_r), err_msg=f"virtual {where}")
        np.testing.assert_array_equal(
            _u(tcast_torch.upcast(a_t)), _u(v_t), err_msg=f"upcast {where}"
        )


@pytest.mark.parametrize("name", ["bfloat16_e4m3fn_t4", "e8m7_e4m3fn_t4", "e8m22_e4m3fn_t2"])
def test_subnormal_input_gets_the_smallest_code_not_zero(name):
    """1e-42 under a float block scale: the smallest nonzero code, from the exact model."""
    x = np.full((2, 4), 1e-42, np.float32)
    x[1, 1] = -1e-42
    a_t = tcast_torch.cast(torch.from_numpy(x.copy()), name, castmode="actual")
    ex = tcast.exact.cast_array(x.ravel().tolist(), x.shape, name)
    assert min(c & ~tcast.datatype(name).nspec.sign_bit for c in ex.codes) > 0
    np.testing.assert_array_equal(_u(a_t.data).ravel(), ex.codes)
    np.testing.assert_array_equal(
        _u(tcast_torch.upcast(a_t)), _u(tcast_torch.cast(torch.from_numpy(x.copy()), name))
    )


@pytest.mark.filterwarnings("ignore:.*torch.jit.*deprecated:DeprecationWarning")
def test_compiled_fast_path_codes_of_zeros_and_subnormals_match_the_reference():
    """The compiled kernel (``compile=True``; Inductor on the CPU) runs the same fast path:
    a 23-bit format with an 8-bit exponent, zeros and float32 subnormals, a float scale."""
    x = _subnormal_inputs()
    x[0] = 0.0
    x[1, ::2] = -0.0
    name = "e8m15_e4m3fn_t8"
    torch._dynamo.reset()
    a_t = tcast_torch.cast(torch.from_numpy(x.copy()), name, castmode="actual", compile=True)
    a_r = tcast_ref.cast(x, name, castmode="actual")
    np.testing.assert_array_equal(_u(a_t.data), _raw(a_r.data))
    np.testing.assert_array_equal(_u(a_t.scale), _raw(a_r.scale))
    np.testing.assert_array_equal(_u(tcast_torch.upcast(a_t)), _raw(tcast_ref.cast(x, name)))


_DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.filterwarnings("ignore:.*torch.jit.*deprecated:DeprecationWarning")
@pytest.mark.parametrize("device", _DEVICES)
def test_compiled_two_level_scale_of_a_subnormal_tile_keeps_the_float32_rounding(device):
    """fl32(fl32(amax / M) / t) rounds amax / M to float32 first (SEMANTICS §5.6): a float32
    subnormal there rounds coarsely (1024 * 2^-149 / 240 -> 4 * 2^-149). Inductor on CUDA
    drops that rounding unless kept (the bfloat16 tile scale comes out 0x3509, not 0x3500); on
    a CUDA machine this runs there too."""
    x = np.full((2, 16), 1024 * 2.0**-149, np.float32)
    x[:, 1::3] *= -1
    name = "e4m3b8fnuz_bfloat16_float32_t16"
    torch._dynamo.reset()
    got = tcast_torch.cast(torch.from_numpy(x).to(device), name, castmode="actual", compile=True)
    want = tcast_ref.cast(x, name, castmode="actual")
    np.testing.assert_array_equal(_u(got.scale.cpu()), _raw(want.scale))
    np.testing.assert_array_equal(_u(got.data.cpu()), _raw(want.data))
    np.testing.assert_array_equal(_u(got.tenscale.cpu()), _raw(want.tenscale))
