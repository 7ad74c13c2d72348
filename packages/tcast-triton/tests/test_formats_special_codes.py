"""The format tuples carry the kit's special codes (tcast.kit.special_codes), no kernel run.

The kernels' results for these codes are checked against tcast_ref elsewhere (every code of
each style decoded in test_upcast_kernel.py, unscaled encodes in test_interpreter_paths.py);
here: the tuple's fields are the record's, and codes the kernels cannot select are refused.
"""

from __future__ import annotations

import dataclasses
import importlib

import pytest

import tcast
from tcast import RoundMode
from tcast.kit import special_codes

codec = pytest.importorskip("tcast_triton._codec")
formats = importlib.import_module("tcast_triton._formats")

SPECS = ["e5m2", "e4m3fn", "e4m3fnuz", "binary8p3", "e2m1f", "e8m0", "int8", "uint4"]


def _none(v: int | None) -> int:
    return -1 if v is None else v


@pytest.mark.parametrize("code", SPECS)
def test_format_tuples_hold_the_kits_special_codes(code):
    n = tcast.number(code)
    for mode in RoundMode:
        for saturate in (True, False):
            f = formats.fmt(n, mode, saturate, hardware=False)
            sc = special_codes(n, mode, saturate)
            assert f[codec.F_OVERC] == sc.overflow[0] and f[codec.F_INFC] == sc.inf[0]
            assert f[codec.F_OVERS] == sc.takes_sign(sc.overflow)
            assert f[codec.F_INFS] == sc.takes_sign(sc.inf)
            assert f[codec.F_NANC] == (sc.nan[0] if n.has_nan else -1)
            assert f[codec.F_NANS] == sc.takes_sign(sc.nan)
            assert f[codec.F_DINF] == _none(sc.inf_magnitude)
            assert f[codec.F_DNAN] == _none(sc.nan_magnitude)
            assert f[codec.F_UNAN] == _none(sc.unsigned_nan)


def test_special_codes_the_kernels_cannot_select_are_refused():
    sc = special_codes(tcast.number("e4m3fn"))
    formats._check_selectable(sc)
    with pytest.raises(tcast.UnsupportedError, match="e4m3fn"):
        formats._check_selectable(dataclasses.replace(sc, nan=(127, 1)))
    e = special_codes(tcast.number("e8m0"))
    with pytest.raises(tcast.UnsupportedError, match="e8m0"):
        formats._check_selectable(dataclasses.replace(e, zero=(0, 0)))
