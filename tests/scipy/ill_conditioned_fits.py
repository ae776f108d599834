"""scipy's answers for tests/fit.rs's ill-conditioned fits: run with numpy and scipy installed,
`python tests/scipy/ill_conditioned_fits.py`, and the numbers in the test are what it prints.

Each fit is `curve_fit(method='lm')` (MINPACK's lmder through leastsq) with the model's
analytic Jacobian, from the test's start, with ftol = xtol = 1e-15 so that it stops at the minimum itself, not
somewhere within a tolerance of it: the comparison is then of the minima and their
covariances, not of two stopping points. The residuals are the test's: (y - m(t)), weights 1.
"""

import numpy as np
import scipy
from scipy.optimize import curve_fit


def poly(t, *theta):
    return sum(c * t**k for k, c in enumerate(theta))


def exp_decay(t, *theta):
    return sum(theta[2 * i] * np.exp(-theta[2 * i + 1] * t) for i in range(len(theta) // 2))


def gauss_peaks(t, *theta):
    c, rest = theta[0], theta[1:]
    return c + sum(
        rest[3 * i] * np.exp(-((t - rest[3 * i + 1]) ** 2) / (2 * rest[3 * i + 2] ** 2))
        for i in range(len(rest) // 3)
    )


def poly_jac(t, *theta):
    return np.stack([t**k for k in range(len(theta))], axis=1)


def exp_decay_jac(t, *theta):
    columns = []
    for i in range(len(theta) // 2):
        e = np.exp(-theta[2 * i + 1] * t)
        columns += [e, -theta[2 * i] * t * e]
    return np.stack(columns, axis=1)


def gauss_peaks_jac(t, *theta):
    columns = [np.ones_like(t)]
    rest = theta[1:]
    for i in range(len(rest) // 3):
        a, mu, s = rest[3 * i : 3 * i + 3]
        g = np.exp(-((t - mu) ** 2) / (2 * s**2))
        columns += [g, a * g * (t - mu) / s**2, a * g * (t - mu) ** 2 / s**3]
    return np.stack(columns, axis=1)


def cases():
    t = 10.0 * np.arange(5000) / 4999.0
    yield "poly", (poly, poly_jac), t, np.sin(t) + 0.1 * np.cos(7.0 * t), np.ones(11)

    i = np.arange(2000)
    t = 5.0 * i / 1999.0
    truth = (1.0, 1.0, 0.8, 1.25)
    y = exp_decay(t, *truth) + 2e-3 * np.sin(37.0 * t + 0.3 * i)
    yield "exp-decay", (exp_decay, exp_decay_jac), t, y, np.array([1.2, 0.9, 0.6, 1.5])

    t = 10.0 * i / 1999.0
    truth = (0.1, 1.0, 4.0, 0.8, 0.7, 5.0, 0.8)
    y = gauss_peaks(t, *truth) + 1e-2 * np.sin(37.0 * t + 0.3 * i)
    yield "gauss-peaks", (gauss_peaks, gauss_peaks_jac), t, y, np.array([0.0, 0.8, 3.7, 1.0, 0.8, 5.3, 0.7])


print(f"scipy {scipy.__version__}, numpy {np.__version__}")
for name, (model, jac), t, y, p0 in cases():
    popt, pcov, info, _, ier = curve_fit(
        model, t, y, p0=p0, jac=jac, method="lm", full_output=True, ftol=1e-15, xtol=1e-15
    )
    rss = float(np.sum((y - model(t, *popt)) ** 2))
    print(f"{name}: ier {ier}, nfev {info['nfev']}, rss {rss!r}")
    print("  popt", "[" + ", ".join(repr(float(v)) for v in popt) + "]")
    print("  perr", "[" + ", ".join(repr(float(v)) for v in np.sqrt(np.diag(pcov))) + "]")
