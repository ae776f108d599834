//! The quasi-Newton iteration BFGS and L-BFGS share: scipy's `_minimize_bfgs` loop, stopping
//! rules and statuses, around an inverse-Hessian approximation ([`InverseHessian`]).

use super::line_search::{self, Counted, Evaluated, PreEvaluated, Ray};
use super::options::Options;
use super::result::{Iterate, OptimizeResult, SolveError, Status};
use super::start::Start;
use super::workspace::Workspace;
use crate::objective::EvalError;
use crate::space::{StepEnd, VectorSpace};
use std::ops::ControlFlow;

/// A limited memory's products of a new vector `v = Σ cᵢ·uᵢ` with the vectors `w` it stores may
/// come from products it has, `Σ cᵢ·uᵢᵀw`, instead of a pass over the vectors (L-BFGS's and
/// L-BFGS-B's `y = g₊ − g`, L-BFGS-B's step `s`). Such a product carries the rounding of the
/// products it is made of, about `ε·‖w‖·Σ|cᵢ|·‖uᵢ‖`, which must stay within 100 times a direct
/// product's, `ε·‖w‖·‖v‖`: below this ratio of `‖v‖²` to `(Σ|cᵢ|·‖uᵢ‖)²` (for `y`, to
/// `gᵀg + g₊ᵀg₊`) the products are taken directly.
pub(super) const DERIVED_MIN_SQUARED_RATIO: f64 = 1e-4;

/// `(u, w)` of the compact inverse form `−H·g = −γg − S·w + γY·u` of `m` pairs (Byrd, Nocedal
/// & Schnabel 1994, Theorem 2.2; see [`super::lbfgs`]'s module docs): `u = R⁻¹a` and
/// `w = R⁻ᵀ((D + γYᵀY)·u − γb)` from `a = Sᵀg`, `b = Yᵀg`, `R`'s entries `r(i, j) = sᵢᵀyⱼ`
/// (`i ≤ j`) and `yy(i, j) = yᵢᵀyⱼ`: two triangular solves and a product, `O(m²)`, with no
/// matrix inverted (L-BFGS's, and L-BFGS-B's without bounds).
pub(super) fn inverse_coefficients(
    r: impl Fn(usize, usize) -> f64,
    yy: impl Fn(usize, usize) -> f64,
    a: &[f64],
    b: &[f64],
    gamma: f64,
) -> (Vec<f64>, Vec<f64>) {
    let m = a.len();
    let mut u = vec![0.0; m];
    for i in (0..m).rev() {
        let known: f64 = (i + 1..m).map(|j| r(i, j) * u[j]).sum();
        u[i] = (a[i] - known) / r(i, i);
    }
    let mut w = vec![0.0; m];
    for i in 0..m {
        let yy_u: f64 = (0..m).map(|j| yy(i, j) * u[j]).sum();
        let t = r(i, i) * u[i] + gamma * (yy_u - b[i]);
        let known: f64 = (0..i).map(|j| r(j, i) * w[j]).sum();
        w[i] = (t - known) / r(i, i);
    }
    (u, w)
}

/// An approximation `H` of the inverse Hessian, over a workspace's vectors.
pub(super) trait InverseHessian<W: Workspace> {
    /// Writes the search direction `−H·g` to `p` and returns its slope `gᵀp`. Given `trial`,
    /// where this approximation can, also the line search's first trial `x + p`, evaluated in
    /// the same sweep over its vectors ([`Workspace::trial_sweep`]) into the trial's `point`
    /// and `gradient`: then its step, value and slope (L-BFGS's; BFGS's never).
    fn direction(
        &mut self,
        workspace: &mut W,
        g: &W::Vector,
        p: &mut W::Vector,
        trial: Option<Trial<'_, W::Vector>>,
    ) -> Result<(f64, Option<Evaluated>), EvalError>;
    /// The step the line search tries first, where this approximation's scaling makes one
    /// natural; `None`: scipy's estimate from the last decrease
    /// ([`line_search::initial_step`]), as BFGS has it.
    fn natural_step(&self) -> Option<f64> {
        None
    }
    /// Takes in the step `s = x₊ − x` and gradient change `y = g₊ − g` of an iteration. It may
    /// keep the vectors themselves, handing buffers of its own back in their place: afterwards
    /// `s` and `y` hold unspecified values (the driver overwrites both before reading them).
    /// `end` has `sᵀy`, `yᵀy` and `‖s‖₂` computed; `s = taken.step·p` for the last direction
    /// `p`.
    fn update(
        &mut self,
        workspace: &mut W,
        s: &mut W::Vector,
        y: &mut W::Vector,
        end: &StepEnd,
        taken: Taken,
    ) -> Result<(), EvalError>;
}

/// Where [`InverseHessian::direction`] evaluates its first trial: from `x`, into `point` and
/// `gradient` (the line search's buffers).
pub(super) struct Trial<'t, V> {
    pub x: &'t V,
    pub point: &'t mut V,
    pub gradient: &'t mut V,
}

/// The step an iteration took along its direction `p`: `s = step·p`. `swept`: the new point
/// is the first trial the direction evaluated with it ([`InverseHessian::direction`]), so
/// what that sweep measured there holds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Taken {
    pub step: f64,
    pub swept: bool,
}

/// Minimizes from `x0` (already checked: of the objective's length, valid options; the
/// workspace checks that it is finite).
/// With `ftol`, a step that reduces `f` by at most `ftol·max(|f_k|, |f_{k+1}|, 1)` ends the
/// solve too (L-BFGS-B's rule; scipy's BFGS has none).
pub(super) fn run<W: Workspace>(
    workspace: &mut W,
    x0: Start<'_>,
    options: &Options,
    ftol: Option<f64>,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
    hessian: &mut impl InverseHessian<W>,
) -> Result<OptimizeResult, SolveError> {
    let maxiter = options.iteration_limit(x0.len());
    let mut objective = Counted::new(workspace);
    let mut x = objective.workspace.start(x0)?;
    let mut g = objective.workspace.space_mut().zeros()?;
    let mut f = objective.value_and_gradient(&x, &mut g)?;
    // scipy's first-step scaling: pretend the previous value was f + ‖g‖₂/2, so that the first
    // trial step (see `line_search::initial_step`) moves about 1 along −H₀g.
    let mut f_previous = f + objective.workspace.space_mut().norm(&g, 2.0)? / 2.0;
    let mut gnorm = objective.workspace.space_mut().norm(&g, options.norm)?;

    // After a step, `p` is turned into s = α·p and the old gradient's buffer into y = g₊ − g,
    // and the trial point and gradient are swapped in; the inverse Hessian then keeps s and y
    // by exchanging buffers: no copies, and no n-vector allocations once L-BFGS's memory is
    // full.
    let mut p = objective.workspace.space_mut().zeros()?;
    let mut x_trial = objective.workspace.space_mut().zeros()?;
    let mut g_trial = objective.workspace.space_mut().zeros()?;
    let (c1, c2) = (options.c1, options.c2);
    let mut nit = 0;
    let mut stopped_early = None;
    // A NaN gradient norm ends the loop (the comparison is false), as in scipy; so does a NaN
    // f(x0), which no line search could decrease. Both give status 3 below.
    while gnorm > options.gtol && nit < maxiter && !f.is_nan() {
        let trial = Trial {
            x: &x,
            point: &mut x_trial,
            gradient: &mut g_trial,
        };
        let (slope, evaluated) = hessian.direction(objective.workspace, &g, &mut p, Some(trial))?;
        let initial = hessian
            .natural_step()
            .unwrap_or_else(|| line_search::initial_step(f, f_previous, slope));
        let mut ray = Ray {
            objective: &mut objective,
            origin: &x,
            direction: &p,
            point: &mut x_trial,
            gradient: &mut g_trial,
            pre_evaluated: PreEvaluated::new(evaluated),
        };
        let searched = line_search::search(&mut ray, f, slope, initial, c1, c2)?;
        let swept = ray.pre_evaluated.holds();
        let Some(accepted) = searched else {
            stopped_early = Some(Status::PrecisionLoss);
            break;
        };
        let w = &mut *objective.workspace;
        let end =
            w.space_mut()
                .finish_step(accepted.step, &mut p, &g_trial, &mut g, options.norm)?;
        std::mem::swap(&mut x, &mut x_trial);
        std::mem::swap(&mut g, &mut g_trial);
        // Accepted points are finite (the line search never accepts others), so scipy's test
        // for a non-finite f after a step cannot fire here.
        (f_previous, f) = (f, accepted.value);
        nit += 1;
        gnorm = end.gradient_norm;

        let current = &*w;
        let x_now = || current.space().download(&x);
        let iterate = Iterate {
            nit,
            fun: f,
            grad_norm: gnorm,
            nfev: objective.nfev,
            njev: objective.njev,
            x: &x_now,
        };
        if observer(&iterate).is_break() {
            stopped_early = Some(Status::Stopped);
            break;
        }
        if gnorm <= options.gtol {
            break;
        }
        // L-BFGS-B tests the reduction after the gradient, as here, so that a step meeting
        // both ends with the gradient's status.
        if let Some(ftol) = ftol
            && f_previous - f <= ftol * f_previous.abs().max(f.abs()).max(1.0)
        {
            stopped_early = Some(Status::RelativeReduction);
            break;
        }
        // scipy's xrtol test; ‖x‖ is needed only when xrtol > 0 (else the test is ‖s‖ = 0).
        let x_norm = if options.xrtol > 0.0 {
            w.space_mut().norm(&x, 2.0)?
        } else {
            0.0
        };
        if end.step_norm <= options.xrtol * (options.xrtol + x_norm) {
            break;
        }
        // s and y, which the update may keep (then p and g_trial get other buffers).
        let taken = Taken {
            step: accepted.step,
            swept,
        };
        hessian.update(w, &mut p, &mut g_trial, &end, taken)?;
    }

    // xᵀx is NaN iff some entry is: a check that needs no copy of x on either workspace.
    let x_has_nan = objective.workspace.space_mut().dot(&x, &x)?.is_nan();
    let status = stopped_early.unwrap_or_else(|| final_status(nit, maxiter, gnorm, f, x_has_nan));
    // An approximate gradient is checked at the solution (`Status::doubted`).
    let jac_error = if status == Status::NanEncountered {
        None
    } else {
        objective.workspace.gradient_error(&x, &g, options.norm)?
    };
    let status = status.doubted(jac_error.as_ref(), options.gtol, gnorm);
    let (x, jac, on_device) = objective.workspace.finish(x, g, options.keep_on_device)?;
    Ok(OptimizeResult {
        x,
        fun: f,
        jac,
        on_device,
        jac_error,
        hess_inv: None,
        hess_inv_pairs: None,
        hess_inv_pairs_on_device: None,
        nfev: objective.nfev,
        njev: objective.njev,
        nit,
        status,
        success: status.success(),
        message: status.message().to_owned(),
    })
}

/// scipy's status after a loop that was not cut short: the iteration limit first, then NaNs.
fn final_status(nit: usize, maxiter: usize, gnorm: f64, f: f64, x_has_nan: bool) -> Status {
    if nit >= maxiter {
        Status::MaxIter
    } else if gnorm.is_nan() || f.is_nan() || x_has_nan {
        Status::NanEncountered
    } else {
        Status::Success
    }
}
