"""tcast.kit's CastResult checks: what a valid result is, whatever the array library.

The checks run here on stand-in arrays (a shape, a dtype name and values), through a stand-in
of the engine's array operations: the rule needs nothing else from an engine.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tcast
from tcast import CastMode, CastResult, SpecError
from tcast.kit import check_result_codes, check_result_parts, code_dtype_name, result_form


class Arr:
    """A stand-in array: a shape, a dtype name and flat values (zeros by default)."""

    def __init__(self, *shape: int, dtype: str = "uint8", values: list[int] | None = None):
        self.shape = shape
        self.dtype = dtype
        self.values = values if values is not None else [0] * math.prod(shape)


class Ops:
    """The array operations the checks use."""

    def dtype_name(self, a):
        return a.dtype

    def code_max(self, a):
        return max(a.values, default=0)

    def last(self, a):
        return a.values[-1]

    def unpack_mask(self, data, count):
        return [(b >> i) & 1 for b in data.values for i in range(8)][:count]

    def unpack_codes(self, data, bits, count):
        width = 2 if bits <= 16 else 4
        v = data.values
        return Arr(
            count,
            values=[sum(v[k * width + j] << (8 * j) for j in range(width)) for k in range(count)],
        )

    def count(self, keep):
        return sum(1 for k in (keep.values if isinstance(keep, Arr) else keep) if k)


def _nvfp4(**over) -> CastResult:
    parts = {
        "data": Arr(4, 64),
        "scale": Arr(4, 4),
        "zero": None,
        "tenscale": Arr(dtype="uint32"),
        "mask": None,
        "meta": None,
        "dtype": tcast.datatype("nvfp4"),
        "shape": (4, 64),
        "castmode": CastMode.ACTUAL,
    }
    parts.update(over)
    return CastResult(**parts)


def _check(r: CastResult) -> None:
    check_result_codes(r, Ops(), check_result_parts(r, Ops(), Arr, "an Arr"))


def test_a_fitting_result_passes():
    _check(_nvfp4())


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"shape": (4, -1)}, "shape must be a tuple of sizes"),
        ({"dtype": "nvfp4"}, "dtype must be a tcast.DataType"),
        ({"castmode": "actual"}, "castmode must be CastMode.ACTUAL"),
        ({"castmode": CastMode.VIRTUAL}, "castmode must be CastMode.ACTUAL"),
        ({"transpose_scale": 0}, "transpose_scale must be True or False"),
        ({"meta": Arr(1)}, "must not have meta"),
        ({"data": [1, 2]}, "data must be an Arr of e2m1f codes of 4 bits, got list"),
        ({"data": Arr(4, 63)}, r"data has shape \(4, 63\), expected \(4, 64\)"),
        (
            {"data": Arr(4, 64, dtype="float32")},
            r"data must be uint8 \(e2m1f codes of 4 bits\), "
            "not float32",
        ),
        ({"scale": None}, "needs scale"),
        ({"zero": Arr(4, 4)}, "must not have zero"),
        ({"tenscale": [3]}, "tenscale must be an Arr"),
        ({"tenscale": Arr(1, dtype="uint32")}, r"tenscale has shape \(1,\), expected \(\)"),
        ({"scale": Arr(4, 2)}, r"scale has shape \(4, 2\), expected \(4, 4\)"),
        (
            {"data": Arr(4, 64, values=[0x10] + [0] * 255)},
            "data holds code 0x10, but e2m1f codes of 4 bits are at most 0xf",
        ),
    ],
)
def test_each_misfit_is_named(over, match):
    with pytest.raises(SpecError, match=match):
        _check(_nvfp4(**over))


def test_every_code_of_a_full_width_format_is_valid():
    # e4m3fn scale codes fill uint8: 0xFF (NaN) and 0x80 (-0) are codes too (§2 decodes them)
    _check(_nvfp4(scale=Arr(4, 4, values=[0xFF, 0x80] + [0] * 14)))
    assert result_form(tcast.datatype("nvfp4"), (4, 64), CastMode.ACTUAL)["scale"].code_bits is None


def _compress_parts(code: str, shape: tuple[int, ...]) -> dict:
    """Every CastResult field but ``data`` of a compress result with one scale."""
    return {
        "scale": Arr(1, 1),
        "zero": None,
        "tenscale": None,
        "mask": None,
        "meta": None,
        "dtype": tcast.datatype(code),
        "shape": shape,
        "castmode": CastMode.COMPRESS,
    }


def test_compress_data_is_exactly_the_packed_bytes_with_zero_padding():
    base = _compress_parts("mxfp4", (1, 7))
    _check(CastResult(data=Arr(4, values=[0x21, 0x43, 0x65, 0x07]), **base))
    with pytest.raises(SpecError, match=r"data has shape \(5,\), expected \(4,\)"):
        _check(CastResult(data=Arr(5), **base))
    with pytest.raises(SpecError, match=r"ends in byte 0x17, whose bits 4\.\.7"):
        _check(CastResult(data=Arr(4, values=[0, 0, 0, 0x17]), **base))


def test_packed_codes_wider_than_a_byte_are_checked_after_unpacking():
    base = _compress_parts("int12_e8m0_t32", (1, 2))
    _check(CastResult(data=Arr(4, values=[0xFF, 0x0F, 0, 0]), **base))
    with pytest.raises(SpecError, match="holds code 0x1000"):
        _check(CastResult(data=Arr(4, values=[0, 0, 0, 0x10]), **base))


def test_a_packed_mask_keeps_what_the_sparsity_groups_keep():
    dt = tcast.datatype("e2m1f_e8m0_t32n2m4")
    base = {
        "data": Arr(2, values=[0, 0]),
        "scale": Arr(1, 1),
        "zero": None,
        "tenscale": None,
        "meta": None,
        "dtype": dt,
        "shape": (1, 8),
        "castmode": CastMode.COMPRESS,
    }
    _check(CastResult(mask=Arr(1, values=[0b00110011]), **base))
    with pytest.raises(SpecError, match=r"mask keeps 5 of 8 elements; .* keeps 4"):
        _check(CastResult(mask=Arr(1, values=[0b00110111]), **base))


@pytest.mark.parametrize(
    ("bits", "name"),
    [(1, "uint8"), (8, "uint8"), (9, "uint16"), (16, "uint16"), (17, "uint32"), (32, "uint32")],
)
def test_codes_are_held_in_the_narrowest_unsigned_dtype(bits, name):
    assert code_dtype_name(bits) == name


def test_cast_result_repr_names_the_parts_and_never_prints_arrays():
    # a repr names shapes and dtypes: a half-megabyte array must not fill the screen
    data = np.zeros((512, 1024), np.uint8)
    r = CastResult(
        data,
        np.zeros((512, 32), np.uint8),
        None,
        None,
        None,
        None,
        tcast.mxfp8,
        (512, 1024),
        CastMode.ACTUAL,
        "bfloat16",
        engine="ref",
    )
    assert repr(r) == (
        "CastResult(mxfp8, actual, shape (512, 1024), bfloat16, engine ref: "
        "data=uint8[512, 1024], scale=uint8[512, 32])"
    )
