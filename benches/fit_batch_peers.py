#!/usr/bin/env python3
"""`cudamin.curve_fit_batch` against batched peers: F fits of a symmetric 2-D Gaussian on 5 × 5
pixels with Poisson noise (gauss-2d, a·exp(−((x−x0)² + (y−y0)²)/(2σ²)) + b, parameters
(a, x0, y0, σ, b); Gpufit's benchmark case), on the same arrays in the same process.

Issue 67's hardware case: 10⁷ fits on an H100/H200, against ≥ 20 M fits/s in float32 and
≥ 5 M fits/s in float64 (Gpufit published 2.67 M/s). The rows:
- cudamin on `--backend` (cpu, cuda or sim): float64, float32 (`dtype=np.float32`; tolerances
  raised to float32's epsilon) and Poisson maximum likelihood (`estimator='poisson'`, Gpufit's
  MLE); each call takes numpy arrays and gives numpy arrays back, so its time includes packing
  the data and, on a GPU, the upload and the download. Where the backend is not cpu, cudamin
  float64 on the CPU path too (every core of this machine);
- a batched torch Levenberg–Marquardt written for this bench (benches/torch_batch_lm.py), float64
  and float32, on the GPU when torch sees one, else on the CPU: its data is uploaded before the
  clock starts and its answers read back after it stops (torch.cuda.synchronize first);
- torchimize's `lsq_lma_parallel` with the same residuals and Jacobian, where it is installed
  (it has no per-fit status: a fit counts as a success when its parameters did not move in its
  last iteration, as its converged fits do not);
- `jax.vmap` of optimistix's `least_squares` with `LevenbergMarquardt`, jitted, float64 and
  float32, on data already on JAX's device (its first, compiling call is the warm-up); an error
  of the vmapped solve (optimistix issues #63, #144) is that row's result;
- a Python loop of scipy's `curve_fit` with the analytic Jacobian (MINPACK's lmder, its best
  case), on the first `--scipy-fits` fits alone (default min(F, 10 000)): its row gives its own
  fit count, and the cudamin / scipy ratio compares fits per second.
The torch and JAX peers go through the fits in chunks of `--chunk` (10⁶), so that 10⁷ fit in the
device's memory. Every tool starts each fit from the same p0 at ftol = xtol = gtol = 1e-12
(where a tool takes them); the tools alternate within each repetition, after one untimed warm-up
each on the first chunk (scipy: its first 100 fits); the table gives the median wall time, fits
per second and every time. For each tool: its successes, and on the fits that it and cudamin
float64 both fitted successfully, the largest relative difference of popt from cudamin
float64's, and the largest difference in cudamin float64's standard errors (the relative one is
large where an offset b lies near 0); the reference is cudamin float64 on the CPU path where
the backend's row failed. The last lines compare cudamin float64 with scipy on the
subsample (popt relative, pcov over its diagonal's scale), issue 67's targets, and, with a CUDA
torch, what a call from numpy copies (y, offsets and p0 up; the reports down) timed at this
machine's pageable copy bandwidth: a ceiling on fits per second without overlap.

Here (the CPU; the simulator is slow), with a venv that has numpy, scipy and, for the peers,
torch, torchimize, jax and optimistix (`bash .ci/python` makes target/python-venv with cudamin):
    PYTHONPATH=python <venv>/bin/python benches/fit_batch_peers.py --fits 2000 --repeats 1
    PYTHONPATH=python <venv>/bin/python benches/fit_batch_peers.py --backend sim --fits 64 \\
        --repeats 1 --scipy-fits 64
On the device (benches/gpu_check.sh --peers runs it so; `--skip TEXT …` leaves out the rows
whose label contains TEXT, e.g. `--skip torchimize optimistix` where time is short):
    python3 benches/fit_batch_peers.py --backend cuda --fits 10000000 --out fit-batch-peers.json
"""

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX beside torch on one GPU

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import cudamin  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_fit_peers import Skip, need  # noqa: E402

GRID = np.column_stack([np.tile(np.arange(5.0), 5), np.repeat(np.arange(5.0), 5)])
TIGHT = dict(ftol=1e-12, xtol=1e-12, gtol=1e-12)
MAX_ITER = 100  # the torch, torchimize and optimistix peers' cap on iterations
REFERENCE = "cudamin float64"
CPU_PATH = "cudamin float64, CPU path"  # the reference where the backend's fails
SCIPY = "scipy curve_fit loop"
TARGETS = {"float32": 20e6, "float64": 5e6}  # issue 67, fits per second on an H100/H200


def gauss_2d(x, a, x0, y0, s, b):
    return a * np.exp(-((x[0] - x0) ** 2 + (x[1] - y0) ** 2) / (2 * s * s)) + b


def jacobian(x, a, x0, y0, s, b):
    dx, dy = x[0] - x0, x[1] - y0
    e = np.exp(-(dx * dx + dy * dy) / (2 * s * s))
    return np.column_stack([e, a * e * dx / s**2, a * e * dy / s**2, a * e * (dx * dx + dy * dy) / s**3, np.ones_like(e)])


def data(fits, block=10**5):
    """(y (F, 25), p0 (F, 5)): the fits of seed 2026. The means block by block on every core
    (numpy lets go of the GIL), then the Poisson draws in order: the same draws as one call."""
    rng = np.random.default_rng(2026)
    truth = np.column_stack([
        rng.uniform(200, 500, fits), rng.uniform(1.5, 2.5, fits), rng.uniform(1.5, 2.5, fits),
        rng.uniform(0.8, 1.2, fits), rng.uniform(5, 15, fits),
    ])
    y = np.empty((fits, GRID.shape[0]))

    def means(s):
        y[s:s + block] = gauss_2d(GRID.T[:, None, :], *truth[s:s + block].T[:, :, None])
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        list(pool.map(means, range(0, fits, block)))
    for s in range(0, fits, block):
        y[s:s + block] = rng.poisson(y[s:s + block])
    return y, truth * rng.uniform(0.9, 1.1, truth.shape)


def timed(run):
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def cudamin_tool(y, p0, backend, keep_pcov=False, **options):
    """A cudamin row: `run(n)` fits the first n fits, from numpy to numpy."""
    def run(n):
        seconds, (popt, pcov, info) = timed(lambda: cudamin.curve_fit_batch(
            "gauss-2d", GRID, y[:n], p0[:n], backend=backend, **TIGHT, **options))
        out = dict(popt=popt.astype(np.float64), status=info["status"],
                   note=f"mean nfev {np.mean(info['nfev']):.1f}")
        if keep_pcov:
            out["pcov"] = pcov
        return seconds, out
    moved = "" if backend == "cpu" else ": packing, upload and download timed"
    return run, f"backend {backend}; numpy in and out{moved}"


class Torch:
    """torch, its device and the data there (uploaded once per dtype, before any clock)."""

    def __init__(self, args, y, p0):
        self.torch = need("torch")
        if args.backend == "cuda" and not self.torch.cuda.is_available():
            raise Skip("torch sees no CUDA device")
        self.device = "cuda" if self.torch.cuda.is_available() else "cpu"
        self.y, self.p0, self.on = y, p0, {}

    def data(self, dtype):
        if dtype not in self.on:
            self.on[dtype] = tuple(self.torch.from_numpy(a).to(self.device, dtype) for a in (self.y, self.p0))
            self.sync()
        return self.on[dtype]

    def sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def release(self):
        """Gives the allocator's cached blocks back (untimed), for cudamin's and JAX's turns."""
        if self.device == "cuda":
            self.torch.cuda.empty_cache()


def torch_lm_tool(args, shared, precision):
    t = shared()
    import torch_batch_lm
    yt, pt = t.data(getattr(t.torch, precision))
    grid = t.torch.from_numpy(GRID).to(t.device, yt.dtype)

    def run(n):
        t.sync()
        start = time.perf_counter()
        popt, status, nit = torch_batch_lm.fit(yt[:n], pt[:n], grid, max_iter=MAX_ITER,
                                               chunk=args.chunk, **{k: TIGHT[k] for k in ("ftol", "xtol")})
        t.sync()
        seconds = time.perf_counter() - start
        out = dict(popt=popt.double().cpu().numpy(), status=status.cpu().numpy(),
                   note=f"mean iterations {nit.double().mean().item():.1f}")
        del popt, status, nit
        t.release()
        return seconds, out
    return run, f"{t.device}; data on the device before timing"


def torchimize_tool(args, shared):
    t = shared()
    tz = need("torchimize.functions")
    import torch_batch_lm
    torch = t.torch
    yt, pt = t.data(torch.float64)
    grid = torch.from_numpy(GRID).to(t.device)
    gx, gy = grid[:, 0].contiguous(), grid[:, 1].contiguous()

    def residuals(p, y):  # its shapes: (fits, costs, points), the Jacobian (…, points, params)
        return (torch_batch_lm.model(p, gx, gy) - y)[:, None, :]

    def jac(p, y):
        return torch_batch_lm.model_and_jacobian(p, gx, gy)[1][:, None]

    def run(n):
        t.sync()
        start = time.perf_counter()
        popt, moved, iters = [], [], []
        for s in range(0, n, args.chunk):
            e = min(s + args.chunk, n)
            steps = tz.lsq_lma_parallel(pt[s:e].clone(), residuals, jac, args=(yt[s:e],),
                                        max_iter=MAX_ITER, ftol=TIGHT["ftol"], ptol=TIGHT["xtol"],
                                        gtol=TIGHT["gtol"])
            popt.append(steps[-1])
            last = steps[-2] if len(steps) > 1 else pt[s:e]
            moved.append((steps[-1] != last).any(-1))
            iters.append(len(steps))
            del steps
        popt, moved = torch.cat(popt), torch.cat(moved)
        t.sync()
        seconds = time.perf_counter() - start
        ok = torch.isfinite(popt).all(-1) & ~moved
        out = dict(popt=popt.cpu().numpy(), status=ok.cpu().numpy().astype(int),
                   note=f"iterations (batch-wide) {', '.join(map(str, iters[:4]))}")
        del popt, moved, ok
        t.release()
        return seconds, out
    return run, f"{t.device}; data on the device before timing; success: no move in the last iteration"


def x64(jax, on):
    """A context with JAX's 64-bit mode on or off: float32 fits run with it off, as optimistix's
    LM mixes in a float64 otherwise."""
    state = getattr(jax, "enable_x64", None)
    if state is not None:
        return state(on)
    import jax.experimental as experimental
    return experimental.enable_x64() if on else experimental.disable_x64()


def jax_tool(args, y, p0, precision):
    jax = need("jax")
    if args.backend == "cuda" and jax.default_backend() != "gpu":
        raise Skip(f"jax has no GPU backend (default: {jax.default_backend()})")
    optx = need("optimistix")
    import jax.numpy as jnp
    with x64(jax, precision == "float64"):
        return jax_runner(args, jax, jnp, optx, y, p0, precision)


def jax_runner(args, jax, jnp, optx, y, p0, precision):
    mode = precision == "float64"
    dtype = getattr(jnp, precision)
    tol = max(TIGHT["ftol"], float(jnp.finfo(dtype).eps))
    gx, gy = (jnp.asarray(GRID[:, j], dtype) for j in (0, 1))

    def residuals(theta, yf):
        a, x0, y0, s, b = theta
        return a * jnp.exp(-((gx - x0) ** 2 + (gy - y0) ** 2) / (2 * s * s)) + b - yf

    solver = optx.LevenbergMarquardt(rtol=tol, atol=tol)

    def one(theta, yf):
        sol = optx.least_squares(residuals, solver, theta, args=yf, max_steps=MAX_ITER, throw=False)
        return sol.value, sol.result == optx.RESULTS.successful, sol.stats["num_steps"]

    solve = jax.jit(jax.vmap(one))
    chunk = min(args.chunk, y.shape[0])
    pad = -y.shape[0] % chunk  # every chunk of one shape: one compilation
    yj, pj = (jax.device_put(jnp.asarray(np.concatenate([a, np.repeat(a[:1], pad, 0)]), dtype))
              for a in (y, p0))
    yj.block_until_ready()

    def run(n):
        with x64(jax, mode):
            start = time.perf_counter()
            parts = [solve(pj[s:s + chunk], yj[s:s + chunk]) for s in range(0, n, chunk)]
            jax.block_until_ready(parts)
            seconds = time.perf_counter() - start
        value, ok, steps = (np.concatenate([np.asarray(part[i]) for part in parts])[:n] for i in range(3))
        return seconds, dict(popt=value.astype(np.float64), status=ok.astype(int),
                             note=f"mean steps {steps.mean():.1f}")
    return run, f"{jax.default_backend()}; data on the device before timing; rtol = atol = {tol:.1e}"


def scipy_tool(y, p0):
    from scipy.optimize import curve_fit

    def run(n):
        def one(f):
            try:
                popt, pcov, _, _, ier = curve_fit(gauss_2d, GRID.T, y[f], p0=p0[f], jac=jacobian,
                                                  full_output=True, **TIGHT)
                return popt, pcov, ier
            except RuntimeError:  # out of evaluations
                return np.full(5, np.nan), np.full((5, 5), np.inf), 0
        seconds, fits = timed(lambda: [one(f) for f in range(n)])
        return seconds, dict(popt=np.array([f[0] for f in fits]), pcov=np.array([f[1] for f in fits]),
                             status=np.array([f[2] for f in fits]), note="host, MINPACK lmder")
    return run, "a Python loop on the subsample"


def tools(args, y, p0, scipy_fits):
    """(label, fits timed, factory): each factory gives `(run, note)` or raises Skip."""
    cache = {}

    def shared():  # one Torch for the torch rows
        if "torch" not in cache:
            cache["torch"] = Torch(args, y, p0)
        return cache["torch"]
    fits, b = y.shape[0], args.backend
    rows = [
        (REFERENCE, fits, lambda: cudamin_tool(y, p0, b, keep_pcov=True)),
        ("cudamin float32", fits, lambda: cudamin_tool(y, p0, b, dtype=np.float32)),
        ("cudamin poisson (MLE)", fits, lambda: cudamin_tool(y, p0, b, estimator="poisson")),
    ]
    if b != "cpu":
        rows.append((CPU_PATH, fits, lambda: cudamin_tool(y, p0, "cpu", keep_pcov=True)))
    rows += [
        ("torch LM float64 (this bench's)", fits, lambda: torch_lm_tool(args, shared, "float64")),
        ("torch LM float32 (this bench's)", fits, lambda: torch_lm_tool(args, shared, "float32")),
        ("torchimize lsq_lma_parallel float64", fits, lambda: torchimize_tool(args, shared)),
        ("optimistix LM, jax.vmap, float64", fits, lambda: jax_tool(args, y, p0, "float64")),
        ("optimistix LM, jax.vmap, float32", fits, lambda: jax_tool(args, y, p0, "float32")),
        (SCIPY, scipy_fits, lambda: scipy_tool(y, p0)),
    ]
    return rows


def failure(e):
    return f"failed: {e.__class__.__name__}: {str(e).strip()[:2000]}"


def machine():
    line = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    try:
        import torch
        if torch.cuda.is_available():
            line += f"; GPU {torch.cuda.get_device_name(0)}"
    except ImportError:
        pass
    return line


def copy_floor(fits):
    """What one `curve_fit_batch(backend='cuda')` call from numpy copies, as float64 words a fit:
    up y (25), its offset and p0 (5); down the report, popt, 5 counts and R's triangle (15), from
    which the host makes pcov. Timed at this machine's pageable bandwidth with torch (1 GiB each
    way, median of 3). None without a CUDA torch."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
    except ImportError:
        return None
    up, down = fits * (25 + 1 + 5) * 8, fits * (5 + 5 + 15) * 8
    host = np.ones(2**27)
    dev = torch.from_numpy(host).cuda()
    rates = []
    for copy in (lambda: torch.from_numpy(host).cuda(), lambda: dev.cpu()):
        times = []
        for _ in range(3):
            torch.cuda.synchronize()
            seconds, _ = timed(lambda: (copy(), torch.cuda.synchronize()))
            times.append(seconds)
        rates.append(host.nbytes / statistics.median(times))
    seconds = up / rates[0] + down / rates[1]
    return dict(up_gb=up / 1e9, down_gb=down / 1e9, h2d_gbs=rates[0] / 1e9, d2h_gbs=rates[1] / 1e9,
                seconds=seconds, fits_per_s=fits / seconds)


def compare(out, ref, errors, n):
    """(successes, largest relative popt difference, largest in standard errors) of a tool's
    answers on its first n fits against the reference's, on the fits both fitted."""
    ok = (out["status"] > 0) & (ref["status"][:n] > 0) & np.isfinite(out["popt"]).all(-1)
    successes = int(np.sum(out["status"] > 0))
    if not ok.any():
        return successes, None, None
    diff = np.abs(out["popt"][ok] - ref["popt"][:n][ok])
    return (successes, float(np.max(diff / np.abs(ref["popt"][:n][ok]))),
            float(np.max(diff / errors[:n][ok])))


def run_all(args, order):
    """Every tool that starts: one warm-up round on the first chunk (scipy: its first 100 fits),
    then `repeats` rounds, the tools alternating. Returns (runners, skipped, times, last answers)."""
    runners, skipped = {}, {}
    for label, count, factory in order:
        if any(text in label for text in args.skip):
            skipped[label] = "left out by --skip"
            continue
        try:
            runners[label] = (count, *factory())
        except Skip as e:
            skipped[label] = str(e)
        except Exception as e:  # a tool that fails to start is reported, not fatal
            skipped[label] = failure(e)
            traceback.print_exc()
    times, last = {label: [] for label in runners}, {}
    for repeat in range(args.repeats + 1):
        for label, (count, run, _) in list(runners.items()):
            warm = min(count, 100 if label == SCIPY else args.chunk)
            n = warm if repeat == 0 else count
            try:
                with warnings.catch_warnings():  # a fit's covariance may be singular
                    warnings.simplefilter("ignore")
                    seconds, out = run(n)
            except Exception as e:  # the vmapped optimistix solve may fail: its row says how
                skipped[label] = failure(e)
                del runners[label]
                traceback.print_exc()
                continue
            if repeat > 0:
                times[label].append(seconds)
                last[label] = out
            print(f"  {label}: {seconds:.4f} s for {n:,} fits{' (warm-up)' if repeat == 0 else ''}",
                  file=sys.stderr, flush=True)
    return runners, skipped, times, last


def table(rows):
    print("| tool | fits | median s | fits/s | times s | successes | popt rel. diff. | "
          "popt diff. in σ | note |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "skipped" in r:
            print(f"| {r['tool']} | skipped | | | | | | | {r['skipped'][:300]} |")
            continue
        rel, sig = r.get("popt_rel"), r.get("popt_sigma")
        rel = "reference" if r["reference"] else "" if rel is None else f"{rel:.2e}"
        sig = "" if sig is None or r["reference"] else f"{sig:.2e}"
        print(f"| {r['tool']} | {r['fits']:,} | {r['seconds']:.4f} | {r['fits_per_s']:,.0f} | "
              f"{', '.join(f'{t:.4f}' for t in r['times'])} | {r['successes']:,} | {rel} | {sig} | "
              f"{r['note']} |")


def summary(args, rows, last, ref, reference):
    """The lines after the table: cudamin against scipy, issue 67's targets, the copy floor."""
    checks = {}
    rate = {r["tool"]: r["fits_per_s"] for r in rows if "fits_per_s" in r}
    if reference in rate and SCIPY in rate:
        checks["cudamin_over_scipy"] = rate[reference] / rate[SCIPY]
        sp, n = last[SCIPY], last[SCIPY]["popt"].shape[0]
        both = (sp["status"] > 0) & (ref["status"][:n] > 0)
        line = f"{reference} / scipy loop, fits per second: {checks['cudamin_over_scipy']:.1f}x"
        if both.any():
            rc = sp["pcov"][both]
            scale = np.sqrt(np.einsum("fii,fjj->fij", np.abs(rc), np.abs(rc)))
            checks["scipy_popt_rel"] = float(np.max(np.abs(ref["popt"][:n][both] - sp["popt"][both])
                                                    / np.abs(sp["popt"][both])))
            checks["scipy_pcov_rel"] = float(np.max(np.abs(ref["pcov"][both] - rc) / scale))
            line += (f"; on scipy's {n:,} fits, max popt relative difference "
                     f"{checks['scipy_popt_rel']:.2e}, pcov {checks['scipy_pcov_rel']:.2e}")
        print(line)
    for precision, target in TARGETS.items():
        label = REFERENCE if precision == "float64" else "cudamin float32"
        if label in rate and args.backend == "cuda":  # the targets are a GPU's
            met = rate[label] >= target
            checks[f"target_{precision}"] = dict(fits_per_s=rate[label], target=target, met=met)
            print(f"issue 67, {precision} on backend {args.backend}: {rate[label] / 1e6:.2f} M fits/s "
                  f"against ≥ {target / 1e6:.0f} M ({'met' if met else 'not met'}; Gpufit published "
                  "2.67 M/s)")
    floor = copy_floor(args.fits) if args.backend == "cuda" else None
    if floor:
        checks["copy_floor"] = floor
        print(f"a call from numpy copies {floor['up_gb']:.2f} GB up (y, offsets, p0) and "
              f"{floor['down_gb']:.2f} GB down (the reports); at "
              f"{floor['h2d_gbs']:.1f} / {floor['d2h_gbs']:.1f} GB/s (pageable, torch) that is "
              f"{floor['seconds']:.3f} s, at most {floor['fits_per_s'] / 1e6:.1f} M fits/s without overlap")
    return checks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["cpu", "cuda", "sim"], default="cpu")
    parser.add_argument("--fits", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=10**6, help="fits per torch / JAX pass")
    parser.add_argument("--scipy-fits", type=int, default=None, help="default min(fits, 10000)")
    parser.add_argument("--skip", nargs="+", default=[], metavar="TEXT",
                        help="leave out the rows whose label contains TEXT (e.g. torchimize)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    fits = args.fits
    scipy_fits = min(fits, 10_000 if args.scipy_fits is None else args.scipy_fits)
    seconds, (y, p0) = timed(lambda: data(fits))
    print(f"{machine()}; {fits:,} fits of 25 points, p = 5; backend {args.backend}; "
          f"data made in {seconds:.1f} s", flush=True)
    order = tools(args, y, p0, scipy_fits)
    runners, skipped, times, last = run_all(args, order)
    reference = next((label for label in (REFERENCE, CPU_PATH) if label in last), None)
    ref, errors = last.get(reference), None
    for label in (REFERENCE, CPU_PATH):
        pcov = last.get(label, {}).pop("pcov", None)
        if label == reference:  # its standard errors, and its pcov on scipy's subsample
            errors, ref["pcov"] = np.sqrt(np.einsum("fii->fi", pcov)), pcov[:scipy_fits].copy()
        del pcov
    rows = []
    for label, count, _ in order:
        if label in skipped or label not in last:
            rows.append(dict(tool=label, skipped=skipped.get(label, "no run")))
            continue
        median = statistics.median(times[label])
        row = dict(tool=label, fits=count, seconds=median, fits_per_s=count / median,
                   times=times[label], note=f"{runners[label][2]}; {last[label]['note']}",
                   reference=label == reference)
        if ref is not None:
            row["successes"], row["popt_rel"], row["popt_sigma"] = compare(last[label], ref, errors, count)
        else:
            row["successes"] = int(np.sum(last[label]["status"] > 0))
        rows.append(row)
    print()
    table(rows)
    print()
    checks = summary(args, rows, last, ref, reference)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(machine=machine(), backend=args.backend, fits=fits, scipy_fits=scipy_fits,
                           chunk=args.chunk, repeats=args.repeats, reference=reference, rows=rows,
                           checks=checks),
                      f, indent=1, default=float)


if __name__ == "__main__":
    main()
