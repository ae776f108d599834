"""``curve_fit_batch``: one model fitted to each of ``F`` data sets at once, as a loop of
``curve_fit`` calls would, on every CPU core. The arrays are shaped here; the fits run in Rust
(python/core's ``curve_fit_batch``)."""

import numpy as np


def _columns(xdata, fits, points):
    """``xdata`` as contiguous float64 columns, one per predictor, each ``points`` values (shared by
    every fit) or ``fits·points`` (fit by fit): from ``(M,)`` or ``(M, k)`` shared, ``(F, M)`` or
    ``(F, M, k)`` per fit."""
    x = np.asarray(xdata, dtype=np.float64)
    if x.ndim == 1 and x.shape[0] == points:
        return [np.ascontiguousarray(x)]
    if x.ndim == 2 and x.shape == (fits, points):
        return [np.ascontiguousarray(x).reshape(-1)]
    if x.ndim == 2 and x.shape[0] == points:
        return [np.ascontiguousarray(x[:, j]) for j in range(x.shape[1])]
    if x.ndim == 3 and x.shape[:2] == (fits, points):
        return [np.ascontiguousarray(x[:, :, j]).reshape(-1) for j in range(x.shape[2])]
    raise ValueError(
        f"xdata must be (M,) or (M, k) for every fit, or (F, M) or (F, M, k), with ydata's F = {fits} fits "
        f"of M = {points} points; it has shape {x.shape}"
    )


def _precision(dtype):
    """``dtype`` as numpy's float64 or float32; ``ValueError`` for any other."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        dtype = None
    if dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be float64 or float32, not {dtype!r}")
    return dtype


def _ragged(xdata, ydata, offsets):
    """Ragged fits: ``ydata`` 1-D, ``F + 1`` ``offsets`` rising from 0 to its length, ``xdata``
    ``(N,)`` or ``(N, k)``, a value per point. Returns ``(fits, columns, ydata, offsets)``."""
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.size == 0 or not np.issubdtype(offsets.dtype, np.integer) or np.any(offsets < 0):
        raise ValueError("offsets must be F + 1 integers, rising from 0 to ydata's length")
    ydata = np.ascontiguousarray(ydata, dtype=np.float64)
    if ydata.ndim != 1:
        raise ValueError(f"with offsets, ydata must be 1-D, every fit's points in turn; it has shape {ydata.shape}")
    x = np.asarray(xdata, dtype=np.float64)
    total = ydata.shape[0]
    if x.ndim == 1 and x.shape[0] == total:
        columns = [np.ascontiguousarray(x)]
    elif x.ndim == 2 and x.shape[0] == total:
        columns = [np.ascontiguousarray(x[:, j]) for j in range(x.shape[1])]
    else:
        raise ValueError(f"with offsets, xdata must be (N,) or (N, k), a row per point of ydata's N = {total}; "
                         f"it has shape {x.shape}")
    return offsets.size - 1, columns, ydata, [int(o) for o in offsets]


def curve_fit_batch(catalog, default_params, f, xdata, ydata, p0=None, sigma=None, absolute_sigma=False,
                    box=None, fixed=None, ftol=1e-8, xtol=1e-8, gtol=1e-8, max_nfev=None, backend="cpu",
                    dtype=np.float64, estimator="lsq", offsets=None):
    """See ``cudamin.curve_fit_batch``."""
    dtype = _precision(dtype)
    if estimator not in ("lsq", "poisson"):
        raise ValueError(f"estimator must be 'lsq' or 'poisson', not {estimator!r}")
    if offsets is not None:
        fits, columns, ydata, offsets = _ragged(xdata, ydata, offsets)
        points = 0
    else:
        ydata = np.ascontiguousarray(ydata, dtype=np.float64)
        if ydata.ndim != 2:
            raise ValueError(f"ydata must be (F, M), one row of M points per fit; it has shape {ydata.shape}")
        fits, points = ydata.shape
        columns = _columns(xdata, fits, points)
    if p0 is None:
        p0 = np.ones(default_params(f, len(columns)))
    p0 = np.ascontiguousarray(p0, dtype=np.float64)
    if p0.ndim not in (1, 2) or (p0.ndim == 2 and p0.shape[0] != fits):
        raise ValueError(f"p0 must be (p,) for every fit or (F, p) with F = {fits}; it has shape {p0.shape}")
    params = p0.shape[-1]
    if sigma is not None:
        sigma = np.ascontiguousarray(np.broadcast_to(np.asarray(sigma, dtype=np.float64), ydata.shape))
        sigma = sigma.reshape(-1)
    lower, upper = box(params) if box else (None, None)
    held = fixed(params) if fixed else None
    result = catalog.curve_fit_batch(
        f, columns, ydata.reshape(-1), points, p0.reshape(-1), params, sigma=sigma,
        lower=lower, upper=upper, fixed=held,
        absolute_sigma=bool(absolute_sigma), ftol=ftol, xtol=xtol, gtol=gtol, max_nfev=max_nfev,
        backend=backend, single=dtype == np.float32, poisson=estimator == "poisson", offsets=offsets,
    )
    popt = result["popt"].reshape(fits, params).astype(dtype, copy=False)
    pcov = result["pcov"].reshape(fits, params, params).astype(dtype, copy=False)
    info = {key: result[key] for key in ("status", "message", "nfev", "cost")}
    info["cost"] = info["cost"].astype(dtype, copy=False)
    return popt, pcov, info
