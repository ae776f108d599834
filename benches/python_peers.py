#!/usr/bin/env python3
"""`cudamin.curve_fit` from Python against `scipy.optimize.curve_fit`, on the same numpy arrays
in the same process: the speed on 10⁶ points, and the call overhead on 100.

    bash .ci/python          # builds the package (release) into target/python-venv
    target/python-venv/bin/python benches/python_peers.py

Times are the whole call as a user sees it (wall clock, `time.perf_counter`), tools alternating
within each repetition; the table gives the median. scipy runs with the analytic Jacobian
written below in numpy (MINPACK's lmder), its best case, and with its default forward
differences (lmdif). Both start from the same p0 at the same tolerances; the parameters each
reaches are compared in the last column (max relative difference from cudamin's).
"""

import os
import platform
import statistics
import time

import numpy as np
from scipy.optimize import curve_fit

import cudamin

POINTS = 1_000_000
REPEATS = 5
OVERHEAD_POINTS = 100
OVERHEAD_CALLS = 200


def exp_decay(x, a0, b0, a1, b1):
    return a0 * np.exp(-b0 * x) + a1 * np.exp(-b1 * x)


def exp_decay_jac(x, a0, b0, a1, b1):
    e0, e1 = np.exp(-b0 * x), np.exp(-b1 * x)
    return np.stack([e0, -a0 * x * e0, e1, -a1 * x * e1], axis=1)


def expsin(x, *theta):
    k = np.arange(2, len(theta))
    return theta[0] * np.exp(-theta[1] * x) + np.sin(np.outer(x, k)) @ np.asarray(theta[2:])


def expsin_jac(x, *theta):
    e = np.exp(-theta[1] * x)
    k = np.arange(2, len(theta))
    return np.column_stack([e, -theta[0] * x * e, np.sin(np.outer(x, k))])


def cases(points, rng):
    x = np.linspace(0.0, 4.0, points)
    y = exp_decay(x, 3.0, 0.7, 1.0, 3.0) + 0.01 * rng.standard_normal(points)
    yield "exp-decay, 4 parameters", "exp-decay", exp_decay, exp_decay_jac, x, y, np.array([2.0, 1.0, 0.5, 2.0])
    x = np.linspace(0.0, 10.0, points)
    theta = np.array([2.0, 0.5] + [0.1 * (-1) ** k for k in range(14)])
    y = expsin(x, *theta) + 0.01 * rng.standard_normal(points)
    yield "expsin, 16 parameters", "expsin", expsin, expsin_jac, x, y, np.full(16, 0.5)


def timed(call):
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def main():
    rng = np.random.default_rng(29)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
          f"numpy {np.__version__}, scipy {__import__('scipy').__version__}")
    print(f"## curve_fit on {POINTS} points (median of {REPEATS} calls)\n")
    print("| case | cudamin | scipy lmder (analytic J) | scipy lmdif (2-point) | scipy / cudamin | max rel. diff of popt |")
    print("|---|---|---|---|---|---|")
    for title, model, f, jac, x, y, p0 in cases(POINTS, rng):
        times = {"cudamin": [], "lmder": [], "lmdif": []}
        for _ in range(REPEATS):
            t, ours = timed(lambda: cudamin.curve_fit(model, x, y, p0=p0))
            times["cudamin"].append(t)
            t, theirs = timed(lambda: curve_fit(f, x, y, p0=p0, jac=jac))
            times["lmder"].append(t)
            t, _ = timed(lambda: curve_fit(f, x, y, p0=p0))
            times["lmdif"].append(t)
        med = {k: statistics.median(v) for k, v in times.items()}
        diff = np.max(np.abs(theirs[0] / ours[0] - 1))
        print(f"| {title} | {med['cudamin']:.3f} s | {med['lmder']:.3f} s | {med['lmdif']:.3f} s "
              f"| {med['lmder'] / med['cudamin']:.1f}× (lmder), {med['lmdif'] / med['cudamin']:.1f}× (lmdif) | {diff:.1e} |")
    print(f"\n## call overhead: exp-decay on {OVERHEAD_POINTS} points (median of {OVERHEAD_CALLS} calls)\n")
    _, _, f, jac, x, y, p0 = next(cases(OVERHEAD_POINTS, rng))
    ours = [timed(lambda: cudamin.curve_fit("exp-decay", x, y, p0=p0))[0] for _ in range(OVERHEAD_CALLS)]
    theirs = [timed(lambda: curve_fit(f, x, y, p0=p0, jac=jac))[0] for _ in range(OVERHEAD_CALLS)]
    print("| tool | whole call |")
    print("|---|---|")
    print(f"| cudamin.curve_fit | {statistics.median(ours) * 1e3:.3f} ms |")
    print(f"| scipy curve_fit (analytic J) | {statistics.median(theirs) * 1e3:.3f} ms |")


if __name__ == "__main__":
    main()
