"""scipy's curve_fit on a model of two predictors, for tests/fit_predictors.rs
(`cli_fit_takes_several_predictors`):

    target/scipy-venv/bin/python tests/scipy/linear_fit.py     # numpy 2.4.6, scipy 1.17.1

The data: 40 points, x1 = i/10, x2 = 3·cos(0.7·i), y = 1.5 + 2·x1 − 0.75·x2 + 0.05·sin(1.3·i),
sigma = 0.5 + 0.01·i. The model is `linear` with two predictors, θ0 + θ1·x1 + θ2·x2, fitted by
curve_fit with xdata of shape (2, 40) from p0 = ones, without and with sigma. One line each:
popt, then pcov by rows, to 17 digits.
"""

import numpy as np
from scipy.optimize import curve_fit


def data():
    i = np.arange(40.0)
    x1, x2 = i / 10, 3 * np.cos(0.7 * i)
    y = 1.5 + 2 * x1 - 0.75 * x2 + 0.05 * np.sin(1.3 * i)
    return np.vstack([x1, x2]), y, 0.5 + 0.01 * i


def linear(x, b0, b1, b2):
    return b0 + b1 * x[0] + b2 * x[1]


if __name__ == "__main__":
    x, y, sigma = data()
    for weights in (None, sigma):
        popt, pcov = curve_fit(linear, x, y, p0=np.ones(3), sigma=weights)
        print("popt", [float(f"{v:.17g}") for v in popt])
        print("pcov", [[float(f"{v:.17g}") for v in row] for row in pcov])
