"""my_kernels.minimize and least_squares on data from numpy, against scipy on the same data."""

import numpy as np
import pytest
from scipy.optimize import least_squares, minimize

import my_kernels


@pytest.fixture
def line():
    rng = np.random.default_rng(11)
    t = rng.uniform(0.0, 10.0, 2000)
    y = 1.0 + 0.5 * t + 0.1 * rng.standard_normal(t.size)
    y[::50] += rng.choice([-10.0, 10.0], t[::50].size)
    return t, y


def soft_l1(ab, t, y):
    r = y - (ab[0] + ab[1] * t)
    value = np.sum(2.0 * (np.sqrt(1.0 + r**2) - 1.0))
    d = -2.0 * r / np.sqrt(1.0 + r**2)
    return value, np.array([d.sum(), (d * t).sum()])


def test_minimize_on_your_data_is_scipys(line):
    t, y = line
    ours = my_kernels.minimize("robust-line", [0.0, 0.0], data=(t, y))
    theirs = minimize(soft_l1, [0.0, 0.0], args=(t, y), jac=True, method="BFGS")
    assert ours.success and theirs.success
    assert ours.nit == theirs.nit
    np.testing.assert_allclose(ours.x, theirs.x, rtol=1e-7)
    np.testing.assert_allclose(ours.fun, theirs.fun, rtol=1e-10)
    np.testing.assert_allclose(ours.x, [1.0, 0.5], atol=0.02)


def test_least_squares_on_your_data_is_scipys():
    rng = np.random.default_rng(3)
    s = rng.uniform(0.1, 10.0, 3000)
    v = 2.5 * s / (1.2 + s) + 0.02 * rng.standard_normal(s.size)
    ours = my_kernels.least_squares("michaelis-menten", [1.0, 1.0], data=(s, v, np.ones_like(s)))
    def jacobian(vk):
        return np.column_stack([-s / (vk[1] + s), vk[0] * s / (vk[1] + s) ** 2])

    theirs = least_squares(lambda vk: v - vk[0] * s / (vk[1] + s), [1.0, 1.0], jac=jacobian, method="lm")
    assert (ours.status, ours.nfev) == (theirs.status, theirs.nfev)
    # cudamin factors J once more at the solution when MINPACK stops after a step without one
    # (its covariance is J's at x); so njev is MINPACK's or one more.
    assert ours.njev - theirs.njev in (0, 1)
    np.testing.assert_allclose(ours.x, theirs.x, rtol=1e-8)
    np.testing.assert_allclose(ours.cost, theirs.cost, rtol=1e-10)


def test_problems_on_data_say_what_they_need(line):
    t, y = line
    # Problems you add join the list; these two are the template's.
    needs_data = {p["name"]: p["data"] for p in my_kernels.problems()}
    assert needs_data["robust-line"] and needs_data["michaelis-menten"]
    with pytest.raises(ValueError, match="robust-line needs x0"):
        my_kernels.minimize("robust-line", data=(t, y))
    with pytest.raises(ValueError, match=r"differ in length \(2000, 1999\)"):
        my_kernels.minimize("robust-line", [0.0, 0.0], data=(t, y[1:]))
    with pytest.raises(ValueError, match="RobustLine fits n = 2 parameters"):
        my_kernels.minimize("robust-line", [0.0, 0.0], data=(t,))
    with pytest.raises(ValueError, match=r"data\[1\]\[0\] is nan"):
        my_kernels.minimize("robust-line", [0.0, 0.0], data=(t, np.r_[np.nan, y[1:]]))
    with pytest.raises(ValueError, match="not a sum of squares"):
        my_kernels.least_squares("robust-line", [0.0, 0.0], data=(t, y))
