"""The torch engine's variants ``torch:eager`` and ``torch:compiled`` (the conformance doors).

Each is an engine of its own, reached only by name (``tcast.cast(..., engine=)``,
``tcast conformance --engine``), with ``compile`` fixed; its results name it, so that
``tcast.upcast`` comes back to it. Judged against tcast_ref, not against the default engine.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import tcast
import tcast_ref
import tcast_torch
from tcast.engine import engine_variants, load_engine
from tcast_torch import _cast


def _x(shape=(8, 64)) -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    return torch.randn(shape, generator=g) * torch.exp2(torch.randint(-6, 6, shape, generator=g))


def _same(got: tcast.CastResult, want: tcast.CastResult) -> None:
    assert np.array_equal(got.data.numpy(), want.data), "codes"
    assert np.array_equal(got.scale.numpy(), want.scale), "scales"


def test_the_registered_engine_offers_eager_and_compiled():
    v = engine_variants(tcast_torch.engine)
    assert sorted(v) == ["compiled", "eager"]
    assert v["eager"].name == "torch:eager" and v["compiled"].name == "torch:compiled"
    assert load_engine("torch:compiled") is v["compiled"]
    assert engine_variants(v["eager"]) == {}  # no variant of a variant
    assert repr(v["compiled"]) == "tcast_torch.engine.variants['compiled']"
    assert isinstance(v["eager"], tcast.Engine)
    assert set(tcast.engines()) >= {"torch"} and "torch:eager" not in tcast.engines()


@pytest.mark.filterwarnings("ignore:.*torch.jit.*deprecated:DeprecationWarning")
@pytest.mark.parametrize("variant", ["eager", "compiled"])
def test_a_variant_casts_the_reference_bits_and_names_itself(variant, monkeypatch):
    calls = []
    real = _cast.call_compiled

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(_cast, "call_compiled", counting)
    x = _x()
    got = tcast.cast(x, "mxfp8", castmode="actual", engine=f"torch:{variant}")
    _same(got, tcast_ref.cast(x.numpy(), "mxfp8", castmode="actual"))
    assert got.engine == f"torch:{variant}"
    assert len(calls) == (variant == "compiled")  # compile=True reached the compiled kernel
    back = tcast.upcast(got)
    want = tcast_ref.upcast(tcast_ref.cast(x.numpy(), "mxfp8", castmode="actual"))
    assert np.array_equal(back.numpy().view(np.uint32), want.view(np.uint32))


def test_the_default_engine_runs_eagerly_on_the_cpu(monkeypatch):
    monkeypatch.setattr(_cast, "call_compiled", lambda *a, **k: pytest.fail("compiled"))
    got = tcast.cast(_x(), "mxfp8", castmode="actual", engine="torch")
    assert got.engine == "torch"
