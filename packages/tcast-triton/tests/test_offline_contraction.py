"""The kernels compile to the same code whatever ``enable_fp_fusion`` is (sm_90, no GPU).

The engine launches its kernels without FMA contraction (``x * r + z`` rounds twice,
SEMANTICS.md §0); a compiler with Triton's default options (torch Inductor compiling them as
user kernels) would contract a product into the sum it feeds, unless the kernels' arithmetic
leaves nothing to contract (``_rn.mul_rn``). ``contraction_offline.py`` compiles every kernel
the engine launches, in each variant of its arithmetic where a product feeds a sum, with
``enable_fp_fusion`` off and on, in a subprocess without ``TRITON_INTERPRET`` (the
interpreter compiles nothing), and these tests ask for identical SASS: then the options
cannot change a bit. The full tier adds every catalog datatype in every cast mode
(``--full``, a few hundred kernels, sharded over the CPUs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "contraction_offline.py"

#: Every kernel the engine launches: the casts (unscaled, 1-D tiles in two layouts, N-d
#: tiles, dual in Triton and Gluon), the tensor-amax pass, the tile statistics, the upcast
#: and the packing kernels.
KERNELS = {
    "_cast_unscaled",
    "_cast_tiles",
    "_cast_row_pieces",
    "_cast_nd",
    "_cast_dual",
    "_cast_dual_gl",
    "_cast_dual_gl_hw",
    "_amax_pass",
    "_tile_stats",
    "_upcast_kernel",
    "_pack_kernel",
    "_unpack_kernel",
}


def _compile_both_ways(tmp_path: Path, full: bool = False) -> list[dict]:
    """The script's rows (sharded over the CPUs for the full sweep); none may differ."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    n = max(1, min(os.cpu_count() or 1, 16)) if full else 1
    flags = ["--full"] if full else []
    runs = []
    for k in range(n):
        out, err = tmp_path / f"out{k}", tmp_path / f"err{k}"
        with out.open("w") as fo, err.open("w") as fe:
            cmd = [sys.executable, str(SCRIPT), *flags, "--shard", f"{k}/{n}"]
            runs.append((subprocess.Popen(cmd, stdout=fo, stderr=fe, env=env), out, err))
    rows, errors = [], ""
    for proc, out, err in runs:
        proc.wait(timeout=7200)
        text = out.read_text()
        rows += [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        if proc.returncode:
            errors += text[-2000:] + err.read_text()[-2000:]
    differ = [r for r in rows if not r.get("same")]
    assert not errors and rows and not differ, differ or errors
    return rows


def test_every_kernel_compiles_the_same_with_and_without_fma_contraction(tmp_path):
    rows = _compile_both_ways(tmp_path)
    assert {r["kernel"] for r in rows} == KERNELS


@pytest.mark.full
def test_every_catalog_datatype_compiles_the_same_with_and_without_fma_contraction(tmp_path):
    rows = _compile_both_ways(tmp_path, full=True)
    assert len(rows) > 300
