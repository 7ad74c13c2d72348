"""The oracles: the expected bits of a case on an entry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tcast import SpecError, exact

from .._api import cast as ref_cast
from .._api import upcast as ref_upcast
from ._battery import EXACT_MAX_ELEMENTS, Entry, bits_of
from ._cases import Case, given_values

__all__ = ["ExactOracle", "Expected", "RefOracle", "cast_kwargs", "oracle_for"]


@dataclass(eq=False)
class Expected:
    """The expected bits of one case on one entry (NumPy; codes as unsigned integers).

    Attributes:
        error: the TcastError subclass the cast must raise (then nothing else is set).
        virtual: the virtual result viewed as unsigned integers of the input's width.
        upcast: the float32 upcast, viewed as uint32.
        codes: one code per element (uint64, the input's shape).
        scale: scale codes in the scale shape (uint64), or None.
        zero: zero-point codes (uint64, the scale shape), or None.
        tenscale: the tensor-scale code, or None.
        mask: the keep-mask (bool, the input's shape), or None.
        packed: the compress data.
        packed_mask: the compress mask, or None.
        meta: the metadata codes (uint64, the metadata shape), or None.
        packed_meta: the compress metadata, or None.
    """

    error: type[Exception] | None = None
    virtual: np.ndarray | None = None
    upcast: np.ndarray | None = None
    codes: np.ndarray | None = None
    scale: np.ndarray | None = None
    zero: np.ndarray | None = None
    tenscale: int | None = None
    mask: np.ndarray | None = None
    packed: bytes = b""
    packed_mask: bytes | None = None
    meta: np.ndarray | None = None
    packed_meta: bytes | None = None


def cast_kwargs(case: Case, entry: Entry) -> dict[str, Any]:
    """The mode arguments of ``case`` on ``entry`` (``rbits`` aside), as ``tcast.cast`` takes.

    Given scale parts (``case.given``) are NumPy arrays (a number for the tensor scale).
    """
    return {
        "roundmode": case.roundmode,
        "scalemode": case.scalemode,
        "seed": entry.seed if case.rsource == "seed" else None,
        "stream": entry.stream if case.rsource == "seed" else 0,
        "saturate": case.saturate,
        "transpose_scale": case.transpose_scale,
        "transform": case.transform,
        **given_values(case, tuple(entry.x.shape)),
    }


class ExactOracle:
    """``tcast.exact.cast_array``: the oracle of the ``ref`` engine (small inputs only)."""

    name = "exact"
    max_elements = EXACT_MAX_ELEMENTS

    def expect(self, case: Case, entry: Entry) -> Expected:
        """Cast ``entry`` exactly under ``case``."""
        x, dt = entry.x, case.dtype
        if x.size > self.max_elements:
            raise ValueError(f"entry {entry.label} is too large for the exact oracle")
        vals = np.asarray(x, np.float32).reshape(-1).tolist()
        kw = cast_kwargs(case, entry)
        rb = entry.rbits_for(dt) if case.rsource == "rbits" else None
        rbits = None if rb is None else rb.reshape(-1).tolist()
        try:
            # float32 values first (codes and upcast), then rounded to the input dtype (§7)
            r = exact.cast_array(vals, x.shape, dt, input_dtype="float32", rbits=rbits, **kw)
        except SpecError:
            return Expected(error=SpecError)
        in_name = entry.input_dtype
        virtual = [exact.to_input_dtype(v, in_name) for v in r.values]
        if dt.sspec is None:  # §8: upcast decodes the codes (an input NaN in FP4 gives +0)
            up = [exact.decode(c, dt.nspec) for c in r.codes]
        elif case.transform is not None:  # §5.11: the virtual values, widened
            up = virtual
        else:
            up = list(r.values)
        shape = x.shape
        ss = r.scale_shape
        return Expected(
            virtual=bits_of(_to_dtype(virtual, x.dtype).reshape(shape)),
            upcast=bits_of(_to_dtype(up, np.dtype(np.float32)).reshape(shape)),
            codes=np.array(r.codes, np.uint64).reshape(shape),
            scale=None if r.scale is None else np.array(r.scale, np.uint64).reshape(ss),
            zero=None if r.zero is None else np.array(r.zero, np.uint64).reshape(ss),
            tenscale=r.tenscale,
            mask=None if r.mask is None else np.array(r.mask, bool).reshape(shape),
            packed=r.packed(),
            packed_mask=r.packed_mask(),
            meta=None if r.meta is None else np.array(r.meta, np.uint64).reshape(r.meta_shape),
            packed_meta=r.packed_meta(),
        )


def _to_dtype(values: list[float], dtype: np.dtype) -> np.ndarray:
    """Python floats already representable in ``dtype`` (NaN signs kept) as an array."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.array(values, np.float64).astype(np.float32).astype(dtype)


class RefOracle:
    """``tcast_ref``: the oracle of every engine other than ``ref``."""

    name = "tcast_ref"
    max_elements = None

    def expect(self, case: Case, entry: Entry) -> Expected:
        """Cast ``entry`` with tcast_ref under ``case``."""
        x, dt = entry.x, case.dtype
        kw = cast_kwargs(case, entry)
        kw["rbits"] = entry.rbits_for(dt) if case.rsource == "rbits" else None
        try:
            v = ref_cast(x, dt, castmode="virtual", **kw)
            a = ref_cast(x, dt, castmode="actual", **kw)
            c = ref_cast(x, dt, castmode="compress", **kw)
        except SpecError:
            return Expected(error=SpecError)

        def u64(arr):
            return None if arr is None else np.asarray(arr).astype(np.uint64)

        return Expected(
            virtual=bits_of(v),
            upcast=bits_of(np.asarray(ref_upcast(a), np.float32)),
            codes=u64(a.data),
            scale=u64(a.scale),
            zero=u64(a.zero),
            tenscale=None if a.tenscale is None else int(a.tenscale),
            mask=None if a.mask is None else np.asarray(a.mask, bool),
            packed=np.asarray(c.data, np.uint8).tobytes(),
            packed_mask=None if c.mask is None else np.asarray(c.mask, np.uint8).tobytes(),
            meta=u64(a.meta),
            packed_meta=None if c.meta is None else np.asarray(c.meta, np.uint8).tobytes(),
        )


def oracle_for(engine_name: str) -> ExactOracle | RefOracle:
    """The exact model for ``ref``, tcast_ref for every other engine."""
    return ExactOracle() if engine_name == "ref" else RefOracle()
