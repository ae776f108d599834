#!/usr/bin/env python3
"""`cudamin.curve_fit_batch` against a Python loop of `scipy.optimize.curve_fit` calls: F fits of
a symmetric 2-D Gaussian on 5 × 5 pixels with Poisson noise (Gpufit's benchmark case), on the
same arrays in the same process.

    bash .ci/python          # builds the package (release) into target/python-venv
    target/python-venv/bin/python benches/fit_batch_peers.py [--fits 10000] [--repeats 3]

scipy runs with the analytic Jacobian (MINPACK's lmder), its best case. Both start each fit
from the same p0 at the same tolerances, tools alternating within each repetition; the table
gives the median wall time and fits per second. cudamin also runs the fits in float32
(`dtype=np.float32`; its tolerances are raised to float32's epsilon), and by Poisson maximum
likelihood (`estimator='poisson'`, Gpufit's MLE; scipy has no such fit). The last lines compare
the answers: the largest relative difference of popt, and of pcov over its diagonal's scale;
for float32, the largest difference from float64's in standard errors.
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np
from scipy.optimize import curve_fit

import cudamin

GRID = np.column_stack([np.tile(np.arange(5.0), 5), np.repeat(np.arange(5.0), 5)])


def gauss_2d(x, a, x0, y0, s, b):
    return a * np.exp(-((x[0] - x0) ** 2 + (x[1] - y0) ** 2) / (2 * s * s)) + b


def jacobian(x, a, x0, y0, s, b):
    dx, dy = x[0] - x0, x[1] - y0
    e = np.exp(-(dx * dx + dy * dy) / (2 * s * s))
    return np.column_stack([e, a * e * dx / s**2, a * e * dy / s**2, a * e * (dx * dx + dy * dy) / s**3, np.ones_like(e)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(2026)
    fits = args.fits
    truth = np.column_stack([
        rng.uniform(200, 500, fits), rng.uniform(1.5, 2.5, fits), rng.uniform(1.5, 2.5, fits),
        rng.uniform(0.8, 1.2, fits), rng.uniform(5, 15, fits),
    ])
    y = rng.poisson([gauss_2d(GRID.T, *t) for t in truth]).astype(float)
    p0 = truth * rng.uniform(0.9, 1.1, truth.shape)
    tight = dict(ftol=1e-12, xtol=1e-12, gtol=1e-12)

    def batch():
        return cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, **tight)

    def single():
        return cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, dtype=np.float32, **tight)

    def poisson():
        return cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, estimator="poisson", **tight)

    def loop():
        return [curve_fit(gauss_2d, GRID.T, y[f], p0=p0[f], jac=jacobian, **tight) for f in range(fits)]

    tools = (
        ("cudamin.curve_fit_batch", batch), ("cudamin float32", single), ("cudamin poisson", poisson),
        ("scipy curve_fit loop", loop),
    )
    times = {name: [] for name, _ in tools}
    outs = {}
    for _ in range(args.repeats):
        for name, run in tools:
            start = time.perf_counter()
            outs[name] = run()
            times[name].append(time.perf_counter() - start)
    popt, pcov, info = outs["cudamin.curve_fit_batch"]
    ref = outs["scipy curve_fit loop"]
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; {fits} fits of 25 points, p = 5")
    print("| tool | median s | fits/s | times |")
    print("|---|---|---|---|")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"| {name} | {median:.4f} | {fits / median:,.0f} | {', '.join(f'{t:.4f}' for t in runs)} |")
    loop_time = statistics.median(times["scipy curve_fit loop"])
    ratio = loop_time / statistics.median(times["cudamin.curve_fit_batch"])
    print(f"cudamin / scipy loop: {ratio:.1f}x faster; successes {np.sum(info['status'] > 0)} of {fits}")
    s_popt, _, s_info = outs["cudamin float32"]
    errors = np.sqrt(np.einsum("fii->fi", pcov))
    print(f"cudamin float32 / scipy loop: {loop_time / statistics.median(times['cudamin float32']):.1f}x; "
          f"successes {np.sum(s_info['status'] > 0)} of {fits}; within "
          f"{np.max(np.abs(s_popt - popt) / errors):.2e} standard errors of float64")
    print(f"cudamin poisson: successes {np.sum(outs['cudamin poisson'][2]['status'] > 0)} of {fits}")
    rp = np.array([r[0] for r in ref])
    rc = np.array([r[1] for r in ref])
    scale = np.sqrt(np.einsum("fii,fjj->fij", np.abs(rc), np.abs(rc)))
    print(f"max popt relative difference {np.max(np.abs(popt - rp) / np.abs(rp)):.2e}, "
          f"pcov {np.max(np.abs(pcov - rc) / scale):.2e}")


if __name__ == "__main__":
    main()
