"""cudamin.curve_fit against scipy.optimize.curve_fit on the same arrays, in the same process.

scipy's `pcov` (method 'lm') is MINPACK's, from the Jacobian of the last iteration that
computed one, which can be one step before `popt`; cudamin's is from J's triangle at `popt`.
At scipy's default tolerances the two differ by a few 1e-6 relative for that reason alone, so
the tight comparisons (1e-6) run at tolerances where that last step is negligible."""

import numpy as np
import pytest
from scipy.optimize import OptimizeWarning
from scipy.optimize import curve_fit as scipy_curve_fit

import cudamin

TIGHT = dict(ftol=1e-12, xtol=1e-12, gtol=1e-12)


def exp_decay(x, *theta):
    return sum(a * np.exp(-b * x) for a, b in zip(theta[::2], theta[1::2]))


def gauss_peaks(x, c, *peaks):
    total = np.full_like(x, c)
    for a, mu, s in zip(peaks[::3], peaks[1::3], peaks[2::3]):
        total += a * np.exp(-((x - mu) ** 2) / (2 * s**2))
    return total


def poly(x, *theta):
    return sum(t * x**k for k, t in enumerate(theta))


def expsin(x, *theta):
    return theta[0] * np.exp(-theta[1] * x) + sum(t * np.sin(k * x) for k, t in enumerate(theta) if k >= 2)


def lorentzian(x, a, x0, g, b):
    return a * g * g / ((x - x0) ** 2 + g * g) + b


RNG = np.random.default_rng(29)
X = np.linspace(0.0, 4.0, 2000)
CASES = {
    "exp-decay": (exp_decay, X, exp_decay(X, 3.0, 0.7, 1.0, 3.0), [2.0, 1.0, 0.5, 2.0]),
    "gauss-peaks": (gauss_peaks, X, gauss_peaks(X, 0.1, 1.0, 1.5, 0.3, 0.6, 2.6, 0.4), [0, 1, 1.4, 0.2, 0.5, 2.7, 0.5]),
    "poly": (poly, X, poly(X, 1.0, -2.0, 0.5, 0.1), np.ones(4)),
    "expsin": (expsin, X, expsin(X, 2.0, 0.5, 0.3, -0.2, 0.1), np.full(5, 0.5)),
    "lorentzian": (lorentzian, X, lorentzian(X, 2.0, 1.7, 0.3, 0.2), [1.5, 1.5, 0.5, 0.0]),
}


def noisy(y):
    return y + 0.01 * RNG.standard_normal(y.size)


@pytest.mark.parametrize("name", CASES)
def test_popt_and_pcov_are_scipys(name):
    f, x, y, p0 = CASES[name]
    y = noisy(y)
    popt, pcov = cudamin.curve_fit(name, x, y, p0=p0, **TIGHT)
    expected_popt, expected_pcov = scipy_curve_fit(f, x, y, p0=p0, **TIGHT)
    np.testing.assert_allclose(popt, expected_popt, rtol=1e-6)
    np.testing.assert_allclose(pcov, expected_pcov, rtol=1e-6, atol=1e-6 * np.abs(expected_pcov).max())
    # At scipy's own tolerances: the same parameters, pcov within MINPACK's last step.
    popt, pcov = cudamin.curve_fit(name, x, y, p0=p0)
    expected_popt, expected_pcov = scipy_curve_fit(f, x, y, p0=p0)
    np.testing.assert_allclose(popt, expected_popt, rtol=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(pcov)), np.sqrt(np.diag(expected_pcov)), rtol=1e-5)


def test_expsin_on_a_million_points_from_numpy():
    x = np.linspace(0.0, 10.0, 1_000_000)
    theta = np.array([2.0, 0.5] + [0.1 * (-1) ** k for k in range(14)])
    y = noisy(expsin(x, *theta))
    popt, pcov = cudamin.curve_fit("expsin", x, y, p0=np.full(16, 0.5))
    np.testing.assert_allclose(popt, theta, atol=1e-3)
    assert pcov.shape == (16, 16) and np.all(np.diag(pcov) > 0)


def test_linear_takes_k_predictors_as_scipys_xdata():
    # Three predictors as scipy takes them, shape (k, M); p = k + 1 without p0.
    x = RNG.uniform(-1.0, 1.0, (3, 500))
    y = noisy(0.5 + x.T @ [2.0, -1.0, 0.25])
    popt, pcov = cudamin.curve_fit("linear", x, y, **TIGHT)
    expected_popt, expected_pcov = scipy_curve_fit(lambda x, *b: b[0] + b[1:] @ x, x, y, p0=np.ones(4), **TIGHT)
    np.testing.assert_allclose(popt, expected_popt, rtol=1e-8)
    np.testing.assert_allclose(pcov, expected_pcov, rtol=1e-6, atol=1e-6 * np.abs(expected_pcov).max())
    # The (M, k) layout reads as its transpose.
    np.testing.assert_allclose(cudamin.curve_fit("linear", x.T, y, **TIGHT)[0], popt, rtol=1e-12)


def test_the_simulator_gives_the_cpus_fit_call_after_call():
    # The GPU's kernels on the PTX simulator; the module opens the backend once and keeps it.
    x = np.linspace(0.0, 4.0, 500)
    y = noisy(poly(x, 1.0, -2.0, 0.5))
    expected, expected_pcov = cudamin.curve_fit("poly", x, y, backend="cpu", **TIGHT)
    for _ in range(2):
        popt, pcov, info, _, _ = cudamin.curve_fit("poly", x, y, backend="sim", full_output=True, **TIGHT)
        assert info["backend"] == "sim"
        np.testing.assert_allclose(popt, expected, rtol=1e-10)
        np.testing.assert_allclose(pcov, expected_pcov, rtol=1e-8)


def test_sigma_and_absolute_sigma_are_scipys():
    f, x, y, p0 = CASES["exp-decay"]
    sigma = 0.01 * (1 + x)
    y = y + sigma * RNG.standard_normal(x.size)
    for absolute in (False, True):
        popt, pcov = cudamin.curve_fit("exp-decay", x, y, p0=p0, sigma=sigma, absolute_sigma=absolute, **TIGHT)
        expected = scipy_curve_fit(f, x, y, p0=p0, sigma=sigma, absolute_sigma=absolute, **TIGHT)
        np.testing.assert_allclose(popt, expected[0], rtol=1e-6)
        np.testing.assert_allclose(pcov, expected[1], rtol=1e-6, atol=1e-6 * np.abs(expected[1]).max())


def test_one_sigma_for_every_point_and_leastsqs_maxfev_are_scipys():
    f, x, y, p0 = CASES["exp-decay"]
    y = noisy(y)
    for absolute in (False, True):
        popt, pcov = cudamin.curve_fit("exp-decay", x, y, p0=p0, sigma=0.01, absolute_sigma=absolute, **TIGHT)
        expected = scipy_curve_fit(f, x, y, p0=p0, sigma=0.01, absolute_sigma=absolute, **TIGHT)
        np.testing.assert_allclose(popt, expected[0], rtol=1e-6)
        np.testing.assert_allclose(pcov, expected[1], rtol=1e-6, atol=1e-6 * np.abs(expected[1]).max())
        for same in (np.full(x.size, 0.01), [[0.01]]):
            by_array = cudamin.curve_fit("exp-decay", x, y, p0=p0, sigma=same, absolute_sigma=absolute, **TIGHT)
            assert popt.tolist() == by_array[0].tolist() and pcov.tolist() == by_array[1].tolist()
    # leastsq's maxfev, which scipy's curve_fit takes for 'trf' too, is max_nfev.
    for bounds in [(-np.inf, np.inf), (0.0, 10.0)]:
        with pytest.raises(RuntimeError) as by_maxfev:
            cudamin.curve_fit("exp-decay", x, y, p0=p0, bounds=bounds, maxfev=3)
        with pytest.raises(RuntimeError) as by_max_nfev:
            cudamin.curve_fit("exp-decay", x, y, p0=p0, bounds=bounds, max_nfev=3)
        assert str(by_maxfev.value) == str(by_max_nfev.value)
    with pytest.raises(ValueError, match="not both"):
        cudamin.curve_fit("exp-decay", x, y, p0=p0, maxfev=3, max_nfev=3)
    # maxfev=0 is the default, as leastsq reads it: a start that needs more than 4 evaluations
    # fails with 4 and not with 0.
    far = [1.0, 100.0, 1.0, 200.0]
    with pytest.raises(RuntimeError, match="Optimal parameters not found"):
        cudamin.curve_fit("exp-decay", x, y, p0=far, maxfev=4)
    by_zero = cudamin.curve_fit("exp-decay", x, y, p0=far, maxfev=0)
    assert by_zero[0].tolist() == cudamin.curve_fit("exp-decay", x, y, p0=far)[0].tolist()


def test_bounds_make_it_scipys_trf():
    f, x, y, _ = CASES["exp-decay"]
    y = noisy(y)
    bounds = ([0, 0, 0, 2.0], [10, 0.65, 10, 10])
    popt, pcov, info, message, status = cudamin.curve_fit(
        "exp-decay", x, y, bounds=bounds, full_output=True
    )
    expected_popt, expected_pcov, expected_info, _, expected_status = scipy_curve_fit(
        f, x, y, p0=[5, 0.325, 5, 6], bounds=bounds, full_output=True
    )
    assert info["method"] == "trf" and status == expected_status
    assert info["nfev"] == expected_info["nfev"]
    assert info["active_mask"].tolist() == [0, 1, 0, 0]
    np.testing.assert_allclose(popt, expected_popt, rtol=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(pcov)), np.sqrt(np.diag(expected_pcov)), rtol=1e-6)
    np.testing.assert_allclose(info["fvec"], expected_info["fvec"], atol=1e-9)


def test_trf_without_bounds_is_scipys_trf():
    # scipy's curve_fit(method='trf') with no bounds, as ported scripts name it, and with
    # least_squares' x_scale passed through.
    f, x, y, _ = CASES["exp-decay"]
    y = noisy(y)
    p0 = [5, 0.3, 5, 6]
    for x_scale in [None, "jac"]:
        given = {} if x_scale is None else dict(x_scale=x_scale)
        popt, pcov, info, _, status = cudamin.curve_fit(
            "exp-decay", x, y, p0=p0, method="trf", full_output=True, **given)
        expected_popt, expected_pcov, expected_info, _, expected_status = scipy_curve_fit(
            f, x, y, p0=p0, method="trf", full_output=True, **given)
        assert info["method"] == "trf" and status == expected_status, x_scale
        assert info["nfev"] == expected_info["nfev"], x_scale
        np.testing.assert_allclose(popt, expected_popt, rtol=1e-6)
        np.testing.assert_allclose(pcov, expected_pcov, rtol=1e-5, atol=1e-14)


def test_natural_bounds_keep_a_rate_nonnegative():
    # A rising baseline tempts an unbounded second exponential into a growing one.
    x = np.linspace(0, 5, 500)
    y = 2 * np.exp(-1.5 * x) + 0.05 * x
    popt, _, info, _, _ = cudamin.curve_fit("exp-decay", x, y, p0=[1, 1, 0.1, 0.1], bounds="natural", full_output=True)
    assert popt[1] >= 0 and popt[3] >= 0
    assert info["method"] == "trf"


def test_a_parameter_is_fixed_by_the_models_name_for_it():
    f, x, y, p0 = CASES["exp-decay"]
    y = noisy(y)
    by_index = cudamin.curve_fit("exp-decay", x, y, p0=p0, fixed=[3])
    for fixed in (["b1"], "b1", [np.str_("b1")], 3, np.int64(3)):
        by_name = cudamin.curve_fit("exp-decay", x, y, p0=p0, fixed=fixed)
        assert by_name[0].tolist() == by_index[0].tolist() and by_name[1].tolist() == by_index[1].tolist()
    both = cudamin.curve_fit("exp-decay", x, y, p0=p0, fixed=["a0", 3])
    assert both[0][[0, 3]].tolist() == [p0[0], p0[3]]
    with pytest.raises(ValueError, match="has no parameter 'mu0'; its parameters are a0, b0, a1, b1"):
        cudamin.curve_fit("exp-decay", x, y, p0=p0, fixed=["mu0"])
    with pytest.raises(ValueError, match="does not name its parameters"):
        cudamin.curve_fit("poly", x, y, p0=np.ones(3), fixed=["c"])


def test_fixed_parameters_have_zero_covariance_rows():
    f, x, y, p0 = CASES["exp-decay"]
    y = noisy(y)
    popt, pcov = cudamin.curve_fit("exp-decay", x, y, p0=[2.0, 0.7, 0.5, 2.0], fixed=[1])
    assert popt[1] == 0.7
    assert np.all(pcov[1] == 0) and np.all(pcov[:, 1] == 0)
    expected, _ = scipy_curve_fit(lambda x, a, c, d: f(x, a, 0.7, c, d), x, y, p0=[2.0, 0.5, 2.0])
    np.testing.assert_allclose(popt[[0, 2, 3]], expected, rtol=1e-6)


def test_points_are_counted_against_the_free_parameters():
    # One point fixes a0 once b0 is held: a0·exp(−1.3·0.5) = 2·exp(−0.65). No degree of
    # freedom is left, so pcov is not estimated (inf, as scipy's), but b0's row stays zero.
    x, y = np.array([0.5]), np.array([2.0 * np.exp(-0.65)])
    with pytest.warns(OptimizeWarning, match="could not be estimated"):
        popt, pcov = cudamin.curve_fit("exp-decay", x, y, p0=[1.0, 1.3], fixed=[1])
    np.testing.assert_allclose(popt, [2.0, 1.3], rtol=1e-12)
    assert np.isinf(pcov[0, 0]) and np.all(pcov[1] == 0) and np.all(pcov[:, 1] == 0)
    with pytest.raises(ValueError, match=r"1 data points cannot determine 2 free parameters \(1 of 3 held\)"):
        cudamin.curve_fit("poly", x, y, p0=np.ones(3), fixed=[0])


def test_robust_loss_is_scipys():
    f, x, y, p0 = CASES["exp-decay"]
    y = noisy(y)
    y[::50] += 1.0
    bounds = ([0, 0, 0, 0], [np.inf] * 4)
    popt, _ = cudamin.curve_fit("exp-decay", x, y, p0=p0, bounds=bounds, loss="soft_l1", f_scale=0.02, **TIGHT)
    expected, _ = scipy_curve_fit(f, x, y, p0=p0, bounds=bounds, loss="soft_l1", f_scale=0.02, **TIGHT)
    np.testing.assert_allclose(popt, expected, rtol=1e-6)


def test_any_dtype_or_layout_is_converted_once():
    f, x, y, p0 = CASES["poly"]
    y = noisy(y)
    expected, _ = cudamin.curve_fit("poly", x[::2], y[::2], p0=p0)
    as_float32 = cudamin.curve_fit("poly", np.ascontiguousarray(x[::2]), list(y[::2]), p0=[1, 1, 1, 1])[0]
    np.testing.assert_array_equal(as_float32, expected)
    assert np.arange(5, dtype=np.int64).dtype != np.float64
    ints, _ = cudamin.curve_fit("poly", np.arange(10), 2 * np.arange(10) + 1, p0=[0, 0])
    np.testing.assert_allclose(ints, [1, 2], atol=1e-10)


def test_a_covariance_that_cannot_be_estimated_is_inf_with_a_warning():
    # As many points as parameters: no degrees of freedom.
    with pytest.warns(OptimizeWarning, match="Covariance"):
        popt, pcov = cudamin.curve_fit("poly", [0.0, 1.0], [1.0, 3.0], p0=[0, 0])
    np.testing.assert_allclose(popt, [1, 2], atol=1e-12)
    assert np.all(np.isinf(pcov))
    # A line through points at one x: J's columns (1, x) are equal, rank 1. scipy's 'lm' then
    # gives inf with the warning; the pseudo-inverse would give a finite pcov that hides it.
    x, y = np.ones(10), np.arange(10.0)
    with pytest.warns(OptimizeWarning, match="Covariance"):
        _, pcov = cudamin.curve_fit("poly", x, y, p0=[0, 0])
    with pytest.warns(OptimizeWarning, match="Covariance"):
        _, expected = scipy_curve_fit(lambda x, a, b: a + b * x, x, y, p0=[0, 0])
    assert np.all(np.isinf(pcov)) and np.all(np.isinf(expected))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(f="no-such-model"), ValueError, "unknown model"),
        (dict(xdata=np.ones((10, 2))), ValueError, "takes one predictor"),
        (dict(xdata=np.ones((2, 5, 2))), ValueError, "must be 1-D, or 2-D"),
        (dict(ydata=np.r_[np.nan, np.ones(9)]), ValueError, r"ydata\[0\] is nan"),
        (dict(ydata=np.r_[1.0, np.nan, np.ones(8)], check_finite=False), ValueError,
         "exp-decay data: column 1, row 1 is NaN"),
        (dict(ydata=np.ones(9)), ValueError, "x has 10 points, y 9"),
        (dict(sigma=np.r_[0.0, np.ones(9)]), ValueError, "sigma at index 0 is 0"),
        (dict(p0=[1.0, 1.0, 1.0]), ValueError, "p must be even"),
        (dict(bounds=([2.0, 0.0], [1.0, 1.0])), ValueError, r"for x\[0\]: lower > upper"),
        (dict(p0=[1.0, 1.0], bounds=([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])), ValueError, "3 values for 2"),
        (dict(bounds=(0.0, 1.0), method="lm"), ValueError, "only works for unconstrained"),
        (dict(p0=[5.0, 1.0], bounds=(0.0, 1.0)), ValueError, r"x0\[0\] = 5 lies outside"),
        (dict(backend="cuda"), cudamin.BackendError, "cuda"),
        (dict(loss="l2"), ValueError, "unknown loss"),
        (dict(jac=lambda x: x), ValueError, "jac must be"),
        (dict(fixed=[True]), ValueError, "1 booleans for 2"),
        (dict(fixed=["b0", True]), ValueError, "names and indices, not booleans"),
        (dict(f_scale=None), ValueError, "f_scale must be a number"),
    ],
)
def test_bad_input_is_a_one_line_exception(kwargs, error, message):
    call = dict(f="exp-decay", xdata=np.linspace(0, 1, 10), ydata=np.exp(-np.linspace(0, 1, 10)))
    call.update(kwargs)
    with pytest.raises(error, match=message) as raised:
        cudamin.curve_fit(**call)
    assert "\n" not in str(raised.value)


def test_full_output_without_bounds_reports_leastsqs_code_and_message():
    # scipy's curve_fit runs MINPACK's leastsq for 'lm' and returns its ier and message.
    f, x, y, p0 = CASES["poly"]
    y = noisy(y)
    # At least_squares' tolerances, which cudamin's curve_fit takes by default (leastsq's own
    # gtol is 0, which cudamin refuses), and with the exact Jacobian on both sides, both stop
    # by the gradient test on this linear model.
    tolerances = dict(ftol=1e-8, xtol=1e-8, gtol=1e-8)
    jacobian = lambda x, *theta: np.stack([x**k for k in range(len(theta))], axis=1)  # noqa: E731
    *_, mesg, ier = cudamin.curve_fit("poly", x, y, p0=p0, full_output=True, **tolerances)
    *_, expected_mesg, expected_ier = scipy_curve_fit(f, x, y, p0=p0, jac=jacobian, full_output=True, **tolerances)
    assert (mesg, ier) == (expected_mesg, expected_ier) == (expected_mesg, 4)
