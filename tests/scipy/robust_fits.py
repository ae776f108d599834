"""scipy's answers for tests/fit.rs's robust fits: run with numpy and scipy installed,
`python tests/scipy/robust_fits.py`, and the numbers in the test are what it prints.

The data: the `expsin` model with 5 parameters, θ = (2, 0.7, 0.5, −0.3, 0.2), at 400 points
t = 8·i/399, with a small deterministic noise 0.02·sin(37t + 0.3i), and every 20th point (i ≡ 7
mod 20, 5 %) moved by ±2, alternating: gross outliers. Each loss is fitted by
`least_squares(fun, p0, jac, method='trf', loss=…, f_scale=0.1)` (the only method where scipy
takes a loss) with ftol = xtol = gtol = 1e-15, so that it stops at the minimum of the robust cost
itself; cudamin, on the same cost, is compared at that minimum. Printed:
θ to 17 digits, the cost ½·Σ C²ρ(r²/C²), and scipy's status.

Then each loss again within bounds (θ1 ≤ 0.69, θ4 ≤ 0.19, both active at the answer), every
option at its default: θ, the cost, status, nfev, njev and active_mask, which cudamin's own trf
must reproduce; and the robust losses without bounds, every option at its default: θ, the cost,
status, nfev and njev (cudamin runs a robust loss by its trf too).
"""

import numpy as np
import scipy
from scipy.optimize import least_squares

P0 = np.array([1.8, 0.6, 0.4, -0.2, 0.1])
F_SCALE = 0.1


def data():
    i = np.arange(400)
    t = 8.0 * i / 399.0
    y = model(np.array([2.0, 0.7, 0.5, -0.3, 0.2]), t) + 0.02 * np.sin(37.0 * t + 0.3 * i)
    outliers = i % 20 == 7
    y[outliers] += 2.0 * np.where((i[outliers] // 20) % 2 == 0, 1.0, -1.0)
    return t, y


def model(theta, t):
    return theta[0] * np.exp(-theta[1] * t) + sum(
        theta[k] * np.sin(k * t) for k in range(2, len(theta)))


def jacobian(theta, t):
    e = np.exp(-theta[1] * t)
    columns = [e, -theta[0] * t * e] + [np.sin(k * t) for k in range(2, len(theta))]
    return np.stack(columns, axis=1)


def main():
    t, y = data()
    print(f"scipy {scipy.__version__}, numpy {np.__version__}")
    for loss in ["linear", "soft_l1", "huber", "cauchy", "arctan"]:
        res = least_squares(
            lambda th: model(th, t) - y, P0, jac=lambda th: jacobian(th, t), method="trf",
            loss=loss, f_scale=F_SCALE, ftol=1e-15, xtol=1e-15, gtol=1e-15)
        print(f'("{loss}", [{", ".join(repr(float(v)) for v in res.x)}], {float(res.cost)!r}),'
              f"  // status {res.status}, nfev {res.nfev}")

    # Bounded: θ1 ≤ 0.69 and θ4 ≤ 0.19, both below the robust optimum, so both end active
    # (`robust_bounded_fits_match_scipys_trf`). Every option at its default.
    LOWER = np.full(5, -np.inf)
    UPPER = np.array([np.inf, 0.69, np.inf, np.inf, 0.19])
    for loss in ["linear", "soft_l1", "huber", "cauchy", "arctan"]:
        res = least_squares(
            lambda th: model(th, t) - y, P0, jac=lambda th: jacobian(th, t), method="trf",
            loss=loss, f_scale=F_SCALE, bounds=(LOWER, UPPER))
        print(f'("{loss}", [{", ".join(repr(float(v)) for v in res.x)}], {float(res.cost)!r}, '
              f"{res.status}, {res.nfev}, {res.njev}, &{[int(a) for a in res.active_mask]}),")

    # Unbounded, every option at its default: the robust losses, which cudamin runs by its trf
    # with or without a box, as scipy does (`robust_fits_at_default_tolerances_match_scipys_trf`).
    for loss in ["soft_l1", "huber", "cauchy", "arctan"]:
        res = least_squares(
            lambda th: model(th, t) - y, P0, jac=lambda th: jacobian(th, t), method="trf",
            loss=loss, f_scale=F_SCALE)
        print(f'("{loss}", [{", ".join(repr(float(v)) for v in res.x)}], {float(res.cost)!r}, '
              f"{res.status}, {res.nfev}, {res.njev}),")


if __name__ == "__main__":
    main()
