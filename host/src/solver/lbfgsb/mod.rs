//! L-BFGS-B: limited-memory BFGS with box bounds `lower ≤ x ≤ upper` (R. H. Byrd, P. Lu,
//! J. Nocedal and C. Zhu, "A limited memory algorithm for bound constrained optimization",
//! SIAM J. Sci. Comput. 16(5), 1995; the subspace step of J. L. Morales and J. Nocedal's
//! version 3.0, 2011), with scipy's `minimize(method='L-BFGS-B')` semantics: `x0` clipped into
//! the box, the projected gradient's ∞-norm against `gtol` (scipy's `pgtol`), the relative
//! reduction of `f` against `ftol` (`factr·ε`), `maxiter`, `maxfun`, at most 20 evaluations per
//! line search, and scipy's statuses and messages.
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
//! 4. The pair `(s, y)` joins the memory unless `sᵀy ≤ ε·(−gᵀs)`; `θ = yᵀy / sᵀy`.
//!
//! Without bounds the Cauchy point is skipped once pairs exist (every variable is free, as in
//! L-BFGS-B), and the step is L-BFGS's, from the same compact inverse form
//! (`quasi_newton::inverse_coefficients`). Such an iteration makes two passes over the pairs,
//! as L-BFGS's: one takes the new gradient's products with them (the new pair's follow from
//! those and the direction's coefficients), one forms the direction. The pairs and their
//! products are the memory L-BFGS keeps too (`solver::memory`, generic over where its vectors
//! live); the step's other vectors are host vectors here. The small matrices are `2k × 2k`
//! with `k ≤ m`.
//!
//! Here: the driver loop and the line within the box; `cauchy` the path, its breakpoints and
//! the Cauchy point; `compact` the compact form of `B` and the subspace step's correction;
//! `step` the steps' fused passes (the unbounded step, the subspace step and its projection,
//! `aim`, the new pair).

mod cauchy;
mod compact;
mod step;

use super::bounds::Bounds;
use super::line_search::{Accepted, Line, search_in_box};
use super::memory::{DirectionProducts, Memory, Pair, PairProducts};
use super::options::{Options, check_limited_memory_start};
use super::result::{Iterate, OptimizeResult, SolveError, Status};
use crate::linalg::vector;
use crate::objective::{EvalError, GradientError, HostVectors, Objective, gradient_error};
use cauchy::{Breakpoint, cauchy_point, steepest_path};
use compact::Compact;
use std::borrow::Cow;
use std::cmp::Reverse;
use std::ops::ControlFlow;
use step::{Target, aim, new_pair, subspace_step, unbounded_step};

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
    check_limited_memory_start(objective, x0, options)?;
    let n = x0.len();
    let unbounded = Bounds::unbounded(n);
    let bounds = options.bounds.as_ref().unwrap_or(&unbounded);
    bounds.check(n)?;
    let mut solver = Solver {
        objective,
        bounds,
        bounded: bounds.any(),
        nfev: 0,
        njev: 0,
    };
    if !solver.bounded {
        return solver.run(x0, options, observer);
    }
    bounds.confining(
        &mut solver,
        |solver, box_| solver.objective.confine_steps(box_),
        |solver| solver.run(x0, options, observer),
    )
}

/// The objective, the box and the evaluation counts.
struct Solver<'a> {
    objective: &'a mut dyn Objective,
    bounds: &'a Bounds,
    /// Whether any variable has a finite bound (asked once: the answer reads the whole box).
    bounded: bool,
    nfev: usize,
    njev: usize,
}

impl Solver<'_> {
    fn run(
        &mut self,
        x0: &[f64],
        options: &Options,
        observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
    ) -> Result<OptimizeResult, SolveError> {
        let n = x0.len();
        let bounds = self.bounds;
        let mut x: Vec<f64> = x0
            .iter()
            .enumerate()
            .map(|(i, &v)| bounds.clip(i, v))
            .collect();
        let mut g = vec![0.0; n];
        let mut f = self.evaluate(&x, &mut g)?;
        let maxiter = options.maxiter.unwrap_or(MAXITER_DEFAULT);
        let maxfun = options.maxfun.unwrap_or(MAXFUN_DEFAULT);
        let mut memory: Memory<Vec<f64>> = Memory::new(options.memory);
        let mut nit = 0;
        let mut trial = vec![0.0; n];
        let mut trial_g = vec![0.0; n];
        let mut direction = vec![0.0; n];
        let mut target = vec![0.0; n];
        let mut buffers = StepBuffers::default();
        let mut spare = None;
        // f before the last step, for the relative-reduction test.
        let mut previous: Option<f64> = None;
        // The projected gradient's norm at the new point, where the pass that made its
        // Cauchy path took it.
        let mut known_norm = None;
        // scipy's order: its driver's observer and limits, then L-BFGS-B's own tests.
        let status = loop {
            if !f.is_finite() || vector::first_non_finite(&g).is_some() {
                break Status::NanEncountered;
            }
            let projected = known_norm
                .take()
                .unwrap_or_else(|| bounds.projected_gradient_norm(&x, &g));
            if nit > 0 {
                let iterate = Iterate {
                    nit,
                    fun: f,
                    grad_norm: projected,
                    nfev: self.nfev,
                    njev: self.njev,
                    x: &|| Ok(Cow::Borrowed(&x[..])),
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
            // One iteration; a failed line search with pairs in memory empties it and tries
            // again from the same point.
            // The direction's products with the pairs, `[Yᵀd, Sᵀd]`, where the unbounded step
            // formed them.
            let mut direction_products: Option<DirectionProducts>;
            let accepted = loop {
                let box_ = self.bounded.then_some(bounds);
                let (slope, room) = if !self.bounded && !memory.is_empty() {
                    let slope;
                    (slope, direction_products) =
                        unbounded_step(&x, &g, &memory, &mut target, &mut direction);
                    (slope, f64::INFINITY)
                } else {
                    direction_products = None;
                    let aimed = self.step_target(
                        &x,
                        &g,
                        &memory,
                        &mut buffers,
                        &mut target,
                        &mut direction,
                    );
                    let Some(aimed) = aimed else {
                        memory.clear();
                        continue;
                    };
                    aimed
                };
                let found = if slope < 0.0 {
                    // With bounds: 1 at the first iteration, then where the line leaves the box.
                    let step_max = match box_ {
                        Some(_) if nit == 0 => 1.0,
                        _ => room.min(STEP_MAX_FREE),
                    };
                    let initial = if nit == 0 && !bounds.boxed() {
                        (1.0 / vector::norm(&direction, 2.0)).min(step_max)
                    } else {
                        1.0
                    };
                    let mut ray = BoxRay {
                        solver: self,
                        origin: &x,
                        direction: &direction,
                        target: &target,
                        point: &mut trial,
                        gradient: &mut trial_g,
                    };
                    search_in_box(&mut ray, f, slope, initial, step_max)?
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
            // The pair's vectors: those the memory last let go, where it did.
            let (mut s, mut y) = spare.take().unwrap_or_else(|| (vec![0.0; n], vec![0.0; n]));
            let sums = new_pair(step, &direction, &trial_g, &g, &mut s, &mut y);
            // Without bounds the projected gradient is the gradient: its norm came with the
            // pair's pass.
            if !self.bounded {
                known_norm = Some(sums.g_new_max);
            }
            // L-BFGS-B's curvature test: skip a pair with sᵀy ≤ ε·(−gᵀs).
            spare = if sums.sy > f64::EPSILON * -sums.gs {
                // The next Cauchy point's path, from the new point, so that the new pair's
                // pass also takes `Wᵀd` (without bounds the next step needs no path).
                let path = self.bounded.then(|| {
                    known_norm = Some(steepest_path(&trial, &trial_g, bounds, &mut buffers));
                    &buffers.path
                });
                // `s = step·d`: its products with the pairs where `d`'s keep their digits.
                let s_with_held =
                    (direction_products.take()).and_then(|d| d.of_step(step, sums.ss));
                let products = PairProducts {
                    sy: sums.sy,
                    yy: sums.yy,
                    ss: sums.ss,
                    gg: Some(sums.gg),
                };
                let pair = Pair {
                    s,
                    y,
                    products,
                    s_with_held,
                };
                memory.push(&mut HostVectors::new(n), pair, &trial_g, path)?
            } else {
                memory.forget_point();
                Some((s, y))
            };
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
        // As `quasi_newton::run` checks an approximate gradient (none to doubt at gtol = 0).
        let status = if status.success()
            && options.gtol > 0.0
            && jac_error.is_some_and(|e| e.estimate > options.gtol || e.estimate.is_nan())
        {
            Status::PrecisionLoss
        } else {
            status
        };
        Ok(OptimizeResult {
            x,
            fun: f,
            jac: g,
            jac_error,
            hess_inv: None,
            nfev: self.nfev,
            njev: self.njev,
            nit,
            status,
            success: status.success(),
            message: status.message().to_owned(),
        })
    }

    /// The error in the projected gradient at `x` (of `g`), against the objective's reference
    /// gradient projected the same way: what `gtol` was tested on. A variable held on its bound
    /// by both gradients counts 0, however far apart their partials there.
    fn projected_gradient_error(
        &mut self,
        x: &[f64],
        g: &[f64],
    ) -> Result<Option<GradientError>, EvalError> {
        let bounds = self.bounds;
        gradient_error(self.objective, x, |reference| {
            bounds.projected_gradient_difference(x, g, reference)
        })
    }

    /// `f(x)` and `∇f(x)` into `g`, counted once each as scipy counts them.
    fn evaluate(&mut self, x: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        self.nfev += 1;
        self.njev += 1;
        self.objective.value_and_gradient(x, g)
    }

    /// Writes where the iteration's step aims, `x̄`, to `target`: the generalized Cauchy point,
    /// then the subspace step from it (with bounds, or before the first pair; otherwise
    /// [`unbounded_step`]); and the line toward it to `direction`, returning its slope and room
    /// as [`aim`] does. `None` where the compact form's factorizations fail (pairs the
    /// rounding has made dependent): the memory is to be refreshed, as the Fortran code does
    /// (`formt`'s and `formk`'s "refresh the lbfgs memory and restart the iteration"); an empty
    /// memory never fails.
    fn step_target(
        &self,
        x: &[f64],
        g: &[f64],
        memory: &Memory<Vec<f64>>,
        buffers: &mut StepBuffers,
        target: &mut Vec<f64>,
        direction: &mut [f64],
    ) -> Option<(f64, f64)> {
        let compact = Compact::new(memory)?;
        let c = cauchy_point(x, g, self.bounds, &compact, buffers);
        if memory.is_empty() {
            std::mem::swap(target, &mut buffers.cauchy);
        } else {
            // Only a bounded solve gets here with pairs (else `unbounded_step`), so the line's
            // room is the box's.
            let written =
                subspace_step(x, g, self.bounds, &compact, buffers, &c, target, direction)?;
            if let Target::Aimed(slope, room) = written {
                return Some((slope, room));
            }
        }
        Some(aim(
            x,
            g,
            target,
            direction,
            self.bounded.then_some(self.bounds),
        ))
    }
}

/// The `n`-vectors of the bounded step, kept from one iteration to the next: made afresh at
/// each, their pages faulted in again every time (12 700 faults per iteration at n = 10⁶,
/// about a quarter of the step's time).
#[derive(Default)]
struct StepBuffers {
    /// The Cauchy point.
    cauchy: Vec<f64>,
    /// When each variable meets its bound along `−g` (0 for one that cannot move, ∞ for one
    /// that never meets one).
    times: Vec<f64>,
    /// The projected steepest-descent path's direction: `−g`, 0 where a variable cannot move.
    path: Vec<f64>,
    /// Whether each variable is free at the Cauchy point.
    is_free: Vec<bool>,
    /// The subspace step.
    step: Vec<f64>,
    /// The breakpoints, as the storage of a heap.
    breaks: Vec<Reverse<Breakpoint>>,
}

/// `buffer` as `n` values (defaults the first time), for a pass that writes every one of them.
fn sized<T: Clone + Default>(buffer: &mut Vec<T>, n: usize) -> &mut Vec<T> {
    buffer.resize(n, T::default());
    buffer
}

/// The line `x + α·d` within the box: at `α = 1` exactly the target `x̄`, and every point
/// clipped into the box (rounding would otherwise put a point on a bound a hair outside).
struct BoxRay<'r, 's> {
    solver: &'r mut Solver<'s>,
    origin: &'r [f64],
    direction: &'r [f64],
    target: &'r [f64],
    point: &'r mut Vec<f64>,
    gradient: &'r mut Vec<f64>,
}

impl BoxRay<'_, '_> {
    fn move_to(&mut self, step: f64) {
        let bounds = self.solver.bounds;
        let (origin, direction) = (self.origin, self.direction);
        if step == 1.0 {
            self.point.copy_from_slice(self.target);
        } else if !self.solver.bounded {
            // Nothing to clip to: the box's two vectors need no reading.
            vector::update_indexed(self.point, |i, _| origin[i] + step * direction[i]);
        } else {
            vector::update_indexed(self.point, |i, _| {
                bounds.clip(i, origin[i] + step * direction[i])
            });
        }
    }
}

impl Line for BoxRay<'_, '_> {
    fn value(&mut self, step: f64) -> Result<f64, EvalError> {
        self.move_to(step);
        self.solver.nfev += 1;
        self.solver.objective.value(self.point)
    }

    fn slope(&mut self) -> Result<f64, EvalError> {
        self.solver.njev += 1;
        self.solver.objective.gradient(self.point, self.gradient)?;
        Ok(vector::dot(self.gradient, self.direction))
    }

    fn value_and_slope(&mut self, step: f64) -> Result<(f64, f64), EvalError> {
        self.move_to(step);
        let value = self.solver.evaluate(self.point, self.gradient)?;
        Ok((value, vector::dot(self.gradient, self.direction)))
    }
}
