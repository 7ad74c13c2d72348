"""The committed golden sets' expected outputs against implementations we did not write.

``tests/golden/<name>/vectors.npz`` holds the inputs (``in``, float32 bit patterns) and the
expected outputs (``scale``, ``tenscale``, ``out``, ``flags``) that tcast_ref produced. Checking
them with tcast_ref again would only show our code agreeing with itself; here every expected
output is recomputed by a peer wherever the peer follows the same rule:

* unscaled float8 (e4m3fn, e5m2, e4m3fnuz = bias 8, e5m2fnuz = bias 16): ml_dtypes ``astype``
  (round to nearest even) for the codes, ml_dtypes' decode of the expected codes for the flags;
* MXFP8 (e4m3, e5m2), MXFP6 (e2m3, e3m2), MXFP4: torchao ``to_mx`` with
  ``ScaleCalculationMode.FLOOR`` (= our default scale mode ``floor``), one line = one 32-element
  block along the last dimension;
* MXINT8: gfloat's block functions (``compute_scale_amax`` / ``encode_block``) with
  ``format_info_mxint8``, on float64 copies of the blocks;
* NVFP4: torchao ``nvfp4_quantize`` with ``per_tensor_amax_to_scale``, 8 consecutive lines
  (the header's ``lines_per_tensor``) forming one tensor.

Where a peer differs from a documented choice (SEMANTICS.md §11), the cases are selected by a
named rule, the difference itself is asserted, and the rule must select exactly the cases that
differ; nothing is dropped silently.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch
from gfloat import block as gblock
from gfloat import formats as gformats
from torchao.prototype.mx_formats import config as mx_config
from torchao.prototype.mx_formats import constants as mx_constants
from torchao.prototype.mx_formats import mx_tensor, nvfp4_tensor

GOLDEN = Path(__file__).parent / "golden"

# flag bits (header.json "flags"; their definitions are restated where a test uses them)
INEXACT = 0x01
UNDERFLOW = 0x02
OVERFLOW = 0x04
INVALID = 0x08
INFINITE = 0x10
NANBLOCK = 0x20

# unscaled set -> ml_dtypes type
FLOAT8 = {
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,  # bias 8
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,  # bias 16
}
# The canonical NaN code of each format (SEMANTICS.md §4.2, §1.1), without the sign: fn style
# = all-ones magnitude; IEEE style = exponent all ones plus the top mantissa bit (quiet NaN);
# fnuz = the -0 code 0x80, the only NaN, which carries no sign.
CANONICAL_NAN = {
    "float8_e4m3fn": (0x7F, True),
    "float8_e5m2": (0x7E, True),
    "float8_e4m3fnuz": (0x80, False),
    "float8_e5m2fnuz": (0x80, False),
}

BLOCK = 32
SCM = mx_config.ScaleCalculationMode
# MX set -> torchao element dtype
TORCHAO_MX = {
    "mxfp8": torch.float8_e4m3fn,
    "mxfp8e5": torch.float8_e5m2,
    "mxfp6e2": mx_constants.DTYPE_FP6_E2M3,
    "mxfp6e3": mx_constants.DTYPE_FP6_E3M2,
    "mxfp4": torch.float4_e2m1fn_x2,
}
# MX set -> ml_dtypes element type (for decoding the expected codes)
MX_ELEM = {
    "mxfp8": ml_dtypes.float8_e4m3fn,
    "mxfp8e5": ml_dtypes.float8_e5m2,
    "mxfp6e2": ml_dtypes.float6_e2m3fn,
    "mxfp6e3": ml_dtypes.float6_e3m2fn,
    "mxfp4": ml_dtypes.float4_e2m1fn,
}
F32_NAN = 0x7FC00000


# ------------------------------------------------------------------ loading
@cache
def load(name: str) -> dict:
    """A golden set: its arrays (lower-case names, shape (lines, count)) and its header."""
    d = GOLDEN / name
    with np.load(d / "vectors.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["header"] = json.loads((d / "header.json").read_text())
    arrays["x"] = np.ascontiguousarray(arrays["in"]).view(np.float32)
    assert arrays["x"].shape[0] == arrays["header"]["counts"]["lines"]
    return arrays


def _line(name: str, i: int) -> str:
    g = load(name)
    parts = [f"{name} line {i}: in " + " ".join(f"{int(b):08X}" for b in g["in"][i])]
    for k in ("tenscale", "scale", "out", "flags"):
        if k in g:
            parts.append(f"{k} " + " ".join(f"{int(b):X}" for b in g[k][i]))
    return "; ".join(parts)


def _nonfinite_lines(x: np.ndarray) -> np.ndarray:
    """Rule 'non-finite block' (SEMANTICS.md §5.2): the line holds a NaN or an Inf input."""
    return ~np.isfinite(x).all(axis=1)


def _expected_nonfinite_lines(header: dict) -> int:
    """Lines with a NaN/Inf input the header announces: one 'nan' and one 'inf' tile per
    scale position (header.json cases.inputs); the other patterns and tiles are finite."""
    inputs = header["cases"]["inputs"]
    assert {"nan", "inf"} <= set(inputs["patterns"])
    return 2 * len(inputs["scale_positions_k"])


# ------------------------------------------------------------------ unscaled float8
def _ml(name: str):
    """(input x, our codes, ml_dtypes codes, ml_dtypes decode of ml_dtypes codes)."""
    g = load(name)
    dt = FLOAT8[name]
    x = g["x"][:, 0]
    with np.errstate(over="ignore", invalid="ignore"):
        ml = x.astype(dt).view(np.uint8)
        ml_val = ml.view(dt).astype(np.float32)
    return x, g["out"][:, 0], ml, ml_val


def _ties(x: np.ndarray, dt) -> np.ndarray:
    """Which x lie exactly halfway between two neighbouring finite values of ``dt``."""
    with np.errstate(invalid="ignore"):
        v = np.arange(256, dtype=np.uint8).view(dt).astype(np.float64)
    v = np.unique(np.abs(v[np.isfinite(v)]))
    mids = (v[:-1] + v[1:]) / 2
    return np.isin(np.abs(x.astype(np.float64)), mids)


def _maxcode(dt) -> int:
    return int(np.array([ml_dtypes.finfo(dt).max], dt).view(np.uint8)[0])


@pytest.mark.parametrize("name", list(FLOAT8))
def test_float8_codes_equal_ml_dtypes_where_finite(name):
    """Finite inputs that ml_dtypes casts to a finite value: our code bits equal ml_dtypes'.

    ml_dtypes rounds to nearest even like our ``even`` round mode (SEMANTICS.md §3.2); the
    remaining inputs (NaN, Inf, finite values ml_dtypes overflows) have their own tests below.
    """
    x, ours, ml, ml_val = _ml(name)
    cmp = np.isfinite(x) & np.isfinite(ml_val)
    bad = np.flatnonzero(cmp & (ours != ml))
    assert bad.size == 0, (
        f"{bad.size} codes differ; first: {_line(name, bad[0])} ml_dtypes {ml[bad[0]]:02X}"
    )
    # the comparison covers nearly all of the set, with both signs, subnormal codes and
    # exact ties between neighbouring values (where rounding to even decides)
    assert cmp.sum() >= 0.8 * x.size
    assert (ml[cmp] & 0x80).any() and (~ml[cmp] & 0x80).any()
    mbits = ml_dtypes.finfo(FLOAT8[name]).nmant
    assert (((ml[cmp] & 0x7F) >> mbits == 0) & (ml[cmp] & ((1 << mbits) - 1) != 0)).sum() >= 8
    assert _ties(x[cmp], FLOAT8[name]).sum() >= 100


@pytest.mark.parametrize("name", list(FLOAT8))
def test_float8_nan_inputs_give_the_canonical_nan_code_like_ml_dtypes(name):
    """NaN inputs: both give a NaN code, bit for bit the canonical one.

    SEMANTICS.md §4.2: the format's NaN code, sign kept for IEEE and fn styles, canonical
    payload (no payload propagation). So e4m3fn gives 0x7F / 0xFF (all-ones magnitude), e5m2
    0x7E / 0xFE (exponent all ones, top mantissa bit), fnuz 0x80 (the only NaN, no sign).
    ml_dtypes canonicalizes the same way, so the codes compare exactly, not only as
    "both NaN"; the set's NaN inputs include signalling and payload-carrying NaNs of both
    signs.
    """
    x, ours, ml, _ = _ml(name)
    nan = np.isnan(x)
    assert nan.sum() >= 4
    neg = (x.view(np.uint32) >> 31).astype(bool)
    assert neg[nan].any() and (~neg[nan]).any()
    code, signed = CANONICAL_NAN[name]
    want = np.where(neg & signed, code | 0x80, code)[nan]
    assert ours[nan].tolist() == want.tolist()
    assert ml[nan].tolist() == want.tolist()
    # and the code is a NaN for ml_dtypes' decoder
    assert np.isnan(ours[nan].view(FLOAT8[name]).astype(np.float32)).all()


@pytest.mark.parametrize("name", list(FLOAT8))
def test_float8_finite_overflow_saturates_where_ml_dtypes_gives_inf_or_nan(name):
    """Finite inputs that ml_dtypes overflows to Inf/NaN: ours is +-max with the overflow flag.

    ml_dtypes does not saturate; the golden sets use tcast's default ``saturate=True``
    (SEMANTICS.md §4.1: an overflowing result gives +-maxfloat). Each such case must be the
    largest finite code with the input's sign and carry flag 0x04 (overflow).
    """
    x, ours, ml, ml_val = _ml(name)
    flags = load(name)["flags"][:, 0]
    sel = np.isfinite(x) & ~np.isfinite(ml_val)
    assert sel.sum() >= 10
    mx = _maxcode(FLOAT8[name])
    want = np.where(np.signbit(x), mx | 0x80, mx)
    bad = np.flatnonzero(sel & (ours != want))
    assert bad.size == 0, _line(name, bad[0])
    assert (flags[sel] & OVERFLOW).all()
    # ml_dtypes' result there is Inf (e5m2) or a NaN code (fn, fnuz): never +-max
    assert not np.isin(ml[sel], [mx, mx | 0x80]).any()


@pytest.mark.parametrize("name", list(FLOAT8))
def test_float8_inf_inputs_saturate_to_max(name):
    """+-Inf inputs give +-max (SEMANTICS.md §4.1, saturate), flagged infinite (0x10) only.

    ml_dtypes gives Inf (e5m2) or its NaN code (the others) instead.
    """
    x, ours, _, ml_val = _ml(name)
    flags = load(name)["flags"][:, 0]
    inf = np.isinf(x)
    assert np.signbit(x[inf]).any() and (~np.signbit(x[inf])).any()
    mx = _maxcode(FLOAT8[name])
    assert ours[inf].tolist() == np.where(np.signbit(x[inf]), mx | 0x80, mx).tolist()
    assert (flags[inf] == INFINITE).all()
    assert not np.isfinite(ml_val[inf]).any()


@pytest.mark.parametrize("name", list(FLOAT8))
def test_float8_flags_match_ml_dtypes_decode_of_the_codes(name):
    """Every flag byte follows from the input and ml_dtypes' decode d of the expected code.

    The definitions (header.json "flags"), computed here without tcast code:
    inexact (0x01): x finite and d != x (numerically: fnuz's +0 for -0 is exact);
    underflow (0x02): inexact, x != 0 and the code's exponent field is 0;
    overflow (0x04): x finite and (d not finite, or |code| is the largest finite code and
    |x| > |d|); invalid (0x08): x is NaN; infinite (0x10): x is +-Inf; no block or sparsity
    flags in an unscaled cast.
    """
    g = load(name)
    dt = FLOAT8[name]
    out, flags = g["out"][:, 0], g["flags"][:, 0]
    with np.errstate(invalid="ignore"):  # signalling NaN inputs, NaN codes
        x = g["x"][:, 0].astype(np.float64)
        d = out.view(dt).astype(np.float64)
    fin = np.isfinite(x)
    mbits = ml_dtypes.finfo(dt).nmant
    expfield = (out & 0x7F) >> mbits
    with np.errstate(invalid="ignore"):
        inexact = fin & (d != x)
        over = fin & (~np.isfinite(d) | (((out & 0x7F) == _maxcode(dt)) & (np.abs(x) > np.abs(d))))
    want = (
        inexact * INEXACT
        | (inexact & (x != 0) & (expfield == 0)) * UNDERFLOW
        | over * OVERFLOW
        | np.isnan(x) * INVALID
        | np.isinf(x) * INFINITE
    ).astype(np.uint8)
    bad = np.flatnonzero(flags != want)
    assert bad.size == 0, (
        f"{bad.size} flag bytes differ; first {_line(name, bad[0])}, want {want[bad[0]]:02X}"
    )
    # inexact and exact, overflow and underflow cases all occur
    for bit in (INEXACT, UNDERFLOW, OVERFLOW):
        assert (flags & bit).any()
    assert (fin & ~inexact).sum() >= 100


# ------------------------------------------------------------------ MX: torchao
def torchao_mx(x: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """torchao to_mx FLOOR on (lines, 32): e8m0 scale codes (lines,), element codes (lines, 32).

    FP8 comes back as one code per byte, FP6 unpacked (one 6-bit code per byte), FP4 packed
    two per byte, element 2i in the low nibble of byte i (torch float4_e2m1fn_x2).
    """
    scale, data = mx_tensor.to_mx(
        torch.from_numpy(np.ascontiguousarray(x)), TORCHAO_MX[name], BLOCK, scaling_mode=SCM.FLOOR
    )
    s = scale.view(torch.uint8).numpy().astype(np.int64).reshape(x.shape[0])
    d = data.view(torch.uint8).numpy().astype(np.int64)
    if name == "mxfp4":
        d = np.stack([d & 0xF, d >> 4], axis=-1)
    return s, d.reshape(x.shape)


@pytest.mark.parametrize("name", list(TORCHAO_MX))
def test_mx_scale_and_element_codes_equal_torchao_floor(name):
    """MXFP8/6/4: e8m0 scale codes and element codes equal torchao's to_mx (FLOOR).

    Two documented differences (SEMANTICS.md §11), each handled by a named rule:

    * rule 'non-finite block' (§5.2; §11 'torchao MX, non-finite blocks'): a line with a NaN
      or an Inf input gets scale 0xFF and codes 0 from us; torchao keeps a NaN element code
      (NaN) or computes a finite scale from Inf arithmetic (Inf). These lines are excluded;
      the excluded lines must be exactly the lines with a non-finite input, every one of them
      must differ from torchao, and they must be few.
    * rule 'scale code 0' (§5.3 steps 3-4; §11 'torchao MX, scale code 0'): e8m0 code 0 is
      2^-127 and we encode x * 2^127; torchao's FLOOR clamps the divisor to 2^-126. The scale
      code is compared as usual (both 0); the element codes are compared with torchao run on
      2x (exact in float32 at these magnitudes): its scale code is then 0 or 1, its divisor
      2^-126, so it encodes 2x / 2^-126 = x * 2^127, our rule. On x itself torchao differs on
      these lines, and on no other finite line.
    """
    g = load(name)
    x = g["x"]
    s_ours = g["scale"][:, 0].astype(np.int64)
    c_ours = g["out"].astype(np.int64)
    lines = x.shape[0]
    s_ao, c_ao = torchao_mx(x, name)
    nonfinite = _nonfinite_lines(x)
    code0 = ~nonfinite & (s_ours == 0)
    plain = ~nonfinite & ~code0

    # the plain lines: equal, bit for bit
    differ = (s_ours != s_ao) | (c_ours != c_ao).any(axis=1)
    bad = np.flatnonzero(plain & differ)
    assert bad.size == 0, (
        f"{bad.size} lines differ; first {_line(name, bad[0])}; torchao scale "
        f"{s_ao[bad[0]]:02X} codes {[f'{v:X}' for v in c_ao[bad[0]]]}"
    )

    # rule 'scale code 0': torchao's scale is 0 too; its codes for 2x equal ours
    assert (s_ao[code0] == 0).all()
    with np.errstate(over="raise"):
        x2 = x[code0] * np.float32(2)
    assert np.array_equal(x2 / np.float32(2), x[code0])  # doubling was exact
    _, c_ao2 = torchao_mx(x2, name)
    bad = np.flatnonzero((c_ao2 != c_ours[code0]).any(axis=1))
    assert bad.size == 0, _line(name, np.flatnonzero(code0)[bad[0]])
    # ... and on x itself the rule names exactly the finite lines that differ
    assert np.array_equal(differ & ~nonfinite, code0 & differ)
    assert (differ & code0).sum() >= 0.5 * code0.sum()

    # rule 'non-finite block': exactly the lines with a NaN/Inf input, all differing, few
    assert nonfinite.sum() == _expected_nonfinite_lines(g["header"])
    assert (s_ours[nonfinite] == 0xFF).all() and (c_ours[nonfinite] == 0).all()
    assert differ[nonfinite].all()
    nan_lines = np.isnan(x).any(axis=1)
    assert (s_ao[nan_lines] == 0xFF).all()  # NaN: the scale agrees, the NaN element does not
    assert (s_ao[nonfinite & ~nan_lines] != 0xFF).all()  # Inf: a finite scale
    assert 0 < nonfinite.sum() <= 0.1 * lines
    assert plain.sum() >= 0.5 * lines
    print(
        f"\n{name}: {lines} lines: {plain.sum()} equal as-is, {code0.sum()} scale-code-0 "
        f"lines equal via 2x ({(differ & code0).sum()} differ as-is), "
        f"{nonfinite.sum()} non-finite excluded"
    )


# ------------------------------------------------------------------ MXINT8: gfloat
def gfloat_mxint8(block: np.ndarray) -> tuple[int, list[int]]:
    """gfloat floor rule on a float64 copy of one block: (scale code, element codes)."""
    fi = gformats.format_info_mxint8
    v = block.astype(np.float64)  # float64: gfloat's np.log2 is exact enough (§11)
    q = gblock.compute_scale_amax(fi.etype.emax, v)
    enc = list(gblock.encode_block(fi, q, v / q))
    return enc[0], enc[1:]


def test_mxint8_scale_and_element_codes_equal_gfloat():
    """MXINT8: e8m0 scale codes and int8 codes equal gfloat's block encoder.

    Named differences (SEMANTICS.md §11):

    * rule 'gfloat -128' (§5.4; §11 'gfloat MXINT8'): where gfloat encodes -128 (0x80, value
      -2 X) we clamp to -127 (0x81): the expected code is 0x81 at exactly those positions;
    * rule 'non-finite block' (§5.2): lines with a NaN/Inf input are excluded; gfloat raises
      for a NaN (int8 has no NaN) and gives scale 0xFE (log2 clipped to 127) for an Inf, where
      we give 0xFF and codes 0.

    Scale code 0 needs no rule: gfloat's smallest scale is 2^-127 like ours.
    """
    name = "mxint8"
    g = load(name)
    x = g["x"]
    s_ours = g["scale"][:, 0]
    c_ours = g["out"]
    nonfinite = _nonfinite_lines(x)
    compared = minus128 = 0
    for i in np.flatnonzero(~nonfinite):
        s, c = gfloat_mxint8(x[i])
        c = np.array(c)
        m = c == 0x80
        minus128 += int(m.sum())
        want = np.where(m, 0x81, c)
        assert s == s_ours[i] and np.array_equal(want, c_ours[i]), (
            f"{_line(name, i)}; gfloat scale {s:02X} codes {[f'{v:X}' for v in c]}"
        )
        compared += 1
    for i in np.flatnonzero(nonfinite):
        assert s_ours[i] == 0xFF and (c_ours[i] == 0).all()
        if np.isnan(x[i]).any():
            with pytest.raises(ValueError, match="No NaN"):
                gfloat_mxint8(x[i])
        else:
            assert gfloat_mxint8(x[i])[0] == 0xFE
    assert nonfinite.sum() == _expected_nonfinite_lines(g["header"])
    assert 0 < nonfinite.sum() <= 0.15 * x.shape[0] and compared == x.shape[0] - nonfinite.sum()
    assert minus128 > 0  # the -128 rule was exercised
    assert (s_ours[~nonfinite] == 0).sum() > 0  # and scale code 0 compared plainly
    print(
        f"\nmxint8: {compared} lines equal ({minus128} gfloat -128 codes -> 0x81), "
        f"{nonfinite.sum()} non-finite excluded"
    )


# ------------------------------------------------------------------ NVFP4: torchao
def torchao_nvfp4(x: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """(tensor scale bits, e4m3 tile-scale codes (lines,), e2m1 codes (lines, 16))."""
    tamax = np.float32(np.abs(x).max())
    pts = nvfp4_tensor.per_tensor_amax_to_scale(torch.tensor(tamax, dtype=torch.float32))
    scale, data = nvfp4_tensor.nvfp4_quantize(torch.from_numpy(np.ascontiguousarray(x)), 16, pts)
    s = scale.view(torch.uint8).numpy().astype(np.int64).reshape(x.shape[0])
    d = data.numpy().astype(np.int64)
    t = int(np.float32(pts.item()).view(np.uint32))
    return t, s, np.stack([d & 0xF, d >> 4], axis=-1).reshape(x.shape)


def nvfp4_clamped(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SEMANTICS.md §5.6 with t = 2^-126 (the clamp), in NumPy float32 and ml_dtypes RNE.

    Returns (e4m3fn tile-scale codes (lines,), e2m1 codes (lines, 16)). Only for tensors whose
    amax is below 2688 * 2^-126, where the tensor scale clamps to float32's smallest normal.
    """
    t = np.float32(2.0**-126)
    amax = np.abs(x).max(axis=1)
    q = (amax / np.float32(6)) / t  # fl32(fl32(amax / M) / t)
    q = np.clip(q, np.float32(2.0**-6), np.float32(448))  # e4m3fn smallest normal .. max
    s8 = q.astype(ml_dtypes.float8_e4m3fn)
    s = s8.astype(np.float32)
    with np.errstate(over="ignore"):
        r = np.minimum((np.float32(1) / t) / s, np.finfo(np.float32).max)  # kept finite
    y = np.clip(x * r[:, None], np.float32(-6), np.float32(6))
    return (
        s8.view(np.uint8).astype(np.int64),
        y.astype(ml_dtypes.float4_e2m1fn).view(np.uint8).astype(np.int64),
    )


def test_nvfp4_tensor_tile_and_element_codes_equal_torchao():
    """NVFP4: tensor scale, e4m3fn tile-scale codes and e2m1 codes equal torchao's.

    Each tensor is ``lines_per_tensor`` (8) consecutive lines (the last one may be shorter),
    its tensor amax the amax of those lines; SEMANTICS.md §5.6 is defined as torchao's
    ``nvfp4_quantize`` with ``per_tensor_amax_to_scale``. Named rules (§11):

    * 'non-finite tensor' (§5.2, §5.6 step 1): a tensor with a NaN/Inf input has tensor scale
      NaN (0x7FC00000), every tile scale 0x7F and codes 0; torchao computes from NaN/Inf
      arithmetic. Excluded; the non-finite lines must be the last lines of the set (the
      generator puts them there), the excluded tensors exactly those holding them, and few.
    * 'tiny tensor amax' (§5.5 clamp rule; §11 'torchao NVFP4, tensor amax < 2688 * 2^-126'
      and 'all-zero tensor'): we clamp the tensor scale to 2^-126 (0x00800000), torchao keeps
      the subnormal (or zero) quotient. For these tensors torchao's tensor scale must be below
      0x00800000, and our codes are checked against §5.6 evaluated with t = 2^-126 in NumPy
      float32 and ml_dtypes (``nvfp4_clamped``) instead of torchao.
    """
    name = "nvfp4"
    g = load(name)
    per = g["header"]["cases"]["geometry"]["lines_per_tensor"]
    assert per == 8
    x = g["x"]
    lines = x.shape[0]
    t_ours = g["tenscale"][:, 0]
    s_ours = g["scale"][:, 0].astype(np.int64)
    c_ours = g["out"].astype(np.int64)
    compared, nonfinite, tiny = [], [], []
    # the whole tiles in tensors of 8 lines, then each extent's 8 partial tiles (one tensor)
    whole = g["header"]["cases"]["inputs"]["partial_tiles"]["first_line"] - 1
    ends = {
        **{lo: min(lo + per, whole) for lo in range(0, whole, per)},
        **{lo: min(lo + per, lines) for lo in range(whole, lines, per)},
    }
    for lo, hi in ends.items():
        sl = slice(lo, hi)
        xt = x[sl]
        assert (t_ours[sl] == t_ours[lo]).all()  # one tensor scale per tensor
        if not np.isfinite(xt).all():  # rule 'non-finite tensor'
            nonfinite.append(lo)
            assert (t_ours[sl] == F32_NAN).all()
            assert (s_ours[sl] == 0x7F).all() and (c_ours[sl] == 0).all()
            continue
        t, s, c = torchao_nvfp4(xt)
        if np.abs(xt).max() < np.float32(2688 * 2.0**-126):  # rule 'tiny tensor amax'
            tiny.append(lo)
            assert t < 0x00800000 and t_ours[lo] == 0x00800000
            s, c = nvfp4_clamped(xt)
        else:
            assert t == t_ours[lo], f"tensor at line {lo}: {t:08X} vs ours {t_ours[lo]:08X}"
            compared.append(lo)
        bad = np.flatnonzero((s != s_ours[sl]) | (c != c_ours[sl]).any(axis=1))
        assert bad.size == 0, (
            f"{_line(name, lo + bad[0])}; torchao scale {s[bad[0]]:02X} "
            f"codes {[f'{v:X}' for v in c[bad[0]]]}"
        )
    nf_lines = np.flatnonzero(_nonfinite_lines(x))
    assert nf_lines.size == _expected_nonfinite_lines(g["header"])
    first_nf = nf_lines.min() // per * per
    assert nf_lines.tolist() == list(range(nf_lines.min(), whole))
    assert nonfinite == list(range(first_nf, whole, per))
    assert (whole - first_nf) <= 0.15 * lines
    assert len(tiny) <= 3 and len(compared) * per >= 0.75 * lines
    print(
        f"\nnvfp4: {len(compared)} tensors ({len(compared) * per} lines) equal torchao, "
        f"{len(tiny)} tiny-amax tensors ({len(tiny) * per} lines) equal the clamped rule, "
        f"{len(nonfinite)} non-finite tensors ({whole - first_nf} lines) excluded"
    )


# ------------------------------------------------------------------ MX flags via ml_dtypes
@pytest.mark.parametrize("name", list(MX_ELEM))
def test_mx_inexact_flags_match_ml_dtypes_decode(name):
    """MXFP8/6/4 inexact flags (0x01) follow from ml_dtypes' decode of the expected codes.

    value d = fl32(dec(code) * 2^(scale - 127)) (SEMANTICS.md §5.3 step 4; the float64
    product is exact, so one rounding to float32 is fl32); inexact iff the block is finite and
    d != x. Non-finite blocks carry nanblock (0x20) on every element and never inexact.
    """
    g = load(name)
    x = g["x"]
    dt = MX_ELEM[name]
    scale = g["scale"][:, 0].astype(np.int64)
    flags = g["flags"]
    dec = g["out"].view(dt).astype(np.float64)
    with np.errstate(over="ignore"):
        d = (dec * np.exp2(scale - 127.0)[:, None]).astype(np.float32)
    nonfinite = _nonfinite_lines(x)
    with np.errstate(invalid="ignore"):
        want = ~nonfinite[:, None] & (d != x)
    bad = np.argwhere(((flags & INEXACT) != 0) != want)
    assert bad.size == 0, f"{_line(name, bad[0][0])} element {bad[0][1]}"
    assert ((flags[nonfinite] & NANBLOCK) != 0).all()
    assert ((flags[~nonfinite] & NANBLOCK) == 0).all()
    assert want.any() and (~want[~nonfinite]).any()
