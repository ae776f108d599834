//! An objective whose problem lives in device memory, seen by a solver that keeps its vectors
//! there too: evaluations at vectors that never leave the device.

use super::EvalError;
use crate::backend::Gradient;
use crate::backend::gpu::{DeviceEvaluator, HeldOnDevice};

pub use crate::backend::checked_against;
pub(super) use crate::backend::gpu::DeviceHeld;
pub use crate::backend::gpu::{DeviceVector, DeviceVectors};

/// A term objective's GPU evaluator, or the view of it through the free variables of a solve
/// that holds some fixed, with its gradient scheme (see [`OnBackend::device`]).
///
/// [`OnBackend::device`]: super::OnBackend::device
pub struct OnDevice<'a> {
    evaluator: Evaluating<'a>,
    gradient: Gradient,
}

/// What evaluates: a term objective's evaluator, or one seen through held variables.
enum Evaluating<'a> {
    Lent(&'a mut dyn DeviceEvaluator),
    Held(HeldOnDevice<'a>),
}

impl<'a> OnDevice<'a> {
    pub(super) fn new(evaluator: &'a mut dyn DeviceEvaluator, gradient: Gradient) -> Self {
        Self {
            evaluator: Evaluating::Lent(evaluator),
            gradient,
        }
    }

    fn evaluator(&mut self) -> &mut dyn DeviceEvaluator {
        match &mut self.evaluator {
            Evaluating::Lent(evaluator) => &mut **evaluator,
            Evaluating::Held(held) => held,
        }
    }

    /// This evaluator seen through the free variables `free` of the whole point `whole`, with
    /// what the device keeps for that in `kept`, made at the first call. `None` for an
    /// evaluator seen so already (a solve holds variables once); an error where the device
    /// cannot keep them.
    pub(super) fn through_free(
        self,
        kept: &'a mut Option<DeviceHeld>,
        whole: &[f64],
        free: &[usize],
    ) -> Result<Option<OnDevice<'a>>, EvalError> {
        let Evaluating::Lent(evaluator) = self.evaluator else {
            return Ok(None);
        };
        let held = match kept {
            Some(held) => held,
            empty => empty.insert(DeviceHeld::new(&mut *evaluator, whole, free)?),
        };
        Ok(Some(OnDevice {
            evaluator: Evaluating::Held(HeldOnDevice::new(evaluator, held)),
            gradient: self.gradient,
        }))
    }

    /// The vector arithmetic on the same device, in order with the evaluations.
    pub fn vectors(&mut self) -> Result<DeviceVectors, EvalError> {
        Ok(self.evaluator().vectors()?)
    }

    /// How the gradient is computed.
    pub fn gradient_kind(&self) -> Gradient {
        self.gradient
    }

    /// `f(x)`.
    pub fn value(&mut self, x: &DeviceVector) -> Result<f64, EvalError> {
        Ok(self.evaluator().value_on_device(x)?)
    }

    /// `∇f(x)` into `g`, computed as `kind` says.
    pub fn gradient_as(
        &mut self,
        kind: Gradient,
        x: &DeviceVector,
        g: &mut DeviceVector,
    ) -> Result<(), crate::backend::BackendError> {
        self.evaluator().gradient_on_device(x, kind, g)
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
        let gradient = self.gradient;
        Ok(self
            .evaluator()
            .value_and_gradient_on_device(x, gradient, g)?)
    }

    /// `f(x)`, `∇f(x)` into `g`, and the slope `∇f(x)ᵀd` along `d`, the product taken by
    /// `vectors`: a line search's trial, both numbers brought back in one wait where the
    /// evaluator can.
    pub fn value_and_slope(
        &mut self,
        x: &DeviceVector,
        g: &mut DeviceVector,
        d: &DeviceVector,
        vectors: &mut DeviceVectors,
    ) -> Result<(f64, f64), EvalError> {
        let gradient = self.gradient;
        Ok(self
            .evaluator()
            .value_and_slope_on_device(x, gradient, g, (d, vectors))?)
    }
}
