"""Helpers of the Triton engine's tests: inputs, and a case checked against tcast_ref.

Loaded by ``conftest.py`` (the tests import it as ``triton_checks``; importlib import mode
puts no test folder on ``sys.path``).
"""

from __future__ import annotations

import conformance_battery as cb
import ml_dtypes
import numpy as np

import tcast
from tcast import RoundMode, ScaleMode

IN_DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def engine():
    """The installed ``triton`` engine."""
    return tcast.load_engines().engines["triton"]


def entry(shape, in_dtype="float32", *, view=False, seed=0, specials=True, label="path"):
    """Random magnitudes over many binades of ``shape`` (+-0, Inf, NaN, a subnormal sprinkled).

    ``view``: a transposed (non-contiguous) view of an array of the reversed shape.
    """
    rng = np.random.default_rng(seed)
    fill = shape[::-1] if view else shape
    n = int(np.prod(fill))
    x = rng.standard_normal(n) * np.exp2(rng.integers(-12, 12, n))
    if specials and n >= 8:
        idx = rng.choice(n, 6, replace=False)
        x[idx] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40]
    with np.errstate(over="ignore"):
        arr = x.astype(np.float32).astype(IN_DTYPES[in_dtype]).reshape(fill)
    arr = arr.T if view else arr
    rbits = rng.integers(0, 1 << 32, shape, dtype=np.uint64).astype(np.uint32)
    return cb.Entry(label, arr, rbits, 0x5EED_0000_1234 + seed)


def check(
    code,
    case_entry,
    *,
    roundmode="even",
    scalemode="floor",
    saturate=True,
    transpose=False,
    rsource=None,
    device="cpu",
    all_modes=False,
):
    """The triton engine's cast of ``case_entry`` equals tcast_ref's in every cast mode it takes.

    Codes, scales, values and upcasts, bit for bit (``cb.check_case``); ``all_modes``: the
    engine must take virtual, actual and compress.
    """
    eng = engine()
    dt = tcast.datatype(code)
    case = cb.Case(dt, RoundMode(roundmode), ScaleMode(scalemode), saturate, transpose, rsource)
    castmodes = tuple(cm for cm in cb.CAST_MODES if eng.supports(dt, case.modes(cm)))
    if all_modes:
        assert castmodes == tuple(cb.CAST_MODES), f"the triton engine refuses modes of {code}"
    assert castmodes, f"the triton engine supports no cast mode of {code}"
    want = cb.RefOracle().expect(case, case_entry)
    adapter = cb.torch_adapter(device)
    problems = [
        f"[{cm.value}] {msg}"
        for cm, msg in cb.check_case(eng, adapter, want, case, case_entry, castmodes)
    ]
    assert not problems, f"{case.label} on {case_entry.label}:\n" + "\n".join(problems[:12])


def result_bytes(out) -> list:
    """The raw bytes of every tensor of a cast's output, flat (a tuple: each item's in turn).

    A virtual tensor, a CastResult (data, scale, zero, tensor scale, mask, where present) or
    a tuple of them (``cast_dual``).
    """
    import torch

    if isinstance(out, tuple):
        return [b for o in out for b in result_bytes(o)]
    if isinstance(out, torch.Tensor):
        return [out.reshape(-1).contiguous().view(torch.uint8)]
    return [
        p.reshape(-1).contiguous().view(torch.uint8)
        for p in (out.data, out.scale, out.zero, out.tenscale, out.mask)
        if p is not None
    ]


def same_bytes(a, b) -> bool:
    """Whether two cast outputs hold the same tensors, byte for byte (:func:`result_bytes`)."""
    import torch

    pa, pb = result_bytes(a), result_bytes(b)
    return len(pa) == len(pb) and all(torch.equal(p, q) for p, q in zip(pa, pb, strict=True))
