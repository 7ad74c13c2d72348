"""Fake-quantize two small models with each datatype and report the output error.

A 3-layer MLP and a tiny CNN (two Conv2d layers and a Linear head), built deterministically
(``torch.manual_seed``), run one batch in float32; then, for each datatype, the weights and
the input activations of every ``nn.Linear`` and ``nn.Conv2d`` are fake-quantized with
``tcast_torch.quantize_model`` and the batch runs again. The table gives the relative L2
error ``||y_q - y|| / ||y||`` and the largest absolute error of the outputs against the float32
model.

Usage::

    python packages/tcast-torch/examples/quantize_small_model.py [--device cuda]
"""

from __future__ import annotations

import argparse
import platform

import torch
from torch import nn

import tcast_torch

#: The datatypes of the table (weights and inputs both use the datatype).
DATATYPES = ("mxfp8", "mxfp8e5", "mxfp6e2", "mxfp6e3", "mxfp4", "mxint8", "nvfp4", "float8_e4m3fn")
#: The seed of the models' initialisation and of the input batches.
SEED = 0


def build_models(device: str = "cpu") -> dict[str, tuple[nn.Module, torch.Tensor]]:
    """The two models and their input batches, the same for a given seed and torch version."""
    torch.manual_seed(SEED)
    mlp = nn.Sequential(
        nn.Linear(64, 256),
        nn.GELU(),
        nn.Linear(256, 256),
        nn.GELU(),
        nn.Linear(256, 10),
    )
    cnn = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1, stride=2),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    )
    x_mlp = torch.randn(32, 64)
    x_cnn = torch.randn(8, 3, 16, 16)
    return {
        "mlp": (mlp.to(device).eval(), x_mlp.to(device)),
        "cnn": (cnn.to(device).eval(), x_cnn.to(device)),
    }


def output_errors(y_q: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    """(relative L2 error, max abs error) of y_q against y, computed in float64."""
    d = y_q.double() - y.double()
    return float(d.norm() / y.double().norm()), float(d.abs().max())


def main(device: str = "cpu", datatypes: tuple[str, ...] = DATATYPES) -> list[dict]:
    """Print the configuration and the error table; return the table's rows.

    Returns:
        One dict per datatype: ``datatype``, and ``<model>_rel_l2`` / ``<model>_max_abs``
        for the models ``mlp`` and ``cnn``.
    """
    dev = torch.device(device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else platform.processor()
    print(
        f"torch {torch.__version__}, tcast_torch {tcast_torch.__version__}, "
        f"device {dev} ({name or platform.machine()}), seed {SEED}"
    )
    models = build_models(device)
    rows = []
    with torch.inference_mode():
        reference = {k: m(x) for k, (m, x) in models.items()}
        for dt in datatypes:
            row: dict = {"datatype": dt}
            for key, (model, x) in models.items():
                rule = tcast_torch.QuantRule("*", weight=dt, input=dt)
                with tcast_torch.quantize_model(model, rule):
                    y_q = model(x)
                row[f"{key}_rel_l2"], row[f"{key}_max_abs"] = output_errors(y_q, reference[key])
            rows.append(row)
    print()
    print("| datatype | MLP rel. L2 | MLP max abs | CNN rel. L2 | CNN max abs |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['datatype']} | {r['mlp_rel_l2']:.2e} | {r['mlp_max_abs']:.2e} | "
            f"{r['cnn_rel_l2']:.2e} | {r['cnn_max_abs']:.2e} |"
        )
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    main(parser.parse_args().device)
