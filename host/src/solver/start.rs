//! Where a solve starts: values on the host, or an array kept on a GPU backend's device.

use super::result::SolveError;
use crate::backend::DeviceArray;
use crate::linalg::vector::first_non_finite;

/// A solve's `x0`.
#[derive(Clone, Copy)]
pub(super) enum Start<'a> {
    /// Values in host memory.
    Host(&'a [f64]),
    /// An array on a device, which a workspace on that device copies there.
    Device(&'a DeviceArray),
}

impl Start<'_> {
    /// The number of variables.
    pub fn len(&self) -> usize {
        match self {
            Start::Host(values) => values.len(),
            Start::Device(array) => array.len(),
        }
    }
}

/// The error for a start with a NaN or infinite entry, found in its host `values`; `None`
/// where every entry is finite.
pub(super) fn non_finite(values: &[f64]) -> Option<SolveError> {
    let index = first_non_finite(values)?;
    Some(SolveError::NonFiniteX0 {
        index,
        value: values[index],
    })
}
