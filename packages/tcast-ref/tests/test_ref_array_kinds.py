"""Which NumPy arrays the reference engine takes: plain arrays (views, read-only, memmaps,
attribute-only subclasses); masked arrays, matrices and subclasses with hooks of their own are
refused with ``UnsupportedError`` naming the conversion (never a mask dropped silently, never
a raw ValueError from a matrix)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tcast
import tcast_ref
from tcast import UnsupportedError

CASTS = [tcast_ref.cast, tcast.cast]  # the engine's function and the front door
UPCASTS = [tcast_ref.upcast, tcast.upcast]


def _x() -> np.ndarray:
    x = np.random.default_rng(3).standard_normal((4, 32)).astype(np.float32)
    x[0, 0] = -0.3
    return x


class _Attributes(np.ndarray):
    """A subclass that only adds a class attribute: NumPy's operations as they are."""

    note = "calibrated"


class _Units(np.ndarray):
    """A subclass carrying state through ``__array_finalize__`` (like units or a mask)."""

    def __array_finalize__(self, obj):
        self.unit = getattr(obj, "unit", "m")


@pytest.mark.parametrize("cast", CASTS)
@pytest.mark.parametrize("castmode", ["virtual", "actual", "compress"])
def test_masked_array_is_refused_instead_of_dropping_its_mask(cast, castmode):
    x = _x()
    m = np.ma.masked_array(x, x > 0)
    with pytest.raises(UnsupportedError, match=r"MaskedArray, whose mask.*np\.ma\.getdata"):
        cast(m, "mxfp8", castmode=castmode)
    with pytest.raises(UnsupportedError, match=r"MaskedArray"):  # even without a mask
        cast(np.ma.masked_array(x), "float8_e4m3fn", castmode=castmode)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("cast", CASTS)
@pytest.mark.parametrize("name", ["float8_e4m3fn", "mxfp8", "e4m3fn_e8m0_t2"])
def test_matrix_is_refused_naming_asarray(cast, name):
    with pytest.raises(UnsupportedError, match=r"numpy\.matrix; cast np\.asarray\(x\)"):
        cast(np.asmatrix(_x()), name)


@pytest.mark.parametrize("cast", CASTS)
def test_subclass_with_hooks_of_its_own_is_refused_naming_them(cast):
    for a in (_x().view(_Units), _x().view(np.recarray)):
        with pytest.raises(
            UnsupportedError,
            match=r"ndarray subclass with its own "
            r"__array_finalize__.*np\.asarray",
        ):
            cast(a, "mxfp8")


def test_masked_rbits_and_result_parts_are_refused():
    x = _x()
    # the right dtype (K = 8 for mxfp8: uint8), refused only for being masked
    rbits = np.random.default_rng(5).integers(0, 2**8, x.shape, dtype=np.uint8)
    with pytest.raises(UnsupportedError, match=r"rbits: it is a numpy\.ma\.MaskedArray"):
        tcast_ref.cast(x, "mxfp8", roundmode="stochastic", rbits=np.ma.masked_array(rbits))
    r = tcast_ref.cast(x, "mxfp8", castmode="actual")
    bad = dataclasses.replace(r, data=np.ma.masked_array(r.data, r.data > 100))
    for upcast in UPCASTS:
        with pytest.raises(UnsupportedError, match=r"CastResult\.data: it is a numpy\.ma"):
            upcast(bad)


@pytest.mark.parametrize("cast", CASTS)
@pytest.mark.parametrize("name", ["float8_e4m3fn", "mxfp8", "nvfp4"])
def test_plain_arrays_of_every_kind_cast_like_the_array(cast, name, tmp_path):
    """Read-only arrays, non-contiguous views, memmaps and attribute-only subclasses give the
    plain array's bits (virtual and actual), as plain arrays."""
    x = _x()
    ro = x.copy()
    ro.flags.writeable = False
    mm = np.memmap(tmp_path / "x.bin", dtype=np.float32, mode="w+", shape=x.shape)
    mm[:] = x
    view = np.asfortranarray(x)[:, :]
    want_v = tcast_ref.cast(x, name).view(np.uint32)
    want_a = tcast_ref.cast(x, name, castmode="actual")
    for a in (ro, mm, view, x.view(_Attributes)):
        v = cast(a, name)
        assert type(v) is np.ndarray, type(a)
        np.testing.assert_array_equal(v.view(np.uint32), want_v, err_msg=type(a).__name__)
        r = cast(a, name, castmode="actual")
        np.testing.assert_array_equal(r.data, want_a.data, err_msg=type(a).__name__)
    strided = x.T[::2]
    np.testing.assert_array_equal(
        cast(strided, name).view(np.uint32), tcast_ref.cast(strided.copy(), name).view(np.uint32)
    )
