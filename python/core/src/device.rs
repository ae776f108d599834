//! Arrays a session keeps on its device: `Session.to_device(a)` makes one, a solve takes one
//! as `x0`, and `keep_on_device=True` hands the solution back as one. Nothing crosses to the
//! host until the array is read (`np.asarray(a)`).

use crate::args;
use crate::errors::Failure;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

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

    /// The device address of the first entry; on the simulator, an address in its memory.
    #[getter]
    fn device_address(&self) -> u64 {
        self.array.device_address()
    }

    /// CUDA's array interface (version 3), by which torch, CuPy and Numba read the array where
    /// it lies: `torch.as_tensor(a, device="cuda")`. Only on a GPU: the simulator's memory is
    /// no device's.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.array.is_simulated() {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "the simulator's arrays lie in no CUDA device's memory",
            ));
        }
        py.detach(|| self.array.wait()).map_err(Failure::from)?;
        let interface = PyDict::new(py);
        interface.set_item("shape", (self.array.len(),))?;
        interface.set_item("typestr", "<f8")?;
        interface.set_item("data", (self.array.device_address(), false))?;
        interface.set_item("strides", py.None())?;
        interface.set_item("stream", py.None())?;
        interface.set_item("version", 3)?;
        Ok(interface)
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

/// A solve's `x0` as the call gave it: host values, an array on a session's device, or another
/// library's array on a device, which becomes a [`Start`] once the backend is open
/// ([`Given::on`]).
pub(crate) enum Given {
    Start(Start),
    /// By its `__cuda_array_interface__`: `len` f64 from `address`, `stride` apart (1 for a
    /// start); `synchronize` when its producer named a stream to wait for.
    Foreign {
        address: u64,
        len: usize,
        stride: usize,
        synchronize: bool,
    },
}

impl Given {
    /// `x0` from Python: a [`DeviceArray`] or another library's CUDA array as it lies, anything
    /// else as a float64 array.
    pub(crate) fn read(x0: Option<&Bound<'_, PyAny>>) -> Result<Option<Self>, Failure> {
        let Some(x0) = x0 else {
            return Ok(None);
        };
        if let Some(given) = Given::on_device("x0", x0, false)? {
            return Ok(Some(given));
        }
        let values: PyReadonlyArray1<'_, f64> = x0.extract().map_err(|_| {
            Failure::Input("x0 must be a 1-D float64 array, on the host or on a CUDA device".into())
        })?;
        let values = args::slice("x0", &values)?.to_vec();
        Ok(Some(Given::Start(Start::Host(values))))
    }

    /// `value`, named `what` in errors, where it is an array on a device: a [`DeviceArray`]
    /// or another library's CUDA array as it lies, with a stride where `strided` allows one;
    /// `None` for anything else.
    pub(crate) fn on_device(
        what: &str,
        value: &Bound<'_, PyAny>,
        strided: bool,
    ) -> Result<Option<Self>, Failure> {
        if let Ok(device) = value.cast::<DeviceArray>() {
            return Ok(Some(Given::Start(Start::Device(
                device.get().array.clone(),
            ))));
        }
        match value.getattr("__cuda_array_interface__") {
            Ok(interface) => foreign(what, &interface, strided).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// The number of variables.
    pub(crate) fn len(&self) -> usize {
        match self {
            Given::Start(start) => start.len(),
            Given::Foreign { len, .. } => *len,
        }
    }

    /// The start on `backend`: another library's device array is read where it lies, after
    /// checking that it is memory of `backend`'s device.
    pub(crate) fn on(self, backend: &cudamin::Backend) -> Result<Start, Failure> {
        match self {
            Given::Start(start) => Ok(start),
            Given::Foreign {
                address,
                len,
                synchronize,
                ..
            } => Ok(Start::Device(backend.device_array_at(
                address,
                len,
                synchronize,
            )?)),
        }
    }
}

/// A solve's `x0` on its backend: host values, or an array on the backend's device.
pub(crate) enum Start {
    Host(Vec<f64>),
    Device(cudamin::DeviceArray),
}

impl Start {
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

/// An array `what` from `__cuda_array_interface__` (versions 2 and 3): a float64 vector,
/// unmasked, contiguous unless `strided` allows whole float64s between its values; its memory
/// is checked by the backend later.
fn foreign(what: &str, interface: &Bound<'_, PyAny>, strided: bool) -> Result<Given, Failure> {
    let refuse = |why: String| Failure::Input(format!("{what} on a CUDA device {why}"));
    let interface = (interface.cast::<PyDict>())
        .map_err(|_| refuse("has a __cuda_array_interface__ that is not a dict".into()))?;
    let item = |key: &str| {
        interface
            .get_item(key)
            .ok()
            .flatten()
            .filter(|v| !v.is_none())
    };
    let shape: Vec<usize> = (item("shape").and_then(|s| s.extract().ok()))
        .ok_or_else(|| refuse("has no shape in its __cuda_array_interface__".into()))?;
    let [len] = shape[..] else {
        return Err(refuse(format!("must be 1-D, not of shape {shape:?}")));
    };
    let typestr: String = (item("typestr").and_then(|t| t.extract().ok())).unwrap_or_default();
    if typestr != "<f8" {
        return Err(refuse(format!(
            "must be float64 ('<f8'), not '{typestr}': convert it there first, e.g. {what}.double()"
        )));
    }
    let mut stride = 1;
    if let Some(strides) = item("strides") {
        let strides: Vec<i64> = strides.extract().unwrap_or_default();
        match strides[..] {
            _ if len <= 1 => {}
            [8] => {}
            [bytes] if strided && bytes > 0 && bytes % 8 == 0 => stride = bytes as usize / 8,
            _ if strided => {
                return Err(refuse(format!(
                    "must step forward by whole float64s, not by strides {strides:?}"
                )));
            }
            _ => {
                return Err(refuse(format!(
                    "must be contiguous, not of strides {strides:?}: copy it there first"
                )));
            }
        }
    }
    if item("mask").is_some() {
        return Err(refuse("must have no mask".into()));
    }
    let (address, _readonly): (u64, bool) = (item("data").and_then(|d| d.extract().ok()))
        .ok_or_else(|| refuse("has no (address, readonly) data in its interface".into()))?;
    Ok(Given::Foreign {
        address,
        len,
        stride,
        synchronize: item("stream").is_some(),
    })
}
