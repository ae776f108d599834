//! The solvers' observer, seen from Python: at every iteration it takes the GIL for a moment,
//! lets a pending Ctrl-C raise `KeyboardInterrupt`, and calls the user's callback. Either stops
//! the solve at once (the solver's "stopped by the observer" status); the exception is kept
//! and raised when the solver has returned.

use cudamin::Iterate;
use numpy::PyArray1;
use pyo3::prelude::*;
use std::ops::ControlFlow;

/// What one solve's iterations report to Python.
pub struct Observer {
    /// Called as `callback(nit, fun, x, nfev, njev, grad_norm)`; a true return stops the
    /// solve (the Python half returns true when the user's callback raised `StopIteration`).
    callback: Option<Py<PyAny>>,
    /// The exception that stopped the solve, raised after it.
    pub raised: Option<PyErr>,
}

impl Observer {
    /// An observer calling `callback`, if any, at each iteration.
    pub fn new(callback: Option<Py<PyAny>>) -> Self {
        Observer {
            callback,
            raised: None,
        }
    }

    /// One iteration: signals first, then the callback.
    pub fn see(&mut self, iterate: &Iterate<'_>) -> ControlFlow<()> {
        Python::attach(|py| {
            if let Err(interrupt) = py.check_signals() {
                self.raised = Some(interrupt);
                return ControlFlow::Break(());
            }
            let Some(callback) = &self.callback else {
                return ControlFlow::Continue(());
            };
            let x = match iterate.x() {
                Ok(x) => PyArray1::from_slice(py, &x),
                Err(error) => {
                    self.raised =
                        Some(pyo3::exceptions::PyRuntimeError::new_err(error.to_string()));
                    return ControlFlow::Break(());
                }
            };
            let args = (
                iterate.nit,
                iterate.fun,
                x,
                iterate.nfev,
                iterate.njev,
                iterate.grad_norm,
            );
            match callback.call1(py, args).and_then(|stop| stop.is_truthy(py)) {
                Ok(false) => ControlFlow::Continue(()),
                // The solver reports the stop in its status (99, or −2 for LM).
                Ok(true) => ControlFlow::Break(()),
                Err(error) => {
                    self.raised = Some(error);
                    ControlFlow::Break(())
                }
            }
        })
    }
}
