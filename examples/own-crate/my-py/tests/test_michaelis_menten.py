"""my_kernels.curve_fit against scipy's curve_fit on the same data: Michaelis–Menten."""

import numpy as np
import pytest
from scipy.optimize import curve_fit

import cudamin
import my_kernels

TIGHT = dict(ftol=1e-12, xtol=1e-12, gtol=1e-12)


def rate(s, v_max, k):
    return v_max * s / (k + s)


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    s = rng.uniform(0.1, 10.0, 5000)
    return s, rate(s, 2.5, 1.2) + 0.02 * rng.standard_normal(s.size)


def test_the_fit_is_scipys(data):
    s, v = data
    popt, pcov = my_kernels.curve_fit("michaelis-menten", s, v, p0=[1.0, 1.0], **TIGHT)
    expected_popt, expected_pcov = curve_fit(rate, s, v, p0=[1.0, 1.0], **TIGHT)
    np.testing.assert_allclose(popt, expected_popt, rtol=1e-6)
    np.testing.assert_allclose(pcov, expected_pcov, rtol=1e-6)
    np.testing.assert_allclose(popt, [2.5, 1.2], rtol=0.02)


def test_sigma_weights_the_points_as_scipys(data):
    s, v = data
    sigma = 0.01 + 0.01 * s
    popt, pcov = my_kernels.curve_fit("michaelis-menten", s, v, p0=[1.0, 1.0], sigma=sigma, absolute_sigma=True, **TIGHT)
    expected = curve_fit(rate, s, v, p0=[1.0, 1.0], sigma=sigma, absolute_sigma=True, **TIGHT)
    np.testing.assert_allclose(popt, expected[0], rtol=1e-6)
    np.testing.assert_allclose(pcov, expected[1], rtol=1e-6)


def test_the_module_knows_its_models_and_cudamins_errors(data):
    s, v = data
    # Models you add join the list; the test reads it rather than repeating it.
    names = [m["name"] for m in my_kernels.models()]
    assert "michaelis-menten" in names
    with pytest.raises(ValueError, match="unknown model `exp-decay`; this module's models are: " + ", ".join(names)):
        my_kernels.curve_fit("exp-decay", s, v)
    with pytest.raises(ValueError, match="MichaelisMenten fits n = 2 parameters"):
        my_kernels.curve_fit("michaelis-menten", s, v, p0=[1.0, 1.0, 1.0])
    with pytest.raises(cudamin.BackendError):
        my_kernels.curve_fit("michaelis-menten", s, v, backend="cuda")
