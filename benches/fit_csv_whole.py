#!/usr/bin/env python3
"""A whole `cudamin fit` process on a 10⁶-row CSV against the Python a curve_fit user runs on the
same file, side by side: `np.loadtxt` then `scipy.optimize.curve_fit` with the analytic
Jacobian (MINPACK's lmder), the expsin model with 16 parameters from ones (curve_fit's start).
Times are wall times of the whole work: the cudamin process from start to exit (reading the
CSV, the fit, the report), and in Python the load and the fit (the interpreter's start and
imports not counted). Median of `--repeats`, alternating. Both must end at the same Σr².

    python benches/fit_csv_whole.py --cudamin target/release/cudamin

(numpy and scipy needed: target/poisson-peers-venv has them.)
"""

import argparse
import os
import json
import statistics
import subprocess
import tempfile
import time

import numpy as np
from scipy.optimize import curve_fit

from fit_peers import expsin_jacobian, expsin_model

POINTS = 1_000_000
PARAMS = 16


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cudamin", default="target/release/cudamin")
    parser.add_argument("--points", type=int, default=POINTS)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    x = np.linspace(0.0, 8.0, args.points)
    truth = np.concatenate([[2.0, 0.7], 0.5 / np.arange(1.0, PARAMS - 1.0)])
    y = expsin_model(truth, x) + 0.05 * rng.standard_normal(args.points)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "expsin.csv")
        np.savetxt(path, np.column_stack([x, y]), delimiter=",", header="x,y", comments="",
                   fmt="%.17g")
        times = {"cudamin": [], "python": []}
        results = {}
        for _ in range(args.repeats):
            start = time.perf_counter()
            out = subprocess.run(
                [args.cudamin, "fit", path, "--model", "expsin", "--params", str(PARAMS),
                 "--json"], check=True, capture_output=True, text=True)
            times["cudamin"].append(time.perf_counter() - start)
            report = json.loads(out.stdout)
            results["cudamin"] = (report["rss"], report["nfev"], report["elapsed_s"])
            start = time.perf_counter()
            data = np.loadtxt(path, delimiter=",", skiprows=1)
            tx, ty = data[:, 0], data[:, 1]
            popt, _ = curve_fit(lambda t, *th: expsin_model(np.array(th), t), tx, ty,
                                p0=np.ones(PARAMS),
                                jac=lambda t, *th: expsin_jacobian(np.array(th), t))
            times["python"].append(time.perf_counter() - start)
            r = ty - expsin_model(popt, tx)
            results["python"] = (float(r @ r),)
    base = statistics.median(times["cudamin"])
    print(f"{args.points} rows, expsin p = {PARAMS}, median of {args.repeats}\n")
    print("| tool | whole time (s) | tool / cudamin | Σr² |")
    print("|---|---|---|---|")
    for tool, runs in times.items():
        seconds = statistics.median(runs)
        print(f"| {tool} | {seconds:.3f} | {seconds / base:.2f} | {results[tool][0]:.12e} |")
    print(f"\ncudamin's own fit time (elapsed_s): {results['cudamin'][2]:.3f} s, "
          f"nfev {results['cudamin'][1]}")


if __name__ == "__main__":
    main()
