//! Levenberg–Marquardt for sums of squares `Σ_k r_k(x)²`, with MINPACK's semantics (`lmder`,
//! as scipy's `least_squares(method='lm')` and `curve_fit` run it): a trust region of radius
//! `Δ` in the scaled norm `‖D·p‖`, the damping `λ` that fits the step to it found by Moré's
//! safeguarded Newton iteration (`lmpar`), scaling `D` from the Jacobian's column norms, and
//! the `ftol`/`xtol`/`gtol` tests and status codes scipy reports.
//!
//! One difference in means, none in the rules: MINPACK factors the `m × n` Jacobian by QR;
//! here `J` is never stored. One pass over the residuals folds their rows into `R` and `Qᵀr`
//! (`J = Q·R`, [`Passes::factor`]); the column-pivoted QR of that `n × n` triangle is MINPACK's
//! of `J` (orthogonal factors keep the column norms its pivoting reads), and `lmpar`, `qrsolv`
//! and every test run on it as MINPACK runs them on `J`'s ([`minpack`]). `J`'s condition
//! number is not squared.
//!
//! The loop allocates nothing and knows nothing of where the residuals live: the host runs it
//! over a data fit's passes on either backend, and one GPU thread or one CPU task runs it over
//! each small fit of a batch ([`batch`]). It runs in the passes' precision ([`Float`]): `f64`,
//! or [`Single`](crate::Single) for a batch in single precision.

pub mod batch;
#[cfg(target_arch = "nvptx64")]
pub mod block;
pub mod minpack;
mod register;

use crate::float::Float;
use core::ops::ControlFlow;
use minpack::{PivotedQr, norm2, qr_len, scaled_norm};

/// Which factor a pass is asked for: the start's, an accepted iteration's, or the final
/// point's, when the last accepted step came after the last factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactorAt {
    /// `x0`.
    Start,
    /// The point after `nit` accepted steps, from which the solve goes on.
    Iteration(usize),
    /// The point the solve ends at.
    End,
}

/// The residual passes the loop runs, in numbers `F`: whoever implements them holds the factor.
pub trait Passes<F = f64> {
    /// What a pass may fail with.
    type Error;
    /// Folds the residual rows at `x` into the factor ([`triangle`](Passes::triangle)) and
    /// returns `Σ r²`. A pass may refuse the factor it made (not finite, say) by an error.
    fn factor(&mut self, x: &[F], at: FactorAt) -> Result<F, Self::Error>;
    /// `(R, Qᵀr)` of the last [`factor`](Passes::factor): `R` is `n × n`, row-major, upper.
    fn triangle(&self) -> (&[F], &[F]);
    /// `Σ r²` at `x`, residuals alone.
    fn sum_of_squares(&mut self, x: &[F]) -> Result<F, Self::Error>;
    /// After each accepted iteration's factor, the point reached: `Break` ends the solve with
    /// [`LmStatus::Stopped`].
    fn iterate(&mut self, _progress: Progress<'_, F>) -> Result<ControlFlow<()>, Self::Error> {
        Ok(ControlFlow::Continue(()))
    }
}

/// Where an iteration left the solve.
#[derive(Clone, Copy, Debug)]
pub struct Progress<'a, F = f64> {
    /// Accepted steps.
    pub nit: usize,
    /// Residual passes, `nfev`, and factor passes, `njev`.
    pub nfev: usize,
    /// Factor passes.
    pub njev: usize,
    /// `Σ r²`.
    pub sum_of_squares: F,
    /// The point.
    pub x: &'a [F],
}

/// The loop's settings, scipy's names. A tolerance below the precision's epsilon is raised to
/// it (the host refuses one below `f64`'s, as scipy does for `lm`).
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// The relative reduction of `Σ r²` below which the solve ends.
    pub ftol: f64,
    /// The relative change of `x` below which the solve ends.
    pub xtol: f64,
    /// The cosine between `r` and `J`'s columns below which the solve ends.
    pub gtol: f64,
    /// The first trust radius over `‖D·x0‖` (MINPACK's `factor`).
    pub factor: f64,
    /// The most residual passes.
    pub max_nfev: usize,
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
    /// −2: the observer asked to stop ([`Passes::iterate`]; scipy: the callback raised
    /// `StopIteration`).
    Stopped,
}

impl LmStatus {
    /// Every status, in code order.
    pub const ALL: [LmStatus; 6] = [
        LmStatus::Stopped,
        LmStatus::MaxNfev,
        LmStatus::Gtol,
        LmStatus::Ftol,
        LmStatus::Xtol,
        LmStatus::FtolXtol,
    ];

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

/// How a solve ended: at the `x` it wrote back, where the passes hold the factor.
#[derive(Clone, Copy, Debug)]
pub struct End<F = f64> {
    /// Why.
    pub stop: LmStatus,
    /// `Σ r²` at `x`.
    pub sum_of_squares: F,
    /// Residual passes.
    pub nfev: usize,
    /// Factor passes.
    pub njev: usize,
    /// Accepted steps.
    pub nit: usize,
}

/// The values of the memory [`solve`] borrows for `n` variables.
pub const fn work_len(n: usize) -> usize {
    qr_len(n) + 4 * n
}

/// MINPACK's Levenberg–Marquardt from `x` (`n` values, overwritten by the end point), over
/// `passes`, in `memory` ([`work_len`]`(n)` values) and `ipvt` (`n`). The caller has checked
/// that there are at least `n` residuals.
pub fn solve<F: Float, P: Passes<F>>(
    passes: &mut P,
    x: &mut [F],
    settings: &Settings,
    memory: &mut [F],
    ipvt: &mut [usize],
) -> Result<End<F>, P::Error> {
    let num = F::from_f64;
    let [ftol, xtol, gtol] =
        [settings.ftol, settings.xtol, settings.gtol].map(|t| num(t).max(F::EPSILON));
    let n = x.len();
    let (qr_memory, rest) = memory[..work_len(n)].split_at_mut(qr_len(n));
    let (diag, rest) = rest.split_at_mut(n);
    let (step, rest) = rest.split_at_mut(n);
    let (trial, column_norms) = rest.split_at_mut(n);
    let mut fnorm = passes.factor(x, FactorAt::Start)?.sqrt();
    let (mut nfev, mut njev, mut nit) = (1, 1, 0);
    let (mut delta, mut xnorm, mut par) = (F::ZERO, F::ZERO, F::ZERO);
    // Whether the passes' factor is that of `x` (not yet, after a step accepted at the end).
    let mut factor_at_x = true;
    let stop = 'outer: loop {
        let (r, qtr) = passes.triangle();
        // J's column norms are R's: Q is orthogonal.
        for (j, norm) in column_norms.iter_mut().enumerate() {
            *norm = norm2((0..=j).map(|i| r[i * n + j]));
        }
        let mut qr = PivotedQr::new(r, qtr, qr_memory, ipvt);
        if nit == 0 {
            for (d, &c) in diag.iter_mut().zip(&*column_norms) {
                *d = if c == F::ZERO { F::ONE } else { c };
            }
            xnorm = scaled_norm(diag, x);
            delta = if xnorm == F::ZERO {
                num(settings.factor)
            } else {
                xnorm * settings.factor
            };
        }
        if qr.gradient_cosine(column_norms, fnorm) <= gtol {
            break LmStatus::Gtol;
        }
        for (d, &c) in diag.iter_mut().zip(&*column_norms) {
            *d = d.max(c);
        }
        loop {
            par = qr.lmpar(diag, delta, par, step);
            let pnorm = scaled_norm(diag, step);
            for ((t, &x), &p) in trial.iter_mut().zip(&*x).zip(&*step) {
                *t = x + p;
            }
            if nit == 0 {
                delta = delta.min(pnorm);
            }
            let fnorm1 = passes.sum_of_squares(trial)?.sqrt();
            nfev += 1;
            // A NaN `fnorm1` fails the comparison: the step is rejected as a bad one.
            let actred = if fnorm1 * 0.1 < fnorm {
                let kept = fnorm1 / fnorm;
                F::ONE - kept * kept
            } else {
                -F::ONE
            };
            let temp1 = qr.jacobian_times_norm(step) / fnorm;
            let temp2 = par.sqrt() * pnorm / fnorm;
            let prered = temp1 * temp1 + temp2 * temp2 / 0.5;
            let dirder = -(temp1 * temp1 + temp2 * temp2);
            let ratio = if prered != F::ZERO {
                actred / prered
            } else {
                F::ZERO
            };
            if ratio <= num(0.25) {
                let mut temp = if actred >= F::ZERO {
                    num(0.5)
                } else {
                    dirder * 0.5 / (dirder + actred * 0.5)
                };
                if fnorm1 * 0.1 >= fnorm || temp.is_nan() || temp < num(0.1) {
                    temp = num(0.1);
                }
                delta = temp * delta.min(pnorm / 0.1);
                par /= temp;
            } else if par == F::ZERO || ratio >= num(0.75) {
                delta = pnorm / 0.5;
                par *= num(0.5);
            }
            let accepted = ratio >= num(1e-4);
            if accepted {
                x.copy_from_slice(trial);
                xnorm = scaled_norm(diag, x);
                fnorm = fnorm1;
                nit += 1;
                factor_at_x = false;
            }
            let ftol_met = actred.abs() <= ftol && prered <= ftol && ratio <= num(2.0);
            let xtol_met = delta <= xtol * xnorm;
            match (ftol_met, xtol_met) {
                (true, true) => break 'outer LmStatus::FtolXtol,
                (true, false) => break 'outer LmStatus::Ftol,
                (false, true) => break 'outer LmStatus::Xtol,
                (false, false) => {}
            }
            if nfev >= settings.max_nfev {
                break 'outer LmStatus::MaxNfev;
            }
            if accepted {
                break;
            }
        }
        passes.factor(x, FactorAt::Iteration(nit))?;
        njev += 1;
        factor_at_x = true;
        let progress = Progress {
            nit,
            nfev,
            njev,
            sum_of_squares: fnorm * fnorm,
            x,
        };
        if passes.iterate(progress)?.is_break() {
            break LmStatus::Stopped;
        }
    };
    let sum_of_squares = if factor_at_x {
        fnorm * fnorm
    } else {
        njev += 1;
        passes.factor(x, FactorAt::End)?
    };
    Ok(End {
        stop,
        sum_of_squares,
        nfev,
        njev,
        nit,
    })
}
