#!/usr/bin/env python3
"""Many consecutive fits from Python: one cudamin Session against NLSQ and scipy, in one process.

Issue 66's hardware case: 1 000 consecutive `curve_fit` calls of 10⁴ points each, as a user's
loop over data sets runs them. Every call fits the two-exponential decay (p = 4) to its own
data: the same x, a y with noise of its own seed. What a loop pays beyond the fits themselves
(a context, kernel loads, allocations, an upload per call) shows here and not in a single large
fit. The tools:
- `cudamin.curve_fit` on one `Session` opened before timing: each call uploads its x and y;
- NLSQ's `curve_fit` through one `CurveFit` object, which keeps what its first call compiled;
- scipy's `curve_fit` with the analytic Jacobian (`method='lm'`, MINPACK), on the host.
Each tool runs the whole loop once untimed, then the tools alternate (A, B, C, A, B, C, …) and
the table gives each loop's median time. For every tool, every fit's true ‖Jᵀr‖∞ is recomputed
here in float64 numpy; the table gives the largest.

On a GPU machine, with the venv of benches/gpu_fit_peers.py:
    PYTHONPATH=python target/fit-peers-venv/bin/python benches/gpu_fit_loop.py
Offline, on the simulator or the CPU, at a small size:
    PYTHONPATH=python target/python-venv/bin/python benches/gpu_fit_loop.py --device sim \\
        --fits 5 --points 1000 --repeats 1
"""

import argparse
import json
import logging
import os
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_fit_peers import (TOL, MAX_STEPS, Skip, check, decay_jacobian,  # noqa: E402
                           decay_model, jax_setup, model_source, need)

TRUTH = np.array([3.0, 0.5, 1.5, 3.0])
P0 = np.array([2.0, 0.3, 1.0, 2.0])


def data_sets(fits, points):
    """x, and one y per fit, each with noise of its own seed."""
    x = np.linspace(0.0, 10.0, points)
    clean = decay_model(TRUTH, x)
    return x, [clean + 0.02 * np.random.default_rng(66_000 + i).standard_normal(points)
               for i in range(fits)]


def cudamin_loop(args, x, ys):
    need("cudamin")
    import cudamin
    session = cudamin.Session(backend=args.device)

    def fit(y):
        popt, _ = session.curve_fit("exp-decay", x, y, p0=P0, ftol=TOL, xtol=TOL, gtol=TOL)
        return popt
    return fit, f"backend {session.backend}"


def nlsq_loop(args, x, ys):
    if args.device == "sim":
        raise Skip("the simulator is cudamin's alone")
    _, jnp = jax_setup(args)
    nlsq = need("nlsq")
    logging.disable(logging.WARNING - 1)  # it logs every iteration, at levels of its own
    model = model_source("exp-decay", jnp)
    fitter = nlsq.CurveFit()  # NLSQ's way to reuse what a first call compiled
    xj = jnp.asarray(x)

    def f(t, *theta):  # one function for every call, so that JAX compiles it once
        return model(jnp.stack(theta), t)

    def fit(y):
        popt, _ = fitter.curve_fit(f, xj, jnp.asarray(y), p0=P0, ftol=TOL, xtol=TOL, gtol=TOL,
                                   max_nfev=MAX_STEPS)
        return np.asarray(popt)
    return fit, ""


def scipy_loop(args, x, ys):
    from scipy.optimize import curve_fit

    def f(t, *theta):
        return decay_model(np.asarray(theta), t)

    def jac(t, *theta):
        return decay_jacobian(np.asarray(theta), t)

    def fit(y):
        popt, _ = curve_fit(f, x, y, p0=P0, jac=jac, method="lm", ftol=TOL, xtol=TOL, gtol=TOL)
        return popt
    return fit, "host, MINPACK"


TOOLS = [("cudamin.curve_fit (one Session)", cudamin_loop), ("NLSQ curve_fit", nlsq_loop),
         ("scipy curve_fit (lm, analytic jac)", scipy_loop)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu", "sim"], default="cuda")
    parser.add_argument("--fits", type=int, default=1000)
    parser.add_argument("--points", type=int, default=10**4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    x, ys = data_sets(args.fits, args.points)
    loops, skipped = {}, {}
    for label, make in TOOLS:
        try:
            fit, note = make(args, x, ys)
            with warnings.catch_warnings():  # a fit's covariance may be singular
                warnings.simplefilter("ignore")
                fits = [fit(y) for y in ys]  # untimed: compiles, loads kernels, warms caches
            loops[label] = (fit, note, fits)
        except Skip as e:
            skipped[label] = str(e)
        except Exception as e:  # a tool that fails is reported, not fatal
            skipped[label] = f"failed: {e.__class__.__name__}: {e}"
    times = {label: [] for label in loops}
    for _ in range(args.repeats):
        for label, (fit, _, _) in loops.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                for y in ys:
                    fit(y)
                times[label].append(time.perf_counter() - start)
    rows = []
    for label, _ in TOOLS:
        if label in skipped:
            rows.append(dict(tool=label, skipped=skipped[label]))
            continue
        _, note, fits = loops[label]
        grad = max(check(p, x, y, decay_model, decay_jacobian)[1] for p, y in zip(fits, ys))
        rows.append(dict(tool=label, seconds=statistics.median(times[label]), grad_inf=grad,
                         note=note))
    base = next((r["seconds"] for r in rows if "seconds" in r), None)
    print(f"### {args.fits} consecutive fits, exp-decay p = 4, {args.points:,} points each\n")
    print("| tool | loop s | fits/s | tool / cudamin | largest true ‖Jᵀr‖∞ | note |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if "skipped" in r:
            print(f"| {r['tool']} | skipped | | | | {r['skipped'][:120]} |")
            continue
        print(f"| {r['tool']} | {r['seconds']:.3f} | {args.fits / r['seconds']:.0f} "
              f"| {r['seconds'] / base:.2f} | {r['grad_inf']:.2e} | {r['note']} |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(device=args.device, fits=args.fits, points=args.points,
                           repeats=args.repeats, rows=rows), f, indent=1, default=float)


if __name__ == "__main__":
    main()
