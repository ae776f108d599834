#!/usr/bin/env python3
"""cudamin against the GPU tools a cudamin user would otherwise pick, on one machine.

Every peer and cudamin solve the same problems from the same starting points on the same
data, in one process, alternating within each repetition (A, B, C, then A, B, C again):
1. seed-expsum (Σ x² + eˣ) at n = 10⁶ as users run it today: Numba @cuda.jit and CuPy
   objectives under scipy BFGS with finite differences (at 10⁶ only one f call is timed and
   (n + 1)·t_f, one gradient, is reported as an estimate), torch autograd under scipy L-BFGS-B;
   the full solves again at n = 10³, where scipy BFGS is feasible.
2. seed-expsum and ext-rosenbrock at n = 10⁷: torch.optim.LBFGS, optimistix L-BFGS, cudamin's
   CLI, and cudamin from Python with x0 a torch tensor on the device, read in place.
3. lsq-expsin, p = 16, 10⁷ points: torch L-BFGS, optimistix BFGS and L-BFGS, jax.scipy BFGS,
   scipy BFGS on an analytic torch gradient, cudamin. The data are cudamin's SplitMix64 /
   Box–Muller stream, vectorized, checked against the scalar recurrence and `cudamin eval`.

Fits of large data sets by Levenberg–Marquardt (against NLSQ) are benches/gpu_fit_peers.py's.

For every row the true ‖∇f‖∞ at the tool's final x is recomputed in float64 with an analytic
numpy gradient, independently of the tool. The device-to-device copy bandwidth (torch, 2 GiB)
is measured too. Output: a markdown table on stdout, DIR/peers.json and DIR/peers.md.

With --suite cpu (what benches/cpu_peers.sh runs), the same harness measures the CPU peers
on the cases of issue 13, at their sizes: seed-expsum at n = 10⁴ (BFGS; scipy BFGS with
finite differences, or its per-iteration time past 10 minutes) and 10⁶ (L-BFGS),
ext-rosenbrock at 10⁶ (L-BFGS), lsq-expsin p = 16 on 10⁶ points; the peers are scipy BFGS and
L-BFGS-B with analytic numpy gradients, jax.scipy BFGS, optimistix BFGS and L-BFGS, jaxopt
L-BFGS and torch L-BFGS, and the machine's memory read bandwidth is measured in the same run
against the bandwidth of cudamin's lsq-expsin value pass.

On a GPU machine (a few minutes on an H100; --budget caps it, default 420 s):
    python3 benches/gpu_peers.py --cudamin target/release/cudamin
Offline test without a GPU (CPU backends, Numba's simulator, small sizes):
    NUMBA_ENABLE_CUDASIM=1 target/peers-venv/bin/python benches/gpu_peers.py \\
        --cudamin target/release/cudamin --device cpu --quick
"""

import argparse
import importlib
import importlib.metadata
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
import types
import warnings

import numpy as np

GTOL = 1e-5  # scipy's default, ∞-norm; the convergence rule for every row
GRAD_KINDS = ["exact", "forward", "central"]  # cudamin --grad kinds; one the binary refuses is skipped
ITER_CAP = 5000  # per-tool iteration cap, so that no single run can eat the time budget
SLOW_S = 15.0  # a tool whose first run takes longer than this is not repeated
CASES = ("seed-workflows", "expsum-big", "rosenbrock-big", "lsq-expsin")  # --only names (--suite gpu)
CPU_CASES = ("expsum-small", "expsum-big", "rosenbrock-big", "lsq-expsin")  # --only names (--suite cpu)
FD_LIMIT_S = 600.0  # scipy's finite-difference BFGS: past this, its per-iteration time is reported
LSQ_SEED, LSQ_P = 20_261_122, 16
SIZES = {  # seed_n: case 1; small_n: case 1's full scipy BFGS; big_n, points: cases 2 and 3
    "full": dict(seed_n=10**6, small_n=1000, big_n=10**7, points=10**7, fcalls=20),
    "quick": dict(seed_n=10**4, small_n=40, big_n=10**4, points=10**4, fcalls=3),
    # issue 13's CPU cases; fcalls: timed iterations of an over-long finite-difference solve
    "cpu": dict(seed_n=10**4, big_n=10**6, points=10**6, fcalls=3),
    "cpu-quick": dict(seed_n=100, big_n=10**4, points=10**4, fcalls=2),
}
numba_cuda = None  # numba.cuda once imported; a module global so that the simulator can swap it


class Skip(Exception):
    """A tool that cannot run here (missing package, no device, refused option)."""


def objective(name, xp, data=None):
    """f written once for numpy, torch and jax.numpy (xp): the same sums in every tool."""
    if name == "seed-expsum":
        return lambda x: xp.sum(x * x + xp.exp(x))
    if name == "ext-rosenbrock":
        return lambda x: xp.sum(100.0 * (x[1::2] - x[0::2] ** 2) ** 2 + (1.0 - x[0::2]) ** 2)
    t, y, basis = data  # lsq-expsin
    return lambda th: (lambda r: r @ r)(y - th[0] * xp.exp(-th[1] * t) - th[2:] @ basis)


def Problem(name, n, x0, grad, lam_max, points=None, data=None):
    """A problem as cudamin defines it, with an analytic numpy gradient for the true ‖∇f‖∞.
    lam_max estimates the Hessian's largest eigenvalue near the minimum: optimistix stops on
    the step size, and a step below gtol/lam_max is what a gradient of about gtol allows."""
    f = objective(name, np, data)
    return types.SimpleNamespace(name=name, n=n, x0=x0, f=lambda x: float(f(x)), grad=grad, lam_max=lam_max,
                                 points=points, data=data)


def seed_expsum(n):
    return Problem("seed-expsum", n, np.full(n, 0.5), lambda x: 2.0 * x + np.exp(x), 3.0)


def ext_rosenbrock(n):
    def grad(x):
        a, b, g = x[0::2], x[1::2], np.empty_like(x)
        g[0::2], g[1::2] = -400.0 * a * (b - a * a) - 2.0 * (1.0 - a), 200.0 * (b - a * a)
        return g
    return Problem("ext-rosenbrock", n, np.tile([-1.2, 1.0], n // 2), grad, 1002.0)


def theta_true(p):
    return np.array([2.0, 0.7] + [(1.0 if k % 2 == 0 else -1.0) / k for k in range(2, p)])


def splitmix64(seed, first, count):
    """SplitMix64 outputs number first .. first+count-1 (1-based), vectorized: the k-th output
    is mix(seed + k·γ mod 2⁶⁴), and numpy's uint64 arithmetic wraps mod 2⁶⁴ as Rust's does."""
    z = np.uint64(seed) + np.arange(first, first + count, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def lsq_data(p, m, chunk=1 << 20):
    """t, y and the sine basis (row k-2 = sin(k·t)) as host/src/problems/builtin.rs builds
    them: per point one uniform for t, then two for Box–Muller, in that order."""
    theta = theta_true(p)
    t, y, basis = np.empty(m), np.empty(m), np.empty((p - 2, m))
    for s in range(0, m, chunk):
        c = min(chunk, m - s)
        u = (splitmix64(LSQ_SEED, 3 * s + 1, 3 * c) >> np.uint64(11)).astype(np.float64) * 2.0**-53
        tj = 10.0 * u[0::3]
        noise = np.sqrt(-2.0 * np.log(1.0 - u[1::3])) * np.cos(2.0 * np.pi * u[2::3])
        model = theta[0] * np.exp(-theta[1] * tj)
        for k in range(2, p):  # summed in cudamin's order
            basis[k - 2, s:s + c] = np.sin(k * tj)
            model += theta[k] * basis[k - 2, s:s + c]
        t[s:s + c], y[s:s + c] = tj, model + 0.01 * noise
    return t, y, basis


def lsq_data_scalar(p, m):
    """The same stream one number at a time with the math module: the reference the
    vectorized generator is checked against. Rows: t, y, then the sines."""
    theta, state, mask, cols = theta_true(p), LSQ_SEED, (1 << 64) - 1, []

    def uniform():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & mask
        z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return ((z ^ (z >> 31)) >> 11) * 2.0**-53

    for _ in range(m):
        tj = 10.0 * uniform()
        sines = [math.sin(k * tj) for k in range(2, p)]
        model = theta[0] * math.exp(-theta[1] * tj)
        for k in range(2, p):
            model += theta[k] * sines[k - 2]
        u1, u2 = 1.0 - uniform(), uniform()
        cols.append([tj, model + 0.01 * math.sqrt(-2.0 * math.log(u1)) * math.cos(math.tau * u2)] + sines)
    return np.array(cols).T


def lsq_expsin(points):
    t, y, basis = lsq_data(LSQ_P, points)

    def grad(th):
        e = np.exp(-th[1] * t)
        r = y - th[0] * e - th[2:] @ basis
        return np.concatenate([[-2.0 * (r @ e), 2.0 * th[0] * ((r * t) @ e)], -2.0 * (basis @ r)])
    # ∂²f/∂θk² = 2 Σ sin²(k·t) ≈ points: the largest curvatures
    return Problem("lsq-expsin", LSQ_P, np.full(LSQ_P, 0.5), grad, float(points), points, (t, y, basis))


class Ctx:
    """The run's settings, its time guard and the lazily imported GPU packages."""

    def __init__(self, args):
        self.args, self.cudamin, self.dev = args, os.path.abspath(args.cudamin), args.device
        preset = {"gpu": "full", "cpu": "cpu"}[args.suite]
        self.sizes = SIZES[("cpu-quick" if args.suite == "cpu" else "quick") if args.quick else preset]
        self.deadline = time.monotonic() + args.budget
        self.refused, self.checks, self.mods = {}, {}, {}  # refused: grad kind -> message

    def remaining(self):
        return self.deadline - time.monotonic()

    def torch(self):
        if "torch" not in self.mods:
            torch = self._import("torch")
            if self.dev == "cuda" and not torch.cuda.is_available():
                raise Skip("torch sees no CUDA device")
            self.mods["torch"] = torch
        return self.mods["torch"]

    def jax(self):
        if "jax" not in self.mods:
            jax, jnp = self._import("jax"), self._import("jax.numpy")
            jax.config.update("jax_enable_x64", True)
            if self.dev == "cuda" and jax.default_backend() != "gpu":
                raise Skip(f"jax has no GPU backend (default: {jax.default_backend()})")
            self.mods["jax"] = (jax, jnp)
        return self.mods["jax"]

    @staticmethod
    def _import(name):
        try:
            return importlib.import_module(name)
        except ImportError as e:
            raise Skip(f"{name} missing: {e}")


def environment(ctx):
    env = {"python": platform.python_version()}
    for name in ["numpy", "scipy", "numba", "numba-cuda", "cupy", "jax", "jaxlib", "optimistix",
                 "equinox", "lineax", "torch"]:
        env[name] = "missing"
        for dist in ["cupy-cuda13x", "cupy-cuda12x", "cupy"] if name == "cupy" else [name]:
            try:
                env[name] = importlib.metadata.version(dist)
                break
            except importlib.metadata.PackageNotFoundError:
                pass
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        env["gpu"] = q.stdout.strip() or q.stderr.strip()
    except (OSError, subprocess.SubprocessError) as e:
        env["gpu"] = f"no nvidia-smi ({e.__class__.__name__})"
    env["numba_cudasim"] = os.environ.get("NUMBA_ENABLE_CUDASIM", "0")
    try:
        env["jaxopt"] = importlib.metadata.version("jaxopt")
    except importlib.metadata.PackageNotFoundError:
        env["jaxopt"] = "missing"
    cpu = [ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")]
    env["cpu"], env["cores"] = (cpu[0] if cpu else platform.machine()), os.cpu_count()
    env["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    info = subprocess.run([ctx.cudamin, "info"], capture_output=True, text=True, timeout=60)
    env["cudamin_info"] = [ln for ln in info.stdout.splitlines() if not ln.startswith("PTX")]
    return env


def d2d_bandwidth(ctx):
    """Device-to-device copy bandwidth, bytes read + written per second (median of 20)."""
    torch, cuda = ctx.torch(), ctx.dev == "cuda"
    size = 2 << 30 if cuda else 256 << 20
    src = torch.ones(size // 8, dtype=torch.float64, device=ctx.dev)
    dst, times = torch.empty_like(src), []
    for i in range(23):  # 3 warm-ups
        t0 = time.perf_counter()
        if cuda:  # CUDA events time the copy on the device, not the launch
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            dst.copy_(src)
            b.record()
            b.synchronize()
        else:
            dst.copy_(src)
        if i >= 3:
            times.append(a.elapsed_time(b) / 1e3 if cuda else time.perf_counter() - t0)
    del src, dst
    if cuda:
        torch.cuda.empty_cache()
    med = statistics.median(times)
    return {"device": ctx.dev, "bytes_copied": size, "median_s": med, "GB_per_s": 2 * size / med / 1e9}


def scipy_result(r, t0):
    return dict(solve_s=time.perf_counter() - t0, fun=float(r.fun), x=r.x, nit=r.nit, nfev=r.nfev,
                njev=r.njev, success=bool(r.success), message=str(r.message))


def parse_cudamin(raw, n):
    """cudamin's JSON, and x as a function that parses it with numpy when asked: at n = 10⁷
    the line is ~200 MB, json would build 10⁷ Python floats, and only the last run's x is used."""
    i = raw.rfind(b'"x":[')
    if i < 0:
        return json.loads(raw), None
    j = raw.index(b"]", i)
    head, body = json.loads(raw[:i].rstrip().rstrip(b",") + raw[j + 1:]), raw[i + 5:j]

    def x():
        v = np.fromstring(body.decode(), sep=",") if b"null" not in body else None
        if v is None or v.size != n:  # a null (NaN) or an odd token: the slow exact way
            v = np.array([np.nan if e is None else e for e in json.loads(b"[" + body + b"]")])
        return v
    return head, x


def probe_grad_kinds(ctx):
    for kind in GRAD_KINDS:
        p = subprocess.run([ctx.cudamin, "solve", "seed-expsum", "--n", "4", "--grad", kind,
                            "--backend", "cpu", "--json"], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            ctx.refused[kind] = (p.stderr.strip().splitlines() or ["(no message)"])[-1]
            print(f"cudamin refuses --grad {kind}: {ctx.refused[kind]}")


def cudamin_tool(ctx, prob, method, grad):
    def factory():
        if grad in ctx.refused:
            raise Skip(f"binary refuses --grad {grad}: {ctx.refused[grad]}")

        def run():
            cmd = [ctx.cudamin, "solve", prob.name, "--n", str(prob.n), "--method", method, "--grad", grad,
                   "--backend", ctx.dev, "--gtol", str(GTOL), "--maxiter", str(ITER_CAP), "--json"]
            cmd += ["--points", str(prob.points)] if prob.points else []
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, timeout=max(ctx.remaining(), 60) + 60)
            wall = time.perf_counter() - t0
            if p.returncode != 0:
                raise RuntimeError(p.stderr.decode(errors="replace").strip()[-500:])
            h, x = parse_cudamin(p.stdout, prob.n)
            return dict(solve_s=h["elapsed_s"], wall_s=wall, fun=h["fun"], x=x, nit=h["nit"],
                        nfev=h["nfev"], njev=h["njev"], success=h["success"], message=h["message"],
                        device=h["backend"], notes=f"backend_reason: {h['backend_reason']}")
        return run, {}
    return dict(tool="cudamin", method=f"{'BFGS' if method == 'bfgs' else 'L-BFGS'} ({grad}"
                f"{' FD' if grad in ('forward', 'central') else ' gradient'})",
                factory=factory)


def cudamin_torch_tool(ctx, prob):
    """cudamin from Python, as a torch user calls it: one session (opened before timing, as a
    loop of solves would hold it), x0 a torch float64 tensor on the device read where it lies,
    x kept there and handed back as a torch tensor with no copy."""
    def factory():
        torch = ctx.torch()
        cudamin = ctx._import("cudamin")
        backend = {"cuda": "cuda", "cpu": "cpu"}[ctx.dev]
        session = cudamin.Session(backend=backend)
        x0 = torch.from_numpy(prob.x0).to(ctx.dev)
        options = dict(method="L-BFGS", jac="exact", options=dict(gtol=GTOL, maxiter=ITER_CAP),
                       keep_on_device=True)
        session.minimize(prob.name, x0[: min(prob.n, 1 << 16)].clone(), **options)  # warm-up: kernel loading
        sync = torch.cuda.synchronize if ctx.dev == "cuda" else (lambda: None)

        def run():
            sync()
            before = session.traffic()
            t0 = time.perf_counter()
            res = session.minimize(prob.name, x0, **options)
            x = torch.as_tensor(res.x, device=ctx.dev) if ctx.dev == "cuda" else res.x
            sync()
            dt = time.perf_counter() - t0
            moved = {k: session.traffic()[k] - before[k] for k in ("h2d_bytes", "d2h_bytes", "waits")}
            return dict(solve_s=dt, fun=float(res.fun), x=np.asarray(x.cpu() if ctx.dev == "cuda" else x),
                        nit=res.nit, nfev=res.nfev, njev=res.njev, success=bool(res.success),
                        message=res.message, device=session.backend, notes=f"traffic {moved}")
        return run, {}
    return dict(tool="cudamin Python (torch x0 in place)", method="L-BFGS (exact gradient)", factory=factory)


def torch_objective(ctx, prob):
    """f(x) on float64 tensors on the device; the lsq data go there once."""
    torch = ctx.torch()
    if prob.data is not None and "torch_lsq" not in ctx.mods:
        ctx.mods["torch_lsq"] = [torch.from_numpy(a).to(ctx.dev) for a in prob.data]
    return objective(prob.name, torch, ctx.mods.get("torch_lsq"))


def torch_lbfgs_tool(ctx, prob):
    def factory():
        torch = ctx.torch()
        f = torch_objective(ctx, prob)
        x0 = torch.from_numpy(prob.x0).to(ctx.dev)
        f(x0.clone().requires_grad_(True)).backward()  # warm-up: kernel loading, allocator
        sync = torch.cuda.synchronize if ctx.dev == "cuda" else (lambda: None)

        def run():
            sync()
            t0 = time.perf_counter()
            x, nit, calls = torch_lbfgs(torch, f, x0, ITER_CAP)
            sync()
            dt = time.perf_counter() - t0
            with torch.no_grad():
                fun = float(f(x))
            capped = nit >= ITER_CAP or calls >= ITER_CAP * 5 // 4
            return dict(solve_s=dt, fun=fun, x=x.detach().cpu().numpy(), nit=nit, nfev=calls,
                        njev=calls, message="max_iter or max_eval reached" if capped else "")
        return run, {"device": ctx.dev}
    return dict(tool="torch.optim.LBFGS", method="L-BFGS (autograd, strong Wolfe, m=10)", factory=factory)


def torch_lbfgs(torch, f, x0, max_iter):
    """torch.optim.LBFGS (m = 10, strong Wolfe) on `f` from a copy of the tensor `x0`:
    (x, iterations, calls of f). Its tolerance_grad is tested on max|g|, as scipy's gtol; its
    tolerance_change is tiny, so that otherwise only a stalled search (f exactly unchanged)
    ends it."""
    x, calls = x0.clone().requires_grad_(True), [0]
    opt = torch.optim.LBFGS([x], lr=1, max_iter=max_iter, max_eval=max_iter * 5 // 4,
                            tolerance_grad=GTOL, tolerance_change=1e-30, history_size=10,
                            line_search_fn="strong_wolfe")

    def closure():
        calls[0] += 1
        opt.zero_grad()
        loss = f(x)
        loss.backward()
        return loss
    opt.step(closure)
    return x, opt.state[x]["n_iter"], calls[0]


def scipy_torch_tool(ctx, prob, method, options=None):
    """scipy.optimize.minimize(jac=True) on a torch (f, g) computed on the device: autograd,
    or for lsq-expsin the hand-written gradient."""
    def factory():
        from scipy.optimize import minimize
        torch, f, how = ctx.torch(), torch_objective(ctx, prob), "autograd"
        if prob.name == "lsq-expsin":
            t, y, basis = ctx.mods["torch_lsq"]
            how = "analytic"

            def fg(th_np):
                th = torch.from_numpy(th_np).to(ctx.dev)
                e = torch.exp(-th[1] * t)
                r = y - th[0] * e - th[2:] @ basis
                g = torch.cat([torch.stack([-2.0 * (r @ e), 2.0 * th[0] * ((r * t) @ e)]), -2.0 * (basis @ r)])
                return float(r @ r), g.cpu().numpy()
        else:
            def fg(x_np):
                x = torch.from_numpy(x_np).to(ctx.dev).requires_grad_(True)
                loss = f(x)
                loss.backward()
                return float(loss.detach()), x.grad.cpu().numpy()
        fg(prob.x0)  # warm-up

        def run():
            t0 = time.perf_counter()
            opts = dict(options or {}, maxiter=ITER_CAP)
            return scipy_result(minimize(fg, prob.x0, jac=True, method=method, options=opts), t0)
        notes = "ftol=1e-15, so that gtol (projected ∞-norm) ends it" if method == "L-BFGS-B" else ""
        return run, {"device": ctx.dev, "notes": notes, "tool": f"scipy + torch {how} (jac=True)"}
    return dict(tool="scipy + torch (jac=True)", method=method, factory=factory)


def numba_seed_f(ctx, n):
    """The seed articles' habit: a @cuda.jit kernel writes the terms, a device reduction sums
    them, and every call copies x to the device."""
    global numba_cuda
    if ctx.dev == "cpu" and os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        raise Skip("--device cpu needs NUMBA_ENABLE_CUDASIM=1 for Numba")
    if not hasattr(np, "row_stack"):
        # numba-cuda 0.30 registers an overload for np.row_stack, which numpy 2.4 removed, and
        # its first kernel compile then fails; the alias is the function it names.
        np.row_stack = np.vstack
    try:
        from numba import cuda as numba_cuda
    except ImportError as e:
        raise Skip(f"numba missing: {e}")
    if "numba" not in ctx.mods:
        # The kernel reads numba_cuda as a global: the simulator swaps the module in the
        # kernel's globals (a closure variable would keep the real one, which lacks grid()).
        @numba_cuda.jit
        def terms(x, out):
            i = numba_cuda.grid(1)
            if i < x.size:
                out[i] = x[i] * x[i] + math.exp(x[i])
        ctx.mods["numba"] = (terms, numba_cuda.reduce(lambda a, b: a + b))
    terms, total = ctx.mods["numba"]
    out = numba_cuda.device_array(n, dtype=np.float64)

    def f(x):
        terms[(n + 255) // 256, 256](numba_cuda.to_device(x), out)
        return float(total(out))
    return f


def cupy_seed_f(ctx, n):
    if ctx.dev != "cuda":
        raise Skip("CuPy needs a CUDA device (--device cpu)")
    try:
        import cupy as cp
        cp.cuda.runtime.getDeviceCount()
    except Exception as e:  # ImportError, or CUDARuntimeError without a driver
        raise Skip(f"cupy unavailable: {e.__class__.__name__}: {e}")
    return lambda x: (lambda d: float(cp.sum(d * d + cp.exp(d))))(cp.asarray(x))


def fd_tool(ctx, prob, name, make_f, estimate):
    """scipy BFGS with 2-point finite differences (jac=None) on a Numba or CuPy f. With
    estimate, only the median time t_f of one call (with its host→device copy) is measured:
    (n+1)·t_f is one gradient, a lower bound of one BFGS iteration."""
    sim = name == "numba" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

    def factory():
        from scipy.optimize import minimize
        f = make_f(ctx, prob.n)
        t0 = time.perf_counter()
        f(prob.x0)  # first call: Numba's JIT, CuPy's kernel compile
        first_s = time.perf_counter() - t0
        f(prob.x0)

        def run():
            if not estimate:
                t0 = time.perf_counter()
                return scipy_result(minimize(f, prob.x0, method="BFGS"), t0)
            times = []
            for _ in range(ctx.sizes["fcalls"]):
                t0 = time.perf_counter()
                f(prob.x0)
                times.append(time.perf_counter() - t0)
            t_f, dense_gb = statistics.median(times), prob.n**2 * 8 / 1e9
            return dict(solve_s=(prob.n + 1) * t_f, status="estimate", x=None, notes=(
                f"ESTIMATE: one gradient = (n+1)·t_f, t_f = {t_f:.3e} s (median of {len(times)} calls), a lower "
                f"bound of ONE iteration; f(x0) = {f(prob.x0)!r}; scipy BFGS's dense n×n inverse Hessian: "
                f"{dense_gb:.4g} GB" + (" (infeasible)" if dense_gb > 64 else "")))
        return run, {"device": "cudasim" if sim else ctx.dev, "compile_s": first_s}
    return dict(tool=f"{name} f + scipy BFGS", factory=factory, slow=sim or not estimate,
                method="BFGS (2-point FD)" + (", per-iteration estimate" if estimate else ""))


def jax_objective(ctx, prob):
    """f(x, data) in jax. The lsq data go to the device once and are passed as an argument:
    closed over, they would be baked into the compiled program as 1 GB of constants."""
    jax, jnp = ctx.jax()
    if prob.data is not None and "jax_lsq" not in ctx.mods:
        ctx.mods["jax_lsq"] = tuple(jax.device_put(a) for a in prob.data)
    data = ctx.mods.get("jax_lsq") if prob.data is not None else None
    return (lambda x, d: objective(prob.name, jnp, d)(x)), data


def jax_compiled_tool(ctx, prob, tool, method, build, notes=""):
    """build(fn) -> solve(x0, data) returning a dict of arrays (x, fun, nit, nfev, ...). solve
    is jitted and compiled ahead (compile_s); a run times one call up to block_until_ready."""
    def factory():
        jax, jnp = ctx.jax()
        fn, data = jax_objective(ctx, prob)
        x0 = jax.device_put(jnp.asarray(prob.x0))
        t0 = time.perf_counter()
        compiled = jax.jit(build(fn)).lower(x0, data).compile()
        compile_s = time.perf_counter() - t0

        def run():
            t0 = time.perf_counter()
            out = jax.block_until_ready(compiled(x0, data))
            dt = time.perf_counter() - t0
            res = {k: np.asarray(v) if k == "x" else v.item() for k, v in out.items()}
            why = "max steps reached" if res.pop("max_steps", False) else f"status {res.pop('code', 'failed')}"
            return dict(res, solve_s=dt, notes=notes, message="successful" if res["success"] else why)
        return run, {"compile_s": compile_s, "device": jax.devices()[0].platform}
    return dict(tool=tool, method=method, factory=factory)


def optx_tool(ctx, prob, solver_name):
    tol = GTOL / prob.lam_max

    def build(fn):
        import optimistix as optx
        solver = getattr(optx, solver_name)(rtol=tol, atol=tol)

        def solve(x0, data):
            s = optx.minimise(fn, solver, x0, data, max_steps=ITER_CAP, throw=False)
            # Each step, accepted or rejected by the backtracking search, evaluates f once
            # (linearized); the gradient is formed for accepted steps only, not counted here.
            # f_info.f is f at the last accepted point, which is s.value.
            return dict(x=s.value, fun=s.state.f_info.f, nit=s.stats["num_steps"], nfev=s.stats["num_steps"],
                        success=s.result == optx.RESULTS.successful,
                        max_steps=s.result == optx.RESULTS.nonlinear_max_steps_reached)
        return solve
    return jax_compiled_tool(ctx, prob, "optimistix", f"{'L-BFGS' if solver_name == 'LBFGS' else 'BFGS'} "
                             "(autodiff, backtracking Armijo)", build,
                             notes=f"Cauchy stop (no gradient test): rtol = atol = gtol/λmax = {tol:.1e} "
                                   "on step and Δf; nit = nfev = steps incl. rejected ones")


def jax_scipy_bfgs_tool(ctx, prob):
    def build(fn):
        from jax.scipy.optimize import minimize

        def solve(x0, data):
            r = minimize(fn, x0, args=(data,), method="BFGS", options=dict(maxiter=ITER_CAP, gtol=GTOL))
            return dict(x=r.x, fun=r.fun, nit=r.nit, nfev=r.nfev, njev=r.njev, success=r.success, code=r.status)
        return solve
    return jax_compiled_tool(ctx, prob, "jax.scipy.optimize", "BFGS (autodiff, jitted)", build)


def scipy_numpy_tool(ctx, prob, method):
    """scipy.optimize.minimize on the numpy f and its analytic numpy gradient (the one the true
    ‖∇f‖∞ is computed with): what a scipy user writes by hand."""
    def factory():
        from scipy.optimize import minimize
        # L-BFGS-B also stops on a relative decrease of f; 1e-15 leaves it to gtol.
        extra = dict(ftol=1e-15) if method == "L-BFGS-B" else {}

        def run():
            t0 = time.perf_counter()
            r = minimize(prob.f, prob.x0, jac=prob.grad, method=method,
                         options=dict(extra, gtol=GTOL, maxiter=ITER_CAP))
            return scipy_result(r, t0)
        return run, {"device": "cpu", "notes": "ftol=1e-15, so that gtol ends it" if extra else ""}
    return dict(tool="scipy + numpy (jac=grad)", method=method, factory=factory)


def scipy_fd_tool(ctx, prob):
    """scipy BFGS with its default 2-point finite differences on the numpy f. A solve whose
    first iterations say it would pass FD_LIMIT_S is stopped after `fcalls` iterations and its
    per-iteration time reported instead, with the projected total."""
    def factory():
        from scipy.optimize import minimize

        def run():
            t0, ticks = time.perf_counter(), []

            def callback(_xk):
                ticks.append(time.perf_counter())
                if len(ticks) >= ctx.sizes["fcalls"]:
                    per_it = (ticks[-1] - t0) / len(ticks)
                    if per_it * 100 > FD_LIMIT_S:  # scipy BFGS takes tens to hundreds of iterations
                        raise StopIteration
            r = minimize(prob.f, prob.x0, method="BFGS", callback=callback,
                         options=dict(gtol=GTOL, maxiter=ITER_CAP))
            res = scipy_result(r, t0)
            if r.status == 99 or "StopIteration" in str(r.message):
                per_it = res["solve_s"] / max(r.nit, 1)
                return dict(solve_s=per_it, status="estimate", x=None, notes=(
                    f"PER ITERATION: {per_it:.3g} s each over the first {r.nit} iterations "
                    f"(one gradient = n + 1 = {prob.n + 1} calls of f); the whole solve would pass "
                    f"{FD_LIMIT_S:.0f} s"))
            return res
        return run, {"device": "cpu"}
    return dict(tool="scipy + numpy f", method="BFGS (2-point FD)", factory=factory, slow=True)


def jaxopt_lbfgs_tool(ctx, prob):
    def build(fn):
        import jaxopt

        def solve(x0, data):
            solver = jaxopt.LBFGS(fun=fn, maxiter=ITER_CAP, tol=GTOL, history_size=10)
            params, state = solver.run(x0, data)
            # jaxopt's tol is on ‖∇f‖₂, stricter than the ∞-norm: the true ‖∇f‖∞ says where it stopped.
            return dict(x=params, fun=state.value, nit=state.iter_num, nfev=state.num_fun_eval,
                        success=state.error <= GTOL, max_steps=state.iter_num >= ITER_CAP)
        return solve
    return jax_compiled_tool(ctx, prob, "jaxopt", "L-BFGS (autodiff, zoom line search)", build,
                             notes="tol = gtol on ‖∇f‖₂")


def read_bandwidth():
    """The machine's memory read bandwidth: a sum over 1 GiB of float64 (out of every cache),
    median of 10, with numpy (one thread) and torch (all cores) when it is there; the larger."""
    a = np.ones(1 << 27)
    out = {}

    def median_time(fn):
        fn()
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)
    out["numpy_1_thread_GB_per_s"] = a.nbytes / median_time(a.sum) / 1e9
    try:
        import torch
        ta = torch.from_numpy(a)
        out["torch_all_cores_GB_per_s"] = a.nbytes / median_time(ta.sum) / 1e9
        out["torch_threads"] = torch.get_num_threads()
    except ImportError:
        pass
    out["GB_per_s"] = max(v for k, v in out.items() if k.endswith("GB_per_s"))
    return out


def value_pass_bandwidth(ctx, bw):
    """cudamin's lsq-expsin value pass on 10⁶ points (16 columns of f64 read): its median time
    (cudamin eval), the bytes it reads per second, and the fraction of the read bandwidth."""
    points = ctx.sizes["points"]
    p = subprocess.run([ctx.cudamin, "eval", "lsq-expsin", "--n", str(LSQ_P), "--points", str(points),
                        "--backend", "cpu", "--repeat", "20", "--json"], capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        return {"error": p.stderr.strip()[-300:]}
    value_s = json.loads(p.stdout)["value_s"]
    gbps = LSQ_P * 8 * points / value_s / 1e9
    return dict(points=points, value_s=value_s, GB_per_s=gbps, fraction_of_read_bandwidth=gbps / bw["GB_per_s"])


def run_case(ctx, case, prob, tools):
    """Sets every tool up (untimed), then runs them alternately, --repeat rounds."""
    rows = []
    for spec in tools:
        row = dict(case=case, tool=spec["tool"], method=spec["method"], device=ctx.dev, n=prob.n,
                   points=prob.points, status="ok", runs=[], walls=[], notes="", run=None)
        try:
            if ctx.remaining() <= 0:
                raise Skip("time budget spent before setup")
            row["run"], info = spec["factory"]()
            row.update(info)
        except Skip as e:
            row.update(status="skipped", notes=str(e))
        except Exception as e:
            row.update(status="error", notes=f"setup: {e.__class__.__name__}: {e}"[:600])
            traceback.print_exc()
        rows.append((spec.get("slow", False), row))
    for rep in range(ctx.args.repeat):
        for slow, row in rows:
            if row["run"] is None or (rep > 0 and (slow or not row["runs"] or row["runs"][0] > SLOW_S)):
                continue
            if ctx.remaining() <= 0:
                row["notes"] += f" [time guard: stopped after {len(row['runs'])} run(s)]"
                row["run"] = None
                continue
            try:
                res = row["run"]()
            except Exception as e:
                traceback.print_exc()
                err, row["run"] = f"{e.__class__.__name__}: {e}"[:600], None
                if row["runs"]:  # the good runs before it still count
                    row["notes"] += f" [run {rep + 1} failed: {err}]"
                else:
                    row.update(status="error", notes=err)
                continue
            row["runs"].append(res.pop("solve_s"))
            row["walls"] += [res.pop("wall_s")] if "wall_s" in res else []
            row["last"] = res
            print(f"  {row['tool']} | {row['method']}: {row['runs'][-1]:.4g} s", flush=True)
    return [finish_row(row, prob) for _, row in rows]


def finish_row(row, prob):
    """Medians of the runs, the last run's results, and the true gradient at its x."""
    del row["run"]
    last, row["notes"] = row.pop("last", None), row["notes"].strip()
    if row["status"] != "ok":
        return row
    if last is None:
        return dict(row, status="skipped")
    row["solve_s"] = statistics.median(row["runs"])
    if row["walls"]:
        row["wall_s"] = statistics.median(row["walls"])
    x = last.pop("x", None)
    row.update(last, notes="; ".join(s for s in [row["notes"], last.get("notes", "")] if s))
    if x is not None:  # recomputed here in float64, never the tool's own gradient
        x = np.asarray(x() if callable(x) else x, dtype=np.float64)
        row["true_grad_inf"] = float(np.max(np.abs(prob.grad(x))))
        row["true_grad_le_gtol"] = row["true_grad_inf"] <= GTOL
    return row


def add_ratios(rows):
    """tool / cudamin-best: solve time over cudamin's best solve time on the same case."""
    best = {c: min((r["solve_s"] for r in rows if r["case"] == c and r["tool"] == "cudamin" and "solve_s" in r),
                   default=None) for c in {r["case"] for r in rows}}
    for r in rows:
        if best[r["case"]] and "solve_s" in r:
            r["ratio_to_cudamin_best"] = r["solve_s"] / best[r["case"]]


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


COLUMNS = [("solve_s", ".4g"), ("compile_s", ".3g"), ("wall_s", ".3g"), ("nit", "d"), ("nfev", "d"),
           ("fun", ".10g"), ("true_grad_inf", ".2e")]


def markdown(rows, env, bw, checks):
    out = ["| case | tool | method | device | solve s | compile s | wall s | nit | nfev | f | true ‖g‖∞ "
           "| ≤ gtol | tool / cudamin-best | status |", "|" + " --- |" * 14]
    notes = []
    for i, r in enumerate(rows, 1):
        ratio, conv = r.get("ratio_to_cudamin_best"), r.get("true_grad_le_gtol")
        ratio_s = "—" if ratio is None else ("≥ " if r["status"] == "estimate" else "") + f"{ratio:.2f}"
        cells = [r["case"], r["tool"], r["method"], r.get("device", "")]
        cells += [fmt(r.get(k), spec) for k, spec in COLUMNS]
        cells += ["—" if conv is None else ("yes" if conv else "no"), ratio_s, f"{r['status']} [{i}]"]
        out.append("| " + " | ".join(cells) + " |")
        msg = " — ".join(s for s in [r.get("message", ""), r.get("notes", "")] if s)
        notes += [f"{i}. {msg}"] if msg else []
    if "cudamin_value_pass" in bw:  # --suite cpu
        v = bw["cudamin_value_pass"]
        title = f"# CPU peers ({env.get('cpu', '')}, {env.get('cores')} cores, {env.get('date')})"
        memory = (f"Memory read bandwidth: {fmt(bw.get('GB_per_s'), '.1f')} GB/s (sum over 1 GiB: numpy one "
                  f"thread {fmt(bw.get('numpy_1_thread_GB_per_s'), '.1f')}, torch {bw.get('torch_threads', '—')} "
                  f"threads {fmt(bw.get('torch_all_cores_GB_per_s'), '.1f')}). cudamin's lsq-expsin value pass "
                  f"({v.get('points')} points, 16 columns): {fmt(v.get('value_s'), '.4g')} s, "
                  f"{fmt(v.get('GB_per_s'), '.1f')} GB/s, {fmt(100 * v['fraction_of_read_bandwidth'] if 'fraction_of_read_bandwidth' in v else None, '.0f')}% of it.")
    else:
        title = f"# GPU peers ({env.get('gpu', '')})"
        memory = f"Device-to-device copy: {fmt(bw.get('GB_per_s'), '.1f')} GB/s (read + write) on {bw.get('device')}"
    head = [title, "",
            "Versions: " + ", ".join(f"{k} {v}" for k, v in env.items()
                                     if k not in ("gpu", "cudamin_info", "cpu", "cores", "date")),
            "", memory,
            "", "Data checks: " + json.dumps(checks), "",
            f"Ratio = tool solve s / cudamin's best solve s on that case (> 1: cudamin faster). "
            f"'≤ gtol': true ‖∇f‖∞ ≤ {GTOL:g} at the tool's x. Solve s excludes setup, data upload, "
            f"JIT (compile s); wall s is the whole cudamin process (start, data, PTX JIT, JSON out).", ""]
    return "\n".join(head + out + ["", "Notes:", ""] + notes) + "\n"


def lsq_checks(ctx, prob):
    """The vectorized generator against the scalar one, and f(x0) against cudamin's."""
    k = min(2000, prob.points)
    ref, (t, y, basis) = lsq_data_scalar(LSQ_P, k), prob.data
    vec = np.vstack([t[:k], y[:k], basis[:, :k]])
    rel = float(np.max(np.abs(vec - ref) / np.maximum(np.abs(ref), 1e-300)))
    print(f"lsq generator: max relative difference vectorized vs scalar (first {k} points): {rel:.3e}")
    ours = prob.f(prob.x0)
    p = subprocess.run([ctx.cudamin, "eval", "lsq-expsin", "--n", str(LSQ_P), "--points", str(prob.points),
                        "--backend", "cpu", "--repeat", "1", "--json"], capture_output=True, text=True, timeout=600)
    theirs = json.loads(p.stdout)["fun"] if p.returncode == 0 else None
    agree = None if theirs is None else abs(ours - theirs) / abs(theirs)
    print(f"lsq f(x0): script {ours!r}, cudamin eval {theirs!r}, relative difference {agree}")
    return dict(generator_points=k, generator_max_rel_diff=rel, generator_ok=rel < 1e-13,
                f_x0_script=ours, f_x0_cudamin=theirs, f_x0_rel_diff=agree,
                f_x0_ok=agree is not None and agree < 1e-12, cudamin_eval_error=p.stderr.strip()[-300:] or None)


def cases(ctx):
    """Each case yields (label, problem, tool specs); a spec's factory runs only when reached."""
    s = ctx.sizes

    def ours(prob, methods):
        return [cudamin_tool(ctx, prob, m, g) for m in methods for g in GRAD_KINDS]

    def seed_workflows():
        big, small = seed_expsum(s["seed_n"]), seed_expsum(s["small_n"])
        yield f"seed workflows n={big.n}", big, [
            fd_tool(ctx, big, "numba", numba_seed_f, True), fd_tool(ctx, big, "cupy", cupy_seed_f, True),
            scipy_torch_tool(ctx, big, "L-BFGS-B", dict(ftol=1e-15, gtol=GTOL))] + ours(big, ["lbfgs"])
        yield f"seed workflows n={small.n}", small, [
            fd_tool(ctx, small, "numba", numba_seed_f, False), fd_tool(ctx, small, "cupy", cupy_seed_f, False),
            scipy_torch_tool(ctx, small, "BFGS")] + ours(small, ["bfgs", "lbfgs"])

    def big(make):
        def gen():
            prob = make(s["big_n"])
            yield f"{prob.name} n={prob.n}", prob, [
                torch_lbfgs_tool(ctx, prob), optx_tool(ctx, prob, "LBFGS"), cudamin_torch_tool(ctx, prob)
            ] + ours(prob, ["lbfgs"])
        return gen

    def lsq():
        prob = lsq_expsin(s["points"])
        ctx.checks = lsq_checks(ctx, prob)
        yield f"lsq-expsin p={LSQ_P} points={prob.points}", prob, [
            torch_lbfgs_tool(ctx, prob), optx_tool(ctx, prob, "BFGS"), optx_tool(ctx, prob, "LBFGS"),
            jax_scipy_bfgs_tool(ctx, prob), scipy_torch_tool(ctx, prob, "BFGS")] + ours(prob, ["bfgs", "lbfgs"])
    return dict(zip(CASES, [seed_workflows, big(seed_expsum), big(ext_rosenbrock), lsq]))


def cpu_cases(ctx):
    """issue 13's CPU cases: every peer a CPU user would pick, and cudamin's every gradient."""
    s = ctx.sizes

    def ours(prob, methods):
        return [cudamin_tool(ctx, prob, m, g) for m in methods for g in GRAD_KINDS]

    def autodiff(prob, jax_bfgs):
        tools = [jax_scipy_bfgs_tool(ctx, prob), optx_tool(ctx, prob, "BFGS")] if jax_bfgs else []
        return tools + [optx_tool(ctx, prob, "LBFGS"), jaxopt_lbfgs_tool(ctx, prob), torch_lbfgs_tool(ctx, prob)]

    def expsum_small():
        prob = seed_expsum(s["seed_n"])
        yield f"seed-expsum n={prob.n}, BFGS", prob, [
            scipy_fd_tool(ctx, prob), scipy_numpy_tool(ctx, prob, "BFGS")] + autodiff(prob, True) + ours(prob, ["bfgs"])

    def big(make):
        def gen():
            prob = make(s["big_n"])
            yield f"{prob.name} n={prob.n}, L-BFGS", prob, [
                scipy_numpy_tool(ctx, prob, "L-BFGS-B")] + autodiff(prob, False) + ours(prob, ["lbfgs"])
        return gen

    def lsq():
        prob = lsq_expsin(s["points"])
        ctx.checks = lsq_checks(ctx, prob)
        yield f"lsq-expsin p={LSQ_P} points={prob.points}", prob, [
            scipy_numpy_tool(ctx, prob, "BFGS"), scipy_numpy_tool(ctx, prob, "L-BFGS-B")] + autodiff(prob, True) + \
            ours(prob, ["bfgs", "lbfgs"])
    return dict(zip(CPU_CASES, [expsum_small, big(seed_expsum), big(ext_rosenbrock), lsq]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cudamin", required=True, help="path of the cudamin binary")
    ap.add_argument("--out", default="target/gpu-report", help="folder for peers.json and peers.md")
    ap.add_argument("--quick", action="store_true", help="small sizes (10⁴), for a CPU test")
    ap.add_argument("--only", default="", help="comma-separated: " + ", ".join(CASES))
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--repeat", type=int, default=3, help="rounds; slow tools run once")
    ap.add_argument("--budget", type=float, default=420.0, help="seconds after which no new run starts")
    ap.add_argument("--suite", choices=["gpu", "cpu"], default="gpu",
                    help="gpu: the GPU peers and the seeds' workflows; cpu: issue 13's CPU peers")
    args = ap.parse_args()
    known = CPU_CASES if args.suite == "cpu" else CASES
    wanted = [w for w in args.only.split(",") if w] or list(known)
    if set(wanted) - set(known):
        sys.exit(f"unknown case in --only; known: {', '.join(known)}")
    # Before jax is imported: no 75 % preallocation (torch, CuPy and cudamin share the GPU).
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if args.device == "cpu":
        os.environ["JAX_PLATFORMS"] = "cpu"
        # A CUDA build of torch on a machine without a usable driver warns at first use.
        warnings.filterwarnings("ignore", message="CUDA initialization")
    ctx = Ctx(args)
    if not os.access(ctx.cudamin, os.X_OK):
        sys.exit(f"no executable cudamin at {ctx.cudamin}")
    env = environment(ctx)
    print("\n".join(f"{k:>14}: {v}" for k, v in env.items()))
    probe_grad_kinds(ctx)
    try:
        bw = read_bandwidth() if args.suite == "cpu" else d2d_bandwidth(ctx)
        if args.suite == "cpu":
            bw["cudamin_value_pass"] = value_pass_bandwidth(ctx, bw)
    except Exception as e:
        bw = {"error": f"{e.__class__.__name__}: {e}"}
    print(f"bandwidth: {bw}")
    rows, all_cases = [], (cpu_cases if args.suite == "cpu" else cases)(ctx)
    for name in wanted:
        try:
            for case, prob, tools in all_cases[name]():
                print(f"== {case}", flush=True)
                rows += run_case(ctx, case, prob, tools)
        except Exception as e:  # data generation or the checks failed: record it, go on
            traceback.print_exc()
            rows.append(dict(case=name, tool="(case)", method="", status="error", notes=f"{e.__class__.__name__}: {e}"))
        for key in ("torch_lsq", "jax_lsq"):  # free the device copies of the lsq data
            ctx.mods.pop(key, None)
        if ctx.dev == "cuda" and "torch" in ctx.mods:
            ctx.mods["torch"].cuda.empty_cache()
    add_ratios(rows)
    md = markdown(rows, env, bw, ctx.checks)
    print("\n" + md)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "peers.json"), "w") as fh:
        json.dump(dict(env=env, args=vars(args), gtol=GTOL, grad_kinds=GRAD_KINDS, refused_grad_kinds=ctx.refused,
                       d2d_bandwidth=bw, lsq_checks=ctx.checks, rows=rows), fh, indent=1, default=str)
    with open(os.path.join(args.out, "peers.md"), "w") as fh:
        fh.write(md)
    print(f"wrote {args.out}/peers.json and {args.out}/peers.md")


if __name__ == "__main__":
    main()
