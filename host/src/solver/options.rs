//! What a solve is asked to do: the method, scipy's options, and the checks made before any
//! evaluation.

use super::bounds::Bounds;
use super::result::{SolveError, invalid_option};
use crate::objective::{Held, Objective};
use crate::shown::Shown;
use ndarray::{Array2, Axis};

/// Which quasi-Newton method.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Method {
    /// BFGS with a dense (or, while cheaper, implicit) inverse Hessian: scipy's `'BFGS'`.
    #[default]
    Bfgs,
    /// Limited-memory BFGS (compact representation, two passes over the pairs) for large `n`.
    Lbfgs,
    /// L-BFGS-B: limited-memory BFGS within box bounds ([`Options::bounds`]), scipy's
    /// `'L-BFGS-B'`, with its stopping rules and messages.
    LbfgsB,
}

impl Method {
    /// `"bfgs"`, `"lbfgs"` or `"lbfgsb"`.
    pub const fn name(self) -> &'static str {
        match self {
            Method::Bfgs => "bfgs",
            Method::Lbfgs => "lbfgs",
            Method::LbfgsB => "lbfgsb",
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
    /// Iteration limit; `None` is scipy's `200·n` (BFGS, L-BFGS) or 15000 (L-BFGS-B).
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
    /// BFGS: materialize [`OptimizeResult::hess_inv`](super::OptimizeResult::hess_inv), refused
    /// when the `n×n` matrix would exceed 2 GiB (`n > 16384`). L-BFGS and L-BFGS-B: hand their
    /// pairs over as [`OptimizeResult::hess_inv_pairs`](super::OptimizeResult::hess_inv_pairs)
    /// (`2k` vectors of `n`: the memory's own on the host, copied from the device where the
    /// pairs were kept there).
    pub return_hess_inv: bool,
    /// L-BFGS and L-BFGS-B: how many `(s, y)` pairs to keep (at least 1). Default 10. BFGS
    /// ignores it.
    pub memory: usize,
    /// L-BFGS-B: the box; `None` is no bounds. The other methods refuse bounds.
    pub bounds: Option<Bounds>,
    /// L-BFGS-B: stop once more than this many evaluations were made (scipy's `maxfun`);
    /// `None` is scipy's 15000.
    pub maxfun: Option<usize>,
    /// L-BFGS-B: the most evaluations one line search makes (scipy's `maxls`, at least 1;
    /// default 20). A search that ends without a step restarts from a steepest descent while
    /// the memory held pairs, else ends the solve
    /// ([`Status::AbnormalLineSearch`](super::Status::AbnormalLineSearch)), as scipy's.
    pub maxls: usize,
    /// Every method: the variables held at their values in `x0` (`true`: fixed), one entry
    /// per variable. The solver works in the free ones; the result's `x` is whole, its `jac` is
    /// 0 at the fixed variables (their partials are not the solve's: computed with the rest, then
    /// dropped) and so is `hess_inv` in
    /// their rows and columns (`hess_inv_pairs`: zero columns, and `H` zero in those rows and
    /// columns); the counts are the evaluations made. `None`: every variable free.
    pub fixed: Option<Vec<bool>>,
    /// Leave the solution and its gradient on the device where the solve kept its vectors
    /// there: L-BFGS, L-BFGS-B (without fixed variables), and BFGS past its dense limit, on a
    /// term problem loaded on a GPU backend, from 2¹⁵ variables up. They are then in
    /// [`OptimizeResult::on_device`](super::OptimizeResult::on_device) (with L-BFGS-B's
    /// `active_mask` within bounds), and its `x` and `jac` are empty. Elsewhere it changes
    /// nothing. Default `false`.
    pub keep_on_device: bool,
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
            bounds: None,
            maxfun: None,
            maxls: 20,
            fixed: None,
            keep_on_device: false,
        }
    }
}

impl Options {
    /// These options for the free variables of `held`: bounds and `hess_inv0` restricted to
    /// them, nothing fixed.
    pub(super) fn for_free(&self, held: &Held) -> Options {
        let free = held.free();
        Options {
            bounds: self.bounds.as_ref().map(|b| b.of_free(held)),
            hess_inv0: (self.hess_inv0.as_ref())
                .map(|h| h.select(Axis(0), free).select(Axis(1), free)),
            fixed: None,
            // The whole solution is made on the host from the free variables'.
            keep_on_device: false,
            ..self.clone()
        }
    }

    /// `maxiter`, or scipy's default `200·n`.
    pub(super) fn iteration_limit(&self, n: usize) -> usize {
        self.maxiter.unwrap_or(n.saturating_mul(200))
    }

    /// Checks the options both methods use.
    fn check_shared(&self) -> Result<(), SolveError> {
        // 0 as scipy takes it: no gradient test; the solve ends on its other rules.
        if self.gtol.is_nan() || self.gtol < 0.0 {
            return Err(invalid_option(
                "gtol",
                Shown(self.gtol),
                "must be at least 0",
            ));
        }
        let norm = self.norm;
        if !(norm > 0.0 || norm == f64::NEG_INFINITY) {
            return Err(invalid_option(
                "norm",
                Shown(norm),
                "must be > 0, inf or -inf",
            ));
        }
        if !(self.c1 > 0.0 && self.c1 < self.c2 && self.c2 < 1.0) {
            let value = format!("({}, {})", Shown(self.c1), Shown(self.c2));
            return Err(invalid_option("(c1, c2)", value, "need 0 < c1 < c2 < 1"));
        }
        if self.xrtol.is_nan() || self.xrtol < 0.0 {
            return Err(invalid_option("xrtol", Shown(self.xrtol), "must be >= 0"));
        }
        if self.ftol.is_nan() || self.ftol < 0.0 {
            return Err(invalid_option("ftol", Shown(self.ftol), "must be >= 0"));
        }
        Ok(())
    }
}

/// The variables `fixed` holds of `n`, or `None` where it holds none; refused when it is not
/// one entry per variable or leaves nothing free.
pub(super) fn held(fixed: Option<&[bool]>, x0: &[f64]) -> Result<Option<Held>, SolveError> {
    let Some(fixed) = fixed else {
        return Ok(None);
    };
    if fixed.len() != x0.len() {
        let value = format!("{} entries for {} variables", fixed.len(), x0.len());
        return Err(invalid_option("fixed", value, "need one per variable"));
    }
    if !x0.is_empty() && fixed.iter().all(|&f| f) {
        return Err(invalid_option(
            "fixed",
            "every variable",
            "leaves nothing to solve",
        ));
    }
    Ok(Held::new(x0, fixed))
}

/// The length and the shared options ([`check_start_of_len`]), and a memory of at least one
/// pair: what the limited-memory methods check before their workspace checks the start where it
/// lies.
pub(super) fn check_limited_memory_len(
    objective: &dyn Objective,
    n: usize,
    options: &Options,
) -> Result<(), SolveError> {
    check_start_of_len(objective, n, options)?;
    check_memory(options)
}

/// Refuses a memory of no pairs.
pub(super) fn check_memory(options: &Options) -> Result<(), SolveError> {
    if options.memory == 0 {
        return Err(invalid_option("memory", 0, "must be at least 1"));
    }
    Ok(())
}

/// What every method checks before it evaluates anything: `x0` fits the objective and is
/// finite, and the shared options are valid.
pub(super) fn check_start(
    objective: &dyn Objective,
    x0: &[f64],
    options: &Options,
) -> Result<(), SolveError> {
    check_length(objective, x0.len())?;
    if let Some(error) = super::start::non_finite(x0) {
        return Err(error);
    }
    options.check_shared()
}

/// [`check_start`] but for finiteness, which the solve's workspace checks where the start lies
/// ([`Workspace::start`](super::workspace::Workspace::start)).
pub(super) fn check_start_of_len(
    objective: &dyn Objective,
    n: usize,
    options: &Options,
) -> Result<(), SolveError> {
    check_length(objective, n)?;
    options.check_shared()
}

/// Refuses a start of `got` variables for `objective`.
fn check_length(objective: &dyn Objective, got: usize) -> Result<(), SolveError> {
    let expected = objective.dim();
    if got == expected {
        Ok(())
    } else {
        Err(SolveError::WrongLength { expected, got })
    }
}
