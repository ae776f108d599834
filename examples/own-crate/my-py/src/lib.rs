//! Your terms from Python: the extension module `my_kernels._native`, which the package
//! `my_kernels` (my_kernels/__init__.py) binds to scipy's `curve_fit`. One line per model: a
//! residual term reading the fit layout (`x`, `y`, `w = 1/σ` per point), with its name, its
//! formula, its rule for the parameter count, and that count.
#![forbid(unsafe_code)]

use cudamin_py::Model;
use my_kernels::MichaelisMenten;

cudamin::include_ptx!("my_kernels");

cudamin_py::python_module!(
    _native,
    PTX,
    [Model::of::<MichaelisMenten>(
        "michaelis-menten",
        "V·s/(K + s)",
        "p = 2: (V, K)",
        2
    ),]
);
