#!/usr/bin/env python3
"""Penalized Poisson regression, side by side: scipy L-BFGS-B, torch.optim.LBFGS and cudamin.

All three minimize the same float64 objective over 33 parameters (an intercept and 32
features), from x0 = 0, on the same data:

    eta = th[0] + X @ th[1:]
    f(th) = sum(exp(eta) - y*eta) + 0.5*lam*sum(th[1:]**2)
    g[0] = sum(exp(eta) - y);  g[1:] = X.T @ (exp(eta) - y) + lam*th[1:]

The data (y, X as rows x 32, lam) come from cudamin's example,
`target/release/examples/poisson_regression POINTS --save FILE.npz`, written to a temporary
directory. The tools, alternated within each repetition (scipy, torch, cudamin, then again):

1. scipy.optimize.minimize(method="L-BFGS-B", jac=True), default options (maxcor 10,
   gtol 1e-5, ftol 2.22e-9 relative), with a vectorized numpy objective returning (f, g).
2. torch.optim.LBFGS in float64, gradient by autograd, one `step(closure)` with
   max_iter=ITER_CAP, history_size=10 (scipy's maxcor), line_search_fn="strong_wolfe",
   tolerance_grad=1e-5 (scipy's gtol: the same max-abs gradient test) and
   tolerance_change=1e-12. torch's tolerance_change is absolute (on the loss change and on the
   step), not scipy's relative ftol (stop when the drop is <= 2.22e-9·max(|f|, 1)); no absolute
   value matches that for every f and size, so it is set tiny: torch stops on the gradient test
   or once f no longer changes in float64, i.e. no earlier than scipy (the table's ‖∇f‖∞ shows
   the accuracy each reached). The tensors and the optimizer are built before the clock starts;
   nfev/njev count closure calls; torch gives no reason, so the status is inferred from its
   state. One untimed warm-up solve on 100 rows (and one numpy evaluation) precedes the runs.
3. cudamin's CLI, `cudamin solve poisson-regression --n 33 --points POINTS --method lbfgs
   --json`, which generates the same data, penalty and x0 itself; its time is its own
   "elapsed_s" (the solve alone, not the process's wall time). The script asserts that the
   CLI's "fun" equals the numpy f at the CLI's "x" (to 1e-9 relative): the data match.
4. The same with `--gtol` set to the ‖∇f‖∞ torch reached in that repetition and `--ftol 1e-30`:
   cudamin against torch at the same accuracy (rows 1 and 3 stop by the same ftol rule).

Every row's ‖∇f‖∞ is recomputed with the numpy gradient at that tool's final x. Times are
medians over the repetitions; "× cudamin" is the tool's time over cudamin's. The table goes
to stdout and to DIR/poisson_peers.md, every run to DIR/poisson_peers.json.

    python3 -m venv target/poisson-peers-venv
    target/poisson-peers-venv/bin/pip install numpy scipy torch
    cargo build --release --examples --bins
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE target/poisson-peers-venv/bin/python \\
        benches/poisson_peers.py [--points 1000000] [--repeat 3] [--out target/poisson-report]

(`env -u` because OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE, set on some machines for an old
OpenBLAS, slow a current numpy down.) `--quick` (20000 points, one repetition) tests the harness.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy
import torch
from scipy.optimize import minimize

PARAMETERS = 33
ITER_CAP = 15000  # scipy's default maxiter for L-BFGS-B
warnings.filterwarnings("ignore", message="CUDA initialization")  # a CPU run: no GPU wanted
TOOLS = ("scipy L-BFGS-B", "torch LBFGS", "cudamin lbfgs", "cudamin lbfgs, torch's ‖∇f‖∞")


def objective(th, y, X, lam):
    """f and its gradient, vectorized."""
    eta = th[0] + X @ th[1:]
    mu = np.exp(eta)
    r = mu - y
    g = np.empty_like(th)
    g[0] = r.sum()
    g[1:] = X.T @ r + lam * th[1:]
    return np.sum(mu - y * eta) + 0.5 * lam * th[1:] @ th[1:], g


def run_scipy(y, X, lam):
    start = time.perf_counter()
    res = minimize(objective, np.zeros(PARAMETERS), args=(y, X, lam), jac=True, method="L-BFGS-B")
    seconds = time.perf_counter() - start
    return dict(seconds=seconds, nit=int(res.nit), nfev=int(res.nfev), njev=int(res.njev),
                status=f"{res.status}: {res.message}", x=res.x)


def run_torch(y, X, lam):
    yt, Xt = torch.from_numpy(y), torch.from_numpy(X)
    th = torch.zeros(PARAMETERS, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([th], max_iter=ITER_CAP, history_size=10, tolerance_grad=1e-5,
                            tolerance_change=1e-12, line_search_fn="strong_wolfe")
    calls = 0

    def closure():
        nonlocal calls
        calls += 1
        opt.zero_grad()
        eta = th[0] + Xt @ th[1:]
        loss = torch.sum(torch.exp(eta) - yt * eta) + 0.5 * lam * torch.sum(th[1:] ** 2)
        loss.backward()
        return loss

    start = time.perf_counter()
    opt.step(closure)
    seconds = time.perf_counter() - start
    state = opt.state[th]  # empty if x0 already passed the gradient test
    x = th.detach().numpy().copy()
    # torch reports no reason; infer it from its own tests (gradient, caps, else the change tests).
    grad = np.abs(objective(x, y, X, lam)[1]).max()
    if state.get("n_iter", 0) >= ITER_CAP:
        why = "max_iter reached"
    elif state.get("func_evals", 1) >= opt.defaults["max_eval"]:
        why = "max_eval reached"
    elif grad <= 1e-5:
        why = "‖∇f‖∞ ≤ tolerance_grad"
    elif (state["d"] * state["t"]).abs().max() <= 1e-12:
        why = "step ≤ tolerance_change"
    else:  # also where g·d > −tolerance_change, which the state cannot tell apart
        why = "loss change < tolerance_change"
    return dict(seconds=seconds, nit=int(state.get("n_iter", 0)), nfev=calls, njev=calls,
                status=why, x=x)


def run_cudamin(binary, points, y, X, lam, gtol=None):
    """With `gtol`, to that ‖∇f‖∞ and without the ftol rule: the accuracy another tool reached."""
    args = [str(binary), "solve", "poisson-regression", "--n", str(PARAMETERS),
            "--points", str(points), "--method", "lbfgs", "--json"]
    if gtol is not None:
        args += ["--gtol", f"{gtol:.3g}", "--ftol", "1e-30"]  # the CLI takes no 0: no step meets 1e-30
    start = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    r = json.loads(out.stdout)
    x = np.array(r["x"])
    f = objective(x, y, X, lam)[0]
    assert abs(f - r["fun"]) <= 1e-9 * abs(f), f"cudamin's fun {r['fun']!r} != numpy f {f!r}"
    return dict(seconds=r["elapsed_s"], wall_s=wall, nit=r["nit"], nfev=r["nfev"], njev=r["njev"],
                status=f"{r['status']}: {r['message']}", backend=r["backend"], x=x)


def binaries(path):
    """The cudamin CLI and the poisson_regression example, from a release dir or the CLI path."""
    path = Path(path)
    root = path.parent if path.is_file() else path
    cli, example = root / "cudamin", root / "examples" / "poisson_regression"
    for b in (cli, example):
        if not b.is_file():
            sys.exit(f"missing {b}: run `cargo build --release --examples --bins` first")
    return cli, example


def load_data(example, points, tmp):
    npz = Path(tmp) / f"poisson_{points}.npz"
    out = subprocess.run([str(example), str(points), "--save", str(npz)],
                         capture_output=True, text=True, check=True)
    with np.load(npz) as d:
        y, X, lam = d["y"], np.ascontiguousarray(d["X"]), float(d["lam"][0])
    assert y.shape == (points,) and X.shape == (points, PARAMETERS - 1), (y.shape, X.shape)
    return y, X, lam, out.stdout.strip().splitlines()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cudamin", default="target/release", help="release dir, or the cudamin binary")
    p.add_argument("--out", default="target/poisson-report")
    p.add_argument("--quick", action="store_true", help="20000 points, one repetition")
    a = p.parse_args()
    if a.quick:
        a.points, a.repeat = 20_000, 1
    for var in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if var in os.environ:
            print(f"WARNING: {var}={os.environ[var]} is set and slows a current numpy down; "
                  "run under `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE`", file=sys.stderr)
    cli, example = binaries(a.cudamin)
    torch.set_default_dtype(torch.float64)

    with tempfile.TemporaryDirectory() as tmp:
        y, X, lam, example_lines = load_data(example, a.points, tmp)
    for line in example_lines:
        print(f"# example: {line}")

    objective(np.zeros(PARAMETERS), y, X, lam)  # warm-up, untimed: BLAS threads, torch kernels
    run_torch(y[:100], X[:100], lam)
    runs = []
    for rep in range(a.repeat):
        torch_grad = None  # the ‖∇f‖∞ torch reached this repetition, for the last row
        for tool, solve in zip(TOOLS, (lambda: run_scipy(y, X, lam), lambda: run_torch(y, X, lam),
                                       lambda: run_cudamin(cli, a.points, y, X, lam),
                                       lambda: run_cudamin(cli, a.points, y, X, lam, torch_grad))):
            r = solve()
            f, g = objective(r["x"], y, X, lam)
            r.update(tool=tool, rep=rep, f=float(f), grad_inf=float(np.abs(g).max()))
            if tool == "torch LBFGS":
                torch_grad = r["grad_inf"]
            runs.append(r)

    header = (f"machine {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
              f"numpy {np.__version__}, scipy {scipy.__version__}, torch {torch.__version__} "
              f"({torch.get_num_threads()} threads); cudamin backend {runs[-1]['backend']}; "
              f"points {a.points}, repetitions {a.repeat}, lam {lam:g}")
    median = {t: float(np.median([r["seconds"] for r in runs if r["tool"] == t])) for t in TOOLS}
    lines = [header, "",
             "| tool | time (s) | × cudamin | nit | nfev/njev | status | f | ‖∇f‖∞ |",
             "|---|---:|---:|---:|---:|---|---:|---:|"]
    for t in TOOLS:
        r = [r for r in runs if r["tool"] == t][-1]  # the counts are the same every repetition
        lines.append(f"| {t} | {median[t]:.4f} | {median[t] / median[TOOLS[2]]:.2f} | {r['nit']} | "
                     f"{r['nfev']}/{r['njev']} | {r['status']} | {r['f']:.12e} | "
                     f"{r['grad_inf']:.2e} |")
    table = "\n".join(lines) + "\n"
    print(table, end="")

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "poisson_peers.md").write_text(table)
    for r in runs:
        r["x"] = r["x"].tolist()
    meta = dict(header=header, points=a.points, repeat=a.repeat, lam=lam, example=example_lines,
                median_s=median, iter_cap=ITER_CAP)
    (out / "poisson_peers.json").write_text(json.dumps(dict(meta, runs=runs), indent=1) + "\n")
    print(f"wrote {out / 'poisson_peers.md'} and {out / 'poisson_peers.json'}")


if __name__ == "__main__":
    main()
