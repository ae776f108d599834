//! The Rust half of cudamin's Python face, for cudamin's own extension module
//! (`cudamin._native`) and for yours. An extension module holds one [`Catalog`]: the PTX it
//! embeds, the problems `minimize` and `least_squares` know by name, the models `curve_fit`
//! knows. The Python package `cudamin` binds a catalog to scipy's signatures
//! (`cudamin.bind(_native.catalog)`), so a module of your own needs no Python of its own
//! beyond that line.
//!
//! Your terms from Python, in a crate of yours (the own-crate template's `my-py`): a residual
//! term that reads the fit layout (`x`, `y`, `w = 1/σ` per point) as a `curve_fit` model, and
//! a term of a sum as a `minimize` problem on the caller's data columns:
//!
//! ```ignore
//! use cudamin_py::{Model, OnData};
//! use my_kernels::{MichaelisMenten, RobustLine};
//!
//! cudamin::include_ptx!("my_kernels");
//! cudamin_py::python_module!(_native, PTX,
//!     models: [Model::of::<MichaelisMenten>("michaelis-menten", "V·s/(K + s)", "p = 2", 2)],
//!     problems: [OnData::sum::<RobustLine>("robust-line", "a soft_l1 line through (t, y)")],
//! );
//! ```
//!
//! Each call converts its arguments (args.rs; a problem named by the call, named.rs), solves
//! with the GIL released, watched by the observer that calls back into Python (observe.rs),
//! and returns a dict (solve.rs); failures become Python exceptions (errors.rs).

#![forbid(unsafe_code)]

mod args;
mod batch;
mod catalog;
mod columns;
mod device;
mod errors;
mod named;
mod observe;
mod pairs;
mod session;
mod solve;

pub use catalog::Catalog;
pub use cudamin::problems::OnData;
pub use cudamin::problems::fit::Model;
pub use device::DeviceArray;
#[doc(hidden)]
pub use pyo3;
pub use session::Session;

use pyo3::prelude::*;

/// The version of the calls a [`Catalog`] answers (their arguments and results), which the
/// Python half checks when it binds one (`cudamin.bind`): a module built against another
/// cudamin is refused with the advice to rebuild it, not met by an argument error in its first
/// call. Raised, with `_INTERFACE` in python/cudamin/__init__.py, whenever a call changes.
/// Version 2: `minimize`'s `return_hess_inv` may be `None` (the method's default). Version 3:
/// `minimize` takes `maxls` (L-BFGS-B's line-search limit), and `parameter_names` lists a
/// model's names for its parameters. Version 7: `backend` may be a session (`catalog.session`).
/// Version 8: `minimize` takes a session's `DeviceArray` as `x0`, and `keep_on_device`. Version 9:
/// `curve_fit` takes its data columns on a device.
pub const INTERFACE: u32 = 9;

/// Puts `catalog` in extension module `module` as `module.catalog`, which the Python half binds.
pub fn export(module: &Bound<'_, PyModule>, catalog: Catalog) -> PyResult<()> {
    module.add("catalog", catalog)
}

/// Defines extension module `$module` (the last part of maturin's `module-name`) with the PTX
/// `$ptx` (what `cudamin::include_ptx!` defines) and its catalog: `models` for `curve_fit`, each
/// a [`Model`], and `problems` for `minimize` and `least_squares` on the caller's `data`, each an
/// [`OnData`]. Either list may be left out.
#[macro_export]
macro_rules! python_module {
    (
        $module:ident, $ptx:expr
        $(, models: [$($model:expr),* $(,)?])?
        $(, problems: [$($problem:expr),* $(,)?])?
        $(,)?
    ) => {
        #[$crate::pyo3::pymodule]
        #[pyo3(crate = "::cudamin_py::pyo3")]
        fn $module(
            module: &$crate::pyo3::Bound<'_, $crate::pyo3::types::PyModule>,
        ) -> $crate::pyo3::PyResult<()> {
            static MODELS: &[$crate::Model] = &[$($($model),*)?];
            static PROBLEMS: &[$crate::OnData] = &[$($($problem),*)?];
            $crate::export(module, $crate::Catalog::new($ptx, [], PROBLEMS, MODELS))
        }
    };
}
