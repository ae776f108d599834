//! What a solve returns, in scipy's vocabulary.

use ndarray::Array2;

/// How a solve ended: scipy's status codes and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 0: the gradient norm fell to `gtol` (or the step to `xrtol`).
    Success,
    /// 1: `maxiter` iterations were done.
    MaxIter,
    /// 2: the line search found no acceptable step: precision loss.
    PrecisionLoss,
    /// 3: a NaN appeared in `f`, `∇f` or `x`.
    NanEncountered,
    /// 99: the observer asked to stop (scipy: the callback raised `StopIteration`).
    Stopped,
}

impl Status {
    /// scipy's `status` code.
    pub const fn code(self) -> i32 {
        match self {
            Status::Success => 0,
            Status::MaxIter => 1,
            Status::PrecisionLoss => 2,
            Status::NanEncountered => 3,
            Status::Stopped => 99,
        }
    }

    /// scipy's `message`.
    pub const fn message(self) -> &'static str {
        match self {
            Status::Success => "Optimization terminated successfully.",
            Status::MaxIter => "Maximum number of iterations has been exceeded.",
            Status::PrecisionLoss => {
                "Desired error not necessarily achieved due to precision loss."
            }
            Status::NanEncountered => "NaN result encountered.",
            Status::Stopped => "`callback` raised `StopIteration`.",
        }
    }

    pub const fn success(self) -> bool {
        matches!(self, Status::Success)
    }
}

/// The result of a solve, like scipy's `OptimizeResult`.
#[derive(Clone, Debug)]
pub struct OptimizeResult {
    /// The solution (the last accepted iterate).
    pub x: Vec<f64>,
    /// `f(x)`.
    pub fun: f64,
    /// `∇f(x)`, as the solver last computed it.
    pub jac: Vec<f64>,
    /// The inverse-Hessian approximation at `x`: BFGS only, and only when
    /// [`Options::return_hess_inv`](super::Options::return_hess_inv) is set.
    pub hess_inv: Option<Array2<f64>>,
    /// Objective value evaluations (one kernel pass each for term objectives).
    pub nfev: usize,
    /// Gradient evaluations (one kernel pass each).
    pub njev: usize,
    /// Iterations.
    pub nit: usize,
    pub status: Status,
    pub success: bool,
    pub message: String,
}
