//! A sum of squares seen through its residuals: what Levenberg–Marquardt asks of an objective.

use super::{EvalError, TermObjective};

/// `f(x) = Σ_k r_k(x)²` with its residuals' normal equations.
pub trait LeastSquaresObjective {
    /// The number of variables `n`.
    fn dim(&self) -> usize;
    /// The number of residuals `m`, or [`EvalError::NotLeastSquares`].
    fn residuals(&mut self) -> Result<usize, EvalError>;
    /// `Σ r_k(x)²`.
    fn sum_of_squares(&mut self, x: &[f64]) -> Result<f64, EvalError>;
    /// `Σ r_k(x)²`, with `JᵀJ` (`n × n`, row-major) into `jtj` and `Jᵀr` into `jtr`, in one pass.
    fn normal_equations(
        &mut self,
        x: &[f64],
        jtj: &mut [f64],
        jtr: &mut [f64],
    ) -> Result<f64, EvalError>;
}

/// A term objective loaded as a sum of squares (`Backend::load_least_squares`): its Jacobian
/// is exact or by finite differences, as its gradient is.
impl LeastSquaresObjective for TermObjective {
    fn dim(&self) -> usize {
        self.evaluator.dim()
    }

    fn residuals(&mut self) -> Result<usize, EvalError> {
        let least_squares = self.evaluator.least_squares();
        Ok(least_squares.ok_or(EvalError::NotLeastSquares)?.residuals())
    }

    fn sum_of_squares(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        self.check_len(x.len())?;
        Ok(self.evaluator.value(x)?)
    }

    fn normal_equations(
        &mut self,
        x: &[f64],
        jtj: &mut [f64],
        jtr: &mut [f64],
    ) -> Result<f64, EvalError> {
        self.check_len(x.len())?;
        self.check_len(jtr.len())?;
        let jacobian = self.gradient;
        let least_squares = self.evaluator.least_squares();
        let least_squares = least_squares.ok_or(EvalError::NotLeastSquares)?;
        Ok(least_squares.normal_equations(x, jacobian, jtj, jtr)?)
    }
}
