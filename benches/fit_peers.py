#!/usr/bin/env python3
"""`cudamin fit` against the fits a scipy or JAX user would run instead, side by side on the CPU.

Each case fits one data set (generated here, written to a .npz that `cudamin fit` reads) from
the same start with every tool; tools alternate within each repetition and the table gives the
median time. Every tool's sum of squares at its answer is recomputed here with numpy, so the
rows can be compared.

    python3 -m venv target/cpu-peers-venv
    target/cpu-peers-venv/bin/pip install numpy scipy jax optimistix
    cargo build --release
    target/cpu-peers-venv/bin/python benches/fit_peers.py --cudamin target/release/cudamin

Times: the solve only. scipy: the `curve_fit` call (MINPACK's lmdif with its forward
differences, or lmder with the analytic Jacobian written below). optimistix: the jitted
`least_squares` call after a first call that compiles it (reported apart). cudamin: the
report's `elapsed_s` (Levenberg–Marquardt with exact Jacobian rows, the default; reading the
file is not timed, as the Python side does not time loading either).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time

import numpy as np

POINTS = 1_000_000
REPEATS = 3



def unbounded_flag(binary):
    """`--no-natural-bounds` where `binary` knows it: curve_fit fits without bounds (lm), and so
    must cudamin here, rather than with a model's natural bounds (trf)."""
    help_text = subprocess.run([binary, "fit", "--help"], capture_output=True, text=True).stdout
    return ["--no-natural-bounds"] if "--no-natural-bounds" in help_text else []

def peaks_model(theta, x):
    out = np.full_like(x, theta[0])
    for a, mu, s in np.reshape(theta[1:], (-1, 3)):
        out += a * np.exp(-0.5 * ((x - mu) / s) ** 2)
    return out


def peaks_jacobian(theta, x):
    jac = np.empty((x.size, len(theta)))
    jac[:, 0] = 1.0
    for i in range(1, len(theta), 3):
        a, mu, s = theta[i:i + 3]
        u = (x - mu) / s
        e = np.exp(-0.5 * u * u)
        jac[:, i], jac[:, i + 1], jac[:, i + 2] = e, a * e * u / s, a * e * u * u / s
    return jac


def expsin_model(theta, x):
    return theta[0] * np.exp(-theta[1] * x) + sum(
        theta[k] * np.sin(k * x) for k in range(2, len(theta)))


def expsin_jacobian(theta, x):
    jac = np.empty((x.size, len(theta)))
    e = np.exp(-theta[1] * x)
    jac[:, 0], jac[:, 1] = e, -theta[0] * x * e
    for k in range(2, len(theta)):
        jac[:, k] = np.sin(k * x)
    return jac


def jax_model(name):
    import jax.numpy as jnp

    if name == "gauss-peaks":
        def model(theta, x):
            out = theta[0]
            for i in range(1, theta.shape[0], 3):
                out = out + theta[i] * jnp.exp(-0.5 * ((x - theta[i + 1]) / theta[i + 2]) ** 2)
            return out
    else:
        def model(theta, x):
            out = theta[0] * jnp.exp(-theta[1] * x)
            for k in range(2, theta.shape[0]):
                out = out + theta[k] * jnp.sin(k * x)
            return out
    return model


def cases(points):
    rng = np.random.default_rng(7)
    x = np.linspace(0.0, 10.0, points)
    truth = np.array([0.5, 2.0, 3.0, 0.4, 1.5, 6.0, 0.8, 1.0, 8.0, 0.3])
    p0 = np.array([0.4, 1.8, 2.9, 0.5, 1.4, 6.1, 0.7, 0.9, 7.9, 0.35])
    yield ("gauss-peaks", 10, x, peaks_model(truth, x) + 0.05 * rng.standard_normal(points), p0,
           peaks_model, peaks_jacobian)
    truth = np.concatenate([[2.0, 0.7], 0.5 / np.arange(1.0, 15.0)])
    x = np.linspace(0.0, 8.0, points)
    yield ("expsin", 16, x, expsin_model(truth, x) + 0.05 * rng.standard_normal(points),
           np.ones(16), expsin_model, expsin_jacobian)


def timed(run):
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def optimistix_runner(solve, p0):
    """A jitted optimistix solve, `solve(theta0) -> (value, steps)`, from p0 as a timed call:
    `(run, seconds of the first call, which compiles)`; `run()` gives `(seconds, (value, steps))`."""
    import jax.numpy as jnp

    compile_s, _ = timed(lambda: solve(jnp.asarray(p0))[0].block_until_ready())

    def call():
        value, steps = solve(jnp.asarray(p0))
        return np.asarray(value.block_until_ready()), int(steps)
    return (lambda: timed(call)), compile_s


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cudamin", default="target/release/cudamin")
    parser.add_argument("--points", type=int, default=POINTS)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()

    from scipy.optimize import curve_fit
    import jax
    import optimistix as optx

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    print(f"fits on the CPU, {args.points} points, median of {args.repeats}; "
          f"{platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}\n")
    with tempfile.TemporaryDirectory() as tmp:
        for name, p, x, y, p0, model, jacobian in cases(args.points):
            path = os.path.join(tmp, f"{name}.npz")
            np.savez(path, x=x, y=y)
            model_jax = jax_model(name)
            xj, yj = jnp.asarray(x), jnp.asarray(y)

            def residuals(theta, _):
                return yj - model_jax(theta, xj)

            def rss(theta):
                r = y - model(np.asarray(theta), x)
                return float(r @ r)

            tools = {}

            def cudamin():
                out = subprocess.run(
                    [args.cudamin, "fit", path, "--model", name, "--params", str(p), "--p0",
                     ",".join(repr(float(v)) for v in p0), "--json"]
                    + unbounded_flag(args.cudamin),
                    check=True, capture_output=True, text=True)
                report = json.loads(out.stdout)
                return report["elapsed_s"], (report["x"], report["nfev"], report["njev"],
                                             report["status"])

            def scipy(jac):
                extra = {"jac": lambda x, *t: jacobian(np.array(t), x)} if jac else {}

                def run():
                    seconds, (popt, _, info, _, ier) = timed(lambda: curve_fit(
                        lambda x, *t: model(np.array(t), x), x, y, p0=p0, full_output=True,
                        **extra))
                    return seconds, (popt, info["nfev"], info.get("njev", ""), ier)
                return run

            def optimistix(solver):
                solve = jax.jit(lambda t: (lambda s: (s.value, s.stats["num_steps"]))(
                    optx.least_squares(residuals, solver, t, max_steps=1000, throw=False)))
                timed_solve, compile_s = optimistix_runner(solve, p0)

                def run():
                    seconds, (value, steps) = timed_solve()
                    return seconds, (value, steps, "", "")
                return run, compile_s

            runners = {
                "cudamin fit (LM, exact Jacobian)": cudamin,
                "scipy curve_fit (forward differences)": scipy(False),
                "scipy curve_fit (analytic Jacobian)": scipy(True),
            }
            compile_notes = []
            for label, solver in [
                ("optimistix LevenbergMarquardt (autodiff)",
                 optx.LevenbergMarquardt(rtol=1e-8, atol=1e-8)),
                ("optimistix GaussNewton (autodiff)", optx.GaussNewton(rtol=1e-8, atol=1e-8)),
            ]:
                run, compile_s = optimistix(solver)
                runners[label] = run
                compile_notes.append(f"{label}: first call (compile) {compile_s:.2f} s")
            for _ in range(args.repeats):
                for label, run in runners.items():
                    seconds, out = run()
                    tools.setdefault(label, []).append((seconds, out))
            print(f"### {name}, p = {p}\n")
            print("| tool | time (s) | tool / cudamin | nfev (optimistix: steps) | njev | status "
                  "| Σr² |")
            print("|---|---|---|---|---|---|---|")
            base = statistics.median(s for s, _ in tools["cudamin fit (LM, exact Jacobian)"])
            for label, runs in tools.items():
                seconds = statistics.median(s for s, _ in runs)
                theta, nfev, njev, status = runs[-1][1]
                print(f"| {label} | {seconds:.3f} | {seconds / base:.2f} | {nfev} | {njev} | "
                      f"{status} | {rss(theta):.10e} |")
            print()
            for note in compile_notes:
                print(f"- {note}")
            print()


if __name__ == "__main__":
    main()
