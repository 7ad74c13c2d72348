"""Upcast refuses a malformed CastResult in every engine, the same way (SEMANTICS.md §8).

Results of many datatypes (ints, FP4/FP6/FP8, MX, NVFP4 and a narrow tensor scale, uint with
zero points, sparsity, a 12-bit element, narrow scale and zero-point formats) are cast by
``tcast_ref``, tampered with in NumPy, and given to ``tcast_ref.upcast`` and (moved to torch
tensors) to ``tcast_torch.upcast``: each must raise a ``TcastError`` naming the tampered part,
never decode it nor let a NumPy/torch exception escape. Untampered results, and results whose
parts hold any code of the right width, decode to the same bits in both engines.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import tcast
from tcast import CastMode, CastResult, TcastError
from tcast.kit import result_form

torch = pytest.importorskip("torch")
tcast_ref = pytest.importorskip("tcast_ref")
tcast_torch = pytest.importorskip("tcast_torch")

DTYPES = [
    "float8_e4m3fn",
    "float8_e5m2",
    "float6_e3m2fn",
    "float4_e2m1fn",
    "bfloat16",
    "mxfp8",
    "mxfp6e2",
    "mxfp4",
    "mxint8",
    "mxint4",
    "mxfp8_2d",
    "int4_ec",
    "int8_Fc",
    "nvfp4",
    "e2m1f_e4m3fn_e3m2fn_t16",  # two-level: float32 and 6-bit tensor scales
    "e2m1f_e5m0_t32",  # a 5-bit scale in uint8
    "uint4_Fic",
    "uint8_FFc",
    "uint4_e8m0_int4_t32",  # zero points: int8, float32, int4
    "int12_e8m0_t32",  # 12-bit codes: uint16 (actual), two bytes each (compress)
    "e2m1f_e8m0_t32n2m4",
    "e4m3fn_e8m0_t32n2m4",  # sparsity masks
]
MODES = [CastMode.ACTUAL, CastMode.COMPRESS]
# 111 elements: packed 4- and 6-bit streams and the packed mask end inside a byte
SHAPE = (3, 37)
CODE_PARTS = ("data", "scale", "zero", "tenscale")


@functools.cache
def _result(dtype: str, castmode: CastMode) -> CastResult:
    x = np.random.default_rng(11).normal(0, 4, SHAPE).astype(np.float32)
    return tcast_ref.cast(x, dtype, castmode=castmode)


def _to_torch(a):
    """NumPy arrays as torch tensors of the same dtype and values (other objects as they are)."""
    if not isinstance(a, np.ndarray):
        return a
    a = a.copy(order="C")  # (np.ascontiguousarray makes 0-d arrays 1-d)
    wide = {
        np.dtype(np.uint16): torch.uint16,
        np.dtype(np.uint32): torch.uint32,
        np.dtype(np.uint64): torch.uint64,
    }
    if a.dtype in wide:
        return torch.from_numpy(a.view(a.dtype.str.replace("u", "i"))).view(wide[a.dtype])
    return torch.from_numpy(a)


def _torch_result(r: CastResult) -> CastResult:
    parts = {p: _to_torch(getattr(r, p)) for p in (*CODE_PARTS, "mask")}
    return dataclasses.replace(r, **parts, engine="torch")


def _bits(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        a = a.numpy()
    return np.asarray(a, np.float32).view(np.uint32)


# ---------------------------------------------------------------- tamperings
# Each takes an untampered NumPy result and yields (changes, part): the CastResult fields to
# replace, and the part the error must name. A tampering yields nothing where it cannot apply.
Tamper = Callable[[CastResult], Iterator[tuple[dict, str]]]


def _parts(r: CastResult, names=CODE_PARTS) -> Iterator[tuple[str, np.ndarray]]:
    for p in names:
        if getattr(r, p) is not None:
            yield p, getattr(r, p)


def _forms(r: CastResult):
    return result_form(r.dtype, r.shape, r.castmode, r.transpose_scale)


def code_out_of_range(r):
    """An element code above its format's width (0xFF in a 4-bit result, bit 15 of int12)."""
    form = _forms(r)["data"]
    d = r.data.copy()
    if form.code_bits is not None:
        d.reshape(-1)[0] = (1 << form.code_bits) | 1
        yield {"data": d}, "data"
    elif form.packed is not None:  # the high byte of the first two-byte code
        d[1] = 0x80
        yield {"data": d}, "data"


def scale_code_out_of_range(r):
    """A scale, zero-point or tensor-scale code above its format's width."""
    forms = _forms(r)
    for p, a in _parts(r, ("scale", "zero", "tenscale")):
        if forms[p].code_bits is not None:
            bad = a.copy()
            bad.reshape(-1)[0] = (1 << forms[p].code_bits) | 1
            yield {p: bad}, p


def wider_dtype(r):
    """A part in a wider unsigned dtype, its values unchanged or out of range (0x1234, 0x1FF)."""
    for p, a in _parts(r, (*CODE_PARTS, "mask")):
        wider = {"u1": np.uint16, "u2": np.uint32, "u4": np.uint64, "b1": np.uint8}
        w = a.astype(wider[a.dtype.str[1:]])
        yield {p: w}, p
        w = w.copy()
        w.reshape(-1)[:1] = 0x1234 if w.itemsize > 1 else 2
        yield {p: w}, p


def signed_dtype(r):
    """Codes in a signed integer dtype of the same width."""
    for p, a in _parts(r):
        yield {p: a.view(a.dtype.str.replace("u", "i"))}, p


def float_array(r):
    """A float32 array where codes or a mask are expected (the float scale's values, say)."""
    for p, a in _parts(r, (*CODE_PARTS, "mask")):
        yield {p: a.astype(np.float32)}, p


def wrong_shape(r):
    """A part of another shape: flattened, one element short, or with a unit dimension."""
    for p, a in _parts(r, (*CODE_PARTS, "mask")):
        if a.ndim >= 2:
            yield {p: a.reshape(-1)}, p
        if a.size:
            yield {p: a.reshape(-1)[:-1]}, p
        yield {p: a[None]}, p


def extra_packed_byte(r):
    """Compress data or a packed mask with one more (zero) byte."""
    for p, a in _parts(r, ("data", "mask")):
        if r.castmode is CastMode.COMPRESS:
            yield {p: np.append(a, np.uint8(0))}, p


def missing_packed_byte(r):
    """Compress data or a packed mask one byte short."""
    for p, a in _parts(r, ("data", "mask")):
        if r.castmode is CastMode.COMPRESS and a.size:
            yield {p: a[:-1].copy()}, p


def padding_bits(r):
    """A set bit past the end of a packed stream, in its last byte."""
    forms = _forms(r)
    for p, a in _parts(r, ("data", "mask")):
        if forms[p].tail_bits:
            bad = a.copy()
            bad[-1] |= np.uint8(0x80)
            yield {p: bad}, p


def malformed_tenscale(r):
    """A tensor scale of shape (1,) or (2,), a Python int, a float or signed array."""
    if r.tenscale is None:
        return
    t = r.tenscale
    for bad in (
        t.reshape(1),
        np.repeat(t.reshape(1), 2),
        int(t),
        t.astype(np.float32),
        t.astype(np.int64),
        np.array([[int(t)]], t.dtype),
    ):
        yield {"tenscale": bad}, "tenscale"


def malformed_mask(r):
    """A keep-mask of the wrong kind, keeping every element, or keeping one more."""
    if r.mask is None:
        return
    m = r.mask
    if r.castmode is CastMode.ACTUAL:
        yield {"mask": m.astype(np.uint8)}, "mask"
        yield {"mask": np.ones_like(m)}, "mask"
        more = m.copy()
        more.reshape(-1)[np.flatnonzero(~m.reshape(-1))[0]] = True
        yield {"mask": more}, "mask"
    else:
        yield {"mask": np.unpackbits(m, bitorder="little")[: m.size * 8].astype(bool)}, "mask"
        yield {"mask": np.full_like(m, 0xFF)}, "mask"
        more = m.copy()
        more[0] = 0xFF  # keeps more than 2 of the first 4
        yield {"mask": more}, "mask"


def missing_or_extra_part(r):
    """A part the datatype needs left out, or one it has not added."""
    for p in ("scale", "zero", "tenscale", "mask"):
        if getattr(r, p) is not None:
            yield {p: None}, p
        else:
            yield {p: np.zeros(1, np.uint8)}, p
    yield {"meta": np.zeros(1, np.uint8)}, "meta"


def not_an_array(r):
    """A part as a list, or a bare integer."""
    for p, a in _parts(r, (*CODE_PARTS, "mask")):
        yield {p: a.tolist()}, p
        yield {p: 3}, p


def bad_attributes(r):
    """A shape, dtype, cast mode or transpose flag that is not one."""
    yield {"shape": (*r.shape[:-1], -r.shape[-1])}, "shape"
    yield {"shape": (3.0, 37)}, "shape"
    yield {"dtype": r.dtype.name}, "dtype"
    yield {"castmode": r.castmode.value}, "castmode"
    yield {"transpose_scale": 1}, "transpose_scale"


TAMPERINGS: dict[str, Tamper] = {
    f.__name__: f
    for f in (
        code_out_of_range,
        scale_code_out_of_range,
        wider_dtype,
        signed_dtype,
        float_array,
        wrong_shape,
        extra_packed_byte,
        missing_packed_byte,
        padding_bits,
        malformed_tenscale,
        malformed_mask,
        missing_or_extra_part,
        not_an_array,
        bad_attributes,
    )
}


# the packed-stream tamperings have nothing to act on in actual results
_COMPRESS_ONLY = {
    (k, CastMode.ACTUAL) for k in ("extra_packed_byte", "missing_packed_byte", "padding_bits")
}


def _tampered(kind: str, castmode: CastMode) -> Iterator[tuple[str, CastResult, str]]:
    for name in DTYPES:
        r = _result(name, castmode)
        for changes, part in TAMPERINGS[kind](r):
            yield name, dataclasses.replace(r, **changes), part


@pytest.mark.parametrize("castmode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("kind", list(TAMPERINGS))
def test_every_engine_refuses_a_tampered_result_naming_the_part(kind, castmode):
    applied = 0
    for name, bad, part in _tampered(kind, castmode):
        applied += 1
        for upcast, res in ((tcast_ref.upcast, bad), (tcast_torch.upcast, _torch_result(bad))):
            try:
                out = upcast(res)
            except TcastError as err:
                assert part in str(err), (name, part, str(err))
            except Exception as err:
                pytest.fail(
                    f"{upcast.__module__} raised {type(err).__name__} for {name} "
                    f"({kind} {part}): {err}"
                )
            else:
                pytest.fail(
                    f"{upcast.__module__} decoded a {name} result with {kind} {part} "
                    f"to {out.reshape(-1)[:4]}..."
                )
    if (kind, castmode) in _COMPRESS_ONLY:
        assert applied == 0
    else:
        assert applied > 0, f"{kind} applied to no {castmode.value} result"


def test_a_torch_result_with_a_numpy_part_or_a_numpy_result_with_a_tensor_part_is_refused():
    r = _result("nvfp4", CastMode.ACTUAL)
    with pytest.raises(TcastError, match="tenscale must be a torch tensor"):
        tcast_torch.upcast(dataclasses.replace(_torch_result(r), tenscale=r.tenscale))
    with pytest.raises(TcastError, match="scale must be a NumPy array"):
        tcast_ref.upcast(dataclasses.replace(r, scale=torch.from_numpy(r.scale)))


def test_a_torch_result_with_parts_on_two_devices_is_refused():
    t = _torch_result(_result("mxfp4", CastMode.ACTUAL))
    bad = dataclasses.replace(t, scale=t.scale.to("meta"))
    with pytest.raises(TcastError, match="scale is on meta"):
        tcast_torch.upcast(bad)


@pytest.mark.parametrize("castmode", MODES, ids=lambda m: m.value)
@pytest.mark.parametrize("dtype", DTYPES)
def test_untampered_results_decode_to_the_same_bits_in_both_engines(dtype, castmode):
    r = _result(dtype, castmode)
    want = _bits(tcast_ref.upcast(r))
    assert np.array_equal(_bits(tcast_torch.upcast(_torch_result(r))), want)
    x = np.random.default_rng(11).normal(0, 4, SHAPE).astype(np.float32)
    own = tcast_torch.cast(torch.from_numpy(x), dtype, castmode=castmode)
    assert np.array_equal(_bits(tcast_torch.upcast(own)), want)
    virtual = tcast_ref.cast(x, dtype)
    assert np.array_equal(want, _bits(virtual))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if tcast.datatype(d).sspec is not None])
def test_every_code_of_the_right_width_is_valid_and_decodes_alike_in_both_engines(dtype):
    # SEMANTICS §8: validity is the width only; NaN scale codes, negative or zero float
    # scales, the int code -2^(K-1) decode as §2 says, the same in every engine
    r = _result(dtype, CastMode.ACTUAL)
    rng = np.random.default_rng(5)
    forms = _forms(r)
    for _ in range(8):
        changes = {}
        for p, a in _parts(r):
            bits = forms[p].code_bits or 8 * a.dtype.itemsize
            changes[p] = rng.integers(0, 1 << bits, a.shape, dtype=np.uint64).astype(a.dtype)
        rand = dataclasses.replace(r, **changes)
        want = _bits(tcast_ref.upcast(rand))
        assert np.array_equal(_bits(tcast_torch.upcast(_torch_result(rand))), want)
