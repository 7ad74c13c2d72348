r"""Make the tcast engines discoverable on a machine that cannot build wheels (no network).

The conformance harness finds engines through entry points, which need installed
distribution metadata. On the GPU machine there is no index to build wheels from, so this
writes minimal ``*.dist-info`` folders (METADATA, entry_points.txt) into a directory on
``PYTHONPATH``, with the packages' sources on ``PYTHONPATH`` too. The torch engine's
variants ``torch:eager`` (``compile=False``) and ``torch:compiled`` (``compile=True``) need
no registration (the default engine ``torch`` uses the compiled kernels on CUDA)::

    python3 packages/tcast-torch/bench/gpu_entry_points.py /tmp/site
    P=$PWD/packages
    export PYTHONPATH=$P/tcast-spec/src:$P/tcast-ref/src:$P/tcast-torch/src:$P/tcast-triton/src
    export PYTHONPATH=$PYTHONPATH:/tmp/site TCAST_CONFORMANCE_DEVICE=cuda:0
    TCAST_CONFORMANCE_ENGINES=torch,torch:eager python3 -m pytest tests/test_conformance.py \
        -p no:benchmark -n 14
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

ENTRY_POINTS = {
    "tcast_spec": ("tcast-spec", "[console_scripts]\ntcast = tcast.cli:main\n"),
    "tcast_ref": (
        "tcast-ref",
        "[tcast.engines]\nref = tcast_ref:engine\n[tcast.commands]\n"
        "golden = tcast_ref.cli:register_golden\n"
        "verify = tcast_ref.cli:register_verify\n"
        "[tcast.engine_arrays]\nref = numpy\n",
    ),
    "tcast_torch": (
        "tcast-torch",
        "[tcast.engines]\ntorch = tcast_torch:engine\n[tcast.engine_arrays]\ntorch = torch\n",
    ),
    "tcast_triton": (
        "tcast-triton",
        "[tcast.engines]\ntriton = tcast_triton._engine:engine\n"
        "[tcast.engine_arrays]\ntriton = torch\n",
    ),
}


def main() -> None:
    """Write the dist-info folders into the directory given on the command line."""
    site = Path(sys.argv[1])
    site.mkdir(parents=True, exist_ok=True)
    for module, (name, eps) in ENTRY_POINTS.items():
        d = site / f"{module}-0.1.0.dist-info"
        d.mkdir(exist_ok=True)
        # the package's declared dependencies, as an installed wheel's metadata lists them
        project = tomllib.loads((ROOT / "packages" / name / "pyproject.toml").read_text())
        requires = "".join(f"Requires-Dist: {r}\n" for r in project["project"]["dependencies"])
        (d / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n{requires}"
        )
        (d / "entry_points.txt").write_text(eps)
        (d / "RECORD").write_text("")
    print(f"entry points for {', '.join(ENTRY_POINTS)} in {site}")


if __name__ == "__main__":
    main()
