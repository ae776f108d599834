"""scipy's trust-region-reflective least squares on bounded versions of the MGH runs of
tests/mgh.rs (`bounded_mgh_runs_match_scipys_trf` in tests/solver_trf.rs):

    target/poisson-peers-venv/bin/python tests/scipy/mgh_trf.py     # numpy 2.4.6, scipy 1.17.1

The residuals, starting points and exact (complex-step) Jacobians are tests/scipy/mgh_lm.py's;
the bounds are tests/scipy/mgh_lbfgsb.py's (variable 0 bounded above below its unbounded
optimum, the last variable bounded below above its optimum, each by 0.1·(|x*| + 1)). The start
is x0 clipped into the box, since least_squares refuses a start outside it. Then
`least_squares(fun, x0, jac=J, bounds=…, method='trf')` with every option at its default.

It prints one line per run: (name, n, upper0, lower_last, status, nfev, njev, cost, active
mask), the cost to 17 digits.
"""

import numpy as np
import scipy
from scipy.optimize import least_squares

from mgh_lbfgsb import bounded_runs


def main():
    print(f"# numpy {np.__version__}, scipy {scipy.__version__}; least_squares(method='trf')")
    for name, n, x0, fun, jac, _value, _gradient, lo, hi in bounded_runs():
        lo, hi = np.array(lo), np.array(hi)
        r = least_squares(fun, np.clip(x0, lo, hi), jac=jac, bounds=(lo, hi), method="trf")
        active = [int(a) for a in r.active_mask]
        print(f'("{name}", {n}, {float(hi[0])!r}, {float(lo[-1])!r}, {r.status}, {r.nfev}, {r.njev}, '
              f'{float(r.cost)!r}, &{active}),')


if __name__ == "__main__":
    main()
