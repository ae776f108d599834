"""Your terms from Python, with scipy's signatures:
``my_kernels.curve_fit("michaelis-menten", s, v, p0=[1, 1])`` fits ``v ≈ V·s/(K + s)`` and
``my_kernels.minimize("robust-line", [0, 0], data=(t, y))`` minimizes a term's sum over your
columns, on every CPU core (or a GPU), returning what ``scipy.optimize`` returns."""

import cudamin

from . import _native

_solvers = cudamin.bind(_native.catalog)
curve_fit = _solvers.curve_fit
minimize = _solvers.minimize
least_squares = _solvers.least_squares
models = _solvers.models
problems = _solvers.problems
