"""Many Michaelis–Menten fits at once, on the batch kernel my-kernels registers: each fit
scipy's curve_fit on its own row, the PTX simulator the CPU's answers, a bad fit alone."""

import numpy as np
import pytest
from scipy.optimize import curve_fit

import my_kernels

TIGHT = dict(ftol=1e-12, xtol=1e-12, gtol=1e-12)


def rate(s, v_max, k):
    return v_max * s / (k + s)


def jacobian(s, v_max, k):
    return np.column_stack([s / (k + s), -v_max * s / (k + s) ** 2])


@pytest.fixture
def curves():
    """300 rate curves over 15 shared substrate values, each its own (V, K), with noise."""
    rng = np.random.default_rng(11)
    s = np.linspace(0.2, 12.0, 15)
    truth = np.column_stack([rng.uniform(1.0, 4.0, 300), rng.uniform(0.5, 3.0, 300)])
    v = np.array([rate(s, *t) for t in truth]) + 0.02 * rng.standard_normal((300, s.size))
    return s, v, truth * 0.8


def test_each_fit_is_scipys(curves):
    s, v, p0 = curves
    popt, pcov, info = my_kernels.curve_fit_batch("michaelis-menten", s, v, p0=p0, **TIGHT)
    assert popt.shape == (300, 2) and pcov.shape == (300, 2, 2)
    assert (info["status"] > 0).all()
    for f in range(300):
        expected = curve_fit(rate, s, v[f], p0=p0[f], jac=jacobian, **TIGHT)
        np.testing.assert_allclose(popt[f], expected[0], rtol=1e-6)
        np.testing.assert_allclose(pcov[f], expected[1], rtol=1e-5, atol=1e-12)


def test_the_simulator_runs_the_kernel_as_the_cpu(curves):
    s, v, p0 = curves
    cpu = my_kernels.curve_fit_batch("michaelis-menten", s, v[:50], p0=p0[:50])
    sim = my_kernels.curve_fit_batch("michaelis-menten", s, v[:50], p0=p0[:50], backend="sim")
    # Both fold each fit's rows in one order: the same bits, in either precision.
    np.testing.assert_array_equal(sim[0], cpu[0])
    assert (sim[2]["status"] == cpu[2]["status"]).all()
    cpu = my_kernels.curve_fit_batch("michaelis-menten", s, v[:50], p0=p0[:50], dtype=np.float32)
    sim = my_kernels.curve_fit_batch(
        "michaelis-menten", s, v[:50], p0=p0[:50], dtype=np.float32, backend="sim"
    )
    assert cpu[0].dtype == np.float32
    assert sim[0].tobytes() == cpu[0].tobytes()
    double = my_kernels.curve_fit_batch("michaelis-menten", s, v[:50], p0=p0[:50])[0]
    np.testing.assert_allclose(cpu[0], double, rtol=1e-3)


def test_a_bad_fit_fails_alone(curves):
    s, v, p0 = curves
    v = v[:3].copy()
    v[1, 4] = np.nan
    popt, _, info = my_kernels.curve_fit_batch("michaelis-menten", s, v, p0=p0[:3])
    assert info["status"][1] == -1 and "NaN" in info["message"][1]
    assert (info["status"][[0, 2]] > 0).all()
    alone = my_kernels.curve_fit_batch("michaelis-menten", s, v[[0, 2]], p0=p0[[0, 2]])[0]
    assert popt[[0, 2]].tolist() == alone.tolist()
    with pytest.raises(ValueError, match="MichaelisMenten fits n = 2 parameters"):
        my_kernels.curve_fit_batch("michaelis-menten", s, v, p0=[1.0, 1.0, 1.0])


def test_a_session_runs_the_fits_and_keeps_to_its_module(curves):
    """A session of this module runs its batch kernel on the simulator, with the module-level
    call's bits; cudamin's own session cannot run this module's models, and says so."""
    import cudamin

    s, v, p0 = curves
    shared = my_kernels.curve_fit_batch("michaelis-menten", s, v[:20], p0=p0[:20], backend="sim")
    with my_kernels.Session(backend="sim") as session:
        popt, _, info = session.curve_fit_batch("michaelis-menten", s, v[:20], p0=p0[:20])
        assert session.traffic()["contexts_created"] == 1
    assert popt.tobytes() == shared[0].tobytes()
    assert (info["status"] > 0).all()
    with cudamin.Session("cpu") as other, pytest.raises(ValueError, match="Session of this module"):
        my_kernels.curve_fit_batch("michaelis-menten", s, v[:2], p0=p0[:2], backend=other._native)
