#!/usr/bin/env python3
"""Least-squares fits of one large data set: cudamin against NLSQ, optimistix and torch.

The GPU fit cases of issue 65, beside benches/gpu_peers.py's minimization cases. Each case is a
model fitted to `points` data points from one start by every tool, in one process; the tools
alternate within each repetition (A, B, C, then A, B, C again), after one untimed round, and the
table gives the median solve time. For every row the cost ½Σr² and the true ‖∇cost‖∞ = ‖Jᵀr‖∞ at the tool's answer are
recomputed here in float64 numpy, with the model's analytic Jacobian, independently of the tool.

The cases: expsin (p = 16), exp-decay (p = 4, two exponentials) and gauss-peaks (p = 13, four
peaks on a baseline), at 10⁶ and 10⁷ points. The tools:
- `cudamin fit` (the CLI; Levenberg–Marquardt with exact Jacobian rows): the report's
  `elapsed_s`, the solve alone, as reading the file is not timed for the others either; and
  again with `--data-dtype f32`, the table stored as f32 (half the bytes a pass reads);
- `cudamin.curve_fit` from Python on one `Session` opened before timing (x and y are numpy
  arrays, uploaded by each call);
- NLSQ's `curve_fit` (JAX; scipy's signature) through one `CurveFit` object, which keeps what
  its first call compiled; that first call is reported apart;
- optimistix `LevenbergMarquardt` on the residuals and `BFGS` on the cost, jitted, likewise;
- `torch.optim.LBFGS` on the cost (autograd, strong Wolfe), on the device's tensors.
A tool whose package is missing is reported as skipped, with the reason.

On a GPU machine (NLSQ needs Python ≥ 3.12):
    ~/.pyenv/versions/3.12.1/bin/python -m venv target/fit-peers-venv
    target/fit-peers-venv/bin/pip install numpy scipy "jax[cuda12]" optimistix nlsq torch
    PYTHONPATH=python target/fit-peers-venv/bin/python benches/gpu_fit_peers.py \\
        --cudamin target/release/cudamin
Offline, on the CPU backends at a small size:
    PYTHONPATH=python target/fit-peers-venv/bin/python benches/gpu_fit_peers.py \\
        --cudamin target/release/cudamin --device cpu --points 20000 --repeats 1
"""

import argparse
import importlib
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fit_peers import (expsin_jacobian, expsin_model, optimistix_runner,  # noqa: E402
                       peaks_jacobian, peaks_model, timed)

POINTS = (10**6, 10**7)
REPEATS = 3
MAX_STEPS = 1000  # every tool's cap on iterations (or steps)
TOL = 1e-8  # ftol / xtol / gtol, scipy's least_squares defaults, where a tool takes them


def decay_model(theta, x):
    out = np.zeros_like(x)
    for a, b in np.reshape(theta, (-1, 2)):
        out += a * np.exp(-b * x)
    return out


def decay_jacobian(theta, x):
    jac = np.empty((x.size, len(theta)))
    for i in range(0, len(theta), 2):
        e = np.exp(-theta[i + 1] * x)
        jac[:, i], jac[:, i + 1] = e, -theta[i] * x * e
    return jac


def model_source(name, xp):
    """The model as a function of (theta, x) in the array module `xp` (jax.numpy, torch)."""
    if name == "expsin":
        def model(theta, x):
            out = theta[0] * xp.exp(-theta[1] * x)
            for k in range(2, theta.shape[0]):
                out = out + theta[k] * xp.sin(k * x)
            return out
    elif name == "exp-decay":
        def model(theta, x):
            out = 0.0
            for i in range(0, theta.shape[0], 2):
                out = out + theta[i] * xp.exp(-theta[i + 1] * x)
            return out
    else:
        def model(theta, x):
            out = theta[0]
            for i in range(1, theta.shape[0], 3):
                out = out + theta[i] * xp.exp(-0.5 * ((x - theta[i + 1]) / theta[i + 2]) ** 2)
            return out
    return model


def cases(points):
    """(name, x, y, p0, numpy model, numpy Jacobian): each data set from its own seed."""
    rng = np.random.default_rng(65)
    x = np.linspace(0.0, 8.0, points)
    truth = np.concatenate([[2.0, 0.7], 0.5 / np.arange(1.0, 15.0)])
    yield "expsin", x, expsin_model(truth, x) + 0.05 * rng.standard_normal(points), np.ones(16), \
        expsin_model, expsin_jacobian
    x = np.linspace(0.0, 10.0, points)
    truth = np.array([3.0, 0.5, 1.5, 3.0])
    yield "exp-decay", x, decay_model(truth, x) + 0.02 * rng.standard_normal(points), \
        np.array([2.0, 0.3, 1.0, 2.0]), decay_model, decay_jacobian
    truth = np.array([0.5, 2.0, 2.0, 0.4, 1.5, 4.0, 0.6, 0.8, 6.0, 0.3, 1.2, 8.0, 0.5])
    p0 = np.array([0.4, 1.8, 2.1, 0.5, 1.4, 3.9, 0.7, 0.7, 6.1, 0.35, 1.1, 7.9, 0.45])
    yield "gauss-peaks", x, peaks_model(truth, x) + 0.05 * rng.standard_normal(points), p0, \
        peaks_model, peaks_jacobian


def check(theta, x, y, model, jacobian, chunk=1 << 20):
    """(½Σr², ‖Jᵀr‖∞) at theta, in float64 numpy, chunk by chunk; r = model − y."""
    theta = np.asarray(theta, dtype=np.float64)
    cost, grad = 0.0, np.zeros(theta.size)
    for s in range(0, x.size, chunk):
        xs, r = x[s:s + chunk], model(theta, x[s:s + chunk]) - y[s:s + chunk]
        cost += 0.5 * float(r @ r)
        grad += jacobian(theta, xs).T @ r
    return cost, float(np.max(np.abs(grad)))


class Skip(Exception):
    """A tool that cannot run here: its package is missing, or the device is not there."""


def need(name):
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise Skip(f"{name} missing: {e}")


def cudamin_cli(args, name, path, p0, data_dtype="f64"):
    def run():
        out = subprocess.run(
            [args.cudamin, "fit", path, "--model", name, "--params", str(p0.size), "--p0",
             ",".join(repr(float(v)) for v in p0), "--backend", args.device, "--json",
             "--no-natural-bounds", "--data-dtype", data_dtype], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.strip()[-400:])
        report = json.loads(out.stdout)
        return report["elapsed_s"], report["x"], report["nfev"], report["status"]
    run()  # warm-up: the page cache holds the file
    return run, ""


def cudamin_python(args, name, x, y, p0):
    need("cudamin")
    import cudamin
    session = cudamin.Session(backend=args.device)
    with warnings.catch_warnings():  # a small fit's covariance may be singular
        warnings.simplefilter("ignore")
        session.curve_fit(name, x[:1000], y[:1000], p0=p0)  # loads the kernels

    def run():
        seconds, (popt, _, info, _, ier) = timed(lambda: session.curve_fit(
            name, x, y, p0=p0, full_output=True, ftol=TOL, xtol=TOL, gtol=TOL))
        return seconds, popt, info["nfev"], ier
    return run, f"backend {session.backend}"


def jax_setup(args):
    jax = need("jax")
    jax.config.update("jax_enable_x64", True)
    if args.device == "cuda" and jax.default_backend() != "gpu":
        raise Skip(f"jax has no GPU backend (default: {jax.default_backend()})")
    return jax, importlib.import_module("jax.numpy")


def nlsq_tool(args, name, x, y, p0):
    jax, jnp = jax_setup(args)
    nlsq = need("nlsq")
    logging.disable(logging.WARNING - 1)  # it logs every iteration, at levels of its own
    model = model_source(name, jnp)
    xj, yj = jnp.asarray(x), jnp.asarray(y)

    def f(t, *theta):  # one function for every call, so that JAX compiles it once
        return model(jnp.stack(theta), t)

    fitter = nlsq.CurveFit()  # NLSQ's way to reuse what a first call compiled

    def fit():
        popt, _ = fitter.curve_fit(f, xj, yj, p0=p0, ftol=TOL, xtol=TOL, gtol=TOL,
                                   max_nfev=MAX_STEPS)
        return np.asarray(popt)
    compile_s, _ = timed(fit)

    def run():
        seconds, popt = timed(fit)
        return seconds, popt, "", ""
    return run, f"first call {compile_s:.2f} s"


def optimistix_tool(args, name, x, y, p0, solver_name):
    jax, jnp = jax_setup(args)
    optx = need("optimistix")
    model = model_source(name, jnp)
    xj, yj = jnp.asarray(x), jnp.asarray(y)
    if solver_name == "LevenbergMarquardt":
        solver = optx.LevenbergMarquardt(rtol=TOL, atol=TOL)
        solve = jax.jit(lambda t: (lambda s: (s.value, s.stats["num_steps"]))(optx.least_squares(
            lambda theta, _: model(theta, xj) - yj, solver, t, max_steps=MAX_STEPS, throw=False)))
    else:
        solver = optx.BFGS(rtol=TOL, atol=TOL)
        solve = jax.jit(lambda t: (lambda s: (s.value, s.stats["num_steps"]))(optx.minimise(
            lambda theta, _: 0.5 * jnp.sum((model(theta, xj) - yj) ** 2), solver, t,
            max_steps=MAX_STEPS, throw=False)))
    timed_solve, compile_s = optimistix_runner(solve, p0)

    def run():
        seconds, (value, steps) = timed_solve()
        return seconds, value, steps, ""
    return run, f"first call {compile_s:.2f} s"


def torch_tool(args, name, x, y, p0):
    torch = need("torch")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise Skip("torch sees no CUDA device")
    model = model_source(name, torch)
    xt, yt = (torch.from_numpy(a).to(args.device) for a in (x, y))
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)

    def run():
        sync()
        start = time.perf_counter()
        theta, calls = torch.from_numpy(p0.copy()).to(args.device).requires_grad_(True), [0]
        opt = torch.optim.LBFGS([theta], lr=1, max_iter=MAX_STEPS, max_eval=MAX_STEPS * 5 // 4,
                                tolerance_grad=TOL, tolerance_change=1e-30, history_size=10,
                                line_search_fn="strong_wolfe")

        def closure():
            calls[0] += 1
            opt.zero_grad()
            loss = 0.5 * torch.sum((model(theta, xt) - yt) ** 2)
            loss.backward()
            return loss
        opt.step(closure)
        sync()
        return time.perf_counter() - start, theta.detach().cpu().numpy(), calls[0], ""
    run()  # warm-up: kernels, allocator
    return run, ""


def tools(args, name, path, x, y, p0):
    """(label, factory): each factory makes the tool's timed call and a note, or raises Skip."""
    return [
        ("cudamin fit (CLI, LM, exact Jacobian)", lambda: cudamin_cli(args, name, path, p0)),
        ("cudamin fit (CLI, LM, f32 data)", lambda: cudamin_cli(args, name, path, p0, "f32")),
        ("cudamin.curve_fit (Python, one session)", lambda: cudamin_python(args, name, x, y, p0)),
        ("NLSQ curve_fit", lambda: nlsq_tool(args, name, x, y, p0)),
        ("optimistix LevenbergMarquardt",
         lambda: optimistix_tool(args, name, x, y, p0, "LevenbergMarquardt")),
        ("optimistix BFGS", lambda: optimistix_tool(args, name, x, y, p0, "BFGS")),
        ("torch.optim.LBFGS (autograd)", lambda: torch_tool(args, name, x, y, p0)),
    ]


def one_case(args, tmp, points, name, x, y, p0, model, jacobian):
    path = os.path.join(tmp, f"{name}.npz")
    np.savez(path, x=x, y=y)
    runners, skipped = {}, {}
    for label, factory in tools(args, name, path, x, y, p0):
        try:
            runners[label] = factory()
        except Skip as e:
            skipped[label] = str(e)
        except Exception as e:  # a tool that fails to start is reported, not fatal
            skipped[label] = f"failed: {e.__class__.__name__}: {e}"
            traceback.print_exc()
    times = {label: [] for label in runners}
    last = {}
    # One untimed round first: a JAX tool may compile again once the others have compiled.
    for repeat in range(args.repeats + 1):
        for label, (run, _) in runners.items():
            try:
                seconds, theta, nfev, status = run()
            except Exception as e:
                skipped[label] = f"failed: {e.__class__.__name__}: {e}"
                continue
            if repeat > 0:
                times[label].append(seconds)
            last[label] = (theta, nfev, status)
    rows = []
    for label, _ in tools(args, name, path, x, y, p0):
        if label in skipped or not times.get(label):
            rows.append(dict(tool=label, skipped=skipped.get(label, "no run")))
            continue
        theta, nfev, status = last[label]
        cost, grad = check(theta, x, y, model, jacobian)
        rows.append(dict(tool=label, seconds=statistics.median(times[label]), nfev=nfev,
                         status=status, cost=cost, grad_inf=grad, note=runners[label][1]))
    return dict(case=name, p=p0.size, points=points, rows=rows)


def table(result):
    lines = [f"### {result['case']}, p = {result['p']}, {result['points']:,} points", "",
             "| tool | solve s | tool / cudamin CLI | nfev (optimistix: steps) | status | ½Σr² "
             "| true ‖Jᵀr‖∞ | note |", "|---|---|---|---|---|---|---|---|"]
    base = next((r["seconds"] for r in result["rows"] if "seconds" in r and "CLI" in r["tool"]), None)
    for r in result["rows"]:
        if "skipped" in r:
            lines.append(f"| {r['tool']} | skipped | | | | | | {r['skipped'][:120]} |")
            continue
        ratio = f"{r['seconds'] / base:.2f}" if base else ""
        lines.append(f"| {r['tool']} | {r['seconds']:.4f} | {ratio} | {r['nfev']} | {r['status']} "
                     f"| {r['cost']:.10e} | {r['grad_inf']:.2e} | {r['note']} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cudamin", default="target/release/cudamin")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--points", type=int, nargs="+", default=list(POINTS))
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--only", nargs="+", default=["expsin", "exp-decay", "gauss-peaks"])
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    args.cudamin = os.path.abspath(args.cudamin)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for points in args.points:
            for name, x, y, p0, model, jacobian in cases(points):
                if name not in args.only:
                    continue
                result = one_case(args, tmp, points, name, x, y, p0, model, jacobian)
                print(table(result), flush=True)
                results.append(result)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(device=args.device, repeats=args.repeats, results=results), f, indent=1,
                      default=float)


if __name__ == "__main__":
    main()
