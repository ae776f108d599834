//! A fit's data made on the device from arrays that lie there: the weights `1/σ` formed in
//! place, a row-major table's columns gathered, and the columns laid end to end as the terms
//! read them. Data that came on the device
//! never cross to the host. [`Backend::device_weights`], [`Backend::device_strided`] and
//! [`Backend::device_columns`] call these.
//!
//! [`Backend::device_weights`]: crate::backend::Backend::device_weights
//! [`Backend::device_strided`]: crate::backend::Backend::device_strided
//! [`Backend::device_columns`]: crate::backend::Backend::device_columns

use super::abi::Launch;
use super::array::DeviceArray;
use super::launcher::Launcher;
use crate::error::BackendError;
use gpu_kernels::kernel::{STRIDED_COPY, WEIGHTS};
use std::sync::Arc;

/// `rows` weights in a new array: `1/σᵢ` of `sigma` (NaN where `σᵢ` is not positive and
/// finite), or ones without it.
pub(crate) fn weights(
    launcher: &Arc<Launcher>,
    sigma: Option<&DeviceArray>,
    rows: usize,
) -> Result<DeviceArray, BackendError> {
    let sigma = match sigma {
        None => 0,
        Some(sigma) => {
            readable(launcher, sigma, rows)?;
            sigma.buffer().address()
        }
    };
    let w = launcher.alloc("a fit's weights", rows)?;
    if rows > 0 {
        let config = launcher.config(WEIGHTS, rows)?;
        launcher.launch(&Launch::weights(rows, sigma, w.address()), config)?;
    }
    Ok(DeviceArray::new(w, launcher.clone()))
}

/// `len` values of `array` a `stride` apart from its value `start`, in a new array: a column
/// of a row-major table, copied on the device.
pub(crate) fn strided(
    launcher: &Arc<Launcher>,
    array: &DeviceArray,
    (start, stride): (usize, usize),
    len: usize,
) -> Result<DeviceArray, BackendError> {
    let end = match len.checked_sub(1) {
        None => Some(start),
        Some(last) => (last.checked_mul(stride)).and_then(|span| span.checked_add(start)),
    };
    if stride == 0 {
        return Err(BackendError::InvalidLaunch(
            "a strided column needs a stride of at least 1".into(),
        ));
    }
    if end.is_none_or(|end| len > 0 && end >= array.len()) {
        return Err(BackendError::InvalidLaunch(format!(
            "{len} values {stride} apart from value {start} do not lie in a device array of {}",
            array.len()
        )));
    }
    readable(launcher, array, array.len())?;
    let column = launcher.alloc("a strided column", len)?;
    if len > 0 {
        let config = launcher.config(STRIDED_COPY, len)?;
        let from = array.buffer().address() + (start * size_of::<f64>()) as u64;
        let copy = Launch::strided_copy(len, from, stride, column.address());
        launcher.launch(&copy, config)?;
    }
    Ok(DeviceArray::new(column, launcher.clone()))
}

/// `columns`, each of one length, laid end to end in a new array by copies on the device.
pub(crate) fn concatenated(
    launcher: &Arc<Launcher>,
    columns: &[&DeviceArray],
) -> Result<DeviceArray, BackendError> {
    let rows = columns.first().map_or(0, |column| column.len());
    for column in columns {
        readable(launcher, column, rows)?;
    }
    let len = rows
        .checked_mul(columns.len())
        .ok_or(BackendError::OutOfMemory {
            what: "a table of device columns",
            bytes: usize::MAX,
        })?;
    let table = launcher.alloc("a table of device columns", len)?;
    for (c, column) in columns.iter().enumerate() {
        if let Some(to) = table.view(c * rows, rows) {
            launcher.copy(column.buffer(), &to)?;
        }
    }
    Ok(DeviceArray::new(table, launcher.clone()))
}

/// Refuses `array` unless `launcher`'s kernels can read it and it holds `rows` values.
fn readable(
    launcher: &Arc<Launcher>,
    array: &DeviceArray,
    rows: usize,
) -> Result<(), BackendError> {
    if !array.is_on(launcher) {
        return Err(BackendError::Foreign(
            "an array of another backend's device: open it on this session".into(),
        ));
    }
    if array.len() != rows {
        return Err(BackendError::InvalidLaunch(format!(
            "device columns of {} and {rows} values: a table's columns have one length",
            array.len()
        )));
    }
    Ok(())
}
