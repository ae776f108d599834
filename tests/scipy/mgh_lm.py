"""scipy's Levenberg–Marquardt on the 23 MGH least-squares runs of tests/mgh.rs
(`levenberg_marquardt_solves_what_bfgs_solves`): run with numpy and scipy installed,

    target/poisson-peers-venv/bin/python tests/scipy/mgh_lm.py     # numpy 2.4.6, scipy 1.17.1

What it computes. For each run, `scipy.optimize.least_squares(fun, x0, jac=J, method='lm')` with
every other option at its default: ftol = xtol = gtol = 1e-8, x_scale = 'jac' (MINPACK's own
column scaling, diag = None), max_nfev = 100·n (scipy's default for 'lm' with a callable jac).
That is MINPACK's lmder. It prints one line per run,

    ("name", n, nfev, njev, status, sum_of_squares),  // sum of squares to 17 digits

where sum_of_squares = 2·cost = Σ f_i² at scipy's answer, to 7 significant digits (as
tests/mgh.rs holds scipy's BFGS numbers), and the same number to full precision in the comment.

The runs are the 25 of tests/mgh.rs's `RUNS` less mgh-21 and mgh-22, which
src/problems/mgh.rs builds as plain terms (`instance::<ExtRosenbrock>`, `instance::<ExtPowell>`),
not as least-squares residuals, so the Rust test skips them. The residuals are written after the
kernels (gpu-kernels/src/terms/mgh/mghNN_*.rs: the same count m, order, sign and form, e.g.
t_i = (i+1)/divisor, Chebyshev by the three-term recurrence, helical valley's θ as
atan(x₂/x₁)/2π + ½ for x₁ < 0), since `evaluator.into_least_squares()` hands LM those residuals.
The starting points are src/problems/mgh.rs's (the paper's x0, unscaled).

The Jacobian is by complex step, J[:, j] = Im f(x + i·h·e_j) / h with h = 1e-30: exact to
rounding for these analytic residuals (branches, such as helical valley's, test the real part).
Before solving, each run checks, at x0:
  - Σ f_i² against the table's f_x0 in tests/mgh.rs (relative 1e-12, as `f_at_x0_is_the_papers`);
  - the complex-step Jacobian against central differences (relative 1e-6 of max|J|).
A failed check prints a line starting with ERROR (and the script exits 1 at the end).

`x_scale='jac'` is passed explicitly: it is scipy >= 1.16's default for 'lm' (the same call),
and older scipy (default x_scale = 1) then makes the same MINPACK call (diag = None, mode 1).

Caveat, scipy 1.15+ (MINPACK translated to C, scipy/optimize/__minpack.c): qrfac recomputes a
column norm with `enorm(m-j, &a[(j+1) + lda*k])`, one element too many (Fortran's
`enorm(m-j, a(j+1,k))` has 1-based j, i.e. m-j-1 elements 0-based). It adds the next column's
first entry squared, and for the last column reads one double past the end of fjac: heap memory
(valgrind: "Invalid read of size 8 ... 0 bytes after a block of size 624", fjac 13×6, in mgh-18).
The branch is taken only where column pivoting meets (near) dependent columns; here in mgh-18
(x0 = (1, 2, 1, 1, 1, 1) makes columns 1/5 and 3/6 equal) and in mgh-13's last iterations.
Each row's comment says where (qrfac_recomputes). With scipy 1.17.1 mgh-18 is not reproducible:
from one call to the next in the same process, and with MALLOC_PERTURB_, it ends either with
nfev 44, njev 31, status 3 at ~1e-31 (2.7e-31, 3.4e-31, ...) or with nfev 3, njev 2, status 4
(gtol) at F = 0.6474010557301731; mgh-13 changed once (MALLOC_PERTURB_=255: nfev 39, njev 39,
2.8e-44 instead of 33, 33, 4.7e-37). scipy 1.14.1 (Fortran MINPACK; numpy 2.2.6), run as
`import mgh_lm; mgh_lm.main()`, is deterministic and prints the same rows as 1.17.1 except
mgh-18: (44, 31, 3, 1.602374e-31).
"""

import sys

import numpy as np
import scipy
from scipy.optimize import least_squares

SQRT_A = np.sqrt(1e-5)  # penalty functions I and II: √a, a = 1e-5


# ---- Residuals, one function per kernel (0-based i and x as in the kernels).


def mgh01(x):
    return [(x[1] - x[0] ** 2) * 10.0, 1.0 - x[0]]


def mgh02(x):
    x1, x2 = x[0], x[1]
    return [
        x1 - 13.0 + ((5.0 - x2) * x2 - 2.0) * x2,
        x1 - 29.0 + ((x2 + 1.0) * x2 - 14.0) * x2,
    ]


def mgh03(x):
    return [x[0] * x[1] * 1e4 - 1.0, np.exp(-x[0]) + np.exp(-x[1]) - 1.0001]


def mgh04(x):
    return [x[0] - 1e6, x[1] - 2e-6, x[0] * x[1] - 2.0]


def mgh05(x):
    y = [1.5, 2.25, 2.625]
    return [y[i] - x[0] * (1.0 - x[1] ** (i + 1)) for i in range(3)]


def mgh07(x):
    x1, x2 = x[0], x[1]
    # θ in turns: atan(x₂/x₁)/2π, + ½ for x₁ < 0; ±¼ at x₁ = 0 (branch on the real part).
    if np.real(x1) > 0.0:
        theta = np.arctan(x2 / x1) * (0.5 / np.pi)
    elif np.real(x1) < 0.0:
        theta = np.arctan(x2 / x1) * (0.5 / np.pi) + 0.5
    else:
        theta = -0.25 if np.real(x2) < 0.0 else 0.25
    return [
        (x[2] - theta * 10.0) * 10.0,
        (np.sqrt(x1**2 + x2**2) - 1.0) * 10.0,
        x[2],
    ]


def mgh08(x):
    y = [0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34, 2.10, 4.39]
    f = []
    for i in range(15):
        u, v = i + 1, 15 - i
        w = min(u, v)
        f.append(y[i] - (x[0] + u / (x[1] * v + x[2] * w)))
    return f


def mgh09(x):
    y_half = [0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989]
    f = []
    for i in range(15):
        t = (7.0 - i) / 2.0
        y = y_half[min(i, 14 - i)]
        f.append(x[0] * np.exp((x[1] * (x[2] - t) ** 2) * -0.5) - y)
    return f


def sample_point(i, divisor):
    return (i + 1) / divisor


def mgh12(x):
    f = []
    for i in range(10):
        t = sample_point(i, 10.0)
        target = np.exp(-t) - np.exp(-10.0 * t)
        f.append(np.exp(x[0] * -t) - np.exp(x[1] * -t) - x[2] * target)
    return f


def mgh13(x):
    return [
        x[0] + x[1] * 10.0,
        (x[2] - x[3]) * np.sqrt(5.0),
        (x[1] - x[2] * 2.0) ** 2,
        (x[0] - x[3]) ** 2 * np.sqrt(10.0),
    ]


def mgh14(x):
    return [
        (x[1] - x[0] ** 2) * 10.0,
        1.0 - x[0],
        (x[3] - x[2] ** 2) * np.sqrt(90.0),
        1.0 - x[2],
        (x[1] + x[3] - 2.0) * np.sqrt(10.0),
        (x[1] - x[3]) / np.sqrt(10.0),
    ]


def mgh16(x):
    f = []
    for i in range(20):
        t = sample_point(i, 5.0)
        linear = x[0] + x[1] * t - np.exp(t)
        periodic = x[2] + x[3] * np.sin(t) - np.cos(t)
        f.append(linear**2 + periodic**2)
    return f


def mgh18(x):
    f = []
    for i in range(13):
        t = sample_point(i, 10.0)
        y = np.exp(-t) - 5.0 * np.exp(-10.0 * t) + 3.0 * np.exp(-4.0 * t)
        f.append(
            x[2] * np.exp(x[0] * -t) - x[3] * np.exp(x[1] * -t) + x[5] * np.exp(x[4] * -t) - y
        )
    return f


def mgh20(x):
    f = []
    for i in range(29):
        t = sample_point(i, 29.0)
        p, dp, t_pow = x[0], 0.0, 1.0
        for j in range(1, len(x)):
            dp = dp + x[j] * (j * t_pow)
            t_pow *= t
            p = p + x[j] * t_pow
        f.append(dp - p**2 - 1.0)
    f += [x[0], x[1] - x[0] ** 2 - 1.0]
    return f


def mgh23(x):
    n = len(x)
    f = [(x[i] - 1.0) * SQRT_A for i in range(n)]
    norm_sq = 0.0
    for j in range(n):
        norm_sq = norm_sq + x[j] ** 2
    f.append(norm_sq - 0.25)
    return f


def mgh24(x):
    n = len(x)
    tenth_exp = lambda v: np.exp(v * 0.1)
    f = []
    for i in range(2 * n):
        if i == 0:
            f.append(x[0] - 0.2)
        elif i == 2 * n - 1:
            weighted = 0.0
            for j in range(n):
                weighted = weighted + x[j] ** 2 * (n - j)
            f.append(weighted - 1.0)
        elif i < n:
            y = np.exp((i + 1) * 0.1) + np.exp(i * 0.1)
            f.append((tenth_exp(x[i]) + tenth_exp(x[i - 1]) - y) * SQRT_A)
        else:
            f.append((tenth_exp(x[i - n + 1]) - np.exp(-0.1)) * SQRT_A)
    return f


def mgh25(x):
    n = len(x)
    weighted = 0.0
    for j in range(n):
        weighted = weighted + (x[j] - 1.0) * (j + 1)
    return [x[i] - 1.0 for i in range(n)] + [weighted, weighted**2]


def mgh26(x):
    n = len(x)
    cos_sum = 0.0
    for j in range(n):
        cos_sum = cos_sum + np.cos(x[j])
    return [n - cos_sum + ((1.0 - np.cos(x[i])) * (i + 1) - np.sin(x[i])) for i in range(n)]


def mgh30(x):
    n = len(x)
    f = []
    for i in range(n):
        left = x[i - 1] if i > 0 else 0.0
        right = x[i + 1] if i + 1 < n else 0.0
        f.append((3.0 - x[i] * 2.0) * x[i] - left - right * 2.0 + 1.0)
    return f


def mgh31(x):
    n = len(x)
    f = []
    for i in range(n):
        last = min(i + 1, n - 1)
        coupling = 0.0
        for j in range(max(i - 5, 0), last + 1):
            if j != i:
                coupling = coupling + x[j] * (x[j] + 1.0)
        f.append(x[i] * (x[i] ** 2 * 5.0 + 2.0) + 1.0 - coupling)
    return f


def shifted_chebyshev(order, xj):
    z = xj * 2.0 - 1.0
    previous, current = 1.0, z
    for _ in range(1, order):
        previous, current = current, z * current * 2.0 - previous
    return current


def mgh35(x):
    n = len(x)
    f = []
    for i in range(n):
        order = i + 1
        integral = 0.0 if order % 2 == 1 else -1.0 / (order * order - 1)
        total = 0.0
        for j in range(n):
            total = total + shifted_chebyshev(order, x[j])
        f.append(total / n - integral)
    return f


# ---- The runs: tests/mgh.rs's RUNS (name, n, f_x0) less mgh-21/22, x0 from src/problems/mgh.rs.

RUNS = [
    ("mgh-1", 2, 24.2, mgh01, lambda n: [-1.2, 1.0]),
    ("mgh-2", 2, 400.5, mgh02, lambda n: [0.5, -2.0]),
    ("mgh-3", 2, 1.13526171734838, mgh03, lambda n: [0.0, 1.0]),
    ("mgh-4", 2, 999998000003.0, mgh04, lambda n: [1.0, 1.0]),
    ("mgh-5", 2, 14.203125, mgh05, lambda n: [1.0, 1.0]),
    ("mgh-7", 3, 2500.0, mgh07, lambda n: [-1.0, 0.0, 0.0]),
    ("mgh-8", 3, 41.681695861678, mgh08, lambda n: [1.0, 1.0, 1.0]),
    ("mgh-9", 3, 3.88810699116668e-06, mgh09, lambda n: [0.4, 1.0, 0.0]),
    ("mgh-12", 3, 1031.1538106094, mgh12, lambda n: [0.0, 10.0, 20.0]),
    ("mgh-13", 4, 215.0, mgh13, lambda n: [3.0, -1.0, 0.0, 1.0]),
    ("mgh-14", 4, 19192.0, mgh14, lambda n: [-3.0, -1.0, -3.0, -1.0]),
    ("mgh-16", 4, 7926693.33699743, mgh16, lambda n: [25.0, 5.0, -5.0, -1.0]),
    ("mgh-18", 6, 0.77907007565597, mgh18, lambda n: [1.0, 2.0, 1.0, 1.0, 1.0, 1.0]),
    ("mgh-20", 6, 30.0, mgh20, lambda n: [0.0] * n),
    ("mgh-20", 9, 30.0, mgh20, lambda n: [0.0] * n),
    ("mgh-23", 4, 885.06264, mgh23, lambda n: [float(j) for j in range(1, n + 1)]),
    ("mgh-23", 10, 148032.56535, mgh23, lambda n: [float(j) for j in range(1, n + 1)]),
    ("mgh-24", 4, 2.34000880546302, mgh24, lambda n: [0.5] * n),
    ("mgh-25", 10, 2198551.1625, mgh25, lambda n: [1.0 - j / n for j in range(1, n + 1)]),
    ("mgh-26", 10, 0.00707575946622284, mgh26, lambda n: [1.0 / n] * n),
    ("mgh-30", 10, 21.0, mgh30, lambda n: [-1.0] * n),
    ("mgh-31", 10, 360.0, mgh31, lambda n: [-1.0] * n),
    ("mgh-35", 8, 0.0386176982859303, mgh35, lambda n: [j / (n + 1) for j in range(1, n + 1)]),
]


def residual_fn(f):
    """`f` on a real point, as a float array."""
    return lambda x: np.array(f(list(np.asarray(x, dtype=float))), dtype=float)


def complex_step_jacobian(f, h=1e-30):
    def jac(x):
        x = np.asarray(x, dtype=float)
        columns = []
        for j in range(x.size):
            xc = x.astype(complex)
            xc[j] += 1j * h
            columns.append(np.imag(np.array(f(list(xc)), dtype=complex)) / h)
        return np.stack(columns, axis=1)

    return jac


def qrfac_recomputes(jac_matrix):
    """Where MINPACK's qrfac (with column pivoting) recomputes a column norm, for the Jacobian
    `jac_matrix`: the (j, k) at which `0.05·(rdiag[k]/wa[k])² <= eps` after step j.

    scipy 1.17's C translation of qrfac (scipy/optimize/__minpack.c) recomputes there
    `enorm(m-j, &a[(j+1) + lda*k])`, one element more than Fortran's `enorm(m-j, a(j+1,k))`
    with 1-based j: it adds a[0, k+1]² (the next column's first entry), or, for the last
    column k = n-1, reads one double past the end of fjac, heap memory that is not
    initialized. Runs where this branch is taken may differ from Fortran MINPACK, and a
    k = n-1 hit makes the result depend on the heap (it changes with MALLOC_PERTURB_).
    """
    a = np.array(jac_matrix, dtype=float, copy=True)
    m, n = a.shape
    eps = np.finfo(float).eps
    rdiag = np.linalg.norm(a, axis=0)
    wa = rdiag.copy()
    hits = []
    for j in range(min(m, n)):
        kmax = j + int(np.argmax(rdiag[j:]))  # first of the largest, as qrfac's strict `>`
        if kmax != j:
            a[:, [j, kmax]] = a[:, [kmax, j]]
            rdiag[kmax], wa[kmax] = rdiag[j], wa[j]
        ajnorm = np.linalg.norm(a[j:, j])
        if ajnorm == 0.0:
            rdiag[j] = 0.0
            continue
        if a[j, j] < 0.0:
            ajnorm = -ajnorm
        a[j:, j] /= ajnorm
        a[j, j] += 1.0
        for k in range(j + 1, n):
            temp = np.dot(a[j:, j], a[j:, k]) / a[j, j]
            a[j:, k] -= temp * a[j:, j]
            if rdiag[k] != 0.0:
                temp = a[j, k] / rdiag[k]
                rdiag[k] *= np.sqrt(max(0.0, 1.0 - temp * temp))
                if 0.05 * (rdiag[k] / wa[k]) ** 2 <= eps:
                    hits.append((j, k))
                    rdiag[k] = np.linalg.norm(a[j + 1 :, k])  # Fortran's (correct) norm
                    wa[k] = rdiag[k]
        rdiag[j] = -ajnorm
    return hits


def central_jacobian(fun, x):
    x = np.asarray(x, dtype=float)
    columns = []
    for j in range(x.size):
        h = np.finfo(float).eps ** (1 / 3) * max(1.0, abs(x[j]))
        plus, minus = x.copy(), x.copy()
        plus[j] += h
        minus[j] -= h
        columns.append((fun(plus) - fun(minus)) / (plus[j] - minus[j]))
    return np.stack(columns, axis=1)


def main():
    print(f"# numpy {np.__version__}, scipy {scipy.__version__}; least_squares(method='lm'),")
    print("# jac = complex step, x_scale = 'jac', defaults otherwise (ftol = xtol = gtol = 1e-8,")
    print("# max_nfev = 100·n)")
    print("# (name, n, nfev, njev, status, sum of squares = 2·cost)")
    errors = 0
    for name, n, f_x0, f, start in RUNS:
        x0 = np.array(start(n), dtype=float)
        assert x0.size == n, name
        fun, jac = residual_fn(f), complex_step_jacobian(f)

        ss0 = float(np.sum(fun(x0) ** 2))
        if abs(ss0 - f_x0) > 1e-12 * abs(f_x0):
            errors += 1
            print(f"ERROR {name} n={n}: sum of squares at x0 {ss0!r}, table f_x0 {f_x0!r}")
        j_cs, j_cd = jac(x0), central_jacobian(fun, x0)
        scale = max(np.max(np.abs(j_cs)), 1e-300)
        jac_err = np.max(np.abs(j_cs - j_cd)) / scale
        if not jac_err <= 1e-6:
            errors += 1
            print(f"ERROR {name} n={n}: complex-step vs central Jacobian, relative {jac_err:.2e}")

        jacobians = []

        def recording_jac(x):
            jacobians.append(jac(x))
            return jacobians[-1]

        r = least_squares(fun, x0, jac=recording_jac, method="lm", x_scale="jac")
        # lmder's own Jacobians: scipy evaluates one more after lmder returns.
        hits = [(i, h) for i, J in enumerate(jacobians[: r.njev]) for h in qrfac_recomputes(J)]
        ss = 2.0 * float(r.cost)
        row = f'("{name}", {n}, {r.nfev}, {r.njev}, {r.status}, {ss:.6e}),'
        note = ""
        if hits:
            last = sum(1 for _, (j, k) in hits if k == n - 1)
            note = (f"; qrfac norm recomputed {len(hits)}x in Jacobians "
                    f"{sorted({i for i, _ in hits})}, {last}x for the last column, where "
                    f"scipy 1.15+ reads past fjac")
        print(f"{row:<44} // {ss!r} (F(x0) {ss0:.15g}, jac err {jac_err:.1e}{note})")
    if errors:
        print(f"ERROR: {errors} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    main()
