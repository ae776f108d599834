//! Levenberg–Marquardt for sums of squares `Σ_k r_k(x)²`, with MINPACK's semantics (`lmder`,
//! as scipy's `least_squares(method='lm')` and `curve_fit` run it): a trust region of radius
//! `Δ` in the scaled norm `‖D·p‖`, the damping `λ` that fits the step to it found by Moré's
//! safeguarded Newton iteration (`lmpar`), scaling `D` from the Jacobian's column norms, and
//! the `ftol`/`xtol`/`gtol` tests and status codes scipy reports.
//!
//! One difference in means, none in the rules: MINPACK factors the `m × n` Jacobian by QR;
//! here `J` is never stored (a data fit has millions of rows). One pass over the residuals
//! folds their rows into `R` and `Qᵀr` (`J = Q·R`, [`Factor`]); the column-pivoted QR of that
//! `n × n` triangle is MINPACK's of `J` (orthogonal factors keep the column norms its pivoting
//! reads), and `lmpar`, `qrsolv` and every test run on it as MINPACK runs them on `J`'s
//! (`super::minpack`), on either backend. `J`'s condition number is not squared.

use super::bounds::Bounds;
use super::covariance::{Covariance, covariance, covariance_of_free};
use super::minpack::{PivotedQr, norm2, scaled_norm};
use super::options::invalid_option;
use super::result::{Iterate, SolveError};
use crate::backend::{Factor, Loss, RobustLoss};
use crate::linalg::{try_zeros, vector};
use crate::objective::LeastSquaresObjective;
use crate::shown::Shown;
use std::borrow::Cow;
use std::ops::ControlFlow;

/// Options, with scipy's `least_squares(method='lm')` defaults (and `method='trf'`'s, with
/// [`bounds`](LmOptions::bounds)).
#[derive(Clone, Debug)]
pub struct LmOptions {
    /// Stop when both the actual and the predicted relative reductions of `Σr²` are at most
    /// `ftol`; with bounds (trf), when a step's reduction is below `ftol·cost` and at least a
    /// quarter of the predicted one. scipy: 1e-8. At least machine epsilon for lm; trf takes
    /// less as that test off (scipy's `None`: 0), while another tolerance is on.
    pub ftol: f64,
    /// Stop when the trust region is at most `xtol·‖D·x‖`; with bounds (trf), when a step is
    /// below `xtol·(xtol + ‖x‖)`. Also the tolerance of trf's `active_mask`. scipy: 1e-8. As
    /// `ftol`, at least machine epsilon for lm.
    pub xtol: f64,
    /// Stop when every column of `J` is within `gtol` of orthogonal to `r` (the cosine of the
    /// angle); with bounds (trf), when `‖v∘Jᵀr‖∞ < gtol`, `v` Coleman and Li's distances to
    /// the bounds the gradient points to. scipy: 1e-8. As `ftol`, at least machine epsilon
    /// for lm.
    pub gtol: f64,
    /// Evaluations of `Σr²` allowed (the normal equations' passes are `njev`); `None` is scipy's
    /// `100·n`.
    pub max_nfev: Option<usize>,
    /// The first trust region is `factor·‖D·x0‖` (or `factor` when that is 0). MINPACK: 100.
    /// Levenberg–Marquardt only (trf starts from `‖x0/√v‖`, as scipy's does).
    pub factor: f64,
    /// scipy's robust `loss`: the cost becomes `½·Σ C²·ρ(r_k²/C²)` and each point's residual
    /// and Jacobian row are rescaled as scipy rescales them, so that the steps are
    /// Gauss–Newton steps on that cost, by scipy's `trf` (as scipy takes a loss), bounded or
    /// not. [`Loss::Linear`] (the default) is least squares.
    pub loss: Loss,
    /// `C`, scipy's `f_scale`: the residual size past which a point counts as an outlier. 1.
    /// The linear loss ignores it (any value), as scipy's does.
    pub f_scale: f64,
    /// The variables held at their values in `x0` (`true`: fixed), one entry per variable, as
    /// [`Options::fixed`](super::Options::fixed): the solve is in the free ones; the result's
    /// `x` is whole, its `grad` 0 at the fixed variables, its `factor` over all of them, and
    /// its covariance that of the free ones with zero rows and columns for the fixed.
    pub fixed: Option<Vec<bool>>,
    /// Box bounds ([`Bounds`]); with any finite bound the solve is scipy's trust-region
    /// reflective method (`method='trf'`, what `curve_fit` runs when given bounds), with the
    /// same tolerances, statuses and counts, from an `x0` that must lie within the box (scipy
    /// refuses one outside). `None`, or bounds that bound nothing: Levenberg–Marquardt.
    pub bounds: Option<Bounds>,
}

impl Default for LmOptions {
    fn default() -> Self {
        LmOptions {
            ftol: 1e-8,
            xtol: 1e-8,
            gtol: 1e-8,
            max_nfev: None,
            factor: 100.0,
            loss: Loss::Linear,
            f_scale: 1.0,
            fixed: None,
            bounds: None,
        }
    }
}

impl LmOptions {
    /// Whether the solve is trust-region reflective's: with a finite bound on a free variable,
    /// or under a robust loss (scipy takes a loss with trf alone); else MINPACK's
    /// Levenberg–Marquardt. Held variables' bounds play no part: the solve is the free ones'.
    fn runs_trf(&self) -> bool {
        let fixed = self.fixed.as_deref();
        self.bounds.as_ref().is_some_and(|b| b.any_free(fixed)) || !self.robust_loss().is_linear()
    }

    fn check(&self) -> Result<(), SolveError> {
        let tolerances = [
            ("ftol", self.ftol),
            ("xtol", self.xtol),
            ("gtol", self.gtol),
        ];
        // scipy's rule: MINPACK needs every test on; trf takes a tolerance below ε (0 is
        // scipy's None) as that test off, so long as one is on.
        let trf = self.runs_trf();
        for (name, tol) in tolerances {
            if trf && !(tol.is_finite() && tol >= 0.0) {
                return Err(invalid_option(name, Shown(tol), "must be finite and >= 0"));
            }
            if !trf && !(tol.is_finite() && tol >= f64::EPSILON) {
                return Err(invalid_option(
                    name,
                    Shown(tol),
                    "must be finite and at least machine epsilon (2.2e-16) for lm (trf takes 0: that test off)",
                ));
            }
        }
        if tolerances.iter().all(|&(_, tol)| tol < f64::EPSILON) {
            return Err(invalid_option(
                "(ftol, xtol, gtol)",
                format!(
                    "({}, {}, {})",
                    Shown(self.ftol),
                    Shown(self.xtol),
                    Shown(self.gtol)
                ),
                "one of them must be at least machine epsilon (2.2e-16)",
            ));
        }
        if self.max_nfev == Some(0) {
            return Err(invalid_option("max_nfev", 0, "must be at least 1"));
        }
        if !(self.factor.is_finite() && self.factor > 0.0) {
            return Err(invalid_option(
                "factor",
                Shown(self.factor),
                "must be positive",
            ));
        }
        // The linear loss never reads f_scale (scipy ignores it there too).
        let robust = self.loss != Loss::Linear;
        if robust && !(self.f_scale.is_finite() && self.f_scale > 0.0) {
            return Err(invalid_option(
                "f_scale",
                Shown(self.f_scale),
                "must be positive and finite",
            ));
        }
        // A robust loss sums C²·ρ(r²/C²): past these ends C² underflows to 0 (a fit reported
        // with rss 0 and zero errors) or overflows.
        if robust && !(self.f_scale * self.f_scale).is_normal() {
            return Err(invalid_option(
                "f_scale",
                Shown(self.f_scale),
                "must lie between about 1.5e-154 and 1.3e154 with a robust loss (its square is used)",
            ));
        }
        Ok(())
    }

    /// The loss with its scale; the linear loss with a scale of 1, whatever `f_scale` says
    /// (its cost `C²·(r²/C²)` is `r²` for any `C` but 0, which [`check`](Self::check) lets
    /// through for it).
    pub(super) fn robust_loss(&self) -> RobustLoss {
        let f_scale = if self.loss == Loss::Linear {
            1.0
        } else {
            self.f_scale
        };
        RobustLoss {
            loss: self.loss,
            f_scale,
        }
    }
}

/// How a Levenberg–Marquardt solve ended: scipy's `least_squares` status codes and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LmStatus {
    /// 0: `max_nfev` evaluations were made.
    MaxNfev,
    /// 1: the `gtol` test passed.
    Gtol,
    /// 2: the `ftol` test passed.
    Ftol,
    /// 3: the `xtol` test passed.
    Xtol,
    /// 4: the `ftol` and `xtol` tests both passed.
    FtolXtol,
    /// −2: the observer asked to stop (scipy: the callback raised `StopIteration`).
    Stopped,
}

impl LmStatus {
    /// scipy's `status`.
    pub const fn code(self) -> i32 {
        match self {
            LmStatus::MaxNfev => 0,
            LmStatus::Gtol => 1,
            LmStatus::Ftol => 2,
            LmStatus::Xtol => 3,
            LmStatus::FtolXtol => 4,
            LmStatus::Stopped => -2,
        }
    }

    /// scipy's `message`.
    pub const fn message(self) -> &'static str {
        match self {
            LmStatus::MaxNfev => "The maximum number of function evaluations is exceeded.",
            LmStatus::Gtol => "`gtol` termination condition is satisfied.",
            LmStatus::Ftol => "`ftol` termination condition is satisfied.",
            LmStatus::Xtol => "`xtol` termination condition is satisfied.",
            LmStatus::FtolXtol => "Both `ftol` and `xtol` termination conditions are satisfied.",
            LmStatus::Stopped => "The algorithm was terminated by the callback.",
        }
    }

    /// scipy: `status > 0`.
    pub const fn success(self) -> bool {
        self.code() > 0
    }
}

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
    /// The variables that were held ([`LmOptions::fixed`]); `None`: none.
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

/// Minimizes `Σ r_k(x)²` from `x0` by Levenberg–Marquardt: scipy's
/// `least_squares(fun, x0, method='lm')`. Its `cost` is `½ Σ r²`, as scipy's is; the
/// objective's value, which [`minimize`](super::minimize) would report as `fun`, is `Σ r²`.
/// With [`LmOptions::bounds`], scipy's `least_squares(fun, x0, method='trf', bounds=…)`.
///
/// With a robust [`LmOptions::loss`] the solve is scipy's `trf`, bounded or not, as scipy
/// takes a loss with `trf` alone: the cost is `½ Σ C²ρ(r²/C²)` and the rows are rescaled as
/// scipy's `least_squares(loss=…)` rescales them (tests/fit.rs: scipy's minimum, status and
/// counts for every loss).
///
/// ```
/// use cudamin_host::solver::{LmOptions, least_squares};
/// use cudamin_host::{Backend, Gradient, TermObjective, TermProblem};
/// use gpu_kernels::SumOfSquares;
/// use gpu_kernels::terms::fit::Poly;
///
/// // Points on y = 1 + 2x, and the built-in `Poly` residual with 2 parameters: a straight
/// // line. Its data are three columns, one after the other: x, y and the weights 1/σ.
/// let x: Vec<f64> = (0..50).map(|i| i as f64 / 10.0).collect();
/// let y: Vec<f64> = x.iter().map(|x| 1.0 + 2.0 * x).collect();
/// let columns = [x, y, vec![1.0; 50]].concat();
/// let problem = TermProblem::<SumOfSquares<Poly>>::with_data(2, columns, 50)?;
/// let residuals = Backend::Cpu.load_least_squares(problem)?;
/// let mut objective = TermObjective::new(residuals, Gradient::Exact);
/// let result = least_squares(&mut objective, &[1.0, 1.0], &LmOptions::default())?;
/// assert!(result.success, "{}", result.message);
/// assert!((result.x[0] - 1.0).abs() < 1e-10 && (result.x[1] - 2.0).abs() < 1e-10);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn least_squares(
    objective: &mut dyn LeastSquaresObjective,
    x0: &[f64],
    options: &LmOptions,
) -> Result<LeastSquaresResult, SolveError> {
    least_squares_with_observer(objective, x0, options, &mut |_| ControlFlow::Continue(()))
}

/// [`least_squares`], with `observer` run after every accepted step: it sees the iterate and
/// may stop the solve (status −2) by returning `ControlFlow::Break(())`.
pub fn least_squares_with_observer(
    objective: &mut dyn LeastSquaresObjective,
    x0: &[f64],
    options: &LmOptions,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<LeastSquaresResult, SolveError> {
    let n = objective.dim();
    if x0.len() != n {
        return Err(SolveError::WrongLength {
            expected: n,
            got: x0.len(),
        });
    }
    if let Some(index) = vector::first_non_finite(x0) {
        let value = x0[index];
        return Err(SolveError::NonFiniteX0 { index, value });
    }
    options.check()?;
    // `fixed`'s length first: the bounds' checks read it by variable.
    let held = super::options::held(options.fixed.as_deref(), x0)?;
    if let Some(bounds) = &options.bounds {
        bounds.check_for_least_squares(x0, options.fixed.as_deref())?;
    }
    if let Some(held) = held {
        return super::fixed::least_squares(objective, x0, options, observer, held);
    }
    if try_zeros(3 * n * n).is_none() {
        return Err(SolveError::OutOfMemory {
            what: "the triangle of J and its factorizations",
            bytes: 3 * n * n * size_of::<f64>(),
        });
    }
    // A robust loss runs trf with or without a box, as in scipy: MINPACK's rules on rows
    // rescaled afresh at each point stopped short of the robust minimum and called it success
    // (Rosenbrock under huber, f_scale 0.5: cost 0.93 and status 4 where trf reaches 0).
    if options.runs_trf() {
        let unbounded = Bounds::unbounded(n);
        let bounds = options.bounds.as_ref().unwrap_or(&unbounded);
        return bounds.confining(
            objective,
            |o, box_| o.confine_steps(box_),
            |o| super::trf::least_squares(o, x0, options, bounds, observer),
        );
    }
    let m = objective.residuals();
    if m < n {
        return Err(SolveError::Underdetermined {
            residuals: m,
            variables: n,
        });
    }
    let max_nfev = options.max_nfev.unwrap_or(n.saturating_mul(100));
    let loss = options.robust_loss();
    let mut factor = Factor::new(n);
    let mut x = x0.to_vec();
    let sum_of_squares = objective.factor(&x, loss, &mut factor)?;
    let (mut nfev, mut njev, mut nit) = (1, 1, 0);
    check_start(sum_of_squares, &factor)?;
    finite_jacobian(&factor, nit)?;
    let mut fnorm = sum_of_squares.sqrt();
    let mut diag = vec![0.0; n];
    let (mut delta, mut xnorm, mut par) = (0.0, 0.0, 0.0);
    let mut step = vec![0.0; n];
    let mut trial = vec![0.0; n];
    // Whether `factor` is that of `x` (not yet, after a step accepted at the end).
    let mut factor_at_x = true;
    let status = 'outer: loop {
        // J's column norms are R's: Q is orthogonal.
        let column_norms: Vec<f64> = (0..n)
            .map(|j| norm2((0..=j).map(|i| factor.r[i * n + j])))
            .collect();
        let mut qr = PivotedQr::new(&factor.r, &factor.qtr);
        if nit == 0 {
            for (d, &c) in diag.iter_mut().zip(&column_norms) {
                *d = if c == 0.0 { 1.0 } else { c };
            }
            xnorm = scaled_norm(&diag, &x);
            delta = if xnorm == 0.0 {
                options.factor
            } else {
                options.factor * xnorm
            };
        }
        if qr.gradient_cosine(&column_norms, fnorm) <= options.gtol {
            break LmStatus::Gtol;
        }
        for (d, &c) in diag.iter_mut().zip(&column_norms) {
            *d = d.max(c);
        }
        loop {
            par = qr.lmpar(&diag, delta, par, &mut step);
            let pnorm = scaled_norm(&diag, &step);
            vector::fill_with(&mut trial, &x, &step, |x, p| x + p);
            if nit == 0 {
                delta = delta.min(pnorm);
            }
            let fnorm1 = objective.sum_of_squares(&trial, loss)?.sqrt();
            nfev += 1;
            // A NaN `fnorm1` fails the comparison: the step is rejected as a bad one.
            let actred = if 0.1 * fnorm1 < fnorm {
                1.0 - (fnorm1 / fnorm).powi(2)
            } else {
                -1.0
            };
            let temp1 = qr.jacobian_times_norm(&step) / fnorm;
            let temp2 = par.sqrt() * pnorm / fnorm;
            let prered = temp1 * temp1 + temp2 * temp2 / 0.5;
            let dirder = -(temp1 * temp1 + temp2 * temp2);
            let ratio = if prered != 0.0 { actred / prered } else { 0.0 };
            if ratio <= 0.25 {
                let mut temp = if actred >= 0.0 {
                    0.5
                } else {
                    0.5 * dirder / (dirder + 0.5 * actred)
                };
                if 0.1 * fnorm1 >= fnorm || temp.is_nan() || temp < 0.1 {
                    temp = 0.1;
                }
                delta = temp * delta.min(pnorm / 0.1);
                par /= temp;
            } else if par == 0.0 || ratio >= 0.75 {
                delta = pnorm / 0.5;
                par *= 0.5;
            }
            let accepted = ratio >= 1e-4;
            if accepted {
                std::mem::swap(&mut x, &mut trial);
                xnorm = scaled_norm(&diag, &x);
                fnorm = fnorm1;
                nit += 1;
                factor_at_x = false;
            }
            let ftol_met = actred.abs() <= options.ftol && prered <= options.ftol && ratio <= 2.0;
            let xtol_met = delta <= options.xtol * xnorm;
            match (ftol_met, xtol_met) {
                (true, true) => break 'outer LmStatus::FtolXtol,
                (true, false) => break 'outer LmStatus::Ftol,
                (false, true) => break 'outer LmStatus::Xtol,
                (false, false) => {}
            }
            if nfev >= max_nfev {
                break 'outer LmStatus::MaxNfev;
            }
            if accepted {
                break;
            }
        }
        objective.factor(&x, loss, &mut factor)?;
        njev += 1;
        factor_at_x = true;
        finite_jacobian(&factor, nit)?;
        let grad = gradient(&factor);
        let iterate = Iterate {
            nit,
            fun: fnorm * fnorm,
            grad_norm: 2.0 * vector::norm(&grad, f64::INFINITY),
            nfev,
            njev,
            x: &|| Ok(Cow::Borrowed(&x[..])),
        };
        if observer(&iterate).is_break() {
            break LmStatus::Stopped;
        }
    };
    let sum_of_squares = if factor_at_x {
        fnorm * fnorm
    } else {
        njev += 1;
        objective.factor(&x, loss, &mut factor)?
    };
    let counts = [nfev, njev, nit];
    Ok(LeastSquaresResult::at(
        x,
        factor,
        0.5 * sum_of_squares,
        m,
        counts,
        status,
    ))
}

impl LeastSquaresResult {
    /// The result of a solve that ended with `status` at `x`, where the residual pass gave
    /// `factor` and `cost`, after `[nfev, njev, nit]` (`counts`): `grad` from the factor and
    /// `optimality` its ∞-norm; no variable held, no active set.
    pub(super) fn at(
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

/// Refuses the factor of the point reached at iteration `nit` when its Jacobian rows were not
/// finite: a step from it would be NaN, and a test on its gradient would pass or fail at random.
/// Refuses a start whose sum of squares (of the loss's `ρ`) is not finite, or has underflowed:
/// below `f64::MIN_POSITIVE / ε` (about 1e-292, residuals of about 1e-146 and less) while some
/// residual is not 0 (`Qᵀr` is not all 0: the reflections that make it square nothing, so it
/// keeps its digits where `Σr²` lost them). Such a sum is 0 or a subnormal with few digits, and
/// the tests on it would end the solve at once and call it success (MINPACK's scaled norm
/// avoids both; this project keeps the plain sum, on every backend).
pub(super) fn check_start(sum_of_squares: f64, factor: &Factor) -> Result<(), SolveError> {
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

pub(super) fn finite_jacobian(factor: &Factor, nit: usize) -> Result<(), SolveError> {
    if factor.is_finite() {
        Ok(())
    } else {
        Err(SolveError::NonFiniteJacobian { nit })
    }
}

/// `Jᵀr = Rᵀ·(Qᵀr)`.
pub(super) fn gradient(factor: &Factor) -> Vec<f64> {
    let n = factor.qtr.len();
    (0..n)
        .map(|j| (0..=j).map(|i| factor.r[i * n + j] * factor.qtr[i]).sum())
        .collect()
}
