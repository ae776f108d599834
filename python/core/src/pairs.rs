//! A limited-memory solve's pairs as the Python half takes them: `hess_inv_pairs`, `(s, y,
//! fixed, n)`, from which it makes scipy's `LbfgsInvHessProduct`, stacking the vectors on first
//! use.

use crate::device::DeviceArray;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The pairs in host memory (each vector becomes a numpy array's memory, not copied), or left
/// on the device (each a [`DeviceArray`], copied when the Python half first stacks them).
pub(crate) fn for_python<'py>(
    py: Python<'py>,
    (host, device): (
        Option<cudamin::CorrectionPairs>,
        Option<cudamin::DevicePairs>,
    ),
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    if let Some(pairs) = host {
        let n = pairs.dim();
        let (s, y, fixed) = pairs.into_parts();
        let arrays = |vectors: Vec<Vec<f64>>| -> Vec<_> {
            (vectors.into_iter())
                .map(|v| numpy::PyArray1::from_vec(py, v))
                .collect()
        };
        return (arrays(s), arrays(y), fixed, n).into_pyobject(py).map(Some);
    }
    let Some(pairs) = device else {
        return Ok(None);
    };
    let n = pairs.dim();
    let (s, y) = pairs.into_parts();
    let arrays = |vectors: Vec<cudamin::DeviceArray>| -> PyResult<Vec<Bound<'py, DeviceArray>>> {
        (vectors.into_iter())
            .map(|array| Bound::new(py, DeviceArray { array }))
            .collect()
    };
    let fixed: Vec<usize> = Vec::new();
    (arrays(s)?, arrays(y)?, fixed, n)
        .into_pyobject(py)
        .map(Some)
}
