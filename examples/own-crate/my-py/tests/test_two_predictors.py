"""A model of two predictors, as scipy's curve_fit takes it: xdata of shape (2, M)."""

import numpy as np
import pytest
from scipy.optimize import curve_fit

import my_kernels


def model(x, b1, b2, b3):
    x1, x2 = x
    return b1 - b2 * x1 * np.exp(-b3 * x2)


def jacobian(x, b1, b2, b3):
    x1, x2 = x
    e = np.exp(-b3 * x2)
    return np.column_stack([np.ones_like(x1), -x1 * e, b2 * x1 * x2 * e])


@pytest.fixture
def data():
    rng = np.random.default_rng(5)
    x = np.vstack([rng.uniform(0.0, 5.0, 3000), rng.uniform(0.0, 3.0, 3000)])
    return x, model(x, 2.0, 1.5, 0.4) + 0.01 * rng.standard_normal(x.shape[1])


def test_two_predictors_fit_as_scipys(data):
    x, y = data
    popt, pcov = my_kernels.curve_fit("two-predictors", x, y, p0=[1.0, 1.0, 1.0])
    expected_popt, expected_pcov = curve_fit(model, x, y, p0=[1.0, 1.0, 1.0], jac=jacobian)
    np.testing.assert_allclose(popt, expected_popt, rtol=1e-8)
    np.testing.assert_allclose(pcov, expected_pcov, rtol=1e-6)
    np.testing.assert_allclose(popt, [2.0, 1.5, 0.4], rtol=0.02)
    # The points as rows, (M, 2), read as the transpose: the same fit.
    transposed, _ = my_kernels.curve_fit("two-predictors", x.T, y, p0=[1.0, 1.0, 1.0])
    assert transposed.tolist() == popt.tolist()


def test_predictors_that_do_not_fit_the_model_are_refused(data):
    x, y = data
    with pytest.raises(ValueError, match="two predictors x1, x2"):
        my_kernels.curve_fit("two-predictors", x[0], y, p0=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="must match"):
        my_kernels.curve_fit("two-predictors", x[:, :-1], y, p0=[1.0, 1.0, 1.0])
