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
//! (`crate::solver::minpack`), on either backend. `J`'s condition number is not squared.

use super::checks::{check_start, finite_jacobian, gradient};
use super::options::LmOptions;
use super::result::{LeastSquaresResult, LmStatus};
use crate::backend::Factor;
use crate::linalg::vector;
use crate::objective::LeastSquaresObjective;
use crate::solver::minpack::{PivotedQr, norm2, scaled_norm};
use crate::solver::result::{Iterate, SolveError};
use std::borrow::Cow;
use std::ops::ControlFlow;

/// MINPACK's Levenberg–Marquardt from `x0`, which the dispatch has checked: the right length,
/// finite, no variable held, no bound on a free one, a linear loss.
pub(super) fn least_squares(
    objective: &mut dyn LeastSquaresObjective,
    x0: &[f64],
    options: &LmOptions,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<LeastSquaresResult, SolveError> {
    let n = x0.len();
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
