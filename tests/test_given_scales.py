"""Casts with given scales, zero points and tensor scales (SEMANTICS.md §5.12): every engine
that takes them gives tcast_ref's bits (tcast_ref is checked against the exact model in
``packages/tcast-ref/tests/test_ref_given_scales.py``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tcast
import tcast_ref
from tcast.engine import load_engine

# (datatype, shape, parts given, cast keywords)
CASES = [
    ("mxfp8", (3, 64), ("scale",), {}),
    ("mxfp4", (2, 40), ("scale",), {"roundmode": "stochastic", "seed": 5}),
    ("mxint8", (2, 32), ("scale",), {"roundmode": "away"}),
    ("e4m3fn_e8m0_t8_t16", (16, 24), ("scale",), {"transpose_scale": True}),
    ("e2m1f_e8m0_t8n2m4", (2, 16), ("scale",), {}),
    ("e3m2f_float32", (5, 7), ("scale",), {}),
    ("nvfp4", (4, 32), ("tensor_scale",), {}),
    ("nvfp4", (4, 32), ("scale", "tensor_scale"), {"roundmode": "stochastic", "seed": 1}),
    ("uint8_float32_uint8_t0", (4, 9), ("zero",), {}),
    ("uint4_e5m0_int4_t8", (2, 16), ("scale", "zero"), {}),
]
ENGINES = ["torch:eager", "torch:compiled"]


def _case(code, shape, parts, kw):
    x = (np.random.default_rng(7).standard_t(3, shape) * 4.0).astype(np.float32)
    x.reshape(-1)[[1, -1]] = (np.nan, -np.inf)
    layout = tcast.block_layout(shape, tcast.datatype(code), kw.get("transpose_scale", False))
    # per-block values unlike the reference's own tests: powers of two times 1.25, cycling
    n = int(np.prod(layout.scale_shape))
    cycle = (np.exp2(np.arange(n) % 7 - 3) * 1.25).astype(np.float32)
    given = {}
    if "scale" in parts:
        given["scale"] = cycle.reshape(layout.scale_shape)
    if "zero" in parts:
        given["zero"] = (np.arange(n) % 5 - 1).astype(np.float32).reshape(layout.scale_shape)
    if "tensor_scale" in parts:
        given["tensor_scale"] = 0.375
    return x, given


def _torch(given: dict) -> dict:
    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in given.items()}


@pytest.mark.parametrize("name", ENGINES)
@pytest.mark.parametrize(("code", "shape", "parts", "kw"), CASES)
def test_engines_with_given_scales_equal_the_reference(name, code, shape, parts, kw):
    x, given = _case(code, shape, parts, kw)
    eng = load_engine(name)
    want = tcast_ref.cast(x, code, castmode="actual", **kw, **given)
    got = tcast.kit.cast_with(
        eng, torch.from_numpy(x), code, castmode="actual", **kw, **_torch(given)
    )
    for part in ("data", "scale", "zero", "tenscale"):
        w, g = getattr(want, part), getattr(got, part)
        assert (w is None) == (g is None), part
        if w is not None:
            np.testing.assert_array_equal(np.asarray(g.numpy(), np.int64), np.asarray(w, np.int64))
    virtual = tcast.kit.cast_with(eng, torch.from_numpy(x), code, **kw, **_torch(given))
    np.testing.assert_array_equal(
        virtual.numpy().view(np.uint32), tcast_ref.cast(x, code, **kw, **given).view(np.uint32)
    )


def test_a_virtual_cast_with_a_given_scale_passes_the_gradient_straight_through():
    x = torch.linspace(-3, 3, 64).reshape(2, 32).requires_grad_()
    y = tcast.cast(x, "mxfp8", scale=torch.full((2, 1), 0.5))
    y.backward(torch.arange(64.0).reshape(2, 32))
    assert torch.equal(x.grad, torch.arange(64.0).reshape(2, 32))


def test_a_compiled_caller_breaks_its_graph_at_a_cast_with_given_scales_and_gets_its_bits():
    x = torch.linspace(-3, 3, 64).reshape(2, 32)
    s = torch.full((2, 1), 0.25)

    def f(x, s):
        return tcast.cast(x * 1.0, "mxfp8", castmode="actual", scale=s).data

    got = torch.compile(f, backend="eager")(x, s)
    assert torch.equal(got, f(x, s))
