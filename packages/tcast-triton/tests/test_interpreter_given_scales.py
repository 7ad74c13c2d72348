"""Casts with given scales, zero points and tensor scales (SEMANTICS.md §5.12) by the kernels.

Each kernel path that reads given parts (row tiles, 32-wide row pieces, columns, looping
channels, a tensor scale, two-level scaling, uint zero points, 2-D tiles) against tcast_ref,
bit for bit: codes, scale, zero and tensor-scale codes, and the virtual values. The given
values include ones the scale formats do not represent (rounded by the rule), zeros, a
negative zero point, values past a format's range, and every input has a non-finite block.
"""

from __future__ import annotations

import dataclasses

import ml_dtypes
import numpy as np
import pytest
import torch

import tcast
import tcast_ref
import tcast_triton
from tcast import SpecError, UnsupportedError

ENGINE = tcast.load_engines().engines["triton"]

#: Given scales, cycled over the blocks: unrepresentable in e8m0 (0.3, 6.5, 0.75) and in
#: e4m3fn (0.3), zero, a float32 subnormal, past e4m3fn's range, powers of two.
SCALES = np.array([0.3, 0.0, 1.0, 2.0**-130, 6.5, 1e30, 0.75, 0.125], np.float32)
#: Given zero points: a negative zero (encoded as +0), halves (ties to even), past uint8's
#: and int4's ranges.
ZEROS = np.array([-1.0, 0.0, -0.0, 3.7, 300.0, -5.5, 2.5], np.float32)

# (datatype, input shape, input dtype, parts given, cast keywords, what it reaches)
CASES = [
    ("mxfp8", (3, 70), "float32", ("scale",), {}, "row tiles, a partial last tile"),
    ("mxfp8", (4, 64), "float32", ("scale",), {}, "32-wide row pieces"),
    ("mxfp4", (2, 64), "bfloat16", ("scale",), {}, "row pieces, bfloat16"),
    ("mxint8", (3, 40), "float32", ("scale",), {"roundmode": "away"}, "int elements"),
    ("mxfp4", (2, 64), "float32", ("scale",), {"roundmode": "stochastic", "seed": 3}, "seed"),
    ("int8_float32_t0", (5, 24), "bfloat16", ("scale",), {}, "int8 per-token channels"),
    ("int8_float32_t0d0", (1100, 3), "float32", ("scale",), {}, "a looping column channel"),
    # every part given, tiles of 2048 and more: one read (the middle block finite)
    ("int8_float32_t0", (3, 2100), "bfloat16", ("scale",), {}, "long rows in one read"),
    (
        "int8_e8m0_t0",
        (3, 4096),
        "float32",
        ("scale",),
        {"roundmode": "stochastic", "seed": 5},
        "seeded, one read",
    ),
    ("uint8_float32_uint8_t0", (3, 2100), "float32", ("scale", "zero"), {}, "one read, uint"),
    ("e4m3fn_e8m0_t32d0", (70, 3), "float16", ("scale",), {}, "columns, a partial tile"),
    ("e4m3fn_float32", (5, 7), "float32", ("scale",), {}, "one tensor scale"),
    ("nvfp4", (4, 40), "float32", ("tensor_scale",), {}, "two-level, one pass"),
    ("nvfp4", (4, 40), "bfloat16", ("scale",), {}, "two-level, tile scales given"),
    ("nvfp4", (4, 48), "float32", ("scale", "tensor_scale"), {}, "two-level, both given"),
    ("e2m1f_e4m3fn_float32_t16d0", (40, 3), "float32", ("scale", "tensor_scale"), {}, "columns"),
    ("e2m1f_e8m0_t8n2m4", (2, 16), "float32", ("scale",), {}, "N-of-M sparsity"),
    ("uint8_float32_uint8_t0", (4, 9), "float32", ("zero",), {}, "uint, zero point given"),
    ("uint8_float32_uint8_t0", (4, 9), "float32", ("scale",), {}, "uint, scale given"),
    ("uint4_float32_float32_t32", (2, 64), "float32", ("zero",), {}, "a float zero point"),
    ("uint4_e5m0_int4_t8", (2, 20), "float32", ("scale", "zero"), {}, "uint, exponent scale"),
    ("e4m3fn_e8m0_t8_t16", (20, 36), "float32", ("scale",), {"transpose_scale": True}, "2-D"),
    ("mxfp8", (2, 96), "float32", ("scale",), {"scale_layout": "blocked"}, "blocked scales"),
]
_IDS = [f"{c[0]}-{'+'.join(c[3])}-{c[5]}" for c in CASES]


def _input(shape: tuple[int, ...], in_dtype: str, device: str) -> tuple[np.ndarray, torch.Tensor]:
    """(the reference's input, the engine's): magnitudes over many binades, a NaN, an Inf."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-6, 6, shape))).astype(np.float32)
    x.reshape(-1)[[1, -2]] = (np.nan, -np.inf)  # the first and the last block are non-finite
    xt = torch.from_numpy(x).to(getattr(torch, in_dtype))
    xn = xt.float().numpy()
    if in_dtype != "float32":
        xn = xn.astype(ml_dtypes.bfloat16 if in_dtype == "bfloat16" else np.float16)
    return xn, xt.to(device)


def _given(code: str, shape, parts, kw) -> dict:
    """The given parts of ``parts`` for ``code`` over ``shape`` (NumPy; a number for ``()``)."""
    sshape = tcast.block_layout(shape, tcast.datatype(code), kw.get("transpose_scale", False))
    sshape = sshape.scale_shape
    n = int(np.prod(sshape))
    out: dict = {}
    if "scale" in parts:
        out["scale"] = np.resize(SCALES, n).reshape(sshape)
    if "zero" in parts:
        out["zero"] = np.resize(ZEROS, n).reshape(sshape)
    if "tensor_scale" in parts:
        out["tensor_scale"] = float(np.float32(0.1))  # not a power of two
    return out


def _torch(given: dict, device: str) -> dict:
    return {
        k: torch.from_numpy(v).to(device) if isinstance(v, np.ndarray) else v
        for k, v in given.items()
    }


def _codes(a) -> np.ndarray:
    a = a.cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    return a.astype(np.int64)


def _raw(a) -> np.ndarray:
    """Values as their raw bits (signed integers of their width: NaN payloads compared too)."""
    if isinstance(a, torch.Tensor):
        a = a.cpu()
        return a.view({4: torch.int32, 2: torch.int16}[a.element_size()]).numpy()
    a = np.asarray(a)
    return a.view({4: np.int32, 2: np.int16}[a.itemsize])


@pytest.mark.parametrize(("code", "shape", "in_dtype", "parts", "kw", "what"), CASES, ids=_IDS)
def test_casts_with_given_parts_equal_the_reference(code, shape, in_dtype, parts, kw, what, device):
    xn, xt = _input(shape, in_dtype, device)
    given = _given(code, shape, parts, kw)
    want = tcast_ref.cast(xn, code, castmode="actual", **kw, **given)
    got = tcast_triton.cast(xt, code, castmode="actual", **kw, **_torch(given, device))
    assert got.engine == "triton"
    for part in ("data", "scale", "zero", "tenscale"):
        w, g = getattr(want, part), getattr(got, part)
        assert (w is None) == (g is None), part
        if w is not None:
            np.testing.assert_array_equal(_codes(g), _codes(w), err_msg=f"{what}: {part}")
    if kw.get("scale_layout") is None:
        virtual = tcast_triton.cast(xt, code, **kw, **_torch(given, device))
        want_v = tcast_ref.cast(xn, code, **kw, **given)
        np.testing.assert_array_equal(_raw(virtual), _raw(want_v), err_msg=what)


# every part of the recipe given, tiles of 2048 and more: (datatype, shape, parts, cast mode)
ONE_READ = [
    ("int4_float32_t0", (3, 2100), ("scale",), "compress"),
    # columns over three programs, one of them holding finite and non-finite lanes
    ("int8_float32_t0d0", (2100, 130), ("scale",), "virtual"),
    ("uint8_e8m0_uint8_t0d0", (2100, 70), ("scale", "zero"), "actual"),
    ("e2m1f_e4m3fn_float32_t0", (2, 2100), ("scale", "tensor_scale"), "actual"),
]


@pytest.mark.parametrize(("code", "shape", "parts", "castmode"), ONE_READ)
def test_every_part_given_casts_long_tiles_in_one_read(
    code, shape, parts, castmode, device, monkeypatch
):
    """The plan reads each tile once (``STREAM``: no maxima first; a block holding NaN or
    ±Inf written again), with tcast_ref's bits; with a part left to compute, it does not."""
    from tcast_triton import _launch

    built = []

    def tiled_plan(*a, **k):
        built.append(_launch_tiled_plan(*a, **k))
        return built[-1]

    _launch_tiled_plan = _launch._tiled_plan
    monkeypatch.setattr(_launch, "_PLANS", {})
    monkeypatch.setattr(_launch, "_tiled_plan", tiled_plan)
    xn, xt = _input(shape, "float32", device)
    given = _given(code, shape, parts, {})
    want = tcast_ref.cast(xn, code, castmode=castmode, **given)
    got = tcast_triton.cast(xt, code, castmode=castmode, **_torch(given, device))
    assert [p.kw["STREAM"] for p in built] == [True]
    if castmode == "virtual":
        np.testing.assert_array_equal(_raw(got), _raw(want))
    else:
        for part in ("data", "scale", "zero", "tenscale"):
            w, g = getattr(want, part), getattr(got, part)
            assert (w is None) == (g is None), part
            if w is not None:
                np.testing.assert_array_equal(_codes(g), _codes(w), err_msg=part)
    if len(given) > 1:  # one part fewer: it is computed from the maxima, read first
        built.clear()
        less = dict(list(given.items())[:-1])
        tcast_triton.cast(xt, code, castmode=castmode, **_torch(less, device))
        assert [p.kw["STREAM"] for p in built] == [False]


def test_a_given_scale_is_encoded_by_the_rule_and_a_non_finite_block_gets_the_nan_code(device):
    """e8m0: the smallest power of two not below the value (0.3 -> 2**-1), 0 -> code 0, a
    power of two itself; the block holding NaN gets 0xFF whatever was given."""
    x = torch.ones(4, 32, device=device)
    x[3, 5] = float("nan")
    s = torch.tensor([[0.3], [0.0], [4.0], [4.0]], device=device)
    r = tcast_triton.cast(x, "mxfp8", castmode="actual", scale=s)
    assert r.scale.reshape(-1).tolist() == [126, 0, 129, 255]


def test_a_given_tensor_scale_takes_no_tensor_amax(device):
    """NVFP4 with a given tensor scale: a non-finite block leaves the others alone, and the
    result's tensor scale is the given one's code (float32: its bits)."""
    x = torch.ones(2, 32, device=device)
    x[0, 0] = float("inf")
    r = tcast_triton.cast(x, "nvfp4", castmode="actual", tensor_scale=0.25)
    assert int(r.tenscale) == 0x3E800000
    codes = r.scale.reshape(-1).tolist()
    assert codes[0] == 0x7F and all(c != 0x7F for c in codes[1:])


def test_a_repeated_cast_with_given_parts_reads_each_calls_parts(device):
    """No call object keeps a request's given parts: each call reads its own."""
    x = torch.ones(2, 32, device=device)
    a = tcast_triton.cast(
        x, "mxfp8", castmode="actual", scale=torch.full((2, 1), 1.0, device=device)
    )
    b = tcast_triton.cast(
        x, "mxfp8", castmode="actual", scale=torch.full((2, 1), 2.0, device=device)
    )
    c = tcast_triton.cast(x, "mxfp8", castmode="actual")
    assert a.scale.reshape(-1).tolist() == [127, 127]
    assert b.scale.reshape(-1).tolist() == [128, 128]
    assert c.scale.reshape(-1).tolist() == [119, 119]  # computed: 1 / 2**emax, emax 8


def test_the_front_door_picks_the_triton_engine_for_given_parts(device):
    x = torch.linspace(-3, 3, 64, device=device).reshape(2, 32)
    r = tcast.cast(x, "mxfp8", castmode="actual", scale=torch.full((2, 1), 0.5, device=device))
    assert r.engine == "triton"
    assert r.scale.reshape(-1).tolist() == [126, 126]


@pytest.mark.parametrize("transposed", [False, True])
def test_a_dual_cast_takes_each_results_given_parts(transposed, device):
    dt = tcast.datatype("mxfp8")
    cols = tcast.kit.column_datatype(dt)
    xn, xt = _input((32, 64), "float32", device)
    row = _given("mxfp8", xn.shape, ("scale",), {})
    col = _given(cols.name, xn.shape, ("scale",), {})
    col["scale"] = col["scale"][::-1].copy()
    want = (
        tcast_ref.cast(xn, dt, castmode="actual", **row),
        tcast_ref.cast(xn, cols, castmode="actual", **col),
    )
    cs = torch.from_numpy(col["scale"]).to(device)
    got = tcast_triton.cast_dual(
        xt,
        "mxfp8",
        transposed=transposed,
        row_scale=torch.from_numpy(row["scale"]).to(device),
        column_scale=cs.T if transposed else cs,
    )
    for g, w, t in zip(got, want, (False, transposed), strict=True):
        for part in ("data", "scale"):
            wp = getattr(w, part)
            np.testing.assert_array_equal(_codes(getattr(g, part)), wp.T if t else wp)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"scale": torch.tensor([[1.0], [-1.0]])}, r"scale\[1, 0\] is -1\.0"),
        ({"scale": torch.tensor([[1.0], [float("nan")]])}, r"scale\[1, 0\] is nan"),
        ({"scale": torch.ones(2, 2)}, "scale"),
        ({"scale": torch.ones(2, 1, dtype=torch.float64)}, "scale must be float32"),
        ({"scale": torch.ones(2, 1, device="meta")}, "scale is on meta"),
        ({"zero": torch.zeros(2, 1)}, "no zero point"),
        ({"tensor_scale": 1.0}, "one scale level"),
    ],
    ids=["negative", "nan", "shape", "float64", "device", "zero-of-signed", "tensor-scale"],
)
def test_bad_given_parts_raise_spec_error_naming_the_part(kw, match, device):
    x = torch.ones(2, 32, device=device)
    kw = {
        k: v.to(device) if isinstance(v, torch.Tensor) and not v.is_meta else v
        for k, v in kw.items()
    }
    with pytest.raises(SpecError, match=match):
        tcast_triton.cast(x, "mxfp8", **kw)


def test_given_parts_of_a_dtensor_are_refused(device, monkeypatch):
    """UnsupportedError naming what to do: the torch engine, or no given parts."""
    import tcast_triton._given as given

    x = torch.ones(2, 32, device=device)
    monkeypatch.setattr(given, "is_dtensor", lambda t: t is x)
    with pytest.raises(UnsupportedError, match="engine='torch'"):
        ENGINE.check_given(x, torch.ones(2, 1, device=device), "scale", signed=False)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_inside_any_compiled_graph_a_bad_value_makes_its_block_nan(backend, device):
    """The graph's op does not read given values (SEMANTICS.md §5.12), whichever backend
    runs the graph: backend="eager" calls the op's real implementation."""

    def fn(v, s):
        return tcast_triton.cast(v, "mxfp8", castmode="actual", scale=s).scale

    x = torch.ones(4, 32, device=device)
    bad = torch.tensor([[1.0], [float("nan")], [-2.0], [1.0]], device=device)
    torch._dynamo.reset()
    got = torch.compile(fn, fullgraph=True, backend=backend)(x, bad)
    assert got.reshape(-1).tolist() == [127, 255, 255, 127]
    with pytest.raises(SpecError, match="is nan"):
        fn(x, bad)  # eager: checked


def test_a_compiled_dual_cast_takes_each_results_given_parts(device):
    def fn(v, rs, cs):
        r, c = tcast_triton.cast_dual(v, "mxfp8", castmode="actual", row_scale=rs, column_scale=cs)
        return r.scale, c.scale

    x = torch.randn(64, 64, device=device)
    rs = torch.full((64, 2), 0.5, device=device)
    cs = torch.full((2, 64), 0.25, device=device)
    torch._dynamo.reset()
    got = torch.compile(fn, fullgraph=True, backend="aot_eager")(x, rs, cs)
    want = fn(x, rs, cs)
    assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))
    assert got[0].eq(126).all() and got[1].eq(125).all()


def test_unchecked_unusable_values_make_their_blocks_non_finite(device):
    """Values a check would refuse (a graph input inside torch.compile is not read) give
    their blocks the NaN codes; a tensor scale's, every block and the tensor scale."""
    x = torch.ones(4, 32, device=device)
    modes = tcast.CastModes(castmode=tcast.CastMode.ACTUAL)
    ones = tcast.kit.GivenScales(scale=torch.ones(4, 1, device=device))
    req = ENGINE.request(x, tcast.datatype("mxfp8"), modes, None, None, ones)
    bad = torch.tensor([[1.0], [float("nan")], [-2.0], [float("inf")]], device=device)
    r = ENGINE.cast(x, dataclasses.replace(req, given=tcast.kit.GivenScales(scale=bad)))
    assert r.scale.reshape(-1).tolist() == [127, 255, 255, 255]
    assert r.data[1:].eq(0).all()
    t = tcast.kit.GivenScales(tensor_scale=torch.tensor(1.0, device=device))
    req = ENGINE.request(x, tcast.datatype("nvfp4"), modes, None, None, t)
    nan = tcast.kit.GivenScales(tensor_scale=torch.tensor(float("nan"), device=device))
    r = ENGINE.cast(x, dataclasses.replace(req, given=nan))
    assert int(r.tenscale) == 0x7FC00000 and r.scale.eq(0x7F).all()


def test_a_compiled_cast_takes_given_parts_as_graph_inputs(device):
    """Inside torch.compile the parts are inputs of the op: new values, the same graph, and
    the eager bits (NVFP4 with a given tensor scale: one kernel, no amax pass)."""

    def fn(v, t):
        return tcast_triton.cast(v, "nvfp4", castmode="actual", tensor_scale=t)

    x = torch.randn(4, 64, device=device)
    torch._dynamo.reset()
    f = torch.compile(fn, fullgraph=True, backend="aot_eager")
    for t in (0.5, 3.0):
        with torch._dynamo.config.patch(error_on_recompile=t != 0.5):
            got = f(x, torch.tensor(t, device=device))
        want = fn(x, torch.tensor(t, device=device))
        for part in ("data", "scale", "tenscale"):
            assert torch.equal(getattr(got, part), getattr(want, part)), (t, part)
