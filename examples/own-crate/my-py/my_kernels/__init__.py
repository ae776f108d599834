"""Your terms from Python, with scipy's signatures:
``my_kernels.curve_fit("michaelis-menten", s, v, p0=[1, 1])`` fits ``v ≈ V·s/(K + s)`` on every
CPU core (or a GPU), returning ``(popt, pcov)`` as ``scipy.optimize.curve_fit`` does."""

import cudamin

from . import _native

_solvers = cudamin.bind(_native.catalog)
curve_fit = _solvers.curve_fit
models = _solvers.models
