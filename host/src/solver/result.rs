//! What a solve reports, in scipy's vocabulary: the result, each iterate as it goes, and the
//! errors that stop a solve without a result.

use super::correction_pairs::{CorrectionPairs, DevicePairs};
use crate::backend::DeviceArray;
use crate::objective::{EvalError, GradientError};
use crate::shown::Shown;
use ndarray::Array2;
use std::borrow::Cow;

/// How a solve ended: scipy's status codes and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// 0: the gradient norm fell to `gtol` (or the step to `xrtol`), and an approximate
    /// gradient's estimated error is at most `gtol`.
    Success,
    /// 0 (L-BFGS): the last step reduced `f` by at most `ftol` relative to
    /// `max(|f_k|, |f_{k+1}|, 1)`, scipy L-BFGS-B's `factr·epsmch` rule, with its message.
    /// Reached where `f` is so large that `gtol` is out of the gradient's reach.
    RelativeReduction,
    /// 1: `maxiter` iterations were done.
    MaxIter,
    /// 2: precision loss: the line search found no acceptable step, or the gradient's
    /// estimated error exceeds `gtol`, so its small norm proves nothing (for a stop on `ftol`,
    /// exceeds `gtol` and a tenth of the gradient's norm).
    PrecisionLoss,
    /// 3: a NaN appeared in `f`, `∇f` or `x`.
    NanEncountered,
    /// 99: the observer asked to stop (scipy: the callback raised `StopIteration`).
    Stopped,
    /// 0 (L-BFGS-B): the projected gradient's ∞-norm fell to `gtol` (scipy's `pgtol`).
    ProjectedGradient,
    /// 1 (L-BFGS-B): `maxiter` iterations were done.
    IterationLimit,
    /// 1 (L-BFGS-B): more than `maxfun` evaluations were made.
    EvaluationLimit,
    /// 2 (L-BFGS-B): the line search found no step, with an empty memory.
    AbnormalLineSearch,
}

impl Status {
    /// scipy's `status` code.
    pub const fn code(self) -> i32 {
        match self {
            Status::Success | Status::RelativeReduction | Status::ProjectedGradient => 0,
            Status::MaxIter | Status::IterationLimit | Status::EvaluationLimit => 1,
            Status::PrecisionLoss | Status::AbnormalLineSearch => 2,
            Status::NanEncountered => 3,
            Status::Stopped => 99,
        }
    }

    /// scipy's `message`.
    pub const fn message(self) -> &'static str {
        match self {
            Status::Success => "Optimization terminated successfully.",
            Status::RelativeReduction => "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH",
            Status::MaxIter => "Maximum number of iterations has been exceeded.",
            Status::PrecisionLoss => {
                "Desired error not necessarily achieved due to precision loss."
            }
            Status::NanEncountered => "NaN result encountered.",
            Status::Stopped => "`callback` raised `StopIteration`.",
            Status::ProjectedGradient => "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL",
            Status::IterationLimit => "STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT",
            Status::EvaluationLimit => "STOP: TOTAL NO. OF F,G EVALUATIONS EXCEEDS LIMIT",
            Status::AbnormalLineSearch => "ABNORMAL: ",
        }
    }

    /// Whether the solve converged: [`Success`](Status::Success) or
    /// [`RelativeReduction`](Status::RelativeReduction), scipy's status 0.
    pub const fn success(self) -> bool {
        matches!(
            self,
            Status::Success | Status::RelativeReduction | Status::ProjectedGradient
        )
    }

    /// A converged status checked against the gradient's own error: an approximate gradient
    /// whose estimated error exceeds `gtol` (or is NaN) proves nothing by its small norm, so
    /// that is not reported as success but as [`PrecisionLoss`](Status::PrecisionLoss) (scipy's
    /// status 2, as when the line search cannot progress on a noisy gradient). `f`'s stall
    /// ([`RelativeReduction`](Status::RelativeReduction)) is doubted by the same test unless
    /// the gradient is resolved where the solve stopped, its error under a tenth of
    /// `grad_norm` (the norm the solver last tested, projected onto the box for L-BFGS-B):
    /// directions from it then descend as the exact gradient's would, and the stall is `f`'s,
    /// not the noise's (mgh-16 with forward differences stops on the exact gradient's iterate,
    /// error 8·10⁻³ against a norm of 0.59, as scipy does). `gtol = 0` asks for no gradient
    /// test, so there is none to doubt.
    pub(crate) fn doubted(
        self,
        jac_error: Option<&GradientError>,
        gtol: f64,
        grad_norm: f64,
    ) -> Status {
        let resolved = |error: f64| {
            error <= gtol || (self == Status::RelativeReduction && error <= grad_norm / 10.0)
        };
        let doubtful = jac_error.is_some_and(|e| e.estimate.is_nan() || !resolved(e.estimate));
        if self.success() && gtol > 0.0 && doubtful {
            Status::PrecisionLoss
        } else {
            self
        }
    }
}

/// A solution left on the GPU backend's device, as
/// [`Options::keep_on_device`](super::Options::keep_on_device) asks.
#[derive(Clone, Debug)]
pub struct DeviceSolution {
    /// The solution.
    pub x: DeviceArray,
    /// `∇f(x)`, as the solver last computed it.
    pub jac: DeviceArray,
    /// For a solve within bounds, which bound each variable is at: −1.0 its lower, 1.0 its
    /// upper, 0.0 neither ([`Bounds::active_mask`](crate::Bounds::active_mask)'s rule).
    pub active_mask: Option<DeviceArray>,
}

/// The result of a solve, like scipy's `OptimizeResult`.
#[derive(Clone, Debug)]
pub struct OptimizeResult {
    /// The solution (the last accepted iterate). Empty when it stayed on the device: see
    /// [`on_device`](Self::on_device).
    pub x: Vec<f64>,
    /// `f(x)`.
    pub fun: f64,
    /// `∇f(x)`, as the solver last computed it. Empty when it stayed on the device.
    pub jac: Vec<f64>,
    /// `x` and `jac` on the device, where [`Options::keep_on_device`](super::Options::keep_on_device)
    /// asked and the solve kept its vectors there; `x` and `jac` are then empty.
    pub on_device: Option<DeviceSolution>,
    /// For an approximate gradient (finite differences), an estimate of `jac`'s error, measured
    /// at `x` with one more gradient evaluation (not counted in `njev`). `success` is never
    /// reported when it exceeds `gtol`: the status is then 2, precision loss.
    pub jac_error: Option<GradientError>,
    /// BFGS's inverse-Hessian approximation at `x`, when
    /// [`Options::return_hess_inv`](super::Options::return_hess_inv) is set.
    pub hess_inv: Option<Array2<f64>>,
    /// L-BFGS's and L-BFGS-B's inverse-Hessian approximation, as the pairs that define it
    /// (scipy's `LbfgsInvHessProduct`), when
    /// [`Options::return_hess_inv`](super::Options::return_hess_inv) is set; `None` where they
    /// stayed on the device (see [`hess_inv_pairs_on_device`](Self::hess_inv_pairs_on_device)).
    pub hess_inv_pairs: Option<CorrectionPairs>,
    /// The same pairs left on the device, where the solve kept its vectors there (L-BFGS and
    /// L-BFGS-B from 2¹⁵ variables on a GPU backend, no variable fixed):
    /// [`DevicePairs::to_host`] copies them when they are wanted.
    pub hess_inv_pairs_on_device: Option<DevicePairs>,
    /// Objective value evaluations (one kernel pass each for term objectives).
    pub nfev: usize,
    /// Gradient evaluations (one kernel pass each).
    pub njev: usize,
    /// Iterations.
    pub nit: usize,
    /// How the solve ended (scipy's `status`, as [`Status::code`]).
    pub status: Status,
    /// Whether it converged: scipy's `status == 0`.
    pub success: bool,
    /// scipy's `message` for `status`.
    pub message: String,
}

/// Why a solve could not start, or had to stop without a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SolveError {
    /// `x0` does not have the objective's number of variables.
    #[error("x0 has {got} entries, the objective has {expected} variables")]
    WrongLength {
        /// The objective's number of variables.
        expected: usize,
        /// The length of `x0`.
        got: usize,
    },
    /// An entry of `x0` is NaN or infinite.
    #[error("x0[{index}] is {value}; the starting point must be finite")]
    NonFiniteX0 {
        /// The entry's 0-based index.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// An option's value is refused (out of range, or a matrix of the wrong shape).
    #[error("invalid option {name} = {value}: {reason}")]
    InvalidOption {
        /// The option (a field of `Options` or `LmOptions`), e.g. `gtol` or `(c1, c2)`.
        name: &'static str,
        /// The value given, formatted.
        value: String,
        /// What the option needs, e.g. "must be positive".
        reason: &'static str,
    },
    /// Levenberg–Marquardt was given fewer residuals than variables.
    #[error(
        "{residuals} residuals cannot determine {variables} variables: least squares needs at least as many residuals (data points) as variables"
    )]
    Underdetermined {
        /// The number of residuals `m`.
        residuals: usize,
        /// The number of variables `n`.
        variables: usize,
    },
    /// Least squares' first pass at `x0` gave a sum of squares (of the loss's `ρ`, with a
    /// robust loss) that is not finite: a residual is NaN or infinite, or finite ones sum past
    /// `f64::MAX` (the pass keeps the sum alone, not MINPACK's scaled norm).
    #[error(
        "the sum of squared residuals is not finite at x0: a residual is NaN or infinite, or their squares sum past f64::MAX (residuals of about 1e154 and more): rescale the problem"
    )]
    NonFiniteResiduals,
    /// Least squares' first pass at `x0` gave residuals, not all 0, whose squares underflow:
    /// their sum is below `f64::MIN_POSITIVE / ε`, where it has lost its digits.
    #[error(
        "the residuals at x0 are so small that their squares underflow (their sum is {sum_of_squares:e}, residuals of about 1e-146 and less): rescale the problem (y and sigma by a power of 10)"
    )]
    UnderflowingResiduals {
        /// The sum of squares the first pass gave.
        sum_of_squares: f64,
    },
    /// Least squares reached a point whose residuals are finite but whose Jacobian rows are not
    /// (NaN or ±∞ in their `R` or `Qᵀr`): no step can be taken from it. scipy's `trf` fails
    /// there too (its SVD does not converge).
    #[error(
        "the Jacobian is not finite at the point of iteration {nit}, though the residuals there are: the model's derivatives break down there"
    )]
    NonFiniteJacobian {
        /// The iteration that reached the point (0: `x0`).
        nit: usize,
    },
    /// A variable's bounds were refused.
    #[error("invalid bounds [{}, {}] for x[{index}]: {reason}", Shown(*.lower), Shown(*.upper))]
    InvalidBounds {
        /// The variable's 0-based index.
        index: usize,
        /// Its lower bound.
        lower: f64,
        /// Its upper bound.
        upper: f64,
        /// Why, e.g. "lower > upper".
        reason: &'static str,
    },
    /// A least-squares start outside its bounds (scipy: "Initial guess is outside of provided
    /// bounds"); L-BFGS-B moves such a start into the box instead, as scipy's does, but not a
    /// held variable's ([`Options::fixed`](super::Options::fixed)), which it refuses so.
    #[error(
        "x0[{index}] = {} lies outside its bounds [{}, {}]{}",
        Shown(*.value),
        Shown(*.lower),
        Shown(*.upper),
        if *.held { ", where fixed holds it" } else { "" }
    )]
    InfeasibleX0 {
        /// The variable's 0-based index.
        index: usize,
        /// Its starting value.
        value: f64,
        /// Its lower bound.
        lower: f64,
        /// Its upper bound.
        upper: f64,
        /// Whether [`Options::fixed`](super::Options::fixed) holds it there.
        held: bool,
    },
    /// BFGS's [`Options::hess_inv0`](super::Options::hess_inv0) was refused; with the reason.
    #[error("hess_inv0 is not symmetric positive definite: {0}")]
    NotPositiveDefinite(String),
    /// The objective failed (other than running out of memory, which is
    /// [`OutOfMemory`](SolveError::OutOfMemory)).
    #[error("objective evaluation failed: {0}")]
    Eval(EvalError),
    /// The solver's own memory ran out: BFGS past its dense limit keeps one curvature pair
    /// (`2n` values) per iteration, L-BFGS only `m`.
    #[error(
        "out of memory: {what} ({bytes} bytes) could not be allocated; BFGS beyond n = 16384 keeps every curvature pair, L-BFGS (`--method lbfgs`) keeps 10"
    )]
    OutOfMemory {
        /// The buffer being allocated.
        what: &'static str,
        /// Its size in bytes.
        bytes: usize,
    },
}

/// The error for an option `name` whose `value` is refused for `reason`.
pub(super) fn invalid_option(
    name: &'static str,
    value: impl ToString,
    reason: &'static str,
) -> SolveError {
    SolveError::InvalidOption {
        name,
        value: value.to_string(),
        reason,
    }
}

impl From<EvalError> for SolveError {
    fn from(error: EvalError) -> Self {
        match error {
            EvalError::OutOfMemory { what, bytes } => SolveError::OutOfMemory { what, bytes },
            other => SolveError::Eval(other),
        }
    }
}

/// The state the observer sees after each iteration.
#[derive(Clone, Copy)]
pub struct Iterate<'a> {
    /// Iterations done, this one included.
    pub nit: usize,
    /// `f(x)` at this iterate.
    pub fun: f64,
    /// `‖∇f‖` in the norm of [`Options::norm`](super::Options::norm).
    pub grad_norm: f64,
    /// Value and gradient evaluations so far (as [`OptimizeResult`]'s).
    pub nfev: usize,
    /// Gradient evaluations so far.
    pub njev: usize,
    /// Fetches `x` (from the device, when the solver's vectors live there).
    pub(super) x: &'a dyn Fn() -> Result<Cow<'a, [f64]>, EvalError>,
}

impl<'a> Iterate<'a> {
    /// The iterate `x`: borrowed when the solver keeps it in host memory, copied from the GPU
    /// when it keeps it there (one transfer of `n` values, so only when needed).
    pub fn x(&self) -> Result<Cow<'a, [f64]>, EvalError> {
        (self.x)()
    }
}

impl std::fmt::Debug for Iterate<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Iterate")
            .field("nit", &self.nit)
            .field("fun", &self.fun)
            .field("grad_norm", &self.grad_norm)
            .field("nfev", &self.nfev)
            .field("njev", &self.njev)
            .finish_non_exhaustive()
    }
}
