"""NaN bits of an upcast (SEMANTICS.md §8), the same in every engine and on every processor.

An upcast decodes any code of its width, so its arithmetic can make NaNs a cast never makes:
``0 * Inf`` (a zero element under an Inf float scale, a zero tile scale under an Inf tensor
scale), ``Inf - Inf`` and NaN zero points. The rule: ``0xFFC00000`` where the element code
itself decodes to a negative NaN in a block that is not non-finite, else ``0x7FC00000`` —
never the processor's default NaN (x86 ``0xFFC00000``, CUDA ``0x7FFFFFFF``) nor an operand's
sign. The expected bits below are written from that rule and IEEE 754 arithmetic by hand.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tcast import CastResult

torch = pytest.importorskip("torch")
tcast_ref = pytest.importorskip("tcast_ref")
tcast_torch = pytest.importorskip("tcast_torch")

PNAN, NNAN, PINF, NINF = 0x7FC00000, 0xFFC00000, 0x7F800000, 0xFF800000

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _base(code: str, rows: int) -> CastResult:
    return tcast_ref.cast(np.zeros((rows, 32), np.float32), code, castmode="actual")


def _bits_ref(r: CastResult) -> np.ndarray:
    return np.asarray(tcast_ref.upcast(r)).view(np.uint32)


def _bits_torch(r: CastResult, device: str) -> np.ndarray:
    def move(a):
        if not isinstance(a, np.ndarray):
            return a
        a = a.copy(order="C")
        if a.dtype == np.uint32:
            return torch.from_numpy(a.view(np.int32)).view(torch.uint32).to(device)
        return torch.from_numpy(a).to(device)

    parts = {p: move(getattr(r, p)) for p in ("data", "scale", "zero", "tenscale", "mask")}
    out = tcast_torch.upcast(dataclasses.replace(r, **parts))
    return out.cpu().view(torch.int32).numpy().view(np.uint32)


def _check(r: CastResult, want: dict[tuple[int, int], int], device: str) -> None:
    engines = {"tcast_ref": _bits_ref(r), f"tcast_torch {device}": _bits_torch(r, device)}
    for name, got in engines.items():
        for (i, j), bits in want.items():
            assert got[i, j] == bits, f"{name} ({i}, {j}): {got[i, j]:#010x} != {bits:#010x}"


@pytest.mark.parametrize("device", DEVICES)
def test_float_scale_codes_no_cast_makes_decode_to_the_canonical_nans(device):
    r = _base("e4m3fn_float32_t32", 5)
    data = np.zeros((5, 32), np.uint8)
    data[:, :5] = [0x00, 0x01, 0xFF, 0x7F, 0x80]  # +0, 2^-9, -NaN, +NaN, -0
    scale = np.array([[PINF], [0x3F800000], [NINF], [0xFFC00001], [PNAN]], np.uint32)
    r = dataclasses.replace(r, data=data, scale=scale)
    want = {
        # +Inf scale: 0 * Inf and -0 * Inf are invalid -> +NaN (x86 would give 0xFFC00000)
        (0, 0): PNAN, (0, 1): PINF, (0, 2): NNAN, (0, 3): PNAN, (0, 4): PNAN,
        # scale 1.0: the element's own values; its NaN codes keep their signs
        (1, 0): 0, (1, 1): 0x3B000000, (1, 2): NNAN, (1, 3): PNAN, (1, 4): 0x80000000,
        # -Inf scale
        (2, 0): PNAN, (2, 1): NINF, (2, 2): NNAN, (2, 3): PNAN, (2, 4): PNAN,
        # a negative NaN scale code other than the NaN code: the block is finite, so only
        # the element's own NaN keeps a sign; the scale's sign does not pass
        (3, 0): PNAN, (3, 1): PNAN, (3, 2): NNAN, (3, 3): PNAN, (3, 4): PNAN,
        # the scale format's NaN code: a non-finite block, +NaN throughout (§5.2)
        (4, 0): PNAN, (4, 1): PNAN, (4, 2): PNAN, (4, 3): PNAN, (4, 31): PNAN,
    }  # fmt: skip
    _check(r, want, device)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_and_infinite_zero_points_decode_to_the_canonical_nan(device):
    r = _base("uint4_float32_float32_t32", 3)
    data = np.zeros((3, 32), np.uint8)
    data[:, :2] = [0, 3]
    scale = np.array([[0x3F800000], [0x3F800000], [0]], np.uint32)  # 1.0, 1.0, +0
    zero = np.array([[0xFFC00001], [PINF], [PINF]], np.uint32)  # -NaN, +Inf, +Inf
    r = dataclasses.replace(r, data=data, scale=scale, zero=zero)
    want = {
        (0, 0): PNAN, (0, 1): PNAN,  # q - NaN: the zero point's sign does not pass
        (1, 0): NINF, (1, 1): NINF,  # (q - Inf) * 1 = -Inf, a number
        (2, 0): PNAN, (2, 1): PNAN,  # (q - Inf) * 0 is invalid
    }  # fmt: skip
    _check(r, want, device)


@pytest.mark.parametrize("device", DEVICES)
def test_infinite_tensor_scale_over_zero_tile_scale_decodes_to_the_canonical_nan(device):
    r = _base("nvfp4", 2)
    data = np.zeros((2, 32), np.uint8)
    data[:, :4] = [0x0, 0x1, 0x9, 0x8]  # +0, 0.5, -0.5, -0
    scale = np.array([[0x00, 0x38], [0x38, 0x38]], np.uint8)  # e4m3fn +0 and 1.0 per 16
    r = dataclasses.replace(r, data=data, scale=scale, tenscale=np.array(PINF, np.uint32))
    want = {
        # tensor scale Inf times tile scale 0 is invalid: every element of the tile is +NaN
        (0, 0): PNAN, (0, 1): PNAN, (0, 2): PNAN, (0, 3): PNAN,
        # tile scale 1.0: the multiplier is +Inf; zeros times it are invalid
        (0, 16): PNAN, (1, 0): PNAN, (1, 1): PINF, (1, 2): NINF, (1, 3): PNAN,
    }  # fmt: skip
    _check(r, want, device)


@pytest.mark.parametrize("roundmode", ["even", "zero", "away", "trunc", "stochastic"])
@pytest.mark.parametrize("device", DEVICES)
def test_zero_elements_under_an_overflowed_two_level_multiplier_are_positive_nans(
    roundmode, device
):
    """A cast makes such a NaN itself: with a float16 tile scale at its maximum under a large
    float32 tensor scale, ``fl32(t * s)`` (§5.6) overflows to Inf and every zero element
    decodes to ``0 * Inf``. The virtual result (every round mode, fast paths included), the
    upcast and the exact model all give +NaN there, and virtual equals upcast bit for bit.
    """
    import tcast.exact

    code = "int2_float16_float32_t16"
    big = float(np.finfo(np.float32).max)
    x = np.array([[big, -big] + [0.0] * 14], np.float32)
    seed = 5 if roundmode == "stochastic" else None
    exact = tcast.exact.cast_array(list(x.ravel()), x.shape, code, roundmode=roundmode, seed=seed)
    assert [tcast.exact.bits32(v) for v in exact.values[2:]] == [PNAN] * 14
    tx = torch.from_numpy(x).to(device)
    virtual = {
        "tcast_ref": tcast_ref.cast(x, code, roundmode=roundmode, seed=seed).view(np.uint32),
        f"tcast_torch {device}": tcast_torch.cast(tx, code, roundmode=roundmode, seed=seed)
        .cpu()
        .view(torch.int32)
        .numpy()
        .view(np.uint32),
    }
    r = tcast_ref.cast(x, code, castmode="actual", roundmode=roundmode, seed=seed)
    up = _bits_ref(r)
    for name, got in virtual.items():
        assert got[0, 2:].tolist() == [PNAN] * 14, name
        np.testing.assert_array_equal(got, up, err_msg=f"{name}: virtual != upcast")
    np.testing.assert_array_equal(_bits_torch(r, device), up)
