"""The bfloat16-pair encoder (``_codec.pair_codes``) of the dual kernel, on a GPU (sm_90).

Its PTX does not run under the interpreter, so these tests run only on CUDA:

* the encoder alone over every bfloat16 pattern (NaN aside) times every power-of-two
  multiplier ``2**-127 .. 2**127``, against ``tcast_ref``'s encode of the float32 product
  (the float32 product is what a scaled cast encodes, SEMANTICS.md §5; where it overflows
  or falls below float32's normal range the codes must still agree);
* ``cast_dual`` of bfloat16 blocks whose scales span the whole E8M0 range, plus every
  bfloat16 pattern (NaN and Inf blocks included), against single ``tcast_ref`` casts, plain
  and transposed, with whole and partial blocks, the pair path asserted taken;
* the single row cast (``_cast_row_pieces``) of the same inputs, plain and blocked scales.
"""

from __future__ import annotations

import importlib

import dual_checks as dc
import numpy as np
import pytest
import torch
import triton
import triton.language as tl

import tcast
import tcast_ref
import tcast_ref as ref_codec
from tcast import RoundMode
from tcast_triton._codec import pair_codes
from tcast_triton._env import INTERPRETING
from tcast_triton._formats import fmt

dual_launch = importlib.import_module("tcast_triton._launch_dual")
launch = importlib.import_module("tcast_triton._launch")

pytestmark = pytest.mark.skipif(
    INTERPRETING or not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
    reason="the pair encoder's PTX needs an sm_90 GPU",
)

#: The catalog's element formats that take the pair encoder (checked below).
PAIR_DTYPES = ("mxfp4", "mxfp6e2", "mxfp6e3")
_PAIR = 29  # the format tuple's pair field (_codec.F_PAIR)


@triton.jit
def _pair_kernel(w_ptr, m_ptr, out_ptr, F: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    w = tl.load(w_ptr + offs)
    m = tl.load(m_ptr + offs)
    keep = tl.full((BLOCK,), -1, tl.int16)
    tl.store(out_ptr + offs, pair_codes(w, m, keep, F))


def test_the_catalog_formats_take_the_pair_encoder():
    for code in PAIR_DTYPES:
        e = fmt(tcast.datatype(code).nspec, RoundMode.EVEN, True)
        assert e[_PAIR] == 1, code
    # no -0, not a float, more than 8 bits (e4m3fn / e5m2 qualify: the hardware FP8
    # conversion takes them first, _launch_dual._pairs)
    for code in ("e5m2fnuz", "e2m1fnuz", "int8", "e8m0", "bfloat16"):
        assert fmt(tcast.number(code), RoundMode.EVEN, True)[_PAIR] == 0, code


@pytest.mark.parametrize("code", PAIR_DTYPES)
def test_pair_codes_are_the_reference_codes_of_every_product(code):
    """Every bfloat16 pattern but NaN times every multiplier 2**j, j in [-127, 127]."""
    spec = tcast.datatype(code).nspec
    e = fmt(spec, RoundMode.EVEN, True)
    pats = np.arange(1 << 16, dtype=np.uint32)
    pats = pats[(pats & 0x7FFF) <= 0x7F80]  # NaNs never reach the encoder: the block is bad
    lo, hi = pats[0::2], pats[1::2]
    words = (lo | (hi << 16)).view(np.int32)
    bad = []
    for j in range(-127, 128):
        mult = np.float32(np.ldexp(1.0, j))
        mb = int(np.array(mult, np.float32).view(np.uint32)) >> 16
        mw = mb | (mb << 16)
        n = -(-words.size // 1024) * 1024
        wg = torch.zeros(n, dtype=torch.int32, device="cuda")
        mg = torch.full((n,), mw - (1 << 32) if mw >= 1 << 31 else mw, dtype=torch.int32).cuda()
        wg[: words.size] = torch.from_numpy(words).cuda()
        out = torch.empty(n, dtype=torch.int16, device="cuda")
        _pair_kernel[(n // 1024,)](wg, mg, out, F=e, BLOCK=1024)
        got = out[: words.size].cpu().numpy().view(np.uint16)
        x = (pats << 16).view(np.float32)
        with np.errstate(over="ignore"):
            want = ref_codec.encode(x * mult, spec, RoundMode.EVEN, saturate=True)
        want_pairs = want[0::2].astype(np.uint16) | (want[1::2].astype(np.uint16) << 8)
        diff = np.flatnonzero(got != want_pairs)
        if diff.size:
            i = diff[0]
            bad.append(
                f"2**{j}: {diff.size} pairs differ, e.g. {lo[i]:#06x},{hi[i]:#06x}: "
                f"{got[i]:#06x} != {want_pairs[i]:#06x}"
            )
    assert not bad, "\n".join(bad[:10])


def _blocks(rows: int, cols: int, seed: int) -> np.ndarray:
    """bfloat16 bits: 32x32 regions of random values under a random top exponent (every
    E8M0 scale), then one band of every bfloat16 pattern (NaN, Inf, subnormal blocks)."""
    rng = np.random.default_rng(seed)
    top = rng.integers(-8, 256, size=(-(-rows // 32), -(-cols // 32)))
    top = np.repeat(np.repeat(top, 32, 0), 32, 1)[:rows, :cols]
    exp = np.clip(top - rng.integers(0, 14, size=(rows, cols)), 0, 254)
    mant = rng.integers(0, 128, size=(rows, cols))
    sign = rng.integers(0, 2, size=(rows, cols))
    bits = (sign << 15) | (exp << 7) | mant
    bits[rng.random((rows, cols)) < 0.01] = 0x8000  # -0
    flat = bits.reshape(-1)
    band = rng.permutation(1 << 16)
    start = (flat.size // 2) // cols * cols
    n = min(band.size, flat.size - start)
    flat[start : start + n] = band[:n]
    return flat.astype(np.uint16).reshape(rows, cols)


@pytest.mark.parametrize("code", PAIR_DTYPES)
@pytest.mark.parametrize("shape", [(512, 2048), (200, 1030)], ids=["whole", "partial"])
@pytest.mark.parametrize("transposed", [False, True])
def test_cast_dual_by_pairs_equals_single_reference_casts(code, shape, transposed, monkeypatch):
    bits = _blocks(*shape, seed=shape[1])
    x = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    dt = tcast.datatype(code)
    taken = []
    real = dual_launch._pairs

    def recording(*a):
        out = real(*a)
        taken.append(out)
        return out

    monkeypatch.setattr(dual_launch, "_pairs", recording)
    monkeypatch.setattr(dual_launch, "_PLANS", {})
    got = tcast.cast_dual(x.cuda(), dt, engine="triton", transposed=transposed)
    assert taken == [True], f"{code}: the pair path was not taken ({taken})"
    want = dc.expected_dual(dc.to_numpy(x), dt, transposed=transposed)
    problems = dc.differences(got[0], want[0], "rows") + dc.differences(got[1], want[1], "cols")
    assert not problems, f"{code} {shape} transposed={transposed}:\n" + "\n".join(problems)


#: Other datatypes of the conformance space that take the pair path: IEEE-style elements with
#: Inf/NaN codes, a 4-bit exponent scale, 2- and 4-element tiles.
OTHER_PAIRS = ("e3m4_e8m0_t32", "e3m3_e8m0_t32", "e2m1f_e4m0_t16", "e2m1f_e8m0_t2", "e2m1f_e8m0_t4")


@pytest.mark.parametrize("code", OTHER_PAIRS)
@pytest.mark.parametrize("transposed", [False, True])
def test_other_pair_datatypes_equal_the_reference(code, transposed, monkeypatch):
    bits = _blocks(200, 1030, seed=5)
    x = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    monkeypatch.setattr(dual_launch, "_PLANS", {})
    got = tcast.cast_dual(x.cuda(), code, engine="triton", transposed=transposed)
    assert [bool(p.kw["PAIRS"]) for p in dual_launch._PLANS.values()] == [True]
    want = dc.expected_dual(dc.to_numpy(x), code, transposed=transposed)
    problems = dc.differences(got[0], want[0], "rows") + dc.differences(got[1], want[1], "cols")
    assert not problems, f"{code} transposed={transposed}:\n" + "\n".join(problems)


@pytest.mark.parametrize("scalemode", dc.SCALE_MODES)
def test_every_scale_rule_takes_the_pair_path(scalemode, monkeypatch):
    bits = _blocks(96, 320, seed=7)
    x = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    monkeypatch.setattr(dual_launch, "_PLANS", {})
    got = tcast.cast_dual(x.cuda(), "mxfp4", engine="triton", scalemode=scalemode)
    plans = list(dual_launch._PLANS.values())
    assert [bool(p.kw["PAIRS"]) for p in plans] == [True]
    want = dc.expected_dual(dc.to_numpy(x), "mxfp4", scalemode=scalemode)
    problems = dc.differences(got[0], want[0], "rows") + dc.differences(got[1], want[1], "cols")
    assert not problems, f"{scalemode}:\n" + "\n".join(problems)


@pytest.mark.parametrize("code", PAIR_DTYPES)
@pytest.mark.parametrize("layout", ["plain", "blocked"])
def test_row_cast_by_pairs_equals_the_reference(code, layout, monkeypatch):
    bits = _blocks(384, 1024, seed=3)
    x = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    monkeypatch.setattr(launch, "_PLANS", {})
    got = tcast.cast(x.cuda(), code, engine="triton", castmode="actual", scale_layout=layout)
    plans = list(launch._PLANS.values())
    assert [p.kernel.fn.__name__ for p in plans] == ["_cast_row_pieces"]
    assert [p.kw.get("PAIRS") for p in plans] == [True]
    want = tcast_ref.cast(dc.to_numpy(x), code, castmode="actual", scale_layout=layout)
    problems = dc.differences(got, want, "rows")
    assert not problems, f"{code} {layout}:\n" + "\n".join(problems)


def test_a_view_at_an_odd_element_casts_without_pairs(monkeypatch):
    """Word loads need 4-byte alignment: the same shape, aligned then one element off."""
    bits = _blocks(64, 512, seed=11)
    flat = torch.zeros(bits.size + 1, dtype=torch.int16)
    flat[1:] = torch.from_numpy(bits.view(np.int16).reshape(-1))
    flat = flat.view(torch.bfloat16).cuda()
    odd = flat[1:].view(64, 512)
    even = odd.clone()
    monkeypatch.setattr(launch, "_PLANS", {})
    monkeypatch.setattr(dual_launch, "_PLANS", {})
    want = tcast_ref.cast(dc.to_numpy(even), "mxfp4", castmode="actual")
    want2 = dc.expected_dual(dc.to_numpy(even), "mxfp4")
    for x in (even, odd):
        got = tcast.cast(x, "mxfp4", engine="triton", castmode="actual")
        assert not dc.differences(got, want, "rows")
        got2 = tcast.cast_dual(x, "mxfp4", engine="triton")
        assert not dc.differences(got2[0], want2[0], "rows")
        assert not dc.differences(got2[1], want2[1], "cols")
    assert sorted(p.kw["PAIRS"] for p in launch._PLANS.values()) == [False, True]
    assert sorted(p.kw["PAIRS"] for p in dual_launch._PLANS.values()) == [False, True]
