"""The N-d tile kernel (2-D tiles, N-of-M sparsity) against tcast_ref, bit for bit.

Small inputs through the Triton interpreter reach each path of ``_kernels_2d``: the row
geometry (tiles along the last dimension) and the column geometry (columns after the second
tiled dimension), partial tiles and partial sparsity groups on either dimension, chunk loops
(channels, tiles larger than one block), every scale kind, ``transpose_scale``, stochastic
rounding from a seed and from explicit bits, 16-bit inputs, and sparsity groups full of ties,
NaN and Inf. Every case is cast virtual, actual and compress and its upcast checked.
"""

from __future__ import annotations

import conformance_battery as cb
import numpy as np
import pytest
import torch
import triton_checks as tc

import tcast
from tcast import CastMode, RoundMode, ScaleMode

ENGINE = tcast.load_engines().engines["triton"]
_IN = tc.IN_DTYPES


def _nd_entry(shape, in_dtype="float32", seed=0) -> cb.Entry:
    return tc.entry(shape, in_dtype, seed=seed, label="nd")


def _nd_check(code, entry, **kw) -> None:
    tc.check(code, entry, all_modes=True, **kw)


# (datatype, input shape, input dtype, transpose_scale, what it reaches)
PATHS = [
    ("mxfp8_2d", (40, 70), "float32", False, "row geometry, partial tiles on both dims"),
    ("mxint8_2d", (64, 64), "float16", False, "whole tiles: the unmasked path, int data"),
    ("mxfp4_2d", (2, 33, 40), "bfloat16", False, "3-D input, bf16, 4-bit compress stream"),
    ("e4m3fn_e8m0_t16_t32", (20, 40), "float32", True, "transpose_scale: 32 x 16 tiles"),
    ("e4m3fn_e8m0_t8d0_t4d2", (10, 3, 9), "float32", False, "tiles on dims (0, 2) of 3-D"),
    ("e4m3fn_e8m0_t8d0_t4d1", (10, 6, 5), "float16", False, "column geometry (C = 5)"),
    ("e2m1f_e8m0_t8d0_t4d1", (16, 8, 4), "float32", False, "column geometry, whole tiles"),
    ("e5m2_e8m0_t4d-1_t8d-2", (2, 12, 10), "float32", True, "segments swapped, transposed"),
    ("e4m3fn_e8m0_t0_t32", (20, 40), "float32", False, "channel segment: chunk loop"),
    ("e4m3fn_e8m0_t128_t64", (130, 70), "float32", False, "tile over one block: loop"),
    ("int8_bfloat16_t8_t8", (12, 20), "float32", False, "float scale"),
    ("e2m1f_e4m3fn_float32_t16_t16", (20, 36), "bfloat16", False, "two-level (2-D NVFP4)"),
    ("uint8_float32_uint8_t8_t16", (12, 20), "float32", False, "uint, float scale, zero pt"),
    ("uint4_e8m0_int8_t8d0_t4d2", (9, 2, 6), "float16", False, "uint, exponent scale, col"),
    ("e4m3fn_e8m0_t32n2m4", (3, 70), "float32", False, "1-D sparsity, partial group"),
    ("e4m3fn_e8m0_t8n2m4d0", (13, 5), "float32", False, "sparse along dim 0, group of 1"),
    ("e2m1f_e8m0_t16n1m8d1", (2, 21, 3), "bfloat16", False, "sparse along a middle dim"),
    ("int8_float32_t0n2m4", (3, 10), "float32", False, "sparse channel (padded groups)"),
    ("uint8_float16_int8_t16n2m4", (4, 40), "float32", False, "sparse uint data"),
    ("e4m3fn_e8m0_t8n2m4_t16", (12, 40), "float32", False, "2-D, sparse first segment"),
    ("e4m3fn_e8m0_t8_t16n1m8", (12, 40), "float16", True, "2-D, sparse second, transposed"),
    ("e4m3fn_e8m0_t4d0_t8n2m4d2", (6, 3, 10), "float32", False, "2-D sparse, column geom"),
]


@pytest.mark.parametrize(
    ("code", "shape", "in_dtype", "transpose"),
    [p[:4] for p in PATHS],
    ids=[f"{p[0]}-{'x'.join(map(str, p[1]))}-{p[2]}{'-T' if p[3] else ''}" for p in PATHS],
)
def test_nd_path_equals_reference(code, shape, in_dtype, transpose, device):
    _nd_check(code, _nd_entry(shape, in_dtype, seed=5), transpose=transpose, device=device)


def _ties(shape, in_dtype="float32", seed=0) -> cb.Entry:
    """Few distinct magnitudes (ties everywhere), +-0, Inf and NaN in the sparsity groups."""
    rng = np.random.default_rng(seed)
    pool = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, np.inf, -np.inf, np.nan], np.float32)
    n = int(np.prod(shape))
    x = rng.choice(pool, n, p=[0.1, 0.1, 0.2, 0.2, 0.15, 0.1, 0.1, 0.02, 0.02, 0.01])
    arr = x.astype(np.float32).astype(_IN[in_dtype]).reshape(shape)
    rbits = rng.integers(0, 1 << 32, shape, dtype=np.uint64).astype(np.uint32)
    return cb.Entry("ties", arr, rbits, 0x5EED + seed)


@pytest.mark.parametrize(
    ("code", "shape"),
    [
        ("e4m3fn_e8m0_t16n2m4", (6, 34)),
        ("e4m3fn_e8m0_t8n3m4d0", (22, 4)),
        ("uint4_float32_float32_t8_t8n2m4", (9, 16)),
    ],
)
def test_sparsity_ties_nan_and_inf(code, shape, device):
    _nd_check(code, _ties(shape, seed=2), device=device)


@pytest.mark.parametrize(
    ("code", "shape"),
    [("mxfp4_2d", (33, 40)), ("e2m1f_e8m0_t16n2m4d0", (18, 6)), ("int4_float32_t0_t8", (5, 20))],
)
@pytest.mark.parametrize("rsource", ["seed", "rbits"])
def test_nd_stochastic_rounding_equals_reference(code, shape, rsource, device):
    _nd_check(
        code, _nd_entry(shape, seed=9), roundmode="stochastic", rsource=rsource, device=device
    )


@pytest.mark.parametrize(
    ("roundmode", "scalemode"), [("away", "ceil"), ("trunc", "midmax"), ("zero", "topbinade")]
)
def test_nd_round_and_scale_modes(roundmode, scalemode, device):
    _nd_check("e2m3f_e8m0_t8_t8n2m4", _nd_entry((10, 20), seed=4), roundmode=roundmode,
           scalemode=scalemode, device=device)  # fmt: skip


def test_front_door_uses_triton_for_2d_and_sparse_tiles(device):
    x = torch.linspace(-3, 3, 32 * 32, device=device).reshape(32, 32)
    for code in ("mxfp8_2d", "e4m3fn_e8m0_t32n2m4", "e2m1f_e8m0_t16n2m4_t16"):
        dt = tcast.datatype(code)
        for cm in (CastMode.VIRTUAL, CastMode.ACTUAL, CastMode.COMPRESS):
            assert ENGINE.supports(dt, tcast.CastModes.of(cm, RoundMode.EVEN, ScaleMode.FLOOR,
                                                          True, True))  # fmt: skip
        r = tcast.cast(x, dt, castmode="actual")
        assert r.engine == "triton"
        if dt.sspec.is_sparse:
            assert r.mask.dtype == torch.bool and r.mask.shape == x.shape
