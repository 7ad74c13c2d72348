"""ndarray subclasses that override methods but no NumPy hook cast as the array they hold.

The reference engine takes subclasses without hooks of their own (``_accept``); it must then
compute on the plain array, never call the subclass's ``reshape``, ``__getitem__`` or other
overrides: the raw bits equal those of the plain array for every cast mode, through the front
door, the engine's own functions and ``cast_dual``, for rbits and for CastResult parts too.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tcast
import tcast_ref
from tcast import UnsupportedError

DATATYPES = ["mxfp4", "e4m3fn_e8m0_t32n2m4", "nvfp4", "mxint8_2d", "uint4_Fic"]


class _HostileReshape(np.ndarray):
    """Reshapes into the right shape with the elements reversed."""

    def reshape(self, *shape, **kwargs):
        return np.flip(np.ndarray.reshape(np.asarray(self), *shape, **kwargs))


class _HostileGetitem(np.ndarray):
    """Every index reads twice the value."""

    def __getitem__(self, index):
        return np.ndarray.__getitem__(np.asarray(self), index) * 2


class _HostileEverything(_HostileReshape, _HostileGetitem):
    """Also overrides ``view``, ``astype`` and ``ravel`` (the engine must not call them)."""

    def view(self, *args, **kwargs):
        raise AssertionError("the engine called the subclass's view")

    def astype(self, *args, **kwargs):
        raise AssertionError("the engine called the subclass's astype")

    def ravel(self, *args, **kwargs):
        raise AssertionError("the engine called the subclass's ravel")


SUBCLASSES = [_HostileReshape, _HostileGetitem, _HostileEverything]


def _x(shape=(8, 64)) -> np.ndarray:
    return np.random.default_rng(3).standard_normal(shape).astype(np.float32)


def _as(a: np.ndarray, cls: type) -> np.ndarray:
    return np.ndarray.view(a, cls)


def _raw(out) -> list[bytes]:
    if isinstance(out, tcast.CastResult):
        parts = [getattr(out, p) for p in ("data", "scale", "zero", "tenscale", "mask")]
        return [b"" if p is None else np.ndarray.view(p, np.ndarray).tobytes() for p in parts]
    return [np.ndarray.view(out, np.ndarray).view(np.uint32).tobytes()]


@pytest.mark.parametrize("cls", SUBCLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("castmode", ["virtual", "actual", "compress"])
@pytest.mark.parametrize("dt", DATATYPES)
def test_a_subclass_overriding_methods_casts_as_the_plain_array(cls, castmode, dt):
    x = _x()
    want = _raw(tcast_ref.cast(x, dt, castmode=castmode))
    for cast in (tcast.cast, tcast_ref.cast):
        out = cast(_as(x, cls), dt, castmode=castmode)
        assert _raw(out) == want, cast.__module__
        parts = [out] if castmode == "virtual" else [out.data, out.scale]
        assert all(type(p) is np.ndarray for p in parts)


@pytest.mark.parametrize("cls", SUBCLASSES, ids=lambda c: c.__name__)
def test_subclass_rbits_and_dual_casts_use_the_plain_arrays(cls):
    x = _x((64, 64))
    # mxfp4's elements take K = 8 random bits each (SEMANTICS.md §3.3): uint8
    rbits = np.random.default_rng(4).integers(0, 2**8, x.shape, dtype=np.uint8)
    want = tcast_ref.cast(x, "mxfp4", roundmode="stochastic", rbits=rbits)
    got = tcast.cast(x, "mxfp4", roundmode="stochastic", rbits=_as(rbits, cls))
    assert _raw(got) == _raw(want)
    rows, cols = tcast.cast_dual(_as(x, cls), "mxfp8", transposed=True)
    want_rows, want_cols = tcast_ref.cast_dual(x, "mxfp8", transposed=True)
    assert _raw(rows) == _raw(want_rows) and _raw(cols) == _raw(want_cols)


@pytest.mark.parametrize("cls", SUBCLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("dt", ["mxfp4", "e4m3fn_e8m0_t32n2m4", "nvfp4"])
def test_results_with_subclass_parts_upcast_as_the_plain_parts(cls, dt):
    r = tcast_ref.cast(_x(), dt, castmode="compress")
    want = tcast_ref.upcast(r)
    parts = {p: getattr(r, p) for p in ("data", "scale", "tenscale", "mask")}
    odd = dataclasses.replace(r, **{p: _as(a, cls) for p, a in parts.items() if a is not None})
    for upcast in (tcast.upcast, tcast_ref.upcast):
        assert _raw(upcast(odd)) == _raw(want)


def test_subclasses_with_hooks_are_still_refused():
    x = np.ma.masked_array(_x(), mask=False)
    with pytest.raises(UnsupportedError, match="MaskedArray"):
        tcast.cast(x, "mxfp4")
