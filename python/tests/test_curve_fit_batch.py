"""cudamin.curve_fit_batch against a loop of scipy.optimize.curve_fit calls on the same arrays,
in the same process: symmetric 2-D Gaussian spots on 5 × 5 pixels with Poisson noise, Gpufit's
benchmark case."""

import numpy as np
import pytest
from scipy.optimize import curve_fit, minimize

import cudamin

TIGHT = dict(ftol=1e-12, xtol=1e-12, gtol=1e-12)
RNG = np.random.default_rng(41)
GRID = np.column_stack([np.tile(np.arange(5.0), 5), np.repeat(np.arange(5.0), 5)])  # (M, 2)


def gauss_2d(x, a, x0, y0, s, b):
    return a * np.exp(-((x[0] - x0) ** 2 + (x[1] - y0) ** 2) / (2 * s * s)) + b


def gauss_2d_jacobian(x, a, x0, y0, s, b):
    dx, dy = x[0] - x0, x[1] - y0
    e = np.exp(-(dx * dx + dy * dy) / (2 * s * s))
    return np.column_stack([e, a * e * dx / s**2, a * e * dy / s**2, a * e * (dx * dx + dy * dy) / s**3, np.ones_like(e)])


def spots(fits):
    truth = np.column_stack([
        RNG.uniform(200, 500, fits), RNG.uniform(1.5, 2.5, fits), RNG.uniform(1.5, 2.5, fits),
        RNG.uniform(0.8, 1.2, fits), RNG.uniform(5, 15, fits),
    ])
    y = RNG.poisson([gauss_2d(GRID.T, *t) for t in truth]).astype(float)
    return truth, y, truth * RNG.uniform(0.9, 1.1, truth.shape)


def test_every_fit_is_scipys():
    """The acceptance's case: 10 000 spots, each fit against scipy's own, popt to 1e-6 relative
    and pcov to 1e-4 of its diagonal's scale."""
    fits = 10_000
    _, y, p0 = spots(fits)
    popt, pcov, info = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, **TIGHT)
    assert popt.shape == (fits, 5) and pcov.shape == (fits, 5, 5)
    assert np.all(info["status"] > 0), info["message"]
    expected = [curve_fit(gauss_2d, GRID.T, y[f], p0=p0[f], jac=gauss_2d_jacobian, **TIGHT) for f in range(fits)]
    expected_popt = np.array([e[0] for e in expected])
    expected_pcov = np.array([e[1] for e in expected])
    np.testing.assert_allclose(popt, expected_popt, rtol=1e-6)
    diagonal = np.abs(np.einsum("fii->fi", expected_pcov))
    scale = np.sqrt(diagonal[:, :, None] * diagonal[:, None, :])
    assert np.all(np.abs(pcov - expected_pcov) <= 1e-4 * scale)


def test_the_simulator_runs_the_gpu_kernel_with_the_cpus_answers():
    fits = 50
    _, y, p0 = spots(fits)
    on_cpu = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, **TIGHT)
    with cudamin.Session(backend="sim") as session:
        before = session.traffic()
        on_sim = session.curve_fit_batch("gauss-2d", GRID, y, p0, **TIGHT)
        after = session.traffic()
    # Up: the grid every fit shares, once; each fit's 25 counts, its offset and its start. Back:
    # each fit's parameters, status and counts, and its triangle, 5 + 5 + 15 values.
    assert after["h2d_bytes"] - before["h2d_bytes"] == 8 * (2 * 25 + fits * 25 + fits + 1 + fits * 5)
    assert after["d2h_bytes"] - before["d2h_bytes"] == 8 * fits * 25
    # The same bits: both fold a fit's rows in one order.
    np.testing.assert_array_equal(on_cpu[2]["status"], on_sim[2]["status"])
    np.testing.assert_array_equal(on_sim[0], on_cpu[0])
    np.testing.assert_array_equal(on_sim[1], on_cpu[1])
    with pytest.raises(ValueError, match="unknown backend"):
        cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, backend="tpu")


def test_bounds_and_fixed_parameters_are_scipys():
    _, y, p0 = spots(30)
    # A width cap that binds for some spots: trf, as scipy runs a bounded curve_fit.
    lower, upper = [0, 0, 0, 0.5, -np.inf], [np.inf, 5, 5, 1.0, np.inf]
    p0[:, 3] = 0.9
    popt, pcov, info = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, bounds=(lower, upper), **TIGHT)
    assert np.all(info["status"] > 0), info["message"]
    assert np.all(popt[:, 3] <= 1.0) and np.any(popt[:, 3] > 1.0 - 1e-6)
    for f in range(30):
        expected, expected_pcov = curve_fit(gauss_2d, GRID.T, y[f], p0=p0[f], jac=gauss_2d_jacobian,
                                            bounds=(lower, upper), **TIGHT)
        np.testing.assert_allclose(popt[f], expected, rtol=1e-6, atol=1e-9)
    # The offset held at its start, by name: scipy fits the other four.
    held, _, info = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, fixed=["b"], **TIGHT)
    assert np.all(info["status"] > 0), info["message"]
    np.testing.assert_array_equal(held[:, 4], p0[:, 4])
    for f in range(30):
        four = lambda x, a, x0, y0, s, b=p0[f, 4]: gauss_2d(x, a, x0, y0, s, b)  # noqa: E731
        expected, _ = curve_fit(four, GRID.T, y[f], p0=p0[f, :4], **TIGHT)
        np.testing.assert_allclose(held[f, :4], expected, rtol=1e-6)
    # Held parameters run on the kernel: the simulator's answers, in float32 too, and counts.
    on_sim, sim_pcov, _ = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, fixed=["b"], backend="sim", **TIGHT)
    np.testing.assert_allclose(on_sim, held, rtol=1e-9)
    assert np.all(sim_pcov[:, 4, :] == 0) and np.all(sim_pcov[:, :, 4] == 0)
    single = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, fixed=[4], dtype=np.float32)
    assert np.all(single[2]["status"] > 0)
    np.testing.assert_array_equal(single[0][:, 4], p0[:, 4].astype(np.float32))
    counts = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, fixed=[4], estimator="poisson")
    assert np.all(counts[2]["status"] > 0)
    np.testing.assert_array_equal(counts[0][:, 4], p0[:, 4])


def test_lines_of_one_predictor_are_scipys_on_both_paths():
    # Lorentzian lines and 1-D Gaussians (gauss-peaks, p = 4) on 40 points, each its own line.
    x = np.linspace(-2.0, 2.0, 40)
    lorentzian = lambda x, a, x0, g, b: a * g * g / ((x - x0) ** 2 + g * g) + b  # noqa: E731
    gauss_1d = lambda x, c, a, mu, s: c + a * np.exp(-((x - mu) ** 2) / (2 * s * s))  # noqa: E731
    for name, f, truth in (("lorentzian", lorentzian, [3.0, 0.2, 0.4, 0.5]), ("gauss-peaks", gauss_1d, [0.5, 3.0, 0.2, 0.4])):
        truth = np.array(truth) * RNG.uniform(0.9, 1.1, (40, 4))
        y = np.array([f(x, *t) for t in truth]) + 0.05 * RNG.standard_normal((40, 40))
        p0 = truth * RNG.uniform(0.95, 1.05, truth.shape)
        for backend in ("cpu", "sim"):
            popt, _, info = cudamin.curve_fit_batch(name, x, y, p0, backend=backend, **TIGHT)
            assert np.all(info["status"] > 0), (name, backend, info["message"])
            for k in range(40):
                expected, _ = curve_fit(f, x, y[k], p0=p0[k], **TIGHT)
                np.testing.assert_allclose(popt[k], expected, rtol=1e-6, atol=1e-9, err_msg=f"{name} {backend} {k}")


def test_elliptic_spots_are_scipys_on_both_paths():
    grid = np.column_stack([np.tile(np.arange(7.0), 7), np.repeat(np.arange(7.0), 7)])
    f = lambda x, a, x0, y0, sx, sy, b: a * np.exp(-((x[0] - x0) ** 2) / (2 * sx * sx) - (x[1] - y0) ** 2 / (2 * sy * sy)) + b  # noqa: E731
    truth = np.column_stack([
        RNG.uniform(200, 500, 30), RNG.uniform(2.5, 3.5, 30), RNG.uniform(2.5, 3.5, 30),
        RNG.uniform(0.8, 1.1, 30), RNG.uniform(1.2, 1.6, 30), RNG.uniform(5, 15, 30),
    ])
    y = RNG.poisson([f(grid.T, *t) for t in truth]).astype(float)
    p0 = truth * RNG.uniform(0.95, 1.05, truth.shape)
    for backend in ("cpu", "sim"):
        popt, pcov, info = cudamin.curve_fit_batch("gauss-2d-elliptic", grid, y, p0, backend=backend, **TIGHT)
        assert np.all(info["status"] > 0), (backend, info["message"])
        for k in range(30):
            expected, expected_pcov = curve_fit(f, grid.T, y[k], p0=p0[k], **TIGHT)
            np.testing.assert_allclose(popt[k], expected, rtol=1e-6, err_msg=f"{backend} {k}")
            scale = np.sqrt(np.outer(np.diag(expected_pcov), np.diag(expected_pcov)))
            assert np.all(np.abs(pcov[k] - expected_pcov) <= 1e-4 * scale)


def test_per_fit_points_and_one_start_for_all():
    truth, y, _ = spots(20)
    # The same grid given per fit, (F, M, 2), and one start for every fit.
    per_fit = np.broadcast_to(GRID, (20, 25, 2))
    start = np.array([300.0, 2.0, 2.0, 1.0, 10.0])
    shared = cudamin.curve_fit_batch("gauss-2d", GRID, y, start)
    each = cudamin.curve_fit_batch("gauss-2d", per_fit, y, np.tile(start, (20, 1)))
    np.testing.assert_array_equal(shared[0], each[0])
    # Poisson noise on 25 pixels: the centre to a quarter pixel, the amplitude to 15 %.
    np.testing.assert_allclose(shared[0][:, 1:3], truth[:, 1:3], atol=0.25)
    np.testing.assert_allclose(shared[0][:, 0], truth[:, 0], rtol=0.15)


def test_a_bad_fit_fails_alone():
    _, y, p0 = spots(5)
    y[2, 3] = np.nan
    popt, pcov, info = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0)
    assert info["status"][2] == -1 and "NaN" in info["message"][2]
    assert np.all(np.isnan(popt[2])) and np.all(np.isinf(pcov[2]))
    good = [0, 1, 3, 4]
    assert np.all(info["status"][good] > 0)
    alone = cudamin.curve_fit_batch("gauss-2d", GRID, y[good], p0[good])
    np.testing.assert_array_equal(alone[0], popt[good])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(ydata=np.ones(25)), "ydata must be \\(F, M\\)"),
        (dict(xdata=np.ones((24, 2))), "xdata must be"),
        (dict(p0=np.ones((3, 5))), "p0 must be"),
        (dict(p0=np.ones(4)), "gauss-2d with 4 parameters: it takes p = 5"),
        (dict(f="no-such-model"), "unknown model"),
    ],
)
def test_bad_input_is_a_one_line_error(kwargs, message):
    _, y, p0 = spots(4)
    call = dict(f="gauss-2d", xdata=GRID, ydata=y, p0=p0) | kwargs
    with pytest.raises(ValueError, match=message):
        cudamin.curve_fit_batch(**call)


def test_float32_fits_are_the_float64_ones_within_their_errors():
    """Single precision: float32 arrays, every fit within a hundredth of a standard error of its
    float64 answer, and the simulator's bits the CPU's. What the batch kernel cannot take is
    refused, not run in float64 unasked."""
    _, y, p0 = spots(200)
    double = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0)
    single = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, dtype=np.float32)
    on_sim = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, dtype="float32", backend="sim")
    assert single[0].dtype == np.float32 and single[1].dtype == np.float32
    assert np.all(single[2]["status"] > 0), single[2]["message"]
    np.testing.assert_array_equal(on_sim[0], single[0])
    np.testing.assert_array_equal(on_sim[1], single[1])
    np.testing.assert_array_equal(on_sim[2]["status"], single[2]["status"])
    errors = np.sqrt(np.einsum("fii->fi", double[1]))
    assert np.all(np.abs(single[0] - double[0]) <= 1e-2 * errors)
    # The amplitude, the centre and the width to 2e-4 relative; the offset, near 0 in some
    # spots, by its error alone.
    np.testing.assert_allclose(single[0][:, :4], double[0][:, :4], rtol=2e-4)
    with pytest.raises(ValueError, match="single-precision fits run on the model's batch kernel"):
        cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, dtype=np.float32, bounds=(0, np.inf))
    with pytest.raises(ValueError, match="dtype must be float64 or float32"):
        cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, dtype=np.int32)


def test_poisson_fits_are_the_likelihoods_maximum():
    """estimator='poisson', Gpufit's MLE: each fit is the maximum of the Poisson likelihood that
    scipy's minimize finds from the same start, and pcov is the inverse of the Fisher information
    its deviance residuals' JᵀJ estimates there, unscaled."""
    fits = 100
    _, y, p0 = spots(fits)
    popt, pcov, info = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, estimator="poisson", **TIGHT)
    assert np.all(info["status"] > 0), info["message"]
    on_sim = cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, estimator="poisson", backend="sim", **TIGHT)
    np.testing.assert_allclose(on_sim[0], popt, rtol=1e-10)
    for f in range(fits):
        counts = y[f]

        def nll(theta):
            m = gauss_2d(GRID.T, *theta)
            return np.sum(m - counts * np.log(m))

        def gradient(theta):
            m = gauss_2d(GRID.T, *theta)
            return gauss_2d_jacobian(GRID.T, *theta).T @ (1 - counts / m)

        reference = minimize(nll, p0[f], jac=gradient, method="BFGS", options=dict(gtol=1e-9))
        # scipy's BFGS stops within about 1e-7 of the maximum: relative, or in standard errors
        # for an offset near 0.
        errors = np.sqrt(np.diag(pcov[f]))
        assert np.all(np.abs(popt[f] - reference.x) <= 1e-6 * np.abs(reference.x) + 1e-5 * errors)
        terms = np.abs(gauss_2d_jacobian(GRID.T, *popt[f])).T @ (counts / gauss_2d(GRID.T, *popt[f]))
        assert np.all(np.abs(gradient(popt[f])) <= 5e-8 * terms)
        m = gauss_2d(GRID.T, *popt[f])
        d = np.sign(counts - m) * np.sqrt(2 * (m - counts - counts * np.log(np.where(counts > 0, m / np.maximum(counts, 1e-300), 1))))
        jd = gauss_2d_jacobian(GRID.T, *popt[f]) * ((1 - counts / m) / d)[:, None]
        fisher_inverse = np.linalg.inv(jd.T @ jd)
        scale = np.sqrt(np.outer(np.diag(fisher_inverse), np.diag(fisher_inverse)))
        assert np.all(np.abs(pcov[f] - fisher_inverse) <= 1e-4 * scale)
        np.testing.assert_allclose(info["cost"][f], 0.5 * np.sum(d * d), rtol=1e-9)
    with pytest.raises(ValueError, match="poisson fits take no sigma"):
        cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, sigma=2.0, estimator="poisson")
    with pytest.raises(ValueError, match="estimator must be 'lsq' or 'poisson'"):
        cudamin.curve_fit_batch("gauss-2d", GRID, y, p0, estimator="mle")


def test_ragged_fits_are_scipys():
    """offsets: spots on 5 × 5, 4 × 4 and 6 × 6 pixels in one batch, each fit against scipy's."""
    grids = [np.column_stack([np.tile(np.arange(s, dtype=float), s), np.repeat(np.arange(s, dtype=float), s)])
             for s in (5, 4, 6)]
    truth, _, p0 = spots(3)
    ys = [RNG.poisson(gauss_2d(g.T, *t)).astype(float) for g, t in zip(grids, truth)]
    offsets = np.cumsum([0] + [len(y) for y in ys])
    popt, pcov, info = cudamin.curve_fit_batch("gauss-2d", np.vstack(grids), np.concatenate(ys), p0,
                                               offsets=offsets, **TIGHT)
    assert np.all(info["status"] > 0), info["message"]
    for f, (g, y) in enumerate(zip(grids, ys)):
        expected, expected_pcov = curve_fit(gauss_2d, g.T, y, p0=p0[f], jac=gauss_2d_jacobian, **TIGHT)
        np.testing.assert_allclose(popt[f], expected, rtol=1e-6)
        scale = np.sqrt(np.outer(np.diag(expected_pcov), np.diag(expected_pcov)))
        assert np.all(np.abs(pcov[f] - expected_pcov) <= 1e-4 * scale)
    with pytest.raises(ValueError, match="offsets must rise from 0"):
        cudamin.curve_fit_batch("gauss-2d", np.vstack(grids), np.concatenate(ys), p0, offsets=[0, 25, 41, 70])
    with pytest.raises(ValueError, match="offsets must be F \\+ 1 integers"):
        cudamin.curve_fit_batch("gauss-2d", np.vstack(grids), np.concatenate(ys), p0, offsets=[0.0, 77.0])
