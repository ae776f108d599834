//! cudamin's errors as Python exceptions, each with the one-line message the command line
//! prints: bad input is `ValueError`, memory `MemoryError`, a backend that cannot be had
//! `cudamin.BackendError`.

use cudamin::BackendError as HostBackendError;
use cudamin::problems::LoadError;
use cudamin::problems::fit::FitError;
use cudamin::{EvalError, ProblemError, SolveError};
use pyo3::PyErr;
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};

// The Python package defines the class, so that every extension module bound by it (cudamin's
// and yours) raises the same `cudamin.BackendError`.
pyo3::import_exception!(cudamin, BackendError);

/// Why a call failed, before it becomes a Python exception.
pub enum Failure {
    /// The arguments: a `ValueError`.
    Input(String),
    /// Memory: a `MemoryError`.
    Memory(String),
    /// The backend: a `cudamin.BackendError`.
    Backend(String),
    /// The objective failed during the solve for another reason: a `RuntimeError`.
    Solve(String),
    /// The observer stopped the solve with a Python exception (`KeyboardInterrupt`, an
    /// exception the callback raised): raised as it was.
    Python(PyErr),
}

impl From<Failure> for PyErr {
    fn from(failure: Failure) -> PyErr {
        match failure {
            Failure::Input(message) => PyValueError::new_err(message),
            Failure::Memory(message) => PyMemoryError::new_err(message),
            Failure::Backend(message) => BackendError::new_err(message),
            Failure::Solve(message) => PyRuntimeError::new_err(message),
            Failure::Python(error) => error,
        }
    }
}

impl From<HostBackendError> for Failure {
    fn from(error: HostBackendError) -> Self {
        Failure::Backend(error.to_string())
    }
}

impl From<LoadError> for Failure {
    fn from(error: LoadError) -> Self {
        match error {
            LoadError::TooLarge { .. } => Failure::Memory(error.to_string()),
            LoadError::Backend(error) => error.into(),
            // The device failed while checking data there: not the caller's input.
            LoadError::Problem(ProblemError::Device { .. }) => Failure::Backend(error.to_string()),
            other => Failure::Input(other.to_string()),
        }
    }
}

impl From<FitError> for Failure {
    fn from(error: FitError) -> Self {
        match error {
            FitError::Load(error) => error.into(),
            other => Failure::Input(other.to_string()),
        }
    }
}

impl From<SolveError> for Failure {
    fn from(error: SolveError) -> Self {
        let message = error.to_string();
        match error {
            SolveError::OutOfMemory { .. } => Failure::Memory(message),
            SolveError::Eval(EvalError::Backend(_)) => Failure::Backend(message),
            SolveError::Eval(_) => Failure::Solve(message),
            _ => Failure::Input(message),
        }
    }
}
