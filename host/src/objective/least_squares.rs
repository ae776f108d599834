//! A sum of squares seen through its residuals: what Levenberg–Marquardt asks of an objective.

use super::{EvalError, TermObjective};
use crate::backend::{Factor, LeastSquaresEvaluator};

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
    /// `Σ r_k(x)²`.
    fn sum_of_squares(&mut self, x: &[f64]) -> Result<f64, EvalError>;
    /// `Σ r_k(x)²`, with `R` and `Qᵀr` into `factor` (sized for `n` by [`Factor::new`]), in
    /// one pass.
    fn factor(&mut self, x: &[f64], factor: &mut Factor) -> Result<f64, EvalError>;
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

    fn sum_of_squares(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        self.check_len(x.len())?;
        Ok(self.evaluator.value(x)?)
    }

    fn factor(&mut self, x: &[f64], factor: &mut Factor) -> Result<f64, EvalError> {
        self.check_len(x.len())?;
        self.check_len(factor.qtr.len())?;
        let jacobian = self.gradient;
        Ok(self.evaluator.factor(x, jacobian, factor)?)
    }
}
