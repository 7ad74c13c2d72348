"""Measure and draw the cast error of NVFP4 and MXFP4 with and without a Hadamard transform.

The picture and table of docs/transforms.md: heavy-tailed data (Student's t with ``nu``
degrees of freedom: smaller is heavier; normal data; normal data with outlier channels), cast
by tcast_ref (the reference engine, bit-exact with every other engine), two measures:

* the tensor: ``||x - cast(x)|| / ||x||`` of the virtual cast (with a transform, the inverse
  transform of the decoded values, SEMANTICS.md §5.11);
* a GEMM along the transformed dimension: ``||A Bᵀ - Â B̂ᵀ|| / ||A Bᵀ||`` where ``Â`` and ``B̂``
  are the decoded codes of both operands cast with the same transform (the transformed
  domain, as a GEMM reads the codes; ``H Hᵀ`` is the identity times ``2^-(k mod 2)``, undone
  exactly by a power of two).

Needs tcast-ref and matplotlib::

    .venv/bin/python docs/gen_transform_picture.py            # table and docs/img/transforms.png
    .venv/bin/python docs/gen_transform_picture.py --no-plot  # the table only
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

import tcast
import tcast_ref
from tcast import Hadamard

IMG = Path(__file__).with_name("img") / "transforms.png"
#: The data: Student's t with these degrees of freedom (inf: normal), and "channels": normal
#: data with 1% of the columns (the GEMM's K positions) 30 times larger, as the outlier
#: features of transformer activations.
NUS = (1.5, 2.0, 3.0, 5.0, float("inf"), "channels")
#: (label, datatype, transform or None)
CASTS = (
    ("NVFP4", "nvfp4", None),
    ("NVFP4 + RHT-16 (TE Wgrad signs)", "nvfp4", Hadamard.te_wgrad()),
    ("MXFP4", "mxfp4", None),
    ("MXFP4 + RHT-32 (seeded signs)", "mxfp4", Hadamard.seeded(32, 1)),
)


def _data(nu: float | str, shape: tuple[int, int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if nu == "channels":
        x = rng.standard_normal(shape)
        x[:, np.random.default_rng(99).choice(shape[1], shape[1] // 100, replace=False)] *= 30
    elif nu == float("inf"):
        x = rng.standard_normal(shape)
    else:
        x = rng.standard_t(nu, shape)
    return x.astype(np.float32)


def _name(nu: float | str) -> str:
    return nu if isinstance(nu, str) else "normal" if nu == float("inf") else f"t, ν={nu:g}"


def _decoded(x: np.ndarray, code: str, h: Hadamard | None) -> np.ndarray:
    """The decoded codes (the transformed domain when ``h`` is given), float64."""
    r = tcast_ref.cast(x, code, castmode="actual", transform=h)
    # the codes' values before the inverse transform: decode the result as cast without it
    plain = r if h is None else dataclasses.replace(r, transform=None)
    return tcast_ref.upcast(plain).astype(np.float64)


def measure(rows: int = 256, k: int = 2048) -> list[tuple[str, list[float], list[float]]]:
    """(label, tensor errors per nu, GEMM errors per nu) for each cast of :data:`CASTS`."""
    out = []
    for label, code, h in CASTS:
        tensor, gemm = [], []
        for i, nu in enumerate(NUS):
            a, b = _data(nu, (rows, k), 2 * i), _data(nu, (rows, k), 2 * i + 1)
            v = tcast_ref.cast(a, code, transform=h).astype(np.float64)
            tensor.append(float(np.linalg.norm(a - v) / np.linalg.norm(a)))
            exact = a.astype(np.float64) @ b.astype(np.float64).T
            prod = _decoded(a, code, h) @ _decoded(b, code, h).T
            if h is not None and h.stages % 2:
                prod *= 2.0  # odd sizes: H Hᵀ = I / 2 (SEMANTICS.md §5.10), exact
            gemm.append(float(np.linalg.norm(exact - prod) / np.linalg.norm(exact)))
        out.append((label, tensor, gemm))
    return out


def table(results: list[tuple[str, list[float], list[float]]]) -> str:
    """A Markdown table of the relative errors."""
    nus = " | ".join(_name(nu) for nu in NUS)
    lines = [f"| cast | measure | {nus} |", "|---|---|" + "---:|" * len(NUS)]
    for label, tensor, gemm in results:
        lines.append(f"| {label} | tensor | " + " | ".join(f"{e:.4f}" for e in tensor) + " |")
        lines.append(f"| {label} | GEMM | " + " | ".join(f"{e:.4f}" for e in gemm) + " |")
    return "\n".join(lines)


def draw(results: list[tuple[str, list[float], list[float]]], out: Path) -> None:
    """Two panels (tensor, GEMM): relative error against the tail parameter."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = list(range(len(NUS)))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=False)
    for ax, which, title in ((axes[0], 1, "tensor"), (axes[1], 2, "GEMM along K")):
        for res in results:
            style = "--" if "RHT" not in res[0] else "-"
            ax.plot(xs, res[which], style, marker="o", label=res[0])
        ax.set_xticks(xs, [_name(nu).replace("t, ν=", "t") for nu in NUS], fontsize=8)
        ax.set_xlabel("data: Student's t (left: heavier tails), normal, outlier channels")
        ax.set_ylabel("relative error")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(exist_ok=True)
    fig.savefig(out, dpi=72)


def main(argv: list[str] | None = None) -> int:
    """Print the configuration and the table; draw the picture unless ``--no-plot``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=256)
    ap.add_argument("--k", type=int, default=2048)
    ap.add_argument("--no-plot", action="store_true")
    args = ap.parse_args(argv)
    print(f"tcast {tcast.__version__}, tcast_ref; {args.rows} x {args.k} float32 per operand")
    results = measure(args.rows, args.k)
    print(table(results))
    if not args.no_plot:
        draw(results, IMG)
        print(f"wrote {IMG} ({IMG.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
