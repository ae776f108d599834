//! A session: one backend held open for many calls, with what it has cost so far. Python's
//! `cudamin.Session(backend=…)` holds one; its `minimize`, `least_squares`, `curve_fit` and
//! `curve_fit_batch` pass it as their `backend`. The module-level functions share the
//! catalog's backends instead (`Catalog::backend`).

use crate::args;
use crate::device::DeviceArray;
use crate::errors::Failure;
use cudamin::{Backend, BackendChoice, LaunchOverride};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A backend opened for one session, with the PTX of the catalog that opened it: a GPU's
/// context made once, each kernel loaded once, for every call that names this session. Each
/// extension module has its own `Session` class, so a session runs its own module's calls alone.
#[pyclass(frozen, module = "cudamin")]
pub struct Session {
    /// The backend and why it was chosen; `None` once closed.
    opened: Mutex<Option<(Backend, String)>>,
}

impl Session {
    /// Opens `choice` with `ptx`, the catalog's kernels, for this session alone.
    pub(crate) fn open(
        ptx: Result<&'static str, &'static str>,
        choice: BackendChoice,
    ) -> Result<Self, Failure> {
        let opened = Backend::select(choice, ptx, LaunchOverride::default())?;
        Ok(Session {
            opened: Mutex::new(Some(opened)),
        })
    }

    fn opened(&self) -> MutexGuard<'_, Option<(Backend, String)>> {
        self.opened.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session's backend and why it was chosen; an error once closed.
    pub(crate) fn held(&self) -> Result<(Backend, String), Failure> {
        self.opened().clone().ok_or_else(closed)
    }
}

/// The error of a call on a closed session.
fn closed() -> Failure {
    Failure::Backend("this session is closed".into())
}

#[pymethods]
impl Session {
    /// The backend's name: `'cpu'`, `'cuda'` or `'sim'`.
    #[getter]
    fn backend(&self) -> PyResult<&'static str> {
        let opened = self.opened();
        Ok(opened.as_ref().ok_or_else(closed)?.0.name())
    }

    /// Why this backend was chosen.
    #[getter]
    fn backend_reason(&self) -> PyResult<String> {
        let opened = self.opened();
        Ok(opened.as_ref().ok_or_else(closed)?.1.clone())
    }

    /// Whether [`close`](Session::close) has been called.
    #[getter]
    fn closed(&self) -> bool {
        self.opened().is_none()
    }

    /// What the session's device has done since it opened, as a dict: `h2d_bytes` and
    /// `d2h_bytes` copied each way, `launches` (kernels and copies), `waits` (copies to the
    /// host, each waiting for the work before it), `writes`, `allocations`,
    /// `contexts_created` (one for a GPU or the simulator) and `modules_loaded` (a device
    /// loads each kernel's module on its first launch; the simulator, the whole PTX once).
    /// All zero on the CPU.
    fn traffic<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let opened = self.opened();
        let backend = &opened.as_ref().ok_or_else(closed)?.0;
        let traffic = backend.traffic();
        let t = traffic.unwrap_or_default();
        let bytes = |words: u64| words * size_of::<f64>() as u64;
        let out = PyDict::new(py);
        out.set_item("h2d_bytes", bytes(t.words_to_device))?;
        out.set_item("d2h_bytes", bytes(t.words_to_host))?;
        out.set_item("launches", t.launches)?;
        out.set_item("waits", t.waits)?;
        out.set_item("writes", t.writes)?;
        out.set_item("allocations", t.allocations)?;
        out.set_item("contexts_created", u64::from(traffic.is_some()))?;
        out.set_item("modules_loaded", t.modules_loaded)?;
        Ok(out)
    }

    /// A copy of `a`, a 1-D float64 array, kept on the session's device: a `DeviceArray`,
    /// which this session's solves take as `x0` with no copy to the device. A CPU session
    /// keeps arrays in host memory: its copy is a numpy array.
    fn to_device<'py>(
        &self,
        py: Python<'py>,
        a: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (backend, _) = self.held()?;
        let values = args::slice("a", &a)?;
        if backend.device_summary().is_none() {
            return Ok(PyArray1::from_slice(py, values).into_any());
        }
        let array = py
            .detach(|| backend.to_device(values))
            .map_err(Failure::from)?;
        Ok(Bound::new(py, DeviceArray { array })?.into_any())
    }

    /// Releases the backend: a GPU's context, its kernels and its memory. Calls on a closed
    /// session raise `cudamin.BackendError`; closing twice does nothing.
    fn close(&self) {
        self.opened().take();
    }
}
