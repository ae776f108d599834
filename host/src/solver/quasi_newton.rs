//! The quasi-Newton iteration BFGS and L-BFGS share: scipy's `_minimize_bfgs` loop, stopping
//! rules and statuses, around an inverse-Hessian approximation ([`InverseHessian`]).

use super::line_search::{self, CountedObjective, Ray};
use super::vector::{dot, map_in_place, norm, norm2, update_with};
use super::{Iterate, OptimizeResult, Options, SolveError, Status};
use crate::objective::Objective;
use std::ops::ControlFlow;

/// An approximation `H` of the inverse Hessian.
pub(super) trait InverseHessian {
    /// Writes the search direction `−H·g` to `p`.
    fn direction(&mut self, g: &[f64], p: &mut [f64]);
    /// Takes in the step `s = x₊ − x` and gradient change `y = g₊ − g` of an iteration.
    fn update(&mut self, s: &[f64], y: &[f64]);
}

/// Minimizes from `x0` (already checked: finite, of the objective's length, valid options).
pub(super) fn run(
    objective: &mut dyn Objective,
    x0: &[f64],
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
    hessian: &mut impl InverseHessian,
) -> Result<OptimizeResult, SolveError> {
    let n = x0.len();
    let maxiter = options.iteration_limit(n);
    let mut objective = CountedObjective::new(objective);
    let mut x = x0.to_vec();
    let mut f = objective.value(&x)?;
    let mut g = vec![0.0; n];
    objective.gradient(&x, &mut g)?;
    // scipy's first-step scaling: pretend the previous value was f + ‖g‖₂/2, so that the first
    // trial step (see `line_search::initial_step`) moves about 1 along −H₀g.
    let mut f_previous = f + norm2(&g) / 2.0;
    let mut gnorm = norm(&g, options.norm);

    // After a step, `p` is turned into s = α·p and the old gradient's buffer into y = g₊ − g,
    // and the trial point and gradient are swapped in: no copies, no allocations.
    let (mut p, mut x_trial, mut g_trial) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let (c1, c2) = (options.c1, options.c2);
    let mut nit = 0;
    let mut stopped_early = None;
    // A NaN gradient norm ends the loop (the comparison is false), as in scipy; so does a NaN
    // f(x0), which no line search could decrease. Both give status 3 below.
    while gnorm > options.gtol && nit < maxiter && !f.is_nan() {
        hessian.direction(&g, &mut p);
        let slope = dot(&g, &p);
        let initial = line_search::initial_step(f, f_previous, slope);
        let mut ray = Ray {
            objective: &mut objective,
            origin: &x,
            direction: &p,
            point: &mut x_trial,
            gradient: &mut g_trial,
        };
        let Some(accepted) = line_search::search(&mut ray, f, slope, initial, c1, c2)? else {
            stopped_early = Some(Status::PrecisionLoss);
            break;
        };
        map_in_place(&mut p, |p| accepted.step * p);
        update_with(&mut g, &g_trial, |g, g_new| g_new - g);
        std::mem::swap(&mut x, &mut x_trial);
        std::mem::swap(&mut g, &mut g_trial);
        let (s, y) = (&p, &g_trial);
        // Accepted points are finite (the line search never accepts others), so scipy's test
        // for a non-finite f after a step cannot fire here.
        (f_previous, f) = (f, accepted.value);
        nit += 1;
        gnorm = norm(&g, options.norm);

        let iterate = Iterate {
            nit,
            fun: f,
            grad_norm: gnorm,
            x: &x,
        };
        if observer(&iterate).is_break() {
            stopped_early = Some(Status::Stopped);
            break;
        }
        if gnorm <= options.gtol {
            break;
        }
        if norm2(s) <= options.xrtol * (options.xrtol + norm2(&x)) {
            break;
        }
        hessian.update(s, y);
    }

    let status = stopped_early.unwrap_or_else(|| final_status(nit, maxiter, gnorm, f, &x));
    Ok(OptimizeResult {
        x,
        fun: f,
        jac: g,
        hess_inv: None,
        nfev: objective.nfev,
        njev: objective.njev,
        nit,
        status,
        success: status.success(),
        message: status.message().to_owned(),
    })
}

/// scipy's status after a loop that was not cut short: the iteration limit first, then NaNs.
fn final_status(nit: usize, maxiter: usize, gnorm: f64, f: f64, x: &[f64]) -> Status {
    if nit >= maxiter {
        Status::MaxIter
    } else if gnorm.is_nan() || f.is_nan() || x.iter().any(|v| v.is_nan()) {
        Status::NanEncountered
    } else {
        Status::Success
    }
}
