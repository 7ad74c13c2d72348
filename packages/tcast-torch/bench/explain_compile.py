"""List torch.compile graph breaks of tcast_torch.cast (a diagnostic, not a test).

    python packages/tcast-torch/bench/explain_compile.py [--device cuda]

For each cast, runs ``torch._dynamo.explain`` and prints the graph count, the break count and
the first break reasons (with the user frame that caused them).
"""

from __future__ import annotations

import argparse

import torch

import tcast_torch

CASES = [
    ("mxfp8", "virtual", {}),
    ("mxfp8", "actual", {}),
    ("mxfp4", "virtual", {}),
    ("mxfp4", "actual", {}),
    ("nvfp4", "virtual", {}),
    ("nvfp4", "actual", {}),
    ("float8_e4m3fn", "virtual", {}),
    ("mxint8", "virtual", {"roundmode": "stochastic", "seed": 3}),
    ("mxfp4", "compress", {}),
    ("uint4_FFc", "virtual", {}),
]


def main() -> None:
    """Explain every case and print a summary."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, device {args.device}")
    x = torch.randn(64, 128, device=args.device, dtype=torch.bfloat16)
    for name, castmode, kw in CASES:
        torch._dynamo.reset()

        def fn(v, name=name, castmode=castmode, kw=kw):
            return tcast_torch.cast(v, name, castmode=castmode, **kw)

        ex = torch._dynamo.explain(fn)(x)
        print(f"{name:14s} {castmode:8s} graphs={ex.graph_count} breaks={ex.graph_break_count}")
        for br in ex.break_reasons[:4]:
            where = br.user_stack[-1] if br.user_stack else None
            loc = f"{where.filename.split('/')[-1]}:{where.lineno}" if where else "?"
            print(f"    {loc}: {str(br.reason)[:300]}")


if __name__ == "__main__":
    main()
