"""Repeated two-level casts take zeroed maxima slots, never a used one (GPU only).

A call object of a datatype with an amax pass (NVFP4, uint data) hands each cast a slot of a
zeroed block (``_fastcast.MaximaSlots``) instead of filling a buffer per cast. Casts queued
without synchronizing, past the end of a block, on two streams, must each equal the general
path's cast (``_plain.cast_eager``) bit for bit; the inputs' maxima fall from cast to cast,
so a slot reused without zeroing would keep a larger maximum and change the scales.
"""

from __future__ import annotations

import pytest
import torch

import tcast
import tcast_triton
from tcast_triton import _api, _fastcast
from tcast_triton._engine import engine
from tcast_triton._plain import cast_eager

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="maxima slots serve compiled launches (GPU only)"
)

CASES = [("nvfp4", "actual"), ("uint8_e8m0_int8", "actual")]  # amax pass: 1, 3 maxima


def _inputs(n: int) -> list[torch.Tensor]:
    gen = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(128, 64, device="cuda", generator=gen)
    # falling maxima, each input its own values (and a shift, for the uint pair of maxima)
    return [(x * 2.0 ** (8 - i) + i % 3).to(torch.bfloat16) for i in range(n)]


def _general(x: torch.Tensor, code: str, castmode: str):
    req = engine.request(x, tcast.datatype(code), tcast.CastModes(castmode=castmode), None, None)
    return cast_eager(x, req)


def _same(a, b) -> bool:
    parts = ("data", "scale", "zero", "tenscale")
    pairs = [(getattr(a, p), getattr(b, p)) for p in parts]
    return all((p is None and q is None) or torch.equal(p, q) for p, q in pairs)


def _call_object(x: torch.Tensor, code: str, castmode: str) -> _fastcast.FastCast:
    _api._CALLS.clear()
    for _ in range(2):  # the second call launches through the runners (slots from now on)
        tcast_triton.cast(x, code, castmode=castmode)
    fast = [c for c in _api._CALLS.values() if c]
    assert len(fast) == 1 and fast[0].slots is not None
    return fast[0]


@pytest.mark.parametrize(("code", "castmode"), CASES)
def test_casts_queued_past_a_block_of_slots_equal_the_general_path(code, castmode):
    xs = _inputs(11)
    fast = _call_object(xs[0], code, castmode)
    fast.slots = _fastcast.MaximaSlots(fast.device, count=4)  # three blocks for 11 casts
    torch.cuda.synchronize()
    outs = [tcast_triton.cast(x, code, castmode=castmode) for x in xs]
    torch.cuda.synchronize()
    # slots 0-3 of two blocks, then 0-2 of a third: its counter stands at 3
    (block,) = fast.slots._blocks.values()
    assert next(block[2]) == 3
    for x, out in zip(xs, outs, strict=True):
        assert _same(out, _general(x, code, castmode))


@pytest.mark.parametrize(("code", "castmode"), CASES)
def test_casts_on_two_streams_take_slots_of_their_own_stream(code, castmode):
    xs = _inputs(8)
    fast = _call_object(xs[0], code, castmode)
    fast.slots = _fastcast.MaximaSlots(fast.device, count=3)
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    for s in streams:
        s.wait_stream(torch.cuda.current_stream())
    outs = []
    for i, x in enumerate(xs):
        with torch.cuda.stream(streams[i % 2]):
            outs.append(tcast_triton.cast(x, code, castmode=castmode))
    torch.cuda.synchronize()
    assert len(fast.slots._blocks) == 2
    for x, out in zip(xs, outs, strict=True):
        assert _same(out, _general(x, code, castmode))
