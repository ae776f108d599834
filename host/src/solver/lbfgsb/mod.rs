//! L-BFGS-B: limited-memory BFGS with box bounds `lower ≤ x ≤ upper` (R. H. Byrd, P. Lu,
//! J. Nocedal and C. Zhu, "A limited memory algorithm for bound constrained optimization",
//! SIAM J. Sci. Comput. 16(5), 1995; the subspace step of J. L. Morales and J. Nocedal's
//! version 3.0, 2011), with scipy's `minimize(method='L-BFGS-B')` semantics: `x0` clipped into
//! the box, the projected gradient's ∞-norm against `gtol` (scipy's `pgtol`), the relative
//! reduction of `f` against `ftol` (`factr·ε`), `maxiter`, `maxfun`, at most `maxls` (20)
//! evaluations per line search, and scipy's statuses and messages.
//!
//! Each iteration:
//! 1. **Generalized Cauchy point**: the first local minimizer of the quadratic model
//!    `m(x + t·d)` along the projected steepest-descent path `d = −g`, bent at each bound it
//!    meets; the breakpoints are visited in order, the model's slope and curvature updated at
//!    each from the compact form `B = θI − W·M·Wᵀ` (`W = [Y  θS]`, `M` the inverse of the
//!    `2k × 2k` middle matrix, applied by block elimination with a Cholesky factor, never
//!    formed), in `O(k²)` per breakpoint.
//! 2. **Subspace minimization** over the variables the Cauchy point left free: the model's
//!    Newton step there (by Sherman–Morrison–Woodbury on the reduced `B`, its `2k × 2k` system
//!    solved by two Cholesky factorizations as the Fortran's `formk` does), projected into the
//!    box; where that projection is not a descent direction, the step truncated at the first
//!    bound instead (version 3.0's rule). Where a factorization fails the memory is emptied
//!    and the iteration restarts, as in the Fortran code.
//! 3. **Line search** along `d = x̄ − x` (Moré–Thuente with `c1 = 10⁻³`, `c2 = 0.9`,
//!    `xtol = 0.1`), never past the box (`stpmax`); a step where the search stops on one of its
//!    warnings is taken, as L-BFGS-B takes it. A failed search restarts from an empty memory,
//!    and ends the solve (status 2) when the memory was already empty.
//! 4. The pair `(s, y)` joins the memory unless `sᵀy ≤ ε·(−gᵀs)`, once the next iteration's
//!    stopping tests let the solve go on (the Fortran's order: a solve's last step adds no
//!    pair); `θ = yᵀy / sᵀy`.
//!
//! Without bounds the Cauchy point is skipped once pairs exist (every variable is free, as in
//! L-BFGS-B), and the step is L-BFGS's, from the same compact inverse form
//! (`quasi_newton::inverse_coefficients`). Such an iteration makes two passes over the pairs,
//! as L-BFGS's: one takes the new gradient's products with them (the new pair's follow from
//! those and the direction's coefficients), one forms the direction; and, as L-BFGS's, one
//! where the objective evaluates by pieces and the line search takes the step 1: the sweep
//! that forms the direction evaluates that trial and takes its gradient's products
//! (`solver::trial_sweep`, `lbfgs`'s module docs). The pairs and their
//! products are the memory L-BFGS keeps too (`solver::memory`, generic over where its vectors
//! live), and so are the step's: every `n`-sized pass is a [`BoxSpace`] operation of the
//! workspace's vectors (on the device for a GPU term objective of at least `DEVICE_MIN_LEN`
//! free variables, as L-BFGS's, some held fixed or not), the walk along the path and the small matrices (`2k × 2k` with
//! `k ≤ m`) are the host's.
//!
//! Here: the driver loop and the line within the box; `cauchy` the walk along the path and the
//! Cauchy point; `compact` the compact form of `B` and the subspace step's correction; `step`
//! the unbounded step and the subspace step.

mod cauchy;
mod compact;
mod ray;
mod step;

use super::bounds::Bounds;
use super::line_search::{Accepted, Evaluated, PreEvaluated, search_in_box};
use super::memory::{DirectionProducts, Memory, Pair, PairProducts, SweptGradient};
use super::options::{Options, check_limited_memory_len};
use super::quasi_newton::Trial;
use super::result::{Iterate, OptimizeResult, SolveError, Status};
use super::start::{Start, non_finite};
use super::workspace::{DeviceWorkspace, Finished, HostWorkspace, Workspace, device_of};
use crate::objective::{EvalError, GradientError, Objective};
use crate::solver::trial_sweep::TrialSweep;
use crate::space::{BoxSpace, BoxVectors, VectorSpace};
use cauchy::{cauchy_point, steepest_path};
use compact::Compact;
use ray::BoxRay;
use std::ops::ControlFlow;
use step::{Target, subspace_step, unbounded_step};

/// scipy's `maxfun` and `maxiter` defaults for L-BFGS-B.
const MAXFUN_DEFAULT: usize = 15_000;
const MAXITER_DEFAULT: usize = 15_000;
/// L-BFGS-B's longest line-search step where the box does not limit it.
const STEP_MAX_FREE: f64 = 1e10;

/// Minimizes `objective` from `x0` within `options.bounds` (none: unbounded) by L-BFGS-B with
/// `options.memory` pairs. See [`super::minimize`].
pub fn minimize(
    objective: &mut dyn Objective,
    x0: &[f64],
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    minimize_from(objective, Start::Host(x0), options, observer)
}

/// [`minimize`] from `x0` where it lies: a start on the device is checked finite and moved into
/// the box there.
pub(super) fn minimize_from(
    objective: &mut dyn Objective,
    x0: Start<'_>,
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    check_limited_memory_len(objective, x0.len(), options)?;
    if options.maxls == 0 {
        return Err(super::result::invalid_option(
            "maxls",
            0,
            "must be at least 1",
        ));
    }
    let n = x0.len();
    let unbounded = Bounds::unbounded(n);
    let bounds = options.bounds.as_ref().unwrap_or(&unbounded);
    bounds.check(n)?;
    // Asked once: the answer reads the whole box.
    let bounded = bounds.any();
    if !bounded {
        return solve(objective, x0, options, observer, bounds, bounded);
    }
    bounds.confining(objective, crate::objective::confine_steps, |objective| {
        solve(objective, x0, options, observer, bounds, bounded)
    })
}

/// The solve, with its vectors where the objective computes: on the device, for a term
/// objective loaded there and at least `DEVICE_MIN_LEN` variables, else in host memory.
fn solve(
    objective: &mut dyn Objective,
    x0: Start<'_>,
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
    bounds: &Bounds,
    bounded: bool,
) -> Result<OptimizeResult, SolveError> {
    if let Some(on_device) = device_of(objective, x0.len())? {
        let mut workspace = DeviceWorkspace::new(on_device)?;
        return Solver::new(&mut workspace, bounds, bounded)?.run(x0, options, observer);
    }
    let mut workspace = HostWorkspace::new(objective);
    Solver::new(&mut workspace, bounds, bounded)?.run(x0, options, observer)
}

/// The workspace, the box and the evaluation counts.
struct Solver<'a, W: Workspace> {
    workspace: &'a mut W,
    bounds: &'a Bounds,
    /// The box in the workspace's space, where any variable has a finite bound.
    box_: Option<BoxVectors<W::Vector>>,
    nfev: usize,
    njev: usize,
}

impl<'a, W> Solver<'a, W>
where
    W: Workspace,
    W::Space: BoxSpace,
{
    fn new(workspace: &'a mut W, bounds: &'a Bounds, bounded: bool) -> Result<Self, EvalError> {
        let box_ = if bounded {
            let space = workspace.space_mut();
            Some(BoxVectors {
                lower: space.upload(&bounds.lower)?,
                upper: space.upload(&bounds.upper)?,
            })
        } else {
            None
        };
        Ok(Solver {
            workspace,
            bounds,
            box_,
            nfev: 0,
            njev: 0,
        })
    }

    /// `x0` in the workspace's space, in the box, refused unless every entry is finite:
    /// clipped on the host before its one copy to the device, or where it lies on the device
    /// (`x0 + 0·x0` is `x0` to the bit, then clipped). A start clipped on the device comes
    /// with its unclipped copy, spare storage for the solve's next vector.
    fn start(&mut self, x0: Start<'_>) -> Result<(W::Vector, Option<W::Vector>), SolveError> {
        let Start::Host(values) = x0 else {
            let x = self.workspace.start(x0)?;
            let Some(box_) = &self.box_ else {
                return Ok((x, None));
            };
            let space = self.workspace.space_mut();
            let mut clipped = space.zeros()?;
            space.clipped_ray_point(box_, &x, 0.0, &x, &mut clipped)?;
            return Ok((clipped, Some(x)));
        };
        if let Some(error) = non_finite(values) {
            return Err(error);
        }
        let bounds = self.bounds;
        let clipped: Vec<f64> = (values.iter().enumerate())
            .map(|(i, &v)| bounds.clip(i, v))
            .collect();
        Ok((self.workspace.space_mut().upload(&clipped)?, None))
    }

    fn run(
        &mut self,
        x0: Start<'_>,
        options: &Options,
        observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
    ) -> Result<OptimizeResult, SolveError> {
        let bounds = self.bounds;
        let (mut x, spare_start) = self.start(x0)?;
        let space = self.workspace.space_mut();
        // The first evaluation writes every entry of g.
        let mut g = match spare_start {
            Some(storage) => storage,
            None => space.zeros()?,
        };
        let mut trial = space.zeros()?;
        let mut trial_g = space.zeros()?;
        let mut direction = space.zeros()?;
        let mut target = space.zeros()?;
        let mut f = self.evaluate(&x, &mut g)?;
        let maxiter = options.maxiter.unwrap_or(MAXITER_DEFAULT);
        let maxfun = options.maxfun.unwrap_or(MAXFUN_DEFAULT);
        let mut memory: Memory<W::Vector> = Memory::new(options.memory);
        let mut nit = 0;
        let mut buffers = StepBuffers::default();
        let mut spare = None;
        // The last step's pair, for the memory, and whether the Cauchy path from its end was
        // formed for the memory's pass to take `Wᵀd` too.
        let mut pending: Option<(Pair<W::Vector>, bool)> = None;
        // f before the last step, for the relative-reduction test.
        let mut previous: Option<f64> = None;
        // The projected gradient's norm at the new point, where the pass that made its
        // Cauchy path took it.
        let mut known_norm = None;
        // The projected gradient's norm the last test read (`Status::doubted` weighs the
        // gradient's error against it).
        let mut tested_norm = f64::NAN;
        // scipy's order: its driver's observer and limits, then L-BFGS-B's own tests.
        let status = loop {
            let space = self.workspace.space_mut();
            // ‖g‖∞ is finite exactly when every entry is; without bounds it is the projected
            // gradient's norm too.
            let g_max = space.norm(&g, f64::INFINITY)?;
            if !f.is_finite() || !g_max.is_finite() {
                break Status::NanEncountered;
            }
            let projected = match (known_norm.take(), &self.box_) {
                (Some(norm), _) => norm,
                (None, Some(box_)) => space.projected_gradient_norm(Some(box_), &x, &g)?,
                (None, None) => g_max,
            };
            tested_norm = projected;
            if nit > 0 {
                let workspace = &*self.workspace;
                let x_now = || workspace.space().download(&x);
                let iterate = Iterate {
                    nit,
                    fun: f,
                    grad_norm: projected,
                    nfev: self.nfev,
                    njev: self.njev,
                    x: &x_now,
                };
                if observer(&iterate).is_break() {
                    break Status::Stopped;
                }
                if nit >= maxiter {
                    break Status::IterationLimit;
                }
                if self.nfev > maxfun {
                    break Status::EvaluationLimit;
                }
            }
            if projected <= options.gtol {
                break Status::ProjectedGradient;
            }
            if let Some(previous) = previous
                && previous - f <= options.ftol * previous.abs().max(f.abs()).max(1.0)
            {
                break Status::RelativeReduction;
            }
            // The last step's pair joins the memory once the solve goes on: L-BFGS-B tests for
            // the end before its update, so a solve's last step adds no pair, and the memory at
            // the end is what the last direction came from (scipy's `hess_inv`).
            if let Some((pair, with_path)) = pending.take() {
                let path = if with_path {
                    buffers.path.as_ref()
                } else {
                    None
                };
                spare = memory.push(self.workspace.space_mut(), pair, &g, path)?;
            }
            // One iteration; a failed line search with pairs in memory empties it and tries
            // again from the same point.
            // The direction's products with the pairs, `[Yᵀd, Sᵀd]`, where the unbounded step
            // formed them.
            let mut direction_products: Option<DirectionProducts>;
            // What the unbounded step's trial sweep measured at `x + d`; kept past the search only
            // where the search took that trial.
            let mut swept: Option<TrialSweep>;
            let accepted = loop {
                let (slope, room) = if self.box_.is_none() && !memory.is_empty() {
                    let first = Trial {
                        x: &x,
                        point: &mut trial,
                        gradient: &mut trial_g,
                    };
                    let workspace = &mut *self.workspace;
                    let step =
                        unbounded_step(workspace, &g, &memory, &mut direction, &mut target, first)?;
                    (direction_products, swept) = (step.products, step.swept);
                    (step.slope, f64::INFINITY)
                } else {
                    (direction_products, swept) = (None, None);
                    let aimed = self.step_target(
                        &x,
                        &g,
                        &memory,
                        &mut buffers,
                        &mut target,
                        &mut direction,
                    )?;
                    let Some(aimed) = aimed else {
                        memory.clear();
                        continue;
                    };
                    aimed
                };
                let found = if slope < 0.0 {
                    // With bounds: 1 at the first iteration, then where the line leaves the box.
                    let step_max = match self.box_ {
                        Some(_) if nit == 0 => 1.0,
                        _ => room.min(STEP_MAX_FREE),
                    };
                    let initial = if nit == 0 && !bounds.boxed() {
                        let length = self.workspace.space_mut().norm(&direction, 2.0)?;
                        (1.0 / length).min(step_max)
                    } else {
                        1.0
                    };
                    // The sweep's trial is `x + 1·d`, the search's first (`initial` is 1 once
                    // there are pairs); it wrote no target.
                    let evaluated = swept.as_ref().map(|sweep| Evaluated {
                        step: 1.0,
                        value: sweep.value,
                        slope: sweep.slope,
                    });
                    let mut ray = BoxRay {
                        solver: self,
                        origin: &x,
                        direction: &direction,
                        target: swept.is_none().then_some(&target),
                        point: &mut trial,
                        gradient: &mut trial_g,
                        pre_evaluated: PreEvaluated::new(evaluated),
                    };
                    let found =
                        search_in_box(&mut ray, f, slope, initial, step_max, options.maxls)?;
                    if !ray.pre_evaluated.holds() {
                        swept = None;
                    }
                    found
                } else {
                    None
                };
                match found {
                    Some(accepted) => break Some(accepted),
                    None if memory.is_empty() => break None,
                    None => memory.clear(),
                }
            };
            let Some(Accepted { step, value }) = accepted else {
                break Status::AbnormalLineSearch;
            };
            let Solver {
                workspace, box_, ..
            } = self;
            let space = workspace.space_mut();
            // The pair's vectors: those the memory last let go, where it did.
            let (mut s, mut y) = match spare.take() {
                Some(pair) => pair,
                None => (space.zeros()?, space.zeros()?),
            };
            let sums = space.new_pair(step, &direction, &trial_g, &g, &mut s, &mut y)?;
            // Without bounds the projected gradient is the gradient: its norm came with the
            // pair's pass.
            if box_.is_none() {
                known_norm = Some(sums.g_new_max);
            }
            // L-BFGS-B's curvature test: skip a pair with sᵀy ≤ ε·(−gᵀs).
            if sums.sy > f64::EPSILON * -sums.gs {
                // The next Cauchy point's path, from the new point, so that the new pair's
                // pass also takes `Wᵀd` (without bounds the next step needs no path).
                let with_path = match box_ {
                    Some(box_) => {
                        let norm =
                            steepest_path(space, Some(&*box_), &trial, &trial_g, &mut buffers)?;
                        known_norm = Some(norm);
                        true
                    }
                    None => false,
                };
                // `s = step·d`: its products with the pairs where `d`'s keep their digits.
                let s_with_held =
                    (direction_products.take()).and_then(|d| d.of_step(step, sums.ss));
                let products = PairProducts {
                    sy: sums.sy,
                    yy: sums.yy,
                    ss: sums.ss,
                    gg: Some(sums.gg),
                };
                let g_new = swept.take().map(|sweep| SweptGradient { sweep, step });
                let pair = Pair {
                    s,
                    y,
                    products,
                    s_with_held,
                    g_new,
                };
                pending = Some((pair, with_path));
            } else {
                memory.forget_point();
                spare = Some((s, y));
            }
            std::mem::swap(&mut x, &mut trial);
            std::mem::swap(&mut g, &mut trial_g);
            previous = Some(f);
            f = value;
            nit += 1;
        };
        let jac_error = if status == Status::NanEncountered {
            None
        } else {
            self.projected_gradient_error(&x, &g)?
        };
        // An approximate gradient is checked at the solution (`Status::doubted`).
        let status = status.doubted(jac_error.as_ref(), options.gtol, tested_norm);
        let (hess_inv_pairs, hess_inv_pairs_on_device) = if options.return_hess_inv {
            (self.workspace).result_pairs(memory.into_vectors(), x0.len())?
        } else {
            (None, None)
        };
        let (x, jac, on_device) = self.finish(x, g, options.keep_on_device)?;
        Ok(OptimizeResult {
            x,
            fun: f,
            jac,
            on_device,
            jac_error,
            hess_inv: None,
            hess_inv_pairs,
            hess_inv_pairs_on_device,
            nfev: self.nfev,
            njev: self.njev,
            nit,
            status,
            success: status.success(),
            message: status.message().to_owned(),
        })
    }

    /// The solution for the result ([`Workspace::finish`]); one kept on the device has its
    /// `active_mask` made there. Host vectors are never kept: the result's caller makes their
    /// mask from `x`.
    fn finish(&mut self, x: W::Vector, g: W::Vector, keep: bool) -> Result<Finished, EvalError> {
        let mask = match &self.box_ {
            Some(box_) if keep && W::ON_DEVICE => {
                let space = self.workspace.space_mut();
                let mut mask = space.zeros()?;
                space.active_mask(box_, &x, &mut mask)?;
                Some(mask)
            }
            _ => None,
        };
        let (x, jac, mut on_device) = self.workspace.finish(x, g, keep)?;
        if let Some(kept) = on_device.as_mut() {
            kept.active_mask = mask.and_then(|mask| self.workspace.kept(mask));
        }
        Ok((x, jac, on_device))
    }

    /// The error in the projected gradient at `x` (of `g`), against the objective's reference
    /// gradient projected the same way: what `gtol` was tested on. A variable held on its bound
    /// by both gradients counts 0, however far apart their partials there.
    fn projected_gradient_error(
        &mut self,
        x: &W::Vector,
        g: &W::Vector,
    ) -> Result<Option<GradientError>, EvalError> {
        let bounds = self.bounds;
        self.workspace
            .gradient_error_by(x, g, &mut |x, g, reference| {
                bounds.projected_gradient_difference(x, g, reference)
            })
    }

    /// `f(x)` and `∇f(x)` into `g`, counted once each as scipy counts them.
    fn evaluate(&mut self, x: &W::Vector, g: &mut W::Vector) -> Result<f64, EvalError> {
        self.nfev += 1;
        self.njev += 1;
        self.workspace.value_and_gradient(x, g)
    }

    /// Writes where the iteration's step aims, `x̄`, to `target`: the generalized Cauchy point,
    /// then the subspace step from it (with bounds, or before the first pair; otherwise
    /// [`unbounded_step`]); and the line toward it to `direction`, returning its slope and room
    /// as [`BoxSpace::aim`] does. `None` where the compact form's factorizations fail (pairs
    /// the rounding has made dependent): the memory is to be refreshed, as the Fortran code
    /// does (`formt`'s and `formk`'s "refresh the lbfgs memory and restart the iteration"); an
    /// empty memory never fails.
    fn step_target(
        &mut self,
        x: &W::Vector,
        g: &W::Vector,
        memory: &Memory<W::Vector>,
        buffers: &mut StepBuffers<W::Space>,
        target: &mut W::Vector,
        direction: &mut W::Vector,
    ) -> Result<Option<(f64, f64)>, EvalError> {
        let Some(compact) = Compact::new(memory) else {
            return Ok(None);
        };
        let box_ = self.box_.as_ref();
        let space = self.workspace.space_mut();
        let c = cauchy_point(space, x, g, box_, &compact, buffers)?;
        let cauchy = made(&mut buffers.cauchy, || space.zeros())?;
        if memory.is_empty() {
            std::mem::swap(target, cauchy);
        } else if let Some(box_) = box_ {
            // Only a bounded solve gets here with pairs (else `unbounded_step`).
            let written =
                subspace_step(space, x, g, box_, &compact, buffers, &c, target, direction)?;
            match written {
                None => return Ok(None),
                Some(Target::Aimed(slope, room)) => return Ok(Some((slope, room))),
                Some(Target::Unaimed) => {}
            }
        }
        Ok(Some(space.aim(box_, x, g, target, direction)?))
    }
}

/// The `n`-vectors (and the mask) of the bounded step, kept from one iteration to the next,
/// each made the first time it is needed: made afresh at each iteration, their pages were
/// faulted in again every time, a large share of the step's time.
struct StepBuffers<S: BoxSpace> {
    /// The Cauchy point.
    cauchy: Option<S::Vector>,
    /// When each variable meets its bound along `−g` (0 for one that cannot move, ∞ for one
    /// that never meets one).
    times: Option<S::Vector>,
    /// The projected steepest-descent path's direction: `−g`, 0 where a variable cannot move.
    path: Option<S::Vector>,
    /// Whether each variable is free at the Cauchy point.
    free: Option<S::Mask>,
    /// The subspace step.
    step: Option<S::Vector>,
    /// The breakpoints past the earliest, in order.
    later: S::Later,
}

impl<S: BoxSpace> Default for StepBuffers<S> {
    fn default() -> Self {
        StepBuffers {
            cauchy: None,
            times: None,
            path: None,
            free: None,
            step: None,
            later: S::Later::default(),
        }
    }
}

/// The value `slot` keeps, made by `make` the first time.
fn made<T>(
    slot: &mut Option<T>,
    make: impl FnOnce() -> Result<T, EvalError>,
) -> Result<&mut T, EvalError> {
    let value = match slot.take() {
        Some(value) => value,
        None => make()?,
    };
    Ok(slot.insert(value))
}
