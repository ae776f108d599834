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
//!    `2k × 2k` middle matrix), in `O(k)` per breakpoint.
//! 2. **Subspace minimization** over the variables the Cauchy point left free: the model's
//!    Newton step there (by Sherman–Morrison–Woodbury on the reduced `B`), projected into the
//!    box; where that projection is not a descent direction, the step truncated at the first
//!    bound instead (version 3.0's rule).
//! 3. **Line search** along `d = x̄ − x` (Moré–Thuente with `c1 = 10⁻³`, `c2 = 0.9`,
//!    `xtol = 0.1`), never past the box (`stpmax`); a step where the search stops on one of its
//!    warnings is taken, as L-BFGS-B takes it. A failed search restarts from an empty memory,
//!    and ends the solve (status 2) when the memory was already empty.
//! 4. The pair `(s, y)` joins the memory unless `sᵀy ≤ ε·(−gᵀs)`; `θ = yᵀy / sᵀy`.
//!
//! Without bounds the Cauchy point is skipped once pairs exist (every variable is free, as in
//! L-BFGS-B), and the step is the L-BFGS step of the compact form. Vectors are host vectors;
//! the small matrices are `2k × 2k` with `k ≤ m`.

use super::bounds::Bounds;
use super::line_search::{Accepted, Line, search_in_box};
use super::options::{Options, check_limited_memory_start};
use super::result::{Iterate, OptimizeResult, SolveError, Status};
use crate::linalg::vector;
use crate::objective::{EvalError, GradientError, Objective, gradient_error};
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
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
        let mut memory = Memory::new(options.memory);
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
            let accepted = loop {
                let box_ = self.bounded.then_some(bounds);
                let (slope, room) = if !self.bounded && !memory.is_empty() {
                    let compact = memory.compact();
                    let slope = unbounded_step(&x, &g, &compact, &mut target, &mut direction);
                    (slope, f64::INFINITY)
                } else {
                    self.step_target(&x, &g, &memory, &mut buffers, &mut target);
                    aim(&x, &g, &target, &mut direction, box_)
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
            let [sy, gs, yy, g_new_max] = new_pair(step, &direction, &trial_g, &g, &mut s, &mut y);
            // Without bounds the projected gradient is the gradient: its norm came with the
            // pair's pass.
            if !self.bounded {
                known_norm = Some(g_new_max);
            }
            // L-BFGS-B's curvature test: skip a pair with sᵀy ≤ ε·(−gᵀs).
            spare = if sy > f64::EPSILON * -gs {
                // The next Cauchy point's path, from the new point, so that the new pair's
                // pass also takes `Wᵀd` (without bounds the next step needs no path).
                let path = self.bounded.then(|| {
                    known_norm = Some(steepest_path(&trial, &trial_g, bounds, &mut buffers));
                    buffers.path.as_slice()
                });
                memory.push(s, y, [sy, yy], &trial_g, path)
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
    /// [`unbounded_step`]).
    fn step_target(
        &self,
        x: &[f64],
        g: &[f64],
        memory: &Memory,
        buffers: &mut StepBuffers,
        target: &mut Vec<f64>,
    ) {
        let compact = memory.compact();
        let c = cauchy_point(x, g, self.bounds, &compact, buffers);
        if memory.is_empty() {
            return std::mem::swap(target, &mut buffers.cauchy);
        }
        subspace_step(x, g, self.bounds, &compact, buffers, &c, target)
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

/// The curvature pairs, oldest first, with the products the compact form needs.
struct Memory {
    capacity: usize,
    s: VecDeque<Vec<f64>>,
    y: VecDeque<Vec<f64>>,
    /// `sᵢᵀsⱼ`, `sᵢᵀyⱼ` and `yᵢᵀyⱼ`, `k × k` each, row-major in the pairs' order.
    ss: Vec<f64>,
    sy: Vec<f64>,
    yy: Vec<f64>,
    /// `θ = yᵀy / sᵀy` of the newest pair; 1 without pairs.
    theta: f64,
    /// `[Yᵀg, Sᵀg]` for the gradient `g` given to the last [`push`](Memory::push), made in
    /// the same pass as the new pair's products; `None` once that gradient is not the current
    /// one.
    pairs_dot_gradient: Option<Vec<f64>>,
    /// `[Yᵀd, Sᵀd]` for the projected steepest-descent path `d` that was given to the last
    /// [`push`](Memory::push) (the one [`StepBuffers`] then held), made in the same pass;
    /// `None` where none was given, or once that point is not the current one.
    pairs_dot_path: Option<Vec<f64>>,
}

impl Memory {
    fn new(capacity: usize) -> Self {
        Memory {
            capacity,
            s: VecDeque::new(),
            y: VecDeque::new(),
            ss: Vec::new(),
            sy: Vec::new(),
            yy: Vec::new(),
            theta: 1.0,
            pairs_dot_gradient: None,
            pairs_dot_path: None,
        }
    }

    fn is_empty(&self) -> bool {
        self.s.is_empty()
    }

    fn clear(&mut self) {
        *self = Memory::new(self.capacity);
    }

    /// The products with the last pushed point's vectors no longer describe the current one.
    fn forget_point(&mut self) {
        self.pairs_dot_gradient = None;
        self.pairs_dot_path = None;
    }

    /// Adds the pair `(s, y)`, given its `[sᵀy, yᵀy]`, dropping the oldest at capacity and
    /// returning its vectors (for the next pair to be written into), and takes `Yᵀg`, `Sᵀg` for
    /// the current gradient `g`, and `Yᵀd`, `Sᵀd` for the next Cauchy point's `path` `d` where one
    /// is given, in the same pass. The products of the pairs kept are kept (shifted past a
    /// dropped one); only the new pair's row and column are computed: `4k` dot products in one
    /// pass over the pairs, not `2k²`.
    fn push(
        &mut self,
        s: Vec<f64>,
        y: Vec<f64>,
        [sy, yy]: [f64; 2],
        g: &[f64],
        path: Option<&[f64]>,
    ) -> Option<(Vec<f64>, Vec<f64>)> {
        let previous = self.s.len();
        let dropped = usize::from(previous == self.capacity);
        let evicted = if dropped == 1 {
            self.s.pop_front().zip(self.y.pop_front())
        } else {
            None
        };
        self.theta = yy / sy;
        self.s.push_back(s);
        self.y.push_back(y);
        let k = self.s.len();
        let kept = k - 1;
        let shifted = |products: &[f64]| {
            let mut out = vec![0.0; k * k];
            for i in 0..kept {
                for j in 0..kept {
                    out[i * k + j] = products[(i + dropped) * previous + j + dropped];
                }
            }
            out
        };
        self.ss = shifted(&self.ss);
        self.sy = shifted(&self.sy);
        self.yy = shifted(&self.yy);
        // One pass: the new s and y, and g, against every y and s (each product `dot`'s bits).
        let with: Vec<&[f64]> = self.y.iter().chain(&self.s).map(Vec::as_slice).collect();
        let vectors: Vec<&[f64]> = [&self.s[kept][..], &self.y[kept][..], g]
            .into_iter()
            .chain(path)
            .collect();
        let mut products = vec![0.0; vectors.len() * 2 * k];
        vector::dots(&vectors, &with, &mut products);
        // `with` is [Y, S]: s_with[j] = sᵀy_j and s_with[k + j] = sᵀs_j; y_with likewise.
        let (s_with, rest) = products.split_at(2 * k);
        let (y_with, rest) = rest.split_at(2 * k);
        let (g_with, path_with) = rest.split_at(2 * k);
        self.pairs_dot_gradient = Some(g_with.to_vec());
        self.pairs_dot_path = path.map(|_| path_with.to_vec());
        for j in 0..k {
            (self.ss[kept * k + j], self.ss[j * k + kept]) = (s_with[k + j], s_with[k + j]);
            (self.yy[kept * k + j], self.yy[j * k + kept]) = (y_with[j], y_with[j]);
            self.sy[kept * k + j] = s_with[j];
            self.sy[j * k + kept] = y_with[k + j];
        }
        evicted
    }

    /// `B = θI − W·M·Wᵀ`: `W`'s rows on demand and `M`, the inverse of
    /// `[[−D, Lᵀ], [L, θ·SᵀS]]` (`D` the diagonal of `SᵀY`, `L` its strict lower triangle).
    fn compact(&self) -> Compact<'_> {
        let k = self.s.len();
        let width = 2 * k;
        let mut middle = vec![0.0; width * width];
        for i in 0..k {
            for j in 0..k {
                let lower = if i > j { self.sy[i * k + j] } else { 0.0 };
                let upper = if j > i { self.sy[j * k + i] } else { 0.0 };
                middle[i * width + j] = if i == j { -self.sy[i * k + i] } else { 0.0 };
                middle[i * width + k + j] = upper;
                middle[(k + i) * width + j] = lower;
                middle[(k + i) * width + k + j] = self.theta * self.ss[i * k + j];
            }
        }
        Compact {
            memory: self,
            m: invert(&middle, width),
        }
    }
}

/// The compact form of one iteration.
struct Compact<'m> {
    memory: &'m Memory,
    /// `M`, `2k × 2k`, row-major.
    m: Vec<f64>,
}

impl Compact<'_> {
    /// `2k`.
    fn width(&self) -> usize {
        2 * self.memory.s.len()
    }

    fn theta(&self) -> f64 {
        self.memory.theta
    }

    /// `W`'s columns scaled by `coefficients` (`2k`): `(cⱼ, yⱼ)`, then `(θ·c_{k+j}, sⱼ)`, so
    /// that `Σ cᵢ·vᵢ` over them is `W·coefficients`.
    fn columns<'c>(&'c self, coefficients: &'c [f64]) -> impl Iterator<Item = (f64, &'c [f64])> {
        let memory = self.memory;
        let k = memory.s.len();
        let ys = (memory.y.iter())
            .zip(&coefficients[..k])
            .map(|(y, &c)| (c, &y[..]));
        let ss = (memory.s.iter()).zip(&coefficients[k..]);
        ys.chain(ss.map(|(s, &c)| (self.theta() * c, &s[..])))
    }

    /// `Wᵀv` (`2k`): `[yⱼᵀv …, θ·sⱼᵀv …]`, in one pass.
    fn w_transpose(&self, v: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.width()];
        vector::dots(&self.w_columns(), &[v], &mut out);
        self.scale_s_products(&mut out);
        out
    }

    /// The stored vectors in `W`'s column order, unscaled: `y₀ … y_{k−1}, s₀ … s_{k−1}`.
    fn w_columns(&self) -> Vec<&[f64]> {
        let memory = self.memory;
        (memory.y.iter().chain(&memory.s))
            .map(Vec::as_slice)
            .collect()
    }

    /// `Wᵀg` for the current gradient `g`: from the products the newest pair's pass took with
    /// it, where it took them for this point, else from a pass of its own.
    fn w_gradient(&self, g: &[f64]) -> Vec<f64> {
        match &self.memory.pairs_dot_gradient {
            Some(products) => self.w_products(products),
            None => self.w_transpose(g),
        }
    }

    /// `Wᵀv` from `[Yᵀv, Sᵀv]` as a pair's pass made them (`2k`).
    fn w_products(&self, products: &[f64]) -> Vec<f64> {
        let mut out = products.to_vec();
        self.scale_s_products(&mut out);
        out
    }

    /// Products with [`w_columns`](Self::w_columns) made `W`'s: the `s` half times `θ`.
    fn scale_s_products(&self, products: &mut [f64]) {
        let k = self.memory.s.len();
        products[k..].iter_mut().for_each(|p| *p *= self.theta());
    }

    /// Row `i` of `W = [Y  θS]` into `w`.
    fn w_row(&self, i: usize, w: &mut [f64]) {
        let k = self.memory.s.len();
        for j in 0..k {
            w[j] = self.memory.y[j][i];
            w[k + j] = self.theta() * self.memory.s[j][i];
        }
    }

    /// `WᵀW = [[YᵀY, θ·YᵀS], [θ·SᵀY, θ²·SᵀS]]`, `2k × 2k`, from the kept products.
    fn gram(&self) -> Vec<f64> {
        let k = self.memory.s.len();
        let (width, theta) = (2 * k, self.theta());
        let memory = self.memory;
        let mut gram = vec![0.0; width * width];
        for i in 0..k {
            for j in 0..k {
                gram[i * width + j] = memory.yy[i * k + j];
                gram[i * width + k + j] = theta * memory.sy[j * k + i];
                gram[(k + i) * width + j] = theta * memory.sy[i * k + j];
                gram[(k + i) * width + k + j] = theta * theta * memory.ss[i * k + j];
            }
        }
        gram
    }

    /// `M·v`.
    fn m_times(&self, v: &[f64]) -> Vec<f64> {
        let width = self.width();
        (0..width)
            .map(|i| vector::dot(&self.m[i * width..(i + 1) * width], v))
            .collect()
    }
}

/// `A⁻¹` of a small nonsingular `n × n` matrix (row-major), by Gauss–Jordan elimination with
/// partial pivoting; a singular pivot leaves its column zero (the pairs kept have `sᵀy > 0`,
/// so the middle matrix is nonsingular).
fn invert(a: &[f64], n: usize) -> Vec<f64> {
    let mut work = a.to_vec();
    let mut inverse = vec![0.0; n * n];
    for i in 0..n {
        inverse[i * n + i] = 1.0;
    }
    for col in 0..n {
        let pivot = (col..n)
            .max_by(|&p, &q| work[p * n + col].abs().total_cmp(&work[q * n + col].abs()))
            .unwrap_or(col);
        if work[pivot * n + col] == 0.0 {
            continue;
        }
        for j in 0..n {
            work.swap(col * n + j, pivot * n + j);
            inverse.swap(col * n + j, pivot * n + j);
        }
        let scale = 1.0 / work[col * n + col];
        for j in 0..n {
            work[col * n + j] *= scale;
            inverse[col * n + j] *= scale;
        }
        for row in (0..n).filter(|&r| r != col) {
            let factor = work[row * n + col];
            if factor != 0.0 {
                for j in 0..n {
                    work[row * n + j] -= factor * work[col * n + j];
                    inverse[row * n + j] -= factor * inverse[col * n + j];
                }
            }
        }
    }
    inverse
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
    let mut p = match &compact.memory.pairs_dot_path {
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
/// variables, `v = N⁻¹·M·WᵀZ·r/θ²`, `N = I − M·WᵀZ·ZᵀW/θ` (Sherman–Morrison–Woodbury on the
/// reduced model), from `wz_r = WᵀZ·r` and `wz_zw = ZᵀW·WᵀZ`.
fn correction(compact: &Compact<'_>, wz_r: &[f64], wz_zw: &[f64]) -> Vec<f64> {
    let (width, theta) = (compact.width(), compact.theta());
    let v = compact.m_times(wz_r);
    let mut n_matrix = vec![0.0; width * width];
    for a in 0..width {
        for b in 0..width {
            let product: f64 = (0..width)
                .map(|k| compact.m[a * width + k] * wz_zw[k * width + b])
                .sum();
            n_matrix[a * width + b] = f64::from(u8::from(a == b)) - product / theta;
        }
    }
    let inverse = invert(&n_matrix, width);
    (0..width)
        .map(|a| vector::dot(&inverse[a * width..(a + 1) * width], &v) / (theta * theta))
        .collect()
}

/// Without bounds, with pairs: every variable free and the Cauchy point `x` itself, so the
/// subspace step is the compact form's quasi-Newton step, `x̄ = x − g/θ − W·v` with `WᵀZ = Wᵀ`
/// and `ZᵀW·WᵀZ = WᵀW`, written to `target` with the line toward it (`direction ← x̄ − x`) and
/// its slope `gᵀd`, in one pass over `W`'s columns: [`aim`]'s arithmetic, without its pass.
fn unbounded_step(
    x: &[f64],
    g: &[f64],
    compact: &Compact<'_>,
    target: &mut [f64],
    direction: &mut [f64],
) -> f64 {
    let wg = compact.w_gradient(g);
    let v = correction(compact, &wg, &compact.gram());
    let mut terms: Vec<(f64, &[f64])> = vec![(1.0, x), (-1.0 / compact.theta(), g)];
    terms.extend(compact.columns(&v).map(|(c, v)| (-c, v)));
    let kernel = |((target, d), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
        vector::combine_block(&terms, target, range.clone());
        for ((d, &t), i) in d.iter_mut().zip(&*target).zip(range.clone()) {
            *d = t - x[i];
        }
        vector::serial_dot(&g[range], d)
    };
    let len = target.len();
    vector::blockwise(((target, direction), 0..len), kernel, vector::sum_of)
}

/// The subspace step from the Cauchy point `buffers.cauchy` (the direct primal method, with
/// version 3.0's projection), written to `target`: the model's minimizer over the variables
/// free at the Cauchy point, projected into the box, or truncated at the first bound where the
/// projection is not a descent direction.
fn subspace_step(
    x: &[f64],
    g: &[f64],
    bounds: &Bounds,
    compact: &Compact<'_>,
    buffers: &mut StepBuffers,
    c: &[f64],
    target: &mut [f64],
) {
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
        return target.copy_from_slice(cauchy);
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
    let (wz_zw, wz_u) = if direct {
        (kept_gram, kept_u)
    } else {
        let gram = compact.gram();
        let wg = compact.w_gradient(g);
        let wz_zw = (gram.iter().zip(&kept_gram)).map(|(all, kept)| all - kept);
        let wz_u = (wg.iter().zip(c).zip(&kept_u)).map(|((wg, c), kept)| wg + theta * c - kept);
        (wz_zw.collect(), wz_u.collect())
    };
    let mc = compact.m_times(c);
    let wz_r: Vec<f64> = (0..width)
        .map(|a| wz_u[a] - vector::dot(&wz_zw[a * width..(a + 1) * width], &mc))
        .collect();
    let v = correction(compact, &wz_r, &wz_zw);
    // The step over the free variables: −r/θ − W·v = −u/θ + W·(M·c/θ − v).
    let coefficients: Vec<f64> = mc.iter().zip(&v).map(|(mc, v)| mc / theta - v).collect();
    let mut terms: Vec<(f64, &[f64])> = vec![(-1.0 / theta, g), (-1.0, cauchy), (1.0, x)];
    terms.extend(compact.columns(&coefficients));
    // The step, its projection into the box from the Cauchy point, and the projection's
    // slope `(x̄ − x)ᵀg`, in one pass.
    let step = sized(&mut buffers.step, n);
    let kernel = |((step, projected), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
        vector::combine_block(&terms, step, range.clone());
        for ((p, &s), i) in projected.iter_mut().zip(&*step).zip(range.clone()) {
            *p = if is_free[i] {
                bounds.clip(i, cauchy[i] + s)
            } else {
                cauchy[i]
            };
        }
        let start = range.start;
        range.map(|i| (projected[i - start] - x[i]) * g[i]).sum()
    };
    let descent = vector::blockwise(
        ((&mut step[..], &mut target[..]), 0..n),
        kernel,
        vector::sum_of,
    );
    if descent <= 0.0 {
        return;
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
        for (d, i) in d.iter_mut().zip(range.clone()) {
            *d = target[i] - x[i];
        }
        let room = bounds.map_or(f64::INFINITY, |b| {
            (range.clone().zip(d.iter()))
                .map(|(i, &d)| b.room(i, x[i], d))
                .fold(f64::INFINITY, f64::min)
        });
        (vector::serial_dot(&g[range], d), room)
    };
    let len = direction.len();
    vector::blockwise((direction, 0..len), kernel, |blocks| {
        let slope = vector::sum_of(blocks.iter().map(|&(slope, _)| slope).collect());
        let room = blocks
            .iter()
            .map(|&(_, room)| room)
            .fold(f64::INFINITY, f64::min);
        (slope, room)
    })
}

/// The new pair from the step `step·d` that took the gradient from `g` to `g_new`:
/// `s ← step·d` and `y ← g_new − g`, with `[sᵀy, gᵀs, yᵀy]` (each the bits of
/// [`vector::dot`]) and `‖g_new‖∞`, in one pass.
fn new_pair(
    step: f64,
    d: &[f64],
    g_new: &[f64],
    g: &[f64],
    s: &mut [f64],
    y: &mut [f64],
) -> [f64; 4] {
    let kernel = |((s, y), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
        let mut g_new_max = 0.0;
        for ((s, y), i) in s.iter_mut().zip(y.iter_mut()).zip(range.clone()) {
            *s = step * d[i];
            *y = g_new[i] - g[i];
            g_new_max = f64::max(g_new_max, g_new[i].abs());
        }
        let [sy, yy] = vector::serial_dots_of([&*s, &*y], y);
        [sy, vector::serial_dot(&g[range], s), yy, g_new_max]
    };
    let len = d.len();
    vector::blockwise(((s, y), 0..len), kernel, |blocks| {
        let sum = |k: usize| vector::sum_of(blocks.iter().map(|sums| sums[k]).collect());
        let max = blocks.iter().map(|sums| sums[3]).fold(0.0, f64::max);
        [sum(0), sum(1), sum(2), max]
    })
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

    /// The products a memory keeps as pairs come and go past its capacity are, bit for bit,
    /// those of its pairs computed afresh, `Yᵀg` and `Sᵀg` too; and `gram` is `WᵀW`.
    #[test]
    fn kept_products_are_those_of_the_pairs() {
        let n = 37;
        let mut memory = Memory::new(4);
        for pair in 0..9 {
            let s: Vec<f64> = (0..n)
                .map(|i| ((pair * n + i) as f64 * 0.37).sin())
                .collect();
            let y: Vec<f64> = (0..n)
                .map(|i| ((pair * n + i) as f64 * 0.11).cos() + 2.0)
                .collect();
            let (sy, yy) = (vector::dot(&s, &y), vector::dot(&y, &y));
            let g: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
            let d: Vec<f64> = g.iter().map(|v| -v * (pair % 3) as f64).collect();
            memory.push(s, y, [sy, yy], &g, (pair % 2 == 0).then_some(&d[..]));
            let k = memory.s.len();
            let with_g = memory.pairs_dot_gradient.clone().unwrap();
            let with_d = memory.pairs_dot_path.clone();
            assert_eq!(with_d.is_some(), pair % 2 == 0);
            for j in 0..k {
                assert_eq!(with_g[j], vector::dot(&memory.y[j], &g));
                assert_eq!(with_g[k + j], vector::dot(&memory.s[j], &g));
                if let Some(with_d) = &with_d {
                    assert_eq!(with_d[j], vector::dot(&memory.y[j], &d));
                    assert_eq!(with_d[k + j], vector::dot(&memory.s[j], &d));
                }
            }
            for i in 0..k {
                for j in 0..k {
                    let (si, sj, yi, yj) = (&memory.s[i], &memory.s[j], &memory.y[i], &memory.y[j]);
                    assert_eq!(memory.ss[i * k + j], vector::dot(si, sj));
                    assert_eq!(memory.sy[i * k + j], vector::dot(si, yj));
                    assert_eq!(memory.yy[i * k + j], vector::dot(yi, yj));
                }
            }
        }
        let compact = memory.compact();
        let (gram, width) = (compact.gram(), compact.width());
        let (mut a, mut b) = (vec![0.0; width], vec![0.0; width]);
        let mut from_rows = vec![0.0; width * width];
        for i in 0..n {
            compact.w_row(i, &mut a);
            b.copy_from_slice(&a);
            for p in 0..width {
                for q in 0..width {
                    from_rows[p * width + q] += a[p] * b[q];
                }
            }
        }
        for (x, y) in gram.iter().zip(&from_rows) {
            assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{x} vs {y}");
        }
    }
}
