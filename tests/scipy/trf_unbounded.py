"""scipy's trust-region-reflective method without bounds, for tests/solver_trf.rs
(`unbounded_mgh_runs_match_scipys_trf`, `unbounded_fits_match_scipys_trf`):

    target/scipy-venv/bin/python tests/scipy/trf_unbounded.py     # numpy 2.4.6, scipy 1.17.1

First the 23 MGH least-squares runs of tests/scipy/mgh_lm.py (its residuals, starting points
and complex-step Jacobians), each by `least_squares(fun, x0, jac=J, method='trf')` with every
other option at its default, and again with `x_scale='jac'`. Then the four fit models, each on
its data of tests/fit.rs: expsin (5 parameters) on the robust fits' data with its outliers
(tests/scipy/robust_fits.py), exp-decay (2 exponentials) and gauss-peaks (2 peaks) on the
bounded fits' data (tests/scipy/bounded_fits.py, here without their bounds), and poly (a cubic)
on y = 1 − 0.5x + 0.1x² − 0.005x³ plus that script's noise; each with x_scale 1, 'jac', and
one scale per parameter (`fit_scale`). The cubic takes no third run: with that scale scipy's
second point has ‖g‖∞ = 1.56e-8, a hair above gtol = 1e-8, so rounding alone decides whether
the solve ends there (status 1) or one step later (status 3).

One line per run: (name, n, x_scale, status, nfev, njev, cost), the cost to 17 digits.
"""

import numpy as np
import scipy
from scipy.optimize import least_squares

from bounded_fits import bump, exp_decay, exp_decay_jacobian, gauss_peaks, gauss_peaks_jacobian
from mgh_lm import RUNS, complex_step_jacobian, residual_fn
from robust_fits import P0 as EXPSIN_P0
from robust_fits import data as expsin_data
from robust_fits import jacobian as expsin_jacobian
from robust_fits import model as expsin


def poly(x, *th):
    return sum(c * x**k for k, c in enumerate(th))


def poly_jacobian(x, *th):
    return np.stack([x**k for k in range(len(th))], axis=1)


def fits():
    """(model, p0, x, y, model function, Jacobian) of the four fits."""
    t, y = expsin_data()
    yield ("expsin", EXPSIN_P0, t, y, lambda x, *th: expsin(np.array(th), x),
           lambda x, *th: expsin_jacobian(np.array(th), x))
    i = np.arange(300)
    x = 10.0 * i / 299.0
    noise = 0.02 * np.sin(37.0 * x + 0.3 * i)
    yield ("exp-decay", np.array([1.0, 1.0, 1.0, 0.1]), x,
           2.0 * np.exp(-0.3 * x) + 0.03 * x + noise, exp_decay, exp_decay_jacobian)
    yield ("gauss-peaks", np.array([0.0, 1.0, 3.5, 1.0, 0.5, 8.0, 1.0]), x,
           0.1 + bump(x, 1.0, 4.0, 0.5) + bump(x, 0.3, 6.5, 0.8) - bump(x, 0.05, 8.5, 0.3) + noise,
           gauss_peaks, gauss_peaks_jacobian)
    yield ("poly", np.ones(4), x, 1.0 - 0.5 * x + 0.1 * x**2 - 0.005 * x**3 + noise,
           poly, poly_jacobian)


def fit_scale(n):
    """The per-parameter x_scale of the fits' third run: 1, 2, 0.5, 4, 0.25, …"""
    return np.array([2.0 ** (k if k % 2 else -k) for k in range(n)])


def line(name, n, scale, r):
    print(f'("{name}", {n}, "{scale}", {r.status}, {r.nfev}, {r.njev}, {float(r.cost)!r}),')


def main():
    print(f"# numpy {np.__version__}, scipy {scipy.__version__}; least_squares(method='trf')")
    for name, n, _f_x0, f, start in RUNS:
        x0 = np.array(start(n), dtype=float)
        fun, jac = residual_fn(f), complex_step_jacobian(f)
        for scale in ["1", "jac"]:
            x_scale = 1.0 if scale == "1" else "jac"
            line(name, n, scale, least_squares(fun, x0, jac=jac, method="trf", x_scale=x_scale))
    for name, p0, x, y, f, jac in fits():
        def fun(th, x=x, y=y, f=f):
            return f(x, *th) - y

        def jacobian(th, x=x, jac=jac):
            return jac(x, *th)

        scales = [("1", 1.0), ("jac", "jac"), ("array", fit_scale(p0.size))]
        for scale, x_scale in scales[:2] if name == "poly" else scales:
            with np.errstate(over="ignore", invalid="ignore"):
                r = least_squares(fun, p0, jac=jacobian, method="trf", x_scale=x_scale)
            line(name, p0.size, scale, r)


if __name__ == "__main__":
    main()
