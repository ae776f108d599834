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

use super::bounds::Bounds;
use super::line_search::{Accepted, Line, search_in_box};
use super::memory::{DirectionProducts, Memory, Pair, PairProducts};
use super::options::{Options, check_limited_memory_start};
use super::result::{Iterate, OptimizeResult, SolveError, Status};
use crate::linalg::{self, vector};
use crate::objective::{EvalError, GradientError, HostVectors, Objective, gradient_error};
use ndarray::ArrayView2;
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::{ControlFlow, Range};

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
        let status = if status.success()
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

/// `[Yᵀv, Sᵀv]` for the pairs of `memory`, in one pass.
fn pairs_with(memory: &Memory<Vec<f64>>, v: &[f64]) -> Vec<f64> {
    let columns: Vec<&[f64]> = memory.columns().map(Vec::as_slice).collect();
    let mut out = vec![0.0; columns.len()];
    vector::dots(&columns, &[v], &mut out);
    out
}

/// The compact form of one iteration: `B = θI − W·M·Wᵀ`, `W`'s rows on demand and `M`, the
/// inverse of the middle matrix `[[−D, Lᵀ], [L, θ·SᵀS]]` (`D` the diagonal of `SᵀY`, `L` its
/// strict lower triangle), held as the Cholesky factor of `T = θ·SᵀS + L·D⁻¹·Lᵀ` (Byrd, Lu,
/// Nocedal & Zhu, §4; the Fortran's `formt`), never inverted.
struct Compact<'m> {
    memory: &'m Memory<Vec<f64>>,
    /// The Cholesky factor of `T = θ·SᵀS + L·D⁻¹·Lᵀ`, `k × k` by rows.
    t_factor: Vec<f64>,
}

impl<'m> Compact<'m> {
    /// The compact form of `memory`'s pairs; `None` where `T` is not numerically positive
    /// definite: the memory is to be refreshed, as the Fortran code does.
    fn new(memory: &'m Memory<Vec<f64>>) -> Option<Self> {
        let k = memory.len();
        let t: Vec<f64> = (0..k * k)
            .map(|at| {
                let (i, j) = (at / k, at % k);
                let l_d_lt: f64 = (0..i.min(j))
                    .map(|m| memory.sy(i, m) * memory.sy(j, m) / memory.sy(m, m))
                    .sum();
                memory.theta() * memory.ss(i, j) + l_d_lt
            })
            .collect();
        let t = ArrayView2::from_shape((k, k), &t).ok()?;
        Some(Compact {
            memory,
            t_factor: linalg::cholesky(t).ok()?,
        })
    }

    /// `2k`.
    fn width(&self) -> usize {
        2 * self.memory.len()
    }

    fn theta(&self) -> f64 {
        self.memory.theta()
    }

    /// `W`'s column `j` over the pair vector it is made of ([`Memory::columns`]): 1 for a `y`,
    /// `θ` for an `s`.
    fn column_scale(&self, j: usize) -> f64 {
        if j < self.memory.len() {
            1.0
        } else {
            self.theta()
        }
    }

    /// `W`'s columns scaled by `coefficients` (`2k`): `(cⱼ, yⱼ)`, then `(θ·c_{k+j}, sⱼ)`, so
    /// that `Σ cᵢ·vᵢ` over them is `W·coefficients`.
    fn columns<'c>(&'c self, coefficients: &'c [f64]) -> impl Iterator<Item = (f64, &'c [f64])> {
        let pairs = self.memory.columns().zip(coefficients).enumerate();
        pairs.map(|(j, (v, &c))| (self.column_scale(j) * c, v.as_slice()))
    }

    /// `Wᵀv` (`2k`): `[yⱼᵀv …, θ·sⱼᵀv …]`, in one pass.
    fn w_transpose(&self, v: &[f64]) -> Vec<f64> {
        self.w_products(&pairs_with(self.memory, v))
    }

    /// `Wᵀg` for the current gradient `g`: from the products the newest pair's pass took with
    /// it, where it took them for this point.
    fn w_gradient(&self, g: &[f64]) -> Vec<f64> {
        match self.memory.known_pairs_dot() {
            Some(known) => self.w_products(known),
            None => self.w_transpose(g),
        }
    }

    /// `Wᵀv` from `[Yᵀv, Sᵀv]` as a pair's pass made them (`2k`).
    fn w_products(&self, products: &[f64]) -> Vec<f64> {
        let scaled = products.iter().enumerate();
        scaled.map(|(j, p)| p * self.column_scale(j)).collect()
    }

    /// Row `i` of `W = [Y  θS]` into `w`.
    fn w_row(&self, i: usize, w: &mut [f64]) {
        let k = self.memory.len();
        for j in 0..k {
            w[j] = self.memory.y(j)[i];
            w[k + j] = self.theta() * self.memory.s(j)[i];
        }
    }

    /// `WᵀW = [[YᵀY, θ·YᵀS], [θ·SᵀY, θ²·SᵀS]]`, `2k × 2k`, from the kept products.
    fn gram(&self) -> Vec<f64> {
        let width = self.width();
        let mut gram = self.memory.pair_gram();
        for (at, entry) in gram.iter_mut().enumerate() {
            *entry *= self.column_scale(at / width) * self.column_scale(at % width);
        }
        gram
    }

    /// `M·v`: `[a; b]` solving `[[−D, Lᵀ], [L, θ·SᵀS]]·[a; b] = v`, by block elimination:
    /// `b = T⁻¹·(v₂ + L·D⁻¹·v₁)`, `a = D⁻¹·(Lᵀ·b − v₁)` (the Fortran's `bmv`).
    fn m_times(&self, v: &[f64]) -> Vec<f64> {
        let memory = self.memory;
        let k = memory.len();
        let (v1, v2) = v.split_at(k);
        let sy = |i: usize, j: usize| memory.sy(i, j);
        let mut b: Vec<f64> = (0..k)
            .map(|i| v2[i] + (0..i).map(|j| sy(i, j) * v1[j] / sy(j, j)).sum::<f64>())
            .collect();
        linalg::cholesky_solve(&self.t_factor, &mut b);
        let mut ab: Vec<f64> = (0..k)
            .map(|i| ((i + 1..k).map(|j| sy(j, i) * b[j]).sum::<f64>() - v1[i]) / sy(i, i))
            .collect();
        ab.extend(b);
        ab
    }
}

/// Breakpoints and the projected steepest-descent path at `(x, g)`, into `buffers.times` (when
/// each variable meets its bound along `−g`) and `buffers.path` (`−g`, 0 where a variable
/// cannot move); returns the projected gradient's ∞-norm there, taken in the same pass (the
/// value of [`Bounds::projected_gradient_norm`]).
fn steepest_path(x: &[f64], g: &[f64], bounds: &Bounds, buffers: &mut StepBuffers) -> f64 {
    let n = x.len();
    let times = sized(&mut buffers.times, n);
    let d = sized(&mut buffers.path, n);
    let kernel = |((times, d), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
        let mut norm = 0.0;
        for ((t, d), i) in times.iter_mut().zip(d).zip(range) {
            *t = bounds.breakpoint(i, x[i], g[i]);
            *d = if *t > 0.0 { -g[i] } else { 0.0 };
            norm = f64::max(norm, bounds.projected(i, x[i], g[i]).abs());
        }
        norm
    };
    let norms = |blocks: Vec<f64>| blocks.into_iter().fold(0.0, f64::max);
    vector::blockwise(((&mut times[..], &mut d[..]), 0..n), kernel, norms)
}

/// The generalized Cauchy point (Byrd et al., Algorithm CP), written to `buffers.cauchy`, and
/// `c = Wᵀ(x_cp − x)`. The path is `buffers.path` where the memory took its products for this
/// point, else made here.
fn cauchy_point(
    x: &[f64],
    g: &[f64],
    bounds: &Bounds,
    compact: &Compact<'_>,
    buffers: &mut StepBuffers,
) -> Vec<f64> {
    let n = x.len();
    let width = compact.width();
    let theta = compact.theta();
    // The path and `Wᵀd`: from the pass that took in the newest pair, where it took them for
    // this point.
    let mut p = match compact.memory.pairs_dot_path() {
        Some(products) => compact.w_products(products),
        None => {
            steepest_path(x, g, bounds, buffers);
            compact.w_transpose(&buffers.path)
        }
    };
    let cauchy = sized(&mut buffers.cauchy, n);
    vector::update_indexed(cauchy, |i, _| x[i]);
    let (times, d) = (&buffers.times, &mut buffers.path);
    let mut w = vec![0.0; width];
    let mut c = vec![0.0; width];
    let mut slope = -vector::dot(d, d);
    let mut curvature = -theta * slope - vector::dot(&p, &compact.m_times(&p));
    let curvature_floor = f64::EPSILON * curvature;
    if slope == 0.0 || curvature <= 0.0 {
        return c;
    }
    let mut breaks = Breakpoints::new(times, std::mem::take(&mut buffers.breaks));
    let mut step_to_minimum = -slope / curvature;
    let mut t_old = 0.0;
    // Whether the path passed every breakpoint: only then may it have no direction left.
    let mut passed_all = true;
    while let Some(Breakpoint(t, b)) = breaks.pop() {
        let dt = t - t_old;
        if step_to_minimum < dt {
            passed_all = false;
            break;
        }
        let bound = if d[b] > 0.0 {
            bounds.upper[b]
        } else {
            bounds.lower[b]
        };
        cauchy[b] = bound;
        let z = bound - x[b];
        for (cj, pj) in c.iter_mut().zip(&p) {
            *cj += dt * pj;
        }
        compact.w_row(b, &mut w);
        let mw = compact.m_times(&w);
        let gb = g[b];
        slope += dt * curvature + gb * gb + theta * gb * z - gb * vector::dot(&mw, &c);
        curvature -=
            theta * gb * gb + 2.0 * gb * vector::dot(&mw, &p) + gb * gb * vector::dot(&mw, &w);
        curvature = curvature.max(curvature_floor);
        for (pj, wj) in p.iter_mut().zip(&w) {
            *pj += gb * wj;
        }
        d[b] = 0.0;
        step_to_minimum = -slope / curvature;
        t_old = t;
        if slope >= 0.0 {
            step_to_minimum = 0.0;
            break;
        }
    }
    // Every variable at a bound: the path ends there (the model's minimum along it is moot).
    let step_to_minimum = if passed_all && vector::max_abs(d) == 0.0 {
        0.0
    } else {
        step_to_minimum.max(0.0)
    };
    let t = t_old + step_to_minimum;
    vector::update_indexed(
        cauchy,
        |i, at| if d[i] != 0.0 { x[i] + t * d[i] } else { at },
    );
    for (cj, pj) in c.iter_mut().zip(&p) {
        *cj += step_to_minimum * pj;
    }
    buffers.breaks = breaks.into_storage();
    c
}

/// How many of the earliest breakpoints one parallel pass picks out: the path usually stops
/// after a few, at the model's minimum along it.
const EARLY_BREAKPOINTS: usize = 64;

/// The breakpoints in the order the path meets them: the earliest [`EARLY_BREAKPOINTS`] from one
/// pass on every core, then, only where the path goes on past them, a heap of the rest (built
/// in O(n), in storage kept from one iteration to the next). Sorting them all cost n·log n an
/// iteration; a heap of them all, built every iteration, was the step's largest serial part.
struct Breakpoints<'t> {
    times: &'t [f64],
    /// The earliest, the latest of them first (taken from the end).
    early: Vec<Breakpoint>,
    /// The latest of the earliest: the rest come after it.
    last_early: Option<Breakpoint>,
    /// Whether there are more than `early` held.
    more: bool,
    /// The rest, once the path has passed the earliest.
    rest: Option<BinaryHeap<Reverse<Breakpoint>>>,
    storage: Vec<Reverse<Breakpoint>>,
}

impl<'t> Breakpoints<'t> {
    /// The breakpoints of `times`: each variable's finite positive time to its bound.
    fn new(times: &'t [f64], storage: Vec<Reverse<Breakpoint>>) -> Self {
        let (mut early, total) =
            vector::smallest_indexed(times.len(), EARLY_BREAKPOINTS, |i| breakpoint(times, i));
        let more = total > early.len();
        let last_early = early.last().copied();
        early.reverse();
        Breakpoints {
            times,
            early,
            last_early,
            more,
            rest: None,
            storage,
        }
    }

    /// The next breakpoint the path meets.
    fn pop(&mut self) -> Option<Breakpoint> {
        if self.rest.is_none() {
            let next = self.early.pop();
            if next.is_some() || !self.more {
                return next;
            }
            // Past the earliest: the breakpoints after the last of them.
            let mut storage = std::mem::take(&mut self.storage);
            storage.clear();
            let last = self.last_early;
            storage.extend(
                (0..self.times.len())
                    .filter_map(|i| breakpoint(self.times, i))
                    .filter(|&b| Some(b) > last)
                    .map(Reverse),
            );
            self.rest = Some(BinaryHeap::from(storage));
        }
        self.rest.as_mut()?.pop().map(|Reverse(b)| b)
    }

    /// The storage, for the next iteration's heap.
    fn into_storage(self) -> Vec<Reverse<Breakpoint>> {
        self.rest.map_or(self.storage, BinaryHeap::into_vec)
    }
}

/// Variable `i`'s breakpoint, where it meets one along the path (a finite positive time).
fn breakpoint(times: &[f64], i: usize) -> Option<Breakpoint> {
    let t = times[i];
    (t > 0.0 && t.is_finite()).then_some(Breakpoint(t, i))
}

/// A variable's breakpoint `t` (along the Cauchy path, or the fraction of the subspace step
/// that meets its bound) and its index, ordered by `t`, then by index (`total_cmp`: the
/// breakpoints are never NaN).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Breakpoint(f64, usize);

impl Eq for Breakpoint {}

impl PartialOrd for Breakpoint {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Breakpoint {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// The coefficients `v` of the subspace step's correction: `d = −r/θ − W·v` over the free
/// variables, `v = K⁻¹·WᵀZ·r/θ²`, `K = [[−D, Lᵀ], [L, θ·SᵀS]] − WᵀZ·ZᵀW/θ` (Sherman–Morrison–
/// Woodbury on the reduced model, with the middle matrix itself rather than its inverse), from
/// `wz_r = WᵀZ·r`, `free_gram = WᵀZ·ZᵀW` and `bound_gram = WᵀA·AᵀW` (`A` the variables at a
/// bound). `K` is solved as the Fortran's `formk` factors it: its leading block is `−P`,
/// `P = D + YᵀZ·ZᵀY/θ` positive definite, and the Schur complement
/// `θ·SᵀA·AᵀS + Cᵀ·P⁻¹·C` (`C` the off-diagonal block) is positive definite too, so two
/// Cholesky factorizations, where forming `I − M·WᵀZ·ZᵀW/θ` from an inverted middle matrix
/// lost every digit on a badly scaled problem. `None` where either is not numerically positive
/// definite (the memory is to be refreshed).
fn correction(
    compact: &Compact<'_>,
    wz_r: &[f64],
    free_gram: &[f64],
    bound_gram: &[f64],
) -> Option<Vec<f64>> {
    let memory = compact.memory;
    let (k, theta) = (memory.len(), compact.theta());
    let width = 2 * k;
    let free = |a: usize, b: usize| free_gram[a * width + b] / theta;
    let sy = |i: usize, j: usize| memory.sy(i, j);
    let square = |f: &dyn Fn(usize, usize) -> f64| -> Vec<f64> {
        (0..k * k).map(|at| f(at / k, at % k)).collect()
    };
    let factor = |m: Vec<f64>| {
        let view = ArrayView2::from_shape((k, k), &m).ok()?;
        linalg::cholesky(view).ok()
    };
    // P = D + YᵀZ·ZᵀY/θ; C = Lᵀ − YᵀZ·ZᵀS (W's S half is θS); the last block θ·SᵀA·AᵀS.
    let p_factor = factor(square(&|i, j| {
        free(i, j) + if i == j { sy(i, i) } else { 0.0 }
    }))?;
    let c = square(&|i, j| if j > i { sy(j, i) } else { 0.0 } - free(i, k + j));
    // P⁻¹·C, a column at a time.
    let mut p_inv_c = vec![0.0; k * k];
    for j in 0..k {
        let mut column: Vec<f64> = (0..k).map(|i| c[i * k + j]).collect();
        linalg::cholesky_solve(&p_factor, &mut column);
        for (i, value) in column.into_iter().enumerate() {
            p_inv_c[i * k + j] = value;
        }
    }
    let schur = square(&|i, j| {
        bound_gram[(k + i) * width + k + j] / theta
            + (0..k)
                .map(|m| c[m * k + i] * p_inv_c[m * k + j])
                .sum::<f64>()
    });
    let schur_factor = factor(schur)?;
    // K·[a; b] = [r₁; r₂]: b = Schur⁻¹·(r₂ + Cᵀ·P⁻¹·r₁), a = P⁻¹·(C·b − r₁).
    let scale = theta * theta;
    let (r1, r2): (Vec<f64>, Vec<f64>) = (
        wz_r[..k].iter().map(|r| r / scale).collect(),
        wz_r[k..].iter().map(|r| r / scale).collect(),
    );
    let mut p_inv_r1 = r1.clone();
    linalg::cholesky_solve(&p_factor, &mut p_inv_r1);
    let mut b: Vec<f64> = (0..k)
        .map(|i| r2[i] + (0..k).map(|m| c[m * k + i] * p_inv_r1[m]).sum::<f64>())
        .collect();
    linalg::cholesky_solve(&schur_factor, &mut b);
    let mut a: Vec<f64> = (0..k)
        .map(|i| vector::dot(&c[i * k..(i + 1) * k], &b) - r1[i])
        .collect();
    linalg::cholesky_solve(&p_factor, &mut a);
    Some(a.into_iter().chain(b).collect())
}

/// Without bounds, with pairs: every variable free and the Cauchy point `x` itself, so the
/// subspace step is the quasi-Newton step `d = −H·g`, `H = B⁻¹` (as the Fortran code skips the
/// Cauchy point there). It is formed as L-BFGS forms it, from the compact inverse form
/// ([`quasi_newton::inverse_coefficients`]: triangular solves with `R`, the upper triangle of
/// `SᵀY`), which needs no factorization, rather than by Sherman–Morrison–Woodbury on `B` (the
/// bounded step's route; with the middle matrix inverted by Gauss–Jordan, as it once was, that
/// lost every digit on Brown's badly scaled function, mgh-4, stopping at f = 1.9·10¹¹ after 65
/// iterations where scipy and L-BFGS reach 10⁻¹⁵ in 13). Writes `d = −γg − S·w + γY·u`
/// (`γ = 1/θ`) to `direction` and `x̄ = x + d` to `target`, and returns its slope `gᵀd`, in one
/// pass over the pairs ([`aim`]'s arithmetic without its pass), and, where `Sᵀg` and `Yᵀg`
/// came from the pairs' pass, the direction's products with the pairs, from the pairs' own
/// ([`DirectionProducts`]).
fn unbounded_step(
    x: &[f64],
    g: &[f64],
    memory: &Memory<Vec<f64>>,
    target: &mut [f64],
    direction: &mut [f64],
) -> (f64, Option<DirectionProducts>) {
    let with_g = match memory.known_pairs_dot() {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(pairs_with(memory, g)),
    };
    let step = memory.inverse_step(&with_g);
    let mut terms: Vec<(f64, &[f64])> = vec![(-step.gamma, g)];
    terms.extend((step.coefficients.iter().copied()).zip(memory.columns().map(Vec::as_slice)));
    let kernel = |((d, target), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
        vector::combine_block(&terms, d, range.clone());
        for ((t, &d), i) in target.iter_mut().zip(&*d).zip(range.clone()) {
            *t = x[i] + d;
        }
        vector::serial_dot(&g[range], d)
    };
    let len = target.len();
    let slope = vector::blockwise(((direction, target), 0..len), kernel, vector::sum_of);
    (slope, memory.direction_products(&step))
}

/// How [`subspace_step`] left its target.
enum Target {
    /// Aimed at in the pass that wrote it: the line toward it is in `direction`, with its
    /// slope and room, [`aim`]'s bits.
    Aimed(f64, f64),
    /// Written without the line ([`aim`] is to make it): the Cauchy point, or a truncated step.
    Unaimed,
}

/// The subspace step from the Cauchy point `buffers.cauchy` (the direct primal method, with
/// version 3.0's projection), written to `target`: the model's minimizer over the variables
/// free at the Cauchy point, projected into the box, or truncated at the first bound where the
/// projection is not a descent direction. The projection's pass also aims at it (`direction`,
/// as [`aim`]), which is final where it is a descent direction. `None` where the
/// [`correction`] cannot be formed.
#[allow(clippy::too_many_arguments)]
fn subspace_step(
    x: &[f64],
    g: &[f64],
    bounds: &Bounds,
    compact: &Compact<'_>,
    buffers: &mut StepBuffers,
    c: &[f64],
    target: &mut [f64],
    direction: &mut [f64],
) -> Option<Target> {
    let (n, width, theta) = (x.len(), compact.width(), compact.theta());
    let cauchy = &buffers.cauchy;
    // The variables strictly inside their bounds at the Cauchy point, as a mask of bytes that
    // the vector passes read, and how many, in one pass.
    let is_free = sized(&mut buffers.is_free, n);
    let kernel = |(is_free, range): (&mut [bool], Range<usize>)| {
        for (free, i) in is_free.iter_mut().zip(range) {
            *free = bounds.lower[i] < cauchy[i] && cauchy[i] < bounds.upper[i];
        }
        is_free.iter().filter(|&&free| free).count()
    };
    let free = vector::blockwise((&mut is_free[..], 0..n), kernel, |counts| {
        counts.iter().sum()
    });
    let is_free = &buffers.is_free;
    if free == 0 {
        target.copy_from_slice(cauchy);
        return Some(Target::Unaimed);
    }
    // The reduced gradient r = Zᵀ(u − W·M·c), u = g + θ(x_cp − x), is never formed: the
    // correction needs WᵀZ·r = WᵀZ·u − ZᵀW·WᵀZ·M·c, and the step is −r/θ − W·v. WᵀZ·u and
    // ZᵀW·WᵀZ are sums over the free rows: taken over them where they are at most half, else
    // as the sums over every row less those over the rows at a bound. Over every row they need
    // no pass: Wᵀu = Wᵀg + θ·c, and WᵀW comes from the pairs' products.
    let direct = 2 * free <= n;
    let ones = vec![1.0; width];
    let columns: Vec<(f64, &[f64])> = compact.columns(&ones).collect();
    let u = [(1.0, g), (theta, &cauchy[..]), (-theta, x)];
    let (kept_gram, kept_u) = vector::masked_gram(&columns, is_free, direct, &u);
    // The Gram matrices over the free rows and over the rows at a bound: one is the kept one,
    // the other the whole less it (the correction needs both).
    let gram = compact.gram();
    let rest: Vec<f64> = (gram.iter().zip(&kept_gram))
        .map(|(all, kept)| all - kept)
        .collect();
    let (wz_zw, bound_gram, wz_u) = if direct {
        (kept_gram, rest, kept_u)
    } else {
        let wg = compact.w_gradient(g);
        let wz_u = (wg.iter().zip(c).zip(&kept_u)).map(|((wg, c), kept)| wg + theta * c - kept);
        (rest, kept_gram, wz_u.collect())
    };
    let mc = compact.m_times(c);
    let wz_r: Vec<f64> = (0..width)
        .map(|a| wz_u[a] - vector::dot(&wz_zw[a * width..(a + 1) * width], &mc))
        .collect();
    let v = correction(compact, &wz_r, &wz_zw, &bound_gram)?;
    // The step over the free variables: −r/θ − W·v = −u/θ + W·(M·c/θ − v).
    let coefficients: Vec<f64> = mc.iter().zip(&v).map(|(mc, v)| mc / theta - v).collect();
    let mut terms: Vec<(f64, &[f64])> = vec![(-1.0 / theta, g), (-1.0, cauchy), (1.0, x)];
    terms.extend(compact.columns(&coefficients));
    // The step, its projection into the box from the Cauchy point, and the line toward the
    // projection (`aim`'s work: one pass less where the projection is kept), in one pass.
    let step = sized(&mut buffers.step, n);
    type Parts<'a> = (
        ((&'a mut [f64], &'a mut [f64]), &'a mut [f64]),
        Range<usize>,
    );
    let kernel = |(((step, projected), direction), range): Parts<'_>| {
        vector::combine_block(&terms, step, range.clone());
        for ((p, &s), i) in projected.iter_mut().zip(&*step).zip(range.clone()) {
            *p = if is_free[i] {
                bounds.clip(i, cauchy[i] + s)
            } else {
                cauchy[i]
            };
        }
        aim_block(x, g, projected, direction, Some(bounds), range)
    };
    let (slope, room) = vector::blockwise(
        (((&mut step[..], &mut target[..]), direction), 0..n),
        kernel,
        slope_and_room,
    );
    if slope <= 0.0 {
        return Some(Target::Aimed(slope, room));
    }
    let (step, projected) = (&buffers.step, target);
    // Truncate at the first bound the step meets: the smallest reach below 1 (the lowest
    // index among equals), from one pass on every core.
    let reach = |i: usize| {
        let reach = if is_free[i] {
            bounds.room(i, cauchy[i], step[i]).min(1.0)
        } else {
            1.0
        };
        (reach < 1.0).then_some(Breakpoint(reach, i))
    };
    let (met, _) = vector::smallest_indexed(n, 1, reach);
    let (alpha, first) = met
        .first()
        .map_or((1.0, None), |&Breakpoint(reach, i)| (reach, Some(i)));
    vector::update_indexed(projected, |i, _| {
        if !is_free[i] {
            cauchy[i]
        } else if first == Some(i) {
            if step[i] > 0.0 {
                bounds.upper[i]
            } else {
                bounds.lower[i]
            }
        } else {
            cauchy[i] + alpha * step[i]
        }
    });
    Some(Target::Unaimed)
}

/// The line toward the step's target `x̄`: `d ← x̄ − x`, its slope `gᵀd` (the bits of
/// [`vector::dot`]) and, within `bounds`, the multiple of `d` at which it first leaves the box
/// (`∞`: never), in one pass.
fn aim(
    x: &[f64],
    g: &[f64],
    target: &[f64],
    direction: &mut [f64],
    bounds: Option<&Bounds>,
) -> (f64, f64) {
    let kernel = |(d, range): (&mut [f64], Range<usize>)| {
        let block_target = &target[range.clone()];
        aim_block(x, g, block_target, d, bounds, range)
    };
    let len = direction.len();
    vector::blockwise((direction, 0..len), kernel, slope_and_room)
}

/// [`aim`] over the block `range` of the vectors, whose part of `target` and `direction` are
/// `target` and `direction`: the block's slope and room.
fn aim_block(
    x: &[f64],
    g: &[f64],
    target: &[f64],
    direction: &mut [f64],
    bounds: Option<&Bounds>,
    range: Range<usize>,
) -> (f64, f64) {
    for ((d, &t), i) in direction.iter_mut().zip(target).zip(range.clone()) {
        *d = t - x[i];
    }
    let room = bounds.map_or(f64::INFINITY, |b| {
        (range.clone().zip(direction.iter()))
            .map(|(i, &d)| b.room(i, x[i], d))
            .fold(f64::INFINITY, f64::min)
    });
    (vector::serial_dot(&g[range], direction), room)
}

/// The blocks' slopes and rooms as one: the slope as [`vector::dot`] adds them, the least room.
fn slope_and_room(blocks: Vec<(f64, f64)>) -> (f64, f64) {
    let slope = vector::sum_of(blocks.iter().map(|&(slope, _)| slope).collect());
    let room = blocks
        .iter()
        .map(|&(_, room)| room)
        .fold(f64::INFINITY, f64::min);
    (slope, room)
}

/// What [`new_pair`] sums (each product the bits of [`vector::dot`]).
#[derive(Clone, Copy, Debug)]
struct PairSums {
    sy: f64,
    yy: f64,
    ss: f64,
    /// `gᵀs`, the step's slope.
    gs: f64,
    /// `g₊ᵀg₊`.
    gg: f64,
    /// `‖g₊‖∞`.
    g_new_max: f64,
}

/// The new pair from the step `step·d` that took the gradient from `g` to `g_new`:
/// `s ← step·d` and `y ← g_new − g`, with their products, in one pass.
fn new_pair(
    step: f64,
    d: &[f64],
    g_new: &[f64],
    g: &[f64],
    s: &mut [f64],
    y: &mut [f64],
) -> PairSums {
    let kernel = |((s, y), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
        let mut g_new_max = 0.0;
        for ((s, y), i) in s.iter_mut().zip(y.iter_mut()).zip(range.clone()) {
            *s = step * d[i];
            *y = g_new[i] - g[i];
            g_new_max = f64::max(g_new_max, g_new[i].abs());
        }
        let g_new = &g_new[range.clone()];
        let [sy, yy] = vector::serial_dots_of([&*s, &*y], y);
        let [ss, gs] = vector::serial_dots_of([&*s, &g[range]], s);
        [sy, yy, ss, gs, vector::serial_dot(g_new, g_new), g_new_max]
    };
    let len = d.len();
    vector::blockwise(((s, y), 0..len), kernel, |blocks| {
        let sum = |k: usize| vector::sum_of(blocks.iter().map(|sums| sums[k]).collect());
        let max = blocks.iter().map(|sums| sums[5]).fold(0.0, f64::max);
        [sum(0), sum(1), sum(2), sum(3), sum(4), max]
    })
    .into()
}

impl From<[f64; 6]> for PairSums {
    fn from([sy, yy, ss, gs, gg, g_new_max]: [f64; 6]) -> Self {
        PairSums {
            sy,
            yy,
            ss,
            gs,
            gg,
            g_new_max,
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The breakpoints come out in order of time, then index, past the earliest few too, and
    /// without the variables that never meet a bound (time 0 or ∞); ties and all. Long enough
    /// to be picked out on every core.
    #[test]
    fn breakpoints_come_in_the_order_the_path_meets_them() {
        let n = 3 * vector::PARALLEL_MIN_LEN + 5;
        let times: Vec<f64> = (0..n)
            .map(|i| match i % 7 {
                0 => 0.0,
                1 => f64::INFINITY,
                _ => ((i * 7919) % 4099) as f64 * 0.25,
            })
            .collect();
        let mut expected: Vec<Breakpoint> = (0..n).filter_map(|i| breakpoint(&times, i)).collect();
        expected.sort();
        for storage in [Vec::new(), vec![Reverse(Breakpoint(1.0, 3)); 5]] {
            let mut breaks = Breakpoints::new(&times, storage);
            let met: Vec<Breakpoint> = std::iter::from_fn(|| breaks.pop()).collect();
            assert_eq!(met.len(), expected.len());
            assert!(met == expected, "out of order");
            assert!(met.len() > EARLY_BREAKPOINTS && met[0].0 > 0.0);
        }
    }

    /// The middle matrix `[[−D, Lᵀ], [L, θ·SᵀS]]` of `memory`, `2k × 2k` by rows.
    fn middle(memory: &Memory<Vec<f64>>) -> Vec<f64> {
        let k = memory.len();
        let width = 2 * k;
        let mut middle = vec![0.0; width * width];
        for i in 0..k {
            for j in 0..k {
                middle[i * width + j] = if i == j { -memory.sy(i, i) } else { 0.0 };
                middle[i * width + k + j] = if j > i { memory.sy(j, i) } else { 0.0 };
                middle[(k + i) * width + j] = if i > j { memory.sy(i, j) } else { 0.0 };
                middle[(k + i) * width + k + j] = memory.theta() * memory.ss(i, j);
            }
        }
        middle
    }

    /// `a·v` for a square `a` by rows.
    fn times(a: &[f64], v: &[f64]) -> Vec<f64> {
        a.chunks(v.len()).map(|row| vector::dot(row, v)).collect()
    }

    /// A memory of `count` pairs `(s, y)` made by `pair(t)`, pushed with every product
    /// taken directly.
    fn memory_of(
        capacity: usize,
        count: usize,
        pair: impl Fn(usize) -> (Vec<f64>, Vec<f64>),
    ) -> Memory<Vec<f64>> {
        let mut memory = Memory::new(capacity);
        for t in 0..count {
            let (s, y) = pair(t);
            let g: Vec<f64> = (0..s.len()).map(|i| (i as f64 * 0.3).cos()).collect();
            let products = PairProducts {
                sy: vector::dot(&s, &y),
                yy: vector::dot(&y, &y),
                ss: vector::dot(&s, &s),
                gg: Some(vector::dot(&g, &g)),
            };
            let pair = Pair {
                s,
                y,
                products,
                s_with_held: None,
            };
            let mut space = HostVectors::new(g.len());
            memory.push(&mut space, pair, &g, None).unwrap();
        }
        memory
    }

    /// `M·v` solves the middle matrix's system, and the correction `K`'s, on pairs of a
    /// convex quadratic with curvatures spread over six orders of magnitude: each solution
    /// put back into its matrix gives the right-hand side to 1e-9 of the terms' size.
    #[test]
    fn the_compact_forms_solves_hold() {
        let n = 40;
        let curvature: Vec<f64> = (0..n)
            .map(|i| 10f64.powf(6.0 * i as f64 / n as f64))
            .collect();
        let memory = memory_of(5, 7, |pair| {
            let s: Vec<f64> = (0..n)
                .map(|i| ((pair * n + i) as f64 * 0.61).sin())
                .collect();
            let y = s.iter().zip(&curvature).map(|(s, c)| s * c).collect();
            (s, y)
        });
        let compact = Compact::new(&memory).expect("positive definite");
        let (width, theta) = (compact.width(), compact.theta());
        let middle = middle(&memory);
        let v: Vec<f64> = (0..width).map(|i| (i as f64 * 1.7).sin()).collect();
        let back = times(&middle, &compact.m_times(&v));
        for (b, v) in back.iter().zip(&v) {
            assert!((b - v).abs() <= 1e-9, "M·v: {b} vs {v}");
        }
        // Every third variable at a bound.
        let mut free_gram = vec![0.0; width * width];
        let mut bound_gram = vec![0.0; width * width];
        let mut row = vec![0.0; width];
        for i in 0..n {
            compact.w_row(i, &mut row);
            let gram = if i % 3 == 0 {
                &mut bound_gram
            } else {
                &mut free_gram
            };
            for a in 0..width {
                for b in 0..width {
                    gram[a * width + b] += row[a] * row[b];
                }
            }
        }
        let correction = correction(&compact, &v, &free_gram, &bound_gram).unwrap();
        let k_matrix: Vec<f64> = (middle.iter().zip(&free_gram))
            .map(|(m, f)| m - f / theta)
            .collect();
        let back = times(&k_matrix, &correction);
        let abs = |v: &[f64]| v.iter().map(|v| v.abs()).collect::<Vec<f64>>();
        let size = times(&abs(&k_matrix), &abs(&correction));
        for ((b, v), size) in back.iter().zip(&v).zip(&size) {
            let expected = v / (theta * theta);
            assert!(
                (b - expected).abs() <= 1e-9 * size,
                "K·v: {b} vs {expected}"
            );
        }
    }

    /// `gram`, from the kept products, is `WᵀW` summed over `W`'s rows, past a dropped pair.
    #[test]
    fn the_gram_matrix_is_w_transpose_w() {
        let n = 37;
        let memory = memory_of(4, 9, |pair| {
            let s = (0..n)
                .map(|i| ((pair * n + i) as f64 * 0.37).sin())
                .collect();
            let y = (0..n)
                .map(|i| ((pair * n + i) as f64 * 0.11).cos() + 2.0)
                .collect();
            (s, y)
        });
        // Pairs of any sign: the Gram matrix needs no factor.
        let compact = Compact {
            memory: &memory,
            t_factor: Vec::new(),
        };
        let (gram, width) = (compact.gram(), compact.width());
        let mut row = vec![0.0; width];
        let mut from_rows = vec![0.0; width * width];
        for i in 0..n {
            compact.w_row(i, &mut row);
            for p in 0..width {
                for q in 0..width {
                    from_rows[p * width + q] += row[p] * row[q];
                }
            }
        }
        for (x, y) in gram.iter().zip(&from_rows) {
            assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{x} vs {y}");
        }
    }
}
