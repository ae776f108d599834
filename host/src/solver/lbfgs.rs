//! L-BFGS: the inverse Hessian from the last `m` curvature pairs (Nocedal & Wright,
//! Algorithm 7.5), with BFGS's line search and stopping rules. Memory is `2m + 5` vectors of
//! length `n`, allocated as the first `m` pairs arrive; after that an iteration allocates no
//! `n`-vector. The vectors live where the objective computes: on the GPU for a term problem
//! loaded there, so that an iteration moves only scalars between host and device.
//!
//! - `H₀ = γI` with `γ = sᵀy / yᵀy` of the newest pair (`γ = 1` before the first one; the line
//!   search's first-step scaling then sets the length of the first step).
//! - Once a pair has scaled `H₀`, the line search tries the step 1 first, as L-BFGS-B and torch
//!   do, not BFGS's estimate from the last decrease: that estimate is often below 1 where the
//!   quasi-Newton step is already right, and costs an iteration on the way in (seed-expsum at
//!   n = 10⁶: 6 iterations and 10 evaluations with it, 5 and 9 without).
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
//! arithmetic. The new pair's columns of `R` and `YᵀY` (the older ones are kept) need `vᵢᵀy`
//! for every stored vector, and `y = g₊ − g` makes each a difference of this pass's product
//! with `g₊` and the last one's with `g`, unless `y` is too short for that difference to keep
//! its digits. Each entry of the direction is the same combination of the same entries of `g`,
//! `S` and `Y`, as in the two-loop recursion, so separable structure is kept exactly (the
//! identical blocks of extended Rosenbrock stay identical).

use super::options::{Options, check_limited_memory_start};
use super::quasi_newton::{self, DERIVED_MIN_SQUARED_RATIO, InverseHessian};
use super::result::{Iterate, OptimizeResult, SolveError};
use super::workspace::{HostWorkspace, Workspace};
use crate::objective::VectorSpace;
use crate::objective::{EvalError, Objective};
use std::collections::VecDeque;
use std::ops::ControlFlow;

/// Minimizes `objective` from `x0` by L-BFGS with `options.memory` pairs. See
/// [`super::minimize`].
pub fn minimize(
    objective: &mut dyn Objective,
    x0: &[f64],
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    check_limited_memory_start(objective, x0, options)?;
    if x0.len() >= super::workspace::DEVICE_MIN_LEN
        && let Some(on_device) = objective.device()
    {
        let mut workspace = super::workspace::DeviceWorkspace::new(on_device)?;
        let mut hessian = LimitedMemory::new(options.memory);
        return quasi_newton::run(
            &mut workspace,
            x0,
            options,
            Some(options.ftol),
            observer,
            &mut hessian,
        );
    }
    let mut hessian = LimitedMemory::new(options.memory);
    quasi_newton::run(
        &mut HostWorkspace::new(objective),
        x0,
        options,
        Some(options.ftol),
        observer,
        &mut hessian,
    )
}

/// The last `memory` pairs, oldest first, the products the compact form needs, and `γ`.
struct LimitedMemory<V> {
    memory: usize,
    pairs: VecDeque<StoredPair<V>>,
    /// The last direction's gradient `g`, by its products: `sᵢᵀg`, `yᵢᵀg` for each stored pair
    /// (oldest first), and `gᵀg`.
    previous: Option<GradientProducts>,
    /// Whether the newest pair's columns of `R` and `YᵀY` are still to be formed.
    newest_pending: bool,
    /// Scratch for [`VectorSpace::dots`], kept so that it grows once.
    products: Vec<f64>,
}

/// A gradient's products with the stored pairs, and with itself.
struct GradientProducts {
    s: Vec<f64>,
    y: Vec<f64>,
    gg: f64,
}

/// One curvature pair and its products with the pairs stored before it.
struct StoredPair<V> {
    s: V,
    y: V,
    /// `sᵢᵀy` for every stored pair `i` up to and including this one, oldest first: this pair's
    /// column of `R`. Its last entry, the diagonal `sᵀy` as the step computed it, is there from
    /// the start; the others come with the next direction.
    r_column: Vec<f64>,
    /// `yᵢᵀy`, the same way: this pair's column of `YᵀY`, down to the diagonal `yᵀy`.
    yy_column: Vec<f64>,
}

impl<V> LimitedMemory<V> {
    fn new(memory: usize) -> Self {
        // No `with_capacity(memory)`: `memory` may be huge; the deque grows to at most it.
        Self {
            memory,
            pairs: VecDeque::new(),
            previous: None,
            newest_pending: false,
            products: Vec::new(),
        }
    }

    /// `γ = sᵀy / yᵀy` of the newest pair (see the module docs); 1 before the first.
    fn gamma(&self) -> f64 {
        let newest = self.pairs.back();
        let diagonal = newest.and_then(|q| Some((*q.r_column.last()?, *q.yy_column.last()?)));
        diagonal.map_or(1.0, |(sy, yy)| sy / yy)
    }

    /// Appends the pair `(s, y)` with `sy = sᵀy` and `yy = yᵀy`, taking `s` and `y` themselves
    /// and giving back the oldest pair's buffers once memory is full (new zeros before). Its
    /// columns are completed by the next direction.
    fn store<W: Workspace<Vector = V>>(
        &mut self,
        workspace: &mut W,
        s: &mut V,
        y: &mut V,
        sy: f64,
        yy: f64,
    ) -> Result<(), EvalError> {
        debug_assert!(
            !self.newest_pending,
            "every update is followed by a direction"
        );
        let recycled = if self.pairs.len() < self.memory {
            None
        } else {
            self.pairs.pop_front()
        };
        let mut pair = match recycled {
            Some(oldest) => {
                // The oldest pair leaves `R`, `YᵀY` and the last gradient's products.
                for kept in &mut self.pairs {
                    kept.r_column.remove(0);
                    kept.yy_column.remove(0);
                }
                if let Some(previous) = &mut self.previous {
                    previous.s.remove(0);
                    previous.y.remove(0);
                }
                oldest
            }
            None => StoredPair {
                s: workspace.space_mut().zeros()?,
                y: workspace.space_mut().zeros()?,
                r_column: Vec::new(),
                yy_column: Vec::new(),
            },
        };
        std::mem::swap(s, &mut pair.s);
        std::mem::swap(y, &mut pair.y);
        pair.r_column.clear();
        pair.r_column.push(sy);
        pair.yy_column.clear();
        pair.yy_column.push(yy);
        self.pairs.push_back(pair);
        self.newest_pending = true;
        Ok(())
    }

    /// Forms the newest pair's columns, `sᵢᵀy` and `yᵢᵀy` over the older pairs `i`, from
    /// `current`, the products of the gradient `g₊` that ended its step: since `y = g₊ − g`,
    /// each is `vᵢᵀg₊ − vᵢᵀg`, a difference of products the directions take anyway. Where `y`
    /// is so short against the gradients that the difference would lose digits
    /// ([`DERIVED_MIN_SQUARED_RATIO`]), they come from one more pass, directly.
    fn complete_newest<W: Workspace<Vector = V>>(
        &mut self,
        workspace: &mut W,
        current: &GradientProducts,
    ) -> Result<(), EvalError> {
        let Some(newest) = self.pairs.len().checked_sub(1) else {
            return Ok(());
        };
        // While pending, the columns hold only their diagonal entries.
        let (sy, yy) = (
            self.pairs[newest].r_column[0],
            self.pairs[newest].yy_column[0],
        );
        let (mut r_column, mut yy_column) = match &self.previous {
            Some(previous)
                if previous.s.len() == newest
                    && yy >= DERIVED_MIN_SQUARED_RATIO * (previous.gg + current.gg) =>
            {
                let difference = |now: &[f64], before: &[f64]| -> Vec<f64> {
                    now.iter()
                        .zip(before)
                        .map(|(now, before)| now - before)
                        .collect()
                };
                (
                    difference(&current.s[..newest], &previous.s),
                    difference(&current.y[..newest], &previous.y),
                )
            }
            _ => {
                let older: Vec<&V> = self
                    .pairs
                    .iter()
                    .take(newest)
                    .flat_map(|q| [&q.s, &q.y])
                    .collect();
                let mut direct = vec![0.0; older.len()];
                workspace
                    .space_mut()
                    .dots(&older, &[&self.pairs[newest].y], &mut direct)?;
                let (s, y) = direct.chunks_exact(2).map(|sy| (sy[0], sy[1])).unzip();
                (s, y)
            }
        };
        r_column.push(sy);
        yy_column.push(yy);
        let pair = &mut self.pairs[newest];
        (pair.r_column, pair.yy_column) = (r_column, yy_column);
        self.newest_pending = false;
        Ok(())
    }

    /// `(u, w)` of the compact form (see the module docs) from `a = Sᵀg`, `b = Yᵀg` and `γ`.
    fn coefficients(&self, a: &[f64], b: &[f64], gamma: f64) -> (Vec<f64>, Vec<f64>) {
        // R[i][j] = sᵢᵀyⱼ for i ≤ j; (YᵀY)[i][j] for i ≤ j; both from column j.
        let r = |i: usize, j: usize| self.pairs[j].r_column[i];
        let yy = |i: usize, j: usize| self.pairs[i.max(j)].yy_column[i.min(j)];
        quasi_newton::inverse_coefficients(r, yy, a, b, gamma)
    }
}

impl<W: Workspace> InverseHessian<W> for LimitedMemory<W::Vector> {
    fn direction(
        &mut self,
        workspace: &mut W,
        g: &W::Vector,
        p: &mut W::Vector,
    ) -> Result<f64, EvalError> {
        // Pass 1: sᵢᵀg and yᵢᵀg for every pair (pair-major), then gᵀg.
        let m = self.pairs.len();
        self.products.resize(2 * m + 1, 0.0);
        {
            let vectors: Vec<&W::Vector> = (self.pairs.iter())
                .flat_map(|q| [&q.s, &q.y])
                .chain([g])
                .collect();
            workspace
                .space_mut()
                .dots(&vectors, &[g], &mut self.products)?;
        }
        let (s, y) = (self.products[..2 * m].chunks_exact(2))
            .map(|sy| (sy[0], sy[1]))
            .unzip();
        let current = GradientProducts {
            s,
            y,
            gg: self.products[2 * m],
        };
        if self.newest_pending {
            self.complete_newest(workspace, &current)?;
        }
        let gamma = self.gamma();
        let (u, w) = self.coefficients(&current.s, &current.y, gamma);
        self.previous = Some(current);
        // Pass 2: −H·g = −γg − S·w + γY·u.
        let mut terms = vec![(-gamma, g)];
        terms.extend(self.pairs.iter().zip(&w).map(|(q, &w)| (-w, &q.s)));
        terms.extend(self.pairs.iter().zip(&u).map(|(q, &u)| (gamma * u, &q.y)));
        workspace.space_mut().combine_dot(&terms, p, g)
    }

    /// 1 once a pair has scaled `H₀` (Nocedal & Wright, §7.2: the step L-BFGS is built to take,
    /// as L-BFGS-B and torch try it); before that, scipy's estimate sets the first step's length.
    fn natural_step(&self) -> Option<f64> {
        (!self.pairs.is_empty()).then_some(1.0)
    }

    fn update(
        &mut self,
        workspace: &mut W,
        s: &mut W::Vector,
        y: &mut W::Vector,
        sy: f64,
        yy: f64,
    ) -> Result<(), EvalError> {
        if sy.is_nan() || sy <= f64::EPSILON * yy {
            // Curvature lost to rounding (see the module docs): keep the pairs we have.
            return Ok(());
        }
        self.store(workspace, s, y, sy, yy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::vector;
    use crate::solver::two_loop::{CurvaturePair, two_loop};
    use crate::solver::workspace::Length;

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
                let slope = memory.direction(&mut workspace, &g, &mut p).unwrap();
                assert_eq!(slope.to_bits(), vector::dot(&g, &p).to_bits());
                let mut expected = g.clone();
                let gamma = memory.gamma();
                two_loop(
                    &mut workspace,
                    &reference,
                    &mut expected,
                    &mut Vec::new(),
                    |w, v| w.space_mut().scale(gamma, v),
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
                memory
                    .update(&mut workspace, &mut s, &mut y, sy, yy)
                    .unwrap();
            }
        }
        assert!(direct_columns >= 2, "the short steps take the direct path");
    }
}
