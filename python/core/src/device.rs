//! Arrays a session keeps on its device: `Session.to_device(a)` makes one, a solve takes one
//! as `x0`, and `keep_on_device=True` hands the solution back as one. Nothing crosses to the
//! host until the array is read (`np.asarray(a)`).

use crate::args;
use crate::errors::Failure;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// A float64 vector on a session's device (a GPU, or the simulator's memory). `np.asarray(a)`
/// copies it to the host; a solve of the same session reads it where it lies.
#[pyclass(frozen, module = "cudamin")]
pub struct DeviceArray {
    pub(crate) array: cudamin::DeviceArray,
}

#[pymethods]
impl DeviceArray {
    /// Marks the class for the Python half, which passes such an array through as it is.
    #[classattr]
    fn __cudamin_device__() -> bool {
        true
    }

    fn __len__(&self) -> usize {
        self.array.len()
    }

    /// `(n,)`.
    #[getter]
    fn shape(&self) -> (usize,) {
        (self.array.len(),)
    }

    /// Always `'float64'`.
    #[getter]
    fn dtype(&self) -> &'static str {
        "float64"
    }

    /// The entries, copied to a new numpy array (one copy from the device).
    fn to_numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let values = py.detach(|| self.array.to_host()).map_err(Failure::from)?;
        Ok(PyArray1::from_vec(py, values))
    }

    /// numpy's conversion: `np.asarray(a)` downloads the entries.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(false) {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "a device array's entries cannot be read without a copy",
            ));
        }
        let values = self.to_numpy(py)?.into_any();
        match dtype {
            Some(dtype) => values.call_method1("astype", (dtype,)),
            None => Ok(values),
        }
    }

    fn __repr__(&self) -> String {
        format!("cudamin.{:?}", self.array)
    }
}

/// A solve's `x0` as the call gave it: host values, or an array on a session's device.
pub(crate) enum Start {
    Host(Vec<f64>),
    Device(cudamin::DeviceArray),
}

impl Start {
    /// `x0` from Python: a [`DeviceArray`] as it lies, anything else as a float64 array.
    pub(crate) fn read(x0: Option<&Bound<'_, PyAny>>) -> Result<Option<Self>, Failure> {
        let Some(x0) = x0 else {
            return Ok(None);
        };
        if let Ok(device) = x0.cast::<DeviceArray>() {
            return Ok(Some(Start::Device(device.get().array.clone())));
        }
        let values: PyReadonlyArray1<'_, f64> = x0.extract().map_err(|_| {
            Failure::Input("x0 must be a 1-D float64 array or a session's DeviceArray".into())
        })?;
        Ok(Some(Start::Host(args::slice("x0", &values)?.to_vec())))
    }

    /// The number of variables.
    pub(crate) fn len(&self) -> usize {
        match self {
            Start::Host(values) => values.len(),
            Start::Device(array) => array.len(),
        }
    }

    /// The values on the host: a device array is copied there.
    pub(crate) fn into_host(self) -> Result<Vec<f64>, Failure> {
        match self {
            Start::Host(values) => Ok(values),
            Start::Device(array) => Ok(array.to_host()?),
        }
    }
}
