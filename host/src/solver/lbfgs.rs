//! L-BFGS: the inverse Hessian from the last `m` curvature pairs (Nocedal & Wright,
//! Algorithm 7.5), with BFGS's line search and stopping rules. Memory is `2m + 7` vectors of
//! length `n` (the pairs, the driver's five, and a pair in waiting: the newest pair is pushed
//! by the next direction, whose gradient its pass needs, and the pair the memory lets go is kept
//! for the next one), allocated as the first `m + 1` pairs arrive; after that an iteration
//! allocates no `n`-vector. The vectors live where the objective computes: on the GPU for a term problem
//! loaded there, so that an iteration moves only scalars between host and device.
//!
//! - `H₀ = γI` with `γ = sᵀy / yᵀy` of the newest pair (`γ = 1` before the first one; the line
//!   search's first-step scaling then sets the length of the first step).
//! - Once a pair has scaled `H₀`, the line search tries the step 1 first, as L-BFGS-B and torch
//!   do, not BFGS's estimate from the last decrease: that estimate is often below 1 where the
//!   quasi-Newton step is already right, and costs an iteration on the way in.
//! - A pair with `sᵀy ≤ ε·yᵀy` (`ε` the machine epsilon) is skipped. A strong Wolfe step has
//!   `sᵀy ≥ (1 − c2)·|gᵀs| > 0`, so this only drops pairs whose curvature was lost to rounding:
//!   they would make `H` indefinite or `γ` meaningless.
//!
//! ## `H·g` in two passes
//!
//! The direction `−H·g` comes from the compact representation of Byrd, Nocedal & Schnabel
//! (1994, Theorem 2.2), the matrix the two-loop recursion applies, written with the pairs as the
//! columns of `S` and `Y` (oldest first), `R` the upper triangle of `SᵀY` and `D` its diagonal:
//!
//! ```text
//! H = γI + [S  γY] ⎡R⁻ᵀ(D + γYᵀY)R⁻¹  −R⁻ᵀ⎤ ⎡ Sᵀ ⎤
//!                  ⎣      −R⁻¹         0  ⎦ ⎣γYᵀ ⎦
//! ```
//!
//! With `a = Sᵀg`, `b = Yᵀg`, `u = R⁻¹a` and `w = R⁻ᵀ((D + γYᵀY)u − γb)`, that is
//! `−H·g = −γg − S·w + γY·u`. The two-loop recursion makes `2m` passes over the vectors, one
//! after another, since each needs the dot product the last one ended with: at `m = 10` that is
//! about 80 vector reads and writes per iteration. Here the `n`-sized work is two passes of
//! about `2m + 2` vectors each: one takes `a`, `b` and `gᵀg` (`VectorSpace::dots`), one forms
//! the direction and its slope `gᵀp` (`VectorSpace::combine_dot`); the rest is `m×m`
//! arithmetic. The pairs and their products are L-BFGS-B's memory (`solver::memory`), one for
//! both methods: the first pass is its push of the newest pair, whose row and column of `SᵀY`,
//! `YᵀY` and `SᵀS` (the older ones are kept) need `vᵢᵀy` and `vᵢᵀs` for every stored vector;
//! `y = g₊ − g` makes each of the first a difference of this pass's product with `g₊` and the
//! last one's with `g`, and `s = α·p` each of the second a combination of the products the
//! direction `p` was made from; each is taken directly instead where it would lose digits to
//! the difference (`y`'s by a second pass, since the first one measures `g₊`). Each entry of the direction is the same combination of the same
//! entries of `g`, `S` and `Y`, as in the two-loop recursion, so separable structure is kept
//! exactly (the identical blocks of extended Rosenbrock stay identical).
//!
//! ## One read of the pairs, where the objective comes in pieces
//!
//! The second pass cannot take the next gradient's products, which the next direction needs:
//! that gradient is at the trial point, which needs all of `p`. Where `f` is a sum of terms
//! that each read one piece of `x` ([`OnBackend::pieces`](crate::objective::OnBackend::pieces)),
//! it can: the trial sweep (`solver::trial_sweep`) forms each piece of `p`, the trial point
//! `x + p` and `f` and `g₊` on it, and takes `g₊`'s products with the pairs while they are in
//! cache. The line search takes that trial as its first evaluation (the step 1, which it tries
//! first); where it accepts it, the next push derives every product it needs
//! (`Memory::push`) and the iteration has read the pairs once.

use super::line_search::Evaluated;
use super::memory::{DirectionProducts, Memory, Pair, PairProducts, SweptGradient};
use super::options::{Options, check_limited_memory_len};
use super::quasi_newton::{self, InverseHessian, Taken, Trial};
use super::result::{Iterate, OptimizeResult, SolveError};
use super::start::Start;
use super::workspace::{HostWorkspace, Workspace};
use crate::objective::{EvalError, Objective};
use crate::solver::trial_sweep::TrialSweep;
use crate::space::{StepEnd, VectorSpace};
use std::ops::ControlFlow;

/// Minimizes `objective` from `x0` by L-BFGS with `options.memory` pairs. See
/// [`super::minimize`].
pub fn minimize(
    objective: &mut dyn Objective,
    x0: &[f64],
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    minimize_from(objective, Start::Host(x0), options, observer)
}

/// [`minimize`] from `x0` where it lies.
pub(super) fn minimize_from(
    objective: &mut dyn Objective,
    x0: Start<'_>,
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    check_limited_memory_len(objective, x0.len(), options)?;
    if let Some(on_device) = super::workspace::device_of(objective, x0.len())? {
        let mut workspace = super::workspace::DeviceWorkspace::new(on_device)?;
        return run(&mut workspace, x0, options, observer);
    }
    run(&mut HostWorkspace::new(objective), x0, options, observer)
}

/// The solve on `workspace`'s vectors, and the pairs its last direction came from where
/// `options.return_hess_inv` asks for them.
fn run<W: Workspace>(
    workspace: &mut W,
    x0: Start<'_>,
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    let mut hessian = LimitedMemory::new(options.memory);
    let result = quasi_newton::run(
        workspace,
        x0,
        options,
        Some(options.ftol),
        observer,
        &mut hessian,
    )?;
    // A pending pair is the last step's, which no direction used.
    let (hess_inv_pairs, hess_inv_pairs_on_device) = if options.return_hess_inv {
        workspace.result_pairs(hessian.memory.into_vectors(), x0.len())?
    } else {
        (None, None)
    };
    Ok(OptimizeResult {
        hess_inv_pairs,
        hess_inv_pairs_on_device,
        ..result
    })
}

/// L-BFGS's `H`: the last `memory` pairs in the memory L-BFGS-B keeps too ([`Memory`]).
struct LimitedMemory<V> {
    memory: Memory<V>,
    /// The pair of the last update, which the next direction pushes: its pass takes the new
    /// gradient's products with the pairs, which the direction needs.
    pending: Option<Pair<V>>,
    /// The last direction's products with the pairs, from which its step's follow.
    direction: Option<DirectionProducts>,
    /// The vectors of the pair the memory last let go, for the next one.
    spare: Option<(V, V)>,
    /// What the last direction's trial sweep measured at `x + p`, for the pair of a step that
    /// ends there.
    swept: Option<TrialSweep>,
}

impl<V> LimitedMemory<V> {
    fn new(memory: usize) -> Self {
        Self {
            memory: Memory::new(memory),
            pending: None,
            direction: None,
            spare: None,
            swept: None,
        }
    }
}

impl<W: Workspace> InverseHessian<W> for LimitedMemory<W::Vector> {
    fn direction(
        &mut self,
        workspace: &mut W,
        g: &W::Vector,
        p: &mut W::Vector,
        trial: Option<Trial<'_, W::Vector>>,
    ) -> Result<(f64, Option<Evaluated>), EvalError> {
        let space = workspace.space_mut();
        if let Some(pair) = self.pending.take() {
            self.spare = self.memory.push(space, pair, g, None)?;
        }
        self.swept = None;
        if self.memory.is_empty() {
            // H₀ = I: the first step's length comes from scipy's estimate.
            self.direction = None;
            return Ok((space.combine_dot(&[(-1.0, g)], p, g)?, None));
        }
        // Pass 1 (the push's, or its own; none after a trial sweep): sᵢᵀg and yᵢᵀg.
        let with_g = self.memory.pairs_dot(space, g)?;
        let step = self.memory.inverse_step(&with_g);
        self.direction = self.memory.direction_products(&step);
        // Pass 2: −H·g = −γg − S·w + γY·u (`coefficients` are `[γu; −w]`, `y`s first).
        let k = self.memory.len();
        let (on_y, on_s) = step.coefficients.split_at(k);
        let mut terms = vec![(-step.gamma, g)];
        terms.extend(on_s.iter().enumerate().map(|(j, &c)| (c, self.memory.s(j))));
        terms.extend(on_y.iter().enumerate().map(|(j, &c)| (c, self.memory.y(j))));
        // Given the trial, where the workspace can: pass 2 and the next pass 1 as one sweep
        // (the module docs' last section).
        if let Some(trial) = trial {
            let columns: Vec<&W::Vector> = self.memory.columns().collect();
            let buffers = [&mut *p, trial.point, trial.gradient];
            // An evaluation that fails at `x + p` is left to the separate passes below: the
            // line search meets it there, if it evaluates there at all (it would not along a
            // direction that does not descend), as without the sweep.
            let swept = workspace.trial_sweep(&terms, trial.x, g, buffers, &columns);
            if let Ok(Some(sweep)) = swept {
                // The step 1, which the search tries first (`natural_step`).
                let evaluated = Evaluated {
                    step: 1.0,
                    value: sweep.value,
                    slope: sweep.slope,
                };
                let slope = sweep.slope0;
                self.swept = Some(sweep);
                return Ok((slope, Some(evaluated)));
            }
        }
        let slope = workspace.space_mut().combine_dot(&terms, p, g)?;
        Ok((slope, None))
    }

    /// 1 once a pair has scaled `H₀` (Nocedal & Wright, §7.2: the step L-BFGS is built to take,
    /// as L-BFGS-B and torch try it); before that, scipy's estimate sets the first step's length.
    fn natural_step(&self) -> Option<f64> {
        (!self.memory.is_empty()).then_some(1.0)
    }

    fn update(
        &mut self,
        workspace: &mut W,
        s: &mut W::Vector,
        y: &mut W::Vector,
        end: &StepEnd,
        taken: Taken,
    ) -> Result<(), EvalError> {
        let swept = self.swept.take().filter(|_| taken.swept);
        let (sy, yy) = (end.sy, end.yy);
        if sy.is_nan() || sy <= f64::EPSILON * yy {
            // Curvature lost to rounding (see the module docs): keep the pairs we have; the
            // products they took with the last gradient are not the next one's.
            self.memory.forget_point();
            return Ok(());
        }
        // The pair's vectors are `s` and `y` themselves; their places get the buffers the
        // memory last let go (new zeros before it is full).
        let (mut kept_s, mut kept_y) = match self.spare.take() {
            Some(spare) => spare,
            None => (
                workspace.space_mut().zeros()?,
                workspace.space_mut().zeros()?,
            ),
        };
        std::mem::swap(s, &mut kept_s);
        std::mem::swap(y, &mut kept_y);
        let ss = end.step_norm * end.step_norm;
        let s_with_held = (self.direction.take()).and_then(|d| d.of_step(taken.step, ss));
        let g_new = swept.map(|sweep| SweptGradient {
            sweep,
            step: taken.step,
        });
        self.pending = Some(Pair {
            s: kept_s,
            y: kept_y,
            products: PairProducts {
                sy,
                yy,
                ss,
                gg: None,
            },
            s_with_held,
            g_new,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::vector;
    use crate::solver::quasi_newton::DERIVED_MIN_SQUARED_RATIO;
    use crate::solver::two_loop::{CurvaturePair, two_loop};
    use crate::solver::workspace::Length;
    use std::collections::VecDeque;

    /// A term objective that counts its evaluations, and offers its pieces only if `pieces`.
    struct Counting {
        inner: crate::objective::TermObjective,
        pieces: bool,
        evaluations: usize,
    }

    impl Objective for Counting {
        fn dim(&self) -> usize {
            self.inner.dim()
        }
        fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
            self.evaluations += 1;
            self.inner.value(x)
        }
        fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
            self.evaluations += 1;
            self.inner.gradient(x, g)
        }
        fn value_and_gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
            self.evaluations += 1;
            self.inner.value_and_gradient(x, g)
        }
        fn on_backend(&mut self) -> Option<&mut dyn crate::objective::OnBackend> {
            self.inner.on_backend().filter(|_| self.pieces)
        }
    }

    /// L-BFGS, and L-BFGS-B without bounds, with their first trials swept (the objective in
    /// pieces) take the steps they take with the separate passes: the same iterations and
    /// evaluations, the same answer to the last digits the products' order leaves; and the
    /// sweep did evaluate trials. So does L-BFGS-B where its searches may make only two or three
    /// evaluations (`maxls`), so that some reject the swept trial, and (with two) one fails with
    /// pairs held and restarts from the Cauchy point (ext-rosenbrock: status 2 after 7
    /// iterations; 43 iterations to the gradient test).
    #[test]
    fn swept_trials_take_the_separate_passes_steps() {
        use crate::backend::cpu::CpuEvaluator;
        use crate::backend::{Gradient, TermProblem};
        use gpu_kernels::terms::{ExtRosenbrock, SeedExpSum};
        type Method = fn(
            &mut dyn Objective,
            &[f64],
            &Options,
            &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
        ) -> Result<OptimizeResult, SolveError>;
        fn solve<T: gpu_kernels::Term + gpu_kernels::Kernels + 'static>(
            method: Method,
            x0: &[f64],
            pieces: bool,
            options: &Options,
        ) -> (OptimizeResult, usize) {
            let n = x0.len();
            let problem = TermProblem::<T>::new(n).unwrap();
            let evaluator: Box<dyn crate::backend::Evaluator> =
                Box::new(CpuEvaluator::new(problem));
            let mut objective = Counting {
                inner: crate::objective::TermObjective::new(evaluator, Gradient::Exact),
                pieces,
                evaluations: 0,
            };
            let result = method(&mut objective, x0, options, &mut |_| {
                ControlFlow::Continue(())
            })
            .unwrap();
            (result, objective.evaluations)
        }
        fn check<T: gpu_kernels::Term + gpu_kernels::Kernels + 'static>(
            method: Method,
            x0: &[f64],
        ) {
            let options = Options::default();
            let (swept, through_passes) = solve::<T>(method, x0, true, &options);
            let (separate, all) = solve::<T>(method, x0, false, &options);
            assert!(swept.success, "{}", swept.message);
            assert_eq!(
                (swept.status, swept.nit, swept.nfev),
                (separate.status, separate.nit, separate.nfev)
            );
            assert_eq!(all, separate.nfev);
            // Those of `x0` and of the first iteration (no pair yet) are the passes'.
            assert!(
                through_passes + 3 <= swept.nfev,
                "{through_passes} of {}",
                swept.nfev
            );
            let scale = separate.fun.abs().max(1e-12);
            assert!((swept.fun - separate.fun).abs() <= 1e-6 * scale);
            for (a, b) in swept.x.iter().zip(&separate.x) {
                assert!((a - b).abs() <= 1e-9, "{a} vs {b}");
            }
        }
        let n = 40_000;
        let rosenbrock_start: Vec<f64> = (0..n).map(|i| [-1.2, 1.0][i % 2]).collect();
        for method in [minimize as Method, crate::solver::lbfgsb::minimize] {
            check::<ExtRosenbrock>(method, &rosenbrock_start);
            check::<SeedExpSum>(method, &vec![0.5; n]);
        }
        for maxls in [2, 3] {
            let options = Options {
                maxls,
                ..Options::default()
            };
            let method = crate::solver::lbfgsb::minimize;
            let (swept, _) = solve::<ExtRosenbrock>(method, &rosenbrock_start, true, &options);
            let (separate, _) = solve::<ExtRosenbrock>(method, &rosenbrock_start, false, &options);
            let counts = |r: &OptimizeResult| (r.status, r.nit, r.nfev, r.njev);
            assert_eq!(counts(&swept), counts(&separate), "maxls {maxls}");
        }
    }

    /// `γ = sᵀy / yᵀy` of the newest pair; 1 before the first.
    fn gamma(memory: &Memory<Vec<f64>>) -> f64 {
        match memory.len() {
            0 => 1.0,
            k => memory.sy(k - 1, k - 1) / memory.yy(k - 1, k - 1),
        }
    }

    /// Along steps on a quadratic (gradient `A·x`), with memory 1, 2 and 3 so that pairs are
    /// dropped, with steps so short that the newest columns are taken directly, and with a pair
    /// whose curvature is negative (skipped): every compact-form direction is the two-loop
    /// recursion's, to rounding, and its slope is `gᵀp` as `dot` sums it.
    #[test]
    fn compact_directions_are_the_two_loop_directions() {
        let n = 40;
        let gradient = |x: &[f64]| -> Vec<f64> {
            // A: diagonal 1 … 40, coupled to both neighbours by 0.3: positive definite.
            (0..n)
                .map(|i| {
                    let left = if i > 0 { x[i - 1] } else { 0.0 };
                    let right = if i + 1 < n { x[i + 1] } else { 0.0 };
                    (i + 1) as f64 * x[i] + 0.3 * (left + right)
                })
                .collect()
        };
        let mut length = Length(n);
        let mut workspace = HostWorkspace::new(&mut length);
        let mut direct_columns = 0;
        for size in 1..=3 {
            let mut memory = LimitedMemory::new(size);
            let mut reference: VecDeque<CurvaturePair<Vec<f64>>> = VecDeque::new();
            let mut x: Vec<f64> = (0..n).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
            for k in 0..9 {
                let g = gradient(&x);
                let mut p = vec![0.0; n];
                let (slope, _) = memory.direction(&mut workspace, &g, &mut p, None).unwrap();
                assert_eq!(slope.to_bits(), vector::dot(&g, &p).to_bits());
                let mut expected = g.clone();
                let gamma = gamma(&memory.memory);
                two_loop(
                    workspace.space_mut(),
                    &reference,
                    &mut expected,
                    &mut Vec::new(),
                    |space, v| space.scale(gamma, v),
                )
                .unwrap();
                let scale = expected.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                for (p, e) in p.iter().zip(&expected) {
                    assert!(
                        (p + e).abs() <= 1e-12 * scale,
                        "m {size}, step {k}: {p} vs {e}"
                    );
                }
                // A step along the direction, every third one a million times too short.
                let length = if k % 3 == 2 { 1e-6 } else { 0.05 };
                let mut s: Vec<f64> = p.iter().map(|p| length * p).collect();
                x.iter_mut().zip(&s).for_each(|(x, s)| *x += s);
                let g_new = gradient(&x);
                let mut y: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
                if k == 4 {
                    // Curvature lost: no pair on either side.
                    y.iter_mut().zip(&s).for_each(|(y, s)| *y = -s);
                }
                let (sy, yy) = (vector::dot(&s, &y), vector::dot(&y, &y));
                let end = StepEnd {
                    gradient_norm: 0.0,
                    step_norm: vector::dot(&s, &s).sqrt(),
                    sy,
                    yy,
                };
                if k != 4 {
                    let gg = vector::dot(&g, &g) + vector::dot(&g_new, &g_new);
                    direct_columns += usize::from(yy < DERIVED_MIN_SQUARED_RATIO * gg);
                    if reference.len() == size {
                        reference.pop_front();
                    }
                    reference.push_back(CurvaturePair {
                        s: s.clone(),
                        y: y.clone(),
                        rho: 1.0 / sy,
                    });
                }
                let taken = Taken {
                    step: length,
                    swept: false,
                };
                memory
                    .update(&mut workspace, &mut s, &mut y, &end, taken)
                    .unwrap();
            }
        }
        assert!(direct_columns >= 2, "the short steps take the direct path");
    }
}
