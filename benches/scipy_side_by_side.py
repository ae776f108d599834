#!/usr/bin/env python3
"""Runs the same problems through scipy.optimize.minimize(method='BFGS') and through the
`cudamin` release binary, one after the other in one process, and prints wall times and their
ratio. Absolute times drift on shared machines; the ratio of two runs made back to back is
what BENCHMARKS.md quotes.

    python3 -m venv target/scipy-venv && target/scipy-venv/bin/pip install scipy==1.17.1
    cargo build --release
    target/scipy-venv/bin/python benches/scipy_side_by_side.py [--quick]

The lsq-expsin data are regenerated here with the same SplitMix64 / Box–Muller stream as
host/src/problems/builtin.rs (same seed, same libm calls), so both sides fit the same numbers.
"""

import json
import math
import subprocess
import sys
import time

import numpy as np
from scipy.optimize import minimize

CUDAMIN = "target/release/cudamin"
LSQ_SEED = 20_261_122
MASK = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed

    def next_u64(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))

    def normal(self):
        u1 = 1.0 - self.uniform()
        u2 = self.uniform()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(math.tau * u2)


def theta_true(p):
    return np.array([2.0, 0.7] + [(1.0 if k % 2 == 0 else -1.0) / k for k in range(2, p)])


def lsq_expsin(p, points):
    theta = theta_true(p)
    rng = SplitMix64(LSQ_SEED)
    t = np.empty(points)
    y = np.empty(points)
    for j in range(points):
        tj = 10.0 * rng.uniform()
        model = theta[0] * math.exp(-theta[1] * tj) + sum(theta[k] * math.sin(k * tj) for k in range(2, p))
        t[j] = tj
        y[j] = model + 0.01 * rng.normal()
    basis = np.sin(np.outer(t, np.arange(2, p)))  # computed once, as a numpy user would

    def f(theta):
        r = y - theta[0] * np.exp(-theta[1] * t) - basis @ theta[2:]
        return r @ r

    return f, np.full(p, 0.5)


def seed_expsum(n):
    return (lambda x: np.sum(x * x + np.exp(x))), np.full(n, 0.5)


def rosenbrock_x0(n):
    return np.array([-1.2 if i % 2 == 0 else 1.0 for i in range(n)])


def ext_rosenbrock(n):
    def f(x):
        a, b = x[0::2], x[1::2]
        return np.sum(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2)

    return f, rosenbrock_x0(n)


def chained_rosenbrock(n):
    def f(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    return f, rosenbrock_x0(n)


# (problem, n, points, scipy builder, cudamin --grad); scipy uses its default jac=None
# (2-point forward differences), cudamin the scheme given.
CASES = [
    ("seed-expsum", 100, None, lambda: seed_expsum(100), "forward"),
    ("seed-expsum", 1000, None, lambda: seed_expsum(1000), "forward"),
    ("ext-rosenbrock", 100, None, lambda: ext_rosenbrock(100), "forward"),
    ("rosenbrock", 100, None, lambda: chained_rosenbrock(100), "forward"),
    ("lsq-expsin", 16, 100_000, lambda: lsq_expsin(16, 100_000), "forward"),
    ("lsq-expsin", 16, 1_000_000, lambda: lsq_expsin(16, 1_000_000), "forward"),
]
SLOW_CASES = [
    ("ext-rosenbrock", 1000, None, lambda: ext_rosenbrock(1000), "forward"),
    ("rosenbrock", 1000, None, lambda: chained_rosenbrock(1000), "forward"),
    ("seed-expsum", 10000, None, lambda: seed_expsum(10000), "forward"),
]


def run_scipy(build):
    f, x0 = build()
    start = time.perf_counter()
    result = minimize(f, x0, method="BFGS")
    return time.perf_counter() - start, result


def run_cudamin(problem, n, points, grad):
    args = [CUDAMIN, "solve", problem, "--n", str(n), "--grad", grad, "--json"]
    if points:
        args += ["--points", str(points)]
    start = time.perf_counter()
    out = subprocess.run(args, capture_output=True, check=True, text=True)
    wall = time.perf_counter() - start
    return wall, json.loads(out.stdout)


def main():
    cases = CASES if "--quick" in sys.argv else CASES + SLOW_CASES
    print(f"{'problem':<16}{'n':>6}{'points':>9} | {'scipy s':>9}{'nit':>6}{'f':>14}{'st':>3} | "
          f"{'cudamin s':>10}{'solve s':>9}{'nit':>6}{'f':>14}{'st':>3} | {'scipy/cudamin':>13}")
    for problem, n, points, build, grad in cases:
        scipy_s, res = run_scipy(build)
        wall, ours = run_cudamin(problem, n, points, grad)
        print(f"{problem:<16}{n:>6}{points or '':>9} | {scipy_s:>9.3f}{res.nit:>6}{res.fun:>14.6e}{res.status:>3} | "
              f"{wall:>10.3f}{ours['elapsed_s']:>9.3f}{ours['nit']:>6}{ours['fun']:>14.6e}{ours['status']:>3} | "
              f"{scipy_s / wall:>12.1f}x", flush=True)


if __name__ == "__main__":
    main()
