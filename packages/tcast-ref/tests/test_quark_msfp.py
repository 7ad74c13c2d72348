"""MSFP MX9/MX6/MX4 against AMD Quark's emulation, an implementation we did not write.

Quark (``amd-quark`` 0.13, a test-only dependency) emulates MX9 and MX6 in pure PyTorch:
``fake_quantize_mx6_mx9(x, axis, block_size, quant_bit=, sub_block_size=)`` in
``quark.torch.kernel.hw_emulation.hw_emulation_interface``. Its rule, read from that file:
the block exponent ``E`` is the float32 exponent field of the block's amax minus 127; a pair's
offset ``p`` is 1 iff both of its elements have exponent fields at most ``E - 1``; the code is
``round_half_even(x / 2**(E - p - m + 1))`` clamped to ``±(2**m - 1)`` with ``m = quant_bit - 1``
magnitude bits. That is SEMANTICS.md §5.8 for ``int8``/``int5``/``int3`` data with scale
``e8m0_t16s2o1`` (our ``mx9``/``mx6``/``mx4``; Quark defines no MX4, its function is generic in
``quant_bit`` and runs it with 3). Quark has one round mode (ties to even) and one scale rule
(the exponent field: our ``floor``), so only those are compared.

The two differ in three stated rules (SEMANTICS.md §11), each with a named test below:

* the sign of zero: a negative value that rounds to zero is ``-0.0`` in Quark; tcast's int
  elements have no ``-0`` (code 0 is ``+0.0``);
* float32 subnormal inputs: Quark flushes every ``|x| < 2**-126`` to zero before anything
  else; tcast casts them like other values (a subnormal-amax block keeps its exact binade,
  and a subnormal element of a block whose step is below ``2**-126`` keeps its value);
* NaN and Inf: Quark quantizes the rest of the block as if they were zero and passes them
  through; tcast's non-finite rule (§5.2) makes the whole block NaN.

Everywhere else the values are equal bit for bit after the sign-of-zero rule: seeded random
tiles and adversarial ones (binade boundaries of the pair offset, ties at both steps, values
rounding up to the next power of two, extreme block exponents, partial tiles and pairs, blocks
along dimension 0, float16 and bfloat16 inputs).
Quark's ``block_size`` is passed as 16, the MSFP block (``k1``).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import tcast

torch = pytest.importorskip("torch")
pytest.importorskip(
    "quark", minversion="0.13", reason="amd-quark (test-only oracle for MX9/MX6) is not installed"
)

BLOCK, PAIR = 16, 2
#: Quark's quant_bit (sign and magnitude bits of an element) for each tcast datatype
QUANT_BIT = {"mx9": 8, "mx6": 5, "mx4": 3}
NAMES = list(QUANT_BIT)
SMALLEST_NORMAL = 2.0**-126


def _load_fake_quantize_mx6_mx9():
    """Quark's ``fake_quantize_mx6_mx9`` without running its package ``__init__`` files.

    ``import quark.torch`` needs transformers (not a dependency of amd-quark) and the
    hw_emulation module JIT-compiles C++ kernels when imported. The MX6/MX9 emulation is pure
    PyTorch and uses neither, so the packages on its import path are entered as bare
    namespaces and the kernel loader as an empty module; the module itself runs unchanged.
    """
    root = Path(importlib.util.find_spec("quark").submodule_search_locations[0])
    for name in (
        "quark.torch",
        "quark.torch.kernel",
        "quark.torch.kernel.hw_emulation",
        "quark.torch.quantization",
        "quark.torch.quantization.config",
    ):
        if name not in sys.modules:
            package = types.ModuleType(name)
            package.__path__ = [str(root.joinpath(*name.split(".")[1:]))]
            sys.modules[name] = package
    loader = "quark.torch.kernel.hw_emulation.extensions"
    if loader not in sys.modules:
        stub = types.ModuleType(loader)
        stub.kernel_ext = None  # the C++ kernels: not used by the MX6/MX9 path
        sys.modules[loader] = stub
    # quark.torch.utils must be imported before quark.torch.quantization.utils (an import cycle)
    importlib.import_module("quark.torch.utils")
    module = importlib.import_module("quark.torch.kernel.hw_emulation.hw_emulation_interface")
    return module.fake_quantize_mx6_mx9


FAKE_QUANTIZE = _load_fake_quantize_mx6_mx9()


def _quark(x: np.ndarray, name: str, axis: int = -1) -> np.ndarray:
    """Quark's fake-quantized values of a float32 array (blocks of 16 along ``axis``)."""
    out = FAKE_QUANTIZE(
        torch.from_numpy(np.array(x, dtype=np.float32)),
        axis=axis,
        block_size=BLOCK,
        quant_bit=QUANT_BIT[name],
        sub_block_size=PAIR,
    )
    return out.numpy()


def _tcast(x: np.ndarray, name: str) -> np.ndarray:
    """tcast's virtual cast through the reference engine (round even, scale mode floor)."""
    return tcast.cast(np.array(x, dtype=np.float32), name)


def _exact(x: np.ndarray, name: str) -> np.ndarray:
    """tcast's exact model of the same cast (pure Python, small arrays only)."""
    x = np.array(x, dtype=np.float32)
    result = tcast.exact.cast_array([float(v) for v in x.ravel()], x.shape, name)
    return np.array(result.values, dtype=np.float32).reshape(x.shape)


def _stated_sign_of_zero(quark_values: np.ndarray) -> np.ndarray:
    """Quark's values with the sign-of-zero rule applied: tcast's int elements have no -0."""
    return np.where(quark_values == 0, np.float32(0.0), quark_values).astype(np.float32)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def _assert_same_bits(x: np.ndarray, got: np.ndarray, want: np.ndarray, what: str) -> None:
    diff = np.flatnonzero(_bits(got) != _bits(want))
    if diff.size:
        i = np.unravel_index(diff[0], x.shape)
        pytest.fail(
            f"{what}: {diff.size} of {x.size} values differ; first at {i}: input "
            f"{float(x[i])!r}, got {float(got[i])!r}, want {float(want[i])!r}"
        )


def _f32(values) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def _below(power: float) -> float:
    """The float32 just below a power of two (which may be 2**128, just above float32)."""
    return power * (1 - 2.0**-24)


# --------------------------------------------------------------------------------------------
# Tiles. The agreement tests keep float32 subnormals out (they have their own tests): a
# subnormal replaced by zero leaves every pair offset as it was, since both have exponent
# field -127, below any normal block exponent.


def _without_subnormals(x: np.ndarray) -> np.ndarray:
    return np.where(np.abs(x) < SMALLEST_NORMAL, np.float32(0.0), x).astype(np.float32)


def _random_tiles(seed: int, rows: int = 8, cols: int = 5 * BLOCK + 7) -> np.ndarray:
    """Normal values, each block at its own magnitude (2^-90 .. 2^100), and each pair spread
    over a few binades so that both offsets occur; the last tile and pair are partial."""
    rng = np.random.default_rng(seed)
    nblocks = -(-cols // BLOCK)
    block_exp = np.repeat(rng.integers(-90, 101, size=(rows, nblocks)), BLOCK, axis=1)[:, :cols]
    pair_exp = np.repeat(rng.integers(-12, 1, size=(rows, -(-cols // PAIR))), PAIR, axis=1)
    x = rng.standard_normal((rows, cols)) * np.exp2(block_exp + pair_exp[:, :cols])
    return _without_subnormals(x.astype(np.float32))


def _adversarial_blocks(m: int, e: int) -> list[list[float]]:
    """Blocks of 16 values with block exponent ``e`` for elements of ``m`` magnitude bits.

    Pairs on the offset's binade boundary, ties at both steps (2**(e-m+1) with offset 0,
    2**(e-m) with offset 1), values that round up to 2**e in an offset pair or to 2**(e+1)
    at the amax (both saturate), zeros of both signs, and values below half a step.
    """
    top = 2.0**e
    fine = 2.0 ** (e - m)  # the step of an offset pair
    coarse = 2 * fine  # the step of a pair without offset
    boundaries = [
        top, top / 2,  # offset 0: the amax pair
        top / 2, _below(top),  # offset 1; rounds up to 2**e and saturates
        top / 2, top / 2,  # offset 1, both exactly one binade below
        -top / 2, -_below(top),  # the same, negative
        0.0, 0.0,  # an all-zero pair: offset 1
        -0.0, top / 4,
        fine / 2, -fine / 2,  # ties at half the fine step round to (-)0
        top, -_below(top),  # offset 0 (one element in the top binade)
    ]  # fmt: skip
    # ties at the coarse step in the top binade: top + (k + 1/2) * coarse, k even and odd
    ks = list(range(2 ** (m - 1)))
    ks = (ks[:8] + ks[-8:]) * 8
    ties_coarse = [(top + (k + 0.5) * coarse) * (-1) ** i for i, k in enumerate(ks[:BLOCK])]
    # ties at the fine step in offset pairs (below top), after an amax pair of 2**e
    ties_fine = [top, 0.0] + [(k + 0.5) * fine for k in (0, 1, 2, 3, 2**m - 3, 2**m - 2)]
    ties_fine += [-(k + 0.5) * fine for k in (2 ** (m - 1), 2 ** (m - 1) + 1)]
    ties_fine += [(2**m - 0.5) * fine, (2**m - 1.5) * fine, top / 2, -(2**m - 0.5) * fine]
    ties_fine += [-(2**m - 1.5) * fine, 2.5 * fine]
    # the amax rounds up to 2**(e+1): saturates to (2**m - 1) * coarse
    amax_up = [_below(2 * top), (2**m - 0.5) * coarse, -(2**m - 0.5) * coarse, top]
    amax_up += [(2**m - 1.5) * coarse, top / 2, _below(top), top / 8] + [0.0] * 8
    below_half = [top] + [-(fine / 4)] * 7 + [fine / 2 * 1.5, fine / 2, 0.0, -0.0] + [0.0] * 4
    blocks = [boundaries, ties_coarse, ties_fine, amax_up, below_half]
    assert all(len(b) == BLOCK for b in blocks)  # a check of this generator, not of tcast
    return blocks


def _adversarial_tiles(name: str) -> np.ndarray:
    """The adversarial blocks of each block exponent from -116 to 127 (one row each, ending in
    a partial tile of zeros), then a row at the smallest normal exponent."""
    m = QUANT_BIT[name] - 1
    rows = []
    for e in (-116, -60, -1, 0, 1, 64, 126, 127):
        rows.append([v for b in _adversarial_blocks(m, e) for v in b] + [0.0] * 5)
    bottom = [SMALLEST_NORMAL * (1 + k / 16) * (-1) ** k for k in range(BLOCK)]
    rows.append((bottom * 6)[: len(rows[0])])
    x = _f32(rows)
    assert not np.isnan(x).any() and np.isfinite(x).all()  # the constructions stay in float32
    return _without_subnormals(x)


def test_adversarial_tiles_reach_the_cases_they_name():
    # the generator must produce what its docstring promises, or the agreement tests are weak
    for name in NAMES:
        m = QUANT_BIT[name] - 1
        x = _adversarial_tiles(name)[3]  # block exponent 0
        ties_fine = (x[2 * BLOCK : 3 * BLOCK] / 2.0**-m) % 1 == 0.5
        ties_coarse = (x[BLOCK : 2 * BLOCK] / 2.0 ** (1 - m)) % 1 == 0.5
        assert ties_fine.sum() >= 10 and ties_coarse.all(), name
        assert x[3] == _below(1.0) and x[3 * BLOCK] == _below(2.0), name


# --------------------------------------------------------------------------------------------
# The Quark side of each stated difference, with the values worked by hand from its rule.


@pytest.mark.parametrize("name", NAMES)
def test_quark_saturates_an_offset_pair_value_rounding_up_to_2_pow_e(name):
    # E = 0; the pair (1 - 2**-24, 0.5) has offset 1 and step 2**-m; (1 - 2**-24) / 2**-m rounds
    # to 2**m, which m bits cannot hold: Quark 0.13 clamps to 2**m - 1, as tcast saturates
    m = QUANT_BIT[name] - 1
    x = _f32([[1.0, 0.0, _below(1.0), 0.5] + [0.0] * 12])
    assert _quark(x, name)[0, :4].tolist() == [1.0, 0.0, 1 - 2.0**-m, 0.5]


@pytest.mark.parametrize("name", NAMES)
def test_quark_gives_minus_zero_for_negative_values_rounding_to_zero(name):
    x = _f32([[1.0, 0.0, -(2.0**-20), -0.0] + [0.0] * 12])
    q = _quark(x, name)[0, :4]
    # -2**-20 rounds to -0.0; a -0.0 input is flushed to +0.0 with the subnormals
    assert _bits(q).tolist() == _bits(_f32([1.0, 0.0, -0.0, 0.0])).tolist()


@pytest.mark.parametrize("name", NAMES)
def test_quark_flushes_float32_subnormals_to_zero(name):
    x = _f32([[1.5 * 2.0**-127, 2.0**-130, -(2.0**-149), 0.0] + [0.0] * 12])  # subnormal amax
    y = _f32([[2.0**-125, 0.0, 2.0**-127, 0.0] + [0.0] * 12])  # a subnormal in a normal block
    assert _bits(_quark(x, name)[0]).tolist() == [0] * 16
    assert _quark(y, name)[0, :4].tolist() == [2.0**-125, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("name", NAMES)
def test_quark_passes_nan_and_inf_through_and_casts_the_rest_of_their_block(name):
    nan, inf = float("nan"), float("inf")
    x = _f32([[1.0, nan, 0.5, inf, 0.25, -inf] + [0.0] * 10 + [0.75] * 16])
    q = _quark(x, name)[0]
    assert np.isnan(q[1]) and q[3] == inf and q[5] == -inf
    assert q[[0, 2, 4]].tolist() == [1.0, 0.5, 0.25] and (q[16:] == 0.75).all()


# --------------------------------------------------------------------------------------------
# tcast against Quark. tcast's side of each stated difference is worked by hand from
# SEMANTICS.md §5.8: scale code clamp(E + 127, 0, 254), x' = x * 2**-E', offset
# d = clamp(-floor_log2(max |x'| of the pair), 0, 1) (1 for an all-zero pair), code
# round(x' * 2**d * 2**(K-2)) clamped to ±(2**(K-1) - 1), value code * 2**(2-K) * 2**-d * 2**E'.


@pytest.mark.parametrize("name", NAMES)
def test_random_tiles_equal_quark_bit_for_bit(name):
    for seed in (1, 2, 3):
        x = _random_tiles(seed)
        want = _stated_sign_of_zero(_quark(x, name))
        _assert_same_bits(x, _tcast(x, name), want, f"{name} seed {seed}")


@pytest.mark.parametrize("name", NAMES)
def test_adversarial_tiles_equal_quark_bit_for_bit(name):
    x = _adversarial_tiles(name)
    want = _stated_sign_of_zero(_quark(x, name))
    _assert_same_bits(x, _tcast(x, name), want, name)
    # the exact model on part of it (block exponents 0 and 127, the bottom row; partial tile)
    part = x[[3, 7, 8], : 2 * BLOCK + 5]
    _assert_same_bits(part, _exact(part, name), want[[3, 7, 8], : 2 * BLOCK + 5], f"{name} exact")


@pytest.mark.parametrize("name", NAMES)
def test_column_blocks_equal_quark_bit_for_bit(name):
    # blocks along dimension 0: Quark's axis=0, tcast's tile segment d0
    x = _random_tiles(4, rows=BLOCK * 2 + 3, cols=6)
    code = tcast.datatype(name).code + "d0"
    want = _stated_sign_of_zero(_quark(x, name, axis=0))
    _assert_same_bits(x, _tcast(x, code), want, code)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("input_dtype", ["float16", "bfloat16"])
def test_16_bit_inputs_equal_quark_bit_for_bit(name, input_dtype):
    # Quark reads the exponent field of the input dtype and flushes its subnormals; tcast casts
    # the inputs exactly in float32 and rounds the values to the input dtype (exact here)
    ml_dtypes = pytest.importorskip("ml_dtypes")
    np_dtype = np.float16 if input_dtype == "float16" else ml_dtypes.bfloat16
    smallest_normal = 2.0**-14 if input_dtype == "float16" else SMALLEST_NORMAL
    rng = np.random.default_rng(5)
    rows, cols = 8, 5 * BLOCK + 7
    low, high = (-8, 12) if input_dtype == "float16" else (-90, 100)
    block_exp = np.repeat(rng.integers(low, high, size=(rows, 6)), BLOCK, axis=1)[:, :cols]
    pair_exp = np.repeat(rng.integers(-6, 1, size=(rows, cols // PAIR + 1)), PAIR, axis=1)
    x = (rng.standard_normal((rows, cols)) * np.exp2(block_exp + pair_exp[:, :cols])).astype(
        np_dtype
    )
    x = np.where(np.abs(x.astype(np.float32)) < smallest_normal, 0, x).astype(np_dtype)
    out = FAKE_QUANTIZE(
        torch.from_numpy(x.astype(np.float32)).to(getattr(torch, input_dtype)),
        axis=-1,
        block_size=BLOCK,
        quant_bit=QUANT_BIT[name],
        sub_block_size=PAIR,
    )
    want = _stated_sign_of_zero(out.float().numpy())
    got = tcast.cast(x, name)
    assert got.dtype == x.dtype
    _assert_same_bits(x.astype(np.float32), got.astype(np.float32), want, f"{name} {input_dtype}")


@pytest.mark.parametrize("name", NAMES)
def test_offset_pair_value_rounding_up_to_2_pow_e_saturates(name):
    # tcast: E' = 0, pair (1 - 2**-24, 0.5): d = 1, code round((1 - 2**-24) * 2**m) = 2**m ->
    # saturates to 2**m - 1, value 1 - 2**-m; Quark 0.13 agrees (its test above)
    m = QUANT_BIT[name] - 1
    x = _f32([[1.0, 0.0, _below(1.0), 0.5] + [0.0] * 12])
    assert _tcast(x, name)[0, :4].tolist() == [1.0, 0.0, 1 - 2.0**-m, 0.5]


@pytest.mark.parametrize("name", NAMES)
def test_negative_values_rounding_to_zero_are_plus_zero(name):
    # int elements have no -0: code 0 decodes to +0.0 (Quark: -0.0 for -2**-20)
    x = _f32([[1.0, 0.0, -(2.0**-20), -0.0] + [0.0] * 12])
    assert _bits(_tcast(x, name)[0, :4]).tolist() == _bits(_f32([1.0, 0, 0, 0])).tolist()


# subnormal-amax block [1.5 * 2**-127, 2**-130, -2**-149, 0, ...]: amax = 3 * 2**-128, E = -127,
# scale code 0 (2**-127); pair 0: x' = (1.5, 2**-3), d = 0, codes round(1.5 * 2**(K-2)) and
# round(2**-3 * 2**(K-2)): K = 8: 96 and 8, K = 5: 12 and 1, K = 3: 3 and round(0.25) = 0;
# pair 1: x' = (-2**-22, 0), d = 1, code round(-2**-22 * 2**(K-1)) = 0 -> +0.
# block [2**-133, 0, ...] (amax below the smallest scale): x' = 2**-6, d = 1,
# code round(2**-6 * 2**(K-1)): K = 8: 2 (value 2**-133), K = 5, 3: 0.
SUBNORMAL_AMAX = {
    "mx9": ([1.5 * 2.0**-127, 2.0**-130, 0.0, 0.0], 2.0**-133),
    "mx6": ([1.5 * 2.0**-127, 2.0**-130, 0.0, 0.0], 0.0),
    "mx4": ([1.5 * 2.0**-127, 0.0, 0.0, 0.0], 0.0),
}


@pytest.mark.parametrize("name", NAMES)
def test_subnormal_amax_blocks_keep_their_exact_binade(name):
    x = _f32(
        [[1.5 * 2.0**-127, 2.0**-130, -(2.0**-149), 0.0] + [0.0] * 12 + [2.0**-133] + [0] * 15]
    )
    got = _tcast(x, name)[0]
    head, single = SUBNORMAL_AMAX[name]
    assert _bits(got[:4]).tolist() == _bits(_f32(head)).tolist()
    assert got[16] == single and (got[4:16] == 0).all() and (got[17:] == 0).all()
    _assert_same_bits(x, _exact(x, name), _tcast(x, name), f"{name} exact")


@pytest.mark.parametrize("name", NAMES)
def test_subnormal_elements_of_a_tiny_normal_block_keep_their_value(name):
    # E = -125; the pair (2**-127, 0): x' = 2**-2, d = 1, code round(2**-2 * 2**(K-1)) = 2**(K-3)
    # (K = 3: 1), value 2**(K-3) * 2**(2-K) * 2**-1 * 2**-125 = 2**-127 (Quark: 0)
    x = _f32([[2.0**-125, 0.0, 2.0**-127, 0.0] + [0.0] * 12])
    assert _tcast(x, name)[0, :4].tolist() == [2.0**-125, 0.0, 2.0**-127, 0.0]


@pytest.mark.parametrize("name", NAMES)
def test_a_block_with_nan_or_inf_is_nan(name):
    # SEMANTICS.md §5.2: the whole block is NaN; the next block is cast as usual (0.75 exact)
    nan, inf = float("nan"), float("inf")
    for bad in (nan, inf, -inf):
        x = _f32([[1.0, bad, 0.5, 0.25] + [0.0] * 12 + [0.75] * 16])
        got = _tcast(x, name)[0]
        assert np.isnan(got[:16]).all() and (got[16:] == 0.75).all(), bad
