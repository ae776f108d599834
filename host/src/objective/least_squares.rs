//! A sum of squares seen through its residuals: what Levenberg–Marquardt asks of an objective.

use super::{EvalError, TermObjective};
use crate::backend::{Evaluation, Factor, LeastSquaresEvaluator, RobustLoss, StepBounds};

/// `f(x) = Σ_k r_k(x)²` with its residual rows reduced to a triangle (`J = Q·R`).
///
/// Being one is a type, not a runtime check: a term objective is one when its problem was loaded
/// with its residuals ([`Backend::load_least_squares`](crate::Backend::load_least_squares)),
///
/// ```
/// use cudamin_host::{LeastSquaresEvaluator, LmOptions, TermObjective, least_squares};
///
/// fn fit(objective: &mut TermObjective<dyn LeastSquaresEvaluator>, p0: &[f64]) {
///     let _ = least_squares(objective, p0, &LmOptions::default());
/// }
/// ```
///
/// and a sum loaded with [`Backend::load`](crate::Backend::load) is not:
///
/// ```compile_fail
/// use cudamin_host::{LmOptions, TermObjective, least_squares};
///
/// fn fit(objective: &mut TermObjective, p0: &[f64]) {
///     let _ = least_squares(objective, p0, &LmOptions::default());
/// }
/// ```
pub trait LeastSquaresObjective {
    /// The number of variables `n`.
    fn dim(&self) -> usize;
    /// The number of residuals `m`.
    fn residuals(&self) -> usize;
    /// `Σ_k C²·ρ(r_k(x)²/C²)` under `loss` (scipy's `2·cost`): `Σ r_k(x)²` for the linear loss.
    fn sum_of_squares(&mut self, x: &[f64], loss: RobustLoss) -> Result<f64, EvalError>;
    /// [`sum_of_squares`](Self::sum_of_squares), with `R` and `Qᵀr` of the residual rows,
    /// rescaled for `loss`, into `factor` (sized for `n` by [`Factor::new`]), in one pass.
    fn factor(
        &mut self,
        x: &[f64],
        loss: RobustLoss,
        factor: &mut Factor,
    ) -> Result<f64, EvalError>;
    /// Keeps the points of finite-difference Jacobian rows within `bounds` until called again
    /// (trf sets its box for the solve, then lifts it). The default does nothing.
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), EvalError> {
        let _ = bounds;
        Ok(())
    }
    /// Whether Levenberg–Marquardt should take each trial's sum of squares from
    /// [`factor`](Self::factor), keeping the factor for the step it may accept
    /// ([`LeastSquaresEvaluator::factors_trials`]). The default: no.
    fn factors_trials(&self) -> bool {
        false
    }
}

/// A term objective loaded as a sum of squares (`Backend::load_least_squares`): its Jacobian
/// is exact or by finite differences, as its gradient is.
impl LeastSquaresObjective for TermObjective<dyn LeastSquaresEvaluator> {
    fn dim(&self) -> usize {
        self.evaluator.dim()
    }

    fn residuals(&self) -> usize {
        self.evaluator.residuals()
    }

    /// The value pass for the linear loss, else the residuals' cost pass.
    fn sum_of_squares(&mut self, x: &[f64], loss: RobustLoss) -> Result<f64, EvalError> {
        self.check_len(x.len())?;
        if loss.is_linear() {
            Ok(self.evaluator.value(x)?)
        } else {
            Ok(self.evaluator.evaluate(x, Evaluation::Cost { loss })?)
        }
    }

    fn factor(
        &mut self,
        x: &[f64],
        loss: RobustLoss,
        factor: &mut Factor,
    ) -> Result<f64, EvalError> {
        self.check_len(x.len())?;
        self.check_len(factor.qtr.len())?;
        let jacobian = self.gradient;
        Ok(self.evaluator.factor(x, jacobian, loss, factor)?)
    }

    /// As the term objective's own (an exact Jacobian keeps no box).
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), EvalError> {
        self.confine_evaluator_steps(bounds)
    }

    fn factors_trials(&self) -> bool {
        self.evaluator.factors_trials()
    }
}
