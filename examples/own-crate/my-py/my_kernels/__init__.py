"""Your terms from Python, with scipy's signatures:
``my_kernels.curve_fit("michaelis-menten", s, v, p0=[1, 1])`` fits ``v ≈ V·s/(K + s)``;
``my_kernels.curve_fit_batch("michaelis-menten", s, v, p0=[1, 1])`` fits it to each row of
``v`` at once; and ``my_kernels.minimize("robust-line", [0, 0], data=(t, y))`` minimizes a
term's sum over your columns. Each runs on every CPU core (or a GPU) and returns what
``scipy.optimize`` returns. ``my_kernels.Session(backend="cuda")`` holds one backend open for
many calls."""

import cudamin

from . import _native

_solvers = cudamin.bind(_native.catalog)
curve_fit = _solvers.curve_fit
curve_fit_batch = _solvers.curve_fit_batch
minimize = _solvers.minimize
least_squares = _solvers.least_squares
models = _solvers.models
problems = _solvers.problems
Session = _solvers.Session
