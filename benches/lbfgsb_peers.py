#!/usr/bin/env python3
"""L-BFGS-B at n = 10⁶, side by side: scipy's `minimize(method='L-BFGS-B')` with an analytic
numpy gradient and jaxopt's `LBFGSB` (jit-compiled, autodiff gradient) against `cudamin solve
PROBLEM --method lbfgsb`, bounded and not; and, unbounded, torch's `optim.LBFGS` (autograd, strong
Wolfe) against `cudamin solve PROBLEM --method lbfgs`.

The problems are the CLI's own, written again for each peer (float64 everywhere):
- seed-expsum: f = Σ x² + eˣ, x0 = 0.5; bounded: every x ≤ −0.4 (the minimum, −0.3517 per
  variable, lies outside, so every bound is active at the answer), and every third x ≤ −0.4
  (`third`: a third of the bounds active at the answer, the rest unbounded);
- ext-rosenbrock: f = Σ 100(x₂ₖ₊₁ − x₂ₖ²)² + (1 − x₂ₖ)², x0 = (−1.2, 1, …); bounded: every
  x ≤ 0.9 (the answer has x₂ₖ = 0.9 at its bound and x₂ₖ₊₁ = 0.81 free: half active).
Options at scipy's defaults (maxcor/history 10, pgtol 1e-5, factr 1e7): jaxopt's `tol` is the
same projected-gradient ∞-norm as scipy's pgtol (it has no factr rule); torch's
`tolerance_grad` is max|g| ≤ 1e-5, its `tolerance_change` 1e-30 so that only a stalled search
ends it otherwise. cudamin's time is its report's `elapsed_s` (the solve alone, a fresh
process); a peer's is its solve call's wall time, after one untimed warm-up solve (jaxopt's
compilation, torch's allocator). A box of one bound per variable (`third`) is a million numbers,
more than a command line holds: cudamin then runs in this process through its Python package
(`cudamin.minimize`, the wheel built into this venv by `maturin develop --release -m
python/Cargo.toml`), timed as the peers are, with the CLI's defaults. Unbounded, L-BFGS also
runs so, next to the CLI (`cudamin lbfgs, in process`): a solve after a warm-up in the same
process, as torch's is timed, where the CLI's fresh process first touches every page of its
vectors (at n = 10⁶ about 17 vectors of 8 MB). The tools alternate within each repetition;
times are medians. "× cudamin" divides by the CLI's row of the same method family (L-BFGS-B
or L-BFGS), "× in process" by the in-process row where the family has one.

The venv needs numpy, scipy, torch, jax and jaxopt (the runs in BENCHMARKS.md's L-BFGS and
L-BFGS-B sections had jax/jaxlib 0.10.2 and jaxopt 0.8.5 added to poisson_peers.py's venv):

    target/poisson-peers-venv/bin/pip install jax jaxopt
    target/poisson-peers-venv/bin/python benches/lbfgsb_peers.py [--n N] [--repeat R] [--cases 0,2]
"""

import argparse
import json
import statistics
import subprocess
import time

import numpy as np
from scipy.optimize import Bounds, minimize

GTOL = 1e-5
MAXITER = 15000


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


def value_only(name, xp):
    """The problem's f alone, in the array module `xp` (jax.numpy or torch), for autodiff."""
    if name == "seed-expsum":
        return lambda x: xp.sum(x * x + xp.exp(x))
    return lambda x: xp.sum(100.0 * (x[1::2] - x[0::2] ** 2) ** 2 + (1.0 - x[0::2]) ** 2)


def every_third(n):
    """−0.4 on every third variable (0, 3, 6, …), no bound on the others."""
    upper = np.full(n, np.inf)
    upper[::3] = -0.4
    return upper


CASES = [
    ("seed-expsum", seed_expsum, lambda n: np.full(n, 0.5), None),
    ("seed-expsum", seed_expsum, lambda n: np.full(n, 0.5), -0.4),
    ("seed-expsum", seed_expsum, lambda n: np.full(n, 0.5), every_third),
    ("ext-rosenbrock", ext_rosenbrock, lambda n: np.tile([-1.2, 1.0], n // 2), None),
    ("ext-rosenbrock", ext_rosenbrock, lambda n: np.tile([-1.2, 1.0], n // 2), 0.9),
]


def active(x, upper):
    return 0 if upper is None else int(np.sum(np.asarray(x) >= upper))


def upper_bounds(upper, n):
    """The upper bounds as n values (None without bounds)."""
    if upper is None:
        return None
    return upper(n) if callable(upper) else np.full(n, upper)


def scipy_tool(name, fun, x0, upper):
    bounds = None if upper is None else Bounds(-np.inf, upper)

    def run():
        clock = time.perf_counter()
        r = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds)
        return time.perf_counter() - clock, (r.nit, r.nfev, r.fun, active(r.x, upper))
    return run


def jaxopt_tool(name, fun, x0, upper):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jaxopt
    solver = jaxopt.LBFGSB(fun=value_only(name, jnp), maxiter=MAXITER, tol=GTOL, history_size=10)
    bounds = (jnp.full(x0.size, -jnp.inf), jnp.full(x0.size, jnp.inf) if upper is None else jnp.asarray(upper))
    start = jnp.asarray(x0)
    # One compiled program for the whole solve: `run` alone traces it again at every call.
    compiled = jax.jit(lambda x, lower, upper: solver.run(x, bounds=(lower, upper)))

    def solve():
        params, state = compiled(start, *bounds)
        params.block_until_ready()
        return params, state
    solve()  # compiles

    def run():
        clock = time.perf_counter()
        params, state = solve()
        elapsed = time.perf_counter() - clock
        return elapsed, (int(state.iter_num), int(state.num_fun_eval), float(state.value),
                         active(params, upper))
    return run


def torch_tool(name, fun, x0, upper):
    import torch
    from gpu_peers import torch_lbfgs
    f = value_only(name, torch)
    start = torch.from_numpy(x0)
    torch_lbfgs(torch, f, start, MAXITER)  # warms the allocator

    def run():
        clock = time.perf_counter()
        x, nit, nfev = torch_lbfgs(torch, f, start, MAXITER)
        elapsed = time.perf_counter() - clock
        with torch.no_grad():
            return elapsed, (nit, nfev, float(f(x)), 0)
    return run


def cudamin_tool(binary, method):
    def make(name, fun, x0, upper):
        if upper is not None and np.unique(upper).size > 1:
            return python_package_tool(name, x0, upper)
        command = [binary, "solve", name, "--n", str(x0.size), "--method", method, "--json"]
        command += [] if upper is None else ["--upper", repr(float(upper[0]))]

        def run():
            report = json.loads(subprocess.run(command, check=True, capture_output=True,
                                               text=True).stdout)
            mask = report.get("active_mask") or []
            return report["elapsed_s"], (report["nit"], report["nfev"], report["fun"],
                                         sum(1 for m in mask if m))
        return run
    return make


def python_package_tool(name, x0, upper, method="L-BFGS-B"):
    """cudamin's L-BFGS-B (or `method`) through its Python package, in this process."""
    import cudamin
    bounds = None if upper is None else Bounds(-np.inf, upper)

    def solve():
        return cudamin.minimize(name, x0, method=method, bounds=bounds)
    solve()  # as the peers: one untimed solve first

    def run():
        clock = time.perf_counter()
        r = solve()
        return time.perf_counter() - clock, (r.nit, r.nfev, r.fun, active(r.x, upper))
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cudamin", default="target/release/cudamin")
    ap.add_argument("--cases", default=",".join(map(str, range(len(CASES)))),
                    help="which of CASES to run, by 0-based index (comma-separated)")
    args = ap.parse_args()
    # (tool, method family, factory); the unbounded-only ones last.
    bounded_tools = [("scipy L-BFGS-B", "lbfgsb", scipy_tool),
                     ("jaxopt LBFGSB", "lbfgsb", jaxopt_tool),
                     ("cudamin lbfgsb", "lbfgsb", cudamin_tool(args.cudamin, "lbfgsb"))]
    in_process = "cudamin lbfgs, in process"
    unbounded_tools = [("torch LBFGS", "lbfgs", torch_tool),
                       ("cudamin lbfgs", "lbfgs", cudamin_tool(args.cudamin, "lbfgs")),
                       (in_process, "lbfgs",
                        lambda name, fun, x0, upper: python_package_tool(name, x0, upper,
                                                                         "L-BFGS"))]
    print("| problem | upper bound | tool | time (s) | × cudamin | × in process | nit | nfev | f "
          "| active |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, fun, start, bound in (CASES[int(i)] for i in args.cases.split(",")):
        x0 = start(args.n)
        upper = upper_bounds(bound, args.n)
        tools = bounded_tools + (unbounded_tools if upper is None else [])
        runs = [(tool, family, factory(name, fun, x0, upper)) for tool, family, factory in tools]
        times = {tool: [] for tool, _, _ in runs}
        rows = {}
        for _ in range(args.repeat):
            for tool, _, run in runs:
                elapsed, rows[tool] = run()
                times[tool].append(elapsed)
        ours = {family: statistics.median(times[tool]) for tool, family, _ in runs
                if tool in ("cudamin lbfgsb", "cudamin lbfgs")}
        warm = {family: statistics.median(times[tool]) for tool, family, _ in runs
                if tool == in_process}
        for tool, family, _ in runs:
            t = statistics.median(times[tool])
            nit, nfev, f, hits = rows[tool]
            shown = getattr(bound, "__name__", bound)
            over_warm = f"{t / warm[family]:.2f}" if family in warm else "—"
            print(f"| {name} | {shown} | {tool} | {t:.3f} | {t / ours[family]:.2f} | {over_warm} "
                  f"| {nit} | {nfev} | {f:.10g} | {hits} |", flush=True)


if __name__ == "__main__":
    main()
