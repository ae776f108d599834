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


def seed_start(n):
    """A start for seed-expsum, away from its minimum."""
    return np.linspace(0.2, 0.8, n)


def test_a_session_held_start_kept_on_the_device_moves_only_scalars():
    """The acceptance's solve: L-BFGS on seed-expsum at n = 10⁵ from an x0 the session holds,
    its solution kept on the device. The start goes up once, in to_device; the solve moves no
    vector either way, only scalars and the small tables of its passes: at most 1 KB, the
    acceptance's bound. Its x and jac are the host start's, bit for bit, once read."""
    n = 100_000
    x0 = seed_start(n)
    with cudamin.Session("sim") as session:
        from_host = session.minimize("seed-expsum", x0, method="L-BFGS")
        before = session.traffic()
        held = session.to_device(x0)
        uploaded = session.traffic()
        assert uploaded["h2d_bytes"] - before["h2d_bytes"] == 8 * n
        assert uploaded["d2h_bytes"] == before["d2h_bytes"]
        assert len(held) == n and held.shape == (n,) and held.dtype == "float64"

        res = session.minimize("seed-expsum", held, method="L-BFGS", keep_on_device=True)
        after = session.traffic()
        moved = (after["h2d_bytes"] - uploaded["h2d_bytes"]) + (after["d2h_bytes"] - uploaded["d2h_bytes"])
        assert moved <= 1024, after
        assert after["contexts_created"] == 1 and after["modules_loaded"] == 1
        assert res.success and res.nit == from_host.nit and res.nfev == from_host.nfev
        assert res.fun == from_host.fun
        assert type(res.x).__name__ == "DeviceArray" and type(res.jac).__name__ == "DeviceArray"
        # Reading the solution is what copies it.
        np.testing.assert_array_equal(np.asarray(res.x), from_host.x)
        np.testing.assert_array_equal(np.asarray(res.jac), from_host.jac)
        assert session.traffic()["d2h_bytes"] - after["d2h_bytes"] == 2 * 8 * n
        # The start was read, not changed.
        np.testing.assert_array_equal(held.to_numpy(), x0)


def test_l_bfgs_b_pairs_stay_on_the_device_until_used():
    """L-BFGS-B returns hess_inv by default, as scipy's. On device vectors its pairs stay on the
    device: the solve copies no more back than one without them; the first product copies them
    once, and gives the CPU solve's product to rounding (the sums add in another order)."""
    n = 100_000
    x0 = seed_start(n)
    cpu = cudamin.minimize("seed-expsum", x0, method="L-BFGS-B", backend="cpu")
    with cudamin.Session("sim") as session:
        start = session.traffic()
        session.minimize("seed-expsum", x0, method="L-BFGS-B", options={"return_hess_inv": False})
        without = session.traffic()
        res = session.minimize("seed-expsum", x0, method="L-BFGS-B")
        solved = session.traffic()
        assert solved["d2h_bytes"] - without["d2h_bytes"] == without["d2h_bytes"] - start["d2h_bytes"]
        assert res.nit == cpu.nit and res.hess_inv.n_corrs == cpu.hess_inv.n_corrs >= 2
        v = np.linspace(-1.0, 1.0, n)
        product = res.hess_inv.dot(v)
        copied = session.traffic()["d2h_bytes"] - solved["d2h_bytes"]
        assert copied == 2 * res.hess_inv.n_corrs * n * 8
        np.testing.assert_allclose(product, cpu.hess_inv.dot(v), rtol=1e-9, atol=1e-12)
        # Used again, the stacked pairs are used: nothing more is copied.
        res.hess_inv.dot(v)
        assert session.traffic()["d2h_bytes"] - solved["d2h_bytes"] == copied


def test_a_bounded_device_start_keeps_its_solution_and_mask_on_the_device():
    """L-BFGS-B from a session-held start, kept on the device: no vector comes back (the bounds
    go up once), and x, jac and active_mask are device arrays holding the host start's bits."""
    n = 40_000
    x0 = seed_start(n)
    upper = np.where(np.arange(n) % 3 == 0, -0.4, np.inf)
    bounds = list(zip(np.full(n, -np.inf), upper))
    with cudamin.Session("sim") as session:
        expected = session.minimize("seed-expsum", x0, method="L-BFGS-B", bounds=bounds)
        held = session.to_device(x0)
        before = session.traffic()
        res = session.minimize(
            "seed-expsum", held, method="L-BFGS-B", bounds=bounds, keep_on_device=True,
            options={"return_hess_inv": False},
        )
        after = session.traffic()
        assert after["d2h_bytes"] - before["d2h_bytes"] < 8 * n, after
        assert res.nit == expected.nit and res.nfev == expected.nfev and res.fun == expected.fun
        for name in ("x", "jac", "active_mask"):
            assert type(res[name]).__name__ == "DeviceArray", name
        np.testing.assert_array_equal(np.asarray(res.x), expected.x)
        np.testing.assert_array_equal(np.asarray(res.jac), expected.jac)
        np.testing.assert_array_equal(np.asarray(res.active_mask), expected.active_mask)
        assert np.asarray(res.active_mask)[::3].min() == 1.0


def test_numpy_session_held_and_foreign_starts_give_the_same_bits():
    """numpy arrays, lists, objects with __array__ (a torch CPU tensor's protocol) and
    session-held arrays start the same solve; a solve too small to keep its vectors on the
    device hands its solution over with keep_on_device all the same."""
    n = 40_000
    x0 = seed_start(n)

    class Foreign:
        def __array__(self, dtype=None, copy=None):
            return x0.copy()

    with cudamin.Session("sim") as session:
        expected = session.minimize("seed-expsum", x0, method="L-BFGS")
        for start in (list(x0), Foreign(), session.to_device(x0), x0[::-1].copy()[::-1]):
            got = session.minimize("seed-expsum", start, method="L-BFGS")
            np.testing.assert_array_equal(got.x, expected.x)
            assert got.nfev == expected.nfev
        small = session.minimize("seed-expsum", seed_start(50), method="L-BFGS", keep_on_device=True)
        assert type(small.x).__name__ == "DeviceArray"
        np.testing.assert_array_equal(
            np.asarray(small.x), session.minimize("seed-expsum", seed_start(50), method="L-BFGS").x
        )


def test_cuda_array_interface_starts_are_read_where_they_lie():
    """Another library's CUDA array (torch, CuPy, JAX, Numba) is read where it lies, through
    its __cuda_array_interface__. Here an object describes a session-held array's memory as
    such a library would. The solve uploads no vector and gives the host start's bits. Arrays
    that are not contiguous float64 vectors in the device's own memory are refused clearly."""
    n = 40_000
    x0 = seed_start(n)

    class Interface:
        def __init__(self, address, **changes):
            self.__cuda_array_interface__ = dict(
                shape=(n,), typestr="<f8", data=(address, False), strides=None, version=3
            )
            self.__cuda_array_interface__.update(changes)

        def __len__(self):
            return n

    with cudamin.Session("sim") as session:
        expected = session.minimize("seed-expsum", x0, method="L-BFGS")
        held = session.to_device(x0)
        with pytest.raises(AttributeError):
            held.__cuda_array_interface__  # the simulator's memory is no CUDA device's
        before = session.traffic()
        got = session.minimize(
            "seed-expsum", Interface(held.device_address, stream=1), method="L-BFGS", keep_on_device=True
        )
        assert session.traffic()["h2d_bytes"] - before["h2d_bytes"] <= 1024
        assert got.fun == expected.fun and got.nfev == expected.nfev
        np.testing.assert_array_equal(np.asarray(got.x), expected.x)
        np.testing.assert_array_equal(np.asarray(held), x0)
        # Another library's start keeps the solution on the device by default.
        kept = session.minimize("seed-expsum", Interface(held.device_address), method="L-BFGS")
        assert type(kept.x).__name__ == "DeviceArray" and type(kept.jac).__name__ == "DeviceArray"
        np.testing.assert_array_equal(np.asarray(kept.x), expected.x)
        for changes, message in [
            (dict(typestr="<f4"), "float64"),
            (dict(shape=(n // 2, 2)), "1-D"),
            (dict(strides=(16,)), "contiguous"),
            (dict(mask=object()), "no mask"),
        ]:
            with pytest.raises(ValueError, match=message):
                session.minimize("seed-expsum", Interface(held.device_address, **changes), method="L-BFGS")
        with pytest.raises(cudamin.BackendError, match="not in one of the simulator's arrays"):
            session.minimize("seed-expsum", Interface(held.device_address + 8), method="L-BFGS")
    with pytest.raises(cudamin.BackendError, match="cannot read device memory"):
        cudamin.minimize("seed-expsum", Interface(0x1_0000_0000), method="L-BFGS", backend="cpu")


def test_torch_cpu_tensors_start_the_same_solve():
    torch = pytest.importorskip("torch")
    x0 = seed_start(2_000)
    with cudamin.Session("sim") as session:
        expected = session.minimize("seed-expsum", x0, method="L-BFGS")
        got = session.minimize("seed-expsum", torch.from_numpy(x0.copy()), method="L-BFGS")
        np.testing.assert_array_equal(got.x, expected.x)


def test_device_arrays_on_the_cpu_and_bad_starts():
    """A CPU session keeps arrays on the host (numpy); keep_on_device changes nothing there.
    A device start with a NaN names its entry; another session's array is read through the
    host; a device array cannot be read without a copy."""
    x0 = seed_start(1_000)
    with cudamin.Session("cpu") as session:
        held = session.to_device(x0)
        assert isinstance(held, np.ndarray)
        res = session.minimize("seed-expsum", held, method="L-BFGS", keep_on_device=True)
        assert isinstance(res.x, np.ndarray)
    with cudamin.Session("sim") as session, cudamin.Session("sim") as other:
        bad = x0.copy()
        bad[7] = np.nan
        with pytest.raises(ValueError, match=r"x0\[7\] is NaN"):
            session.minimize("seed-expsum", session.to_device(bad), method="L-BFGS")
        foreign = other.to_device(x0)
        np.testing.assert_array_equal(
            session.minimize("seed-expsum", foreign, method="L-BFGS").x,
            session.minimize("seed-expsum", x0, method="L-BFGS").x,
        )
        with pytest.raises(ValueError, match="without a copy"):
            np.asarray(foreign, copy=False)
        with pytest.raises(ValueError, match="1-D"):
            session.to_device(np.zeros((2, 2)))


def test_float32_data_stay_float32_and_fit_as_their_values():
    """float32 xdata and ydata are stored as float32 (half the bytes uploaded) and give the
    bits of the same values given as float64; ``data_dtype`` asks for either."""
    x, y = poly_data(4)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    with cudamin.Session("sim") as session:
        before = session.traffic()
        narrow = session.curve_fit("poly", x32, y32, **TIGHT)[0]
        between = session.traffic()
        wide = session.curve_fit("poly", x32.astype(np.float64), y32.astype(np.float64), **TIGHT)[0]
        after = session.traffic()
    np.testing.assert_array_equal(narrow, wide)
    # The same steps either way; the table (x, y and the weights) went up at 4 bytes a value.
    values = 3 * x.size
    uploaded = (between["h2d_bytes"] - before["h2d_bytes"], after["h2d_bytes"] - between["h2d_bytes"])
    assert uploaded[1] - uploaded[0] == 8 * values - 8 * ((values + 1) // 2)
    asked = cudamin.curve_fit("poly", x, y, backend="cpu", data_dtype=np.float32, **TIGHT)[0]
    given = cudamin.curve_fit("poly", x32, y32, backend="cpu", **TIGHT)[0]
    np.testing.assert_array_equal(asked, given)
    kept = cudamin.curve_fit("poly", x32, y32, backend="cpu", data_dtype="float64", **TIGHT)[0]
    np.testing.assert_array_equal(kept, given)
    with pytest.raises(ValueError, match="data_dtype must be float64 or float32, not 'float16'"):
        cudamin.curve_fit("poly", x, y, data_dtype="float16")


class DeviceColumn:
    """What another library's CUDA column (torch, CuPy, JAX) shows: its
    __cuda_array_interface__, here describing a session-held array's memory on the simulator."""

    def __init__(self, held):
        self.shape = (len(held),)
        self.__cuda_array_interface__ = dict(
            shape=self.shape, typestr="<f8", data=(held.device_address, False), strides=None, version=3
        )


class Rows:
    """A (k, M) CUDA array of `rows` rows, each the column `held`."""

    def __init__(self, held, rows):
        self.shape = (rows, len(held))
        self.__cuda_array_interface__ = dict(shape=self.shape, typestr="<f8", data=(0, False), version=3)
        self.row = DeviceColumn(held)

    def __getitem__(self, i):
        return self.row


class Table:
    """An (M, k) CUDA array kept row after row in `held`, as torch and CuPy keep one; its
    columns, `table[:, j]`, are views a row apart."""

    def __init__(self, held, shape):
        self.held, self.shape = held, shape
        self.__cuda_array_interface__ = dict(
            shape=shape, typestr="<f8", data=(held.device_address, False), strides=None, version=3
        )

    def __getitem__(self, key):
        rows, j = key
        assert rows == slice(None)
        column = DeviceColumn(self.held)
        column.shape = (self.shape[0],)
        column.__cuda_array_interface__.update(
            shape=column.shape, data=(self.held.device_address + 8 * j, False), strides=(8 * self.shape[1],)
        )
        return column


def test_curve_fit_reads_its_data_where_they_lie_on_the_device():
    """xdata, ydata and sigma held on the session's device, or another library's CUDA arrays,
    fit as numpy arrays do, bit for bit; the fit's table is made, checked and read on the
    device, so it moves no more than a kilobyte to the device. Host and device columns mix;
    another session's arrays come through the host; bad values are named as on the host."""
    x, y = poly_data(3)
    sigma = 0.5 + 0.01 * np.arange(x.size)
    with cudamin.Session("sim") as session, cudamin.Session("sim") as other:
        popt, pcov, info, _, _ = session.curve_fit("poly", x, y, sigma=sigma, full_output=True, **TIGHT)
        dx, dy, ds = (session.to_device(a) for a in (x, y, sigma))
        before = session.traffic()
        got, got_pcov, got_info, _, _ = session.curve_fit("poly", dx, dy, sigma=ds, full_output=True, **TIGHT)
        assert session.traffic()["h2d_bytes"] - before["h2d_bytes"] <= 1024
        np.testing.assert_array_equal(got, popt)
        np.testing.assert_array_equal(got_pcov, pcov)
        np.testing.assert_array_equal(got_info["fvec"], info["fvec"])
        assert got_info["nfev"] == info["nfev"]
        for xdata, ydata, s in [
            (x, dy, sigma),
            (list(x), dy, sigma),
            ([dx], y, sigma),
            ([dx], DeviceColumn(dy), DeviceColumn(ds)),
            (other.to_device(x), dy, other.to_device(sigma)),
        ]:
            np.testing.assert_array_equal(session.curve_fit("poly", xdata, ydata, sigma=s, **TIGHT)[0], popt)
        # A (k, M) array on a device: its rows are the predictors, read where they lie.
        np.testing.assert_array_equal(session.curve_fit("poly", Rows(dx, 1), dy, sigma=ds, **TIGHT)[0], popt)
        bad = y.copy()
        bad[5] = np.nan
        with pytest.raises(ValueError, match="column 1, row 5 is NaN"):
            session.curve_fit("poly", dx, session.to_device(bad))
        bad_sigma = sigma.copy()
        bad_sigma[9] = 0.0
        with pytest.raises(ValueError, match="sigma at index 9 is 0"):
            session.curve_fit("poly", dx, dy, sigma=session.to_device(bad_sigma))
        with pytest.raises(ValueError, match="float64 where they lie"):
            session.curve_fit("poly", dx, dy, data_dtype="float32")


def test_an_m_by_k_table_on_the_device_is_read_as_it_lies():
    """An (M, k) table on the device, row after row, needs no transpose: each column is a view
    a row apart, gathered into the fit's table on the device. The fit is the host fit's, bit for
    bit; a column that steps backward, and a 3-D array, are refused."""
    rng = np.random.default_rng(5)
    table = rng.standard_normal((500, 2))
    y = 1.0 + 2.0 * table[:, 0] - 0.5 * table[:, 1] + 0.01 * rng.standard_normal(500)
    with cudamin.Session("sim") as session:
        popt, pcov = session.curve_fit("linear", table.T.copy(), y, **TIGHT)
        on_device = Table(session.to_device(table.ravel()), table.shape)
        dy = session.to_device(y)
        before = session.traffic()
        got, got_pcov = session.curve_fit("linear", on_device, dy, **TIGHT)
        assert session.traffic()["h2d_bytes"] - before["h2d_bytes"] <= 1024
        np.testing.assert_array_equal(got, popt)
        np.testing.assert_array_equal(got_pcov, pcov)
        backward = on_device[:, 1]
        backward.__cuda_array_interface__["strides"] = (-16,)
        with pytest.raises(ValueError, match="must step forward by whole float64s"):
            session.curve_fit("linear", [on_device[:, 0], backward], dy)
        cube = Table(session.to_device(table.ravel()), (250, 2, 2))
        with pytest.raises(ValueError, match="xdata on a device must be"):
            session.curve_fit("linear", cube, dy)
