//! `cudamin._native`: cudamin's built-in problems and fit models, with cudamin's PTX, as the
//! catalog the Python half (`cudamin/__init__.py`) binds. The machinery is `cudamin-py`
//! (python/core), which a module of your own uses the same way.

#![forbid(unsafe_code)]

use pyo3::prelude::*;

/// The Python module `cudamin._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let catalog = cudamin_py::Catalog::new(
        cudamin::PTX,
        cudamin::problems::all(),
        &[],
        cudamin::problems::fit::MODELS,
    );
    cudamin_py::export(m, catalog)
}
