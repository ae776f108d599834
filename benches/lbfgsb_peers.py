#!/usr/bin/env python3
"""L-BFGS-B at n = 10⁶, side by side: scipy's `minimize(method='L-BFGS-B')` with an analytic
numpy gradient against `cudamin solve PROBLEM --method lbfgsb`, bounded and not.

The problems are the CLI's own, written again in numpy for scipy (float64 both):
- seed-expsum: f = Σ x² + eˣ, x0 = 0.5; bounded: every x ≤ −0.4 (the minimum, −0.3517 per
  variable, lies outside, so every bound is active at the answer);
- ext-rosenbrock: f = Σ 100(x₂ₖ₊₁ − x₂ₖ²)² + (1 − x₂ₖ)², x0 = (−1.2, 1, …); bounded: every
  x ≤ 0.9 (the answer has x₂ₖ = 0.9 at its bound and x₂ₖ₊₁ = 0.81 free: half active).
Every option at scipy's defaults (maxcor 10, pgtol 1e-5, factr 1e7) on both sides. cudamin's time
is its report's `elapsed_s` (the solve alone); scipy's is the `minimize` call's wall time, its
objective returning (f, g) in one vectorized call, its bounds a `Bounds` of arrays. The tools alternate within each repetition;
times are medians. jaxopt's LBFGSB, which the issue also names, is not installed here (it needs
jax); add it to the venv to add its row.

    target/poisson-peers-venv/bin/python benches/lbfgsb_peers.py [--n N] [--repeat R]
"""

import argparse
import json
import statistics
import subprocess
import time

import numpy as np
from scipy.optimize import Bounds, minimize


def seed_expsum(x):
    e = np.exp(x)
    return float(np.sum(x * x + e)), 2.0 * x + e


def ext_rosenbrock(x):
    a, b = x[0::2], x[1::2]
    t = b - a * a
    g = np.empty_like(x)
    g[0::2] = -400.0 * t * a - 2.0 * (1.0 - a)
    g[1::2] = 200.0 * t
    return float(np.sum(100.0 * t * t + (1.0 - a) ** 2)), g


CASES = [
    ("seed-expsum", seed_expsum, lambda n: np.full(n, 0.5), None),
    ("seed-expsum", seed_expsum, lambda n: np.full(n, 0.5), -0.4),
    ("ext-rosenbrock", ext_rosenbrock, lambda n: np.tile([-1.2, 1.0], n // 2), None),
    ("ext-rosenbrock", ext_rosenbrock, lambda n: np.tile([-1.2, 1.0], n // 2), 0.9),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cudamin", default="target/release/cudamin")
    args = ap.parse_args()
    print(f"| problem | upper bound | tool | time (s) | × cudamin | nit | nfev | f | active |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, fun, start, upper in CASES:
        times = {"scipy": [], "cudamin": []}
        for _ in range(args.repeat):
            x0 = start(args.n)
            bounds = None if upper is None else Bounds(-np.inf, np.full(args.n, upper))
            clock = time.perf_counter()
            r = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds)
            times["scipy"].append(time.perf_counter() - clock)
            scipy_row = (r.nit, r.nfev, r.fun, 0 if upper is None else int(np.sum(r.x >= upper)))
            command = [args.cudamin, "solve", name, "--n", str(args.n), "--method", "lbfgsb",
                       "--json"] + ([] if upper is None else ["--upper", repr(upper)])
            report = json.loads(subprocess.run(command, check=True, capture_output=True,
                                               text=True).stdout)
            times["cudamin"].append(report["elapsed_s"])
            mask = report.get("active_mask") or []
            cudamin_row = (report["nit"], report["nfev"], report["fun"], sum(1 for m in mask if m))
        ours = statistics.median(times["cudamin"])
        for tool, row in [("scipy", scipy_row), ("cudamin", cudamin_row)]:
            t = statistics.median(times[tool])
            nit, nfev, f, active = row
            print(f"| {name} | {upper} | {tool} | {t:.3f} | {t / ours:.2f} | {nit} | {nfev} | "
                  f"{f:.10g} | {active} |")


if __name__ == "__main__":
    main()
