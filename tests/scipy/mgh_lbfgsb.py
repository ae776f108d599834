"""scipy's L-BFGS-B on bounded versions of the MGH least-squares runs of tests/mgh.rs
(`bounded_mgh_minima_match_scipys` in tests/solver_lbfgsb.rs):

    target/poisson-peers-venv/bin/python tests/scipy/mgh_lbfgsb.py     # numpy 2.4.6, scipy 1.17.1

f(x) = Σ r_i(x)², the residuals and starting points of tests/scipy/mgh_lm.py (written after the
kernels), ∇f = 2·Jᵀr with its complex-step Jacobian. The bounds cut off the unbounded minimum,
so that some are active at the solution: each run first solves without bounds (L-BFGS-B, as
scipy's defaults), then variable 0 gets the upper bound x*₀ − 0.1·(|x*₀| + 1) (below its
unbounded optimum), and the last variable the lower bound x*ₙ₋₁ + 0.1·(|x*ₙ₋₁| + 1) (above it),
every other variable unbounded. Then `minimize(f, x0, jac=∇f, method='L-BFGS-B',
bounds=…)` with every option at its default (x0 is clipped into the box, as scipy does).

It prints one line per run: (name, n, upper0, lower_last, status, f, active set), f to 17
digits; the active set is −1 at a lower bound, 1 at an upper, 0 free. With `--unbounded` it
prints the runs without bounds instead (`unbounded_mgh_minima_match_scipys`): (name, n,
status, f, nit, nfev). With `--loose` it prints runs in a box around both x0 and the unbounded
answer x* that binds neither (`loose_boxes_keep_scipys_minima`): every variable in
[min(x0ᵢ, x*ᵢ) − (|x0ᵢ| + |x*ᵢ| + 1), max(x0ᵢ, x*ᵢ) + (|x0ᵢ| + |x*ᵢ| + 1)], so that the bounded
step runs throughout: (name, n, status, f, nit, nfev).
"""

import sys

import numpy as np
import scipy
from scipy.optimize import minimize

from mgh_lm import RUNS, complex_step_jacobian, residual_fn


def free_runs():
    """Each run without bounds: (name, n, x0, residuals, Jacobian, f, ∇f, scipy's L-BFGS-B
    result from x0)."""
    for name, n, _f_x0, f, start in RUNS:
        x0 = np.array(start(n), dtype=float)
        fun, jac = residual_fn(f), complex_step_jacobian(f)

        def value(x, fun=fun):
            r = fun(x)
            return float(r @ r)

        def gradient(x, fun=fun, jac=jac):
            return 2.0 * jac(x).T @ fun(x)

        free = minimize(value, x0, jac=gradient, method="L-BFGS-B")
        yield name, n, x0, fun, jac, value, gradient, free


def bounded_runs():
    """Each run with its bounds: (name, n, x0, residuals, Jacobian, f, ∇f, lower, upper), the
    bounds as lists (variable 0's upper and the last variable's lower finite)."""
    for name, n, x0, fun, jac, value, gradient, free in free_runs():
        lo = [-np.inf] * n
        hi = [np.inf] * n
        hi[0] = float(free.x[0] - 0.1 * (abs(free.x[0]) + 1.0))
        lo[-1] = float(free.x[-1] + 0.1 * (abs(free.x[-1]) + 1.0))
        yield name, n, x0, fun, jac, value, gradient, lo, hi


def print_run(name, n, r):
    """One line of `MGH_UNBOUNDED` or `MGH_LOOSE`."""
    print(f'("{name}", {n}, {r.status}, {float(r.fun)!r}, {r.nit}, {r.nfev}),  // {r.message}')


def main():
    print(f"# numpy {np.__version__}, scipy {scipy.__version__}; minimize(method='L-BFGS-B')")
    if "--unbounded" in sys.argv:
        for name, n, _x0, _fun, _jac, _value, _gradient, free in free_runs():
            print_run(name, n, free)
        return
    if "--loose" in sys.argv:
        for name, n, x0, _fun, _jac, value, gradient, free in free_runs():
            margin = np.abs(x0) + np.abs(free.x) + 1.0
            lo = np.minimum(x0, free.x) - margin
            hi = np.maximum(x0, free.x) + margin
            r = minimize(value, x0, jac=gradient, method="L-BFGS-B", bounds=list(zip(lo, hi)))
            print_run(name, n, r)
        return
    for name, n, x0, _fun, _jac, value, gradient, lo, hi in bounded_runs():
        upper0, lower_last = hi[0], lo[-1]
        r = minimize(value, x0, jac=gradient, method="L-BFGS-B", bounds=list(zip(lo, hi)))
        active = [int(-1 if x == l else (1 if x == h else 0)) for x, l, h in zip(r.x, lo, hi)]
        print(f'("{name}", {n}, {upper0!r}, {lower_last!r}, {r.status}, {float(r.fun)!r}, &{active}),  // {r.message}, nit {r.nit}')


if __name__ == "__main__":
    main()
