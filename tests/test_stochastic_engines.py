"""Stochastic rounding's random bits (SEMANTICS.md §3.2, §3.3, §8.2) in every installed engine.

A few small casts, each judged by single ``tcast_ref`` casts, and ``tcast_ref`` itself by the
exact model and the spec's Philox (``tcast.random_bits``, pure Python):

* seeded, an 8-bit element format (``K`` = 8: 16 elements per Philox call) on stream 2**32-1
  (the counter's third word all ones), a seed using both key words, a non-contiguous input;
* seeded, a 16-bit element format (``K`` = 16: 8 elements per call) on the default stream 0;
* given 16-bit ``rbits`` (uint16; the torch engines also read int16 as the same bits);
* a seeded dual cast: the second result is the column datatype's cast on stream 1.

Engines are those that take a CPU array here (ref, torch; triton under ``TRITON_INTERPRET=1``,
or every engine on a GPU with ``TCAST_CONFORMANCE_DEVICE=cuda:0``).
"""

from __future__ import annotations

import os

import dual_checks as dc
import numpy as np
import pytest

import tcast
import tcast_ref

DEVICE = os.environ.get("TCAST_CONFORMANCE_DEVICE", "cpu")
SEED8 = 0xFEDC_BA98_7654_3210  # both 32-bit key words in use
SEED16 = (7 << 32) + 12345
LAST_STREAM = (1 << 32) - 1


def to_engine(name: str, a: np.ndarray, signed: bool = False):
    """``a`` as the array engine ``name`` takes (NumPy, or a torch tensor on DEVICE), or None.

    ``signed``: integer rbits as the torch signed type of their width (the same bits).
    """
    eng = tcast.load_engines().engines[name]
    if not signed and eng.accepts(a):
        return a
    try:
        import torch
    except ImportError:
        return None
    t = torch.from_numpy(a.view(np.int16) if signed and a.dtype == np.uint16 else a)
    return t.to(DEVICE) if eng.accepts(torch.zeros(1, device=DEVICE)) else None


ENGINES = [
    n
    for n in sorted(tcast.load_engines().engines)
    if to_engine(n, np.zeros((2, 2), np.float32)) is not None
]


def _input(shape, seed: int) -> np.ndarray:
    """Values off the grid of every format here (their rounding depends on the bits)."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * np.exp2(rng.integers(-6, 6, shape))).astype(np.float32)


def _check_ref_against_exact(x, code, **kw) -> None:
    """tcast_ref's actual cast equals the exact model's codes and scales."""
    r = tcast_ref.cast(x, code, castmode="actual", roundmode="stochastic", **kw)
    if "rbits" in kw:
        kw["rbits"] = kw["rbits"].reshape(-1).tolist()
    e = tcast.exact.cast_array(x.reshape(-1).tolist(), x.shape, code, roundmode="stochastic", **kw)
    assert np.array_equal(r.data.reshape(-1), np.array(e.codes, r.data.dtype)), code
    if e.scale is not None:
        assert np.array_equal(r.scale.reshape(-1), np.array(e.scale, r.scale.dtype)), code


@pytest.mark.parametrize(
    ("code", "width", "seed", "stream"),
    [("mxfp4", 8, SEED8, LAST_STREAM), ("e5m10_e8m0_t32", 16, SEED16, 0)],
)
def test_reference_seeded_bits_are_the_spec_bits(code, width, seed, stream):
    """tcast_ref's K-bit random integers are the spec's, and a seeded cast is the cast with
    them given as rbits; both equal the exact model."""
    assert tcast.rbits_width(code) == width
    n, first = 80, 1000  # 80: partial Philox calls at both ends of [1000, 1080)
    got = tcast_ref.random_bits(seed, n, first, width=width, stream=stream)
    assert got.dtype == (np.uint8 if width == 8 else np.uint16)
    assert got.tolist() == tcast.random_bits(seed, range(first, first + n), width, stream=stream)
    x = _input((3, 80), 1)
    bits = tcast_ref.random_bits(seed, x.size, width=width, stream=stream).reshape(x.shape)
    seeded = tcast_ref.cast(
        x, code, castmode="actual", roundmode="stochastic", seed=seed, stream=stream
    )
    given = tcast_ref.cast(x, code, castmode="actual", roundmode="stochastic", rbits=bits)
    assert not dc.differences(seeded, given, code)
    _check_ref_against_exact(x, code, seed=seed, stream=stream)
    # the stream and the key matter: other bits give other codes on these inputs
    other = tcast_ref.cast(
        x, code, castmode="actual", roundmode="stochastic", seed=seed, stream=stream ^ 1
    )
    assert not np.array_equal(seeded.data, other.data)


def test_reference_given_16_bit_rbits_equal_the_exact_model():
    x = _input((4, 50), 2)
    rbits = np.random.default_rng(3).integers(0, 1 << 16, x.shape, dtype=np.uint16)
    rbits.reshape(-1)[:2] = 0, 0xFFFF
    _check_ref_against_exact(x, "bfloat16", rbits=rbits)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_seeded_8_bit_cast_on_the_last_stream(engine_name):
    """mxfp4 on stream 2**32-1 of a 64-bit seed, a transposed (non-contiguous) input."""
    x = _input((80, 3), 4).T  # (3, 80): partial tiles, flat indices in x's C order
    _check_engine_against_ref(engine_name, x, "mxfp4", seed=SEED8, stream=LAST_STREAM)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_seeded_16_bit_cast(engine_name):
    _check_engine_against_ref(engine_name, _input((5, 70), 5), "e5m10_e8m0_t32", seed=SEED16)


def _check_engine_against_ref(engine_name, x, code, **kw):
    """The engine's seeded actual cast of ``x`` has tcast_ref's bits."""
    kw.update(castmode="actual", roundmode="stochastic")
    want = tcast_ref.cast(np.ascontiguousarray(x), code, **kw)
    got = tcast.cast(to_engine(engine_name, x), code, engine=engine_name, **kw)
    problems = dc.differences(got, want, code)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_given_16_bit_rbits(engine_name):
    """bfloat16 with uint16 bits, 0 and 0xFFFF among them (and int16 for torch tensors)."""
    x = _input((4, 50), 2)
    rbits = np.random.default_rng(3).integers(0, 1 << 16, x.shape, dtype=np.uint16)
    rbits.reshape(-1)[:2] = 0, 0xFFFF
    kw = dict(castmode="actual", roundmode="stochastic")
    want = tcast_ref.cast(x, "bfloat16", rbits=rbits, **kw)
    xe = to_engine(engine_name, x)
    sources = [to_engine(engine_name, rbits)]
    if not isinstance(xe, np.ndarray):
        sources.append(to_engine(engine_name, rbits, signed=True))
    for rb in sources:
        got = tcast.cast(xe, "bfloat16", engine=engine_name, rbits=rb, **kw)
        problems = dc.differences(got, want, f"bfloat16 rbits {rb.dtype}")
        assert not problems, "\n".join(problems)


@pytest.mark.parametrize("engine_name", ENGINES)
def test_seeded_dual_cast_draws_stream_1_for_the_columns(engine_name):
    """cast_dual's results are the stream-0 row cast and the stream-1 column cast."""
    x = _input((64, 48), 6)
    kw = dict(castmode="actual", roundmode="stochastic", seed=SEED16)
    rows = tcast_ref.cast(x, "mxfp8", **kw)
    col_dt = tcast.kit.column_datatype(tcast.datatype("mxfp8"))
    cols = tcast_ref.cast(x, col_dt, stream=1, **kw)
    assert not np.array_equal(cols.data, tcast_ref.cast(x, col_dt, **kw).data)
    got = tcast.cast_dual(to_engine(engine_name, x), "mxfp8", engine=engine_name, **kw)
    problems = dc.differences(got[0], rows, "rows") + dc.differences(got[1], cols, "cols")
    assert not problems, "\n".join(problems)
