"""The kernels compile to the same code whatever ``enable_fp_fusion`` is (sm_90, no GPU).

The engine launches its kernels without FMA contraction (``x * r + z`` rounds twice,
SEMANTICS.md §0); a compiler with Triton's default options (torch Inductor compiling them as
user kernels) would contract a product into the sum it feeds, unless the kernels' arithmetic
leaves nothing to contract (``_rn.mul_rn``). ``contraction_offline.py`` compiles every kernel
the engine launches, in each variant of its arithmetic where a product feeds a sum, with
``enable_fp_fusion`` off and on, in a subprocess without ``TRITON_INTERPRET`` (the
interpreter compiles nothing), and these tests ask for identical SASS: then the options
cannot change a bit.
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


def _compile_both_ways(*flags: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run(
        [sys.executable, str(SCRIPT), *flags], capture_output=True, text=True, env=env, timeout=3600
    )
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    differ = [r for r in rows if not r.get("same")]
    assert run.returncode == 0 and rows and not differ, differ or run.stdout + run.stderr[-3000:]
    return rows


def test_every_kernel_compiles_the_same_with_and_without_fma_contraction():
    rows = _compile_both_ways()
    assert {r["kernel"] for r in rows} == KERNELS


@pytest.mark.full
def test_every_catalog_datatype_compiles_the_same_with_and_without_fma_contraction():
    rows = _compile_both_ways("--full")
    assert len(rows) > 100
