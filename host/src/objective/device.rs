//! An objective whose problem lives in device memory, seen by a solver that keeps its vectors
//! there too: evaluations at vectors that never leave the device.

use super::EvalError;
use crate::backend::Gradient;
use crate::backend::gpu::GpuEvaluator;

pub use crate::backend::checked_against;
pub use crate::backend::gpu::{DeviceVector, DeviceVectors};

/// A term objective's GPU evaluator with its gradient scheme (see [`Objective::device`]).
///
/// [`Objective::device`]: super::Objective::device
pub struct OnDevice<'a> {
    evaluator: &'a mut GpuEvaluator,
    gradient: Gradient,
}

impl<'a> OnDevice<'a> {
    pub(super) fn new(evaluator: &'a mut GpuEvaluator, gradient: Gradient) -> Self {
        Self {
            evaluator,
            gradient,
        }
    }

    /// The vector arithmetic on the same device, in order with the evaluations.
    pub fn vectors(&self) -> Result<DeviceVectors, EvalError> {
        Ok(self.evaluator.vectors()?)
    }

    /// How the gradient is computed.
    pub fn gradient_kind(&self) -> Gradient {
        self.gradient
    }

    /// `f(x)`.
    pub fn value(&mut self, x: &DeviceVector) -> Result<f64, EvalError> {
        Ok(self.evaluator.value_on_device(x)?)
    }

    /// `∇f(x)` into `g`, computed as `kind` says.
    pub fn gradient_as(
        &mut self,
        kind: Gradient,
        x: &DeviceVector,
        g: &mut DeviceVector,
    ) -> Result<(), crate::backend::BackendError> {
        self.evaluator.gradient_on_device(x, kind, g)
    }

    /// `∇f(x)` into `g`.
    pub fn gradient(&mut self, x: &DeviceVector, g: &mut DeviceVector) -> Result<(), EvalError> {
        Ok(self.gradient_as(self.gradient, x, g)?)
    }

    /// `f(x)`, and `∇f(x)` into `g`, in one pass.
    pub fn value_and_gradient(
        &mut self,
        x: &DeviceVector,
        g: &mut DeviceVector,
    ) -> Result<f64, EvalError> {
        Ok(self
            .evaluator
            .value_and_gradient_on_device(x, self.gradient, g)?)
    }
}
