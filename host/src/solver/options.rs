//! What a solve is asked to do: the method, scipy's options, and the checks made before any
//! evaluation.

use super::result::SolveError;
use crate::objective::Objective;
use ndarray::Array2;

/// Which quasi-Newton method.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Method {
    /// BFGS with a dense (or, while cheaper, implicit) inverse Hessian: scipy's `'BFGS'`.
    #[default]
    Bfgs,
    /// Limited-memory BFGS (compact representation, two passes over the pairs) for large `n`.
    Lbfgs,
}

impl Method {
    /// `"bfgs"` or `"lbfgs"`.
    pub const fn name(self) -> &'static str {
        match self {
            Method::Bfgs => "bfgs",
            Method::Lbfgs => "lbfgs",
        }
    }
}

/// Solver options, with scipy's defaults.
#[derive(Clone, Debug)]
pub struct Options {
    /// Stop when `‖∇f‖ ≤ gtol` (norm [`norm`](Options::norm)). scipy: 1e-5.
    pub gtol: f64,
    /// The order of the gradient norm: `f64::INFINITY` (max |g_i|, scipy's default),
    /// `f64::NEG_INFINITY` (min |g_i|), or any `p > 0`.
    pub norm: f64,
    /// Iteration limit; `None` is scipy's `200·n`.
    pub maxiter: Option<usize>,
    /// Armijo (sufficient decrease) constant of the strong Wolfe conditions. scipy: 1e-4.
    pub c1: f64,
    /// Curvature constant of the strong Wolfe conditions. scipy: 0.9.
    pub c2: f64,
    /// Stop when the step is at most `xrtol·(xrtol + ‖x‖)`. scipy: 0.
    pub xrtol: f64,
    /// L-BFGS: stop when a step reduces `f` by at most `ftol·max(|f_k|, |f_{k+1}|, 1)`
    /// ([`Status::RelativeReduction`](super::Status::RelativeReduction)), scipy L-BFGS-B's rule
    /// and default (`factr·epsmch` = 10⁷·2⁻⁵² ≈ 2.22e-9). With 0, only a step that leaves `f`
    /// unchanged ends the solve this way. BFGS ignores it, as scipy's BFGS has no such rule.
    pub ftol: f64,
    /// BFGS: the initial inverse Hessian, `n×n`, symmetric (to a relative `1e-10` of its largest
    /// entry; its symmetric part is used) and positive definite (checked by a Cholesky
    /// factorization, `O(n³)` once). `None` is the identity. L-BFGS ignores it.
    pub hess_inv0: Option<Array2<f64>>,
    /// BFGS: materialize [`OptimizeResult::hess_inv`](super::OptimizeResult::hess_inv). Refused when the `n×n` matrix would
    /// exceed 2 GiB (`n > 16384`). L-BFGS ignores it.
    pub return_hess_inv: bool,
    /// L-BFGS: how many `(s, y)` pairs to keep (at least 1). Default 10. BFGS ignores it.
    pub memory: usize,
}

/// scipy L-BFGS-B's default `ftol`: `factr = 10⁷` times the machine epsilon.
const LBFGSB_FTOL: f64 = 1e7 * f64::EPSILON;

impl Default for Options {
    fn default() -> Self {
        Options {
            gtol: 1e-5,
            norm: f64::INFINITY,
            maxiter: None,
            c1: 1e-4,
            c2: 0.9,
            xrtol: 0.0,
            ftol: LBFGSB_FTOL,
            hess_inv0: None,
            return_hess_inv: false,
            memory: 10,
        }
    }
}

impl Options {
    /// `maxiter`, or scipy's default `200·n`.
    pub(super) fn iteration_limit(&self, n: usize) -> usize {
        self.maxiter.unwrap_or(n.saturating_mul(200))
    }

    /// Checks the options both methods use.
    fn check_shared(&self) -> Result<(), SolveError> {
        if self.gtol.is_nan() || self.gtol <= 0.0 {
            return Err(invalid_option("gtol", self.gtol, "must be positive"));
        }
        let norm = self.norm;
        if !(norm > 0.0 || norm == f64::NEG_INFINITY) {
            return Err(invalid_option("norm", norm, "must be > 0, inf or -inf"));
        }
        if !(self.c1 > 0.0 && self.c1 < self.c2 && self.c2 < 1.0) {
            let value = format!("({}, {})", self.c1, self.c2);
            return Err(invalid_option("(c1, c2)", value, "need 0 < c1 < c2 < 1"));
        }
        if self.xrtol.is_nan() || self.xrtol < 0.0 {
            return Err(invalid_option("xrtol", self.xrtol, "must be >= 0"));
        }
        if self.ftol.is_nan() || self.ftol < 0.0 {
            return Err(invalid_option("ftol", self.ftol, "must be >= 0"));
        }
        Ok(())
    }
}

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

/// What every method checks before it evaluates anything: `x0` fits the objective and is
/// finite, and the shared options are valid.
pub(super) fn check_start(
    objective: &dyn Objective,
    x0: &[f64],
    options: &Options,
) -> Result<(), SolveError> {
    let expected = objective.dim();
    if x0.len() != expected {
        return Err(SolveError::WrongLength {
            expected,
            got: x0.len(),
        });
    }
    if let Some(index) = crate::linalg::vector::first_non_finite(x0) {
        let value = x0[index];
        return Err(SolveError::NonFiniteX0 { index, value });
    }
    options.check_shared()
}
