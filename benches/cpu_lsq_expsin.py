#!/usr/bin/env python3
"""lsq-expsin (p = 16) on the CPU: cudamin against scipy and optimistix, side by side.

The dense data fit of issue 9. Every tool fits the same data (cudamin's generator, reproduced
in gpu_peers.lsq_data and checked there) from θ = 0.5, with gtol 1e-5 in the ∞-norm. Tools
alternate within each repetition; the table gives the median time. For every row, the true
‖∇f‖∞ at the tool's final θ is recomputed here with an analytic numpy gradient, independently
of the tool.

    python3 -m venv target/cpu-peers-venv
    target/cpu-peers-venv/bin/pip install numpy scipy jax optimistix
    cargo build --release
    target/cpu-peers-venv/bin/python benches/cpu_lsq_expsin.py --cudamin target/release/cudamin

Times: scipy and optimistix from the call into the solver to its return (optimistix's JIT
compile is the first call, reported apart); cudamin's `elapsed_s` (the solve, not the data
generation, which the Python side does not time either).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_peers import LSQ_P, lsq_data  # noqa: E402  (the data generator, shared)

GTOL = 1e-5


def numpy_objective(t, y, basis):
    def f(th):
        r = y - th[0] * np.exp(-th[1] * t) - th[2:] @ basis
        return float(r @ r)

    def grad(th):
        e = np.exp(-th[1] * t)
        r = y - th[0] * e - th[2:] @ basis
        return np.concatenate([[-2.0 * (r @ e), 2.0 * th[0] * ((r * t) @ e)], -2.0 * (basis @ r)])

    return f, grad


def scipy_tool(method, f, grad, x0):
    from scipy.optimize import minimize

    # L-BFGS-B also stops on a relative decrease of f (ftol); 1e-15 leaves it to gtol.
    options = dict(gtol=GTOL, maxiter=5000) | (dict(ftol=1e-15) if method == "L-BFGS-B" else {})

    def run():
        start = time.perf_counter()
        res = minimize(f, x0, jac=grad, method=method, options=options)
        return dict(seconds=time.perf_counter() - start, x=res.x, nit=res.nit, nfev=res.nfev,
                    njev=res.njev, status=int(res.status))
    return f"scipy {method}, analytic gradient", run


def optimistix_tool(t, y, basis, x0):
    try:
        import jax
        import jax.numpy as jnp
        import optimistix as optx
    except ImportError as e:
        return None, f"optimistix skipped: {e}"
    jax.config.update("jax_enable_x64", True)
    data = tuple(jnp.asarray(a) for a in (t, y, basis))

    def fn(th, args):
        t, y, basis = args
        r = y - th[0] * jnp.exp(-th[1] * t) - th[2:] @ basis
        return r @ r

    # optimistix stops on ‖Δf‖ and ‖Δθ‖ (Cauchy); tight rtol/atol leave the work to the solver's
    # own test, and the true ‖∇f‖∞ below says where it stopped.
    solver = optx.LBFGS(rtol=1e-12, atol=1e-12)
    @jax.jit
    def solve(th0):
        sol = optx.minimise(fn, solver, th0, args=data, max_steps=5000, throw=False)
        return sol.value, sol.stats["num_steps"], sol.result == optx.RESULTS.successful

    start = time.perf_counter()
    jax.block_until_ready(solve(jnp.asarray(x0)))
    compile_s = time.perf_counter() - start

    def run():
        start = time.perf_counter()
        th, steps, successful = jax.block_until_ready(solve(jnp.asarray(x0)))
        return dict(seconds=time.perf_counter() - start, x=np.asarray(th), nit=int(steps),
                    nfev=None, njev=None, status=0 if successful else "failed")
    return ("optimistix L-BFGS, autodiff", run), f"optimistix JIT compile + first solve: {compile_s:.2f} s"


def cudamin_tool(binary, points, method, grad):
    def run():
        out = subprocess.run([binary, "solve", "lsq-expsin", "--n", str(LSQ_P), "--points", str(points),
                              "--method", method, "--grad", grad, "--json"],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)
        return dict(seconds=r["elapsed_s"], x=np.array(r["x"]), nit=r["nit"], nfev=r["nfev"],
                    njev=r["njev"], status=r["status"])
    return f"cudamin {method}, {grad}", run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cudamin", required=True)
    ap.add_argument("--points", type=int, default=10**6)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    t, y, basis = lsq_data(LSQ_P, args.points)
    f, grad = numpy_objective(t, y, basis)
    x0 = np.full(LSQ_P, 0.5)
    tools = [scipy_tool("BFGS", f, grad, x0), scipy_tool("L-BFGS-B", f, grad, x0)]
    optx_tool, optx_note = optimistix_tool(t, y, basis, x0)
    tools += [optx_tool] if optx_tool else []
    binary = os.path.abspath(args.cudamin)
    tools += [cudamin_tool(binary, args.points, m, g)
              for m in ("bfgs", "lbfgs") for g in ("exact", "forward", "central")]
    runs = {name: [] for name, _ in tools}
    for _ in range(args.repeat):
        for name, run in tools:  # alternating: every tool once per repetition
            runs[name].append(run())
    reference = statistics.median(r["seconds"] for r in runs["scipy L-BFGS-B, analytic gradient"])
    print(f"lsq-expsin p={LSQ_P}, {args.points} points, gtol {GTOL:g} (∞-norm), CPU, "
          f"median of {args.repeat}; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, numpy {np.__version__}")
    print(optx_note)
    print("\n| tool | time (s) | scipy L-BFGS-B / tool | nit | nfev | njev | status | f | true ‖∇f‖∞ |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, rs in runs.items():
        last, seconds = rs[-1], statistics.median(r["seconds"] for r in rs)
        true_g = np.max(np.abs(grad(last["x"])))
        print(f"| {name} | {seconds:.3f} | {reference / seconds:.2f} | {last['nit']} | {last['nfev']} | "
              f"{last['njev']} | {last['status']} | {f(last['x']):.9e} | {true_g:.1e} |")


if __name__ == "__main__":
    main()
