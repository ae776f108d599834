//! An objective whose problem lives in device memory, seen by a solver that keeps its vectors
//! there too: evaluations at vectors that never leave the device.

use super::EvalError;
use super::space::{StepEnd, VectorSpace, combine_term_by_term, finish_step_pass_by_pass};
use crate::backend::Gradient;
use crate::backend::gpu::DeviceEvaluator;
use crate::linalg::vector;
use std::borrow::Cow;

pub use crate::backend::checked_against;
pub use crate::backend::gpu::{DeviceVector, DeviceVectors};

/// A term objective's GPU evaluator with its gradient scheme (see [`Objective::device`]).
///
/// [`Objective::device`]: super::Objective::device
pub struct OnDevice<'a> {
    evaluator: &'a mut dyn DeviceEvaluator,
    gradient: Gradient,
}

impl<'a> OnDevice<'a> {
    pub(super) fn new(evaluator: &'a mut dyn DeviceEvaluator, gradient: Gradient) -> Self {
        Self {
            evaluator,
            gradient,
        }
    }

    /// The vector arithmetic on the same device, in order with the evaluations.
    pub fn vectors(&mut self) -> Result<DeviceVectors, EvalError> {
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

/// The inherent operations answer [`BackendError`](crate::backend::BackendError)s; the space's,
/// the solver's [`EvalError`]s.
impl VectorSpace for DeviceVectors {
    type Vector = DeviceVector;

    fn dim(&self) -> usize {
        DeviceVectors::dim(self)
    }

    fn zeros(&mut self) -> Result<DeviceVector, EvalError> {
        Ok(DeviceVectors::zeros(self)?)
    }

    fn upload(&mut self, x: &[f64]) -> Result<DeviceVector, EvalError> {
        Ok(DeviceVectors::upload(self, x)?)
    }

    fn download<'v>(&'v self, v: &'v DeviceVector) -> Result<Cow<'v, [f64]>, EvalError> {
        Ok(Cow::Owned(DeviceVectors::download(self, v)?))
    }

    fn host_vector(&mut self, v: DeviceVector) -> Result<Vec<f64>, EvalError> {
        Ok(VectorSpace::download(self, &v)?.into_owned())
    }

    fn dot(&mut self, a: &DeviceVector, b: &DeviceVector) -> Result<f64, EvalError> {
        Ok(DeviceVectors::dot(self, a, b)?)
    }

    /// One pass for the usual norms (∞ and 2); the others pass by pass.
    fn finish_step(
        &mut self,
        step: f64,
        p: &mut DeviceVector,
        g_new: &DeviceVector,
        g: &mut DeviceVector,
        ord: f64,
    ) -> Result<StepEnd, EvalError> {
        if ord != f64::INFINITY && ord != 2.0 {
            return finish_step_pass_by_pass(self, step, p, g_new, g, ord);
        }
        let [sy, yy, gg, ss, max_abs] = DeviceVectors::step_end(self, step, p, g_new, g)?;
        Ok(StepEnd {
            gradient_norm: if ord == 2.0 { gg.sqrt() } else { max_abs },
            step_norm: ss.sqrt(),
            sy,
            yy,
        })
    }

    fn dots(
        &mut self,
        vectors: &[&DeviceVector],
        with: &[&DeviceVector],
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        let mut column = vec![0.0; vectors.len()];
        for (j, w) in with.iter().enumerate() {
            DeviceVectors::dots(self, vectors, w, &mut column)?;
            for (i, &product) in column.iter().enumerate() {
                out[i * with.len() + j] = product;
            }
        }
        Ok(())
    }

    fn combine_dot(
        &mut self,
        terms: &[(f64, &DeviceVector)],
        out: &mut DeviceVector,
        z: &DeviceVector,
    ) -> Result<f64, EvalError> {
        if terms.is_empty() {
            combine_term_by_term(self, terms, out)?;
            return VectorSpace::dot(self, z, out);
        }
        Ok(DeviceVectors::combine_dot(self, terms, out, z)?)
    }

    fn norm(&mut self, v: &DeviceVector, ord: f64) -> Result<f64, EvalError> {
        if ord == f64::INFINITY {
            Ok(DeviceVectors::max_abs(self, v)?)
        } else if ord == 2.0 {
            Ok(DeviceVectors::dot(self, v, v)?.sqrt())
        } else {
            // Other norms are rare options: computed on the host, as scipy does.
            Ok(vector::norm(&VectorSpace::download(self, v)?, ord))
        }
    }

    fn axpy(
        &mut self,
        alpha: f64,
        x: &DeviceVector,
        y: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        Ok(DeviceVectors::axpy(self, alpha, x, y)?)
    }

    fn scale(&mut self, alpha: f64, v: &mut DeviceVector) -> Result<(), EvalError> {
        Ok(DeviceVectors::scale(self, alpha, v)?)
    }

    fn ray_point(
        &mut self,
        x: &DeviceVector,
        step: f64,
        p: &DeviceVector,
        out: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        Ok(DeviceVectors::ray_point(self, x, step, p, out)?)
    }

    fn difference(&mut self, new: &DeviceVector, old: &mut DeviceVector) -> Result<(), EvalError> {
        Ok(DeviceVectors::difference(self, new, old)?)
    }

    fn copy(&mut self, from: &DeviceVector, to: &mut DeviceVector) -> Result<(), EvalError> {
        Ok(DeviceVectors::copy(self, from, to)?)
    }
}
