"""The committed golden sets against the exact model (``tcast.exact``), not only the reference.

Every line of every committed set (no sampling: about 6 s on one core) is recast with
``tcast.exact.cast_array`` (pure Python, fractions) from its IN words, and its expected
outputs must be the exact model's bit for bit: OUT codes, SCALE, TENSCALE and META (one word
per subtile: exponent offsets, codebook mappings). The sets with subtile metadata are checked
on every eighth tensor (and every partial tile) by default, about 2 s, and on every line under
``-m full``. The arrays are
rebuilt from the header's documented geometry only (tcast_ref is not used): an unscaled set is
one vector; each line of a 1-D tile set is one block along the last dimension, cast as an
array of its LEN elements (partial tiles included); under a tensor scale over tile scales
(NVFP4), ``lines_per_tensor`` consecutive lines of one extent are rows of one tensor. The
absent elements of partial tiles must be OUT 0 with FLAGS ``absent`` (0x80) and nothing else.
Sets with a transform (no partial tiles) are recast with ``transform=`` and their T words
must be ``tcast.exact.hadamard_array`` of the IN words.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tcast import Hadamard, datatype, exact

GOLDEN = Path(__file__).resolve().parent / "golden"
SETS = sorted(p.name for p in GOLDEN.iterdir() if (p / "header.json").is_file())
ABSENT = 0x80


def _load(name: str) -> tuple[dict, dict[str, np.ndarray]]:
    d = GOLDEN / name
    header = json.loads((d / "header.json").read_text())
    with np.load(d / "vectors.npz") as z:
        cols = {k.upper(): z[k] for k in z.files}
    return header, cols


def _tensors(lens: np.ndarray, per: int | None) -> list[tuple[int, int]]:
    """[lo, hi) of the lines cast together: runs of one extent, at most ``per`` lines."""
    out, lo = [], 0
    n = len(lens)
    while lo < n:
        hi = lo + 1
        while hi < n and lens[hi] == lens[lo] and (per is None or hi - lo < per):
            hi += 1
        out.append((lo, hi))
        lo = hi
    return out


def test_every_core_set_is_committed():
    assert len(SETS) == 20
    assert {s for s in SETS if "META" in _load(s)[1]} == set(META_SETS)


#: The committed sets with subtile metadata (MSFP offsets, codebook mappings).
META_SETS = ("mx4", "mx6", "mx9", "mxfi4", "mxfp4e", "mxfp4f4", "mxfp4m")


@pytest.mark.parametrize("name", [s for s in SETS if s not in META_SETS])
def test_committed_set_equals_the_exact_model(name):
    _check_set(name, every=1)


@pytest.mark.parametrize("name", META_SETS)
def test_committed_set_with_metadata_equals_the_exact_model_sampled(name):
    _check_set(name, every=8)


@pytest.mark.full
@pytest.mark.parametrize("name", META_SETS)
def test_committed_set_with_metadata_equals_the_exact_model(name):
    _check_set(name, every=1)


def _check_set(name: str, every: int) -> None:
    """Recast the set's tensors (every ``every``-th whole-tile tensor, every partial one)."""
    header, cols = _load(name)
    assert header["input_dtype"] == "float32" and header["operation"] == "cast"
    dt = datatype(header["datatype"]["code"])
    m = header["modes"]
    assert m["castmode"] == "actual"
    kw = {"roundmode": m["roundmode"], "scalemode": m["scalemode"], "saturate": m["saturate"]}
    h = None
    if "transform" in header:
        t = header["transform"]
        h = Hadamard.of(t["size"], [1 if c == "+" else -1 for c in t["signs"]])
        kw["transform"] = h
    x = np.ascontiguousarray(cols["IN"]).view(np.float32)
    geo = header["cases"]["geometry"]
    if dt.sspec is None:
        r = exact.cast_array(x.reshape(-1).tolist(), (x.size,), dt, **kw)
        assert list(r.codes) == cols["OUT"].reshape(-1).tolist()
        return
    # every committed tile set: one 1-D tile along the last dimension per line
    assert geo["kind"] == "tile1d" and geo["tile_dims"] == [1] and geo["count_dim"] == 0
    if h is not None:  # whole tiles only: the transform needs whole groups
        assert "LEN" not in cols
        lens = np.full(len(x), geo["elements_per_line"])
    else:
        lens = cols["LEN"][:, 0].astype(int)
    assert lens.min() >= 1 and lens.max() == geo["elements_per_line"]
    per = geo["lines_per_tensor"] if dt.is_multiscale else 1
    checked = 0
    for i, (lo, hi) in enumerate(_tensors(lens, per)):
        n = lens[lo]
        if i % every and n == geo["elements_per_line"]:
            continue
        rows = x[lo:hi, :n]
        r = exact.cast_array(rows.reshape(-1).tolist(), rows.shape, dt, **kw)
        codes = np.array(r.codes, np.int64).reshape(rows.shape)
        bad = np.argwhere(codes != cols["OUT"][lo:hi, :n])
        assert bad.size == 0, f"{name} case {lo + bad[0][0] + 1} OUT[{bad[0][1]}]"
        assert list(r.scale) == cols["SCALE"][lo:hi, 0].tolist(), f"{name} cases {lo + 1}-{hi}"
        if h is not None:  # T: the float32 transform of IN, bit for bit (NaN: any NaN)
            t = exact.hadamard_array(rows.reshape(-1).tolist(), rows.shape, -1, h)
            want = np.array(t, np.float32).reshape(rows.shape)
            got = np.ascontiguousarray(cols["T"][lo:hi, :n]).view(np.float32)
            same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
            assert same.all(), f"{name} case {lo + 1} T"
        if dt.is_multiscale:
            assert (cols["TENSCALE"][lo:hi, 0] == r.tenscale).all(), f"{name} case {lo + 1}"
        if "META" in cols:  # one word per subtile of the line, 1-D subtiles of length S
            sub = header["datatype"]["meta"]["subtile_sizes"][0]
            live = -(-n // sub)
            meta = np.array(r.meta, np.int64).reshape(hi - lo, live)
            assert (meta == cols["META"][lo:hi, :live]).all(), f"{name} case {lo + 1} META"
            assert not cols["META"][lo:hi, live:].any(), f"{name} case {lo + 1}: absent META"
        checked += hi - lo
    assert checked == len(lens) or every > 1
    assert every == 1 or checked > len(lens) // (2 * every)
    absent = np.arange(x.shape[1])[None, :] >= lens[:, None]
    assert absent.any() == (h is None), "partial tiles: every set but those with a transform"
    assert (cols["OUT"][absent] == 0).all() and (cols["IN"][absent] == 0).all()
    assert (cols["FLAGS"][absent] == ABSENT).all()
    assert not (cols["FLAGS"][~absent] & ABSENT).any()
