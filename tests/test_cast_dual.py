"""``tcast.cast_dual`` equals single tcast_ref casts, for every installed engine on the CPU.

Over the conformance space's datatypes with one tile segment along the last dimension
(every one the fast tier casts that ``cast_dual`` takes), one case each, the modes rotated:
cast mode, ``transposed``, scale layout, round mode (stochastic with a seed and with explicit
bits), scale mode, input dtype and shape (partial tiles both ways, a batch dimension). The
expectations come from single ``tcast_ref.cast`` calls (``dual_checks.expected_dual``: with a
seed the second result is the column cast on Philox stream 1), not
from the kit's ``dual_by_casts``. The Triton engine runs the same cases through its
interpreter in ``packages/tcast-triton/tests/test_interpreter_dual.py``.
"""

from __future__ import annotations

import dual_checks as dc
import ml_dtypes
import numpy as np
import pytest

import tcast

DTYPES = dc.dual_datatypes(tcast.conformance_space())


def engine_input(name: str, a):
    """``a`` (input or rbits) as the array the engine takes on the CPU, or None."""
    eng = tcast.load_engines().engines[name]
    if eng.accepts(a):
        return a
    try:
        import torch
    except ImportError:
        return None
    # rbits: uint8 / uint16 NumPy arrays become torch.uint8 / torch.uint16, the same bits
    t = (
        torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        if a.dtype == ml_dtypes.bfloat16
        else torch.from_numpy(a)
    )
    return t if eng.accepts(t) else None


ENGINES = [
    n
    for n in sorted(tcast.load_engines().engines)
    if engine_input(n, np.zeros((2, 2), np.float32)) is not None
]


@pytest.mark.parametrize("engine_name", ENGINES)
@pytest.mark.parametrize("index", range(len(DTYPES)), ids=[dt.code for dt in DTYPES])
def test_cast_dual_equals_single_reference_casts(engine_name, index):
    dt = DTYPES[index]
    x, kw = dc.case(index, dt)
    want = dc.expected_dual(x, dt, **kw)
    args = dict(kw)
    if "rbits" in args:
        args["rbits"] = engine_input(engine_name, args["rbits"])
    got = tcast.cast_dual(engine_input(engine_name, x), dt, engine=engine_name, **args)
    problems = dc.differences(got[0], want[0], "rows") + dc.differences(got[1], want[1], "cols")
    assert not problems, f"{dt.code} {kw}:\n" + "\n".join(problems)
    if kw["castmode"] != "virtual":  # both results decode through the engine's upcast
        for g, w in zip(got, want, strict=True):
            up, ref_up = tcast.upcast(g), tcast.upcast(w, engine="ref")
            assert not dc.differences(up, ref_up, "upcast")


def test_every_dual_datatype_of_the_space_is_cast():
    """The space holds MX, NVFP4, channels, partial-tile lengths and zero-point datatypes."""
    codes = {dt.code for dt in DTYPES}
    for want in ("e4m3fn_e8m0_t32", "e2m1f_e4m3fn_float32_t16", "int8_e8m0_t32"):
        assert want in codes
    assert any(dt.sspec.tiles[0].size == 0 for dt in DTYPES)
    assert any(dt.zero is not None for dt in DTYPES)
    assert len(DTYPES) > 500


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("e4m3fn", "one tile segment along the last dimension"),
        ("mxfp8_2d", "one tile segment along the last dimension"),
        ("e4m3fn_e8m0", "one tile segment along the last dimension"),
        ("e4m3fn_e8m0_t32d0", "one tile segment along the last dimension"),
    ],
)
def test_cast_dual_refuses_datatypes_without_one_last_dimension_tile(code, why):
    x = np.ones((64, 64), np.float32)
    with pytest.raises(tcast.SpecError, match=why):
        tcast.cast_dual(x, code)


def test_cast_dual_refuses_bad_arguments():
    x = np.ones((64, 64), np.float32)
    with pytest.raises(tcast.SpecError, match="rank 2 or more"):
        tcast.cast_dual(np.ones(64, np.float32), "mxfp8")
    with pytest.raises(tcast.SpecError, match="transposed must be True or False"):
        tcast.cast_dual(x, "mxfp8", transposed=1)
    with pytest.raises(tcast.SpecError, match="applies to actual and compress"):
        tcast.cast_dual(x, "mxfp8", castmode="virtual", scale_layout="blocked")
    with pytest.raises(tcast.SpecError, match=r"does not apply to .*channels"):
        tcast.cast_dual(x, "e4m3fn_float32_t0", scale_layout="blocked")
    with pytest.raises(tcast.SpecError, match="scale layout 'swizzled' is not defined"):
        tcast.cast_dual(x, "mxfp8", scale_layout="swizzled")


def test_transposed_second_result_is_the_cast_of_the_transpose():
    """Hand-checkable: row 0 of ``xᵀ``'s codes is column 0 of the column cast's codes."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    rows, cols = tcast.cast_dual(x, "mxfp8")
    _, tcols = tcast.cast_dual(x, "mxfp8", transposed=True)
    assert tcols.shape == (32, 64) and tcols.dtype == tcast.datatype("mxfp8")
    assert cols.scale.shape == (2, 32) and tcols.scale.shape == (32, 2)
    assert np.array_equal(tcols.data, cols.data.T)
    assert np.array_equal(tcols.scale, cols.scale.T)
    assert rows.scale.shape == (64, 1)
