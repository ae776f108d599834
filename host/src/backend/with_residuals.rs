//! A sum of squares loaded on a backend: an evaluator of the sum, and the backend's pass over
//! its residuals ([`NormalPass`]), together ([`WithResiduals`]).

use super::mpi::{Partials, Share};
use super::pass::{Evaluation, Pass};
use super::step_bounds::StepBounds;
use crate::backend::evaluator::{Evaluator, LeastSquaresEvaluator};
use crate::error::BackendError;
use gpu_kernels::Gradient;
use gpu_kernels::kernel::loss::RobustLoss;

/// A backend's pass over the residuals of the sum of squares that its evaluator `E` evaluates:
/// what [`WithResiduals`] adds to `E`.
pub trait NormalPass<E>: Send {
    /// The number of residuals `m`.
    fn residuals(&self, sum: &E) -> usize;
    /// An [`Evaluation::Normal`] pass, through `sum`'s loaded problem.
    fn normal_equations(
        &mut self,
        sum: &mut E,
        x: &[f64],
        jacobian: Gradient,
        jtj: &mut [f64],
        jtr: &mut [f64],
    ) -> Result<f64, BackendError>;

    /// As [`Evaluator::partials`] for [`Pass::Normal`]. The default makes the whole pass one
    /// chunk, on rank 0 alone of a term-range share.
    fn normal_partials(
        &mut self,
        sum: &mut E,
        x: &[f64],
        jacobian: Gradient,
        share: Share,
    ) -> Result<Partials, BackendError> {
        Partials::whole_normal(x.len(), share, |jtj, jtr| {
            self.normal_equations(sum, x, jacobian, jtj, jtr)
        })
    }
    /// As [`Evaluator::partials`] for [`Pass::Factor`]: the residual rows, rescaled for
    /// `loss`, folded into triangles (`Layout::Triangles`).
    fn factor_partials(
        &mut self,
        sum: &mut E,
        x: &[f64],
        jacobian: Gradient,
        loss: RobustLoss,
        share: Share,
    ) -> Result<Partials, BackendError>;
    /// As [`Evaluator::partials`] for [`Pass::Cost`]: the points' costs `C²ρ(r²/C²)`.
    fn cost_partials(
        &mut self,
        sum: &mut E,
        x: &[f64],
        loss: RobustLoss,
        share: Share,
    ) -> Result<Partials, BackendError>;
    /// See [`LeastSquaresEvaluator::factors_trials`]. The default: no.
    fn factors_trials(&self, sum: &E) -> bool {
        let _ = sum;
        false
    }
}

/// A sum of squares loaded on a backend: its evaluator `sum` answers for the objective, `pass`
/// for the residuals' normal equations. Both backends load least squares as this.
pub struct WithResiduals<E, P> {
    /// First, so that it is dropped first: a pass may hold buffers in `sum`'s GPU context.
    pub pass: P,
    /// The evaluator of the sum of squares itself.
    pub sum: E,
}

impl<E: Evaluator, P: NormalPass<E> + 'static> Evaluator for WithResiduals<E, P> {
    fn dim(&self) -> usize {
        self.sum.dim()
    }

    /// The sum's evaluator keeps the box; the residual passes read it there.
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), BackendError> {
        self.sum.confine_steps(bounds)
    }

    fn evaluate(&mut self, x: &[f64], evaluation: Evaluation<'_>) -> Result<f64, BackendError> {
        match evaluation {
            Evaluation::Normal { jacobian, jtj, jtr } => {
                self.pass
                    .normal_equations(&mut self.sum, x, jacobian, jtj, jtr)
            }
            Evaluation::Factor {
                jacobian,
                loss,
                factor,
            } => self
                .pass
                .factor_partials(&mut self.sum, x, jacobian, loss, Share::Whole)?
                .factor_into(factor),
            Evaluation::Cost { loss } => Ok(self
                .pass
                .cost_partials(&mut self.sum, x, loss, Share::Whole)?
                .value()),
            other => self.sum.evaluate(x, other),
        }
    }

    fn partials(&mut self, x: &[f64], pass: Pass, share: Share) -> Result<Partials, BackendError> {
        match pass {
            Pass::Normal { jacobian } => {
                self.pass.normal_partials(&mut self.sum, x, jacobian, share)
            }
            Pass::Factor { jacobian, loss } => {
                self.pass
                    .factor_partials(&mut self.sum, x, jacobian, loss, share)
            }
            Pass::Cost { loss } => self.pass.cost_partials(&mut self.sum, x, loss, share),
            other => self.sum.partials(x, other, share),
        }
    }
}

impl<E: Evaluator, P: NormalPass<E> + 'static> LeastSquaresEvaluator for WithResiduals<E, P> {
    fn residuals(&self) -> usize {
        self.pass.residuals(&self.sum)
    }

    fn factors_trials(&self) -> bool {
        self.pass.factors_trials(&self.sum)
    }
}
