"""Draw the pictures of docs/pictures.md into docs/img/ with ``tcast.plot``.

Needs matplotlib (``pip install "tcast-spec[plot]"``) and, for the coverage picture,
tcast-ref. Run it after changing a format, the exact model or ``tcast.plot``::

    .venv/bin/python docs/gen_pictures.py                 # every picture
    .venv/bin/python docs/gen_pictures.py values_e2m1f    # only the named ones

Each picture is what the command beside it in :data:`PICTURES` draws, at a lower resolution
(every file stays under 100 KB). The PNG bytes depend on the matplotlib version and fonts,
so the files are not compared in tests; the data each picture draws is (tests/test_plot.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tcast import plot

ROOT = Path(__file__).resolve().parents[1]
IMG = Path(__file__).with_name("img")
#: Dots per inch of every picture.
DPI = 72
#: Most bytes a picture may have.
LIMIT = 100_000

#: name -> (the same picture from the command line, how to draw it)
PICTURES: dict[str, tuple[str, Callable[[], Any]]] = {
    "values_e2m1f": ("tcast plot values e2m1f", lambda: plot.values("e2m1f")),
    "values_e4m3fn": ("tcast plot values e4m3fn", lambda: plot.values("e4m3fn")),
    "values_e5m2": ("tcast plot values e5m2", lambda: plot.values("e5m2")),
    "error_elements": (
        "tcast plot error e2m1f e2m3f e3m2f e4m3fn e5m2 --points 600",
        lambda: plot.errors(["e2m1f", "e2m3f", "e3m2f", "e4m3fn", "e5m2"], points=600),
    ),
    "error_blocks": (
        "tcast plot error mxfp4 nvfp4 mxfp6e2 mxfp8 --amax 1 --points 600",
        lambda: plot.errors(["mxfp4", "nvfp4", "mxfp6e2", "mxfp8"], points=600, amax=1.0),
    ),
    "coverage_mxfp8": (
        "tcast plot coverage tests/golden/mxfp8",
        lambda: plot.coverage(ROOT / "tests" / "golden" / "mxfp8"),
    ),
}


def main(argv: list[str] | None = None) -> int:
    """Draw the pictures; exit status 1 when one exceeds :data:`LIMIT` bytes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", choices=[[], *PICTURES], metavar="NAME")
    args = parser.parse_args(argv)
    IMG.mkdir(exist_ok=True)
    status = 0
    for name in args.names or PICTURES:
        command, draw = PICTURES[name]
        out = IMG / f"{name}.png"
        # no Software entry, so the bytes do not change with the matplotlib version alone
        draw().savefig(out, dpi=DPI, metadata={"Software": None})
        size = out.stat().st_size
        print(f"{out.relative_to(ROOT)}: {size} bytes  ({command})")
        if size > LIMIT:
            print(f"  too large: over {LIMIT} bytes", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
