"""The Triton engine's ``cast_dual`` and blocked scales against single tcast_ref casts.

Runs under the interpreter (CPU tensors, ``make test``) and on CUDA. The dual datatypes of
the conformance space (one tile segment along the last dimension), one case each with the
modes rotated as in ``tests/test_cast_dual.py`` (``dual_checks.case``); the dual kernel
(``_launch_dual``) must cast every datatype it takes (counted), the rest are two casts.
Under the interpreter the default tier runs a sample of the cases meeting every pair of
their axis values (``dual_checks.pair_cover``), ``-m full`` the rest; a GPU runs them all.
Blocked scales written by the single-cast kernels (row, piece and column geometries; the
N-d kernel's sparse datatypes laid out by the kit) against tcast_ref's.
"""

from __future__ import annotations

import importlib

import dual_checks as dc
import numpy as np
import pytest
import torch

import tcast
import tcast_ref

dual_launch = importlib.import_module("tcast_triton._launch_dual")
launch = importlib.import_module("tcast_triton._launch")
DTYPES = dc.dual_datatypes(tcast.conformance_space())


def _torch(a: np.ndarray, device: str) -> torch.Tensor:
    if a.dtype == np.uint32:
        return torch.from_numpy(a.view(np.int32)).view(torch.uint32).to(device)
    if a.dtype == np.uint16:  # 16-bit random bits: torch.int16 holds the same bits
        return torch.from_numpy(a.view(np.int16)).to(device)
    if a.dtype.itemsize == 2 and a.dtype != np.float16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).to(device)
    return torch.from_numpy(a).to(device)


def _dual_equals_reference(index: int, device: str) -> tuple:
    """cast_dual of case ``index`` (``dual_checks.case``) on the Triton engine against
    tcast_ref's single casts; the datatype and keywords."""
    dt = DTYPES[index]
    x, kw = dc.case(index, dt)
    want = dc.expected_dual(x, dt, **kw)
    args = dict(kw)
    if "rbits" in args:
        args["rbits"] = _torch(args["rbits"], device)
    got = tcast.cast_dual(_torch(x, device), dt, engine="triton", **args)
    problems = dc.differences(got[0], want[0], "rows") + dc.differences(got[1], want[1], "cols")
    assert not problems, f"{dt.code} {kw}:\n" + "\n".join(problems)
    return dt, kw


def _cases(indices) -> list:
    """``indices`` as parameters: under the interpreter (CI) the pair-covering sample
    (``dual_checks.pair_cover``) in the default tier and the rest under ``-m full``; on a
    GPU every one."""
    sample = set(dc.pair_cover(DTYPES, indices)) if launch.interpreting() else None
    return [
        pytest.param(
            i,
            id=DTYPES[i].code,
            marks=() if sample is None or i in sample else pytest.mark.full,
        )
        for i in indices
    ]


@pytest.mark.parametrize("index", _cases(range(len(DTYPES))))
def test_cast_dual_equals_single_reference_casts(index, device, monkeypatch):
    fused = []
    real = dual_launch.run_dual

    def counting(*a):
        out = real(*a)
        fused.append(out is not None)
        return out

    monkeypatch.setattr("tcast_triton._engine.run_dual", counting)
    dt, kw = _dual_equals_reference(index, device)
    req = _request(dt, kw)
    takes = dual_launch.dual_supported(req) and dual_launch.dual_kernel_takes(
        req, kw.get("transposed", False)
    )
    assert fused == [takes], f"{dt.code}: the dual kernel ran {fused}, takes it: {takes}"


TWO_LEVEL = [i for i, dt in enumerate(DTYPES) if dt.is_multiscale]


@pytest.mark.parametrize("index", _cases(TWO_LEVEL))
def test_the_dual_kernel_casts_two_level_datatypes_when_asked(index, device, monkeypatch):
    """DUAL_TWO_LEVEL: two-level datatypes through the dual kernel (off by default), same bits."""
    monkeypatch.setattr(dual_launch, "DUAL_TWO_LEVEL", True)
    monkeypatch.setattr(dual_launch, "_PLANS", {})
    dt, _ = _dual_equals_reference(index, device)
    assert bool(dual_launch._PLANS) == dual_launch.dual_supported(_request(dt))


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("code", ["mxfp8", "e5m10_e8m0_t32"])
def test_a_seeded_dual_cast_draws_its_columns_from_stream_1(code, transposed, device, monkeypatch):
    """SEMANTICS.md §8.2: a seeded cast_dual's rows are the single cast of stream 0, its
    columns the column datatype's single cast of stream 1 (not stream 0's); K = 8 and 16."""
    monkeypatch.setattr(dual_launch, "_PLANS", {})
    rng = np.random.default_rng(19)
    shape = (64, 96)
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape))).astype(np.float32)
    kw = {"castmode": "actual", "roundmode": "stochastic", "seed": 2**40 + 9}
    got = tcast.cast_dual(_torch(x, device), code, transposed=transposed, engine="triton", **kw)
    assert dual_launch._PLANS, f"{code}: the dual kernel did not run"
    assert not dc.differences(got[0], tcast_ref.cast(x, code, **kw), "rows")  # stream 0
    cdt = tcast.kit.column_datatype(tcast.datatype(code))
    col1, col0 = (tcast_ref.cast(x, cdt, stream=s, **kw) for s in (1, 0))

    def laid(a: np.ndarray) -> np.ndarray:  # the transposed result holds the parts of xᵀ
        return np.swapaxes(a, -1, -2) if transposed else a

    data, scale = (getattr(got[1], p).cpu().numpy() for p in ("data", "scale"))
    assert np.array_equal(data, laid(col1.data)), "not the stream-1 single cast"
    assert np.array_equal(scale, laid(col1.scale))
    assert not np.array_equal(data, laid(col0.data))  # stream 0 gives other codes


SHARED = [
    ({}, False, True),
    ({"castmode": "compress"}, False, True),
    ({"castmode": "virtual"}, False, False),
    ({"scale_layout": "blocked"}, False, False),
    ({}, True, False),
    ({"scale_layout": "blocked"}, True, False),
]


@pytest.mark.parametrize(("kw", "transposed", "shared"), SHARED)
def test_two_level_dual_casts_share_one_amax_pass(kw, transposed, shared, device, monkeypatch):
    """NVFP4's cast_dual to codes in x's layout with plain scales: one tensor-amax pass, both
    single kernels given its maxima; the dual kernel for the rest (DUAL_TWO_LEVEL)."""
    from tcast_triton import _engine

    passes, given = [], []
    real_maxima, real_run = _engine.tensor_maxima, _engine.run_cast

    def maxima(*a):
        passes.append(1)
        return real_maxima(*a)

    def run(x, req, g=None):
        given.append(g is not None and g.numel() == 3)
        return real_run(x, req, g)

    monkeypatch.setattr(_engine, "tensor_maxima", maxima)
    monkeypatch.setattr(_engine, "run_cast", run)
    monkeypatch.setattr(dual_launch, "_PLANS", {})
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((48, 160)) * np.exp2(rng.integers(-8, 8, (48, 160)))).astype(
        np.float32
    )
    want = dc.expected_dual(x, tcast.datatype("nvfp4"), transposed=transposed, **kw)
    got = tcast.cast_dual(_torch(x, device), "nvfp4", transposed=transposed, engine="triton", **kw)
    problems = dc.differences(got[0], want[0], "rows") + dc.differences(got[1], want[1], "cols")
    assert not problems, "\n".join(problems)
    if shared:
        assert (passes, given) == ([1], [True, True])
        assert not dual_launch._PLANS  # the dual kernel did not run
    else:
        assert (passes, given) == ([], [])
        assert dual_launch._PLANS


def _request(dt, kw=None):
    kw = kw or {}
    modes = tcast.CastModes.of(
        kw.get("castmode", "actual"), scale_layout=kw.get("scale_layout", "plain")
    )
    return tcast.kit.make_request(
        dt, modes, None, None, (64, 64), "float32", tcast.kit.cast_rules(dt)
    )


@pytest.mark.parametrize("grid_y", [65535, 0])
def test_blocked_row_tiles_cast_in_patches_or_flat(grid_y, device, monkeypatch):
    """Patches of 8 rows where CUDA's grid allows them; flat lanes (same bits) where not."""
    monkeypatch.setattr(launch, "BLOCKED_PATCHES", "all")
    monkeypatch.setattr(launch, "ROW_ELEMS_T16", 4096)  # NVFP4: 256 tiles, patches of 8 x 32
    monkeypatch.setattr(launch, "MAX_GRID_Y", grid_y)
    monkeypatch.setattr(launch, "_PLANS", {})
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((256, 512)) * np.exp2(rng.integers(-8, 8, (256, 512)))).astype(
        np.float32
    )
    for code in ("mxfp8", "nvfp4"):
        want = tcast_ref.cast(x, code, castmode="actual", scale_layout="blocked")
        got = tcast.cast(
            _torch(x, device), code, castmode="actual", scale_layout="blocked", engine="triton"
        )
        assert not dc.differences(got, want, code)
    assert [p.kw["PATCH"] for p in launch._PLANS.values()] == [grid_y > 0] * 2
    # fewer than 128 rows or fewer tiles in a row than a patch's width: flat lanes
    for shape in ((64, 512), (256, 256)):
        monkeypatch.setattr(launch, "_PLANS", {})
        x = rng.standard_normal(shape).astype(np.float32)
        got = tcast.cast(
            _torch(x, device), "mxfp8", castmode="actual", scale_layout="blocked", engine="triton"
        )
        want = tcast_ref.cast(x, "mxfp8", castmode="actual", scale_layout="blocked")
        assert not dc.differences(got, want, f"mxfp8 {shape}")
        assert [p.kw["PATCH"] for p in launch._PLANS.values()] == [False]


GROUPED = [
    ("mxfp8", (2, 96, 160)),  # 3 x 3 blocks of 32 x 64 per batch, the last column block partial
    ("nvfp4", (40, 300)),  # 3 x 3 blocks of 16 x 128, both partial
    ("e4m3fn_e8m0_t4", (2, 33, 1100)),  # 9 x 3 blocks of 4 x 512 per batch
]


@pytest.mark.parametrize(("code", "shape"), GROUPED, ids=[f"{c}-{s}" for c, s in GROUPED])
@pytest.mark.parametrize("transposed", [False, True])
def test_every_program_casts_every_block(code, shape, transposed, device, monkeypatch):
    """The programs' order (along N first, per batch) covers x, whole and partial blocks."""
    monkeypatch.setattr(dual_launch, "_PLANS", {})
    monkeypatch.setattr(dual_launch, "DUAL_TWO_LEVEL", True)  # NVFP4 through the kernel too
    rng = np.random.default_rng(len(shape) * 7 + shape[-1])
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape))).astype(np.float32)
    dt = tcast.datatype(code)
    want = dc.expected_dual(x, dt, transposed=transposed)
    got = tcast.cast_dual(_torch(x, device), dt, transposed=transposed, engine="triton")
    problems = dc.differences(got[0], want[0], "rows") + dc.differences(got[1], want[1], "cols")
    assert not problems, f"{code} {shape}:\n" + "\n".join(problems)
    assert dual_launch._PLANS, "the dual kernel did not run"


def test_the_dual_kernel_takes_mx_and_nvfp4():
    for code in ("mxfp8", "mxfp4", "mxint8", "nvfp4", "uint4_e8m0_int8_t16", "e4m3fn_float32_t128"):
        assert dual_launch.dual_supported(_request(tcast.datatype(code))), code
    for code in ("e4m3fn_float32_t0", "e4m3fn_e8m0_t256", "e4m3fn_e8m0_t32n2m4"):
        assert not dual_launch.dual_supported(_request(tcast.datatype(code))), code


BLOCKED = [
    ("mxfp8", (130, 200)),  # row pieces (32-wide tiles), partial row and column blocks
    ("mxfp8", (2, 70, 64)),
    ("nvfp4", (300, 96)),  # 16-wide row tiles, a tensor scale
    ("mxfp8", (256, 512)),  # patches of 8 rows (_kernels.patch_lanes), every one whole
    ("nvfp4", (128, 1024)),  # patches in _cast_tiles, whole
    ("mxfp4", (136, 800)),  # patches: a partial group of 128 rows and a partial last patch
    ("mxint8", (5, 33)),  # a partial tile
    ("uint4_e8m0_int8_t16", (129, 64)),  # zero points
    ("e4m3fn_e8m0_t32d0", (64, 40)),  # the column geometry
    ("e4m3fn_e8m0_t32d1", (4, 64, 8)),  # a middle dimension
    ("e4m3fn_e8m0_t32n2m4", (130, 64)),  # sparsity: the N-d kernel, laid out by the kit
]


#: Datatypes whose casts never take patches (the column geometry, the N-d kernel): the
#: switch changes nothing there, so "none" runs under ``-m full`` only.
_NO_PATCHES = ("e4m3fn_e8m0_t32d0", "e4m3fn_e8m0_t32d1", "e4m3fn_e8m0_t32n2m4")


def _blocked_params() -> list:
    out = []
    for patches in ("all", "none"):
        for castmode in ("actual", "compress"):
            for code, shape in BLOCKED:
                marks = [pytest.mark.full] if patches == "none" and code in _NO_PATCHES else []
                out.append(
                    pytest.param(
                        code, shape, castmode, patches, marks=marks,
                        id=f"{patches}-{castmode}-{code}-{shape}",
                    )
                )  # fmt: skip
    return out


@pytest.mark.parametrize(("code", "shape", "castmode", "patches"), _blocked_params())
def test_blocked_scales_equal_the_references(code, shape, castmode, patches, device, monkeypatch):
    monkeypatch.setattr(launch, "BLOCKED_PATCHES", patches)
    monkeypatch.setattr(launch, "_PLANS", {})
    rng = np.random.default_rng(shape[-1])
    x = (rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape))).astype(np.float32)
    want = tcast_ref.cast(x, code, castmode=castmode, scale_layout="blocked")
    got = tcast.cast(
        _torch(x, device), code, castmode=castmode, scale_layout="blocked", engine="triton"
    )
    assert not dc.differences(got, want, code)
    assert not dc.differences(tcast.upcast(got), tcast_ref.upcast(want), "upcast")
