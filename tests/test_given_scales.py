"""Casts with given scales, zero points and tensor scales (SEMANTICS.md §5.12): every engine
that takes them gives tcast_ref's bits (tcast_ref is checked against the exact model in
``packages/tcast-ref/tests/test_ref_given_scales.py``)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

import tcast
import tcast_ref
import tcast_torch
from tcast.engine import load_engine

# (datatype, shape, parts given, cast keywords)
CASES = [
    ("mxfp8", (3, 64), ("scale",), {}),
    ("mxfp4", (2, 40), ("scale",), {"roundmode": "stochastic", "seed": 5}),
    ("mxint8", (2, 32), ("scale",), {"roundmode": "away"}),
    ("e4m3fn_e8m0_t8_t16", (20, 36), ("scale",), {"transpose_scale": True}),  # scales (2, 5)
    ("e4m3fn_e8m0_t32d0", (64, 3), ("scale",), {}),  # down the columns: scales (2, 3)
    ("e4m3fn_e8m0_t8d1", (3, 17, 5), ("scale",), {}),  # a middle dimension, a partial tile
    ("e2m1f_e8m0_t8n2m4", (2, 16), ("scale",), {}),
    ("e3m2f_float32", (5, 7), ("scale",), {}),
    ("nvfp4", (4, 32), ("tensor_scale",), {}),
    ("nvfp4", (4, 32), ("scale", "tensor_scale"), {"roundmode": "stochastic", "seed": 1}),
    ("uint8_float32_uint8_t0", (4, 9), ("zero",), {}),
    ("uint4_e5m0_int4_t8", (2, 16), ("scale", "zero"), {}),
]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
# (engine, device): torch:compiled casts given parts eagerly too (below); Triton on CUDA
ENGINES = [("torch:eager", d) for d in DEVICES] + (
    [("triton", "cuda")] if torch.cuda.is_available() else []
)


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


def _torch(given: dict, device: str = "cpu") -> dict:
    return {
        k: torch.from_numpy(v).to(device) if isinstance(v, np.ndarray) else v
        for k, v in given.items()
    }


@pytest.mark.parametrize(("name", "device"), ENGINES)
@pytest.mark.parametrize(("code", "shape", "parts", "kw"), CASES)
def test_engines_with_given_scales_equal_the_reference(name, code, shape, parts, kw, device):
    x, given = _case(code, shape, parts, kw)
    eng = load_engine(name)
    want = tcast_ref.cast(x, code, castmode="actual", **kw, **given)
    xt = torch.from_numpy(x).to(device)
    got = tcast.kit.cast_with(eng, xt, code, castmode="actual", **kw, **_torch(given, device))
    for part in ("data", "scale", "zero", "tenscale"):
        w, g = getattr(want, part), getattr(got, part)
        assert (w is None) == (g is None), part
        if w is not None:
            got_codes = np.asarray(g.cpu().numpy(), np.int64)
            np.testing.assert_array_equal(got_codes, np.asarray(w, np.int64))
    virtual = tcast.kit.cast_with(eng, xt, code, **kw, **_torch(given, device))
    np.testing.assert_array_equal(
        virtual.cpu().numpy().view(np.uint32),
        tcast_ref.cast(x, code, **kw, **given).view(np.uint32),
    )


def test_a_virtual_cast_with_a_given_scale_passes_the_gradient_straight_through():
    x = torch.linspace(-3, 3, 64).reshape(2, 32).requires_grad_()
    y = tcast.cast(x, "mxfp8", scale=torch.full((2, 1), 0.5))
    y.backward(torch.arange(64.0).reshape(2, 32))
    assert torch.equal(x.grad, torch.arange(64.0).reshape(2, 32))


def test_a_compiled_caller_keeps_its_graph_at_a_cast_with_given_scales_and_gets_its_bits():
    x = torch.linspace(-3, 3, 64).reshape(2, 32)
    s = torch.full((2, 1), 0.25)

    def f(x, s):
        return tcast.cast(x * 1.0, "mxfp8", castmode="actual", scale=s).data

    got = torch.compile(f, backend="eager", fullgraph=True)(x, s)
    assert torch.equal(got, f(x, s))


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize(
    ("code", "parts"),
    [
        ("nvfp4", ("scale", "tensor_scale")),
        ("mxfp8", ("scale",)),
        ("uint8_e8m0_int8_t16", ("zero",)),
    ],
)
def test_a_dual_cast_takes_each_results_given_parts(code, parts, transposed):
    """Each result equals the single reference cast with its given parts; with ``transposed``
    the column parts are laid out as the second result's scale array (for ``xᵀ``)."""
    dt = tcast.datatype(code)
    cols = tcast.kit.column_datatype(dt)
    x = (np.random.default_rng(3).standard_normal((32, 48)) * 4).astype(np.float32)
    row = _case_values(dt, x.shape, parts, 0)
    col = _case_values(cols, x.shape, parts, 5)
    want = (
        tcast_ref.cast(x, dt, castmode="actual", **row),
        tcast_ref.cast(x, cols, castmode="actual", **col),
    )
    flip = (lambda a: a.T.copy()) if transposed else (lambda a: a)
    kw = {f"row_{k}": v for k, v in row.items() if k != "tensor_scale"}
    kw |= {f"column_{k}": flip(v) for k, v in col.items() if k != "tensor_scale"}
    kw |= {"tensor_scale": row["tensor_scale"]} if "tensor_scale" in row else {}
    for lib in ("numpy", "torch"):
        arg = (lambda a: a) if lib == "numpy" else torch.from_numpy
        got = tcast.cast_dual(
            arg(x),
            code,
            transposed=transposed,
            **{k: arg(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()},
        )
        for g, w, t in zip(got, want, (False, transposed), strict=True):
            for part in ("data", "scale", "zero"):
                wp = getattr(w, part)
                if wp is not None:
                    gp = np.asarray(getattr(g, part))
                    np.testing.assert_array_equal(gp, wp.T if t else wp, err_msg=f"{lib} {part}")


def _case_values(dt, shape, parts, shift):
    """Given parts for ``dt`` over ``shape``: block i's scale 2**((i + shift) % 5 - 2)."""
    sshape = tcast.block_layout(shape, dt).scale_shape
    i = np.arange(int(np.prod(sshape))) + shift
    out = {}
    if "scale" in parts:
        out["scale"] = np.exp2(i % 5 - 2).astype(np.float32).reshape(sshape)
    if "zero" in parts:
        out["zero"] = (i % 4).astype(np.float32).reshape(sshape)
    if "tensor_scale" in parts:
        out["tensor_scale"] = 0.5
    return out


@pytest.mark.parametrize(
    ("given", "match"),
    [
        ({"scale": torch.ones(4, 1, dtype=torch.float64)}, "float32, float16 or bfloat16"),
        ({"scale": torch.ones(4, 1, dtype=torch.int32)}, "float32, float16 or bfloat16"),
        ({"scale": np.ones((4, 1), np.float32)}, "float32, float16 or bfloat16 tensors"),
        ({"scale": torch.ones(4, 1, device="meta")}, "on meta"),
        ({"scale": torch.tensor([[1.0], [-1.0], [1.0], [1.0]])}, r"scale\[1, 0\] is -1.0"),
        ({"tensor_scale": torch.ones(1)}, r"shape \(1,\)"),
        ({"tensor_scale": 10**400}, "not a float32 value"),
        ({"tensor_scale": True}, "float32, float16 or bfloat16"),
    ],
)
def test_the_torch_engine_refuses_bad_given_parts_naming_them(given, match):
    code = "nvfp4" if "tensor_scale" in given else "mxfp8"
    with pytest.raises(tcast.SpecError, match=match):
        tcast_torch.cast(torch.ones(4, 32), code, castmode="actual", **given)


def test_numbers_of_any_float_type_serve_a_part_of_shape_nothing():
    x = torch.linspace(-3, 3, 64).reshape(2, 32)
    want = tcast_torch.cast(x, "nvfp4", castmode="actual", tensor_scale=0.5)
    for t in (np.float16(0.5), ml_dtypes.bfloat16(0.5), np.float64(0.5), torch.tensor(0.5)):
        got = tcast_torch.cast(x, "nvfp4", castmode="actual", tensor_scale=t)
        assert torch.equal(got.data, want.data) and int(got.tenscale) == int(want.tenscale)


def test_a_meta_cast_with_given_parts_gives_meta_results():
    r = tcast.cast(torch.empty(2, 32, device="meta"), "nvfp4", castmode="actual", tensor_scale=1.0)
    assert r.data.device.type == "meta" and r.scale.shape == (2, 2)


def test_the_compiled_variant_casts_given_parts_eagerly_with_the_same_bits(monkeypatch):
    from tcast_torch import _cast

    def no_compile(*args, **kw):
        raise AssertionError("a cast with given parts reached the compiled path")

    monkeypatch.setattr(_cast, "compiled_cast", no_compile)
    x, given = _case("nvfp4", (4, 32), ("scale", "tensor_scale"), {})
    eng = load_engine("torch:compiled")
    got = tcast.kit.cast_with(eng, torch.from_numpy(x), "nvfp4", castmode="actual", **_torch(given))
    want = tcast_ref.cast(x, "nvfp4", castmode="actual", **given)
    np.testing.assert_array_equal(got.data.numpy(), want.data)


def test_golden_sets_with_given_scales_verify_through_the_torch_engine(tmp_path, capsys):
    from tcast.cli import main
    from tcast_ref.golden import Settings, generate, write

    for code, parts in (("mxfp8", ("scale",)), ("nvfp4", ("scale", "tensor_scale"))):
        write(generate(Settings.of(code, given=parts, count=4)), tmp_path / code)
    assert main(["verify", str(tmp_path), "--engine", "torch", "--quiet"]) == 0
    assert "torch" in capsys.readouterr().out


def test_verifying_a_given_set_with_an_engine_without_given_scales_says_it_refuses(
    tmp_path, monkeypatch, capsys
):
    from tcast.cli import main
    from tcast_ref.golden import Settings, generate, write

    write(generate(Settings.of("mxfp8", given=("scale",), count=2)), tmp_path / "s")
    eng = tcast.load_engines().engines["torch"]
    monkeypatch.setattr(eng, "given_scales", False)
    main(["verify", str(tmp_path / "s"), "--engine", "torch"])
    out = capsys.readouterr()
    assert "does not cast with given scale parts" in out.out + out.err
