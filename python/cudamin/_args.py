"""The Python half's argument forms: scipy's many ways of passing an array, a count, bounds,
``jac``, ``fixed`` or a callback, each made the one form the extension module takes, with
scipy's errors and warnings for the ones it refuses."""

import inspect
import numbers
import sys
import warnings

import numpy as np
from scipy.optimize import Bounds, OptimizeResult

_JAC_NAMES = {"2-point": "forward", "3-point": "central"}


def _array(name, values, check_finite=False):
    """``values`` as a contiguous 1-D float64 array: itself when it is one, else converted once."""
    try:
        array = np.ascontiguousarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be an array of numbers: {error}") from None
    if array.ndim == 0:
        array = array.reshape(1)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D; it has shape {array.shape}")
    if check_finite and not np.isfinite(array).all():
        index = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ValueError(f"{name}[{index}] is {array[index]}; {name} must be finite")
    return array


def _is_float32(values):
    """Whether ``values`` is a float32 array (numpy, torch, CuPy, JAX), or a list of them."""
    if isinstance(values, (list, tuple)):
        return len(values) > 0 and all(_is_float32(v) for v in values)
    return str(getattr(values, "dtype", "")) in ("float32", "torch.float32")


def _data_dtype(data_dtype, *arrays):
    """How a fit's data are stored on the backend, as the core names it (``"f64"``, ``"f32"``):
    ``data_dtype`` where given (float64 or float32); by default float32 where every array given
    is float32, which keeps their values and halves the bytes each pass reads, else float64."""
    if data_dtype is None:
        given = [a for a in arrays if a is not None]
        return "f32" if given and all(_is_float32(a) for a in given) else "f64"
    if data_dtype in ("f32", "f64"):
        return data_dtype
    try:
        dtype = np.dtype(data_dtype)
    except TypeError:
        dtype = None
    if dtype == np.float32:
        return "f32"
    if dtype == np.float64:
        return "f64"
    raise ValueError(f"data_dtype must be float64 or float32, not {data_dtype!r}")


def _predictors(xdata, points, check_finite):
    """``xdata`` as a list of contiguous 1-D float64 columns, one per predictor, as scipy's
    ``curve_fit`` takes it: shape ``(M,)`` for one predictor, ``(k, M)`` for ``k``; ``(M, k)``
    is read as its transpose where only that reading matches the ``M`` points of ``ydata``."""
    try:
        array = np.asarray(xdata, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"xdata must be an array of numbers: {error}") from None
    if array.ndim == 2 and array.shape[0] == points and array.shape[1] != points:
        array = array.T
    if array.ndim == 2:
        return [_array(f"xdata[{i}]", row, check_finite) for i, row in enumerate(array)]
    if array.ndim > 2:
        raise ValueError(f"xdata must be 1-D, or 2-D as (k, M) for k predictors; it has shape {array.shape}")
    return [_array("xdata", array, check_finite)]


def _held(array):
    """Whether ``array`` is a session's ``DeviceArray`` (of any module's)."""
    return getattr(type(array), "__cudamin_device__", False) is True


def _on_device(values):
    """Whether ``values`` lies on a device and is passed as it lies: a session's
    ``DeviceArray`` (of any module's), or another library's CUDA array (torch, CuPy, JAX,
    Numba), which ``__cuda_array_interface__`` describes; or a list of predictors holding one."""
    if isinstance(values, (list, tuple)):
        return any(_on_device(v) for v in values)
    if _held(values):
        return True
    try:
        return getattr(values, "__cuda_array_interface__", None) is not None
    except Exception:  # torch raises more than AttributeError for a tensor on the CPU
        return False


def _points(ydata):
    """The number of points of ``ydata``, on the host or on a device."""
    shape = getattr(ydata, "shape", None)
    shape = (len(ydata),) if shape is None else tuple(shape)
    if len(shape) != 1:
        raise ValueError(f"ydata must be 1-D; it has shape {shape}")
    return shape[0]


def _device_predictors(xdata, points, check_finite):
    """``xdata`` where some of it lies on a device, as a list of 1-D columns, each read where it
    lies: a 1-D array; a list of columns (host ones converted as ``_array`` converts them);
    ``(k, M)``, whose rows are the columns; or ``(M, k)``, row after row as torch and CuPy keep
    a table, whose columns are views a row apart (the core gathers them on the device). Host
    ``xdata`` beside device ``ydata`` is read as on the host."""
    if not _on_device(xdata):
        return _predictors(xdata, points, check_finite)
    if isinstance(xdata, (list, tuple)):
        return [x if _on_device(x) else _array(f"xdata[{i}]", x, check_finite) for i, x in enumerate(xdata)]
    shape = tuple(xdata.shape)
    if len(shape) == 1:
        return [xdata]
    if len(shape) == 2 and shape[0] == points and shape[1] != points:
        return [xdata[:, i] for i in range(shape[1])]
    if len(shape) == 2:
        return [xdata[i] for i in range(shape[0])]
    raise ValueError(f"xdata on a device must be 1-D, (k, M), (M, k) or a list of columns; it has shape {shape}")


_LIMITS = ("maxiter", "maxfun", "max_nfev", "maxfev")


def _count(name, value, minimum=0):
    """A count (``n``, ``points``, ``maxiter``, ...) as an ``int``: None stays None, an integral
    float is taken as scipy takes it (``maxiter=5.0``), and one below ``minimum`` or fractional
    is a ``ValueError`` (a negative int was an ``OverflowError`` from the conversion). A limit
    past what the solver can count is no limit (scipy takes ``maxiter=2**64``); any other
    count that large is refused."""
    if value is None:
        return None
    if not _is_real(value):
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    # An int is whole however large (float() of one past 1.8e308 overflows).
    if not isinstance(value, numbers.Integral) and not float(value).is_integer():
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value!r}")
    if value > sys.maxsize:
        if name in _LIMITS:
            return sys.maxsize
        raise ValueError(f"{name} = {value!r} is too large (at most {sys.maxsize})")
    return int(value)


def _number(name, value):
    """A real number given as ``name`` (``f_scale``, a tolerance), or a ``ValueError`` naming it."""
    if not _is_real(value):
        raise ValueError(f"{name} must be a number, not {value!r}")
    return float(value)


def _is_real(value):
    """Whether ``value`` is one real number (a 0-d array too), not a bool."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _jac(jac):
    """cudamin's scheme name for scipy's ``jac``: True or 'exact' is the exact gradient, and
    False scipy's two-point differences (None is the exact gradient, cudamin's default); a
    number or numpy bool counts as its truth, as scipy reads ``bool(jac)``."""
    if jac is None:
        return "exact"
    if isinstance(jac, (bool, np.bool_, numbers.Integral)):
        return "exact" if jac else _JAC_NAMES["2-point"]
    if isinstance(jac, str):
        return _JAC_NAMES.get(jac, jac)
    raise ValueError(
        "jac must be 'exact' (the term's own derivatives), '2-point' or '3-point': "
        "the objective is a cudamin term, not a Python function"
    )


def _side(name, values, n):
    """One side of a box as ``n`` values (a scalar is every variable's); None when unbounded."""
    array = _array(name, values)
    if array.size == 1 and n is not None:
        array = np.full(n, array[0])
    if n is not None and array.size != n:
        raise ValueError(f"{name} bounds have {array.size} values for {n} variables")
    return array


def _box(bounds, n):
    """``(lower, upper)`` arrays for ``least_squares``/``curve_fit``'s ``bounds=(lb, ub)`` or a
    ``scipy.optimize.Bounds``; ``(None, None)`` when every bound is infinite."""
    if isinstance(bounds, Bounds):
        lower, upper = bounds.lb, bounds.ub
    else:
        try:
            lower, upper = bounds
        except (TypeError, ValueError):
            raise ValueError("bounds must be a 2-tuple (lower, upper) or a scipy.optimize.Bounds") from None
    lower, upper = _side("lower", lower, n), _side("upper", upper, n)
    if np.isinf(lower).all() and np.isinf(upper).all() and (lower < 0).all() and (upper > 0).all():
        return None, None
    return lower, upper


def _minimize_box(bounds, n):
    """``minimize``'s ``bounds``: a ``scipy.optimize.Bounds`` or one ``(min, max)`` pair per
    variable, ``None`` for no bound."""
    if bounds is None:
        return None, None
    if isinstance(bounds, Bounds):
        return _box(bounds, n)
    try:
        pairs = list(bounds)
    except TypeError:
        raise ValueError("bounds must be (min, max) pairs, one per variable, or a scipy.optimize.Bounds") from None
    if n is not None and len(pairs) != n:
        raise ValueError(f"bounds has {len(pairs)} pairs for {n} variables")
    try:
        lower = [-np.inf if lo is None else lo for lo, _ in pairs]
        upper = [np.inf if hi is None else hi for _, hi in pairs]
    except (TypeError, ValueError):
        raise ValueError("bounds must be (min, max) pairs, one per variable, or a scipy.optimize.Bounds") from None
    return _array("lower", lower), _array("upper", upper)


def _data(data):
    """The caller's data columns for a problem on data: a sequence of 1-D arrays (``(t, y)``),
    each checked finite and converted once where it is not contiguous float64."""
    if data is None:
        return None
    if isinstance(data, np.ndarray) and data.ndim != 1:
        raise ValueError("data must be a sequence of 1-D columns, e.g. (t, y), not a 2-D array")
    return [_array(f"data[{i}]", column, check_finite=True) for i, column in enumerate(data)]


def _fixed(fixed, size):
    """The indices of held variables (cudamin's extra: lmfit's ``vary=False``), given as indices
    or as a mask of booleans, one per variable (``size`` of them, where known). ``int()`` would
    take a mask's ``True`` as index 1 and a float as its floor, so both are told apart and a
    non-integer index is refused. An empty list holds nothing."""
    if fixed is None:
        return None
    entries = [fixed] if np.ndim(fixed) == 0 else list(np.ravel(np.asarray(fixed, dtype=object)))
    kinds = {isinstance(entry, (bool, np.bool_)) for entry in entries}
    if len(kinds) > 1:
        raise ValueError("fixed must be variable indices or a mask of booleans, not both")
    values = np.atleast_1d(np.asarray(fixed))
    if values.ndim != 1:
        raise ValueError(f"fixed must be a flat list of indices or booleans; it has shape {values.shape}")
    if values.size == 0:
        return None
    if values.dtype == bool:
        if size is not None and values.size != size:
            raise ValueError(f"fixed has {values.size} booleans for {size} variables: a mask needs one per variable")
        return [int(i) for i in np.flatnonzero(values)]
    if not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"fixed must be variable indices or a mask of booleans; got {values.dtype} values")
    if (values < 0).any():
        raise ValueError(f"fixed index {int(values.min())} is not a variable's")
    return [int(i) for i in values]


def _observer(callback, least_squares=False):
    """The user's callback as cudamin's observer calls it. scipy's two styles: a callable with
    one parameter named ``intermediate_result`` gets an ``OptimizeResult`` (for least squares
    with scipy's ``cost``, ``½Σr²``, and ``fun`` ``None``, as the result has it: the residuals
    are not kept); any other gets ``x``. Raising ``StopIteration`` stops the solve (the
    observer's return value says so)."""
    if callback is None:
        return None
    try:
        new_style = set(inspect.signature(callback).parameters) == {"intermediate_result"}
    except (TypeError, ValueError):
        new_style = False

    def observe(nit, fun, x, nfev, njev, grad_norm):
        try:
            if new_style and least_squares:
                # The observer's fun is Σr², the objective minimize would see.
                result = OptimizeResult(x=x, cost=fun / 2, fun=None, nit=nit, nfev=nfev, njev=njev)
                callback(intermediate_result=result)
            elif new_style:
                callback(intermediate_result=OptimizeResult(x=x, fun=fun, nit=nit, nfev=nfev, njev=njev))
            else:
                callback(x)
        except StopIteration:
            return True
        return False

    return observe


# scipy's curve_fit reports MINPACK's `leastsq` codes for 'lm' (least_squares' for 'trf'):
# least_squares' status (1 gtol, 2 ftol, 3 xtol, 4 both) to leastsq's `ier` for the same test.
_LEASTSQ_IER = {1: 4, 2: 1, 3: 2, 4: 3}


def _leastsq_message(ier, ftol, xtol, gtol):
    """`leastsq`'s message for its converged codes 1 to 4, as scipy's curve_fit returns it."""
    reductions = "Both actual and predicted relative reductions in the sum of squares\n  are at most"
    return {
        1: f"{reductions} {ftol:f}",
        2: f"The relative error between two consecutive iterates is at most {xtol:f}",
        3: f"{reductions} {ftol:f} and the relative error between two consecutive iterates is at \n  most {xtol:f}",
        4: f"The cosine of the angle between func(x) and any column of the\n  Jacobian is at most {gtol:f} in absolute value",
    }[ier]


def _tolerances(ftol, xtol, gtol):
    """``least_squares``' tolerances as scipy reads them: ``None`` is 0, that test off (trf
    only: 'lm' needs every one at least machine epsilon, which the solver checks), and a value
    below machine epsilon turns its test off too, with scipy's warning."""
    eps = np.finfo(float).eps
    tolerances = {"ftol": ftol, "xtol": xtol, "gtol": gtol}
    for name, tol in tolerances.items():
        if tol is None:
            tolerances[name] = 0.0
            continue
        tolerances[name] = _number(name, tol)
        if tolerances[name] < eps:
            warnings.warn(f"Setting `{name}` below the machine epsilon ({eps:.2e}) effectively disables "
                          "the corresponding termination condition.", stacklevel=3)
    return tolerances


def _binds(lower, upper, held):
    """Whether the box ``[lower, upper]`` bounds a variable the solve moves: the method is
    chosen on the free variables' bounds, as the solver chooses it (a held one's play no part)."""
    if lower is None:
        return False
    finite = np.isfinite(lower) | np.isfinite(upper)
    if held and finite.size > 1:
        finite[[i for i in held if i < finite.size]] = False
    return bool(finite.any())


def _check_method(method, bounded, loss):
    """scipy's rules for ``method`` in ``least_squares`` and ``curve_fit``; the method that runs:
    the one named, else ``'lm'``, or ``'trf'`` with bounds or a robust loss, as ``curve_fit``
    picks."""
    if method is None:
        return "trf" if bounded or loss != "linear" else "lm"
    if method not in ("lm", "trf"):
        raise ValueError(f"unknown method {method!r}: 'lm' or 'trf' ('dogbox' is not in cudamin)")
    if method == "lm" and bounded:
        raise ValueError("Method 'lm' only works for unconstrained problems. Use 'trf' instead.")
    if method == "lm" and loss != "linear":
        raise ValueError("method='lm' supports only 'linear' loss function.")
    return method


def _x_scale(x_scale, method, n):
    """``x_scale`` as the core takes it, for ``method`` and ``n`` variables: ``'lm'`` scales by
    the columns of ``J`` (``'jac'``, MINPACK's) and refuses another scale; ``'trf'`` takes
    ``'jac'``, one positive number, or one per variable, as scipy's (``None``: 1)."""
    if x_scale is None:
        return {}
    if isinstance(x_scale, str):
        if x_scale != "jac":
            raise ValueError(f"x_scale must be 'jac' or an array_like with positive numbers, not {x_scale!r}")
        return {} if method == "lm" else {"x_scale_jac": True}
    if method == "lm":
        raise ValueError(f"x_scale={x_scale!r} needs method='trf': cudamin's 'lm' scales by 'jac', "
                         "MINPACK's own scaling")
    try:
        scale = np.asarray(x_scale, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"x_scale must be 'jac' or an array_like with positive numbers, not {x_scale!r}") from None
    if scale.ndim == 0 and n is not None:
        scale = np.full(n, float(scale))
    if scale.ndim != 1 or (n is not None and scale.size != n):
        raise ValueError(f"x_scale has shape {np.shape(x_scale)}: give one number, or one per variable ({n})")
    if not np.all(np.isfinite(scale) & (scale > 0)):
        raise ValueError("x_scale must be 'jac' or an array_like with positive numbers")
    return {"x_scale": np.ascontiguousarray(scale)}


def _bounds_size(bounds):
    """The parameter count bounds given as arrays imply (as scipy infers it from them when
    there is no ``p0``); None for scalar bounds."""
    if isinstance(bounds, str):
        return None
    sides = (bounds.lb, bounds.ub) if isinstance(bounds, Bounds) else bounds
    try:
        sizes = {np.size(side) for side in sides} - {1}
    except TypeError:
        return None
    return sizes.pop() if len(sizes) == 1 else None
