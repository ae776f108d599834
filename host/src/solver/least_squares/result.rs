//! How a least-squares solve ended ([`LmStatus`]) and what it returns ([`LeastSquaresResult`]).

use super::checks::gradient;
use crate::backend::Factor;
use crate::linalg::vector;
use crate::solver::covariance::{Covariance, covariance, covariance_of_free};

pub use gpu_kernels::lm::LmStatus;

/// The result of a least-squares solve, in scipy's `least_squares` vocabulary, with the
/// triangle of `J` at the solution (from which a fit's covariance follows).
#[derive(Clone, Debug)]
pub struct LeastSquaresResult {
    /// The solution.
    pub x: Vec<f64>,
    /// `½·Σr²` at `x` (scipy's `cost`); under a robust loss `½·Σ C²ρ(r²/C²)`.
    pub cost: f64,
    /// `Jᵀr` at `x`, the gradient of `cost` (scipy's `grad`; under a robust loss, of the rows
    /// rescaled for it, `Σ ρ'·r·∇r`).
    pub grad: Vec<f64>,
    /// scipy's `optimality`: `‖grad‖∞`; for trf (with bounds) `‖grad·v‖∞`, `v` its
    /// Coleman–Li scaling (the distance to the bound `grad` points to, where that is finite).
    pub optimality: f64,
    /// `R` and `Qᵀr` of `J = Q·R` at `x`.
    pub factor: Factor,
    /// The number of residuals `m`.
    pub residuals: usize,
    /// Evaluations of `Σr²` (one pass each).
    pub nfev: usize,
    /// Passes over the residual rows (`njev`).
    pub njev: usize,
    /// Accepted steps.
    pub nit: usize,
    /// How the solve ended (scipy's `status`, as [`LmStatus::code`]).
    pub status: LmStatus,
    /// Whether it converged: scipy's `status > 0`.
    pub success: bool,
    /// scipy's `message` for `status`.
    pub message: String,
    /// The variables that were held ([`LmOptions::fixed`](super::LmOptions::fixed)); `None`: none.
    pub fixed: Option<Vec<bool>>,
    /// With bounds, scipy's `active_mask`: −1 where `x` ends within `xtol` (relative) of its
    /// lower bound, 1 of its upper, 0 elsewhere. `None` without bounds.
    pub active_mask: Option<Vec<i32>>,
}

impl LeastSquaresResult {
    /// The covariance of the parameters at `x` (see [`covariance`]; of the free ones, with
    /// fixed variables, see [`covariance_of_free`]).
    pub fn covariance(&self, absolute_sigma: bool) -> Option<Covariance> {
        let fixed = self.fixed.as_deref().unwrap_or(&[]);
        let sum_of_squares = 2.0 * self.cost;
        if fixed.is_empty() {
            return covariance(&self.factor, sum_of_squares, self.residuals, absolute_sigma);
        }
        covariance_of_free(
            &self.factor,
            fixed,
            sum_of_squares,
            self.residuals,
            absolute_sigma,
        )
    }
}

impl LeastSquaresResult {
    /// The result of a solve that ended with `status` at `x`, where the residual pass gave
    /// `factor` and `cost`, after `[nfev, njev, nit]` (`counts`): `grad` from the factor and
    /// `optimality` its ∞-norm; no variable held, no active set.
    pub(crate) fn at(
        x: Vec<f64>,
        factor: Factor,
        cost: f64,
        residuals: usize,
        counts: [usize; 3],
        status: LmStatus,
    ) -> Self {
        let grad = gradient(&factor);
        let [nfev, njev, nit] = counts;
        LeastSquaresResult {
            optimality: vector::norm(&grad, f64::INFINITY),
            cost,
            grad,
            factor,
            x,
            residuals,
            nfev,
            njev,
            nit,
            success: status.success(),
            message: status.message().to_owned(),
            status,
            fixed: None,
            active_mask: None,
        }
    }
}
