//! What a solver that keeps its vectors on a device asks of the problem it minimizes: values
//! and gradients at vectors that never leave the device. A term problem on the GPU
//! ([`GpuEvaluator`](super::GpuEvaluator)) answers it, and so do a sum of such problems
//! (`backend::sum`) and one seen through the variables a solve leaves free (`held.rs`).

use super::vectors::{DeviceVector, DeviceVectors};
use crate::error::BackendError;
use gpu_kernels::Gradient;

/// An evaluator whose problem lives in device memory, evaluated at device vectors (see
/// `Evaluator::device`). Nothing comes back to the host but `f`; a fault surfaces at the next
/// operation that waits for the device.
pub trait DeviceEvaluator: Send {
    /// The vector arithmetic on the same device, in order with the evaluations.
    fn vectors(&mut self) -> Result<DeviceVectors, BackendError>;

    /// `f(x)`.
    fn value_on_device(&mut self, x: &DeviceVector) -> Result<f64, BackendError>;

    /// `∇f(x)` into `g`, computed as `gradient` says.
    fn gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<(), BackendError>;

    /// `f(x)` and `∇f(x)` into `g`, in one gradient pass.
    fn value_and_gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<f64, BackendError>;

    /// A line search's trial: `f(x)`, `∇f(x)` into `g`, and the slope `∇f(x)ᵀd`, the product
    /// taken by `vectors`. This one waits for `f`, then for the slope; a term problem's own
    /// evaluator brings both back in one wait.
    fn value_and_slope_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
        (d, vectors): (&DeviceVector, &mut DeviceVectors),
    ) -> Result<(f64, f64), BackendError> {
        let f = self.value_and_gradient_on_device(x, gradient, g)?;
        Ok((f, vectors.dot_read(g, d)?))
    }
}
