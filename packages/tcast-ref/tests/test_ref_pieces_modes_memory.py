"""The reference engine at the edges of its implementation: custom biases below float32's
normal range, modes given as names, piece boundaries, malformed results, and the memory bound
(at most 4x the input's bytes besides the output)."""

import dataclasses
import tracemalloc

import ml_dtypes
import numpy as np
import pytest

import tcast
import tcast_ref
import tcast_ref._cast as ref_cast
import tcast_ref._pack as ref_pack
from tcast import SpecError, exact


def u32(a):
    return np.asarray(a, np.float32).view(np.uint32)


@pytest.mark.parametrize("code", ["e8m2b135fn", "e7m2b128uz", "e8m3b140", "e8m1b148f"])
def test_formats_reaching_below_float32_normals_round_float32_subnormals_exactly(code):
    # The float32 carry trick only knows float32's own grid; formats whose smallest normal is
    # below 2^-126 must round float32 subnormal inputs at their own spacing (SEMANTICS §3.1).
    rng = np.random.default_rng(0)
    sub = rng.integers(1, 1 << 23, 48, dtype=np.uint32).view(np.float32)
    x = np.concatenate([sub, -sub[:16], np.float32([1e-38, 2e-38, 1.2e-38, 0.0])])
    want = exact.cast_array([float(v) for v in x], x.shape, code).values
    assert np.array_equal(u32(tcast_ref.cast(x, code)), u32(want))
    up = tcast_ref.upcast(tcast_ref.cast(x, code, castmode="actual"))
    assert np.array_equal(u32(up), u32(want))


def test_encode_takes_mode_names_and_spec_codes():
    n = tcast.number("e2m1f")
    x = np.array([1.9, 1.25], np.float32)
    assert tcast_ref.encode(x, n, "trunc").tolist() == [3, 2]  # 1.5 and 1.0
    assert tcast_ref.encode(x, "e2m1f", "away").tolist() == [4, 3]  # 2.0 and 1.5 (tie away)
    assert tcast_ref.encode(x, "e2m1f", "nearest").tolist() == [4, 3]
    assert tcast_ref.decode(np.array([7, 15], np.uint8), "e2m1f").tolist() == [6.0, -6.0]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mode": "stochastic"}, "needs rbits"),
        ({"mode": "stochastic", "rbits": np.zeros(3, np.uint8)}, "shape"),
        # K = 8 random bits for e2m1f (SEMANTICS.md §3.3): the message names uint8
        ({"mode": "stochastic", "rbits": np.zeros(2, np.int64)}, "must be uint8"),
        ({"mode": "stochastic", "rbits": np.zeros(2, np.uint32)}, "must be uint8"),
        ({"mode": "stochastic", "rbits": np.zeros(2, np.uint16)}, "must be uint8"),
        ({"mode": "banker"}, "round mode"),
    ],
)
def test_encode_rejects_bad_modes_and_bits(kwargs, match):
    with pytest.raises(SpecError, match=match):
        tcast_ref.encode(np.ones(2, np.float32), "e2m1f", **kwargs)


def test_encode_takes_k_bit_rbits():
    # e2m1f (K = 8): 1.25 lies half way between 1.0 (code 2) and 1.5 (code 3): floor(frac 2^8)
    # = 128, up iff r >= 128. e8m7 (bfloat16, K = 16): 1 + 2^-23 has frac 2^-16 on the grid
    # 2^-7: up only for r = 0xFFFF.
    x = np.array([1.25, 1.25], np.float32)
    rb = np.array([0x80, 0x7F], np.uint8)
    assert tcast_ref.encode(x, "e2m1f", "stochastic", rb).tolist() == [3, 2]
    x = np.array([1 + 2.0**-23] * 2, np.float32)
    rb = np.array([0xFFFF, 0xFFFE], np.uint16)
    assert tcast_ref.encode(x, "e8m7", "stochastic", rb).tolist() == [0x3F81, 0x3F80]
    pairs = zip(x.tolist(), rb.tolist(), strict=True)
    assert [exact.encode(v, "e8m7", "stochastic", r) for v, r in pairs] == [0x3F81, 0x3F80]
    with pytest.raises(SpecError, match="must be uint16"):
        tcast_ref.encode(x, "e8m7", "stochastic", rb.astype(np.uint8))


def test_encode_of_wide_inputs_rounds_them_to_float32_without_warnings():
    assert tcast_ref.encode(np.array([1e300, -1e300]), "e2m1f").tolist() == [7, 15]
    with pytest.raises(SpecError, match="integer"):
        tcast_ref.decode(np.array([1.0]), "e2m1f")


@pytest.mark.parametrize("chunk", [7, 33])
@pytest.mark.parametrize(
    ("dtype", "shape", "kw"),
    [
        ("mxfp4", (3, 70), {}),
        ("fp8_F", (5, 13), {"roundmode": "stochastic", "seed": 11}),
        ("e2m1f_e8m0_t32", (2, 64), {"roundmode": "stochastic", "seed": 2**40}),
        ("e2m1f_e8m0_t8d0", (20, 3), {"roundmode": "stochastic", "seed": 5}),
        ("uint8_bi", (4, 40), {"roundmode": "trunc"}),
        ("e2m1f_e8m0_t0n2m4", (3, 50), {}),
        ("nvfp4", (2, 48), {"castmode": "actual"}),
        ("e4m3fn", (130,), {"roundmode": "stochastic", "seed": 3}),
    ],
)
def test_piece_boundaries_do_not_change_any_bit(monkeypatch, chunk, dtype, shape, kw):
    rng = np.random.default_rng(chunk)
    x = (rng.standard_normal(shape) * 8).astype(np.float32)
    mode_kw = {k: v for k, v in kw.items() if k != "castmode"}
    want = exact.cast_array([float(v) for v in x.reshape(-1)], shape, dtype, **mode_kw)
    monkeypatch.setattr(ref_cast, "CHUNK", chunk)
    virtual = tcast_ref.cast(x, dtype, **mode_kw)
    assert np.array_equal(u32(virtual).reshape(-1), u32(want.values))
    actual = tcast_ref.cast(x, dtype, castmode="actual", **mode_kw)
    assert actual.data.reshape(-1).tolist() == list(want.codes)


def test_packing_in_small_pieces_keeps_the_bit_stream(monkeypatch):
    monkeypatch.setattr(ref_pack, "_PIECE", 16)
    rng = np.random.default_rng(3)
    for bits in (3, 5, 6, 7):
        codes = rng.integers(0, 1 << bits, 101, dtype=np.uint32)
        packed = tcast_ref.pack_codes(codes, bits)
        assert bytes(packed) == exact.pack_codes([int(c) for c in codes], bits)
        assert tcast_ref.unpack_codes(packed, bits, 101).tolist() == codes.tolist()


def test_upcast_refuses_results_that_do_not_fit_their_datatype():
    x = np.arange(64, dtype=np.float32).reshape(4, 16)
    res = tcast_ref.cast(x, "mxfp4t16", castmode="actual")
    bad = [
        (dataclasses.replace(res, shape=(4, 4)), r"data has shape \(4, 16\), expected \(4, 4\)"),
        (dataclasses.replace(res, scale=None), "needs scale"),
        (dataclasses.replace(res, scale=res.scale[:1]), "expected"),
        (dataclasses.replace(res, zero=res.scale), "must not have zero"),
        (dataclasses.replace(res, data=res.data.astype(np.int8)), "must be uint8 .*, not int8"),
    ]
    for r, match in bad:
        with pytest.raises(SpecError, match=match):
            tcast_ref.upcast(r)


def test_upcast_of_a_zero_d_result_is_an_array():
    out = tcast_ref.upcast(tcast_ref.cast(np.array(1.5, np.float32), "e4m3fn", castmode="actual"))
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == np.float32


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("dtype", "in_dt", "kw"),
    [
        ("mxfp4", np.float32, {"castmode": "compress"}),
        ("e3m3f_e8m0_t32", np.float32, {"castmode": "compress"}),
        ("uint4_bbc", np.float32, {"castmode": "compress"}),
        ("mxfp8", np.float16, {"roundmode": "stochastic", "seed": 1}),
        ("mxfp8", ml_dtypes.bfloat16, {}),
        ("nvfp4", np.float32, {"castmode": "actual"}),
    ],
)
def test_peak_extra_memory_stays_within_four_times_the_input(dtype, in_dt, kw):
    # 16M elements: the scratch buffers, a constant ~20 MB, are small beside the input.
    x = np.random.default_rng(0).standard_normal((4096, 4096), np.float32).astype(in_dt)
    res = None

    def run():
        nonlocal res
        res = tcast_ref.cast(x, dtype, **kw)

    assert _peak(run) <= 4 * x.nbytes
    if kw.get("castmode") in ("actual", "compress"):
        assert _peak(lambda: tcast_ref.upcast(res)) <= 4 * x.nbytes + x.size * 4
