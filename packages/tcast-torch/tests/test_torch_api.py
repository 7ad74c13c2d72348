"""tcast_torch's API: bad input, ranks, dimensions, strides, Philox, sparsity and packing.

Every comparison is against tcast_ref (the reference), in raw bits.

* Bad input to ``tcast_torch.cast`` and through ``tcast.cast(tensor)``: the right
  ``TcastError`` subclass, a message naming the problem, nothing cast halfway.
* Ranks 0..4, scaling along every dimension, non-contiguous views (transposes, steps,
  permutations, broadcasts) and seeded stochastic rounding on such views: the bits of the
  reference on the same logical array.
* Philox: the known-answer bits of ``tcast.random_bits`` and tcast_ref's, for both widths
  (8 and 16 bits), streams 0, 1 and 2**32 - 1, indices past 2**32.
* Sparsity groups longer than the pairwise limit (the sort path), 2-D sparsity, partial
  groups; packing of every width 1..32.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tcast
import tcast_ref
import tcast_torch
from tcast import SpecError, TcastError, UnsupportedError
from tcast_torch import _philox as torch_philox
from tcast_torch import _scale
from tcast_torch._philox import philox_bits

CASTS = {"tcast_torch.cast": tcast_torch.cast, "tcast.cast": tcast.cast}
CASTMODES = ("virtual", "actual", "compress")


def _x(shape=(4, 64), seed=0, dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * torch.exp2(torch.randint(-8, 8, shape, generator=g))
    return x.to(dtype)


def _np(t: torch.Tensor) -> np.ndarray:
    """A torch float tensor as the NumPy array the reference takes (bit for bit, same strides
    are not kept: the reference sees the same logical values)."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _u(t) -> np.ndarray:
    if t is None:
        return None
    t = torch.as_tensor(t).contiguous()
    signed = {
        torch.float32: torch.int32,
        torch.uint32: torch.int32,
        torch.float16: torch.int16,
        torch.bfloat16: torch.int16,
        torch.uint16: torch.int16,
    }
    if t.dtype in signed:
        a = t.view(signed[t.dtype]).numpy()
        return a.view({4: np.uint32, 2: np.uint16}[a.itemsize]).astype(np.uint64)
    return t.numpy().astype(np.uint64) if t.dtype != torch.bool else t.numpy()


def _raw(a) -> np.ndarray:
    if a is None:
        return None
    a = np.ascontiguousarray(a)
    if a.dtype == bool:
        return a
    if a.dtype.kind == "u":
        return a.astype(np.uint64)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[a.itemsize]).astype(np.uint64)


def _ref_rbits(rb: torch.Tensor | None) -> np.ndarray | None:
    """K-bit torch bits (uint8/int8, uint16/int16) as the reference's uint8/uint16 array."""
    if rb is None:
        return None
    unsigned = {1: (torch.uint8, np.uint8), 2: (torch.int16, np.uint16)}[rb.element_size()]
    return rb.contiguous().view(unsigned[0]).numpy().view(unsigned[1])


def assert_same_as_ref(xt: torch.Tensor, dt, **kw) -> None:
    """Every cast mode and the upcasts of tcast_torch equal tcast_ref's, in raw bits."""
    xn = _np(xt)
    rb = kw.pop("rbits", None)
    for cm in CASTMODES:
        got = tcast_torch.cast(xt, dt, castmode=cm, rbits=rb, **kw)
        want = tcast_ref.cast(xn, dt, castmode=cm, rbits=_ref_rbits(rb), **kw)
        if cm == "virtual":
            assert got.dtype == xt.dtype and tuple(got.shape) == xn.shape
            np.testing.assert_array_equal(_u(got), _raw(want), err_msg=f"{dt} {cm} {kw}")
            continue
        assert got.engine == "torch" and got.shape == want.shape
        for part in ("data", "scale", "zero", "tenscale", "mask"):
            g, w = getattr(got, part), getattr(want, part)
            assert (g is None) == (w is None), part
            if w is not None:
                assert tuple(g.shape) == np.shape(w), part
                np.testing.assert_array_equal(_u(g), _raw(w), err_msg=f"{dt} {cm} {part}")
        np.testing.assert_array_equal(
            _u(tcast_torch.upcast(got)), _raw(tcast_ref.upcast(want)), err_msg=f"{dt} {cm} upcast"
        )


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.uint8).clone()


# ------------------------------------------------------------ bad input dtypes (§9)
BAD_DTYPES = [
    torch.float64,
    torch.int32,
    torch.int8,
    torch.uint8,
    torch.int64,
    torch.complex64,
    torch.bool,
    torch.float8_e4m3fn,
    torch.uint32,
]


@pytest.mark.parametrize("castmode", CASTMODES)
@pytest.mark.parametrize("dtype", BAD_DTYPES, ids=str)
@pytest.mark.parametrize("entry", list(CASTS))
def test_rejects_input_dtypes_other_than_float32_float16_bfloat16(entry, dtype, castmode):
    x = torch.ones((2, 32)).to(dtype)
    before = _bits(x)
    for dt in ("mxfp8", "float8_e4m3fn"):
        name = str(dtype).replace("torch.", "")
        with pytest.raises(UnsupportedError, match=f"of dtype {name}:") as info:
            CASTS[entry](x, dt, castmode=castmode)
        assert isinstance(info.value, TcastError)
        # each rejected dtype is named: float64 only in float64's own message
        assert ("float64" in str(info.value)) == (name == "float64")
    assert torch.equal(_bits(x), before)


@pytest.mark.parametrize(
    "bad",
    [[1.0] * 32, 1.0, np.ones(32, np.float32), "1.0", None],
    ids=["list", "float", "numpy", "str", "None"],
)
def test_rejects_non_tensor_input(bad):
    with pytest.raises(UnsupportedError, match="torch tensors"):
        tcast_torch.cast(bad, "mxfp8")


# ------------------------------------------------------------ random bits (§3.3)
@pytest.mark.parametrize("entry", list(CASTS))
def test_seed_together_with_rbits_is_a_spec_error(entry):
    x = _x()
    rb = torch.zeros(x.shape, dtype=torch.uint8)
    before = _bits(x)
    with pytest.raises(SpecError, match="not both"):
        CASTS[entry](x, "mxfp8", roundmode="stochastic", seed=1, rbits=rb)
    assert torch.equal(_bits(x), before)


@pytest.mark.parametrize("entry", list(CASTS))
def test_seed_or_rbits_without_stochastic_rounding_is_a_spec_error(entry):
    x = _x()
    for kw in ({"seed": 1}, {"rbits": torch.zeros(x.shape, dtype=torch.uint8)}):
        with pytest.raises(SpecError, match="stochastic"):
            CASTS[entry](x, "mxfp8", roundmode="even", **kw)
    with pytest.raises(SpecError, match="seed or rbits"):
        CASTS[entry](x, "mxfp8", roundmode="stochastic")


@pytest.mark.parametrize(
    "rbits",
    [
        torch.zeros((64, 4), dtype=torch.uint8),
        torch.zeros(256, dtype=torch.uint8),
        torch.zeros((1, 64), dtype=torch.uint8),
        torch.zeros((4, 64, 1), dtype=torch.uint8),
        torch.zeros((4, 64), dtype=torch.int64),
        torch.zeros((4, 64), dtype=torch.float32),
        torch.zeros((4, 64), dtype=torch.uint16),
        torch.zeros((4, 64), dtype=torch.int16),
        torch.zeros((4, 64), dtype=torch.uint32),
        torch.zeros((4, 64), dtype=torch.int32),
        torch.zeros((4, 64), dtype=torch.uint8, device="meta"),
        np.zeros((4, 64), np.uint8),
    ],
    ids=[
        "transposed",
        "flat",
        "broadcastable",
        "extra-dim",
        "int64",
        "float32",
        "uint16",
        "int16",
        "uint32",
        "int32",
        "other-device",
        "numpy",
    ],
)
@pytest.mark.parametrize("entry", list(CASTS))
def test_rbits_of_the_wrong_shape_dtype_or_device_is_a_spec_error(entry, rbits):
    x = _x()
    before = _bits(x)
    for dt in ("mxfp8", "float8_e4m3fn", "int8_Fc"):
        with pytest.raises(SpecError, match="rbits"):
            CASTS[entry](x, dt, roundmode="stochastic", rbits=rbits)
    assert torch.equal(_bits(x), before)


_WRONG_WIDTH = {
    "mxfp8": (torch.uint32, torch.int32, torch.uint16, torch.int16),
    "e5m10_e8m0_t32": (torch.uint32, torch.int32, torch.uint8, torch.int8),
    "bfloat16": (torch.uint8, torch.uint32),
}


@pytest.mark.parametrize(
    ("entry", "dtype"),
    [(e, dt) for e in CASTS for dt in _WRONG_WIDTH]
    + [("cast_dual", "mxfp8"), ("cast_dual", "e5m10_e8m0_t32")],
)
def test_rbits_of_another_width_are_refused_naming_the_dtype_the_datatype_needs(entry, dtype):
    """K = 8 bits for formats of at most 8 bits, 16 for wider (SEMANTICS.md §3.2): the
    message names the unsigned and signed dtypes of K bits and the one given."""
    x = _x()
    width = tcast.rbits_width(dtype)
    need = "torch.uint8 (or torch.int8)" if width == 8 else "torch.uint16 (or torch.int16)"
    cast = tcast_torch.cast_dual if entry == "cast_dual" else CASTS[entry]
    for b in _WRONG_WIDTH[dtype]:
        rb = torch.zeros(x.shape, dtype=b)
        with pytest.raises(SpecError, match=rf"rbits must be a {re.escape(need)} .* got .*{b}$"):
            cast(x, dtype, roundmode="stochastic", rbits=rb)
    # the same bits as the unsigned or the signed dtype of K bits: the same cast
    r = torch.randint(0, 1 << width, x.shape, generator=torch.Generator().manual_seed(3))
    unsigned = r.to(torch.uint8 if width == 8 else torch.uint16)
    signed = unsigned.view(torch.int8 if width == 8 else torch.int16)
    a = tcast_torch.cast(x, dtype, roundmode="stochastic", rbits=unsigned)
    b = tcast_torch.cast(x, dtype, roundmode="stochastic", rbits=signed)
    assert torch.equal(_bits(a), _bits(b))


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, "7", True])
def test_seed_out_of_range_or_not_an_int_is_a_spec_error(seed):
    with pytest.raises(SpecError, match="seed"):
        tcast_torch.cast(_x(), "mxfp8", roundmode="stochastic", seed=seed)


# ------------------------------------------------------------ tiles, modes, flags
@pytest.mark.parametrize(
    ("dtype", "shape", "match"),
    [
        ("mxfp8", (), "does not exist"),
        ("mxfp8_2d", (64,), "does not exist"),
        ("int8_Fc", (), "does not exist"),
        ("e4m3fn_e8m0_t8d2", (8, 8), "does not exist"),
        ("e4m3fn_e8m0_t8d0_t8d-2", (8, 8), "both tile segments"),
    ],
)
def test_tile_dimensions_beyond_the_rank_are_a_spec_error(dtype, shape, match):
    x = torch.ones(shape)
    for castmode in CASTMODES:
        for tr in (False, True):
            with pytest.raises(SpecError, match=match):
                tcast_torch.cast(x, dtype, castmode=castmode, transpose_scale=tr)
    assert (x == 1).all()


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"roundmode": "banana"}, "round mode"),
        ({"scalemode": "round"}, "scale mode"),
        ({"castmode": "packed"}, "cast mode"),
        ({"saturate": 1}, "saturate"),
        ({"transpose_scale": None}, "transpose"),
    ],
)
def test_unknown_modes_and_bad_flags_are_a_spec_error(kw, match):
    with pytest.raises(SpecError, match=match):
        tcast_torch.cast(_x(), "mxfp8", **kw)


@pytest.mark.parametrize("name", ["mx9", "mxfi4", "nf4"])
def test_subtile_and_codebook_datatypes_are_unsupported(name):
    # the engine's own cast must refuse them, not cast them as if they had no metadata
    with pytest.raises(UnsupportedError, match="reference engine"):
        tcast_torch.cast(_x(), name)
    with pytest.raises(UnsupportedError, match="reference engine"):
        tcast_torch.cast(_x(), name, castmode="actual")


def test_upcast_refuses_virtual_results_and_malformed_parts():
    with pytest.raises(SpecError, match="actual or compress"):
        tcast_torch.upcast(_x())
    r = tcast_torch.cast(_x(), "mxfp8", castmode="actual")
    bad = tcast.CastResult(**{**r.__dict__, "scale": r.scale[:, :1]})
    with pytest.raises(SpecError, match="scale has shape"):
        tcast_torch.upcast(bad)
    bad = tcast.CastResult(**{**r.__dict__, "data": r.data.to(torch.int32)})
    with pytest.raises(SpecError, match=r"data must be uint8 \(e4m3fn codes .*\), not int32"):
        tcast_torch.upcast(bad)
    bad = tcast.CastResult(**{**r.__dict__, "zero": r.scale})
    with pytest.raises(SpecError, match="must not have zero"):
        tcast_torch.upcast(bad)


@pytest.mark.parametrize("castmode", CASTMODES)
@pytest.mark.parametrize(
    "dtype",
    [
        "float8_e4m3fn",
        "mxfp8",
        "nvfp4",
        "uint8_FFc",
        "int8_Fc",
        "e4m3fn_e8m0_t32n2m4",
        "mxfp4_2d",
        "bfloat16",
    ],
)
def test_a_successful_cast_leaves_its_input_unchanged(dtype, castmode):
    x = _x((64, 64))
    x[3, 5] = float("nan")
    x[7, :] = 0.0
    for arr in (x, x.T, x[::2, 1::3]):
        before = _bits(arr)
        # K-bit integers 0, 1, ... (wrapping at 2**K): uint8 or uint16 (tcast.rbits_width)
        rdt = torch.uint8 if tcast.rbits_width(dtype) == 8 else torch.uint16
        rb = torch.arange(arr.numel(), dtype=torch.int32).remainder(1 << (8 * rdt.itemsize))
        rb = rb.to(rdt).reshape(arr.shape)
        tcast_torch.cast(arr, dtype, castmode=castmode)
        tcast_torch.cast(arr, dtype, castmode=castmode, roundmode="stochastic", rbits=rb)
        assert torch.equal(_bits(arr), before)


# ------------------------------------------------------------ ranks, dims, strides
RANK_CASES = [
    ((), "e4m3fn"),
    ((), "e4m3fn_float32"),
    ((), "uint8_float32_int8"),
    ((64,), "mxfp4"),
    ((70,), "mxint8"),
    ((5, 70), "nvfp4"),
    ((3, 5, 40), "e4m3fn_e8m0_t8d0"),
    ((3, 5, 40), "e4m3fn_e8m0_t8d1"),
    ((3, 17, 40), "mxfp8_2d"),
    ((2, 3, 17, 40), "e2m1f_e8m0_t16d0_t8d2"),
    ((2, 3, 5, 9), "int8_bfloat16_t0d1"),
    ((2, 3, 5, 9), "uint4_float16_int8_t4d-3"),
    ((2, 3, 5, 36), "e2m1f_e8m0_t32n2m4"),
    ((4, 3, 9), "e4m3fn_e8m0_t4n2m4d0_t8"),
]


@pytest.mark.parametrize(("shape", "dtype"), RANK_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("in_dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_ranks_zero_to_four_and_every_dimension_match_the_reference(shape, dtype, in_dtype):
    x = _x(shape, seed=len(shape), dtype=in_dtype)
    for tr in (False, True):
        assert_same_as_ref(x, dtype, transpose_scale=tr)
        assert_same_as_ref(x, dtype, roundmode="stochastic", seed=2**40 + 3, transpose_scale=tr)


@pytest.mark.parametrize(
    "dtype",
    ["mxfp8", "mxfp4_2d", "e4m3fn", "uint4_FFc", "nvfp4", "e2m1f_e8m0_t32n2m4", "int8_e8m0_t8d0"],
)
def test_non_contiguous_views_give_the_bits_of_their_contiguous_copies(dtype):
    base = _x((16, 96), seed=3)
    views = {
        "transposed": base[:, :64].T,
        "stepped": base[::2, ::3],
        "permuted": base.reshape(4, 4, 96).permute(2, 0, 1)[:64],
        "broadcast": base[0:1, :64].expand(8, 64),
        "offset": base[3:11, 32:],
    }
    for name, v in views.items():
        if (
            tcast.datatype(dtype).sspec is not None
            and tcast.datatype(dtype).sspec.is_2d
            and v.dim() < 2
        ):
            continue
        assert not v.is_contiguous(), name
        for kw in ({}, {"roundmode": "stochastic", "seed": 99}, {"roundmode": "trunc"}):
            for cm in CASTMODES:
                got = tcast_torch.cast(v, dtype, castmode=cm, **kw)
                want = tcast_torch.cast(v.contiguous(), dtype, castmode=cm, **kw)
                g = got if cm == "virtual" else got.data
                w = want if cm == "virtual" else want.data
                assert torch.equal(_bits(g), _bits(w)), (name, cm, kw)
            assert_same_as_ref(v, dtype, **kw)


# ------------------------------------------------------------ Philox (§3.3)
@pytest.mark.parametrize("width", [8, 16])
def test_philox_stream_matches_the_spec_and_the_reference(width):
    seed = 0x0123456789ABCDEF
    per_call = 128 // width  # elements per Philox call
    got = tcast_torch.random_bits(seed, 1000, width=width)
    assert got.dtype == (torch.uint8 if width == 8 else torch.uint16)
    assert _u(got).tolist() == tcast.random_bits(seed, range(1000), width)
    start = per_call * (1 << 32) - 500  # crosses call 2**32: into the second counter word
    got = tcast_torch.random_bits(seed, (10, 100), start=start, width=width)
    assert got.shape == (10, 100)
    want = tcast.random_bits(seed, range(start, start + 1000), width)
    assert _u(got).reshape(-1).tolist() == want
    big = tcast_torch.random_bits(7, 1 << 18, start=3 << 37, width=width)
    np.testing.assert_array_equal(_u(big), tcast_ref.random_bits(7, 1 << 18, 3 << 37, width=width))
    for s in (0, 1, 2**64 - 1):
        for stream in (0, 1, 2**32 - 1):
            np.testing.assert_array_equal(
                _u(tcast_torch.random_bits(s, 4096, width=width, stream=stream)),
                tcast_ref.random_bits(s, 4096, width=width, stream=stream),
                err_msg=f"seed {s} stream {stream}",
            )


def test_streams_of_random_bits_differ_and_unaligned_starts_match_the_reference():
    """Streams 0 and 1 of one seed are different bits; a stream-1 range from any start (of
    every residue modulo the 16 or 8 elements of a call) is the reference's."""
    for width in (8, 16):
        a = tcast_torch.random_bits(5, 512, width=width)
        b = tcast_torch.random_bits(5, 512, width=width, stream=1)
        assert (a != b).float().mean() > 0.9  # independent words: 2**-K of them agree
        whole = tcast_ref.random_bits(5, 600, width=width, stream=1)
        for start in range(0, 40, 3):
            got = tcast_torch.random_bits(5, (4, 5), start=start, width=width, stream=1)
            np.testing.assert_array_equal(_u(got).reshape(-1), whole[start : start + 20])


def _u32(bits: torch.Tensor) -> list[int]:
    """int32 bit patterns as the flat list of their uint32 words."""
    return _u(bits.view(torch.uint32)).reshape(-1).tolist()


def _starts(width: int) -> list[int]:
    """Starts of varied residues modulo a call's 128 / width elements, across call 2**32."""
    e = 128 // width
    return [0, 1, 2, 3, 5, e - 1, e + 3, 2**32 - 3, e * 2**32 - 301, e * 2**32 - 2, e * 2**32 + 3]


PHILOX_COUNTS = [0, 1, 2, 3, 4, 5, 7, 9, 17, 600]


@pytest.mark.parametrize(
    ("seed", "width", "stream"),
    [(0, 8, 0), (0x0123456789ABCDEF, 16, 1), (2**64 - 1, 8, 2**32 - 1), (2**64 - 1, 16, 0)],
)
def test_philox_stream_and_philox_bits_match_the_spec_for_unaligned_starts(seed, width, stream):
    """random_bits' K-bit integers, and philox_bits' codec words ``r << (32 - K)``."""
    for start in [*_starts(width), 2**62 + 1]:
        for count in PHILOX_COUNTS:
            want = tcast.random_bits(seed, range(start, start + count), width, stream=stream)
            words = [r << (32 - width) for r in want]
            got = tcast_torch.random_bits(seed, count, start=start, width=width, stream=stream)
            assert got.shape == (count,) and _u(got).tolist() == want, (start, count)
            idx = torch.arange(start, start + count, dtype=torch.int64)
            got = philox_bits(seed, idx, width, stream)  # one call per element, any order
            assert got.dtype == torch.int32 and _u32(got) == words, (start, count)
            perm = torch.randperm(count, generator=torch.Generator().manual_seed(count))
            got = philox_bits(seed, idx[perm], width, stream)
            assert _u32(got) == [words[i] for i in perm.tolist()]
    idx = torch.tensor([[7, 2**36], [0, 2**36 - 1]], dtype=torch.int64)
    got = philox_bits(seed, idx, width, stream)
    assert got.shape == (2, 2)
    want = tcast.random_bits(seed, idx.reshape(-1).tolist(), width, stream=stream)
    assert _u32(got) == [r << (32 - width) for r in want]


@pytest.mark.parametrize(("width", "stream"), [(8, 0), (16, 1)])
def test_philox_stream_is_the_same_across_its_pieces(monkeypatch, width, stream):
    # pieces of 3 calls (48 or 24 elements) put piece edges at many residues of a start
    starts = (0, 1, 2, 3, 7, 2**36 - 50)
    want = {
        s: _u(tcast_torch.random_bits(77, 100, start=s, width=width, stream=stream)).tolist()
        for s in starts
    }
    monkeypatch.setattr(torch_philox, "_CALLS", 3)  # the pieces on a GPU
    monkeypatch.setattr(torch_philox, "_CPU_CALLS", 3)  # and on the CPU
    for s, w in want.items():
        got = tcast_torch.random_bits(77, 100, start=s, width=width, stream=stream)
        assert _u(got).tolist() == w
        assert w == tcast.random_bits(77, range(s, s + 100), width, stream=stream)


@pytest.mark.parametrize(
    "dtype",
    [
        "e4m3fn",
        "mxfp4",
        "mxfp8_2d",
        "int8_e8m0_t8d0",
        "nvfp4",
        "uint8_bfloat16_int8_t16",
        "e2m1f_e8m0_t32n2m4",
        "bfloat16_e8m0_t32",
    ],
)
def test_seeded_stochastic_rounding_uses_the_logical_flat_index(dtype):
    """Transposed and strided views draw the bits of their logical C-order positions."""
    base = _x((48, 80), seed=5)
    width = tcast.rbits_width(dtype)
    for v in (base, base.T[:64], base[1::3, ::2], base[:, 16:48]):
        assert_same_as_ref(v, dtype, roundmode="stochastic", seed=0xFEEDFACECAFEBEEF)
        rb = tcast_torch.random_bits(0xFEEDFACECAFEBEEF, tuple(v.shape), width=width)
        a = tcast_torch.cast(
            v, dtype, castmode="actual", roundmode="stochastic", seed=0xFEEDFACECAFEBEEF
        )
        b = tcast_torch.cast(v, dtype, castmode="actual", roundmode="stochastic", rbits=rb)
        assert torch.equal(a.data, b.data)


@pytest.mark.parametrize("dtype", ["mxfp8", "e5m10_e8m0_t32", "e8m7"])
def test_a_seeded_cast_on_stream_1_draws_the_stream_1_bits(dtype):
    """``stream=1`` (tcast_torch.cast and tcast.cast) equals the cast with the explicit bits
    of random_bits(..., stream=1) and tcast_ref's seeded stream-1 cast, for K = 8 and 16; it
    differs from stream 0."""
    x = _x((8, 64), seed=9)
    seed, width = 2**40 + 11, tcast.rbits_width(dtype)
    rb = tcast_torch.random_bits(seed, tuple(x.shape), width=width, stream=1)
    np.testing.assert_array_equal(
        _ref_rbits(rb), tcast_ref.random_bits(seed, x.numel(), width=width, stream=1).reshape(8, 64)
    )
    kw = {"roundmode": "stochastic", "seed": seed, "stream": 1}
    assert_same_as_ref(x, dtype, **kw)
    got = tcast_torch.cast(x, dtype, castmode="actual", **kw)
    via_tcast = tcast.cast(x, dtype, castmode="actual", **kw)
    given = tcast_torch.cast(x, dtype, castmode="actual", roundmode="stochastic", rbits=rb)
    stream0 = tcast_torch.cast(x, dtype, castmode="actual", roundmode="stochastic", seed=seed)
    assert torch.equal(_bits(got.data), _bits(given.data))
    assert torch.equal(_bits(via_tcast.data), _bits(given.data))
    assert not torch.equal(_bits(got.data), _bits(stream0.data))


@pytest.mark.parametrize("dtype", ["mxfp8", "e5m10_e8m0_t32"])
def test_cast_dual_columns_draw_stream_1_and_given_bits_serve_both(dtype):
    """A seeded dual cast: rows on stream 0, columns on stream 1 (SEMANTICS.md §8.2), each
    the single cast (columns: tcast_ref's stream-1 cast too); given bits serve both."""
    x = _x((64, 96), seed=4)
    seed, col = 0xC0FFEE, tcast.kit.column_datatype(tcast.datatype(dtype))
    sr = {"castmode": "actual", "roundmode": "stochastic"}
    row_got, col_got = tcast_torch.cast_dual(x, dtype, seed=seed, **sr)
    assert torch.equal(row_got.data, tcast_torch.cast(x, dtype, seed=seed, **sr).data)
    col_want = tcast_torch.cast(x, col, seed=seed, stream=1, **sr)
    assert torch.equal(col_got.data, col_want.data)
    assert torch.equal(col_got.scale, col_want.scale)
    ref = tcast_ref.cast(_np(x), col, seed=seed, stream=1, **sr)
    np.testing.assert_array_equal(_u(col_got.data), _raw(ref.data))
    col_stream0 = tcast_torch.cast(x, col, seed=seed, **sr)
    assert not torch.equal(col_got.data, col_stream0.data)
    rb = tcast_torch.random_bits(3, tuple(x.shape), width=tcast.rbits_width(dtype), stream=1)
    row_got, col_got = tcast_torch.cast_dual(x, dtype, rbits=rb, **sr)
    assert torch.equal(row_got.data, tcast_torch.cast(x, dtype, rbits=rb, **sr).data)
    assert torch.equal(col_got.data, tcast_torch.cast(x, col, rbits=rb, **sr).data)


# ------------------------------------------------------------ sparsity and packing
@pytest.mark.parametrize(
    "dtype",
    [
        "e4m3fn_e8m0_t64n5m32",
        "e2m1f_e8m0_t0n3m64",
        "int8_float32_t128n7m128",
        "e4m3fn_e8m0_t32n9m16",
        "e4m3fn_e8m0_t16n2m8_t8",
        "uint8_float32_int8_t32n3m32d0",
    ],
)
def test_long_sparsity_groups_take_the_sort_path_and_match_the_reference(dtype):
    x = _x((40, 130), seed=9)
    x[0, :] = 1.0  # all ties: the lower index wins
    x[1, ::2] = float("nan")
    x[2, :] = torch.where(torch.arange(130) % 3 == 0, float("inf"), 2.0)
    x[3, :] = 0.0
    assert_same_as_ref(x, dtype)
    assert_same_as_ref(x.T.contiguous(), dtype, transpose_scale=True)
    assert_same_as_ref(x.to(torch.bfloat16), dtype, roundmode="stochastic", seed=5)


def test_pairwise_and_sort_ranking_agree():
    x = _x((64, 64), seed=4)
    x[::3] = x[::3].round()  # many ties
    x[5, 7] = float("nan")
    x[9, 1] = -float("inf")
    til = tcast_torch._tiles.tiling((64, 64), tcast.datatype("e4m3fn_e8m0_t16n3m16"))
    rows = til.to_blocks(x).reshape(-1, 16)
    pair = _scale.keep_mask(rows, til)
    limit = _scale.PAIRWISE_MAX_M
    try:
        _scale.PAIRWISE_MAX_M = 0
        srt = _scale.keep_mask(rows, til)
    finally:
        _scale.PAIRWISE_MAX_M = limit
    assert torch.equal(pair, srt)
    assert (pair.reshape(-1, 16).sum(-1) == 3).all()


@pytest.mark.parametrize("bits", list(range(1, 33)))
def test_packing_matches_the_reference_for_every_width(bits):
    rng = np.random.default_rng(bits)
    for count in (0, 1, 7, 8, 9, 1001):
        codes = rng.integers(0, 1 << bits, size=count, dtype=np.uint64)
        signed = np.where(
            codes >= 1 << 31, codes.astype(np.int64) - (1 << 32), codes.astype(np.int64)
        ).astype(np.int32)
        packed = tcast_torch.pack_codes(torch.from_numpy(signed), bits)
        want = tcast_ref.pack_codes(codes.astype(np.uint32), bits)
        assert packed.dtype == torch.uint8 and packed.numpy().tobytes() == want.tobytes()
        back = tcast_torch.unpack_codes(packed, bits, count)
        np.testing.assert_array_equal(back.numpy().view(np.uint32), codes.astype(np.uint32))
    mask = torch.from_numpy(rng.integers(0, 2, 1003).astype(bool))
    pm = tcast_torch.pack_mask(mask)
    assert pm.numpy().tobytes() == tcast_ref.pack_mask(mask.numpy()).tobytes()
    assert torch.equal(tcast_torch.unpack_mask(pm, 1003), mask)


def test_unpacking_too_few_bytes_is_a_spec_error():
    with pytest.raises(SpecError, match="fewer than"):
        tcast_torch.unpack_codes(torch.zeros(3, dtype=torch.uint8), 4, 7)
    with pytest.raises(SpecError, match="width"):
        tcast_torch.pack_codes(torch.zeros(3, dtype=torch.int32), 33)


# ------------------------------------------------------------ property: random requests
_NAMES = sorted(n for n, dt in tcast.CATALOG.items() if dt.sspec is None or not dt.sspec.is_2d)


@given(
    name=st.sampled_from(_NAMES),
    rows=st.integers(1, 9),
    cols=st.integers(1, 70),
    in_dtype=st.sampled_from([torch.float32, torch.float16, torch.bfloat16]),
    mode=st.sampled_from([m.value for m in tcast.RoundMode]),
    smode=st.sampled_from([m.value for m in tcast.ScaleMode]),
    seed=st.integers(0, 2**64 - 1),
    transposed=st.booleans(),
)
def test_random_catalog_requests_match_the_reference(
    name, rows, cols, in_dtype, mode, smode, seed, transposed
):
    x = _x((cols, rows) if transposed else (rows, cols), seed=rows * 100 + cols, dtype=in_dtype)
    x = x.T if transposed else x
    kw = {"roundmode": mode, "scalemode": smode}
    if mode == "stochastic":
        kw["seed"] = seed
    assert_same_as_ref(x, name, **kw)
