"""Cross-engine conformance: every installed engine, every combination, raw bits.

Engines are found through the ``tcast.engines`` entry points (``tcast.load_engines()``), so a
third-party engine is tested exactly like ``ref`` with no edit here. Each engine is called
through its protocol (``accepts``/``supports``/``cast``/``upcast``) on the battery of
``conformance_battery.py``, moved to the engine's array type by an adapter, and every output
(virtual bits in the input dtype; actual codes, scale, zero point, tensor scale and mask;
compress bytes; upcast of both) is compared bit for bit with the oracle: the exact model
(``tcast.exact``) for ``ref``, ``tcast_ref`` for every other engine.

The same machinery (``tcast_ref.conformance``) is behind ``tcast conformance``. Tiers: the
fast tier (default, ``make test``) casts every datatype of ``tcast.conformance_space()`` once
with the modes rotated; the full tier (``pytest -m full``) casts every datatype under every
round mode x scale mode x cast mode. See tests/README.md and docs/conformance.md.
"""

from __future__ import annotations

import itertools
import os
import re
from collections import defaultdict

import ml_dtypes
import numpy as np
import pytest

import tcast
from tcast import CastMode, RoundMode, ScaleMode
from tcast.engine import failure, load_engine
from tcast_ref import conformance as cb

#: Comma-separated engine names to test (default: every installed engine).
ENGINES_ENV = "TCAST_CONFORMANCE_ENGINES"

_LOADED = tcast.load_engines()
_WANTED = [n.strip() for n in os.environ.get(ENGINES_ENV, "").split(",") if n.strip()]
# the registered engines, and the variants named in $TCAST_CONFORMANCE_ENGINES
# ("torch:compiled"): a variant runs only when asked for
_ENGINES = dict(_LOADED.engines)
for _name in _WANTED:
    _variant = load_engine(_name) if ":" in _name else None
    if _variant is not None:
        _ENGINES[_name] = _variant
_ADAPTERS: dict[str, object] = {}


def _adapter(engine_name: str):
    if engine_name not in _ADAPTERS:
        _ADAPTERS[engine_name] = cb.adapter_for(_ENGINES[engine_name])
    return _ADAPTERS[engine_name]


# An engine that accepts none of the sample arrays here (the Triton engine without a GPU
# and without TRITON_INTERPRET=1) is left out unless named in $TCAST_CONFORMANCE_ENGINES;
# test_engines_with_no_device_here names it in the skip report.
_CANDIDATES = [n for n in sorted(_ENGINES) if not _WANTED or n in _WANTED]
NO_DEVICE_HERE = [n for n in _CANDIDATES if not _WANTED and _adapter(n) is None]
ENGINE_NAMES = [n for n in _CANDIDATES if n not in NO_DEVICE_HERE]
DTYPES = list(tcast.conformance_space())
FAST = cb.pairwise_cases(DTYPES)  # every datatype once, then a cover of every pair of values
_MAX_REPORTED = 12


def _full_selected(config) -> bool:
    """True under ``-m full`` (or a marker expression selecting it, not ``not full``)."""
    expr = config.getoption("markexpr") or ""
    return bool(re.search(r"\bfull\b", expr) and not re.search(r"\bnot\s+full\b", expr))


def pytest_generate_tests(metafunc):
    name = metafunc.function.__name__
    if name == "test_engine_bits_equal_oracle_fast_tier":
        params = [  # the pair-covering cases after the first of each datatype: by their label
            pytest.param(e, i, id=f"{e}-{c.dtype.code if i < len(DTYPES) else c.label}")
            for e in ENGINE_NAMES
            for i, c in enumerate(FAST)
        ]
        metafunc.parametrize(("engine_name", "case_index"), params)
    elif name == "test_engine_bits_equal_oracle_full_tier":
        if _full_selected(metafunc.config):
            params = [
                pytest.param(e, i, rm, id=f"{e}-{dt.code}-{rm.value}")
                for e in ENGINE_NAMES
                for i, dt in enumerate(DTYPES)
                for rm in cb.ROUND_MODES
            ]
        else:
            params = [pytest.param(None, None, None, id="not-selected")]
        metafunc.parametrize(("engine_name", "dtype_index", "roundmode"), params)
    elif "engine_name" in metafunc.fixturenames:
        metafunc.parametrize("engine_name", ENGINE_NAMES)


def _engine_and_adapter(engine_name: str):
    engine = _ENGINES[engine_name]
    adapter = _adapter(engine_name)
    if adapter is None:
        pytest.fail(
            f"engine {engine_name!r} accepts none of the adapters' sample arrays (numpy, "
            f"torch on ${cb.DEVICE_ENV}); set ${cb.ADAPTER_ENV}=module:factory (tests/README.md)"
        )
    return engine, adapter


def _run(engine_name: str, cases, entries=None) -> None:
    """Cast the battery (or ``entries(dtype)``) for each case; fail listing every difference."""
    engine, adapter = _engine_and_adapter(engine_name)
    oracle = cb.oracle_for(engine_name)
    if entries is None:  # larger inputs where the oracle is fast (every engine but ref)
        entries = cb.battery if oracle.max_elements is not None else cb.large_battery
    _check(engine, adapter, oracle, cases, entries)


def _check(engine, adapter, oracle, cases, entries) -> None:
    """Compare ``engine`` with ``oracle`` on ``entries(dtype)`` for each case (the library's
    ``check``); fail with one difference of each kind first and a reproducer."""
    result = cb.check(engine, adapter, oracle, cases, entries, adapter_name=adapter.name)
    problems = [(f.label, msg) for f in result.failures for msg in f.differences]
    if problems:
        # one difference of each kind (output and message) first, then the rest in order
        kinds: dict[str, int] = {}
        for i, (_, msg) in enumerate(problems):
            kinds.setdefault(re.sub(r"[0-9]+|0x[0-9a-f]+", "#", msg), i)
        firsts = sorted(kinds.values())
        order = firsts + [i for i in range(len(problems)) if i not in set(firsts)]
        shown = "\n".join(f"{problems[i][0]}: {problems[i][1]}" for i in order[:_MAX_REPORTED])
        more = len(problems) - _MAX_REPORTED
        pytest.fail(
            f"engine {engine.name!r} differs from the {oracle.name} oracle in {len(problems)} "
            f"checks:\n{shown}"
            + (f"\n... and {more} more" if more > 0 else "")
            + f"\nrepro of the first:\n{result.failures[0].reproducer}",
            pytrace=False,
        )
    if result.checks == 0:
        pytest.skip(f"engine {engine.name!r} supports none of these cases")


# ----------------------------------------------------------------- the two tiers
def test_engine_bits_equal_oracle_fast_tier(engine_name, case_index):
    _run(engine_name, [FAST[case_index]])


@pytest.mark.full
def test_engine_bits_equal_oracle_full_tier(engine_name, dtype_index, roundmode):
    if engine_name is None:
        pytest.skip("full tier: run pytest -m full")
    _run(engine_name, cb.full_cases(DTYPES[dtype_index], roundmode))


def test_engine_bits_equal_oracle_with_given_scales(engine_name):
    """The casts with given scale parts (SEMANTICS.md §5.12) of every tier; an engine without
    ``given_scales`` is checked to refuse them (``check_refusals``)."""
    _run(engine_name, cb.given_cases(DTYPES))


def test_engine_bits_equal_oracle_on_empty_inputs(engine_name):
    """Every datatype (modes as in the fast tier) cast on arrays with no elements."""
    _run(engine_name, FAST, cb.empty_entries)


def test_unsupported_combinations_raise_unsupported_error(engine_name):
    """Every combination x modes that ``supports`` rejects raises UnsupportedError when cast."""
    engine, adapter = _engine_and_adapter(engine_name)
    result = cb.check_refusals(engine, adapter, DTYPES)
    bad = [f"{f.label}: {f.differences[0]}" for f in result.failures]
    assert not bad, (
        f"{len(bad)} of {result.checks} unsupported requests did not raise "
        f"UnsupportedError:\n" + "\n".join(bad[:_MAX_REPORTED])
    )


# ----------------------------------------------------------------- the harness itself
def test_every_registered_engine_loads():
    assert not _LOADED.failures, f"engines that failed to load: {_LOADED.failures}"
    missing = {n: failure(n) for n in sorted(set(_WANTED) - set(_ENGINES))}
    assert not missing, f"${ENGINES_ENV} names engines that are not installed: {missing}"
    assert ENGINE_NAMES, "no engine is installed under the tcast.engines entry points"


def test_engines_with_no_device_here():
    """Engines left out because no array here suits them (name them to require them)."""
    if NO_DEVICE_HERE:
        pytest.skip(
            f"engines with no usable device here, not run: {NO_DEVICE_HERE} (name them in "
            f"${ENGINES_ENV} to require them; the Triton engine runs on CPU tensors "
            f"under TRITON_INTERPRET=1)"
        )


def test_every_engine_has_an_array_adapter(engine_name):
    engine, adapter = _engine_and_adapter(engine_name)
    assert engine.accepts(adapter.to_engine(np.zeros(3, np.float32)))


def _axes(cases) -> dict[str, set]:
    seen: dict[str, set] = defaultdict(set)
    for c in cases:
        for axis, value in cb.axis_values(c):
            seen[axis].add(value)
    return seen


def test_fast_tier_touches_every_axis_value():
    space = tcast.DEFAULT_SPACE
    codes = lambda names: {tcast.number(n).code for n in names}  # noqa: E731
    want = {
        "element format": codes(space.floats + space.unscaled_only + space.ints + space.uints),
        "tile": {None, *space.tiles},
        "scale kind": {
            "unscaled",
            "exponent scale",
            "float scale",
            "tile scale + tensor scale",
            "exponent scale + zero point",
            "float scale + zero point",
        },
        "scale format": codes(space.scales),
        "zero-point format": codes(space.zeros),
        "tensor-scale format": codes(space.tenscales),
        "round mode": set(RoundMode),
        "round mode x data kind": set(
            itertools.product(RoundMode, ("float", "int", "uint", "float unscaled"))
        ),
        "scale mode (power-of-two scale)": set(ScaleMode),
        "scale mode x data kind": set(itertools.product(ScaleMode, ("float", "int"))),
        "cast mode": set(CastMode),
        "saturate (unscaled)": {True, False},
        "transpose_scale (2-D tiles)": {True, False},
        "stochastic bits": {"seed", "rbits"},
    }
    seen = _axes(FAST)
    missing = {k: v - seen[k] for k, v in want.items() if v - seen[k]}
    assert not missing, f"the fast tier does not touch: {missing}"
    assert {c.dtype for c in FAST} == set(DTYPES), "the fast tier skips datatypes"


def test_smoke_tier_touches_every_axis_value_the_fast_tier_touches():
    smoke = cb.smoke_cases(FAST)
    assert _axes(smoke) == _axes(FAST)
    assert len(smoke) < len(FAST) // 8, len(smoke)


def test_fast_tier_covers_every_pair_of_axis_values():
    """A covering design: every value of a datatype axis meets every value of each mode that
    matters to it, and every two mode values meet, in at least one fast-tier case."""
    covered = set().union(*(cb.case_pairs(c) for c in FAST))
    assert cb.feasible_pairs(DTYPES) <= covered
    assert FAST[: len(DTYPES)] == cb.fast_cases(DTYPES)
    # spot checks, independent of the pair bookkeeping
    seen = {(c.dtype.nspec.code, c.roundmode, c.rsource) for c in FAST}
    for code in ("int3", "uint24", "binary8p1", "e8m22", "e2m1f"):
        for rm, src in [(rm, None) for rm in RoundMode if rm is not RoundMode.STOCHASTIC] + [
            (RoundMode.STOCHASTIC, "seed"),
            (RoundMode.STOCHASTIC, "rbits"),
        ]:
            assert (tcast.number(code).code, rm, src) in seen, (code, rm, src)
    tiles = {
        (cb.tile_code(c.dtype), c.scalemode)
        for c in FAST
        if c.dtype.sspec is not None
        and c.dtype.sspec.scale.is_exponent
        and not c.dtype.nspec.is_uint
    }
    for t in ("t1024", "t2", "t16d1_t16d0", "t32n4m8"):
        assert {sm for tile, sm in tiles if tile == t} == set(ScaleMode), t


def test_conformance_space_holds_every_catalog_datatype_and_axis_sample():
    from tcast.cli import primary_names

    space = set(DTYPES)
    assert DTYPES[: len(list(tcast.combinations()))] == list(tcast.combinations())
    assert {tcast.CATALOG[n] for n in primary_names()} <= space
    samples = [tcast.datatype(c) for _, codes in tcast.AXIS_SAMPLES for c in codes]
    assert set(samples) <= space and len(DTYPES) == len(space)
    seen = _axes(FAST)
    # element widths 2..32 for ints and uints, P3109 p1..p7, tiles 2..1024
    widths = {
        int(c[4:] if c.startswith("uint") else c[3:])
        for c in seen["element format"]
        if c.startswith(("int", "uint"))
    }
    assert {2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32} <= widths
    assert {f"binary8p{p}" for p in range(1, 8)} <= seen["element format"]
    sizes = {t for code in seen["tile"] if code for t in code.split("_")}
    assert {"t2", "t4", "t8", "t16", "t32", "t64", "t128", "t256", "t512", "t1024"} <= sizes


def test_full_tier_spans_every_combination_and_mode():
    for dt in DTYPES:
        for rm in RoundMode:
            cases = cb.full_cases(dt, rm)
            assert {c.scalemode for c in cases} == set(ScaleMode), dt.code
            assert all(set(c.castmodes) == set(CastMode) for c in cases), dt.code
            assert {c.saturate for c in cases} == {True, False}, dt.code
            assert {c.transpose_scale for c in cases} == {True, False}, dt.code
            want = {"seed", "rbits"} if rm is RoundMode.STOCHASTIC else {None}
            assert {c.rsource for c in cases} == want, dt.code
            if dt.sspec is None:  # saturate changes bits: both values under every scale mode
                assert {(c.scalemode, c.saturate) for c in cases} == set(
                    itertools.product(ScaleMode, (True, False))
                ), dt.code


def test_battery_holds_every_edge_kind():
    """NaN of both signs, +-Inf, +-0, float32 subnormals, all-zero and empty inputs, ranks 1-3,
    every input dtype, a non-contiguous view, random words with 0 and 2^32-1 (explicit K-bit
    rbits 0 and 2^K-1, their top bits), 64-bit seeds on Philox streams 0, 1 and 2^32-1."""
    for dt in DTYPES:
        entries = cb.battery(dt)
        assert all(e.x.size <= cb.EXACT_MAX_ELEMENTS for e in entries), dt.code
        assert {e.input_dtype for e in entries} == set(cb.INPUT_DTYPES), dt.code
        assert {e.x.ndim for e in entries} == {1, 2, 3}, dt.code
        assert any(not e.x.flags.c_contiguous for e in entries), dt.code
        for e in entries:
            assert e.rbits.dtype == np.uint32 and e.rbits.shape == e.x.shape
            assert e.seed >= 1 << 32
        values = np.concatenate([e.x.astype(np.float32).reshape(-1) for e in entries])
        bits = cb.bits_of(values)
        assert np.isin(
            [0x7FC00000, 0xFFC00000, 0x7F800000, 0xFF800000, 0, 0x80000000], bits
        ).all(), dt.code
        finite = values[np.isfinite(values)]
        assert ((finite != 0) & (np.abs(finite) < 2.0**-126)).any(), dt.code
        zeros = [e for e in entries if e.name == "zeros"]
        assert zeros and all((z.x == 0).all() for z in zeros), dt.code
        assert any(e.rbits.min() == 0 and e.rbits.max() == 0xFFFFFFFF for e in entries)
        assert {e.stream for e in entries} == {0, 1, 0xFFFFFFFF}, dt.code
        for k, kind in ((8, np.uint8), (16, np.uint16)):  # a case's bits: the words' top K
            r = entries[0].rbits_of(k)
            assert r.dtype == kind and r.shape == entries[0].x.shape
            assert np.array_equal(r, entries[0].rbits >> (32 - k))
            ends = [(e.rbits_of(k).min(), e.rbits_of(k).max()) for e in entries]
            assert (0, (1 << k) - 1) in ends, dt.code
        empty = cb.empty_entries(dt)
        assert empty and all(e.x.size == 0 for e in empty), dt.code


def test_battery_holds_the_named_edge_values():
    """e4m3fn: 448, the overflow tie 464 and just above it, 480 (trunc region), the subnormal
    ties 2^-10 and 3*2^-10; e2m1: the tie table; MXFP4: a block with amax 2^k and one with
    the largest float32 below 2^k; MXINT8: an amax above 127/64 * 2^k."""
    e4 = np.concatenate(
        [e.x.astype(np.float32).reshape(-1) for e in cb.battery(tcast.datatype("e4m3fn"))]
    )
    for v in (
        448,
        464,
        np.nextafter(np.float32(464), np.float32(1e9)),
        480,
        2.0**-10,
        3 * 2.0**-10,
    ):
        assert np.isin(np.float32(v), np.abs(e4)), v
    e2 = np.abs(
        np.concatenate(
            [e.x.astype(np.float32).reshape(-1) for e in cb.battery(tcast.datatype("e2m1f"))]
        )
    )
    assert np.isin(np.float32([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5]), e2).all()
    amaxes = set()
    for dt in (tcast.mxfp4, tcast.mxint8):
        for e in cb.battery(dt):
            if e.name != "edge":
                continue
            x = np.abs(e.x.astype(np.float32))
            for _, idx in tcast.exact.block_indices(e.x.shape, dt)[1]:
                block = x.reshape(-1)[idx]
                if block.size and np.isfinite(block).all():
                    amaxes.add((dt.code, e.input_dtype, float(block.max())))
    m4 = [(i, a) for c, i, a in amaxes if c == tcast.mxfp4.code and a > 0]
    assert any(float(np.log2(a)).is_integer() for _, a in m4)  # amax exactly 2^k
    pow2 = {2.0**k for k in range(-40, 40)}
    assert any(
        np.nextafter(np.float32(a), np.float32(np.inf)).item() in pow2
        for i, a in m4
        if i == "float32"
    )  # the largest float32 below 2^k
    mi = [a for c, _, a in amaxes if c == tcast.mxint8.code and a > 0]
    assert any(a / 2.0 ** np.floor(np.log2(a)) > 127 / 64 for a in mi)  # above max


def test_conformance_space_holds_the_subtile_and_codebook_axes():
    """The named MSFP and codebook datatypes, offset widths o1..o3, 1-D and 2-D subtiles,
    float-scaled and two-level offsets, every implicit pattern kind, a two-level codebook and
    the given NF4 table: after the other datatypes, in a fixed order."""
    space = DTYPES
    names = ("mx9", "mx6", "mx4", "mxfi4", "mxfp4m", "mxfp4e", "mxfp4f4", "nf4")
    assert {tcast.datatype(n) for n in names} <= set(space)
    meta = [
        dt
        for dt in space
        if dt.sspec is not None and (dt.sspec.has_subtile or dt.nspec.is_codebook)
    ]
    assert space[-len(meta) :] == meta  # the last axis samples
    offsets = [dt for dt in meta if dt.sspec.offset_bits]
    assert {dt.sspec.offset_bits for dt in offsets} == {1, 2, 3}
    assert any(len(dt.sspec.tiles) == 2 for dt in offsets)
    assert any(not dt.sspec.scale.is_exponent for dt in offsets)
    assert any(dt.is_multiscale for dt in offsets) and any(dt.nspec.is_float for dt in offsets)
    books = [dt for dt in meta if dt.nspec.is_codebook]
    kinds = {c for dt in books for c in dt.nspec.desc if c in "fipse"}
    assert kinds == set("fipse")
    assert any(dt.is_multiscale for dt in books) and any(len(dt.sspec.tiles) == 2 for dt in books)
    assert any(not dt.nspec.symmetric for dt in books)  # a given table


def _blocks_of(dt, entries):
    """(block values as float32, the entry's input dtype) of every block of ``entries``."""
    for e in entries:
        x = e.x.astype(np.float32).reshape(-1)
        for _, idx in tcast.exact.block_indices(e.x.shape, dt)[1]:
            yield x[idx], e.x.dtype


def test_battery_of_subtile_datatypes_holds_offset_and_mapping_edges():
    """mx9: a block whose amax is 127/64 * 2^k holding the largest float32 below 2^(k-d),
    which rounds up to the binade edge of offset d; mxfp4m: a block holding 0.5 * 2^k and
    0.75 * 2^k beside each other, whose squared errors tie between its two mappings."""
    mx9 = tcast.datatype("mx9")
    edge = False
    for b, idt in _blocks_of(mx9, cb.battery(mx9)):
        a = np.abs(b[np.isfinite(b)])
        if a.size < 2 or a.max() == 0:
            continue
        k = np.floor(np.log2(a.max()))
        top = np.asarray(np.float32(2.0**k)).astype(idt)
        below = np.float32(np.nextafter(top, np.zeros((), idt)))  # rounds up under offset 1
        edge |= bool(a.max() == np.float32(127 / 64 * 2.0**k) and (a == below).any())
    assert edge
    m4 = tcast.datatype("mxfp4m")
    tie = False
    for b, _ in _blocks_of(m4, cb.battery(m4)):
        a = np.abs(b).astype(np.float64)
        if np.isfinite(a).all():
            tie |= bool(((a[:-1] > 0) & (a[:-1] * 3 == a[1:] * 2)).any())
    assert tie


def _adapter_samples():
    nan = np.float32(np.nan)
    f32 = np.array([0, -0.0, 1, -nan, nan, np.inf, -np.inf, 2.0**-149], np.float32)
    return [
        f32,
        f32.astype(np.float16),
        f32.astype(ml_dtypes.bfloat16),
        np.array([0, 1, 0xFFFFFFFF, 0x80000000], np.uint32),
        np.array([0, 0xFF, 0x7F], np.uint8),
        np.array([0, 0xFFFF, 0x8000], np.uint16),
        np.array([True, False]),
        np.arange(6, dtype=np.float32).reshape(2, 3).T,  # a non-contiguous view
    ]


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_adapter_round_trips_bits(kind):
    adapter = cb.numpy_adapter() if kind == "numpy" else None
    if kind == "torch":
        pytest.importorskip("torch")
        adapter = cb.torch_adapter()
    for a in _adapter_samples():
        back = adapter.to_numpy(adapter.to_engine(a))
        assert back.dtype == a.dtype and back.shape == a.shape
        if a.dtype == bool:
            assert (back == a).all()
        else:
            assert (cb.bits_of(back) == cb.bits_of(a)).all(), a.dtype
    assert adapter.to_numpy(None) is None


class _NumpyOpsOnTensors:
    """tcast_ref's CastResult operations, on tensors moved to NumPy (the stand-in's ArrayOps)."""

    def __init__(self, to_numpy):
        import tcast_ref

        self.ops, self.to_numpy = tcast_ref.engine.result_ops, to_numpy

    def __getattr__(self, name):
        op = getattr(self.ops, name)
        return lambda *args: op(*(self.to_numpy(a) if hasattr(a, "dtype") else a for a in args))


class _TorchWrappedRef(tcast.kit.EngineBase):
    """tcast_ref behind torch tensors: a stand-in for a torch engine, to run the harness's
    torch adapter and tcast_ref-oracle path end to end independently of tcast_torch."""

    name = "torch-wrapped-ref"
    priority = -1
    array_what = "torch tensors"

    def __init__(self):
        import torch

        self.array_type = torch.Tensor
        self.adapter = cb.torch_adapter()
        self.result_ops = _NumpyOpsOnTensors(self.adapter.to_numpy)

    def check_rbits(self, x, rbits, width):
        return rbits

    def run(self, x, req):
        import tcast_ref

        to_np, to_t = self.adapter.to_numpy, self.adapter.to_engine
        rbits = None if req.rbits is None else to_np(req.rbits)
        r = tcast_ref.cast(
            to_np(x),
            req.dtype,
            castmode=req.castmode,
            roundmode=req.roundmode,
            scalemode=req.scalemode,
            seed=req.seed,
            stream=req.modes.stream,
            rbits=rbits,
            saturate=req.saturate,
            transpose_scale=req.transpose_scale,
        )
        if not isinstance(r, tcast.CastResult):
            return to_t(r)
        for f in ("data", "scale", "zero", "tenscale", "mask"):
            v = getattr(r, f)
            setattr(r, f, None if v is None else to_t(np.asarray(v)))
        r.engine = self.name
        return r

    def run_upcast(self, result):
        import tcast_ref

        to_np = self.adapter.to_numpy
        r = tcast.CastResult(**{**result.__dict__, "engine": "ref"})
        for f in ("data", "scale", "zero", "tenscale", "mask"):
            setattr(r, f, to_np(getattr(r, f)))
        return self.adapter.to_engine(tcast_ref.upcast(r))


_SELF_TEST_DTYPES = (
    "mxfp4",
    "nvfp4",
    "mxint8_2d",
    "uint4_fic",
    "e4m3fn",
    "e5m2",
    "e2m1f_e8m0_t32n2m4",
    "int8_bfloat16_t8d0",
)


def test_harness_runs_a_torch_engine_through_the_torch_adapter():
    """The torch adapter and the tcast_ref oracle (with the large entries) accept a correct
    torch engine: every output crosses torch and back bit for bit."""
    pytest.importorskip("torch")
    engine = _TorchWrappedRef()
    adapter = cb.adapter_for(engine)
    assert adapter is not None and adapter.name.startswith("torch")
    cases = []
    for i, name in enumerate(_SELF_TEST_DTYPES):
        dt = tcast.datatype(name)
        rm, sm = cb.ROUND_MODES[i % 4], cb.SCALE_MODES[i % 5]
        cases.append(cb.Case(dt, rm, sm, saturate=i % 2 == 0, transpose_scale=i % 2 == 1))
        cases.append(cb.Case(dt, RoundMode.STOCHASTIC, sm, rsource=("seed", "rbits")[i % 2]))
    _check(engine, adapter, cb.RefOracle(), cases, cb.large_battery)


def test_harness_reports_a_wrong_bit(flip_one_bit_engine):
    """A result that differs in one bit fails the check, naming the output that differs."""
    case = cb.Case(tcast.mxfp8, RoundMode.EVEN, castmodes=(CastMode.VIRTUAL,))
    with pytest.raises(pytest.fail.Exception, match="virtual: 1 of 64 differ"):
        _check(
            flip_one_bit_engine,
            cb.numpy_adapter(),
            cb.ExactOracle(),
            [case],
            lambda dt: cb.battery(dt)[:1],
        )
