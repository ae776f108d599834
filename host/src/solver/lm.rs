//! Levenberg–Marquardt for sums of squares `Σ_k r_k(x)²`, with MINPACK's semantics (`lmder`,
//! as scipy's `least_squares(method='lm')` and `curve_fit` run it): a trust region of radius
//! `Δ` in the scaled norm `‖D·p‖`, the damping `λ` that fits the step to it found by Moré's
//! safeguarded Newton iteration (`lmpar`), scaling `D` from the Jacobian's column norms, and
//! the `ftol`/`xtol`/`gtol` tests and status codes scipy reports.
//!
//! One difference in means, none in the rules: MINPACK factors the `m × n` Jacobian by QR;
//! here `J` is never stored (a data fit has millions of rows), so each step solves the normal
//! equations `(JᵀJ + λD²) p = −Jᵀr` by Cholesky, from `JᵀJ` and `Jᵀr` accumulated in one pass
//! over the residuals. Every quantity MINPACK's tests use is a function of those two: column
//! norms are `√(JᵀJ)_jj`, `‖Jp‖² = pᵀ(JᵀJ)p`, and the gradient test's cosines are
//! `(Jᵀr)_j / (‖J_j‖·‖r‖)`. Normal equations square `J`'s condition number, so a fit whose
//! `JᵀJ` is singular to working precision takes damped steps only (a Gauss–Newton step that
//! cannot be factored is treated as too long), where QR would find a least-norm step; and such
//! a solve does not report success where its tests pass, unless its residuals vanish
//! ([`LmStatus::IllConditioned`]).

use super::options::invalid_option;
use super::result::{Iterate, SolveError};
use crate::linalg::{cholesky_into, solve_lower, solve_lower_transposed, try_zeros, vector};
use crate::objective::LeastSquaresObjective;
use ndarray::ArrayView2;
use std::borrow::Cow;
use std::ops::ControlFlow;

/// Options, with scipy's `least_squares(method='lm')` defaults.
#[derive(Clone, Debug)]
pub struct LmOptions {
    /// Stop when both the actual and the predicted relative reductions of `Σr²` are at most
    /// `ftol`. scipy: 1e-8. At least machine epsilon.
    pub ftol: f64,
    /// Stop when the trust region is at most `xtol·‖D·x‖`. scipy: 1e-8. At least machine
    /// epsilon.
    pub xtol: f64,
    /// Stop when every column of `J` is within `gtol` of orthogonal to `r` (the cosine of the
    /// angle). scipy: 1e-8. At least machine epsilon.
    pub gtol: f64,
    /// Evaluations of `Σr²` allowed (the normal equations' passes are `njev`); `None` is scipy's
    /// `100·n`.
    pub max_nfev: Option<usize>,
    /// The first trust region is `factor·‖D·x0‖` (or `factor` when that is 0). MINPACK: 100.
    pub factor: f64,
}

impl Default for LmOptions {
    fn default() -> Self {
        LmOptions {
            ftol: 1e-8,
            xtol: 1e-8,
            gtol: 1e-8,
            max_nfev: None,
            factor: 100.0,
        }
    }
}

impl LmOptions {
    fn check(&self) -> Result<(), SolveError> {
        for (name, tol) in [
            ("ftol", self.ftol),
            ("xtol", self.xtol),
            ("gtol", self.gtol),
        ] {
            if !(tol.is_finite() && tol >= f64::EPSILON) {
                return Err(invalid_option(
                    name,
                    tol,
                    "must be finite and at least machine epsilon (2.2e-16)",
                ));
            }
        }
        if self.max_nfev == Some(0) {
            return Err(invalid_option("max_nfev", 0, "must be at least 1"));
        }
        if !(self.factor.is_finite() && self.factor > 0.0) {
            return Err(invalid_option("factor", self.factor, "must be positive"));
        }
        Ok(())
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
    /// −3 (cudamin's own): a test passed, but at the solution `JᵀJ`, its columns scaled, is too
    /// close to singular for its steps to be trusted (condition number × ε above 0.01), and the
    /// residuals do not vanish. MINPACK, which factors `J` itself, does not square its
    /// condition number and has no such case.
    IllConditioned,
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
            LmStatus::IllConditioned => -3,
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
            LmStatus::IllConditioned => {
                "JᵀJ is too ill-conditioned at the solution for the normal equations to resolve the steps (the Jacobian's scaled columns are nearly dependent): the result is not a reliable minimum. Rescale the data or reparametrize the model."
            }
        }
    }

    /// scipy: `status > 0`.
    pub const fn success(self) -> bool {
        self.code() > 0
    }
}

/// The result of a least-squares solve, in scipy's `least_squares` vocabulary, with the normal
/// equations at the solution (from which a fit's covariance follows).
#[derive(Clone, Debug)]
pub struct LeastSquaresResult {
    /// The solution.
    pub x: Vec<f64>,
    /// `½·Σr²` at `x` (scipy's `cost`).
    pub cost: f64,
    /// `Jᵀr` at `x`, the gradient of `cost` (scipy's `grad`).
    pub grad: Vec<f64>,
    /// `‖grad‖∞` (scipy's `optimality`).
    pub optimality: f64,
    /// `JᵀJ` at `x`, `n × n`, row-major.
    pub jtj: Vec<f64>,
    /// The number of residuals `m`.
    pub residuals: usize,
    /// Evaluations of `Σr²` (one pass each).
    pub nfev: usize,
    /// Passes over the residuals for the normal equations.
    pub njev: usize,
    /// Accepted steps.
    pub nit: usize,
    /// How the solve ended (scipy's `status`, as [`LmStatus::code`]).
    pub status: LmStatus,
    /// Whether it converged: scipy's `status > 0`.
    pub success: bool,
    /// scipy's `message` for `status`.
    pub message: String,
}

impl LeastSquaresResult {
    /// The covariance of the parameters at `x` (see [`covariance`]).
    pub fn covariance(&self, absolute_sigma: bool) -> Option<Vec<f64>> {
        covariance(&self.jtj, 2.0 * self.cost, self.residuals, absolute_sigma)
    }
}

/// The parameters' covariance from the normal equations at a solution, as `curve_fit`'s `pcov`:
/// `(JᵀJ)⁻¹` (`n × n`, row-major) when the residuals are weighted by their true standard
/// deviations (`absolute_sigma`); otherwise that times the reduced χ², `Σr² / (m − n)`, which
/// takes the residuals' scatter as the measure of their uncertainty. `None` where it cannot be
/// estimated: `m = n` without `absolute_sigma` (`curve_fit` fills `pcov` with `inf` then), or
/// `JᵀJ` singular to working precision or so ill-conditioned that its inverse would be more
/// than 1 % wrong (the bound of [`LmStatus::IllConditioned`]; `curve_fit` takes the inverse
/// from `J`'s singular values, whose error is not squared).
///
/// ```
/// use cudamin_host::solver::covariance;
///
/// // JᵀJ = diag(4, 1), Σr² = 6 over 5 residuals: the reduced χ² is 6 / (5 − 2) = 2.
/// let jtj = [4.0, 0.0, 0.0, 1.0];
/// assert_eq!(covariance(&jtj, 6.0, 5, true), Some(vec![0.25, 0.0, 0.0, 1.0]));
/// assert_eq!(covariance(&jtj, 6.0, 5, false), Some(vec![0.5, 0.0, 0.0, 2.0]));
/// // Singular: no estimate.
/// assert_eq!(covariance(&[1.0, 1.0, 1.0, 1.0], 6.0, 5, true), None);
/// ```
pub fn covariance(
    jtj: &[f64],
    sum_of_squares: f64,
    residuals: usize,
    absolute_sigma: bool,
) -> Option<Vec<f64>> {
    let n = jtj.len().isqrt();
    let scale = if absolute_sigma {
        1.0
    } else if residuals > n {
        sum_of_squares / (residuals - n) as f64
    } else {
        return None;
    };
    if scaled_condition(jtj).is_none_or(|c| c * f64::EPSILON > ILL_CONDITIONED) {
        return None;
    }
    let mut inverse = positive_definite_inverse(jtj, n)?;
    for v in inverse.iter_mut() {
        *v *= scale;
    }
    inverse.iter().all(|v| v.is_finite()).then_some(inverse)
}

/// `A⁻¹` of a symmetric `n × n` matrix (row-major) by its Cholesky factor; `None` where `A` is
/// not positive definite in floating point, or memory for the factor runs out.
fn positive_definite_inverse(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = try_zeros(n * n)?;
    cholesky_into(ArrayView2::from_shape((n, n), a).ok()?, &mut l).ok()?;
    let mut inverse = try_zeros(n * n)?;
    let mut column = vec![0.0; n];
    for j in 0..n {
        column.fill(0.0);
        column[j] = 1.0;
        solve_lower(&l, &mut column);
        solve_lower_transposed(&l, &mut column);
        for (i, &v) in column.iter().enumerate() {
            inverse[i * n + j] = v;
        }
    }
    Some(inverse)
}

/// The 1-norm condition number of `JᵀJ` over its nonzero columns, scaled to a unit diagonal
/// (`D⁻¹JᵀJD⁻¹`, `D` the column norms of `J`); `∞` where that matrix is not positive definite
/// in floating point, `None` where there is no memory to find out. The normal equations' steps
/// carry a relative error of about `ε` times this: with it near `1/ε`, they are noise.
fn scaled_condition(jtj: &[f64]) -> Option<f64> {
    let n = jtj.len().isqrt();
    let columns: Vec<usize> = (0..n).filter(|&j| jtj[j * n + j] > 0.0).collect();
    let k = columns.len();
    let mut scaled = try_zeros(k * k)?;
    for (a, &i) in columns.iter().enumerate() {
        for (b, &j) in columns.iter().enumerate() {
            scaled[a * k + b] = jtj[i * n + j] / (jtj[i * n + i].sqrt() * jtj[j * n + j].sqrt());
        }
    }
    let norm_1 = |m: &[f64]| {
        (0..k)
            .map(|j| (0..k).map(|i| m[i * k + j].abs()).sum::<f64>())
            .fold(0.0, f64::max)
    };
    // `∞` for a singular matrix, also where `0·∞` made the product NaN.
    let condition = positive_definite_inverse(&scaled, k)
        .map_or(f64::INFINITY, |inverse| norm_1(&scaled) * norm_1(&inverse));
    Some(if condition.is_nan() {
        f64::INFINITY
    } else {
        condition
    })
}

/// [`LmStatus::IllConditioned`]'s bound on the normal equations' relative error, `ε` times
/// [`scaled_condition`]: a step may be off by more than 1 %. Measured where it falls: polynomial
/// fits on `[0, 10]` from ones (tests/fit.rs) reach MINPACK's Σr² to 8 digits with 10
/// parameters (condition × ε ≈ 2e-3) and stop 0.4 % above it with 11 (≈ 0.06), the gtol test
/// passed; of the 23 MGH least-squares runs, the closest below is mgh-26 (1.4e13·ε =
/// 3e-3, at its minimum), and only Powell's singular function is above, whose residuals
/// vanish at its solution.
const ILL_CONDITIONED: f64 = 1e-2;

/// MINPACK's lower bound on a positive number.
const DWARF: f64 = f64::MIN_POSITIVE;

/// Minimizes `Σ r_k(x)²` from `x0` by Levenberg–Marquardt: scipy's
/// `least_squares(fun, x0, method='lm')`. Its `cost` is `½ Σ r²`, as scipy's is; the
/// objective's value, which [`minimize`](super::minimize) would report as `fun`, is `Σ r²`.
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
    let m = objective.residuals();
    if m < n {
        return Err(SolveError::Underdetermined {
            residuals: m,
            variables: n,
        });
    }
    let max_nfev = options.max_nfev.unwrap_or(n.saturating_mul(100));
    let square = |what| {
        try_zeros(n * n).ok_or(SolveError::OutOfMemory {
            what,
            bytes: n * n * size_of::<f64>(),
        })
    };
    let mut jtj = square("JᵀJ, the normal equations' matrix")?;
    let mut damped = Damped {
        l: square("the Cholesky factor of JᵀJ + λD²")?,
        a: square("JᵀJ + λD²")?,
        work: vec![0.0; n],
    };
    let mut jtr = vec![0.0; n];
    let mut x = x0.to_vec();
    let sum_of_squares = objective.normal_equations(&x, &mut jtj, &mut jtr)?;
    let (mut nfev, mut njev, mut nit) = (1, 1, 0);
    if !sum_of_squares.is_finite() {
        return Err(SolveError::NonFiniteResiduals);
    }
    let mut fnorm = sum_of_squares.sqrt();
    let initial_norm = fnorm;
    let mut diag = vec![0.0; n];
    let (mut delta, mut xnorm, mut par) = (0.0, 0.0, 0.0);
    let mut step = vec![0.0; n];
    let mut trial = vec![0.0; n];
    // Whether `jtj` and `jtr` are those of `x` (not yet, after a step accepted at the end).
    let mut normal_at_x = true;
    let status = 'outer: loop {
        let column_norms: Vec<f64> = (0..n).map(|j| jtj[j * n + j].max(0.0).sqrt()).collect();
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
        if gradient_cosine(&jtr, &column_norms, fnorm) <= options.gtol {
            break LmStatus::Gtol;
        }
        for (d, &c) in diag.iter_mut().zip(&column_norms) {
            *d = d.max(c);
        }
        loop {
            par = damped.step(&jtj, &jtr, &diag, delta, par, &mut step);
            let pnorm = scaled_norm(&diag, &step);
            vector::fill_with(&mut trial, &x, &step, |x, p| x + p);
            if nit == 0 {
                delta = delta.min(pnorm);
            }
            let fnorm1 = objective.sum_of_squares(&trial)?.sqrt();
            nfev += 1;
            // A NaN `fnorm1` fails the comparison: the step is rejected as a bad one.
            let actred = if 0.1 * fnorm1 < fnorm {
                1.0 - (fnorm1 / fnorm).powi(2)
            } else {
                -1.0
            };
            let jp = quadratic_form(&jtj, &step).max(0.0).sqrt();
            let temp1 = jp / fnorm;
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
                normal_at_x = false;
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
        objective.normal_equations(&x, &mut jtj, &mut jtr)?;
        njev += 1;
        normal_at_x = true;
        let grad_norm = 2.0 * vector::norm(&jtr, f64::INFINITY);
        let iterate = Iterate {
            nit,
            fun: fnorm * fnorm,
            grad_norm,
            nfev,
            njev,
            x: &|| Ok(Cow::Borrowed(&x[..])),
        };
        if observer(&iterate).is_break() {
            break LmStatus::Stopped;
        }
    };
    let sum_of_squares = if normal_at_x {
        fnorm * fnorm
    } else {
        njev += 1;
        objective.normal_equations(&x, &mut jtj, &mut jtr)?
    };
    // A test that passed on steps the normal equations could not resolve proves nothing,
    // unless the residuals vanished, which proves a minimum whatever the steps were.
    let status = if status.success()
        && sum_of_squares.sqrt() > f64::EPSILON * initial_norm
        && scaled_condition(&jtj).is_some_and(|c| c * f64::EPSILON > ILL_CONDITIONED)
    {
        LmStatus::IllConditioned
    } else {
        status
    };
    Ok(LeastSquaresResult {
        optimality: vector::norm(&jtr, f64::INFINITY),
        cost: 0.5 * sum_of_squares,
        grad: jtr,
        jtj,
        x,
        residuals: m,
        nfev,
        njev,
        nit,
        success: status.success(),
        message: status.message().to_owned(),
        status,
    })
}

/// `‖D·v‖`.
fn scaled_norm(diag: &[f64], v: &[f64]) -> f64 {
    diag.iter()
        .zip(v)
        .map(|(d, v)| (d * v) * (d * v))
        .sum::<f64>()
        .sqrt()
}

/// `vᵀ A v`, `A` `n × n` row-major.
fn quadratic_form(a: &[f64], v: &[f64]) -> f64 {
    let n = v.len();
    (0..n)
        .map(|i| v[i] * vector::dot(&a[i * n..(i + 1) * n], v))
        .sum()
}

/// MINPACK's gradient test: the largest `|cos|` of the angle between `r` and a column of `J`,
/// `|(Jᵀr)_j| / (‖J_j‖·‖r‖)`, over the nonzero columns; 0 when `r = 0`.
fn gradient_cosine(jtr: &[f64], column_norms: &[f64], fnorm: f64) -> f64 {
    if fnorm == 0.0 {
        return 0.0;
    }
    jtr.iter()
        .zip(column_norms)
        .filter(|(_, c)| **c != 0.0)
        .map(|(g, c)| (g / fnorm).abs() / c)
        .fold(0.0, |m, v| if v.is_nan() { f64::NAN } else { m.max(v) })
}

/// Work space for the damped steps `(JᵀJ + λD²) p = −Jᵀr`.
struct Damped {
    /// `JᵀJ + λD²`.
    a: Vec<f64>,
    /// Its Cholesky factor, by rows.
    l: Vec<f64>,
    work: Vec<f64>,
}

impl Damped {
    /// Factors `JᵀJ + λD²` and solves for `p = −(JᵀJ + λD²)⁻¹Jᵀr` into `step`; `false` when
    /// the matrix is not positive definite to working precision.
    fn solve(
        &mut self,
        jtj: &[f64],
        jtr: &[f64],
        diag: &[f64],
        lambda: f64,
        step: &mut [f64],
    ) -> bool {
        let n = jtr.len();
        self.a.copy_from_slice(jtj);
        for (j, d) in diag.iter().enumerate() {
            self.a[j * n + j] += lambda * d * d;
        }
        let Ok(a) = ArrayView2::from_shape((n, n), &self.a[..]) else {
            return false;
        };
        if cholesky_into(a, &mut self.l).is_err() {
            return false;
        }
        for (p, g) in step.iter_mut().zip(jtr) {
            *p = -g;
        }
        solve_lower(&self.l, step);
        solve_lower_transposed(&self.l, step);
        step.iter().all(|p| p.is_finite())
    }

    /// `φ'(λ)·Δ/φ`'s denominator in Moré's Newton step: `‖L⁻¹·D(Dp)/‖Dp‖‖²`, with `L` the
    /// factor of the last [`solve`](Self::solve).
    fn newton_denominator(&mut self, diag: &[f64], step: &[f64], dxnorm: f64) -> f64 {
        for ((w, d), p) in self.work.iter_mut().zip(diag).zip(step) {
            *w = d * (d * p) / dxnorm;
        }
        solve_lower(&self.l, &mut self.work);
        vector::dot(&self.work, &self.work)
    }

    /// MINPACK's `lmpar`: the damping `λ ≥ 0` whose step has `‖D·p‖` within 10% of `delta`
    /// (or λ = 0, the Gauss–Newton step, when that step is shorter), by Moré's safeguarded
    /// Newton iteration on `φ(λ) = ‖D·p(λ)‖ − Δ` from the previous `par`, at most 10 steps.
    /// Writes the step and returns `λ`.
    fn step(
        &mut self,
        jtj: &[f64],
        jtr: &[f64],
        diag: &[f64],
        delta: f64,
        par: f64,
        step: &mut [f64],
    ) -> f64 {
        let gauss_newton = self.solve(jtj, jtr, diag, 0.0, step);
        let mut fp = f64::INFINITY;
        let mut parl = 0.0;
        let mut dxnorm = f64::INFINITY;
        if gauss_newton {
            dxnorm = scaled_norm(diag, step);
            fp = dxnorm - delta;
            if fp <= 0.1 * delta {
                return 0.0;
            }
            parl = fp / delta / self.newton_denominator(diag, step, dxnorm);
        }
        let gnorm = jtr
            .iter()
            .zip(diag)
            .map(|(g, d)| (g / d) * (g / d))
            .sum::<f64>()
            .sqrt();
        let mut paru = gnorm / delta;
        if paru == 0.0 {
            paru = DWARF / delta.min(0.1);
        }
        let mut par = par.max(parl).min(paru);
        if par == 0.0 {
            par = if gauss_newton { gnorm / dxnorm } else { paru };
        }
        let mut solved = false;
        for iteration in 1..=10 {
            if par == 0.0 {
                par = DWARF.max(0.001 * paru);
            }
            solved = self.solve(jtj, jtr, diag, par, step);
            if !solved {
                // Not positive definite in floating point: more damping.
                parl = par;
                par = (10.0 * par).max(DWARF);
                continue;
            }
            dxnorm = scaled_norm(diag, step);
            let previous = fp;
            fp = dxnorm - delta;
            if fp.abs() <= 0.1 * delta
                || (parl == 0.0 && fp <= previous && previous < 0.0)
                || iteration == 10
            {
                break;
            }
            let parc = fp / delta / self.newton_denominator(diag, step, dxnorm);
            if fp > 0.0 {
                parl = parl.max(par);
            } else if fp < 0.0 {
                paru = paru.min(par);
            }
            par = parl.max(par + parc);
        }
        if !solved {
            // No damping made the system factorable: a steepest-descent step of length Δ in
            // the scaled norm, which the trust-region test then judges like any other.
            for ((p, g), d) in step.iter_mut().zip(jtr).zip(diag) {
                *p = -delta * (g / d) / d / gnorm;
            }
        }
        par
    }
}
