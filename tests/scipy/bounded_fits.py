"""scipy's answers for tests/fit.rs's bounded fits (`bounded_fits_match_curve_fit`):

    target/poisson-peers-venv/bin/python tests/scipy/bounded_fits.py   # numpy 2.4.6, scipy 1.17.1

Two fits where the unbounded fit goes unphysical, each at 300 points x = 10·i/299 with the
small deterministic noise 0.02·sin(37x + 0.3i):
- exp-decay, 2 exponentials, y = 2·exp(−0.3x) + 0.03x, from p0 = (1, 1, 1, 0.1) (not all ones:
  two equal components are interchangeable, and which one ends at the bound would be rounding's
  choice): the slow drift makes the unbounded fit (`method='lm'`) use a growing exponential (a
  negative rate); with every parameter ≥ 0 the second rate ends at its bound 0 (the drift
  fitted as a constant);
- gauss-peaks, 2 peaks, y = 0.1 + G(1, 4, 0.5) + G(0.3, 6.5, 0.8) − G(0.05, 8.5, 0.3),
  G(a, μ, s) = a·exp(−(x − μ)²/(2s²)), from p0 = (0, 1, 3.5, 1, 0.5, 8, 1): unbounded, the
  second peak turns into a dip with a negative amplitude; with amplitudes ≥ 0, centres in
  [0, 10] and widths in [0.05, 5] it finds the second peak, and no bound is active.
Each is `curve_fit(f, x, y, p0, jac=J, bounds=…)` (so `least_squares(method='trf')`) with the
exact Jacobian. Printed: the unbounded fit's parameters (to show what goes wrong), then popt,
√diag(pcov), and the active set (scipy's `find_active_constraints` with rtol = xtol = 1e-8,
what `least_squares` reports as `active_mask`).
"""

import warnings

import numpy as np
import scipy
from scipy.optimize import curve_fit, least_squares
from scipy.optimize._lsq.common import find_active_constraints


def exp_decay(x, *th):
    return sum(th[2 * i] * np.exp(-th[2 * i + 1] * x) for i in range(len(th) // 2))


def exp_decay_jacobian(x, *th):
    columns = []
    for i in range(len(th) // 2):
        e = np.exp(-th[2 * i + 1] * x)
        columns += [e, -th[2 * i] * x * e]
    return np.stack(columns, axis=1)


def gauss_peaks(x, *th):
    y = th[0] + 0.0 * x
    for i in range((len(th) - 1) // 3):
        a, mu, s = th[1 + 3 * i:4 + 3 * i]
        y = y + a * np.exp(-(x - mu) ** 2 / (2 * s * s))
    return y


def gauss_peaks_jacobian(x, *th):
    columns = [np.ones_like(x)]
    for i in range((len(th) - 1) // 3):
        a, mu, s = th[1 + 3 * i:4 + 3 * i]
        e = np.exp(-(x - mu) ** 2 / (2 * s * s))
        columns += [e, a * e * (x - mu) / s**2, a * e * (x - mu) ** 2 / s**3]
    return np.stack(columns, axis=1)


def bump(x, a, mu, s):
    return a * np.exp(-(x - mu) ** 2 / (2 * s * s))


def main():
    print(f"# numpy {np.__version__}, scipy {scipy.__version__}")
    i = np.arange(300)
    x = 10.0 * i / 299.0
    noise = 0.02 * np.sin(37.0 * x + 0.3 * i)
    inf = np.inf
    cases = [
        ("exp-decay", exp_decay, exp_decay_jacobian,
         2.0 * np.exp(-0.3 * x) + 0.03 * x + noise,
         np.array([1.0, 1.0, 1.0, 0.1]), (np.zeros(4), np.full(4, inf))),
        ("gauss-peaks", gauss_peaks, gauss_peaks_jacobian,
         0.1 + bump(x, 1.0, 4.0, 0.5) + bump(x, 0.3, 6.5, 0.8) - bump(x, 0.05, 8.5, 0.3) + noise,
         np.array([0.0, 1.0, 3.5, 1.0, 0.5, 8.0, 1.0]),
         (np.array([-inf, 0, 0, 0.05, 0, 0, 0.05]), np.array([inf, inf, 10, 5, inf, 10, 5]))),
    ]
    for name, f, jac, y, p0, (lb, ub) in cases:
        with np.errstate(over="ignore", invalid="ignore"):
            free = least_squares(lambda t: f(x, *t) - y, p0, jac=lambda t: jac(x, *t),
                                 method="lm")
        print(f"# {name} unbounded: {[float(v) for v in free.x]}")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            popt, pcov = curve_fit(f, x, y, p0=p0, jac=jac, bounds=(lb, ub))
        active = [int(a) for a in find_active_constraints(popt, lb, ub, rtol=1e-8)]
        print(f'("{name}", [{", ".join(repr(float(v)) for v in popt)}],')
        print(f' [{", ".join(repr(float(v)) for v in np.sqrt(np.diag(pcov)))}], &{active}),')


if __name__ == "__main__":
    main()
