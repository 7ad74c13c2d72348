"""tcast_ref against the exact model: unscaled casts of every float16 and bfloat16 bit pattern.

Every float format of at most 8 bits in ``tcast.CATALOG`` (20 formats) receives all 65,536
float16 and all 65,536 bfloat16 bit patterns (NaN payloads, ±0, ±Inf and subnormals
included) under every deterministic round mode, saturating and IEEE overflow, and the
reference's codes (actual), virtual bits (in the input dtype) and upcast bits must equal
what ``tcast.exact.encode`` / ``decode`` / ``to_input_dtype`` give. Stochastic rounding is
checked with fixed 8-bit random integers (every format here has ``K = 8``, SEMANTICS.md
§3.2: all zeros, all ones, 0x80) and with seeded bits, which must be
``tcast.random_bits(seed, range(n), 8)`` by logical C-order flat index, also for
non-contiguous and transposed views.

Cost and how it is kept down. The exact model takes about 15-25 us per encode
(pure Python, Fractions). The two input sets share few values (122,112 distinct
float32 values, 2,046 of them NaN payloads), so each (format, mode) is encoded
once per distinct value and the reference's results are looked up by value.
``saturate`` only matters in the exact model's overflow branch, whose saturating
result is ±max: so the IEEE-overflow codes are computed only where the
saturating code is ±max (overflow, ±Inf, or a value that rounds to max), and
reused elsewhere (checked on a sample by
``test_saturation_only_changes_codes_that_saturate_in_the_exact_model``); the
reference itself is compared on *all* inputs under both settings. The exact
encodes run on a spawn-based pool of two worker processes.

Timings (``pytest`` of this module on 2 cores shared with other jobs at a load of
about 2.5, so the pool gets roughly one core): the module takes 200 s wall and 232 s of CPU
in all (workers included); the deterministic sweep, 20 formats x 4 modes x
122,112 values, is about 190 s of CPU (about 2.4 s per format and mode), RNE
alone about 50 s; the stochastic tests about 10 s. On two idle cores that is
about 120 s wall for the module. The full sweep costs well under 4 minutes on
2 cores, so it stays in the default tier: there is no ``full`` marker here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tcast
import tcast_ref
from tcast import exact
from tcast_ref import _philox as ref_philox

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:  # the helper module, importable by name (also in pool workers)
    sys.path.insert(0, _HERE)
import _ref_testutil as util  # noqa: E402

#: Every float format of at most 8 bits among the catalog's unscaled entries (20 formats).
FORMATS = list(
    {
        dt.nspec.code: dt.nspec
        for dt in tcast.CATALOG.values()
        if dt.sspec is None and dt.nspec.is_float and dt.nspec.bits <= 8
    }.values()
)
FORMAT_IDS = [n.code for n in FORMATS]
DIRECTED = ["away", "zero", "trunc"]


def _all_patterns(name: str) -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint16).view(util.NP_DTYPES[name])


INPUTS = {name: _all_patterns(name) for name in ("float16", "bfloat16")}
#: The distinct float32 values of both input sets, as sorted raw bits.
UNIQUE = np.unique(np.concatenate([util.raw(x.astype(np.float32)) for x in INPUTS.values()]))
#: For each input set, the position of each input's value in UNIQUE.
WHERE = {
    name: np.searchsorted(UNIQUE, util.raw(x.astype(np.float32))) for name, x in INPUTS.items()
}


@pytest.fixture(scope="module")
def pool():
    p = util.make_pool()
    yield p
    p.shutdown()


# ----------------------------------------------------------------- exact tables
_EXACT: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}


def _saturating_max(n, codes: np.ndarray) -> np.ndarray:
    """Positions whose code is ±max (the only codes saturation can have produced)."""
    return np.flatnonzero((codes & np.uint32(n.sign_bit - 1)) == n.max_code)


def exact_codes(pool, n, mode: str, values: np.ndarray, rbits=None) -> tuple[np.ndarray, ...]:
    """exact.encode of every value, saturating and not (the latter only where it can differ)."""
    sat = util.encode_many(pool, n.code, mode, True, values, rbits)
    nosat = sat.copy()
    idx = _saturating_max(n, sat)
    if idx.size:
        r = rbits if rbits is None or isinstance(rbits, int) else np.asarray(rbits)[idx]
        nosat[idx] = util.encode_many(pool, n.code, mode, False, values[idx], r)
    return sat, nosat


def exact_unique_codes(pool, n, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact codes (saturating, IEEE overflow) of every value of UNIQUE, computed once."""
    key = (n.code, mode)
    if key not in _EXACT:
        _EXACT[key] = exact_codes(pool, n, mode, UNIQUE.view(np.float32))
    return _EXACT[key]


def virtual_table(n, in_name: str) -> np.ndarray:
    """Raw input-dtype bits of exact.to_input_dtype(exact.decode(code)) for every code."""
    return util.floats_to_bits(
        (exact.to_input_dtype(v, in_name) for v in util.decode_table(n.code)), in_name
    )


def upcast_table(n) -> np.ndarray:
    """float32 bits of exact.decode(code) for every code."""
    return util.floats_to_bits(util.decode_table(n.code), "float32")


def check_against_exact(
    x: np.ndarray, n, mode: str, saturate: bool, want_codes: np.ndarray, rbits=None, seed=None
) -> str:
    """Compare actual codes, virtual bits and upcast bits of tcast_ref with the exact codes."""
    in_name = next(k for k, v in util.NP_DTYPES.items() if v == x.dtype)
    dt = tcast.datatype(n)
    kw = {"roundmode": mode, "saturate": saturate, "rbits": rbits, "seed": seed}
    # All 16-bit patterns include signalling NaNs: the casts must not warn either
    # (filterwarnings=error turns a NumPy "invalid value" warning into a failure).
    res = tcast_ref.cast(x, dt, castmode="actual", **kw)
    virt = tcast_ref.cast(x, dt, **kw)
    assert virt.dtype == x.dtype and virt.shape == x.shape
    assert res.data.shape == x.shape and res.extra["bits"] == n.bits
    flat = np.ascontiguousarray(x).reshape(-1)
    want_virtual = virtual_table(n, in_name)[want_codes]
    nan = np.flatnonzero(np.isnan(flat.astype(np.float32)))
    if nan.size:
        # An input NaN: the exact model's unscaled block cast says what the virtual result is
        # (the canonical NaN with the input's sign where the format has no NaN code, §4.2/§7).
        rb = None if rbits is None else [int(r) for r in np.asarray(rbits).reshape(-1)[nan]]
        if seed is not None:
            # Philox by flat C-order index, K = n.rbits_width bits per element
            rb = tcast.random_bits(seed, nan.tolist(), n.rbits_width)
        blk = exact.cast_block(
            [float(v) for v in flat[nan].astype(np.float32)],
            dt,
            roundmode=mode,
            rbits=rb,
            saturate=saturate,
        )
        assert list(blk.codes) == want_codes[nan].tolist()
        want_virtual[nan] = util.floats_to_bits(
            (exact.to_input_dtype(v, in_name) for v in blk.values), in_name
        )
    label = f"{n.code} {in_name} {mode} saturate={saturate}"
    msgs = [
        util.first_mismatches(f"{label} codes", res.data, want_codes, flat),
        util.first_mismatches(f"{label} virtual", util.raw(virt), want_virtual, flat),
        # upcast decodes codes: an input NaN in a finite-only format has code 0 and gives +0 (§8)
        util.first_mismatches(
            f"{label} upcast", util.raw(tcast_ref.upcast(res)), upcast_table(n)[want_codes], flat
        ),
    ]
    return "\n".join(m for m in msgs if m)


def _sweep(pool, n, mode: str) -> None:
    sat, nosat = exact_unique_codes(pool, n, mode)
    msgs = []
    for in_name, x in INPUTS.items():
        for saturate, table in ((True, sat), (False, nosat)):
            msgs.append(check_against_exact(x, n, mode, saturate, table[WHERE[in_name]]))
    msg = "\n".join(m for m in msgs if m)
    assert not msg, msg


# ----------------------------------------------------------------- deterministic modes
@pytest.mark.parametrize("n", FORMATS, ids=FORMAT_IDS)
def test_unscaled_round_to_nearest_even_matches_exact_on_every_16_bit_input(pool, n):
    _sweep(pool, n, "even")


# Fast tier (make test): each format under one directed mode, the modes rotated over the
# formats, so every mode meets a third of the formats; the full tier (-m full) runs the rest.
_DIRECTED_CASES = [
    pytest.param(
        n,
        mode,
        id=f"{n.code}-{mode}",
        marks=() if mode == DIRECTED[i % len(DIRECTED)] else pytest.mark.full,
    )
    for i, n in enumerate(FORMATS)
    for mode in DIRECTED
]


@pytest.mark.parametrize(("n", "mode"), _DIRECTED_CASES)
def test_unscaled_away_zero_and_trunc_match_exact_on_every_16_bit_input(pool, n, mode):
    _sweep(pool, n, mode)


def test_saturation_only_changes_codes_that_saturate_in_the_exact_model(pool):
    # The shortcut above relies on this property of the oracle (SEMANTICS.md §4.1): the IEEE
    # overflow code differs from the saturating one only where the saturating code is ±max.
    rng = np.random.default_rng(11)
    vals = UNIQUE[rng.choice(UNIQUE.size, 1500, replace=False)].view(np.float32)
    for n in FORMATS:
        for mode in ("even", "trunc"):
            sat = util.encode_many(pool, n.code, mode, True, vals)
            nosat = util.encode_many(pool, n.code, mode, False, vals)
            differ = np.flatnonzero(sat != nosat)
            assert set(differ) <= set(_saturating_max(n, sat)), (n.code, mode)


def test_the_sweep_covers_every_float_format_of_at_most_8_bits():
    assert len(FORMATS) == 20
    assert {
        "e4m3fn",
        "e5m2",
        "e4m3b8fnuz",
        "e5m2b16fnuz",
        "e4m3b11fnuz",
        "e3m4",
        "e4m3",
        "e2m3f",
        "e3m2f",
        "e2m1f",
        "e2m1fnuz",
        "e2m3fnuz",
        "e3m2fnuz",
    } <= set(FORMAT_IDS)
    assert {f"binary8p{p}" for p in range(1, 8)} <= set(FORMAT_IDS)
    assert UNIQUE.size == 122112 and all(v.size == 65536 for v in INPUTS.values())


# ----------------------------------------------------------------- stochastic rounding
SR_COUNT = 2048  # values per input dtype and format
#: Every format here is of at most 8 bits: K = 8 random bits per element (SEMANTICS.md §3.2).
K = 8
FIXED_RBITS = {"zeros": 0, "ones": 0xFF, "half": 0x80}


def _sr_sample(n, in_name: str, salt: int) -> np.ndarray:
    """Half any bit pattern, half patterns within the format's range (where rounding happens)."""
    rng = np.random.default_rng(1000 + salt)
    x = INPUTS[in_name]
    mag = np.abs(x.astype(np.float32))
    inside = np.flatnonzero((mag >= n.smallest_subnormal / 4) & (mag <= 2 * n.maxfloat))
    half = SR_COUNT // 2
    picks = np.r_[rng.choice(x.size, half, replace=False), rng.choice(inside, half, replace=False)]
    return x[picks]


@pytest.mark.parametrize("n", FORMATS, ids=FORMAT_IDS)
def test_stochastic_rounding_with_fixed_random_bits_matches_exact(pool, n):
    assert n.rbits_width == K
    msgs = []
    for k, in_name in enumerate(INPUTS):
        x = _sr_sample(n, in_name, k)
        x32 = x.astype(np.float32)
        for label, r in FIXED_RBITS.items():
            sat, nosat = exact_codes(pool, n, "stochastic", x32, r)
            rb = np.full(x.shape, r, np.uint8)
            for saturate, want in ((True, sat), (False, nosat)):
                m = check_against_exact(x, n, "stochastic", saturate, want, rbits=rb)
                msgs.append(m and f"rbits {label}: {m}")
    msg = "\n".join(m for m in msgs if m)
    assert not msg, msg


@pytest.mark.parametrize("n", FORMATS, ids=FORMAT_IDS)
def test_seeded_stochastic_rounding_equals_explicit_philox_bits_and_exact(pool, n):
    seed = 0x5EED + len(n.code)
    msgs = []
    for k, in_name in enumerate(INPUTS):
        x = _sr_sample(n, in_name, 7 + k)
        rb = np.array(tcast.random_bits(seed, range(x.size), K), np.uint8)
        sat, nosat = exact_codes(pool, n, "stochastic", x.astype(np.float32), rb)
        for saturate, want in ((True, sat), (False, nosat)):
            msgs.append(check_against_exact(x, n, "stochastic", saturate, want, seed=seed))
            a = tcast_ref.cast(
                x, n.code, castmode="actual", roundmode="stochastic", seed=seed, saturate=saturate
            )
            b = tcast_ref.cast(
                x, n.code, castmode="actual", roundmode="stochastic", rbits=rb, saturate=saturate
            )
            assert np.array_equal(a.data, b.data)
    msg = "\n".join(m for m in msgs if m)
    assert not msg, msg


def _views(base: np.ndarray) -> dict[str, np.ndarray]:
    return {
        "strided": base[::2, 1::3],
        "transposed": base.T,
        "reversed-transposed": base[::-1, ::2].T,
        "column": base[:, 5],
        "3-d-transposed": base.reshape(6, 8, 16).transpose(2, 0, 1),
    }


@pytest.mark.parametrize("in_name", ["float32", "float16", "bfloat16"])
def test_seeded_stochastic_rounding_draws_bits_by_logical_c_order_flat_index(pool, in_name):
    rng = np.random.default_rng(3)
    v = (rng.standard_normal(48 * 16) * np.exp2(rng.integers(-12, 12, 48 * 16))).astype(np.float32)
    base = v.astype(util.NP_DTYPES[in_name]).reshape(48, 16)
    seed = 2**40 + 17
    msgs = []
    for label, view in _views(base).items():
        assert not view.flags.c_contiguous
        rb = np.array(tcast.random_bits(seed, range(view.size), K), np.uint8).reshape(view.shape)
        logical = np.ascontiguousarray(view)  # the same values in logical C order
        for code in ("e4m3fn", "e2m1f", "binary8p3", "e5m2"):
            n = tcast.number(code)
            want = util.encode_many(
                pool, code, "stochastic", True, logical.astype(np.float32), rb.reshape(-1)
            )
            m = check_against_exact(view, n, "stochastic", True, want, seed=seed)
            msgs.append(m and f"{label}: {m}")
            kw = {"castmode": "actual", "roundmode": "stochastic"}
            got = tcast_ref.cast(view, code, seed=seed, **kw).data
            assert np.array_equal(got, tcast_ref.cast(view, code, rbits=rb, **kw).data), label
            assert np.array_equal(got, tcast_ref.cast(logical, code, seed=seed, **kw).data), label
    msg = "\n".join(m for m in msgs if m)
    assert not msg, msg


def _starts(width: int) -> list[int]:
    """Starts at several residues mod ``E = 128 / width`` (elements per call) and mod
    ``32 / width`` (elements per word), across the low counter word's end (call 2**32, element
    ``E * 2**32``) and at the last indices."""
    e = 128 // width
    return [0, 1, 3, 5, e - 1, e + 7, 3 * e - 2, e * 2**32 - 301, e * 2**32 - 2, e * 2**32 + 3]


def _counts(width: int) -> list[int]:
    """Counts that end at several residues and cross one and two call boundaries."""
    e = 128 // width
    return [0, 1, 2, 3, 5, e - 1, e, e + 1, 2 * e + 3, 600]


# (seed, stream): stream 0 (the single cast's default), 1 (a dual cast's column result), the last
@pytest.mark.parametrize(
    ("seed", "stream"),
    [(0, 0), (1, 1), (0xFFFFFFFF, 0), (2**32 + 5, 2**32 - 1), (2**64 - 1, 1)],
)
def test_reference_random_bits_are_the_documented_philox_integers_by_flat_index(seed, stream):
    for width, dtype in ((8, np.uint8), (16, np.uint16)):
        kw = {"width": width, "stream": stream}
        got = tcast_ref.random_bits(seed, 600, **kw)
        assert got.dtype == dtype and got.tolist() == tcast.random_bits(seed, range(600), **kw)
        for start in [*_starts(width), 2**64 - 600]:
            for count in _counts(width):
                got = tcast_ref.random_bits(seed, count, start, **kw)
                assert got.dtype == dtype and got.shape == (count,)
                want = tcast.random_bits(seed, range(start, start + count), **kw)
                assert got.tolist() == want, (width, start, count)
        # by hand from the raw generator: element E*c + j takes bits [K*b, K*b + K) of word
        # j // (32 / K), b = j % (32 / K), of the call at counter (c mod 2**32, c >> 32, stream, 0)
        e, per_word, c = 128 // width, 32 // width, 2**32 + 7
        key = (seed & 0xFFFFFFFF, seed >> 32)
        words = tcast.philox4x32((c & 0xFFFFFFFF, c >> 32, stream, 0), key)
        want = [(words[j // per_word] >> (width * (j % per_word))) % (1 << width) for j in range(e)]
        assert tcast_ref.random_bits(seed, e, e * c, **kw).tolist() == want
        assert tcast_ref.random_bits(seed, 3, e * c + e - 2, **kw).tolist()[:2] == want[-2:]


def test_reference_random_bits_are_the_same_across_its_pieces(monkeypatch):
    # pieces of 3 calls (48 elements for K = 8, 24 for K = 16) put piece edges at many
    # residues of an unaligned start
    cases = [(w, t, s) for w in (8, 16) for t in (0, 1) for s in (0, 1, 2, 3, 9, 2**36 - 50)]
    want = {(w, t, s): tcast_ref.random_bits(77, 100, s, width=w, stream=t) for w, t, s in cases}
    monkeypatch.setattr(ref_philox, "_CALLS", 3)
    for (w, t, s), v in want.items():
        v = v.tolist()
        assert tcast_ref.random_bits(77, 100, s, width=w, stream=t).tolist() == v
        assert v == tcast.random_bits(77, range(s, s + 100), w, stream=t)


@pytest.mark.parametrize(
    ("count", "start"), [(-1, 0), (1, -1), (1.0, 0), (1, True), (2, 2**64 - 1)]
)
def test_reference_random_bits_refuse_counts_and_starts_out_of_range(count, start):
    with pytest.raises(tcast.SpecError):
        tcast_ref.random_bits(1, count, start, width=8)


def test_reference_random_bits_refuse_widths_and_streams_out_of_range():
    for kw in (
        {"width": 32},
        {"width": 4},
        {"width": True},
        {"width": 8, "stream": -1},
        {"width": 16, "stream": 2**32},
        {"width": 8, "stream": True},
        {"width": 8, "stream": 1.0},
    ):
        with pytest.raises(tcast.SpecError):
            tcast_ref.random_bits(1, 4, **kw)
    with pytest.raises(TypeError):  # no default width: K is the datatype's
        tcast_ref.random_bits(1, 4)  # type: ignore[call-arg]
