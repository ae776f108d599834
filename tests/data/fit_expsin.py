"""Writes expsin.csv, the data of tests/fit.rs's comparison with scipy, and prints what
scipy.optimize.curve_fit makes of it (the numbers the test records).

    python tests/data/fit_expsin.py   # numpy and scipy; run from the repository root
"""
import numpy as np
from scipy.optimize import curve_fit

rng = np.random.default_rng(20261123)
m = 400
x = np.linspace(0.0, 8.0, m)
theta = np.array([2.0, 0.7, 0.5, -1.0 / 3.0, 0.25])


def expsin(x, *th):
    out = th[0] * np.exp(-th[1] * x)
    for k in range(2, len(th)):
        out = out + th[k] * np.sin(k * x)
    return out


sigma = 0.05 + 0.05 * rng.random(m)
y = expsin(x, *theta) + sigma * rng.standard_normal(m)
np.savetxt("tests/data/expsin.csv", np.c_[x, y, sigma], delimiter=",",
           header="x,y,sigma", comments="", fmt="%.17g")
x, y, sigma = np.loadtxt("tests/data/expsin.csv", delimiter=",", skiprows=1, unpack=True)
p0 = np.ones(len(theta))
for label, kwargs in [("unweighted", {}),
                      ("sigma", {"sigma": sigma}),
                      ("absolute_sigma", {"sigma": sigma, "absolute_sigma": True})]:
    popt, pcov = curve_fit(expsin, x, y, p0=p0, **kwargs)
    print(label)
    print("  popt  ", np.array2string(popt, precision=12, separator=", "))
    print("  perr  ", np.array2string(np.sqrt(np.diag(pcov)), precision=12, separator=", "))
