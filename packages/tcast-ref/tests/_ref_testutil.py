"""Helpers of the tcast_ref-vs-exact tests: the exact model over a small process pool, raw bits.

Not a test module (no ``test_`` prefix). The test modules put this directory on
``sys.path`` and import it by name, so that the pool's worker processes (started
with ``spawn``: no inherited state, no fork-with-threads hazards) import the
same module and find :func:`encode_chunk` in it.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from functools import cache
from typing import Any

import ml_dtypes
import numpy as np

from tcast import exact, number, round_mode

#: Input dtypes by name, with the unsigned view used to compare raw bits.
NP_DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32}

#: Largest number of worker processes (the suite is budgeted for two cores).
MAX_WORKERS = 2


def raw(a: Any) -> np.ndarray:
    """The raw bits of an array (or of a list of floats, taken as float32), flattened."""
    a = np.asarray(a)
    if a.dtype not in NP_DTYPES.values():
        a = a.astype(np.float32)
    return np.ascontiguousarray(a).reshape(-1).view(_UINT[a.dtype.itemsize])


def floats_to_bits(values: Iterable[float], dtype: str) -> np.ndarray:
    """Raw bits of Python floats that are values of ``dtype`` (exact: no rounding happens).

    NaN becomes the canonical quiet NaN with its sign, as SEMANTICS.md §7 asks.
    """
    v = np.array(list(values), dtype=np.float64).astype(np.float32)
    return raw(v.astype(NP_DTYPES[dtype]))


@cache
def decode_table(code: str) -> tuple[float, ...]:
    """exact.decode of every code of a format of at most 16 bits, by code."""
    n = number(code)
    return tuple(exact.decode(c, n) for c in range(1 << n.bits))


def encode_chunk(task: tuple) -> list[int]:
    """exact.encode over a chunk: (format code, mode, saturate, float32 bytes, rbits or None).

    ``rbits`` is None (deterministic modes), one int for every value, or a list
    with one int per value.
    """
    code, mode, saturate, data, rbits = task
    n, m = number(code), round_mode(mode)
    vals = np.frombuffer(data, dtype=np.float32).tolist()
    if rbits is None or isinstance(rbits, int):
        return [exact.encode(v, n, m, rbits, saturate) for v in vals]
    return [exact.encode(v, n, m, r, saturate) for v, r in zip(vals, rbits, strict=True)]


class _Inline(Executor):
    def map(self, fn: Callable, *iterables: Iterable, **_: Any):  # type: ignore[override]
        return map(fn, *iterables)


def make_pool() -> Executor:
    """A spawn-based pool of at most two workers (inline when only one core is available)."""
    workers = min(MAX_WORKERS, os.cpu_count() or 1)
    if workers < 2:
        return _Inline()
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def encode_many(
    pool: Executor,
    code: str,
    mode: str,
    saturate: bool,
    values: np.ndarray,
    rbits: int | Sequence[int] | None = None,
    chunk: int = 4096,
) -> np.ndarray:
    """exact.encode of every float32 value of ``values``, spread over ``pool``; uint32 codes."""
    values = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
    tasks = []
    for lo in range(0, values.size, chunk):
        part = values[lo : lo + chunk]
        if rbits is None or isinstance(rbits, int):
            r = rbits
        else:  # Python ints: the exact model takes no NumPy integers
            r = [int(b) for b in rbits[lo : lo + chunk]]
        tasks.append((code, mode, saturate, part.tobytes(), r))
    out = [c for part in pool.map(encode_chunk, tasks) for c in part]
    return np.array(out, dtype=np.uint32)


def first_mismatches(
    what: str, got: np.ndarray, want: np.ndarray, inputs: np.ndarray | None = None, k: int = 5
) -> str:
    """A readable message for the first ``k`` positions where ``got != want`` (empty if none)."""
    got, want = np.asarray(got).reshape(-1), np.asarray(want).reshape(-1)
    if got.shape != want.shape:
        return f"{what}: {got.size} results, expected {want.size}"
    bad = np.flatnonzero(got != want)
    if not bad.size:
        return ""
    rows = []
    for i in bad[:k]:
        src = ""
        if inputs is not None:
            src = f" input 0x{int(raw(inputs)[i]):x} ({inputs.reshape(-1)[i]!r})"
        rows.append(f"  [{i}]{src}: got 0x{int(got[i]):x}, exact 0x{int(want[i]):x}")
    return f"{what}: {bad.size} of {got.size} differ\n" + "\n".join(rows)


def cast_array_task(task: tuple) -> exact.ArrayResult:
    """exact.cast_array in a worker: (values, shape, dtype, keyword arguments)."""
    values, shape, dtype, kw = task
    return exact.cast_array(values, shape, dtype, **kw)


def map_tasks(pool: Executor, fn: Callable, tasks: Sequence, chunksize: int = 1) -> list:
    """``pool.map`` as a list (inline pools ignore chunksize)."""
    if isinstance(pool, _Inline):
        return list(map(fn, tasks))
    return list(pool.map(fn, tasks, chunksize=chunksize))
