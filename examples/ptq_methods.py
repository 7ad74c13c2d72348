"""Post-training quantization of a small model: calibration methods compared (not a test).

A 4-layer MLP is trained (float32, a few hundred AdamW steps) to imitate a fixed random
"teacher" MLP on inputs whose features are heavy-tailed (Student-t, 3 degrees of freedom,
with a few features 20 times larger): the activations have outliers, as language models'
do, so the choice of clipping range matters. Then, for each recipe (weight and activation
datatypes) and each calibration method of ``tcast.observe``, the model is prepared with
``tcast_torch.prepare_model``, calibrated on held-out batches and converted to static
scales; the table reports the test loss (mean squared error against the teacher) of every
combination, beside the float model's.

    python examples/ptq_methods.py [--steps 400] [--plot docs/img/ptq_methods.png]
    python examples/ptq_methods.py --steps 20 --calib 2  # a smoke run
"""

from __future__ import annotations

import argparse
import copy
import time

import torch
from torch import nn

import tcast
import tcast_torch
from tcast import observe as ob

#: (name, weight datatype, input datatype): static weight scales; the inputs' tensor scales.
RECIPES = [
    ("int8 / int8", "int8_float32_t0", "int8_float32"),
    ("int4 / int8", "int4_float32_t0", "int8_float32"),
    ("fp8 / fp8", "e4m3fn_float32_t0", "e4m3fn_float32"),
    ("mxfp4 / nvfp4", "mxfp4", "nvfp4"),
]

#: (name, weight method, input method).
METHODS = [
    ("minmax", ob.MinMax(), ob.MinMax()),
    ("percentile 99.99", ob.MinMax(), ob.Percentile(99.99)),
    ("hist. percentile 99.9", ob.MinMax(), ob.HistogramPercentile(99.9)),
    ("entropy", ob.MinMax(), ob.Entropy()),
    ("mse", ob.Mse(), ob.Mse()),
]


def mlp(width: int, depth: int, dim: int) -> nn.Sequential:
    """A GELU MLP of ``depth`` Linear layers from and to ``dim`` features."""
    layers: list[nn.Module] = [nn.Linear(dim, width), nn.GELU()]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, width), nn.GELU()]
    layers.append(nn.Linear(width, dim))
    return nn.Sequential(*layers)


def inputs(n: int, dim: int) -> torch.Tensor:
    """Heavy-tailed features (the global generator: seeded once in main)."""
    x = torch.distributions.StudentT(3.0).sample((n, dim))
    x[:, :4] *= 20.0  # outlier features
    return x


def main() -> None:
    """Train, calibrate with every method and recipe, print the table (and plot it)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--calib", type=int, default=4, help="calibration batches")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--plot", default=None, help="write a bar chart of the table here")
    a = p.parse_args()
    torch.manual_seed(0)
    teacher = mlp(a.width, 3, a.dim).eval()
    model = mlp(a.width, 4, a.dim)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    t0 = time.perf_counter()
    for _ in range(a.steps):
        x = inputs(a.batch, a.dim)
        with torch.no_grad():
            y = teacher(x)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    calib = [inputs(a.batch, a.dim) for _ in range(a.calib)]
    test_x = inputs(4 * a.batch, a.dim)
    with torch.no_grad():
        test_y = teacher(test_x)
        base = nn.functional.mse_loss(model(test_x), test_y).item()
    print(
        f"# tcast {tcast.__version__}, torch {torch.__version__}, CPU; MLP dim {a.dim} width "
        f"{a.width}, {a.steps} training steps ({time.perf_counter() - t0:.1f} s), "
        f"{a.calib} calibration batches of {a.batch}; test MSE of the float model {base:.4f}"
    )
    rows = []
    for rname, wdt, idt in RECIPES:
        row = []
        for _, wm, im in METHODS:
            q = copy.deepcopy(model)
            rule = tcast_torch.QuantRule("*", weight=wdt, input=idt)
            cal = tcast_torch.prepare_model(q, rule, weight=wm, input=im)
            with torch.no_grad():
                for k in range(cal.passes):
                    if k:
                        cal.next_pass()
                    for b in calib:
                        q(b)
                cal.convert()
                row.append(nn.functional.mse_loss(q(test_x), test_y).item())
        rows.append((rname, row))
    head = "| weight / input | " + " | ".join(m[0] for m in METHODS) + " |"
    print(head)
    print("|---|" + "---|" * len(METHODS))
    for rname, row in rows:
        best = min(row)
        cells = [f"**{v:.4f}**" if v == best else f"{v:.4f}" for v in row]
        print(f"| {rname} | " + " | ".join(cells) + " |")
    if a.plot:
        plot(rows, base, a.plot)


def plot(rows, base: float, path: str) -> None:
    """A bar chart of the table (log scale), the float model's error as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / len(METHODS)
    for j, (mname, _, _) in enumerate(METHODS):
        xs = [i + (j - (len(METHODS) - 1) / 2) * width for i in range(len(rows))]
        ax.bar(xs, [r[1][j] for r in rows], width, label=mname)
    ax.axhline(base, color="black", lw=0.8, ls="--", label="float")
    ax.set_xticks(range(len(rows)), [r[0] for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("test MSE (log)")
    ax.set_title("Post-training quantization: calibration methods (tcast.observe)")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
