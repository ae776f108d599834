"""``cudamin.Session``: one backend held open for many calls."""


class Session:
    """One backend held open for many calls: a GPU's context is made once and each kernel is
    loaded once, however many solves and fits run on it. Its ``minimize``, ``least_squares``,
    ``curve_fit`` and ``curve_fit_batch`` are the module's, run on this session's backend::

        with cudamin.Session(backend="cuda") as session:
            for y in spectra:
                popt, pcov = session.curve_fit("gauss", x, y, p0=p0)
            print(session.traffic())

    ``to_device(a)`` keeps an array on the session's device; ``minimize`` starts from one
    there, and with ``keep_on_device=True`` leaves its solution there too.

    ``backend`` is ``'auto'``, ``'cpu'``, ``'cuda'`` or ``'sim'`` (the PTX simulator). The
    module-level functions share one backend per name for the whole process; a session has its
    own, released by ``close()`` or at the end of a ``with`` block. A module of your own opens
    its sessions with ``cudamin.bind(_native.catalog).Session(...)``.
    """

    def __init__(self, backend="auto", *, solvers=None):
        if solvers is None:
            from . import _builtin as solvers
        self._solvers = solvers
        self._native = solvers._catalog.session(backend)

    @property
    def backend(self):
        """The backend's name: ``'cpu'``, ``'cuda'`` or ``'sim'``."""
        return self._native.backend

    @property
    def backend_reason(self):
        """Why this backend was chosen."""
        return self._native.backend_reason

    @property
    def closed(self):
        """Whether ``close()`` has been called."""
        return self._native.closed

    def traffic(self):
        """What the session's device has done since it opened, as a dict: ``h2d_bytes`` and
        ``d2h_bytes`` copied each way, ``launches`` (kernels and copies), ``waits`` (copies to
        the host), ``writes``, ``allocations``, ``contexts_created`` (1 on a GPU or the
        simulator) and ``modules_loaded`` (a GPU loads each kernel's module on its first launch,
        the simulator the whole PTX once). All zero on the CPU."""
        return self._native.traffic()

    def to_device(self, a):
        """A copy of ``a`` (1-D, as float64) kept on the session's device: a ``DeviceArray``.
        This session's ``minimize`` takes it as ``x0`` with no copy to the device, and
        ``np.asarray`` copies it back. A CPU session keeps arrays in host memory: its copy is a
        numpy array."""
        from ._args import _array

        return self._native.to_device(_array("a", a))

    def close(self):
        """Releases the backend (a GPU's context, kernels and memory). Calls after it raise
        ``cudamin.BackendError``; a second ``close()`` does nothing."""
        self._native.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else self.backend
        return f"cudamin.Session({state})"

    def minimize(self, *args, **kwargs):
        """``cudamin.minimize`` on this session's backend."""
        return self._solvers.minimize(*args, **_here(self, kwargs))

    def least_squares(self, *args, **kwargs):
        """``cudamin.least_squares`` on this session's backend."""
        return self._solvers.least_squares(*args, **_here(self, kwargs))

    def curve_fit(self, *args, **kwargs):
        """``cudamin.curve_fit`` on this session's backend."""
        return self._solvers.curve_fit(*args, **_here(self, kwargs))

    def curve_fit_batch(self, *args, **kwargs):
        """``cudamin.curve_fit_batch`` on this session's backend."""
        return self._solvers.curve_fit_batch(*args, **_here(self, kwargs))


def _here(session, kwargs):
    """``kwargs`` with the session as the backend; a backend given too is an error."""
    if "backend" in kwargs:
        raise TypeError("a session's calls run on its own backend: drop backend=")
    return {**kwargs, "backend": session._native}
