"""A sample of the conformance fast tier through the ``triton`` engine, bit for bit vs tcast_ref.

The whole fast tier through the Triton interpreter takes about half an hour on two cores,
so CI runs a covering sample: greedily, every fast-tier case the engine supports that adds
an axis value not yet seen (element format, scale format, zero point, tensor scale, tile,
round mode, scale mode, ``saturate``, ``transpose_scale``, random-bit source) or a new
pair (element format x scale kind, scale kind x round mode, scale kind x scale mode). Each
case is cast on the battery's small inputs in virtual, actual and compress mode and its
upcast checked. The GPU runs the whole tier (``tests/test_conformance.py``).
"""

from __future__ import annotations

import conformance_battery as cb
import pytest

import tcast

ENGINE = tcast.load_engines().engines["triton"]


def _kind(dt) -> str:
    s = dt.sspec
    if s is None:
        return "unscaled"
    if dt.nspec.is_uint:
        return "uint"
    if dt.is_multiscale:
        return "two-level"
    return "exponent" if s.scale.is_exponent else "float"


def _axis_values(case) -> set[tuple]:
    dt = case.dtype
    kind = _kind(dt)
    out = {
        ("element", dt.nspec.code),
        ("element x kind", dt.nspec.code, kind),
        ("tile", cb.tile_code(dt)),
        ("round", case.roundmode),
        ("kind x round", kind, case.roundmode),
        ("random bits", case.rsource),
        ("saturate", case.saturate),
        ("transpose", case.transpose_scale),
    }
    if dt.sspec is not None:
        out |= {("scale", dt.sspec.scale.code), ("kind x scalemode", kind, case.scalemode)}
    if dt.zero is not None:
        out.add(("zero", dt.zero.code))
    if dt.tenscale is not None:
        out.add(("tensor scale", dt.tenscale.code))
    return out


def _supported(case) -> bool:
    return any(ENGINE.supports(case.dtype, case.modes(cm)) for cm in case.castmodes)


def sample_cases() -> list:
    """The covering sample of the fast tier (deterministic: the fast tier's order)."""
    seen: set[tuple] = set()
    picked = []
    for case in cb.fast_cases():
        if not _supported(case):
            continue
        values = _axis_values(case)
        if values - seen:
            picked.append(case)
            seen |= values
    return picked


SAMPLE = sample_cases()


def test_sample_covers_every_axis_value_of_the_supported_fast_tier():
    supported = [c for c in cb.fast_cases() if _supported(c)]
    everything = set().union(*(_axis_values(c) for c in supported))
    covered = set().union(*(_axis_values(c) for c in SAMPLE))
    assert covered == everything
    kinds = {_kind(c.dtype) for c in SAMPLE}
    assert kinds == {"unscaled", "exponent", "float", "two-level", "uint"}


@pytest.mark.parametrize("case", SAMPLE, ids=[c.label for c in SAMPLE])
def test_triton_equals_reference_on_the_battery(case, device):
    adapter = cb.torch_adapter(device)
    oracle = cb.RefOracle()
    castmodes = tuple(cm for cm in case.castmodes if ENGINE.supports(case.dtype, case.modes(cm)))
    problems = []
    for entry in cb.battery(case.dtype):
        want = oracle.expect(case, entry)
        for cm, msg in cb.check_case(ENGINE, adapter, want, case, entry, castmodes):
            problems.append(f"[{cm.value}] {entry.label}: {msg}")
    assert not problems, f"{case.label}: {len(problems)} differences\n" + "\n".join(problems[:12])
