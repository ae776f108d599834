"""cudamin.minimize and cudamin.least_squares against scipy's, run in the same process on the
same problems: scipy's functions are written here in numpy, cudamin's are its built-in terms."""

import numpy as np
import pytest
from scipy.optimize import LbfgsInvHessProduct, OptimizeWarning
from scipy.optimize import least_squares as scipy_least_squares
from scipy.optimize import minimize as scipy_minimize
from scipy.optimize import rosen, rosen_der

import cudamin

X0 = np.tile([-1.2, 1.0], 5)
FIELDS = {"x", "fun", "jac", "nit", "nfev", "njev", "status", "success", "message"}


@pytest.mark.parametrize("method", ["BFGS", "L-BFGS-B"])
def test_minimize_takes_scipys_path_on_rosenbrock(method):
    ours = cudamin.minimize("rosenbrock", X0, method=method)
    theirs = scipy_minimize(rosen, X0, jac=rosen_der, method=method)
    assert FIELDS | {"backend", "backend_reason", "jac_error", "method"} <= set(ours)
    assert ours.backend == "cpu"
    assert (ours.status, ours.success) == (theirs.status, theirs.success)
    assert (ours.nit, ours.nfev) == (theirs.nit, theirs.nfev)
    np.testing.assert_allclose(ours.x, theirs.x, atol=1e-6)
    np.testing.assert_allclose(ours.fun, theirs.fun, rtol=1e-8, atol=1e-10)


def test_lbfgsb_within_bounds_is_scipys():
    bounds = [(-2.0, 0.8)] * X0.size
    ours = cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", bounds=bounds)
    theirs = scipy_minimize(rosen, X0, jac=rosen_der, method="L-BFGS-B", bounds=bounds)
    assert (ours.status, ours.nit, ours.nfev) == (theirs.status, theirs.nit, theirs.nfev)
    np.testing.assert_allclose(ours.x, theirs.x, atol=1e-10)
    np.testing.assert_allclose(ours.fun, theirs.fun, rtol=1e-12)
    assert ours.active_mask.tolist() == [1] + [0] * 9


# Within the box both take the same 27 steps to 1e-14; unbounded, 70 steps, whose pairs part
# by up to 4e-5 of their size in the last 25 (x agrees to 1e-6, as above).
@pytest.mark.parametrize("bounds, rtol", [([(-2.0, 0.8)] * X0.size, 1e-10), (None, 1e-4)])
def test_lbfgsb_hess_inv_is_scipys(bounds, rtol):
    # maxcor above the iterations: scipy's memory never wraps around (see the next test).
    options = {"maxcor": 100}
    ours = cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", bounds=bounds, options=options)
    theirs = scipy_minimize(rosen, X0, jac=rosen_der, method="L-BFGS-B", bounds=bounds, options=options)
    assert (ours.nit, ours.nfev) == (theirs.nit, theirs.nfev)
    # The pairs the last direction came from: every step's but the last.
    assert ours.hess_inv.sk.shape == theirs.hess_inv.sk.shape == (ours.nit - 1, X0.size)
    for mine, scipys in [(ours.hess_inv.sk, theirs.hess_inv.sk), (ours.hess_inv.yk, theirs.hess_inv.yk)]:
        np.testing.assert_allclose(mine, scipys, rtol=0, atol=rtol * np.abs(scipys).max())
    dense = theirs.hess_inv.todense()
    np.testing.assert_allclose(ours.hess_inv.todense(), dense, rtol=0, atol=10 * rtol * np.abs(dense).max())
    v = np.linspace(-1.0, 1.0, X0.size)
    np.testing.assert_allclose(ours.hess_inv @ v, dense @ v, rtol=0, atol=10 * rtol * np.abs(dense @ v).max())


def test_lbfgsb_hess_inv_keeps_the_order_the_pairs_were_made_in():
    # Past maxcor updates scipy hands its workspace's rows over in storage order, the pairs
    # rotated by the updates made mod maxcor; cudamin's are oldest first, the order the BFGS
    # updates that define H were made in (the order changes H).
    bounds = [(-2.0, 0.8)] * X0.size
    ours = cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", bounds=bounds)
    theirs = scipy_minimize(rosen, X0, jac=rosen_der, method="L-BFGS-B", bounds=bounds)
    assert ours.nit == theirs.nit == 32
    rotated = np.roll(ours.hess_inv.sk, (ours.nit - 1) % 10, axis=0)
    np.testing.assert_allclose(rotated, theirs.hess_inv.sk, rtol=0, atol=1e-10 * np.abs(rotated).max())


def test_limited_memory_hess_inv_is_zero_at_fixed_variables():
    asked = {"return_hess_inv": True}
    result = cudamin.minimize("rosenbrock", X0, method="L-BFGS", fixed=[0, 3], options=asked)
    h = result.hess_inv
    dense = h.todense()
    assert h.shape == dense.shape == (X0.size, X0.size)
    assert h.n_corrs > 0 and h.sk.shape == h.yk.shape == (h.n_corrs, X0.size)
    assert not h.sk[:, [0, 3]].any() and not h.yk[:, [0, 3]].any()
    assert not dense[[0, 3], :].any() and not dense[:, [0, 3]].any()
    assert np.all(np.diag(dense)[[1, 2, 4]] > 0)
    v = np.linspace(-1.0, 1.0, X0.size)
    for product in [h @ v, h.matvec(v.reshape(-1, 1)).ravel(), h.rmatvec(v), h.T @ v]:
        np.testing.assert_allclose(product, dense @ v, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(h.matmat(np.eye(X0.size)), dense, rtol=1e-12, atol=1e-12)
    assert v[0] == -1.0  # the caller's vector is left as it was


def test_bfgs_hess_inv_is_scipys_unasked():
    # The same path as scipy's (nit and nfev equal above): the same n×n matrix of the updates.
    ours = cudamin.minimize("rosenbrock", X0, method="BFGS")
    theirs = scipy_minimize(rosen, X0, jac=rosen_der, method="BFGS")
    assert isinstance(ours.hess_inv, np.ndarray) and ours.hess_inv.shape == (X0.size, X0.size)
    np.testing.assert_allclose(ours.hess_inv, theirs.hess_inv, rtol=0, atol=1e-5 * np.abs(theirs.hess_inv).max())
    # Past n = 1000 the matrix is made only when asked.
    large = np.tile([-1.2, 1.0], 501)
    assert "hess_inv" not in cudamin.minimize("ext-rosenbrock", large, method="BFGS", options={"maxiter": 2})
    asked = cudamin.minimize("ext-rosenbrock", large, method="BFGS", options={"maxiter": 2, "return_hess_inv": True})
    assert asked.hess_inv.shape == (large.size, large.size)
    assert "hess_inv" not in cudamin.minimize("rosenbrock", X0, method="BFGS", options={"return_hess_inv": False})


def test_hess_inv_is_returned_where_scipy_returns_it_or_when_asked():
    assert "hess_inv" in cudamin.minimize("rosenbrock", X0, method="L-BFGS-B")
    skipped = cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", options={"return_hess_inv": False})
    assert "hess_inv" not in skipped
    assert "hess_inv" not in cudamin.minimize("rosenbrock", X0, method="L-BFGS")
    asked = cudamin.minimize("rosenbrock", X0, method="L-BFGS", options={"return_hess_inv": True})
    assert isinstance(asked.hess_inv, LbfgsInvHessProduct)
    assert asked.hess_inv.sk.shape == (10, X0.size)
    # One iteration made no pair: H is the identity it starts from, as scipy's.
    first = cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", options={"maxiter": 1})
    theirs = scipy_minimize(rosen, X0, jac=rosen_der, method="L-BFGS-B", options={"maxiter": 1})
    assert first.hess_inv.sk.shape == theirs.hess_inv.sk.shape == (0, X0.size)
    assert (first.hess_inv @ X0).tolist() == X0.tolist()


def test_large_separable_problem_reaches_its_known_minimum():
    # seed-expsum: Σ x_i² + e^{x_i}, minimum n · 0.827184026128 at 2x + e^x = 0.
    n = 100_000
    result = cudamin.minimize("seed-expsum", n=n, method="L-BFGS")
    assert result.success, result.message
    assert result.x.shape == (n,)
    np.testing.assert_allclose(result.fun, n * 0.827184026128, rtol=1e-10)
    np.testing.assert_allclose(result.x, -0.351733711249, atol=1e-5)


def test_finite_differences_report_their_error():
    result = cudamin.minimize("rosenbrock", X0, jac="3-point")
    assert result.success
    assert result.jac_error["estimate"] > 0
    assert result.jac_error["reference"] in {"exact", "central", "forward"}
    assert cudamin.minimize("rosenbrock", X0).jac_error is None


def test_fixed_variables_stay_at_x0():
    # A mask of booleans holds the same variables as their indices.
    mask = np.zeros(X0.size, dtype=bool)
    mask[0] = True
    by_mask = cudamin.minimize("rosenbrock", X0, fixed=mask, method="L-BFGS-B")
    assert by_mask.x.tolist() == cudamin.minimize("rosenbrock", X0, fixed=[0], method="L-BFGS-B").x.tolist()
    result = cudamin.minimize("rosenbrock", X0, fixed=[0], method="L-BFGS-B")
    assert result.x[0] == X0[0]
    assert result.success


def test_callback_sees_each_iterate_and_stops_on_stopiteration():
    seen = []

    def callback(intermediate_result):
        seen.append((intermediate_result.nit, intermediate_result.fun, intermediate_result.x.copy()))
        if len(seen) == 5:
            raise StopIteration

    result = cudamin.minimize("rosenbrock", X0, callback=callback)
    assert result.status == 99 and not result.success
    assert [nit for nit, _, _ in seen] == [1, 2, 3, 4, 5]
    assert result.nit == 5
    np.testing.assert_array_equal(seen[-1][2], result.x)
    assert seen[-1][1] == result.fun
    # scipy's older style: the callback gets x.
    xs = []
    cudamin.minimize("rosenbrock", X0, callback=lambda xk: xs.append(xk.copy()))
    assert len(xs) == cudamin.minimize("rosenbrock", X0).nit


def test_a_least_squares_callback_sees_scipys_cost():
    seen = []

    def callback(intermediate_result):
        seen.append((intermediate_result.cost, intermediate_result.fun))

    result = cudamin.least_squares("mgh-1", [-1.2, 1.0], callback=callback)
    # After each accepted step, the last at the result.
    assert seen and seen[-1] == (result.cost, None)


def test_an_exception_in_the_callback_propagates():
    def callback(intermediate_result):
        raise ZeroDivisionError("from the callback")

    with pytest.raises(ZeroDivisionError, match="from the callback"):
        cudamin.minimize("rosenbrock", X0, callback=callback)


def test_ctrl_c_stops_a_solve_with_keyboardinterrupt():
    import _thread
    import threading

    # Chained Rosenbrock at n = 10⁵ with a gtol it cannot reach runs for minutes; SIGINT
    # (as Ctrl-C sends it) arrives while the GIL is released.
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            cudamin.minimize(
                "rosenbrock", n=100_000, method="L-BFGS",
                options={"gtol": 1e-300, "maxiter": 10**9},
            )
    finally:
        timer.cancel()


def test_least_squares_is_minpacks_and_trf_within_bounds():
    # MGH 1 (Rosenbrock as residuals 10(x2 − x1²), 1 − x1).
    def residuals(x):
        return np.array([10 * (x[1] - x[0] ** 2), 1 - x[0]])

    def jacobian(x):
        return np.array([[-20 * x[0], 10.0], [-1.0, 0.0]])

    x0 = np.array([-1.2, 1.0])
    ours = cudamin.least_squares("mgh-1", x0)
    theirs = scipy_least_squares(residuals, x0, jac=jacobian, method="lm")
    assert ours.method == "lm"
    assert (ours.status, ours.nfev, ours.njev) == (theirs.status, theirs.nfev, theirs.njev)
    np.testing.assert_allclose(ours.x, theirs.x, atol=1e-12)
    assert ours.fun is None and ours.jac is None
    bounds = ([-np.inf, -np.inf], [0.5, np.inf])
    ours = cudamin.least_squares("mgh-1", x0, bounds=bounds)
    theirs = scipy_least_squares(residuals, x0, jac=jacobian, bounds=bounds)
    assert ours.method == "trf"
    assert (ours.status, ours.nfev, ours.njev) == (theirs.status, theirs.nfev, theirs.njev)
    np.testing.assert_allclose(ours.x, theirs.x, atol=1e-10)
    np.testing.assert_allclose(ours.cost, theirs.cost, rtol=1e-10)
    assert ours.active_mask.tolist() == theirs.active_mask.tolist() == [1, 0]
    # A scalar bound is every variable's, here around the problem's own start (-1.2, 1).
    ours = cudamin.least_squares("mgh-1", bounds=(-1.5, 1.5))
    assert ours.method == "trf" and ours.success
    np.testing.assert_allclose(ours.x, [1.0, 1.0], atol=1e-6)
    # A robust loss runs trf without bounds too, as scipy's (which refuses it with 'lm').
    for loss in ["huber", "cauchy", "arctan", "soft_l1"]:
        ours = cudamin.least_squares("mgh-1", x0, loss=loss, f_scale=0.5)
        theirs = scipy_least_squares(residuals, x0, jac=jacobian, method="trf", loss=loss, f_scale=0.5)
        assert ours.method == "trf", loss
        assert (ours.status, ours.nfev, ours.njev) == (theirs.status, theirs.nfev, theirs.njev), loss
        np.testing.assert_allclose(ours.x, theirs.x, atol=1e-8, err_msg=loss)
    with pytest.raises(ValueError, match="supports only 'linear' loss"):
        cudamin.least_squares("mgh-1", x0, method="lm", loss="huber")
    # The linear loss ignores f_scale, as scipy's does.
    plain = cudamin.least_squares("mgh-1", x0)
    for f_scale in [0.0, -1.0]:
        ignored = cudamin.least_squares("mgh-1", x0, f_scale=f_scale)
        assert (ignored.x.tolist(), ignored.nfev) == (plain.x.tolist(), plain.nfev)


def test_a_tolerance_of_none_turns_its_test_off_as_scipys():
    # MGH 1 in x1 <= 0.5: with ftol on, trf stops on it short of the corner (cost 0.125 + 5e-14);
    # with ftol=None it goes on to the gtol end, as scipy's does.
    def residuals(x):
        return np.array([10 * (x[1] - x[0] ** 2), 1 - x[0]])

    def jacobian(x):
        return np.array([[-20 * x[0], 10.0], [-1.0, 0.0]])

    x0, bounds = np.array([-1.2, 1.0]), ([-np.inf, -np.inf], [0.5, np.inf])
    stopped = cudamin.least_squares("mgh-1", x0, bounds=bounds)
    assert (stopped.status, stopped.nfev) == (2, 17)
    ours = cudamin.least_squares("mgh-1", x0, bounds=bounds, ftol=None)
    theirs = scipy_least_squares(residuals, x0, jac=jacobian, bounds=bounds, ftol=None)
    assert (ours.status, ours.nfev, ours.njev) == (theirs.status, theirs.nfev, theirs.njev) == (1, 18, 16)
    np.testing.assert_allclose(ours.cost, 0.125, rtol=1e-14)
    # Below machine epsilon is off too, with scipy's warning.
    with pytest.warns(UserWarning, match="effectively disables"):
        tiny = cudamin.least_squares("mgh-1", x0, bounds=bounds, ftol=1e-20)
    assert (tiny.status, tiny.nfev) == (1, 18)
    with pytest.raises(ValueError, match="one of them must be at least machine epsilon"):
        cudamin.least_squares("mgh-1", x0, bounds=bounds, ftol=None, xtol=None, gtol=None)
    with pytest.raises(ValueError, match="for lm"):
        cudamin.least_squares("mgh-1", x0, ftol=None)


def test_lbfgsb_maxls_is_scipys():
    # One line search of at most maxls evaluations: with 1 the searches fail (status 2) and
    # with 3 they do not, on the same steps as scipy's; x is scipy's either way.
    for maxls in (1, 3):
        ours = cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", options={"maxls": maxls})
        theirs = scipy_minimize(rosen, X0, jac=rosen_der, method="L-BFGS-B", options={"maxls": maxls})
        assert (ours.status, ours.nit, ours.nfev) == (theirs.status, theirs.nit, theirs.nfev), maxls
        assert ours.status == (2 if maxls == 1 else 0)
        np.testing.assert_allclose(ours.x, theirs.x, atol=1e-8)
    with pytest.raises(ValueError, match="maxls must be at least 1"):
        cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", options={"maxls": 0})


def test_trf_without_bounds_and_its_x_scale_are_scipys():
    # MGH 1, as scipy's users name the method: trf with no bounds, scaled by 1, by 'jac', by an
    # array, bounded or not; each ends as scipy's, with the same counts.
    def residuals(x):
        return np.array([10 * (x[1] - x[0] ** 2), 1 - x[0]])

    def jacobian(x):
        return np.array([[-20 * x[0], 10.0], [-1.0, 0.0]])

    x0 = np.array([-1.2, 1.0])
    bounds = ([-np.inf, -np.inf], [0.5, np.inf])
    for kwargs in [{}, dict(bounds=bounds)]:
        for scale in [None, 1.0, "jac", [1.0, 2.0], [0.5, 4.0]]:
            given = {} if scale is None else dict(x_scale=scale)
            ours = cudamin.least_squares("mgh-1", x0, method="trf", **given, **kwargs)
            theirs = scipy_least_squares(residuals, x0, jac=jacobian, method="trf",
                                         x_scale=1.0 if scale is None else scale, **kwargs)
            case = f"{kwargs} x_scale={scale}"
            assert ours.method == "trf", case
            assert (ours.status, ours.nfev, ours.njev) == (theirs.status, theirs.nfev, theirs.njev), case
            np.testing.assert_allclose(ours.cost, theirs.cost, rtol=1e-10, atol=1e-20, err_msg=case)
    # 'lm' scales by 'jac', MINPACK's own: naming it is the default, any other needs trf.
    assert cudamin.least_squares("mgh-1", x0, x_scale="jac").x.tolist() == cudamin.least_squares("mgh-1", x0).x.tolist()
    for kwargs, scale, message in [
        ({}, 1.0, "needs method='trf'"),
        (dict(method="trf"), "abc", "must be 'jac' or an array_like"),
        (dict(method="trf"), [1.0, 0.0], "positive numbers"),
        (dict(method="trf"), [1.0, 1.0, 1.0], "one per variable"),
        (dict(method="trf"), [[1.0, 1.0]], "one per variable"),
    ]:
        with pytest.raises(ValueError, match=message) as raised:
            cudamin.least_squares("mgh-1", x0, x_scale=scale, **kwargs)
        assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: cudamin.minimize("no-such-problem", X0), ValueError, "unknown problem"),
        (lambda: cudamin.minimize("rosenbrock", X0, method="Nelder-Mead"), ValueError, "unknown method"),
        (lambda: cudamin.minimize("rosenbrock", [np.nan, 1.0]), ValueError, r"x0\[0\] is NaN"),
        (lambda: cudamin.minimize("rosenbrock", np.ones((2, 2))), ValueError, "must be 1-D"),
        (lambda: cudamin.minimize("rosenbrock", ["a", "b"]), ValueError, "array of numbers"),
        (lambda: cudamin.minimize("ext-rosenbrock", np.ones(3)), ValueError, r"n must be 2 \+ 2·k"),
        (
            lambda: cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", bounds=[(1.0, 0.0)] * 10),
            ValueError,
            r"invalid bounds \[1, 0\] for x\[0\]: lower > upper",
        ),
        (lambda: cudamin.minimize("rosenbrock", X0, method="BFGS", bounds=[(0, 1)] * 10), ValueError, "bounds"),
        (lambda: cudamin.minimize("rosenbrock", X0, fixed=[12]), ValueError, "fixed index 12"),
        (lambda: cudamin.minimize("rosenbrock", X0, fixed=[1.7]), ValueError, "indices or a mask"),
        (lambda: cudamin.minimize("rosenbrock", X0, fixed=[-1]), ValueError, "fixed index -1"),
        (lambda: cudamin.minimize("rosenbrock", X0, fixed=[True, False]), ValueError, "2 booleans for 10"),
        (lambda: cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", bounds=5), ValueError, "bounds must be"),
        (lambda: cudamin.minimize("rosenbrock", X0, options="maxiter"), ValueError, "options must be a dict"),
        (lambda: cudamin.minimize("rosenbrock", fixed=[True] * 3), ValueError, "3 booleans for 10"),
        (lambda: cudamin.minimize("rosenbrock", X0, fixed=[[0, 1]]), ValueError, "flat list"),
        (lambda: cudamin.minimize("rosenbrock", X0, fixed=[False, 1]), ValueError, "not both"),
        (lambda: cudamin.minimize("rosenbrock", n=10**400), ValueError, "is too large"),
        (lambda: cudamin.minimize("seed-expsum", [np.nan, 1.0], fixed=[0]), ValueError, r"x0\[0\] is NaN"),
        (lambda: cudamin.minimize("rosenbrock", X0, options={"maxiter": "5"}), ValueError, "maxiter must be"),
        (lambda: cudamin.minimize("rosenbrock", n=2**70), ValueError, "n = .* is too large"),
        (lambda: cudamin.least_squares("mgh-1", [-1.2, 1.0], f_scale="a"), ValueError, "f_scale must be a number"),
        (lambda: cudamin.minimize("rosenbrock", n=-4), ValueError, "n must be at least 0"),
        (lambda: cudamin.minimize("rosenbrock", X0, options={"maxiter": 2.5}), ValueError, "whole number"),
        (
            lambda: cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", options={"maxcor": 0}),
            ValueError,
            "maxcor must be at least 1",
        ),
        (lambda: cudamin.minimize("rosenbrock", X0, backend="tpu"), ValueError, "unknown backend"),
        (lambda: cudamin.least_squares("rosenbrock", X0), ValueError, "not a sum of squares"),
        (
            lambda: cudamin.least_squares("mgh-1", [0.5, 1.0], bounds=([0, -np.inf], [1, np.inf]), method="lm"),
            ValueError,
            "only works for unconstrained problems",
        ),
        (lambda: cudamin.least_squares("mgh-1", [-1.2, 1.0], method="dogbox"), ValueError, "'lm' or 'trf'"),
        (lambda: cudamin.minimize("seed-expsum", n=10**15), MemoryError, "more memory"),
    ],
)
def test_bad_input_is_a_one_line_exception(call, error, message):
    with pytest.raises(error, match=message) as raised:
        call()
    assert "\n" not in str(raised.value)


def test_the_cuda_backend_without_a_gpu_is_a_backend_error():
    with pytest.raises(cudamin.BackendError):
        cudamin.minimize("rosenbrock", X0, backend="cuda")


def test_options_a_method_does_not_take_are_warned_of_and_tol_is_scipys():
    with pytest.warns(OptimizeWarning, match="Unknown solver options: maxfun"):
        limited = cudamin.minimize("rosenbrock", X0, method="L-BFGS", options={"maxfun": 5})
    assert limited.nfev > 5
    with pytest.warns(OptimizeWarning, match="Unknown solver options: ftol, maxcor"):
        cudamin.minimize("rosenbrock", X0, method="BFGS", options={"ftol": 1e-3, "maxcor": 3})
    # tol sets L-BFGS-B's ftol as well as its gtol, as scipy's minimize does.
    ours = cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", tol=1e-2)
    theirs = scipy_minimize(rosen, X0, jac=rosen_der, method="L-BFGS-B", tol=1e-2)
    assert (ours.nit, ours.nfev, ours.status) == (theirs.nit, theirs.nfev, theirs.status)
    np.testing.assert_allclose(ours.fun, theirs.fun, rtol=1e-10)


def test_method_none_and_jac_false_are_scipys():
    # method=None: BFGS without bounds, L-BFGS-B with them; jac=False: two-point differences.
    assert cudamin.minimize("rosenbrock", X0, method=None).method == "bfgs"
    bounded = cudamin.minimize("rosenbrock", X0, method=None, bounds=[(-2.0, 2.0)] * X0.size)
    assert bounded.method == "lbfgsb"
    # None is the default, as in scipy's signature: bounds alone choose L-BFGS-B.
    assert cudamin.minimize("rosenbrock", X0).method == "bfgs"
    unnamed = cudamin.minimize("rosenbrock", X0, bounds=[(-2.0, 2.0)] * X0.size)
    assert unnamed.method == "lbfgsb" and unnamed.x.tolist() == bounded.x.tolist()
    by_false = cudamin.minimize("rosenbrock", X0, jac=False)
    by_name = cudamin.minimize("rosenbrock", X0, jac="2-point")
    assert by_false.x.tolist() == by_name.x.tolist() and by_false.nfev == by_name.nfev
    # scipy reads bool(jac): a numpy bool or a number counts as its truth.
    exact = cudamin.minimize("rosenbrock", X0, jac=True)
    for truthy in [np.True_, 1]:
        assert cudamin.minimize("rosenbrock", X0, jac=truthy).x.tolist() == exact.x.tolist()
    assert cudamin.minimize("rosenbrock", X0, jac=np.False_).x.tolist() == by_false.x.tolist()


def test_an_empty_fixed_holds_nothing_and_a_huge_limit_is_none():
    plain = cudamin.minimize("rosenbrock", X0)
    for ours in [
        cudamin.minimize("rosenbrock", X0, fixed=[]),
        cudamin.minimize("rosenbrock", X0, options={"maxiter": 2**64}),
        cudamin.minimize("rosenbrock", X0, options={"maxiter": 10**400}),
    ]:
        assert (ours.nit, ours.nfev, ours.status) == (plain.nit, plain.nfev, plain.status)


def test_an_integral_float_count_is_a_count():
    # scipy takes maxiter=5.0; so does cudamin.
    assert cudamin.minimize("rosenbrock", X0, options={"maxiter": 5.0}).nit == 5


def test_tol_zero_is_taken_as_scipy_takes_it():
    # No gradient or reduction test: the solve goes on to the minimum, as scipy's does, and ends
    # there on whatever rule the rounding trips first (scipy's at a gradient of exactly 0 here,
    # cudamin's in a line search that can no longer lower f: status 2, ABNORMAL).
    ours = cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", tol=0)
    theirs = scipy_minimize(rosen, X0, jac=rosen_der, method="L-BFGS-B", tol=0)
    assert ours.fun <= 1e-20 and theirs.fun <= 1e-20
    assert ours.status in (0, 2)


def test_gtol_zero_with_differences_ends_as_the_other_rules_say():
    # With no gradient test there is none for the differences' error to doubt: L-BFGS-B's
    # relative-reduction ending stays a success (it became precision loss, status 2, before).
    result = cudamin.minimize("rosenbrock", X0, method="L-BFGS-B", jac="2-point", options={"gtol": 0})
    assert result.success and result.status == 0, result.message
    assert result.fun <= 1e-8


def test_a_module_built_against_other_calls_is_refused_at_bind():
    assert cudamin._native.catalog.interface == cudamin._INTERFACE
    assert cudamin.bind(cudamin._native.catalog).problems() == cudamin.problems()

    class Before:  # a catalog from before the version check
        pass

    class Later:
        interface = cudamin._INTERFACE + 1

    for catalog in (Before(), Later()):
        with pytest.raises(ImportError, match="rebuild it against this cudamin"):
            cudamin.bind(catalog)
