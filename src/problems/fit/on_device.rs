//! A fit whose data lie on the backend's device: its predictors, `y` and `σ` as arrays there,
//! made into the terms' table there. Only a few words cross to the host, unless a value is
//! refused: then `σ`, or the table, comes back to name it.

use super::{FitError, Model, check_determined, lengths, sigma_ok};
use crate::problems::problem::{Instance, LoadError};
use cudamin_host::{Backend, BackendError, Columns as Stored, DataType, DeviceArray};

/// A fit's points on a GPU backend's device, as [`Columns`](super::Columns) names them: each an
/// array there ([`Backend::to_device`], or another library's memory by
/// [`Backend::device_array_at`]).
#[derive(Clone, Copy, Debug)]
pub struct DeviceColumns<'a> {
    /// The predictors, one array each and one value per point in each.
    pub x: &'a [DeviceArray],
    /// The observations, one per point.
    pub y: &'a DeviceArray,
    /// One `σ > 0` per point; `None` weighs every point 1.
    pub sigma: Option<&'a DeviceArray>,
}

impl Model {
    /// As [`instantiate_columns`](Model::instantiate_columns), from arrays on `backend`'s
    /// device: the terms' table (the predictors, `y`, then `w = 1/σ`) is made there by copies
    /// and one kernel, and checked there. The data are stored as f64.
    pub fn instantiate_device(
        &self,
        backend: &Backend,
        params: Option<usize>,
        data: DeviceColumns<'_>,
        p0: Option<Vec<f64>>,
        (total_points, held): (usize, usize),
    ) -> Result<Instance, FitError> {
        let p = params.unwrap_or_else(|| self.params_for(data.x.len()));
        let points = lengths(
            data.x.iter().map(DeviceArray::len),
            data.y.len(),
            data.sigma.map(DeviceArray::len),
        )?;
        check_determined(total_points, p, held)?;
        let w = backend.device_weights(data.sigma, points).map_err(load)?;
        if let Some(sigma) = data.sigma {
            check_sigma(sigma, &w)?;
        }
        let mut columns: Vec<&DeviceArray> = data.x.iter().collect();
        columns.extend([data.y, &w]);
        let table = backend.device_columns(&columns).map_err(load)?;
        drop(w);
        self.set_up(backend, p, Stored::Device(table), points, DataType::F64, p0)
    }
}

/// A backend's error as a fit's.
fn load(error: BackendError) -> FitError {
    LoadError::from(error).into()
}

/// Refuses a `σ` that is not positive and finite, naming it by its index as the host's check
/// does. Its weight is NaN there, which one pass over `w` finds; only then does `σ` come to the
/// host. A weight that overflows is left to the table's own check, as on the host.
fn check_sigma(sigma: &DeviceArray, w: &DeviceArray) -> Result<(), FitError> {
    if w.max_abs().map_err(load)?.is_finite() {
        return Ok(());
    }
    let values = sigma.to_host().map_err(load)?;
    match values.iter().position(|&v| !sigma_ok(v)) {
        Some(index) => Err(FitError::Sigma {
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}
