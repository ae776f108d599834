//! `cudamin._native`: the Rust half of the Python package. Each function takes arguments the
//! Python half (`cudamin/__init__.py`) has already put in cudamin's terms (lower-case method
//! and scheme names, bounds as two arrays, contiguous float64 arrays), runs the solve with the
//! GIL released, and returns a dict the Python half turns into scipy's result types.
//!
//! Data flows one way: arguments (args.rs) → a solve on cudamin (solve.rs), watched by the
//! observer that calls back into Python (observe.rs) → a dict; failures become Python
//! exceptions in errors.rs.

#![forbid(unsafe_code)]

mod args;
mod catalog;
mod errors;
mod observe;
mod solve;

use pyo3::prelude::*;

/// The Python module `cudamin._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("BackendError", m.py().get_type::<errors::BackendError>())?;
    m.add_function(wrap_pyfunction!(solve::minimize, m)?)?;
    m.add_function(wrap_pyfunction!(solve::least_squares, m)?)?;
    m.add_function(wrap_pyfunction!(solve::curve_fit, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::list_problems, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::list_models, m)?)?;
    Ok(())
}
