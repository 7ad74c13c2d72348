"""Casts with a transform (SEMANTICS.md §5.11): the exact model's composition and the arguments.

The expected values come from the exact model's pieces on their own (``hadamard_array``, a
cast without transform, ``to_input_dtype``), never from the composition under test.
"""

from __future__ import annotations

import math
import pickle
import random
import struct

import pytest

import tcast
import tcast.exact as ex
from tcast import CastModes, CastResult, Hadamard, SpecError, UnsupportedError
from tcast.kit import EngineBase, arguments_key, normalize_args


def _f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _bits(vs) -> list[int]:
    return [struct.unpack("<I", struct.pack("<f", v))[0] for v in vs]


def _values(n: int, seed: int, input_dtype: str = "float32") -> list[float]:
    """Heavy-tailed values (a few large outliers), exact in ``input_dtype``."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        v = rng.gauss(0, 1) * (rng.choice([1, 1, 1, 40]))
        out.append(ex.to_input_dtype(_f32(v), input_dtype))
    return out


CASES = [
    # datatype, shape, transform, the transformed dimension, input dtype, cast arguments
    ("nvfp4", (2, 32), Hadamard.te_wgrad(), 1, "float32", {}),
    ("mxfp4", (2, 64), Hadamard.seeded(32, 3), 1, "bfloat16", {}),
    ("e4m3fn_e8m0_t32d0", (64, 2), Hadamard.seeded(16, 1), 0, "float16", {}),
    ("mxint8", (1, 64), Hadamard.of(8), 1, "float32", {"roundmode": "stochastic", "seed": 9}),
    ("uint4_float32_float32_t32", (2, 32), Hadamard.seeded(4, 2), 1, "float32", {}),
]


@pytest.mark.parametrize(("code", "shape", "h", "dim", "in_dtype", "kw"), CASES)
def test_codes_are_the_cast_of_the_transformed_values_and_values_transform_back(
    code, shape, h, dim, in_dtype, kw
):
    """§5.11: codes of the float32 transform; virtual = inverse of decoded, in x's dtype."""
    x = _values(math.prod(shape), 5, in_dtype)
    got = ex.cast_array(x, shape, code, input_dtype=in_dtype, transform=h, **kw)
    t = ex.hadamard_array(x, shape, dim, h)
    inner = ex.cast_array(t, shape, code, input_dtype="float32", **kw)
    assert got.codes == inner.codes and got.scale == inner.scale
    assert got.zero == inner.zero and got.tenscale == inner.tenscale
    assert got.input_dtype == in_dtype
    back = ex.hadamard_array(inner.values, shape, dim, h, inverse=True)
    assert _bits(got.values) == _bits(ex.to_input_dtype(v, in_dtype) for v in back)
    # the decode of the stored parts is the virtual cast's values (the result records h)
    assert got.transform == h and inner.transform is None
    assert _bits(ex.upcast(got, code)) == _bits(got.values)
    # a float32-input result's decode, transformed back: the unrounded inverse
    assert _bits(ex.upcast(inner, code, transform=h)) == _bits(back)


@pytest.mark.parametrize(
    ("code", "shape", "why"),
    [
        ("e4m3fn", (2, 32), "is unscaled"),
        ("e4m3fn_float32", (2, 32), "one tensor scale"),
        ("mxfp8_2d", (32, 32), "tiled along 2 dimensions"),
        ("mxfp4", (2, 48), "not a multiple of the transform's group size 32"),
    ],
)
def test_transforms_the_datatype_or_shape_cannot_take_are_refused(code, shape, why):
    h = Hadamard.of(32)
    x = [0.0] * math.prod(shape)
    with pytest.raises(SpecError, match=why):
        ex.cast_array(x, shape, code, transform=h)
    dt, modes, _ = normalize_args(code, transform=h)
    from tcast.kit import make_request

    with pytest.raises(SpecError, match=why):
        make_request(dt, modes, None, None, shape, "float32")


@pytest.mark.parametrize("bad", [16, "te_wgrad", (16, (1,) * 16)])
def test_a_transform_that_is_not_a_hadamard_is_a_spec_error(bad):
    with pytest.raises(SpecError, match=r"tcast\.Hadamard"):
        CastModes.of(transform=bad)
    with pytest.raises(SpecError, match=r"tcast\.Hadamard"):
        normalize_args("mxfp4", transform=bad)


def test_modes_and_argument_keys_tell_transforms_apart():
    a, b = Hadamard.seeded(16, 1), Hadamard.seeded(16, 2)
    assert CastModes.of(transform=a) != CastModes.of(transform=b)
    assert CastModes.of(transform=a) == CastModes.of(transform=Hadamard.seeded(16, 1))
    assert "transform=" in str(CastModes.of(transform=a))
    args = ("mxfp4", "actual", "even", "floor", True, False, "plain")
    assert arguments_key(*args, a) != arguments_key(*args, b) != arguments_key(*args)


def test_results_with_a_transform_pickle_as_plain_data():
    h = Hadamard.seeded(16, 4)
    r = CastResult(None, None, None, None, None, None, tcast.datatype("nvfp4"), (2, 16), "actual")
    r.transform = h
    state = r.__getstate__()
    assert state["transform"] == (16, h.signs)  # no class but CastResult's to load
    again = pickle.loads(pickle.dumps(r))
    assert again.transform == h and "16-point Hadamard" in repr(again)
    # a result pickled before results recorded transforms loads without one
    del state["transform"]
    old = CastResult.__new__(CastResult)
    old.__setstate__(state)
    assert old.transform is None


class _Plain(EngineBase):
    """An engine that does not set ``transforms``."""

    name = "plain"
    array_type = list


def test_engines_without_transforms_do_not_support_them():
    dt = tcast.datatype("mxfp4")
    assert _Plain().supports(dt, CastModes())
    assert not _Plain().supports(dt, CastModes.of(transform=Hadamard.of(32)))


def test_the_front_door_refuses_transforms_for_an_engine_that_does_not_declare_them():
    """An engine of the protocol alone, which would ignore ``modes.transform``."""
    from tcast import api

    class Protocol:
        name = "protocol-only"

    modes = CastModes.of("actual", transform=Hadamard.of(16))
    with pytest.raises(UnsupportedError, match="transforms = True"):
        api._transforms(Protocol(), modes.transform)
    api._transforms(Protocol(), None)  # no transform: nothing to refuse
    r = CastResult(None, None, None, None, None, None, tcast.datatype("nvfp4"), (1, 16), "actual")
    with pytest.raises(UnsupportedError, match="transform"):
        api._honoured(Protocol(), modes, r)  # a result that dropped the transform
