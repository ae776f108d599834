//! The checks both least-squares methods make of each factor, and the gradient it gives.

use crate::backend::Factor;
use crate::solver::result::SolveError;

/// Refuses the factor of the point reached at iteration `nit` when its Jacobian rows were not
/// finite: a step from it would be NaN, and a test on its gradient would pass or fail at random.
/// Refuses a start whose sum of squares (of the loss's `ρ`) is not finite, or has underflowed:
/// below `f64::MIN_POSITIVE / ε` (about 1e-292, residuals of about 1e-146 and less) while some
/// residual is not 0 (`Qᵀr` is not all 0: the reflections that make it square nothing, so it
/// keeps its digits where `Σr²` lost them). Such a sum is 0 or a subnormal with few digits, and
/// the tests on it would end the solve at once and call it success (MINPACK's scaled norm
/// avoids both; this project keeps the plain sum, on every backend).
pub(crate) fn check_start(sum_of_squares: f64, factor: &Factor) -> Result<(), SolveError> {
    if !sum_of_squares.is_finite() {
        return Err(SolveError::NonFiniteResiduals);
    }
    // A factor that is not finite is `finite_jacobian`'s to refuse.
    let underflowed = sum_of_squares < f64::MIN_POSITIVE / f64::EPSILON
        && factor.qtr.iter().any(|&v| v != 0.0)
        && factor.is_finite();
    if underflowed {
        return Err(SolveError::UnderflowingResiduals { sum_of_squares });
    }
    Ok(())
}

pub(crate) fn finite_jacobian(factor: &Factor, nit: usize) -> Result<(), SolveError> {
    if factor.is_finite() {
        Ok(())
    } else {
        Err(SolveError::NonFiniteJacobian { nit })
    }
}

/// `Jᵀr = Rᵀ·(Qᵀr)`.
pub(crate) fn gradient(factor: &Factor) -> Vec<f64> {
    let n = factor.qtr.len();
    (0..n)
        .map(|j| (0..=j).map(|i| factor.r[i * n + j] * factor.qtr[i]).sum())
        .collect()
}
