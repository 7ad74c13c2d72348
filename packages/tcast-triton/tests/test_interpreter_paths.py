"""Every kernel path of the ``triton`` engine against tcast_ref, bit for bit, on small inputs.

The battery's inputs are at most 64 elements; these shapes reach the launch geometries the
battery does not: many tiles per program, partial last tiles, tiles along the first and a
middle dimension (the column kernel), channels longer than the largest register tile (the
looping kernels), tensor scales (the amax pre-pass), 16-bit and non-contiguous inputs, and
the catalog datatypes outside ``tcast.combinations()`` that the engine supports.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import triton_checks as tc

import tcast
from tcast import CastMode, RoundMode, ScaleMode

ENGINE = tcast.load_engines().engines["triton"]


def _launch_interpreting() -> bool:
    from tcast_triton._launch import interpreting

    return interpreting()


_IN = tc.IN_DTYPES


_entry = tc.entry
_check = tc.check

# (datatype, input shape, input dtype, non-contiguous view, what it reaches)
PATHS = [
    ("mxfp8", (5, 300), "float32", False, "row kernel, many tiles per program, partial tile"),
    ("mxfp4", (3, 7, 70), "bfloat16", False, "row kernel, 3-D, partial tile, bf16 input"),
    ("e2m3f_e8m0_t32", (6, 64), "float16", True, "row kernel on a transposed view"),
    ("e3m2f_e8m0_t32", (4, 33), "float32", False, "FP6 e3m2, compress stream"),
    ("mxint8", (4, 96), "float32", False, "int elements, exponent scale"),
    ("int3_e8m0_t32", (2, 64), "float32", False, "3-bit dense stream (catalog only)"),
    ("int2_e8m0_t16", (2, 48), "bfloat16", False, "2-bit codes"),
    ("bfp16", (3, 40), "float32", False, "8-wide tiles (catalog bfp16)"),
    ("e2m1f_e8m0_t1024", (2, 2100), "float32", False, "1024-wide tiles, one per program"),
    ("e5m2_e5m0_t32", (2, 64), "float32", False, "a narrow exponent scale"),
    ("e4m3fn_e8m0_t32d0", (70, 24), "float32", False, "column kernel, partial tile on dim 0"),
    ("e4m3fn_e8m0_t16d1", (2, 40, 3), "float16", False, "column kernel along a middle dim"),
    ("e2m1f_e8m0_t8d0", (20, 300), "bfloat16", False, "column kernel, many columns"),
    ("int8_float32_t0", (3, 2500), "float32", False, "channel longer than 1024: row loop"),
    ("int8_float32_t0d0", (1100, 3), "float32", False, "channel along dim 0: column loop"),
    ("int8_float32_t0", (64, 8), "bfloat16", False, "per-token channel scale"),
    ("e4m3fn_float32", (9, 500), "float32", False, "tensor scale: amax pre-pass"),
    ("int8_bfloat16", (9, 50), "float16", False, "tensor scale in bfloat16"),
    ("nvfp4", (4, 200), "float32", False, "two-level tensor + tile scales"),
    ("nvfp4", (6, 48), "bfloat16", True, "two-level on a transposed view"),
    ("uint4_float32_float32_t32", (3, 100), "float32", False, "uint with float zero point"),
    ("uint8_bfloat16_int8_t32", (3, 64), "float16", False, "uint with int zero point"),
    ("uint8_e8m0_uint8_t0", (2, 1500), "float32", False, "uint channel loop"),
    ("e4m3fn", (7, 300), "float16", False, "unscaled, several programs"),
    ("e8m22", (5, 40), "float32", False, "wide (31-bit) element codes"),
    ("binary8p5", (4, 40), "bfloat16", False, "P3109 p5"),
    # every value a float32 subnormal: the integer encoder (a subnormal kernel constant
    # would be typed float64)
    ("e1m3b127_e8m0_t32", (3, 64), "float32", False, "element maximum below 2**-126"),
]


@pytest.mark.parametrize(
    ("code", "shape", "in_dtype", "view"),
    [p[:4] for p in PATHS],
    ids=[f"{p[0]}-{'x'.join(map(str, p[1]))}-{p[2]}{'-view' if p[3] else ''}" for p in PATHS],
)
def test_kernel_path_equals_reference(code, shape, in_dtype, view, device):
    _check(code, _entry(shape, in_dtype, view=view), device=device)


@pytest.mark.parametrize("roundmode", [m.value for m in RoundMode if m.value != "stochastic"])
@pytest.mark.parametrize("scalemode", [m.value for m in ScaleMode])
def test_mxfp8_every_round_and_scale_mode(roundmode, scalemode, device):
    _check(
        "mxfp8", _entry((4, 96), seed=3), roundmode=roundmode, scalemode=scalemode, device=device
    )


@pytest.mark.parametrize(
    ("code", "shape"),
    [
        ("mxfp4", (3, 100)),
        ("nvfp4", (2, 64)),
        ("int8_float32_t0", (2, 1100)),
        ("e4m3fn_e8m0_t16d0", (40, 5)),
        ("e5m2", (3, 50)),
        ("e1m3b127_e8m0_t32", (2, 64)),
    ],
)
@pytest.mark.parametrize("rsource", ["seed", "rbits"])
def test_stochastic_rounding_equals_reference(code, shape, rsource, device):
    _check(code, _entry(shape, seed=7), roundmode="stochastic", rsource=rsource, device=device)


# (datatype, shape, the kernel, RV: Philox calls by aligned runs): seeded casts through each
# way the kernels draw their bits, 128 / K elements per Philox call (SEMANTICS.md §3.3)
STREAM_PATHS = [
    ("mxfp8", (32, 64), "_cast_row_pieces", None),  # a tile's calls in one thread
    ("mxfp8", (5, 70), "_cast_tiles", False),  # a partial row tile: per element
    ("e4m3fn_e8m0_t32d0", (64, 32), "_cast_tiles", True),  # column runs of 32
    ("e4m3fn_e8m0_t32d0", (64, 24), "_cast_tiles", False),  # 24 columns: per element
    ("e5m10_e8m0_t32", (8, 64), "_cast_row_pieces", None),  # K = 16: 8 elements a call
    ("e5m10_e8m0_t32d0", (40, 16), "_cast_tiles", True),  # K = 16 column runs
    ("bfloat16", (5, 37), "_cast_unscaled", None),  # K = 16, unscaled
    ("mxfp8_2d", (64, 64), "_cast_nd", None),  # the N-d kernel
]


@pytest.mark.parametrize(
    ("code", "shape", "kernel", "rv"),
    STREAM_PATHS,
    ids=[f"{p[0]}-{'x'.join(map(str, p[1]))}" for p in STREAM_PATHS],
)
def test_seeded_casts_of_a_stream_equal_reference(code, shape, kernel, rv, device, monkeypatch):
    """``stream=1`` reaches each kernel: tcast_ref's bits of stream 1 (not stream 0's), and
    the bits of the cast given ``tcast_torch.random_bits``' K-bit integers of that stream."""
    import tcast_ref
    import tcast_torch
    from tcast_triton import _launch, _launch_2d

    monkeypatch.setattr(_launch, "_PLANS", {})
    monkeypatch.setattr(_launch_2d, "_PLANS", {})
    x = np.ascontiguousarray(_entry(shape, seed=21).x)
    xt = torch.from_numpy(x).to(device)
    seed, kw = 0x9E37_79B9_7F4A_7C15, {"castmode": "actual", "roundmode": "stochastic"}
    got = tcast.cast(xt, code, engine="triton", seed=seed, stream=1, **kw)
    taken = [p.kernel.__name__ for p in _launch._PLANS.values()]
    taken += ["_cast_nd" for _ in _launch_2d._PLANS.values()]
    assert taken == [kernel], f"{code} {shape}: {taken}"
    if rv is not None:
        assert [p.kw["RV"] for p in _launch._PLANS.values()] == [rv]
    want = tcast_ref.cast(x, code, seed=seed, stream=1, **kw)
    _assert_same_parts(want, got, ("data", "scale"), f"{code} stream 1")
    stream0 = tcast_ref.cast(x, code, seed=seed, **kw)
    assert not np.array_equal(np.asarray(stream0.data), np.asarray(want.data))
    width = tcast.rbits_width(code)
    rb = tcast_torch.random_bits(seed, shape, width=width, stream=1, device=device)
    given = tcast.cast(xt, code, engine="triton", rbits=rb, **kw)
    _assert_same_parts(want, given, ("data", "scale"), f"{code} given stream-1 bits")


@pytest.mark.parametrize(
    ("code", "shape", "dtype"),
    [
        ("mxfp8", (6, 96), torch.uint8),
        ("mxfp8", (6, 96), torch.int8),  # the same bits
        ("e4m3fn_e8m0_t32d0", (40, 24), torch.uint8),  # columns
        ("e5m10_e8m0_t32", (6, 96), torch.int16),  # K = 16
        ("e5m10_e8m0_t32", (6, 96), torch.uint16),
    ],
    ids=str,
)
def test_given_k_bit_rbits_equal_reference(code, shape, dtype, device):
    """Given rbits of K bits (uint8/int8 for K = 8, uint16/int16 for K = 16) give tcast_ref's
    bits of the same integers, 0 and 2**K - 1 among them."""
    import tcast_ref

    k = tcast.rbits_width(code)
    assert k == dtype.itemsize * 8
    unsigned = np.uint8 if k == 8 else np.uint16
    rng = np.random.default_rng(k)
    rb = rng.integers(0, 1 << k, shape).astype(unsigned)
    rb.reshape(-1)[:4] = [0, (1 << k) - 1, 1, 1 << (k - 1)]
    signed = np.int8 if k == 8 else np.int16
    rbt = torch.from_numpy(rb.view(signed)).view(dtype).to(device)
    x = np.ascontiguousarray(_entry(shape, seed=22).x)
    kw = {"castmode": "actual", "roundmode": "stochastic"}
    got = tcast.cast(torch.from_numpy(x).to(device), code, engine="triton", rbits=rbt, **kw)
    want = tcast_ref.cast(x, code, rbits=rb, **kw)
    _assert_same_parts(want, got, ("data", "scale"), f"{code} {dtype}")


def test_unscaled_without_saturation(device):
    _check("e4m3fn", _entry((3, 70), seed=11), saturate=False, device=device)
    _check("e5m2", _entry((3, 70), seed=12), saturate=False, device=device)


# --------------------------------------------------------------- the front door and errors
def test_front_door_prefers_triton_for_tensors_it_takes(device):
    x = torch.linspace(-3, 3, 64, device=device).reshape(2, 32)
    r = tcast.cast(x, "mxfp8", castmode="actual")
    assert r.engine == "triton"


def test_front_door_takes_2d_tiles_to_triton(device):
    # no valid datatype is refused by triton and taken by torch any more (2-D tiles and
    # sparsity: test_interpreter_tiles_2d.py; subtiles are refused by every engine)
    dt = tcast.datatype("mxfp8_2d")
    modes = tcast.CastModes.of(CastMode.ACTUAL, RoundMode.EVEN, ScaleMode.FLOOR, True, False)
    assert ENGINE.supports(dt, modes)
    x = torch.linspace(-3, 3, 64 * 64, device=device).reshape(64, 64)
    assert tcast.cast(x, dt, castmode="actual").engine == "triton"


def test_empty_input(device):
    x = torch.zeros((0, 32), device=device)
    r = tcast.cast(x, "mxfp8", castmode="actual", engine="triton")
    assert r.data.shape == (0, 32) and r.engine == "triton"


def test_bad_rbits_are_spec_errors(device):
    x = torch.ones((2, 32), device=device)
    with pytest.raises(tcast.SpecError, match="rbits"):
        tcast.cast(
            x,
            "mxfp8",
            roundmode="stochastic",
            rbits=torch.zeros(3, dtype=torch.uint8, device=device),
            engine="triton",
        )
    # K-bit integers only (SEMANTICS.md §3.3): 32-bit words and the other width are refused
    for code, dtype in (
        ("mxfp8", torch.int32),
        ("mxfp8", torch.uint32),
        ("mxfp8", torch.int16),
        ("e5m10_e8m0_t32", torch.uint8),
        ("e5m10_e8m0_t32", torch.int32),
    ):
        rbits = torch.zeros(2, 32, dtype=dtype, device=device)
        with pytest.raises(tcast.SpecError, match=str(dtype)):
            tcast.cast(x, code, roundmode="stochastic", rbits=rbits, engine="triton")


def test_bad_streams_are_spec_errors(device):
    x = torch.ones((2, 32), device=device)
    for stream in (-1, 2**32, True, 1.0):
        with pytest.raises(tcast.SpecError, match="stream"):
            tcast.cast(x, "mxfp8", roundmode="stochastic", seed=1, stream=stream, engine="triton")
    rbits = torch.zeros(2, 32, dtype=torch.uint8, device=device)
    with pytest.raises(tcast.SpecError, match="stream"):  # given bits have no stream
        tcast.cast(x, "mxfp8", roundmode="stochastic", rbits=rbits, stream=1, engine="triton")
    with pytest.raises(tcast.SpecError, match="seed"):
        tcast.cast(x, "mxfp8", roundmode="stochastic", stream=1, engine="triton")


def test_refuses_tensors_off_its_device():
    from tcast_triton._launch import interpreting

    x = torch.ones(4)
    assert ENGINE.accepts(x) is interpreting()
    assert not ENGINE.accepts(np.ones(4, np.float32))


# ------------------------------------------------- every 16-bit input, every <=8-bit format
_NARROW = [
    "e4m3fn",
    "e5m2",
    "e4m3b8fnuz",
    "e5m2b16fnuz",
    "e4m3b11fnuz",
    "e3m4",
    "e3m2f",
    "e2m3f",
    "e2m1f",
    "e2m1fnuz",
    "binary8p1",
    "binary8p3",
    "binary8p5",
    "binary8p7",
]


def _all_16bit(in_dtype: str, device: str) -> tuple[np.ndarray, torch.Tensor]:
    """Every 16-bit pattern of ``in_dtype`` as a 256 x 256 NumPy array and torch tensor."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).reshape(256, 256)
    xt = torch.from_numpy(bits.astype(np.int32)).to(torch.int16)
    tdt = torch.bfloat16 if in_dtype == "bfloat16" else torch.float16
    return bits.view(_IN[in_dtype]), xt.view(tdt).to(device)


def _assert_same_parts(want, got, parts: tuple[str, ...], msg: str = "") -> None:
    """The named tensors of two CastResults hold the same codes (a missing part on both)."""
    for part in parts:
        w, g = getattr(want, part), getattr(got, part)
        if w is None:
            assert g is None, f"{msg} {part}"
            continue
        np.testing.assert_array_equal(
            np.asarray(g.cpu()).astype(np.uint64),
            np.asarray(w).astype(np.uint64),
            err_msg=f"{msg} {part}",
        )


#: Every float format of at most 8 bits in the catalog (the GPU runs them all, in every
#: round mode; the CPU interpreter the list above, in two modes).
_NARROW_ALL = sorted(
    {
        dt.nspec.code
        for dt in tcast.CATALOG.values()
        if dt.nspec.bits <= 8 and dt.nspec.kind is tcast.Kind.FLOAT
    }
)
_ON_GPU = torch.cuda.is_available() and not _launch_interpreting()


@pytest.mark.parametrize("in_dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("code", _NARROW_ALL if _ON_GPU else _NARROW)
def test_every_16bit_input_equals_reference(code, in_dtype, device):
    """Every round mode on the GPU (nearest-even and one other in CI), codes and values."""
    import tcast_ref

    x, xt = _all_16bit(in_dtype, device)
    other = ["away", "zero", "trunc", "stochastic"][(len(code) + len(in_dtype)) % 4]
    modes = ("even", "away", "zero", "trunc", "stochastic") if _ON_GPU else ("even", other)
    for rm in modes:
        kw = {"roundmode": rm, "seed": 99 if rm == "stochastic" else None}
        want = tcast_ref.cast(x, code, castmode="actual", **kw)
        got = tcast.cast(xt, code, castmode="actual", engine="triton", **kw)
        _assert_same_parts(want, got, ("data",), rm)
        vwant = tcast_ref.cast(x, code, castmode="virtual", **kw)
        vgot = tcast.cast(xt, code, castmode="virtual", engine="triton", **kw)
        np.testing.assert_array_equal(
            vgot.cpu().view(torch.int16).numpy(), np.asarray(vwant).view(np.int16), err_msg=rm
        )


@pytest.mark.parametrize(
    "code", ["int8_e8m0_t32", "int4_float32_t16", "uint8_float32_float32_t32", "int2_e8m0_t8"]
)
def test_every_bfloat16_input_through_scaled_ints_equals_reference(code, device):
    """Nearest-even int codes (the float32 shortcut) and trunc (the shift encoder)."""
    import tcast_ref

    x, xt = _all_16bit("bfloat16", device)
    for rm in ("even", "trunc"):
        want = tcast_ref.cast(x, code, castmode="actual", roundmode=rm)
        got = tcast.cast(xt, code, castmode="actual", roundmode=rm, engine="triton")
        _assert_same_parts(want, got, ("data", "scale", "zero"), rm)


@pytest.mark.parametrize("code", ["mxfp8", "mxfp4", "e3m2f_e8m0_t32", "nvfp4", "e5m2_e8m0_t16d0"])
def test_every_bfloat16_input_through_scaled_floats_equals_reference(code, device):
    """The finite-block encoder and the virtual shortcut of the fast formats, every input."""
    import tcast_ref

    x, xt = _all_16bit("bfloat16", device)
    want = tcast_ref.cast(x, code, castmode="actual")
    got = tcast.cast(xt, code, castmode="actual", engine="triton")
    _assert_same_parts(want, got, ("data", "scale", "tenscale"))
    vwant = tcast_ref.cast(x, code, castmode="virtual")
    vgot = tcast.cast(xt, code, castmode="virtual", engine="triton")
    np.testing.assert_array_equal(
        vgot.cpu().view(torch.int16).numpy(), np.asarray(vwant).view(np.int16)
    )


_MODES = [
    ("away", None),
    ("zero", None),
    ("trunc", None),
    ("stochastic", "seed"),
    ("stochastic", "rbits"),
]


@pytest.mark.parametrize(("roundmode", "rsource"), _MODES, ids=lambda v: str(v))
@pytest.mark.parametrize("code", ["mxfp4", "mxint8", "e5m2_e8m0_t16d0"])
def test_every_bfloat16_input_in_every_round_mode_equals_reference(
    code, roundmode, rsource, device
):
    """The float-arithmetic rounding of every mode (row and column geometry), every input.

    Stochastic words by aligned runs (seed) and per element (rbits); codes and values.
    """
    import tcast_ref

    x, xt = _all_16bit("bfloat16", device)
    rng = np.random.default_rng(5)
    k = tcast.rbits_width(code)  # K-bit random integers (SEMANTICS.md §3.3)
    top = (1 << k) - 1
    rb = rng.integers(0, 1 << k, x.shape).astype(np.uint8 if k == 8 else np.uint16)
    rb[0, :8] = [0, top, 1, 1 << (k - 1), (1 << (k - 1)) - 1, 0, top, 2]
    kw: dict = {"roundmode": roundmode}
    tkw: dict = {"roundmode": roundmode}
    if rsource == "seed":
        kw["seed"] = tkw["seed"] = 0x1234_5678_9ABC
    elif rsource == "rbits":
        kw["rbits"] = rb
        tkw["rbits"] = torch.from_numpy(rb).to(device)
    want = tcast_ref.cast(x, code, castmode="actual", **kw)
    got = tcast.cast(xt, code, castmode="actual", engine="triton", **tkw)
    _assert_same_parts(want, got, ("data", "scale"))
    vwant = tcast_ref.cast(x, code, castmode="virtual", **kw)
    vgot = tcast.cast(xt, code, castmode="virtual", engine="triton", **tkw)
    np.testing.assert_array_equal(
        vgot.cpu().view(torch.int16).numpy(), np.asarray(vwant).view(np.int16)
    )


@pytest.mark.parametrize(
    ("code", "shape"),
    [
        ("mxfp4", (4, 64)),
        ("nvfp4", (3, 96)),
        ("e2m1f_float32", (2, 1024)),
        ("e2m1f", (2, 1024)),
        ("int4_e8m0_t32", (2, 64)),
        ("uint4_float32_int8_t16", (2, 48)),
        ("e2m1f_e8m0_t2", (1, 2048)),
        ("mxfp6e2", (4, 64)),  # 6 bits: 4 codes in 3 bytes
        ("e3m2f", (2, 1024)),  # unscaled 6 bits
        ("int3_e8m0_t32", (2, 64)),  # odd widths: 8 codes in an int64 word of W bytes
        ("e2m2f_e8m0_t32", (3, 96)),
        ("e3m3f_e8m0_t16", (2, 48)),
        ("uint2_float32_int8_t32", (2, 64)),  # 4 codes in one byte
    ],
)
def test_compress_streams_written_packed_by_the_kernel_equal_reference(
    code, shape, device, monkeypatch
):
    """Whole row tiles of codes under 8 bits: the cast kernel writes the compress stream itself.

    Odd row counts, bfloat16 input, stochastic rounding from a seed and blocked scales where
    the case allows them (the packing must not depend on any of them).
    """
    import tcast_ref
    from tcast.layout import blocked_refusal
    from tcast_triton import _launch

    rows = shape[0] | 1  # an odd row count
    x = np.asarray(_entry((rows, *shape[1:]), "bfloat16", seed=11).x)
    xt = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16).to(device)
    dt = tcast.datatype(code)
    kw = {"roundmode": "stochastic", "seed": 7}
    if dt.sspec is not None and not blocked_refusal(dt):
        kw["scale_layout"] = "blocked"
    # a plan cache of its own: call objects made under another serve none of these casts
    monkeypatch.setattr(_launch, "_PLANS", {})
    got = tcast.cast(xt, code, castmode="compress", engine="triton", **kw)
    (plan,) = _launch._PLANS.values()
    assert plan.packed, f"{code} {shape}: the kernel did not pack"
    want = tcast_ref.cast(x, code, castmode="compress", **kw)
    _assert_same_parts(want, got, ("data", "scale", "zero", "tenscale"))
    up = tcast_ref.upcast(want)
    np.testing.assert_array_equal(
        tcast.upcast(got).cpu().numpy().view(np.uint32), np.asarray(up).view(np.uint32)
    )


@pytest.mark.parametrize(("code", "seed"), [("mxfp8", None), ("nvfp4", None), ("mxfp4", 2**64 - 5)])
def test_a_plan_launched_again_on_unaligned_input_or_another_seed_equals_reference(
    code, seed, device
):
    """The compiled kernel is reused only for arguments of its own specialization.

    The same plan (datatype, shape, modes) on a 16-byte aligned input, then on one that is
    not (a view 4 bytes in), and with a seed past 2**63 (another integer type).
    """
    import tcast_ref

    base = torch.from_numpy(np.asarray(_entry((4 * 64 + 4,), seed=4, specials=False).x))
    base = base.to(device)
    kw = {} if seed is None else {"roundmode": "stochastic"}
    for start, s in ((0, 1 if seed else None), (1, seed), (0, seed)):
        xt = base[start : start + 256].view(4, 64)
        if seed is not None:
            kw["seed"] = s
        got = tcast.cast(xt, code, castmode="actual", engine="triton", **kw)
        want = tcast_ref.cast(xt.cpu().numpy(), code, castmode="actual", **kw)
        _assert_same_parts(want, got, ("data", "scale", "tenscale"), f"start {start} seed {s}")


@pytest.mark.parametrize(
    ("code", "shape", "in_dtype", "roundmode"),
    [
        ("mxfp4", (64, 64), "bfloat16", "even"),  # 128 whole tiles: unmasked (FULL)
        ("mxfp4", (5, 96), "float16", "away"),  # a partial block: masked lanes
        ("mxfp8", (4, 64), "float32", "trunc"),  # 8 pieces of 4
        ("e2m1f_e4m3fn_t32", (2, 128), "bfloat16", "zero"),  # float scale
        ("uint4_float32_float32_t32", (3, 64), "float32", "even"),  # uint: three maxima
        ("mxint8", (2, 96), "bfloat16", "even"),
    ],
)
def test_row_tiles_held_one_per_thread_equal_reference(
    code, shape, in_dtype, roundmode, device, monkeypatch
):
    """Flat 32-wide row tiles go to ``_cast_row_pieces``.

    Each tile's pieces in one thread's registers, its scale computed once; the reference's
    bits in every cast mode. Stochastic rounding from a seed takes ``_cast_row_pieces`` too
    (a tile holds whole Philox calls of 128 / K elements: its calls in the thread's
    registers), with the reference's bits.
    """
    import tcast_ref
    from tcast_triton import _kernels, _launch

    # plan caches of their own: call objects made under another serve none of these casts
    monkeypatch.setattr(_launch, "_PLANS", {})
    _check(code, _entry(shape, in_dtype, seed=5), roundmode=roundmode, device=device)
    # compress streams of codes under 8 bits are packed by _cast_tiles; the rest take pieces
    kernels = {key[1].castmode: p.kernel for key, p in _launch._PLANS.items() if not p.packed}
    assert set(kernels) >= {CastMode.VIRTUAL, CastMode.ACTUAL}, f"{code}: {set(kernels)}"
    assert set(kernels.values()) == {_kernels._cast_row_pieces}, f"{code} {shape} {in_dtype}"
    monkeypatch.setattr(_launch, "_PLANS", {})
    x = np.ascontiguousarray(_entry(shape, in_dtype, seed=5).x)
    xt = tc.cb.torch_adapter(device).to_engine(x)
    got = tcast.cast(xt, code, castmode="actual", roundmode="stochastic", seed=3, engine="triton")
    kernels = {p.kernel for p in _launch._PLANS.values()}
    assert kernels == {_kernels._cast_row_pieces}, f"{code} stochastic from a seed: {kernels}"
    want = tcast_ref.cast(x, code, castmode="actual", roundmode="stochastic", seed=3)
    _assert_same_parts(want, got, ("data", "scale", "zero", "tenscale"), f"{code} seeded")


@pytest.mark.parametrize(
    ("shape", "in_dtype", "view"),
    [((33, 130), "bfloat16", False), ((4, 96, 40), "float32", False), ((200, 24), "float32", True)],
)
def test_e5m2_scales_under_round_toward_zero_with_transposed_scales_equal_reference(
    shape, in_dtype, view, device
):
    """``e4m3fn_e5m2_t32`` zero/floor/transposed, a case of the conformance smoke tier.

    Taken by the hardware conversion, its e5m2 scale codes come out wrong on the GPU (and
    with them element signs) while the interpreter's are right, so scale codes go through
    the integer encoder (``_launch``); on the GPU this test checks that they do.
    """
    _check(
        "e4m3fn_e5m2_t32",
        _entry(shape, in_dtype, view=view, seed=9),
        roundmode="zero",
        transpose=True,
        device=device,
    )


@pytest.mark.parametrize(
    "code, shape",
    [
        ("e4m3fn_e8m0_t2d0", (64, 2)),  # column kernel
        ("mxfp4", (64, 256)),  # row kernel
        ("mxfp8_2d", (64, 64)),  # the N-d kernel
        ("e4m3fn_float32", (4, 3000)),  # tensor scale
        ("e4m3fn", (8, 3000)),  # unscaled
    ],
)
def test_grids_past_cudas_program_limit_are_cast_by_the_torch_engine(
    code, shape, device, monkeypatch
):
    """A plan needing more programs than CUDA's grid takes (2**31 - 1: column tiles of a tiny
    inner size past ~8.6e9 elements) launches nothing; tcast_torch casts and decodes it.

    The limit is lowered so a small input reaches it; the results must equal the reference's
    and must come from the torch engine (counted), never from a truncated grid.
    """
    from tcast_torch import engine as torch_engine
    from tcast_triton import _launch, _launch_2d, _upcast

    for mod in (_launch, _launch_2d, _upcast):
        monkeypatch.setattr(mod, "MAX_PROGRAMS", 1)
    calls = {"run": 0, "run_upcast": 0}
    for name in calls:
        real = getattr(torch_engine, name)

        def counted(*a, _real=real, _name=name):
            calls[_name] += 1
            return _real(*a)

        monkeypatch.setattr(torch_engine, name, counted)
    _check(code, _entry(shape, "float32", seed=4), device=device)
    assert calls["run"] >= 3, calls  # virtual, actual and compress each fell back
    # the upcast kernel takes 1-D tiles; tcast_torch decodes 2-D tiles anyway
    assert calls["run_upcast"] >= 1 or code == "mxfp8_2d", calls


@pytest.mark.parametrize("code", ["e4m3fn_e8m3b128_t32", "e2m1f_e8m3b128_t16"])
def test_float_scales_whose_smallest_normal_is_a_float32_subnormal(code, device):
    """An 8-bit-exponent scale of bias 128 clamps to 2**-127 (a float32 subnormal); the
    kernels take the bound as a float32 constant (Triton typed it float64 and failed)."""
    e = _entry((4, 96), seed=5)
    tiny = (e.x * np.float32(2.0**-120)).astype(np.float32)  # scales reaching the bound
    _check(code, dataclasses.replace(e, x=tiny), device=device)
    _check(code, _entry((4, 96), seed=6), device=device)


def test_int64_offsets_cover_every_programs_last_block():
    """Offsets turn int64 before the largest block past a tensor's end (the amax pass's)
    could wrap int32: a wrapped offset is negative, passes ``offs < n`` and reads outside."""
    from tcast_triton import _launch

    for n in (2**31 - _launch.AMAX_BLOCK // 2, 2**31 - _launch.ROW_ELEMS_T16, 2**31 - 1):
        x = torch.empty(n, dtype=torch.bfloat16, device="meta")
        past = -(-n // _launch.AMAX_BLOCK) * _launch.AMAX_BLOCK  # the grid's reach
        assert past > 2**31 - 1 or n + _launch.AMAX_BLOCK > 2**31 - 1
        assert _launch._needs_i64(x), n
    assert not _launch._needs_i64(torch.empty(2**31 - 2**17, device="meta"))
    blocks = (_launch.AMAX_BLOCK, _launch.ROW_ELEMS, _launch.ROW_ELEMS_T16, _launch.COL_ELEMS)
    assert max(blocks) <= _launch.I64_MARGIN


@pytest.mark.parametrize("roundmode", ["even", "zero"])
def test_an_overflowed_two_level_multiplier_gives_the_reference_nans(roundmode, device):
    """Zero elements times a two-level multiplier ``fl32(t * s)`` that overflowed to Inf are
    +NaN in the virtual result (SEMANTICS.md §8), not the GPU's 0x7FFFFFFF."""
    import conformance_battery as cb

    big = np.finfo(np.float32).max
    x = np.array([[big, -big] + [0.0] * 14] * 2, np.float32)
    rbits = np.arange(x.size, dtype=np.uint32).reshape(x.shape) * np.uint32(0x9E3779B9)
    entry = cb.Entry("overflowed multiplier", x, rbits, 11)
    _check("int2_float16_float32_t16", entry, roundmode=roundmode, device=device)


@pytest.mark.parametrize(
    ("code", "shape", "h"),
    [
        # the amax pass transforms too, over several programs (AMAX_BLOCK_FUSED elements each)
        ("nvfp4", (70, 512), tcast.Hadamard.te_wgrad()),
        ("mxfp4", (3, 96), tcast.Hadamard.seeded(32, 0)),  # sign 31 is -1: the int32 sign
        ("mxint8", (2, 64), tcast.Hadamard.seeded(8, 2)),  # groups smaller than the tile
        ("uint4_float32_int8_t16", (3, 32), tcast.Hadamard.seeded(2, 5)),
    ],
)
def test_a_fused_transform_equals_the_reference(code, shape, h, device, monkeypatch):
    """Actual and compress casts of whole row tiles: the cast kernel transforms the tiles it
    loads (SEMANTICS.md §5.11), the reference's bits; other casts compose the transform."""
    import tcast_ref
    from tcast_triton import _kernels, _launch

    x = np.asarray(_entry(shape, "bfloat16", seed=13).x)
    # a group of signed zeros: the sign change is exact (-(+0) = -0)
    x[0, : h.size] = np.where(np.arange(h.size) % 3 == 0, -0.0, 0.0).astype(x.dtype)
    xt = torch.from_numpy(x.view(np.int16)).view(torch.bfloat16).to(device)
    for cm in ("actual", "compress"):
        for kw in ({}, {"roundmode": "stochastic", "seed": 11}):
            monkeypatch.setattr(_launch, "_PLANS", {})
            got = tcast.cast(xt, code, castmode=cm, transform=h, engine="triton", **kw)
            (plan,) = _launch._PLANS.values()
            assert plan.kw["RHT_G"] == h.size, f"{code}: the kernel did not transform"
            if code == "nvfp4":  # the last of the amax programs partial
                assert plan.amax_grid[0] > 1 and x.size % _launch.AMAX_BLOCK_FUSED
                assert plan.amax_kw["RHT_G"] == h.size
            # each tile in one thread, its Philox calls too where seeded (packed compress
            # streams keep the [BL, TP] block of _cast_tiles)
            pieces = not plan.packed
            assert (plan.kernel is _kernels._cast_row_pieces) == pieces, f"{code} {cm} {kw}"
            want = tcast_ref.cast(x, code, castmode=cm, transform=h, **kw)
            assert got.transform == h
            _assert_same_parts(want, got, ("data", "scale", "zero", "tenscale"))
    # a partial last tile (a multiple of the group, not of the tile): composed, the same bits
    cut = shape[-1] - h.size
    if cut % tcast.datatype(code).sspec.tiles[0].size:
        monkeypatch.setattr(_launch, "_PLANS", {})
        got = tcast.cast(xt[..., :cut], code, castmode="actual", transform=h, engine="triton")
        assert not any(p.kw.get("RHT_G") for p in _launch._PLANS.values())
        want = tcast_ref.cast(np.ascontiguousarray(x[..., :cut]), code, castmode="actual",
                              transform=h)  # fmt: skip
        _assert_same_parts(want, got, ("data", "scale", "zero", "tenscale"))


@pytest.mark.parametrize(
    ("code", "shape", "h"),
    [
        ("e2m1f_e8m0_t32d0", (64, 6), tcast.Hadamard.seeded(32, 1)),  # MXFP4 down the columns
        ("uint4_float32_int8_t16d1", (2, 32, 5), tcast.Hadamard.seeded(4, 2)),  # a middle dim
    ],
)
def test_a_fused_transform_down_the_columns_equals_the_reference(
    code, shape, h, device, monkeypatch
):
    """Tiles along another dimension: the column geometry's block transformed along axis 0.

    Two-level scales there: the next test.
    """
    import tcast_ref
    from tcast_triton import _launch

    x = np.asarray(_entry(shape, "float16", seed=17).x)
    xt = torch.from_numpy(x).to(device)
    for cm in ("actual", "compress"):
        for kw in ({}, {"roundmode": "stochastic", "seed": 5}):
            monkeypatch.setattr(_launch, "_PLANS", {})
            got = tcast.cast(xt, code, castmode=cm, transform=h, engine="triton", **kw)
            (plan,) = _launch._PLANS.values()
            assert plan.kw["RHT_G"] == h.size and plan.kw["AXIS"] == 0, code
            # runs of 64 / TP columns a thread (5 or 6 columns: partial runs masked)
            assert plan.kw["CV"] == 64 // plan.kw["TP"], code
            want = tcast_ref.cast(x, code, castmode=cm, transform=h, **kw)
            _assert_same_parts(want, got, ("data", "scale", "zero", "tenscale"))


@pytest.mark.parametrize(
    ("code", "shape"),
    [
        ("e2m1f_e4m3fn_float32_t16d0", (32, 6)),
        ("e2m1f_e4m3fn_float32_t16d0", (64, 200)),  # a partial block of columns
        ("e2m1f_e4m3fn_float32_t16d1", (2, 32, 40)),  # tiles along a middle dimension
    ],
)
def test_two_level_scales_down_the_columns_fuse_the_transform_in_the_amax_pass(
    code, shape, device, monkeypatch
):
    """NVFP4 down the columns (the Wgrad operands of NVIDIA's recipe): the amax pass
    transforms groups of rows down each column (``RHT_INNER``), then the column cast."""
    import tcast_ref
    from tcast_triton import _launch

    x = np.ascontiguousarray(np.asarray(_entry(shape, "float16", seed=3).x))
    te = tcast.Hadamard.te_wgrad()
    for kw in ({}, {"roundmode": "stochastic", "seed": 5}):
        monkeypatch.setattr(_launch, "_PLANS", {})
        got = tcast.cast(torch.from_numpy(x).to(device), code, castmode="actual", transform=te,
                         engine="triton", **kw)  # fmt: skip
        (plan,) = _launch._PLANS.values()
        assert plan.kw["RHT_G"] == 16 and plan.amax_kw["RHT_INNER"] == shape[-1]
        want = tcast_ref.cast(x, code, castmode="actual", transform=te, **kw)
        _assert_same_parts(want, got, ("data", "scale", "tenscale"))


def test_a_transform_under_torch_compile_is_composed_with_the_reference_bits(device):
    """The ``tcast_triton::cast`` op carries no transform: traced casts compose it."""
    import tcast_ref
    import tcast_triton

    h = tcast.Hadamard.seeded(16, 4)
    x = np.asarray(_entry((4, 64), "float32", seed=2).x)
    xt = torch.from_numpy(x).to(device)

    def fn(v):
        return tcast_triton.cast(v, "nvfp4", castmode="actual", transform=h)

    torch._dynamo.reset()
    got = torch.compile(fn, fullgraph=True, backend="eager")(xt)
    assert got.transform == h
    want = tcast_ref.cast(x, "nvfp4", castmode="actual", transform=h)
    _assert_same_parts(want, got, ("data", "scale", "tenscale"))
