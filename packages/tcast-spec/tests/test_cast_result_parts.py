"""CastResult.check_parts: the structural checks every engine's upcast shares."""

from __future__ import annotations

import pytest

import tcast
from tcast import CastMode, CastResult, SpecError


class Arr:
    """A stand-in array: only a shape (check_parts needs nothing else)."""

    def __init__(self, *shape: int) -> None:
        self.shape = shape


def _result(**over) -> CastResult:
    parts = {"data": Arr(4, 64), "scale": Arr(4, 4), "zero": None, "tenscale": Arr(),
             "mask": None, "meta": None, "dtype": tcast.datatype("nvfp4"), "shape": (4, 64),
             "castmode": CastMode.ACTUAL}
    parts.update(over)
    return CastResult(**parts)


def test_a_fitting_result_passes():
    _result().check_parts(Arr, "an Arr")


@pytest.mark.parametrize(("over", "match"), [
    ({"shape": (4, -1)}, "CastResult has dtype"),
    ({"data": [1, 2]}, "data must be an Arr"),
    ({"data": Arr(4, 63)}, "holds 252 codes for shape"),
    ({"scale": None}, "needs scale"),
    ({"zero": Arr(4, 4)}, "must not have zero"),
    ({"tenscale": [3]}, "tenscale must be an Arr"),
    ({"scale": Arr(4, 2)}, r"scale has shape \(4, 2\), expected \(4, 4\)"),
])
def test_each_misfit_is_named(over, match):
    with pytest.raises(SpecError, match=match):
        _result(**over).check_parts(Arr, "an Arr")


def test_compress_data_is_a_stream_of_any_length():
    _result(castmode=CastMode.COMPRESS, data=Arr(7)).check_parts(Arr, "an Arr")
