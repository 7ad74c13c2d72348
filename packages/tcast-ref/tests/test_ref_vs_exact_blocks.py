"""tcast_ref against the exact model: scaled (block) casts, bit for bit.

Every check casts one array with ``tcast_ref.cast`` in all three cast modes and compares
with ``tcast.exact.cast_array`` on the same values:

* virtual: the raw bits of the result in the input dtype;
* actual: element codes, scale codes (and the scale array's shape), zero-point
  codes, the tensor-scale code and the keep-mask;
* compress: the packed bytes equal ``ArrayResult.packed()`` and the packed mask
  ``ArrayResult.packed_mask()``;
* upcast (of the actual and of the compress result): float32 bits equal to the
  exact float32 values for float32 inputs; for 16-bit inputs, the upcast value
  rounded to the input dtype by ``tcast.exact.to_input_dtype`` equals the exact
  virtual result.

Coverage: every float element format of at most 8 bits under every scale mode;
int/uint data under every scale kind (exponent, float32, bfloat16, float16 and
e4m3fn scales; int and float zero points); tensor, channel, 1-D and 2-D tiles,
tiles along dimension 0 (and other dimensions of 3-d arrays), transposed 2-D
scaling, sparsity, two-level scaling (NVFP4 and int8 under e4m3fn_float32),
partial tiles, all three input dtypes, every round mode (stochastic by seed and
by explicit bits, also on non-contiguous views); hypothesis-generated blocks
(derandomized by the root profile) mixing signed zeros, float32 subnormals,
values at binade edges (2^k and the float32 just below), outliers, NaN and Inf;
and every datatype of ``tcast.combinations()`` (930) once, on small seeded
arrays with the modes cycling.

The exact model (about 50-100 us per element here) runs on a spawn-based pool of
two workers. Timings (this container, 2 cores shared with other jobs, load about
2.5): the module takes about 60 s wall and 58 s of CPU in all; the parametrized
element-format/scale-mode tests about 20 s, the 930-combination sweep about 16 s,
the two hypothesis tests (250 examples each, no shrinking) about 5 s each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import tcast
import tcast_ref
from tcast import exact

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:  # the helper module, importable by name (also in pool workers)
    sys.path.insert(0, _HERE)
import _ref_testutil as util  # noqa: E402

ROUND_MODES = ["even", "away", "zero", "trunc", "stochastic"]
SCALE_MODES = ["floor", "ceil", "midmax", "option3", "topbinade"]
IN_DTYPES = ["float32", "float16", "bfloat16"]

#: Every float element format of at most 8 bits (the catalog's unscaled float formats).
FLOAT_FORMATS = list(
    {
        dt.nspec.code: dt.nspec
        for dt in tcast.CATALOG.values()
        if dt.sspec is None and dt.nspec.is_float and dt.nspec.bits <= 8
    }.values()
)
FLOAT_CODES = [n.code for n in FLOAT_FORMATS]
SCALES = ["e8m0", "float32", "bfloat16", "float16", "e4m3fn"]
FLOAT_SCALES = SCALES[1:]
INTS = ["int8", "int4", "int2"]
UINTS = ["uint8", "uint4", "uint2"]
ZEROS = ["int8", "int4", "uint8", "uint4", "float32", "bfloat16", "float16", "e4m3fn"]
_F32_MAX = float(np.finfo(np.float32).max)


# ----------------------------------------------------------------- data
def mixed_values(
    rng: np.random.Generator,
    size: int,
    *,
    base: int = 0,
    spread: int = 6,
    p_zero: float = 0.1,
    p_sub: float = 0.05,
    p_edge: float = 0.15,
    p_out: float = 0.03,
    p_nan: float = 0.0,
    p_inf: float = 0.0,
) -> np.ndarray:
    """float32 values: normals around 2**base, signed zeros, float32 subnormals, binade
    edges (2**k and the float32 just below it), outliers, and optionally NaN and ±Inf."""
    sign = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    k = np.clip(base + rng.integers(-spread, spread + 1, size), -149, 127)
    v = rng.standard_normal(size) * np.exp2(k.astype(np.float64))
    cat = rng.random(size)
    edges = np.cumsum([p_zero, p_sub, p_edge, p_out, p_nan, p_inf])
    zero, sub, edge, out, nan, inf = (
        (cat >= lo) & (cat < hi) for lo, hi in zip(np.r_[0, edges[:-1]], edges, strict=True)
    )
    v[zero] = sign[zero] * 0.0
    subs = rng.integers(1, 1 << 23, size, dtype=np.uint32).view(np.float32).astype(np.float64)
    v[sub] = sign[sub] * subs[sub]
    p2 = np.exp2(np.clip(k, -126, 127).astype(np.float64)).astype(np.float32)
    below = np.nextafter(p2, np.float32(0))
    v[edge] = sign[edge] * np.where(rng.random(size) < 0.5, p2, below)[edge]
    v[out] *= np.exp2(rng.integers(6, 40, size)).astype(np.float64)[out]
    v = np.clip(v, -_F32_MAX, _F32_MAX)
    v[nan] = np.copysign(np.nan, sign[nan])
    v[inf] = sign[inf] * np.inf
    return v.astype(np.float32)


def to_input(v: np.ndarray, in_name: str) -> np.ndarray:
    """float32 values as an input array (16-bit inputs: clipped to the format's range first,
    so that Inf only appears where the data asked for it)."""
    dt = util.NP_DTYPES[in_name]
    if in_name == "float16":
        v = np.where(np.isfinite(v), np.clip(v, -65504.0, 65504.0), v).astype(np.float32)
    with np.errstate(over="ignore", under="ignore"):
        return v.astype(dt)


# ----------------------------------------------------------------- the comparison
def _in_name(x: np.ndarray) -> str:
    return next(k for k, v in util.NP_DTYPES.items() if v == x.dtype)


def exact_task(
    x: np.ndarray,
    dt: tcast.DataType,
    *,
    roundmode: str = "even",
    scalemode: str = "floor",
    seed: int | None = None,
    rbits: np.ndarray | None = None,
    transpose: bool = False,
) -> tuple:
    """The arguments of exact.cast_array for the same cast (see util.cast_array_task)."""
    flat = np.ascontiguousarray(x).reshape(-1)  # logical C order, whatever the strides
    kw = {
        "input_dtype": _in_name(x),
        "roundmode": roundmode,
        "scalemode": scalemode,
        "seed": seed,
        "transpose_scale": transpose,
        "rbits": None if rbits is None else [int(r) for r in np.asarray(rbits).reshape(-1)],
    }
    return flat.astype(np.float32).tolist(), x.shape, dt, kw


def compare_with_exact(
    x: np.ndarray,
    dt: tcast.DataType,
    *,
    roundmode: str = "even",
    scalemode: str = "floor",
    seed: int | None = None,
    rbits: np.ndarray | None = None,
    transpose: bool = False,
    e: exact.ArrayResult | None = None,
) -> str:
    """Cast ``x`` with tcast_ref (virtual, actual, compress, upcast) and compare with the exact
    model's result ``e`` (computed here when not given); return a description of every
    difference (empty when bit-identical)."""
    in_name = _in_name(x)
    flat = np.ascontiguousarray(x).reshape(-1)
    if e is None:
        e = util.cast_array_task(
            exact_task(
                x,
                dt,
                roundmode=roundmode,
                scalemode=scalemode,
                seed=seed,
                rbits=rbits,
                transpose=transpose,
            )
        )
    kw = {
        "roundmode": roundmode,
        "scalemode": scalemode,
        "seed": seed,
        "rbits": rbits,
        "transpose_scale": transpose,
    }
    virt = tcast_ref.cast(x, dt, **kw)
    act = tcast_ref.cast(x, dt, castmode="actual", **kw)
    comp = tcast_ref.cast(x, dt, castmode="compress", **kw)
    label = (
        f"{dt.code} shape={x.shape} {in_name} round={roundmode} scale={scalemode} "
        f"transpose={transpose}{'' if seed is None else f' seed={seed}'}"
    )
    msgs: list[str] = []

    def expect(what: str, ok: bool, detail: str = "") -> None:
        if not ok:
            msgs.append(f"{label}: {what} {detail}".rstrip())

    want_virtual = util.floats_to_bits(e.values, in_name)
    expect("virtual dtype/shape", virt.dtype == x.dtype and virt.shape == x.shape)
    msgs.append(util.first_mismatches(f"{label}: virtual", util.raw(virt), want_virtual, flat))
    # actual
    expect("actual data shape", act.data.shape == x.shape, f"{act.data.shape}")
    msgs.append(
        util.first_mismatches(
            f"{label}: codes",
            np.asarray(act.data).reshape(-1).astype(np.uint32),
            np.array(e.codes, np.uint32),
            flat,
        )
    )
    scale = np.asarray(act.scale)
    expect("scale shape", scale.shape == e.scale_shape, f"{scale.shape} != {e.scale_shape}")
    expect(
        "scale codes",
        scale.reshape(-1).astype(np.int64).tolist() == list(e.scale),
        f"{scale.reshape(-1).tolist()[:16]} != {list(e.scale)[:16]}",
    )
    if e.zero is None:
        expect("zero absent", act.zero is None)
    else:
        zero = np.asarray(act.zero)
        expect(
            "zero codes",
            zero.shape == e.scale_shape
            and zero.reshape(-1).astype(np.int64).tolist() == list(e.zero),
            f"{zero.reshape(-1).tolist()[:16]} != {list(e.zero)[:16]}",
        )
    if e.tenscale is None:
        expect("tenscale absent", act.tenscale is None)
    else:
        expect(
            "tenscale code",
            act.tenscale is not None
            and np.asarray(act.tenscale).shape == ()
            and int(act.tenscale) == e.tenscale,
            f"{act.tenscale!r} != {e.tenscale}",
        )
    if e.mask is None:
        expect("mask absent", act.mask is None and comp.mask is None)
    else:
        mask = np.asarray(act.mask)
        expect("mask", mask.shape == x.shape and mask.reshape(-1).tolist() == list(e.mask))
        expect(
            "packed mask",
            comp.mask is not None and np.asarray(comp.mask, np.uint8).tobytes() == e.packed_mask(),
        )
    # compress: packed codes; scales as in actual
    expect(
        "packed codes",
        np.asarray(comp.data, np.uint8).tobytes() == e.packed(),
        f"{np.asarray(comp.data, np.uint8).tobytes()[:16].hex()} != {e.packed()[:16].hex()}",
    )
    expect("compress scale", np.array_equal(np.asarray(comp.scale), scale))
    # upcast == the virtual result in float32
    for name, res in (("upcast(actual)", act), ("upcast(compress)", comp)):
        up = tcast_ref.upcast(res)
        expect(f"{name} dtype/shape", up.dtype == np.float32 and up.shape == x.shape)
        if in_name == "float32":
            got = util.raw(up)
        else:
            got = util.floats_to_bits(
                (exact.to_input_dtype(v, in_name) for v in up.reshape(-1).tolist()), in_name
            )
        msgs.append(util.first_mismatches(f"{label}: {name}", got, want_virtual, flat))
    return "\n".join(m for m in msgs if m)


def assert_matches_exact(x: np.ndarray, dt: tcast.DataType, **kw) -> None:
    msg = compare_with_exact(x, dt, **kw)
    assert not msg, msg


def _stable_rng(*parts: object) -> np.random.Generator:
    # Seeded from the test's parameters (not from hash(), which Python randomizes per process).
    return np.random.default_rng(
        [sum(ord(c) * (i + 1) for i, c in enumerate(str(p))) for p in parts]
    )


def _mode_cycle(k: int, count: int = 5) -> list[tuple[str, str, str]]:
    """``count`` casts (round mode, scale mode, input dtype), all three rotating with ``k``
    (five casts: every round mode once)."""
    return [
        (ROUND_MODES[(i + k) % 5], SCALE_MODES[(i + 2 * k) % 5], IN_DTYPES[(i + k) % 3])
        for i in range(count)
    ]


def _edge_rows(rng: np.random.Generator, cols: int) -> np.ndarray:
    """Rows of different character: ordinary, binade edges, tiny and subnormal, outliers, zeros."""
    return np.stack(
        [
            mixed_values(rng, cols, base=0, spread=4),
            mixed_values(rng, cols, base=3, spread=2, p_edge=0.8),
            mixed_values(rng, cols, base=-130, spread=8, p_sub=0.3),
            mixed_values(rng, cols, base=-2, spread=3, p_out=0.2),
            mixed_values(rng, cols, base=-8, spread=2, p_zero=0.7),
        ]
    )


@pytest.fixture(scope="module")
def pool():
    p = util.make_pool()
    yield p
    p.shutdown()


def run_cases(pool, cases: list[tuple[np.ndarray, tcast.DataType, dict]]) -> None:
    """Compare every (x, dtype, modes) case; the exact model runs on the pool."""
    results = util.map_tasks(
        pool, util.cast_array_task, [exact_task(x, dt, **kw) for x, dt, kw in cases]
    )
    msgs = [
        compare_with_exact(x, dt, e=e, **kw) for (x, dt, kw), e in zip(cases, results, strict=True)
    ]
    msg = "\n".join(m for m in msgs if m)
    assert not msg, msg


def _run(pool, x32: np.ndarray, dt: tcast.DataType, modes) -> None:
    cases = []
    for n, (rmode, smode, in_name) in enumerate(modes):
        kw = {
            "roundmode": rmode,
            "scalemode": smode,
            "seed": 1000 + n if rmode == "stochastic" else None,
        }
        cases.append((to_input(x32, in_name), dt, kw))
    run_cases(pool, cases)


# ----------------------------------------------------------------- element formats x scale modes
@pytest.mark.parametrize("smode", SCALE_MODES)
@pytest.mark.parametrize("fmt", FLOAT_CODES)
def test_float_elements_under_every_scale_mode_match_exact(pool, fmt, smode):
    dt = tcast.datatype(fmt, "e8m0_t32")
    x32 = _edge_rows(_stable_rng(fmt, smode), 70)  # 70 = 32 + 32 + a partial tile of 6
    k = FLOAT_CODES.index(fmt) + SCALE_MODES.index(smode)
    _run(pool, x32, dt, [(rmode, smode, in_name) for rmode, _, in_name in _mode_cycle(k, 3)])


@pytest.mark.parametrize("scale", FLOAT_SCALES)
@pytest.mark.parametrize("fmt", FLOAT_CODES)
def test_float_elements_under_every_float_scale_match_exact(pool, fmt, scale):
    dt = tcast.datatype(fmt, f"{scale}_t16")
    x32 = _edge_rows(_stable_rng(fmt, scale), 40)
    _run(pool, x32, dt, _mode_cycle(FLOAT_CODES.index(fmt) + FLOAT_SCALES.index(scale), 2))


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("data", INTS)
def test_int_data_under_every_scale_kind_match_exact(pool, data, scale):
    dt = tcast.datatype(data, f"{scale}_t32")
    x32 = _edge_rows(_stable_rng(data, scale), 70)
    _run(pool, x32, dt, _mode_cycle(SCALES.index(scale) + INTS.index(data)))


@pytest.mark.parametrize("zero", ZEROS)
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("data", UINTS)
def test_uint_data_under_every_scale_kind_and_zero_point_match_exact(pool, data, scale, zero):
    dt = tcast.datatype(data, f"{scale}_{zero}_t32")
    x32 = _edge_rows(_stable_rng(data, scale, zero), 40)  # 40 = 32 + a partial tile of 8
    # uint blocks: also all-positive and all-negative rows (the range always includes 0)
    x32 = np.concatenate([x32, np.abs(x32[:2]), -np.abs(x32[3:4])])
    k = UINTS.index(data) + 3 * SCALES.index(scale) + ZEROS.index(zero)
    _run(pool, x32, dt, _mode_cycle(k, 2))


# ----------------------------------------------------------------- tile kinds
TILE_DTYPES = [
    ("e2m1f", "e8m0"),
    ("e4m3fn", "float16"),
    ("int8", "e8m0"),
    ("uint4", "float32_int8"),
    ("e5m2", "bfloat16"),
    ("e3m2fnuz", "e4m3fn"),
]
#: (tile segments, shapes); shapes are chosen so that every tile has a partial one.
TILES = {
    "": [(70,), (3, 50)],  # tensor scale
    "t0": [(3, 50), (2, 5, 7)],  # channel
    "t0d0": [(50, 3)],
    "t32": [(70,), (3, 50), (2, 3, 19)],
    "t16": [(2, 3, 19)],
    "t8d0": [(19, 5), (11, 2, 3)],
    "t4d1": [(3, 10, 4)],
    "t0_t32": [(6, 50)],
    "t16_t16": [(20, 19), (2, 18, 9)],
    "t8_t4": [(10, 13)],
    "t4d0_t8d2": [(6, 3, 10)],
    "t32n2m4": [(3, 50)],
    "t16n1m2d0": [(35, 3)],
    "t0n2m4": [(4, 22)],
    "t8_t16n2m4": [(10, 37)],
    "t16n2m8_t8": [(37, 10)],
}


@pytest.mark.parametrize("tiles", list(TILES), ids=[t or "tensor" for t in TILES])
def test_every_tile_kind_with_partial_tiles_matches_exact(pool, tiles):
    cases = []
    for k, (data, scale) in enumerate(TILE_DTYPES):
        dt = tcast.datatype(data, "_".join(p for p in (scale, tiles) if p))
        for j, shape in enumerate(TILES[tiles]):
            rng = _stable_rng(tiles, data, shape)
            size = int(np.prod(shape))
            x32 = mixed_values(rng, size, base=int(rng.integers(-6, 6))).reshape(shape)
            transposes = (False, True) if len(dt.sspec.tiles) == 2 else (False,)
            for transpose in transposes:
                rmode, smode, in_name = _mode_cycle(k + 2 * j + transpose, 1)[0]
                kw = {
                    "roundmode": rmode,
                    "scalemode": smode,
                    "transpose": transpose,
                    "seed": 7 if rmode == "stochastic" else None,
                }
                cases.append((to_input(x32, in_name), dt, kw))
    run_cases(pool, cases)


# ----------------------------------------------------------------- two-level scaling
TWO_LEVEL = [
    tcast.datatype("nvfp4"),
    tcast.datatype("int8", "e4m3fn_float32_t16"),
    tcast.datatype("int8", "e4m3fn_float32_t32"),
    tcast.datatype("e2m1f", "e4m3fn_float32_t16_t16"),
    tcast.datatype("e4m3fn", "bfloat16_float32_t0"),
]


def _two_level_arrays(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "ordinary": mixed_values(rng, 4 * 40, base=0, spread=5),
        "huge": mixed_values(rng, 4 * 40, base=110, spread=10, p_out=0.0),
        "tiny": mixed_values(rng, 4 * 40, base=-135, spread=6, p_sub=0.4),
        "wide": mixed_values(rng, 4 * 40, base=-40, spread=60),
        "zeros": np.where(rng.random(160) < 0.5, -0.0, 0.0).astype(np.float32),
        "one-nan": np.r_[mixed_values(rng, 159), np.float32(np.nan)],
        "one-inf": np.r_[np.float32(-np.inf), mixed_values(rng, 159)],
    }


@pytest.mark.parametrize("dt", TWO_LEVEL, ids=[d.code for d in TWO_LEVEL])
def test_two_level_scaling_matches_exact(pool, dt):
    cases = []
    for k, v in enumerate(_two_level_arrays(_stable_rng(dt.code)).values()):
        for rmode, smode, in_name in _mode_cycle(k, 3):
            kw = {
                "roundmode": rmode,
                "scalemode": smode,
                "seed": 11 if rmode == "stochastic" else None,
            }
            cases.append((to_input(v.reshape(4, 40), in_name), dt, kw))
    run_cases(pool, cases)


# ----------------------------------------------------------------- stochastic rounding
STOCHASTIC_DTYPES = [
    tcast.datatype("mxfp8"),
    tcast.datatype("mxfp4"),
    tcast.datatype("nvfp4"),
    tcast.datatype("int8", "float32_t0"),
    tcast.datatype("uint4", "bfloat16_float32_t16d0"),
    tcast.datatype("e2m3f", "e8m0_t16_t16"),
    tcast.datatype("e4m3fn", "e8m0_t32n2m4"),
]


def rbits_dtype(dt: tcast.DataType) -> type:
    """The dtype of explicit random bits: uint8 for K = 8, uint16 for K = 16 (SEMANTICS §3.3)."""
    return np.uint8 if dt.nspec.rbits_width == 8 else np.uint16


@pytest.mark.parametrize("dt", STOCHASTIC_DTYPES, ids=[d.code for d in STOCHASTIC_DTYPES])
def test_seeded_block_stochastic_rounding_equals_explicit_philox_bits_on_views(pool, dt):
    rng = _stable_rng("sr", dt.code)
    base32 = mixed_values(rng, 24 * 20, base=0, spread=8).reshape(24, 20)
    seed = 2**33 + 9
    cases = []
    for in_name in IN_DTYPES:
        base = to_input(base32, in_name)
        for label, view in (
            ("contiguous", base[:8]),
            ("strided", base[::3, 1:][:, :17]),
            ("transposed", base[:16].T),
            ("reversed", base[::-2, ::-1]),
        ):
            assert view.flags.c_contiguous == (label == "contiguous")
            rb = np.array(
                tcast.random_bits(seed, range(view.size), dt.nspec.rbits_width), rbits_dtype(dt)
            ).reshape(view.shape)
            # the seed path and the explicit Philox bits by logical C-order flat index
            cases.append((view, dt, {"roundmode": "stochastic", "seed": seed}))
            cases.append((view, dt, {"roundmode": "stochastic", "rbits": rb}))
            got = tcast_ref.cast(view, dt, castmode="actual", roundmode="stochastic", seed=seed)
            ref = tcast_ref.cast(
                np.ascontiguousarray(view), dt, castmode="actual", roundmode="stochastic", seed=seed
            )
            assert np.array_equal(got.data, ref.data) and np.array_equal(got.scale, ref.scale)
    run_cases(pool, cases)


# one 8-bit and two 16-bit element formats (K = 8, 16; SEMANTICS.md §3.2), scaled and unscaled
@pytest.mark.parametrize("name", ["mxfp8", "bfloat16", "float16_e8m0_t32"])
def test_seeded_stochastic_rounding_on_stream_1_equals_its_bits_and_exact(name):
    dt = tcast.datatype(name)
    k = dt.nspec.rbits_width
    assert k == (8 if name == "mxfp8" else 16)
    x = mixed_values(_stable_rng("stream", name), 6 * 32, base=0, spread=8).reshape(6, 32)
    seed = 2**35 + 3
    rb = tcast_ref.random_bits(seed, x.size, width=k, stream=1)
    assert rb.dtype == rbits_dtype(dt)
    assert rb.tolist() == tcast.random_bits(seed, range(x.size), k, stream=1)
    rb = rb.reshape(x.shape)
    kw = {"castmode": "actual", "roundmode": "stochastic"}
    got = tcast_ref.cast(x, dt, seed=seed, stream=1, **kw)
    by_bits = tcast_ref.cast(x, dt, rbits=rb, **kw)
    ex = exact.cast_array(
        x.reshape(-1).tolist(), x.shape, dt, roundmode="stochastic", seed=seed, stream=1
    )
    assert got.data.reshape(-1).tolist() == by_bits.data.reshape(-1).tolist() == list(ex.codes)
    if ex.scale is not None:
        assert np.asarray(got.scale).reshape(-1).tolist() == list(ex.scale)
    virt = tcast_ref.cast(x, dt, roundmode="stochastic", seed=seed, stream=1)
    assert np.array_equal(util.raw(virt), util.raw(np.array(ex.values, np.float32).reshape(6, 32)))
    # stream 0 (the default) draws other bits: many of these inexact elements round otherwise
    other = tcast_ref.cast(x, dt, seed=seed, **kw).data
    assert (other != got.data).sum() > x.size // 8


def test_seeded_dual_cast_draws_its_column_result_from_stream_1():
    """cast_dual with a seed (SEMANTICS.md §8.2): the row result is the single cast (stream 0),
    the column result the single cast of the column tiling on stream 1, by x's flat indices;
    given rbits serve both."""
    dt = tcast.datatype("mxfp8")
    col = tcast.kit.column_datatype(dt)
    x = _stable_rng("dual").standard_normal((64, 32)).astype(np.float32)  # nearly all inexact
    seed = 2**33 + 1
    kw = {"castmode": "actual", "roundmode": "stochastic"}
    rows, cols = tcast_ref.cast_dual(x, "mxfp8", roundmode="stochastic", seed=seed)
    want_rows = tcast_ref.cast(x, dt, seed=seed, **kw)
    want_cols = tcast_ref.cast(x, col, seed=seed, stream=1, **kw)
    for got, want in ((rows, want_rows), (cols, want_cols)):
        assert np.array_equal(got.data, want.data) and np.array_equal(got.scale, want.scale)
    stream0 = tcast_ref.cast(x, col, seed=seed, **kw)
    assert (stream0.data != cols.data).sum() > x.size // 4  # independent of the row bits
    ex_cols = exact.cast_array(
        x.reshape(-1).tolist(), x.shape, col, roundmode="stochastic", seed=seed, stream=1
    )
    assert cols.data.reshape(-1).tolist() == list(ex_cols.codes)
    assert cols.scale.reshape(-1).tolist() == list(ex_cols.scale)
    _, cols_t = tcast_ref.cast_dual(x, "mxfp8", roundmode="stochastic", seed=seed, transposed=True)
    assert np.array_equal(cols_t.data, cols.data.T)
    # given rbits (K = 8: uint8) serve both results
    rb = _stable_rng("dual rbits").integers(0, 256, x.shape, dtype=np.uint8)
    rows, cols = tcast_ref.cast_dual(x, "mxfp8", roundmode="stochastic", rbits=rb)
    assert np.array_equal(rows.data, tcast_ref.cast(x, dt, rbits=rb, **kw).data)
    assert np.array_equal(cols.data, tcast_ref.cast(x, col, rbits=rb, **kw).data)


# ----------------------------------------------------------------- hypothesis blocks
TILE_CHOICES = [
    "",
    "t0",
    "t32",
    "t16",
    "t8",
    "t4",
    "t8d0",
    "t0d0",
    "t0_t32",
    "t16_t16",
    "t8_t4",
    "t4d0_t8",
    "t32n2m4",
    "t8n1m2d0",
    "t16_t8n2m4",
]


@st.composite
def block_cases(draw, kinds: tuple[str, ...]):
    kind = draw(st.sampled_from(kinds))
    tiles = draw(st.sampled_from(TILE_CHOICES))
    if kind == "float":
        data, parts = draw(st.sampled_from(FLOAT_CODES)), [draw(st.sampled_from(SCALES))]
    elif kind == "int":
        data, parts = draw(st.sampled_from(INTS)), [draw(st.sampled_from(SCALES))]
    elif kind == "uint":
        data = draw(st.sampled_from(UINTS))
        parts = [draw(st.sampled_from(SCALES)), draw(st.sampled_from(ZEROS))]
    else:  # two-level: float or int data, float tile scale, float32 tensor scale
        data = draw(st.sampled_from(["e2m1f", "e4m3fn", "e3m2f", "int8", "int4"]))
        parts = [draw(st.sampled_from(FLOAT_SCALES)), "float32"]
        tiles = tiles or "t16"
    dt = tcast.datatype(data, "_".join([*parts, tiles] if tiles else parts))
    ntiles = len(dt.sspec.tiles)
    ndim = draw(st.integers(max(ntiles, 1), 3))
    shape = tuple(draw(st.lists(st.integers(1, 40), min_size=ndim, max_size=ndim)))
    while np.prod(shape) > 320:  # keep the exact model's share small
        big = int(np.argmax(shape))
        shape = (*shape[:big], (shape[big] + 1) // 2, *shape[big + 1 :])
    try:
        dt.sspec.dims(ndim)
    except tcast.SpecError:
        shape = (*shape, 5)  # a dimension the tile needs (d0/d1 on a short rank)
    params = {
        "base": draw(st.one_of(st.integers(-12, 12), st.integers(-149, 127))),
        "spread": draw(st.integers(0, 40)),
        "p_zero": draw(st.sampled_from([0.0, 0.1, 0.5, 1.0])),
        "p_sub": draw(st.sampled_from([0.0, 0.05, 0.3])),
        "p_edge": draw(st.sampled_from([0.0, 0.2, 0.8])),
        "p_out": draw(st.sampled_from([0.0, 0.03, 0.2])),
        "p_nan": draw(st.sampled_from([0.0] * 6 + [0.002, 0.02])),
        "p_inf": draw(st.sampled_from([0.0] * 6 + [0.002, 0.02])),
    }
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x32 = mixed_values(rng, int(np.prod(shape)), **params).reshape(shape)
    in_name = draw(st.sampled_from(IN_DTYPES))
    rmode = draw(st.sampled_from(ROUND_MODES))
    kw = {
        "roundmode": rmode,
        "scalemode": draw(st.sampled_from(SCALE_MODES)),
        "transpose": ntiles == 2 and draw(st.booleans()),
    }
    x = to_input(x32, in_name)
    if rmode == "stochastic":
        if draw(st.booleans()):
            kw["seed"] = draw(st.integers(0, 2**64 - 1))
        else:
            k = dt.nspec.rbits_width  # K-bit random integers (SEMANTICS.md §3.3)
            kw["rbits"] = rng.integers(0, 2**k, x.shape, dtype=rbits_dtype(dt))
    return x, dt, kw


# No shrinking: each example is already a small array, printed whole with every difference,
# and shrinking a failure through the slow exact model would take minutes.
_HYP = settings(
    max_examples=250,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)


@_HYP
@given(block_cases(("float", "two-level")))
def test_hypothesis_float_blocks_match_exact(case):
    x, dt, kw = case
    assert_matches_exact(x, dt, **kw)


@_HYP
@given(block_cases(("int", "uint", "two-level")))
def test_hypothesis_int_and_uint_blocks_match_exact(case):
    x, dt, kw = case
    assert_matches_exact(x, dt, **kw)


# ----------------------------------------------------------------- every combination once
COMBINATIONS = list(tcast.combinations())
_SWEEP_SHAPES = [(3, 40), (2, 3, 17), (33, 5), (70,), (9, 2, 12)]


def _sweep_case(i: int, dt: tcast.DataType):
    tiles = dt.sspec.tiles if dt.sspec is not None else ()
    shapes = [s for s in _SWEEP_SHAPES if len(s) >= max(len(tiles), 1)]
    shape = shapes[i % len(shapes)]
    if any(t.dim is not None and t.dim >= len(shape) for t in tiles):
        shape = (3, 40)
    rmode = ROUND_MODES[i % 5]
    smode = SCALE_MODES[(i // 5) % 5]
    in_name = IN_DTYPES[(i // 2) % 3]
    transpose = len(tiles) == 2 and (i // 3) % 2 == 1
    return shape, rmode, smode, in_name, transpose


def _combination_case(i: int) -> tuple[np.ndarray, tcast.DataType, dict]:
    dt = COMBINATIONS[i]
    shape, rmode, smode, in_name, transpose = _sweep_case(i, dt)
    rng = np.random.default_rng(i)
    x32 = mixed_values(
        rng,
        int(np.prod(shape)),
        base=int(rng.integers(-10, 10)),
        p_nan=0.01 if i % 7 == 0 else 0.0,
        p_inf=0.01 if i % 11 == 0 else 0.0,
    ).reshape(shape)
    kw = {
        "roundmode": rmode,
        "scalemode": smode,
        "transpose": transpose,
        "seed": 5 + i if rmode == "stochastic" else None,
    }
    return to_input(x32, in_name), dt, kw


@pytest.fixture(scope="module")
def combination_results(pool) -> list[exact.ArrayResult]:
    """The exact results of all 930 sweep cases, computed once on the pool."""
    cases = [_combination_case(i) for i in range(len(COMBINATIONS))]
    tasks = [exact_task(x, dt, **kw) for x, dt, kw in cases]
    return util.map_tasks(pool, util.cast_array_task, tasks, chunksize=10)


@pytest.mark.xdist_group("exact_combination_sweep")  # one worker computes the module fixture
@pytest.mark.parametrize("i", range(len(COMBINATIONS)), ids=[d.code for d in COMBINATIONS])
def test_every_combination_matches_exact(combination_results, i):
    x, dt, kw = _combination_case(i)
    e = combination_results[i]
    if dt.sspec is None:
        # unscaled: codes and virtual bits (the 16-bit sweep is the unscaled module's job)
        kw = {"roundmode": kw["roundmode"], "seed": kw["seed"]}
        got = tcast_ref.cast(x, dt, castmode="actual", **kw)
        assert got.data.reshape(-1).astype(np.int64).tolist() == list(e.codes)
        assert np.array_equal(
            util.raw(tcast_ref.cast(x, dt, **kw)), util.floats_to_bits(e.values, _in_name(x))
        )
        return
    msg = compare_with_exact(x, dt, e=e, **kw)
    assert not msg, msg


def test_the_sweep_reaches_every_combination_mode_and_input_dtype():
    assert len(COMBINATIONS) == 930
    cases = [_sweep_case(i, dt) for i, dt in enumerate(COMBINATIONS)]
    assert {c[1] for c in cases} == set(ROUND_MODES)
    assert {c[2] for c in cases} == set(SCALE_MODES)
    assert {c[3] for c in cases} == set(IN_DTYPES)
    assert {c[4] for c in cases} == {False, True}


# ------------------------------------------------- sparse blocks under a non-finite tensor amax
_NONFINITE_TENSOR = (
    tcast.datatype("e2m1f", "e4m3fn_float32_t4n2m4"),
    np.array([[np.inf, 1, 2, 3], [1, 2, 3, 4]], np.float32),
)


def test_ref_two_level_sparse_blocks_are_nan_throughout_when_the_tensor_amax_is_not_finite():
    # SEMANTICS.md §5.6: a non-finite tensor amax makes every block non-finite; §5.2 and §6:
    # a non-finite block decodes to NaN throughout, pruned elements included.
    dt, x = _NONFINITE_TENSOR
    assert np.isnan(tcast_ref.cast(x, dt)).all()
    assert np.isnan(tcast_ref.upcast(tcast_ref.cast(x, dt, castmode="actual"))).all()


def test_exact_two_level_sparse_blocks_are_nan_throughout_when_the_tensor_amax_is_not_finite():
    # The same rule in the oracle: whether pruned elements decode to +0 depends on the tensor
    # amax too, not only on the block's own kept elements, so the pruned 1 and 2 of the second
    # row (a finite block, made non-finite only by the tensor amax) are NaN, not 0.0.
    dt, x = _NONFINITE_TENSOR
    e = exact.cast_array(x.reshape(-1).tolist(), x.shape, dt)
    assert np.isnan(np.array(e.values)).all(), e.values


# ---------------------------------------------------------------- signaling NaN inputs
@pytest.mark.parametrize("in_name", IN_DTYPES)
@pytest.mark.parametrize("dt", ["e4m3fn", "e2m1f", "mxfp8", "nvfp4", "int8_e", "uint8_ffc"])
def test_signaling_nan_inputs_cast_without_floating_point_warnings(dt, in_name):
    # SEMANTICS.md §7: an input NaN stays NaN in every cast; a signaling NaN is an ordinary
    # NaN input. The reference must not leak NumPy's "invalid value" warning (under
    # filterwarnings=error, or python -W error, the cast raises instead of returning).
    snan = {
        "float32": np.array([0x7F800001], np.uint32),
        "float16": np.array([0x7C01], np.uint16),
        "bfloat16": np.array([0x7F81], np.uint16),
    }[in_name].view(util.NP_DTYPES[in_name])
    x = np.resize(snan, 32)
    x[1:] = 1.0
    if tcast.datatype(dt).sspec is not None:
        with np.errstate(invalid="ignore"):  # the bits first: a NaN block, as for a quiet NaN
            assert_matches_exact(x, tcast.datatype(dt))
    for castmode in ("virtual", "actual", "compress"):
        tcast_ref.cast(x, dt, castmode=castmode)
