//! Your terms from Python: the extension module `my_kernels._native`, which the package
//! `my_kernels` (my_kernels/__init__.py) binds to scipy's signatures. One line per term:
//! - `models`: residual terms reading the fit layout (the predictors `x`, `y`, `w = 1/σ` per
//!   point) for `curve_fit`, with a name, the formula, the rule for the parameter count and
//!   that count; `.batched` names its batch kernel, on which `curve_fit_batch` runs its fits;
//! - `problems`: terms for `minimize` (a sum) or `least_squares` (a sum of squares) on the
//!   columns the caller passes as `data=`, with a name and a title.
#![forbid(unsafe_code)]

use cudamin_py::{Model, OnData};
use my_kernels::michaelis_menten::MICHAELIS_MENTEN_BATCH;
use my_kernels::{MichaelisMenten, RobustLine, TwoPredictors};

cudamin::include_ptx!("my_kernels");

cudamin_py::python_module!(_native, PTX,
    models: [
        Model::of::<MichaelisMenten>("michaelis-menten", "V·s/(K + s)", "p = 2: (V, K)", 2)
            .batched(&MICHAELIS_MENTEN_BATCH),
        Model::of::<TwoPredictors>("two-predictors", "b1 − b2·x1·exp(−b3·x2); xdata (2, M)", "p = 3", 3),
    ],
    problems: [
        OnData::sum::<RobustLine>("robust-line", "y ≈ a + b·t under scipy's soft_l1 loss; data (t, y)"),
        OnData::squares::<MichaelisMenten>("michaelis-menten", "v ≈ V·s/(K + s); data (s, v, w = 1/σ)"),
    ],
);
