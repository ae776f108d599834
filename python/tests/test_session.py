"""cudamin.Session: one backend held open for many calls, and what its device has done."""

import numpy as np
import pytest

import cudamin

TIGHT = dict(ftol=1e-12, xtol=1e-12, gtol=1e-12)
GRID = np.column_stack([np.tile(np.arange(5.0), 5), np.repeat(np.arange(5.0), 5)])


def poly_data(seed):
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 4.0, 300)
    return x, 1.0 - 2.0 * x + 0.5 * x * x + 0.01 * rng.standard_normal(x.size)


def test_ten_fits_on_one_session_make_one_context_and_load_once():
    """The acceptance's count: ten curve_fit calls on one simulator session create one context
    and load the module once; each call's copies and launches are counted, and each answer is
    the module-level call's, bit for bit."""
    with cudamin.Session(backend="sim") as session:
        assert session.backend == "sim" and not session.closed
        opened = session.traffic()
        assert opened["contexts_created"] == 1 and opened["modules_loaded"] == 1
        assert opened["launches"] == 0 and opened["h2d_bytes"] == 0
        last = opened
        for seed in range(10):
            x, y = poly_data(seed)
            popt, pcov, info, _, _ = session.curve_fit("poly", x, y, full_output=True, **TIGHT)
            assert info["backend"] == "sim"
            now = session.traffic()
            assert now["contexts_created"] == 1 and now["modules_loaded"] == 1
            # x, y and σ-free weights went up at least once; results and scalars came back.
            assert now["h2d_bytes"] - last["h2d_bytes"] >= 2 * 8 * x.size
            assert now["d2h_bytes"] > last["d2h_bytes"]
            assert now["launches"] > last["launches"] and now["waits"] > last["waits"]
            last = now
            shared, shared_pcov = cudamin.curve_fit("poly", x, y, backend="sim", **TIGHT)
            np.testing.assert_array_equal(popt, shared)
            np.testing.assert_array_equal(pcov, shared_pcov)
    assert session.closed


def test_every_method_runs_on_the_session():
    """minimize, least_squares and curve_fit_batch pass the session as their backend: the same
    bits as the module's calls on the same backend."""
    with cudamin.Session("sim") as session:
        got = session.minimize("rosenbrock", n=4, method="L-BFGS-B")
        expected = cudamin.minimize("rosenbrock", n=4, method="L-BFGS-B", backend="sim")
        assert got.backend == "sim"
        np.testing.assert_array_equal(got.x, expected.x)
        got = session.least_squares("mgh-1")
        expected = cudamin.least_squares("mgh-1", backend="sim")
        np.testing.assert_array_equal(got.x, expected.x)
        rng = np.random.default_rng(3)
        truth = np.array([300.0, 2.0, 2.2, 1.0, 10.0])
        model = truth[0] * np.exp(-((GRID[:, 0] - truth[1]) ** 2 + (GRID[:, 1] - truth[2]) ** 2) / 2) + truth[4]
        y = rng.poisson(np.tile(model, (6, 1))).astype(float)
        popt, pcov, info = session.curve_fit_batch("gauss-2d", GRID, y, truth, **TIGHT)
        expected = cudamin.curve_fit_batch("gauss-2d", GRID, y, truth, backend="sim", **TIGHT)
        np.testing.assert_array_equal(popt, expected[0])
        assert np.all(info["status"] > 0)


def test_a_cpu_session_counts_nothing_and_gives_the_cpus_bits():
    x, y = poly_data(11)
    with cudamin.Session("cpu") as session:
        popt, _ = session.curve_fit("poly", x, y, **TIGHT)
        assert set(session.traffic().values()) == {0}
    np.testing.assert_array_equal(popt, cudamin.curve_fit("poly", x, y, backend="cpu", **TIGHT)[0])


def test_a_closed_session_refuses_calls():
    session = cudamin.Session("cpu")
    session.close()
    session.close()
    assert session.closed and repr(session) == "cudamin.Session(closed)"
    x, y = poly_data(0)
    with pytest.raises(cudamin.BackendError, match="closed"):
        session.curve_fit("poly", x, y)
    with pytest.raises(cudamin.BackendError, match="closed"):
        session.traffic()


def test_bad_sessions_are_clear_errors():
    with pytest.raises(ValueError, match="unknown backend"):
        cudamin.Session("tpu")
    with cudamin.Session("cpu") as session, pytest.raises(TypeError, match="drop backend="):
        session.minimize("rosenbrock", n=2, backend="cpu")
