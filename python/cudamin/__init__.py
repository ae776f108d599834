"""cudamin from Python: scipy.optimize's ``minimize``, ``least_squares`` and ``curve_fit``,
solved by cudamin on every CPU core (or an NVIDIA GPU, in a build with the ``cuda`` feature).

The objective is not a Python function: it is a term written in Rust, compiled for the CPU
and to PTX, and known here by name. ``cudamin.problems()`` lists the built-in problems and
``cudamin.models()`` the built-in fit models::

    import numpy as np, cudamin
    x = np.linspace(0, 4, 10_000)
    y = 2.5 * np.exp(-1.3 * x) + 0.01 * np.random.default_rng(0).normal(size=x.size)
    popt, pcov = cudamin.curve_fit("exp-decay", x, y, p0=[1, 1])

Your own terms, compiled into an extension module of your crate with
``cudamin_py::python_module!``, get the same functions from ``cudamin.bind(_native.catalog)``
(the own-crate template's ``my-py`` does so).

``cudamin.Session(backend=...)`` holds one backend open for many calls, and counts what its
device has done (``traffic()``).

Results are scipy's own types (``OptimizeResult``, ``(popt, pcov)``) with scipy's field names,
plus cudamin's: ``backend`` and ``backend_reason`` (where the terms ran, and why),
``jac_error`` (for finite differences, the estimated error of the gradient) and ``method``.

Arrays: contiguous float64 arrays are read where they lie; any other dtype or layout is
converted once (``np.ascontiguousarray(a, dtype=np.float64)``) before the solve. The GIL is
released while cudamin solves; Ctrl-C stops a solve within one iteration with
``KeyboardInterrupt``. Bad input raises ``ValueError`` with the one-line message cudamin's
command line prints; memory that cannot be had, ``MemoryError``; a backend that cannot run,
``cudamin.BackendError``.
"""

import collections.abc
import functools
import numbers
import warnings

import numpy as np
from scipy.optimize import Bounds, LbfgsInvHessProduct, OptimizeResult, OptimizeWarning
from scipy.sparse.linalg import LinearOperator


class BackendError(RuntimeError):
    """The backend asked for cannot run the problem (no CUDA device, a driver error, a GPU
    failure during the solve). Every module bound by ``cudamin.bind`` raises this class."""


# After BackendError: the extension modules raise it.
from . import _batch, _native  # noqa: E402
from ._session import Session  # noqa: E402
from ._args import (  # noqa: E402
    _LEASTSQ_IER, _array, _binds, _bounds_size, _box, _check_method, _count, _data, _data_dtype,
    _device_predictors, _fixed, _held, _jac, _leastsq_message, _minimize_box, _number, _observer, _on_device,
    _points, _predictors, _tolerances, _x_scale,
)

__all__ = [
    "BackendError",
    "Session",
    "bind",
    "curve_fit",
    "curve_fit_batch",
    "least_squares",
    "minimize",
    "models",
    "problems",
]

# scipy's method names (any case) to cudamin's.
_MINIMIZE_METHODS = {"bfgs": "bfgs", "l-bfgs": "lbfgs", "l-bfgs-b": "lbfgsb"}
# scipy's names for finite differences to cudamin's scheme names, which are accepted too.
# The options each method takes (scipy's own for BFGS and L-BFGS-B, and return_hess_inv,
# cudamin's); any other is warned of and ignored, as scipy does.
_MINIMIZE_OPTIONS = {
    "bfgs": {"gtol", "maxiter", "return_hess_inv", "disp"},
    "l-bfgs": {"gtol", "ftol", "maxiter", "maxcor", "return_hess_inv", "disp"},
    "l-bfgs-b": {"gtol", "ftol", "maxiter", "maxfun", "maxls", "maxcor", "return_hess_inv", "disp"},
}


class _PairsInvHessProduct(LbfgsInvHessProduct):
    """The limited-memory methods' ``hess_inv``: scipy's ``LbfgsInvHessProduct`` of the pairs
    the last direction came from, oldest first, given as 1-D arrays (``s``, ``y``, ``n`` entries
    each) that are stacked into its ``sk`` and ``yk`` when first used, not at every solve's end
    (the arrays given are then let go: the pairs are held once). With ``fixed`` variables (the pairs
    zero there) it is zero in their rows and columns, where the identity it starts from would
    leave a 1 on the diagonal."""

    def __init__(self, s, y, fixed, n):
        # LbfgsInvHessProduct's own __init__ stacks at once; its products read only sk, yk,
        # rho and n_corrs: n_corrs is set here (an attribute, as scipy's), the rest made on
        # first use.
        LinearOperator.__init__(self, dtype=np.float64, shape=(n, n))
        self._rows = {"sk": s, "yk": y}
        self.n_corrs = len(s)
        self.fixed = np.asarray(fixed, dtype=np.intp)

    @functools.cached_property
    def sk(self):
        return self._stacked("sk")

    @functools.cached_property
    def yk(self):
        return self._stacked("yk")

    @functools.cached_property
    def rho(self):
        return 1.0 / np.einsum("ij,ij->i", self.sk, self.yk)

    def _stacked(self, name):
        rows = self._rows[name]
        stacked = np.stack(rows) if rows else np.empty((0, self.shape[0]))
        # The rows become views of the stack, letting the arrays given go (two threads that
        # both stack first make the same matrix twice, not an error).
        self._rows[name] = list(stacked)
        return stacked

    def _matvec(self, x):
        if self.fixed.size == 0:
            return super()._matvec(x)
        # With x zero at the fixed variables, the pairs' zero columns keep the product zero there.
        v = np.array(x, dtype=self.dtype).reshape(-1)
        v[self.fixed] = 0.0
        return super()._matvec(v)

    def _matmat(self, X):
        if self.fixed.size == 0:
            return super()._matmat(X)
        # scipy's own product of several vectors does not go through _matvec.
        V = np.array(X, dtype=self.dtype)
        V[self.fixed, :] = 0.0
        return super()._matmat(V)

    def _adjoint(self):
        return self

    def todense(self):
        dense = super().todense()
        dense[self.fixed, :] = 0.0
        dense[:, self.fixed] = 0.0
        return dense


class Solvers:
    """scipy's ``minimize``, ``least_squares`` and ``curve_fit`` over one extension module's
    catalog of problems and models (``cudamin.bind``). The module-level functions are those of
    cudamin's own catalog."""

    def __init__(self, catalog):
        self._catalog = catalog

    def Session(self, backend="auto"):
        """A ``cudamin.Session`` on ``backend`` over this catalog's problems and models."""
        return Session(backend, solvers=self)

    def problems(self):
        """The problems ``minimize`` and ``least_squares`` take by name, as dicts (name, title,
        the rule for ``n`` and its default, the default number of data points)."""
        return self._catalog.problems()

    def models(self):
        """The models ``curve_fit`` takes by name, as dicts (name, formula, the rule for the
        number of parameters and its default)."""
        return self._catalog.models()

    def minimize(self, fun, x0=None, method=None, jac="exact", bounds=None, tol=None, callback=None,
                 options=None, *, n=None, points=None, data=None, fixed=None, backend="auto",
                 keep_on_device=None):
        """scipy's ``minimize`` on problem ``fun``, a name from ``problems()``.

        ``method``: ``'BFGS'``, ``'L-BFGS'`` (cudamin's limited-memory BFGS, for large ``n``) or
        ``'L-BFGS-B'`` (with ``bounds``); ``None``, the default, is scipy's choice: L-BFGS-B with
        bounds and BFGS without. ``jac``: ``'exact'`` (the default: the term's own derivatives),
        ``'2-point'`` (or ``False``, as scipy reads it) or ``'3-point'``. ``x0``: the start (default the problem's;
        its length is ``n``). ``options``: scipy's, each where the method takes it (another is
        warned of and ignored, as scipy does): ``gtol`` and ``maxiter`` everywhere, ``ftol`` and
        ``maxcor`` for the limited-memory methods, ``maxfun`` and ``maxls`` for L-BFGS-B; cudamin's
        ``return_hess_inv`` for each (default ``True`` for L-BFGS-B, which returns ``hess_inv``
        as scipy's always does: an ``LbfgsInvHessProduct`` of its pairs, oldest first, 16·maxcor
        MB kept with the result at n = 10⁶; for BFGS up to n = 1000 variables, held ones
        included, the n×n matrix, as scipy's returns it, past that only when asked; ``False``
        for L-BFGS); ``tol`` sets ``gtol`` and, where the method has one, ``ftol``, as scipy's. cudamin's extras: ``n`` and ``points`` (the problem's size
        when ``x0`` is not given), ``data`` (the columns of a problem on the caller's data, e.g.
        ``(t, y)``, from a module of your own; ``x0`` is then required), ``fixed`` (indices of variables held at ``x0``) and ``backend``
        (``'auto'``, ``'cpu'``, ``'cuda'`` or ``'sim'``, the PTX simulator).

        On a device: ``x0`` may be a ``Session.to_device`` array of the same session, or a
        float64 CUDA array of torch, CuPy, JAX or Numba on the session's device, read where it
        lies. ``keep_on_device=True`` leaves ``x`` and ``jac`` there, as such arrays
        (``np.asarray(res.x)`` copies one to the host), and with bounds ``active_mask`` too
        (−1.0, 0.0, 1.0) where L-BFGS-B kept its vectors there; on the CPU it changes nothing.
        It is the default for another library's CUDA array, and those arrays then come back as
        that library's (torch, CuPy, Numba), with no copy.

        Returns an ``OptimizeResult`` with scipy's fields and ``backend``, ``backend_reason``,
        ``jac_error`` and ``method``.
        """
        # scipy's default method: L-BFGS-B with bounds, else BFGS.
        if method is None:
            method = "BFGS" if bounds is None else "L-BFGS-B"
        key = str(method).lower()
        if key not in _MINIMIZE_METHODS:
            raise ValueError(f"unknown method {method!r}: BFGS, L-BFGS or L-BFGS-B")
        taken = _MINIMIZE_OPTIONS[key]
        if options is not None and not isinstance(options, collections.abc.Mapping):
            raise ValueError(f"options must be a dict of solver options, not {type(options).__name__}")
        options = dict(options or {})
        unknown = set(options) - taken
        if unknown:
            warnings.warn(f"Unknown solver options: {', '.join(sorted(unknown))}", OptimizeWarning, stacklevel=2)
        options = {name: value for name, value in options.items() if name in taken}
        if tol is not None:
            # scipy's rule: tol sets gtol, and ftol too where the method has one (L-BFGS-B).
            options.setdefault("gtol", tol)
            if "ftol" in taken:
                options.setdefault("ftol", tol)
        # Checked here, where scipy's names are known (the library's maxcor is `memory`).
        maxcor = _count("maxcor", options.get("maxcor"), minimum=1)
        maxls = _count("maxls", options.get("maxls"), minimum=1)
        foreign = _foreign_cuda(x0)
        if keep_on_device is None:
            keep_on_device = foreign is not None
        if x0 is not None and not _on_device(x0):
            x0 = _array("x0", x0)
        size = len(x0) if x0 is not None else n
        lower, upper = _minimize_box(bounds, size)
        result = self._catalog.minimize(
            fun, x0, n=_count("n", n), points=_count("points", points), data=_data(data),
            method=_MINIMIZE_METHODS[key], jac=_jac(jac),
            lower=lower, upper=upper, fixed=_fixed(fixed, self._size(fun, size, fixed)),
            gtol=options.get("gtol"), ftol=options.get("ftol"), maxiter=_count("maxiter", options.get("maxiter")),
            maxfun=_count("maxfun", options.get("maxfun")), maxls=maxls, maxcor=maxcor,
            # Not given, the method's default (L-BFGS-B always, BFGS up to n = 1000, L-BFGS
            # never: see the docstring).
            return_hess_inv=None if options.get("return_hess_inv") is None else bool(options["return_hess_inv"]),
            backend=backend, callback=_observer(callback), keep_on_device=bool(keep_on_device),
        )
        pairs = result.pop("hess_inv_pairs", None)
        if pairs is not None:
            result["hess_inv"] = _PairsInvHessProduct(*pairs)
        if foreign is not None:
            for name in ("x", "jac", "active_mask"):
                if _held(result.get(name)):
                    result[name] = foreign(result[name])
        return OptimizeResult(result)

    def least_squares(self, fun, x0=None, jac="exact", bounds=(-np.inf, np.inf), method=None, ftol=1e-8,
                      xtol=1e-8, gtol=1e-8, x_scale=None, loss="linear", f_scale=1.0, max_nfev=None,
                      callback=None, *, n=None, points=None, data=None, fixed=None, backend="auto"):
        """scipy's ``least_squares`` on sum-of-squares problem ``fun`` (cudamin's own: the
        ``mgh-*`` problems of ``cudamin.problems()``).

        ``method``: ``'lm'`` (MINPACK's Levenberg–Marquardt) or ``'trf'`` (trust-region
        reflective, with or without bounds). Not given, ``'lm'`` without bounds, and ``'trf'``
        with bounds or a robust ``loss`` (``f_scale`` its scale), as scipy takes a loss with
        ``'trf'`` alone. Unlike scipy's, whose default is always ``'trf'``, the default follows
        ``curve_fit``'s rule. ``x_scale``: ``'trf'`` takes scipy's (``'jac'``, one number, or one
        per variable; 1 by default); ``'lm'`` scales by ``'jac'``, MINPACK's own, and refuses
        another.

        The result has scipy's fields except ``fun`` and ``jac``, which are ``None``: cudamin
        reduces the residuals and ``J`` to ``J``'s triangle as it computes them and never stores
        them.
        """
        if x0 is not None and not _on_device(x0):
            x0 = _array("x0", x0)
        size = len(x0) if x0 is not None else n
        lower, upper = _box(bounds, size)
        held = _fixed(fixed, self._size(fun, size, fixed))
        bounded = _binds(lower, upper, held)
        runs = _check_method(method, bounded, loss)
        scale = _x_scale(x_scale, runs, size)
        result = self._catalog.least_squares(
            fun, x0, n=_count("n", n), points=_count("points", points), data=_data(data), jac=_jac(jac),
            lower=lower, upper=upper, fixed=held,
            **_tolerances(ftol, xtol, gtol), max_nfev=_count("max_nfev", max_nfev), loss=loss,
            f_scale=_number("f_scale", f_scale), method=method, **scale,
            backend=backend, callback=_observer(callback, least_squares=True),
        )
        result.setdefault("active_mask", np.zeros(result["x"].size, dtype=np.int32))
        return OptimizeResult(result, fun=None, jac=None)

    def curve_fit(self, f, xdata, ydata, p0=None, sigma=None, absolute_sigma=False, check_finite=True,
                  bounds=(-np.inf, np.inf), method=None, jac="exact", *, full_output=False,
                  nan_policy=None, loss="linear", f_scale=1.0, ftol=1e-8, xtol=1e-8, gtol=1e-8,
                  max_nfev=None, maxfev=None, fixed=None, backend="auto", callback=None, x_scale=None,
                  data_dtype=None):
        """scipy's ``curve_fit`` with model ``f``, a name from ``models()``.

        The number of parameters is ``len(p0)`` (default: the model's, starting from ones as
        ``curve_fit`` does, or inside the bounds). ``sigma`` is one standard deviation per point.
        ``bounds`` as scipy's (``(lb, ub)``, scalars or arrays, or a ``scipy.optimize.Bounds``), or
        ``'natural'`` for the model's own (decay rates and widths at least 0; cudamin's extra).
        Without bounds the method is ``'lm'``, with them ``'trf'``, as scipy's; a robust ``loss``
        (``f_scale`` as ``least_squares``') runs ``'trf'`` with or without bounds, where scipy's
        ``curve_fit`` would have to be told ``method='trf'``. ``method='trf'`` runs it without
        either, with ``x_scale`` as ``least_squares``'. ``ftol``, ``xtol`` and ``gtol`` are
        ``least_squares``' tolerances (1e-8 each). ``fixed``: the parameters held at
        ``p0`` (their rows and columns of ``pcov`` are zero), as indices, a mask, or the model's
        names for them where it names them (exp-decay's ``a0, b0, a1, …``, gauss-peaks' ``c, a0,
        mu0, s0, …``).

        Returns ``(popt, pcov)``, or with ``full_output`` ``(popt, pcov, infodict, mesg, ier)``:
        ``ier`` and ``mesg`` MINPACK ``leastsq``'s for ``'lm'`` and ``least_squares``' for
        ``'trf'``, as scipy's (``infodict`` has no ``fjac``, ``ipvt`` or ``qtf``: ``J`` is not kept).
        ``maxfev`` is ``leastsq``'s name for ``max_nfev``, which scipy's ``curve_fit`` takes for
        either method (give one of the two; 0 is the default, as ``leastsq`` reads it). The
        default is ``least_squares``' for both methods, ``100·p`` evaluations (``leastsq``'s,
        which scipy's ``curve_fit`` runs for ``'lm'``, is ``100·(p + 1)`` given a Jacobian).
        ``sigma`` may be one number for every point, as scipy's.
        ``pcov`` is filled with ``inf`` (with an ``OptimizeWarning``) where it cannot be estimated,
        as scipy's: no degrees of freedom, or for ``'lm'`` a rank-deficient ``J`` (at scipy's SVD
        tolerance, ``ε·max(m, n)·σ_max``, where scipy's ``leastsq`` gives ``inf`` only for an
        exactly singular ``R`` and otherwise numbers that are rounding noise along the null
        directions); for ``'trf'`` the pseudo-inverse, as scipy's. ``infodict``'s ``rank`` and
        ``not_identifiable`` say which parameters the data fix only in combination. Raises ``RuntimeError`` when the fit does not converge, as scipy's.

        ``xdata``, ``ydata`` and ``sigma`` may lie on the session's device: its ``DeviceArray``s,
        or float64 CUDA arrays of torch, CuPy, JAX or Numba (``(M, k)`` tables too; a square one
        is read as ``(k, M)``, as on the host). The fit reads them there, checks them there
        whatever ``check_finite`` says, and uploads only the columns given on the host.

        ``data_dtype`` (cudamin's extra): how the backend stores the data, ``float64`` or
        ``float32``. The default keeps float32 ``xdata`` and ``ydata`` (and ``sigma``) as
        float32; anything else is stored as float64. float32 halves the bytes every pass reads;
        the arithmetic stays float64, and the fit is the fit of the float32 values.
        """
        if nan_policy not in (None, "raise"):
            raise ValueError("nan_policy must be None or 'raise': cudamin does not drop points")
        stored = _data_dtype(data_dtype, xdata, ydata, sigma)
        if _on_device(xdata) or _on_device(ydata) or _on_device(sigma):
            # Read where they lie; the core checks them there (finite, σ > 0) whatever
            # check_finite says, and receives the host ones.
            points = _points(ydata)
            ydata = ydata if _on_device(ydata) else _array("ydata", ydata, check_finite)
            xdata = _device_predictors(xdata, points, check_finite)
        else:
            ydata = _array("ydata", ydata, check_finite)
            xdata = _predictors(xdata, ydata.size, check_finite)
        if sigma is not None and not _on_device(sigma):
            # One number (of any shape, as scipy reads `sigma.size == 1`) is every point's.
            one = np.size(sigma) == 1
            sigma = _array("sigma", np.broadcast_to(np.ravel(sigma), (_points(ydata),)) if one else sigma)
        if maxfev is not None and max_nfev is not None:
            raise ValueError("give max_nfev or maxfev (leastsq's name for it), not both")
        p0 = None if p0 is None else _array("p0", p0, True)
        natural = isinstance(bounds, str)
        if natural and bounds != "natural":
            raise ValueError(f"bounds must be (lower, upper), a scipy.optimize.Bounds or 'natural', not {bounds!r}")
        size = p0.size if p0 is not None else _bounds_size(bounds) or self._default_params(f, len(xdata))
        lower, upper = (None, None) if natural else _box(bounds, size)
        held = self._fixed_parameters(f, fixed, size)
        runs = _check_method(method, natural or _binds(lower, upper, held), loss)
        scale = _x_scale(x_scale, runs, size)
        if maxfev is not None:
            # leastsq reads 0 as its default.
            max_nfev = _count("maxfev", maxfev) or None
        result = self._catalog.curve_fit(
            f, xdata, ydata, p0=p0, sigma=sigma, absolute_sigma=bool(absolute_sigma), lower=lower,
            upper=upper, natural_bounds=natural, jac=_jac(jac), fixed=held,
            **_tolerances(ftol, xtol, gtol), max_nfev=_count("max_nfev", max_nfev), loss=loss,
            f_scale=_number("f_scale", f_scale), method=method, **scale,
            full_output=bool(full_output), backend=backend, callback=_observer(callback, least_squares=True),
            data_dtype=stored,
        )
        if not result["success"]:
            raise RuntimeError("Optimal parameters not found: " + result["message"])
        popt, pcov = result["x"], result["pcov"]
        if pcov is not None and result["method"] == "lm" and result["rank"] < popt.size - len(held or ()):
            # scipy's 'lm' inverts leastsq's R and estimates nothing where it is singular; the
            # pseudo-inverse ('trf''s, kept there) would give the parameters the data do not
            # determine a standard error of 0, and R⁻¹R⁻ᵀ of a numerically singular R is noise.
            pcov = None
        if pcov is None:
            pcov = np.full((popt.size, popt.size), np.inf)
            # Held parameters keep their zero rows and columns: they are known, not unestimated.
            pcov[held or [], :] = 0.0
            pcov[:, held or []] = 0.0
            warnings.warn("Covariance of the parameters could not be estimated", OptimizeWarning, stacklevel=2)
        if not full_output:
            return popt, pcov
        infodict = {k: result[k] for k in ("nfev", "njev", "fvec", "backend", "backend_reason", "method")}
        for extra in ("active_mask", "rank", "not_identifiable"):
            if extra in result:
                infodict[extra] = result[extra]
        if result["method"] == "lm":
            ier = _LEASTSQ_IER[result["status"]]
            return popt, pcov, infodict, _leastsq_message(ier, ftol, xtol, gtol), ier
        return popt, pcov, infodict, result["message"], result["status"]

    def curve_fit_batch(self, f, xdata, ydata, p0=None, sigma=None, absolute_sigma=False, *,
                        bounds=(-np.inf, np.inf), fixed=None, ftol=1e-8, xtol=1e-8, gtol=1e-8,
                        max_nfev=None, backend="cpu", dtype=np.float64, estimator="lsq", offsets=None):
        """Fits model ``f`` to each of ``F`` data sets at once, on every CPU core, as a loop of
        ``curve_fit`` calls would: ``ydata`` is ``(F, M)``; ``xdata`` is ``(M,)`` or ``(M, k)``
        for every fit, or ``(F, M)`` or ``(F, M, k)``; ``p0`` is ``(p,)`` or ``(F, p)`` (default
        ones); ``sigma`` is one number, ``(M,)`` or ``(F, M)``. Returns ``(popt, pcov, info)``:
        ``popt`` ``(F, p)``, ``pcov`` ``(F, p, p)`` (``inf`` where it cannot be estimated), and
        ``info``'s ``status``, ``message``, ``nfev`` and ``cost``, one per fit; a status above 0
        is scipy's success. A fit that fails (NaN in its data) fails alone, with status -1.
        ``bounds`` and ``fixed`` (indices, a mask or names) are ``curve_fit``'s, the same for
        every fit; a bounded fit runs trf, as scipy's does. ``backend='cuda'`` or ``'sim'`` runs a
        fit of at most 8 parameters without bounds one per GPU thread (the PTX simulator runs the
        same kernel on the CPU), ``fixed`` parameters held there too; any other runs on the CPU.
        ``dtype=np.float32`` computes the fits in single precision, Gpufit's default, and returns
        float32 arrays: each answer within a hundredth of its standard error of float64's;
        tolerances below float32's epsilon are raised to it. Only fits without bounds take it.
        ``estimator='poisson'`` fits counts by Poisson
        maximum likelihood, Gpufit's MLE: no ``sigma``, ``pcov`` the inverse Fisher
        information, ``cost`` half the deviance; gauss-2d, gauss-2d-elliptic, exp-decay and
        lorentzian take it, as plain fits. ``offsets`` (``F + 1`` integers rising from 0 to
        ``N``) makes the fits ragged: ``ydata`` is ``(N,)``, every fit's points in turn, fit ``f``
        has ``offsets[f]:offsets[f + 1]``, and ``xdata`` is ``(N,)`` or ``(N, k)``."""
        return _batch.curve_fit_batch(
            self._catalog, self._default_params, f, xdata, ydata, p0, sigma, absolute_sigma,
            box=lambda p: _box(bounds, p), fixed=lambda p: self._fixed_parameters(f, fixed, p),
            ftol=_number("ftol", ftol), xtol=_number("xtol", xtol), gtol=_number("gtol", gtol),
            max_nfev=_count("max_nfev", max_nfev), backend=backend, dtype=dtype,
            estimator=estimator, offsets=offsets,
        )

    def _fixed_parameters(self, model, fixed, p):
        """``curve_fit``'s ``fixed`` for model ``model`` with ``p`` parameters: indices or a mask,
        as everywhere, and the model's names for its parameters where it names them
        (``'b0'``, exp-decay's first rate)."""
        entries = [fixed] if isinstance(fixed, str) or np.ndim(fixed) == 0 else fixed
        if fixed is None or not any(isinstance(entry, str) for entry in entries):
            return _fixed(fixed, p)
        if any(isinstance(entry, (bool, np.bool_)) for entry in entries):
            raise ValueError("fixed by name takes names and indices, not booleans")
        names = self._catalog.parameter_names(model, p)
        if names is None:
            raise ValueError(f"model {model!r} does not name its parameters: give fixed as their indices")
        unknown = [entry for entry in entries if isinstance(entry, str) and entry not in names]
        if unknown:
            raise ValueError(f"model {model!r} has no parameter {unknown[0]!r}; its parameters are {', '.join(names)}")
        return _fixed([names.index(entry) if isinstance(entry, str) else entry for entry in entries], p)

    def _size(self, problem, size, fixed):
        """The number of variables: ``size`` (from ``x0`` or ``n``), else, where ``fixed`` is
        given and needs it, built-in ``problem``'s default ``n`` (``None`` if not one)."""
        if size is not None or fixed is None:
            return size
        for entry in self._catalog.problems():
            if entry["name"] == problem:
                return entry["default_n"]
        return None

    def _default_params(self, model, k):
        """The default parameter count of model ``model`` on ``k`` predictors (``ValueError``
        if unknown)."""
        if any(entry["name"] == model for entry in self._catalog.models()):
            return self._catalog.default_params(model, k)
        known = ", ".join(entry["name"] for entry in self._catalog.models())
        raise ValueError(f"unknown model `{model}`; this module's models are: {known}")


# The version of the calls a catalog answers that this package makes (python/core's INTERFACE,
# raised with it whenever a call changes).
_INTERFACE = 9


def _foreign_cuda(x0):
    """For an ``x0`` of another library on a CUDA device, the function that gives a kept
    ``DeviceArray`` back as that library's array, with no copy (through the array's
    ``__cuda_array_interface__``): a torch tensor on x0's device, a CuPy array, a Numba device
    array. Another library's arrays, and arrays with no such interface (the simulator's), are
    given back as they are. ``None`` when ``x0`` is not another library's CUDA array."""
    if x0 is None or _held(x0) or not _on_device(x0):
        return None
    library = type(x0).__module__.split(".")[0]

    def convert(array):
        if getattr(array, "__cuda_array_interface__", None) is None:
            return array
        if library == "torch":
            import torch

            return torch.as_tensor(array, device=x0.device)
        if library == "cupy":
            import cupy

            return cupy.asarray(array)
        if library == "numba":
            from numba import cuda

            return cuda.as_cuda_array(array)
        return array

    return convert


def bind(catalog):
    """The solvers over ``catalog``, an extension module's ``catalog`` attribute: how a module of
    your own (``cudamin_py::python_module!``) gets scipy's functions::

        import cudamin
        from . import _native
        curve_fit = cudamin.bind(_native.catalog).curve_fit

    A module built against another version of cudamin's calls is refused with ``ImportError``
    (rebuild it against this cudamin: ``pip install ./my-py`` in the template).
    """
    # Modules from before the check have no version: the first.
    interface = getattr(catalog, "interface", 1)
    if interface != _INTERFACE:
        raise ImportError(
            f"this extension module was built against another cudamin (its calls are version {interface}, "
            f"this cudamin's are version {_INTERFACE}): rebuild it against this cudamin"
        )
    return Solvers(catalog)


_builtin = bind(_native.catalog)
minimize = _builtin.minimize
least_squares = _builtin.least_squares
curve_fit = _builtin.curve_fit
curve_fit_batch = _builtin.curve_fit_batch
problems = _builtin.problems
models = _builtin.models
