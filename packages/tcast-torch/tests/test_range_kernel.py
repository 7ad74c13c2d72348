"""The Triton kernel of uint observers' ranges, under Triton's interpreter on CPU tensors.

On CUDA the observers run it (tests/test_observers.py checks them against the reference);
here every path of the kernel (one pass, a loop over columns, two passes over chunks; the
merges; rows apart in memory) is checked against the eager definition it replaces, bit for
bit. The interpreter must be chosen before Triton is imported, so the checks run in a child
process: ``TRITON_INTERPRET=1 python test_range_kernel.py`` prints their outcome as JSON.
"""

import json
import os
import subprocess
import sys

import pytest
import torch

#: Rows of 32 and 7 (one step), 3000 (columns looped), None (two passes: twice the chunk length
#: of the kernel's module) and 0.
SHAPES = [(70, 32), (9, 7), (5, 3000), None, (4, 0)]
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def _rows(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * 3.0
    flat = x.view(-1)
    if flat.numel() > 40:
        flat[3], flat[17], flat[29] = float("nan"), float("inf"), float("-inf")
        x[0] = -0.0  # a block of -0: its range is [+0, +0]
        x[1] = x[1].abs() + 1  # all positive: the range still holds 0
        x[-1] = -x[-1].abs() - 1  # all negative
    return x.to(dtype)


def _check_all() -> dict:
    """Every case: the kernel's (lo, hi) against ``_row_update``'s, as int32 bits."""
    import triton

    from tcast_torch import _observe, _range_kernel, _ranges

    kernel = triton.jit(_range_kernel.ranges_source)
    chunk = _ranges._SPLIT
    shapes = [s or (5, 2 * _ranges._SPLIT) for s in SHAPES]
    cases = [(_rows(s, d, seed=s[1]), f"{s} {d}") for s in shapes for d in DTYPES]
    wide = _rows((40, 96), torch.bfloat16, seed=1)
    cases.append((wide[:, 16:48], "rows at stride 96"))
    # chunks of 8: 1100 chunk ranges per row, looped over in the second pass
    cases.append((_rows((5, 8800), torch.float32, seed=2), "second pass looped"))
    # the 64-bit column counter of rows of 2**31 elements and more, on short rows
    counted = _rows((6, 3000), torch.bfloat16, seed=3)
    counted[2, 0], counted[3, 0], counted[4, -1] = 1000.0, -1000.0, 2000.0  # at both ends
    cases.append((counted, "64-bit counter"))
    failures, checked = [], 0
    for x, name in cases:
        _ranges._SPLIT = 8 if name == "second pass looped" else chunk
        _ranges._WIDE = 0 if name == "64-bit counter" else 2**31
        first = _observe._row_update(x, "lohi", 0, ())
        # merged into running ranges: by min and max, and by the moving average
        old = (first[0] * 0.7 - 0.5, first[1] * 1.3 + 0.25)
        k = torch.tensor(0.1, dtype=torch.float32)
        for label, merge in (("alone", ((),)), ("extremes", (old,)), ("average", (old, k))):
            want = _observe._row_update(x, "lohi", 0, *merge)
            got = _ranges.row_ranges(x, *merge, kernel=kernel)
            for which, w, g in zip(("lo", "hi"), want, got, strict=True):
                checked += 1
                if not torch.equal(w.view(torch.int32), g.view(torch.int32)):
                    failures.append(f"{name} {label} {which}")
            if any(torch.signbit(g).logical_and(g == 0).any() for g in got):
                failures.append(f"{name} {label}: -0 in a range")
    return {"checked": checked, "failures": failures}


def test_ranges_kernel_under_the_interpreter_gives_the_eager_bits() -> None:
    pytest.importorskip("triton")
    env = dict(os.environ, TRITON_INTERPRET="1")
    run = subprocess.run(
        [sys.executable, __file__], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["checked"] == (len(SHAPES) * len(DTYPES) + 3) * 3 * 2
    assert out["failures"] == []


if __name__ == "__main__":
    print(json.dumps(_check_all()))
