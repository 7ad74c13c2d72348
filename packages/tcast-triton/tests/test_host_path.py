"""The Triton engine's host-path caches refuse what the engine refuses, on every call.

``tcast_triton.cast`` remembers checked arguments, and the engine its requests and
``supports()`` answers; a remembered request is reused only for a plain tensor of the same
shape and dtype that the engine accepts, so a float64, sparse or differently shaped input
after a good call is checked (and refused or cast) as a first call would be.
"""

from __future__ import annotations

import pytest
import torch

import tcast
import tcast_triton
from tcast_triton._launch import interpreting

DEVICE = "cpu" if interpreting() else "cuda"


def test_a_remembered_request_does_not_skip_the_checks():
    x = torch.linspace(-4, 4, 64, device=DEVICE).reshape(2, 32)
    first = tcast_triton.cast(x, "mxfp8", castmode="actual")
    again = tcast_triton.cast(x, "mxfp8", castmode="actual")
    assert torch.equal(first.data, again.data) and torch.equal(first.scale, again.scale)
    with pytest.raises(tcast.UnsupportedError, match="float64"):
        tcast_triton.cast(x.double(), "mxfp8", castmode="actual")
    with pytest.raises(tcast.UnsupportedError, match="layout"):
        tcast_triton.cast(x.to_sparse(), "mxfp8", castmode="actual")
    wide = tcast_triton.cast(torch.cat([x, x], 1), "mxfp8", castmode="actual")
    assert wide.scale.shape == (2, 2)
    with pytest.raises(tcast.SpecError, match="sideways"):
        tcast_triton.cast(x, "mxfp8", castmode="actual", roundmode="sideways")
    with pytest.raises(tcast.UnsupportedError):
        tcast_triton.cast(x, "mx6", castmode="actual")  # subtiles: refused every time
    with pytest.raises(tcast.UnsupportedError):
        tcast_triton.cast(x, "mx6", castmode="actual")


_LOOKALIKE = """
import warnings
import torch
import tcast, tcast_triton
warnings.simplefilter("error", tcast.NameWarning)
dt = tcast.DataType(tcast.number("e3m2b3"), tcast.scale("e8m0_t16"))  # code: e3m2_e8m0_t16
x = torch.linspace(-4, 4, 64).reshape(2, 32)
f = torch.compile(lambda t: tcast_triton.cast(t, dt), fullgraph=True, backend="eager")
assert torch.equal(f(x), tcast_triton.cast(x, dt))
print("ok")
"""


@pytest.mark.skipif(not interpreting(), reason="a fresh interpreter process on CPU tensors")
def test_a_compiled_cast_of_a_lookalike_datatype_object_does_not_warn():
    """The custom op parses the request's code; a NameWarning is for names a caller typed.

    A fresh process, so that no earlier test has used up the name's one warning.
    """
    import os
    import subprocess
    import sys

    env = dict(os.environ, TRITON_INTERPRET="1")
    out = subprocess.run(
        [sys.executable, "-c", _LOOKALIKE], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
