"""The Gluon dual kernels compile for sm_90, without a GPU, in the configurations they serve.

Gluon kernels do not run under the interpreter this folder's tests use
(``test_gpu_dual_gluon.py`` runs them on a GPU), so ``gluon_offline.py`` compiles them in a
subprocess without ``TRITON_INTERPRET``: a layout or type error in the Gluon kernel fails
here, in CI, and so do register spills in the configurations the benchmark times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "gluon_offline.py"


def test_the_gluon_kernel_compiles_for_sm90_in_every_configuration():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=900
    )
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert run.returncode == 0, run.stdout + run.stderr[-3000:]
    assert len(rows) == 20 and all(r.get("compiled") for r in rows), rows
    # the whole-block configurations (the benchmark's) keep every value in registers
    whole = [r for r in rows if "(256, " in r["case"] or "(65536, " in r["case"]]
    assert whole and all(r["spills"] == 0 for r in whole), whole
