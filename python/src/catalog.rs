//! What the package knows by name: the built-in problems and fit models, listed for
//! `cudamin.problems()` and `cudamin.models()`.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The built-in problems, as `cudamin list` shows them.
#[pyfunction]
#[pyo3(name = "problems")]
pub fn list_problems(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    cudamin::problems::all()
        .map(|p| {
            let entry = PyDict::new(py);
            entry.set_item("name", p.name)?;
            entry.set_item("title", p.title)?;
            entry.set_item("n_rule", p.n_rule)?;
            entry.set_item("default_n", p.default_n)?;
            entry.set_item("default_points", p.default_points)?;
            Ok(entry)
        })
        .collect()
}

/// The built-in fit models, as `cudamin fit --help` shows them.
#[pyfunction]
#[pyo3(name = "models")]
pub fn list_models(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    cudamin::problems::fit::MODELS
        .iter()
        .map(|m| {
            let entry = PyDict::new(py);
            entry.set_item("name", m.name)?;
            entry.set_item("formula", m.formula)?;
            entry.set_item("params_rule", m.params_rule)?;
            entry.set_item("default_params", m.default_params)?;
            Ok(entry)
        })
        .collect()
}
