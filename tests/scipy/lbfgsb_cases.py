"""scipy's L-BFGS-B on the bounded cases of tests/solver_lbfgsb.rs.

Run: `python tests/scipy/lbfgsb_cases.py`; the test's table is what this prints.
"""
import numpy as np
import scipy
from scipy.optimize import minimize


def rosen(x):
    x = np.asarray(x)
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))


def rosen_der(x):
    x = np.asarray(x)
    g = np.zeros_like(x)
    g[:-1] += -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return g


def quadratic(x):
    # Σ (i+1)·(x_i − (−1)^i·2)² with a coupling Σ x_i x_{i+1}/2.
    n = len(x)
    c = np.array([(-1) ** i * 2.0 for i in range(n)])
    w = np.arange(1, n + 1, dtype=float)
    return float(np.sum(w * (x - c) ** 2) + 0.5 * np.sum(x[:-1] * x[1:]))


def quadratic_der(x):
    n = len(x)
    c = np.array([(-1) ** i * 2.0 for i in range(n)])
    w = np.arange(1, n + 1, dtype=float)
    g = 2 * w * (x - c)
    g[:-1] += 0.5 * x[1:]
    g[1:] += 0.5 * x[:-1]
    return g


CASES = [
    ("rosenbrock-3", rosen, rosen_der, [-1.2, 1.0, 0.5], [(-2, 0.5), (0, 2), (0.3, 1)]),
    ("rosenbrock-2-upper", rosen, rosen_der, [-1.2, 1.0], [(None, 0.5), (None, None)]),
    ("rosenbrock-10-box", rosen, rosen_der, [-1.2, 1.0] * 5, [(-2, 0.8)] * 10),
    ("rosenbrock-4-unbounded", rosen, rosen_der, [-1.2, 1.0, -1.2, 1.0], [(None, None)] * 4),
    ("rosenbrock-2-outside", rosen, rosen_der, [3.0, -3.0], [(-1, 2), (0, 1)]),
    ("quadratic-8", quadratic, quadratic_der, [0.0] * 8, [(-1, 1)] * 4 + [(None, 1.5), (0, None), (-3, 3), (1, 1)]),
]

# maxls: scipy's limit on one line search's evaluations, small enough to fail searches.
MAXLS_X0 = [-1.2, 1.0, -1.2, 1.0, 0.5, -0.5, 1.5, 2.0, -1.0, 0.3]
MAXLS_CASES = [(maxls, boxed) for boxed in (False, True) for maxls in (1, 2, 3)]
# tests/cli.rs's: the CLI's rosenbrock start, (-1.2, 1) five times, in [-2, 0.8], maxls 1.
CLI_MAXLS_X0 = [-1.2, 1.0] * 5


def print_maxls_cases():
    """(maxls, boxed, status, fun, nit, nfev) of Rosenbrock in 10 variables, unbounded or in
    [-2, 0.8]. Where a search fails (status 2) scipy's fun is its last rejected trial's, not
    f(x); f(x) is printed there."""
    for maxls, boxed in MAXLS_CASES:
        bounds = [(-2, 0.8)] * 10 if boxed else None
        r = minimize(rosen, np.array(MAXLS_X0), jac=rosen_der, method="L-BFGS-B", bounds=bounds,
                     options={"maxls": maxls})
        print(f"({maxls}, {str(boxed).lower()}, {r.status}, {rosen(r.x)!r}, {r.nit}, {r.nfev}),  // {r.message}")
    r = minimize(rosen, np.array(CLI_MAXLS_X0), jac=rosen_der, method="L-BFGS-B", bounds=[(-2, 0.8)] * 10,
                 options={"maxls": 1})
    print(f"// cli: maxls 1 from (-1.2, 1)·5 in [-2, 0.8]: status {r.status}, nit {r.nit}, nfev {r.nfev}")


if __name__ == "__main__":
    print(f"# scipy {scipy.__version__}, numpy {np.__version__}")
    print_maxls_cases()
    for name, f, g, x0, bounds in CASES:
        r = minimize(f, np.array(x0, dtype=float), jac=g, method="L-BFGS-B", bounds=bounds)
        lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds])
        hi = np.array([np.inf if b[1] is None else b[1] for b in bounds])
        active = [int(-1 if x == l else (1 if x == h else 0)) for x, l, h in zip(r.x, lo, hi)]
        print(f'("{name}", {r.status}, {r.fun!r}, {r.nit}, {r.nfev}, &{active}, &{list(map(float, r.x))}),  // {r.message}')
