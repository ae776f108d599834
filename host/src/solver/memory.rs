//! The curvature pairs of L-BFGS and L-BFGS-B: one memory for both methods, over any
//! [`VectorSpace`], so that its vectors live where the objective computes (host memory, or
//! the device of a term problem loaded there).
//!
//! It keeps the last `m` pairs `(sᵢ, yᵢ)`, oldest first, and the products both compact forms
//! are made of: `SᵀS`, `SᵀY` and `YᵀY`, `k × k` each. A new pair adds one row and one column
//! to each, from one pass over the pairs ([`Memory::push`]) that also takes the new gradient's
//! products `[Yᵀg₊, Sᵀg₊]`, which the next direction needs, and (L-BFGS-B with bounds) those
//! of the next Cauchy point's path. Where the step's products with the pairs are known from its
//! direction ([`DirectionProducts`]) and `y = g₊ − g` is long enough for differences of
//! gradient products to keep their digits, the pass is the pairs against `g₊` alone: `2k`
//! products, the least any form can take. Where the unbounded step's trial sweep took those too
//! ([`SweptGradient`]), there is no pass at all.
//!
//! The quasi-Newton direction without bounds, `−H·g = −γg − S·w + γY·u`, is the compact inverse
//! form of Byrd, Nocedal & Schnabel ([`Memory::inverse_step`], see `lbfgs`'s module docs);
//! L-BFGS-B's bounded step uses the same products in the compact form of `B` (`lbfgsb`'s
//! `Compact`).

use super::quasi_newton::{self, DERIVED_MIN_SQUARED_RATIO};
use crate::linalg::vector;
use crate::objective::EvalError;
use crate::solver::trial_sweep::TrialSweep;
use crate::space::VectorSpace;
use std::collections::VecDeque;

/// What a method knows of a new pair's products when it hands the pair over.
#[derive(Clone, Copy, Debug)]
pub(super) struct PairProducts {
    /// `sᵀy`.
    pub sy: f64,
    /// `yᵀy`.
    pub yy: f64,
    /// `sᵀs`.
    pub ss: f64,
    /// `g₊ᵀg₊`, where the step's pass took it; `None`: [`Memory::push`]'s pass takes it.
    pub gg: Option<f64>,
}

/// A pair for the memory: `s = x₊ − x`, `y = g₊ − g`, their products, and `[Yᵀs, Sᵀs]` with the
/// pairs held when the step was aimed, where they are known without a pass
/// ([`DirectionProducts::of_step`]).
pub(super) struct Pair<V> {
    pub s: V,
    pub y: V,
    pub products: PairProducts,
    pub s_with_held: Option<Vec<f64>>,
    /// The new gradient's products, where the step's trial sweep took them.
    pub g_new: Option<SweptGradient>,
}

/// The gradient `g₊` at the point a step reached, as the trial sweep of its direction `p`
/// measured it there (`solver::trial_sweep`, its `with` the pairs held when the step was
/// aimed, in [`Memory::columns`]' order), and the step along `p`, which gives `sᵀg₊`.
pub(super) struct SweptGradient {
    pub sweep: TrialSweep,
    pub step: f64,
}

/// A gradient's products with the pairs held, `[Yᵀg, Sᵀg]`, and with itself.
struct GradientProducts {
    pairs: Vec<f64>,
    gg: f64,
}

/// The unbounded direction as a combination: `d = −γ·g + Σⱼ cⱼ·vⱼ` over the pairs' vectors in
/// [`Memory::columns`]' order (`y`s, then `s`s), `c = [γ·u; −w]`.
pub(super) struct InverseStep {
    pub gamma: f64,
    pub coefficients: Vec<f64>,
}

/// The products of a direction `d = −γ·g + Σ cⱼ·vⱼ` with the pairs held, `[Yᵀd, Sᵀd]`, formed
/// from the pairs' own products and `[Yᵀg, Sᵀg]` (no pass), and `parts`, the sum of the norms
/// of the terms `d` is made of: each product's rounding is about `ε·‖v‖·parts`, a direct
/// product's `ε·‖v‖·‖d‖`.
pub(super) struct DirectionProducts {
    pairs: Vec<f64>,
    parts: f64,
}

impl DirectionProducts {
    /// `[Yᵀs, Sᵀs]` for the step `s = step·d` with `sᵀs = ss`, where they keep their digits
    /// ([`DERIVED_MIN_SQUARED_RATIO`]).
    pub fn of_step(&self, step: f64, ss: f64) -> Option<Vec<f64>> {
        let kept = ss >= DERIVED_MIN_SQUARED_RATIO * (step * self.parts).powi(2);
        kept.then(|| self.pairs.iter().map(|p| step * p).collect())
    }
}

/// The curvature pairs, oldest first, with the products the compact forms need.
pub(super) struct Memory<V> {
    capacity: usize,
    s: VecDeque<V>,
    y: VecDeque<V>,
    /// `sᵢᵀsⱼ`, `sᵢᵀyⱼ` and `yᵢᵀyⱼ`, `k × k` each, row-major in the pairs' order.
    ss: Vec<f64>,
    sy: Vec<f64>,
    yy: Vec<f64>,
    /// `θ = yᵀy / sᵀy` of the newest pair; 1 without pairs.
    theta: f64,
    /// The gradient `g` given to the last [`push`](Memory::push): `[Yᵀg, Sᵀg]`, made in the
    /// same pass as the new pair's products, and `gᵀg`; `None` once that gradient is not the
    /// current one.
    pairs_dot_gradient: Option<GradientProducts>,
    /// `[Yᵀd, Sᵀd]` for the path `d` given to the last [`push`](Memory::push), made in the same
    /// pass; `None` where none was given, or once that point is not the current one.
    pairs_dot_path: Option<Vec<f64>>,
}

impl<V> Memory<V> {
    pub fn new(capacity: usize) -> Self {
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

    /// `k`, the pairs held.
    pub fn len(&self) -> usize {
        self.s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.s.is_empty()
    }

    /// Forgets every pair (their vectors are freed).
    pub fn clear(&mut self) {
        *self = Memory::new(self.capacity);
    }

    /// The products with the last pushed point's vectors no longer describe the current one.
    pub fn forget_point(&mut self) {
        self.pairs_dot_gradient = None;
        self.pairs_dot_path = None;
    }

    /// `θ = yᵀy / sᵀy` of the newest pair; 1 without pairs.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// `sᵢᵀsⱼ`.
    pub fn ss(&self, i: usize, j: usize) -> f64 {
        self.ss[i * self.len() + j]
    }

    /// `sᵢᵀyⱼ`.
    pub fn sy(&self, i: usize, j: usize) -> f64 {
        self.sy[i * self.len() + j]
    }

    /// `yᵢᵀyⱼ`.
    pub fn yy(&self, i: usize, j: usize) -> f64 {
        self.yy[i * self.len() + j]
    }

    /// Pair `j`'s `s`.
    pub fn s(&self, j: usize) -> &V {
        &self.s[j]
    }

    /// Pair `j`'s `y`.
    pub fn y(&self, j: usize) -> &V {
        &self.y[j]
    }

    /// The pairs' vectors, `(s, y)`, oldest first, as they are (where they live).
    pub fn into_vectors(self) -> (VecDeque<V>, VecDeque<V>) {
        (self.s, self.y)
    }

    /// The stored vectors in `W`'s column order, unscaled: `y₀ … y_{k−1}, s₀ … s_{k−1}`.
    pub fn columns(&self) -> impl Iterator<Item = &V> {
        self.y.iter().chain(&self.s)
    }

    /// `[Yᵀg, Sᵀg]` for the current gradient, where the last push's pass took them.
    pub fn known_pairs_dot(&self) -> Option<&[f64]> {
        (self.pairs_dot_gradient.as_ref()).map(|known| known.pairs.as_slice())
    }

    /// `[Yᵀd, Sᵀd]` for the path given to the last push, where one was.
    pub fn pairs_dot_path(&self) -> Option<&[f64]> {
        self.pairs_dot_path.as_deref()
    }

    /// `[Yᵀg, Sᵀg]` for the current gradient `g`: the products the newest pair's pass took
    /// with it, else one pass, which also takes `gᵀg` and keeps them for the next push (whose
    /// pair's `y` starts at `g`), as a push does.
    pub fn pairs_dot<S>(&mut self, space: &mut S, g: &V) -> Result<Vec<f64>, EvalError>
    where
        S: VectorSpace<Vector = V> + ?Sized,
    {
        if let Some(known) = self.known_pairs_dot() {
            return Ok(known.to_vec());
        }
        let vectors: Vec<&V> = self.columns().chain([g]).collect();
        let mut out = vec![0.0; vectors.len()];
        space.dots(&vectors, &[g], &mut out)?;
        let gg = out.pop().unwrap_or_default();
        self.pairs_dot_gradient = Some(GradientProducts {
            pairs: out.clone(),
            gg,
        });
        Ok(out)
    }

    /// The products of the pairs' vectors in `W`'s column order, unscaled:
    /// `[[YᵀY, YᵀS], [SᵀY, SᵀS]]`, `2k × 2k`.
    pub fn pair_gram(&self) -> Vec<f64> {
        let k = self.len();
        let width = 2 * k;
        let mut gram = vec![0.0; width * width];
        for i in 0..k {
            for j in 0..k {
                gram[i * width + j] = self.yy(i, j);
                gram[i * width + k + j] = self.sy(j, i);
                gram[(k + i) * width + j] = self.sy(i, j);
                gram[(k + i) * width + k + j] = self.ss(i, j);
            }
        }
        gram
    }

    /// The quasi-Newton direction `−H·g` of the compact inverse form, as a combination of `g`
    /// and the pairs, from `with_g = [Yᵀg, Sᵀg]`: `(u, w)` by
    /// [`quasi_newton::inverse_coefficients`] (`R` the upper triangle of `SᵀY`), `γ = sᵀy/yᵀy`
    /// of the newest pair. At least one pair must be held.
    pub fn inverse_step(&self, with_g: &[f64]) -> InverseStep {
        let k = self.len();
        let gamma = self.sy(k - 1, k - 1) / self.yy(k - 1, k - 1);
        let (b, a) = with_g.split_at(k);
        let (u, w) = quasi_newton::inverse_coefficients(
            |i, j| self.sy(i, j),
            |i, j| self.yy(i, j),
            a,
            b,
            gamma,
        );
        let coefficients = (u.iter().map(|u| gamma * u))
            .chain(w.iter().map(|w| -w))
            .collect();
        InverseStep {
            gamma,
            coefficients,
        }
    }

    /// The products of `step`'s direction with the pairs, from the kept products, where the
    /// last push took the gradient's (`None` otherwise: the next pair's are then taken by its
    /// pass). With no pairs held there are none to form.
    pub fn direction_products(&self, step: &InverseStep) -> Option<DirectionProducts> {
        let known = self.pairs_dot_gradient.as_ref()?;
        let (c, gamma) = (&step.coefficients, step.gamma);
        // `d = −γg + Σ cⱼ·vⱼ`, so `vᵢᵀd = −γ·vᵢᵀg + Σ cⱼ·vᵢᵀvⱼ`.
        let gram = self.pair_gram();
        let width = c.len();
        let pairs = (0..width)
            .map(|i| vector::dot(&gram[i * width..(i + 1) * width], c) - gamma * known.pairs[i])
            .collect();
        let parts = gamma * known.gg.sqrt()
            + (0..width)
                .map(|j| c[j].abs() * gram[j * width + j].sqrt())
                .sum::<f64>();
        Some(DirectionProducts { pairs, parts })
    }

    /// Adds `pair`, dropping the oldest at capacity and returning its vectors (for the next
    /// pair to be written into), and takes `[Yᵀg, Sᵀg]` for the current gradient `g` (the
    /// pair's `g₊`), and `[Yᵀd, Sᵀd]` for the next Cauchy point's `path` `d` where one is given,
    /// in the same pass. The products of the pairs kept are kept (shifted past a dropped one);
    /// only the new pair's row and column are new. `s`'s products with the older pairs are the
    /// pair's `s_with_held` where it has them; `y`'s are `vᵀg₊ − vᵀg`, from this pass's products
    /// with `g₊` and the last one's with `g`, where `y` is long enough against the gradients for
    /// the difference to keep its digits ([`DERIVED_MIN_SQUARED_RATIO`]); the pass takes the
    /// others. Where the pair's `g₊ᵀg₊` is known (L-BFGS-B), both are derived or both taken;
    /// where this pass takes it (L-BFGS, `gg: None`), each is decided alone, `y`'s after the
    /// pass (a second one takes them where it shows `y` short). Where the pair brings `g₊`'s
    /// products from the trial sweep of its direction (`g_new`), `s`'s are known and `y`'s
    /// derivable, no pass is made: `g₊`'s products with the new pair follow from the sweep's
    /// too.
    ///
    /// The new diagonal entries are the pair's own `sᵀy`, `yᵀy` and `sᵀs`.
    pub fn push<S>(
        &mut self,
        space: &mut S,
        pair: Pair<V>,
        g: &V,
        path: Option<&V>,
    ) -> Result<Option<(V, V)>, EvalError>
    where
        S: VectorSpace<Vector = V> + ?Sized,
    {
        let Pair {
            s,
            y,
            products: sums,
            s_with_held,
            g_new,
        } = pair;
        let previous = self.len();
        let dropped = usize::from(previous == self.capacity);
        let held = s_with_held.filter(|held| held.len() == 2 * previous);
        let before = self.pairs_dot_gradient.take();
        let y_derivable = |gg: f64| {
            before
                .as_ref()
                .is_some_and(|b| sums.yy >= DERIVED_MIN_SQUARED_RATIO * (b.gg + gg))
        };
        let evicted = if dropped == 1 {
            self.s.pop_front().zip(self.y.pop_front())
        } else {
            None
        };
        self.theta = sums.yy / sums.sy;
        self.s.push_back(s);
        self.y.push_back(y);
        let k = self.len();
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
        // Indexed as the pairs were before the push: `[Y, S]` of `previous`.
        let old = |products: &[f64], half: usize, j: usize| products[half * previous + j + dropped];
        // s_with[j] = sᵀy_j and s_with[k + j] = sᵀs_j, from the products the step's direction
        // gave; y_with likewise, as differences of the two gradients' products.
        let from_held = |held: &[f64]| {
            let mut s_with = vec![0.0; 2 * k];
            for j in 0..kept {
                s_with[j] = old(held, 0, j);
                s_with[k + j] = old(held, 1, j);
            }
            s_with
        };
        let differences = |g_with: &[f64], before: &GradientProducts| {
            let mut y_with = vec![0.0; 2 * k];
            for j in 0..kept {
                y_with[j] = g_with[j] - old(&before.pairs, 0, j);
                y_with[k + j] = g_with[k + j] - old(&before.pairs, 1, j);
            }
            y_with
        };

        // The trial sweep took `g₊`'s products with the pairs held before this push; with
        // `s`'s from its direction and `y`'s as differences, every product is known: no pass.
        if let Some(SweptGradient { sweep, step }) = g_new
            && let (Some(held), Some(before)) = (&held, &before)
            && sweep.with.len() == 2 * previous
            && path.is_none()
            && y_derivable(sweep.gg)
        {
            let mut g_with = vec![0.0; 2 * k];
            for j in 0..kept {
                g_with[j] = old(&sweep.with, 0, j);
                g_with[k + j] = old(&sweep.with, 1, j);
            }
            // The pair's own: `yᵀg₊ = g₊ᵀg₊ − gᵀg₊`, which keeps its digits where `y`'s
            // differences do, and `sᵀg₊ = step·pᵀg₊`.
            g_with[kept] = sweep.gg - sweep.gradients;
            g_with[k + kept] = step * sweep.slope;
            let (s_with, y_with) = (from_held(held), differences(&g_with, before));
            self.pairs_dot_path = None;
            self.join(sums, &s_with, &y_with, g_with, sweep.gg);
            return Ok(evicted);
        }

        // Which of the new pair's products the pass takes. L-BFGS-B knows `g₊ᵀg₊` and decides
        // now, both derived or both taken (so a bounded step's pair, with no `s_with_held`,
        // takes every product directly, as its memory always has); L-BFGS takes `s`'s where its
        // direction's products do not give them and decides `y`'s after the pass, which takes
        // `g₊ᵀg₊`.
        // With no older pairs the new pair's products are its own, known: neither is taken.
        let (s_in_pass, y_in_pass) = match sums.gg {
            _ if kept == 0 => (false, false),
            Some(gg) => {
                let derive = held.is_some() && y_derivable(gg);
                (!derive, !derive)
            }
            None => (held.is_none(), false),
        };
        // One pass: every y and s (and `g₊` where `g₊ᵀg₊` is to be taken) against the new s and
        // y where taken, `g₊` and the path (each product `dot`'s bits).
        let mut with: Vec<&V> = Vec::new();
        let s_slot = s_in_pass.then(|| push_slot(&mut with, &self.s[kept]));
        let y_slot = y_in_pass.then(|| push_slot(&mut with, &self.y[kept]));
        let g_slot = push_slot(&mut with, g);
        let path_slot = path.map(|path| push_slot(&mut with, path));
        let mut vectors: Vec<&V> = self.columns().collect();
        if sums.gg.is_none() {
            vectors.push(g);
        }
        let mut products = vec![0.0; vectors.len() * with.len()];
        space.dots(&vectors, &with, &mut products)?;
        let stride = with.len();
        let with_pairs =
            |slot: usize| -> Vec<f64> { (0..2 * k).map(|i| products[i * stride + slot]).collect() };
        let gg = sums.gg.unwrap_or_else(|| products[2 * k * stride + g_slot]);
        let g_with = with_pairs(g_slot);
        let s_with = match (s_slot, &held) {
            (Some(slot), _) => with_pairs(slot),
            (None, held) => from_held(held.as_deref().unwrap_or_default()),
        };
        let y_with = match (y_slot, &before) {
            (Some(slot), _) => with_pairs(slot),
            // No older pairs: only the diagonal, set below.
            (None, _) if kept == 0 => vec![0.0; 2 * k],
            (None, Some(before)) if y_derivable(gg) => differences(&g_with, before),
            (None, _) => {
                // L-BFGS's `y`, too short against the gradients the pass measured (or with no
                // products of the last gradient): its products directly.
                let mut direct = vec![0.0; 2 * k];
                let columns: Vec<&V> = self.columns().collect();
                space.dots(&columns, &[&self.y[kept]], &mut direct)?;
                direct
            }
        };
        self.pairs_dot_path = path_slot.map(with_pairs);
        self.join(sums, &s_with, &y_with, g_with, gg);
        Ok(evicted)
    }

    /// The newest pair's row and column of the products, from its own (`sums`) and its
    /// vectors' with every pair held (`s_with`, `y_with`, in [`columns`](Memory::columns)'
    /// order), and the new gradient's (`g_with`, `gg`).
    fn join(
        &mut self,
        sums: PairProducts,
        s_with: &[f64],
        y_with: &[f64],
        g_with: Vec<f64>,
        gg: f64,
    ) {
        let k = self.len();
        let kept = k - 1;
        self.pairs_dot_gradient = Some(GradientProducts { pairs: g_with, gg });
        for j in 0..k {
            (self.ss[kept * k + j], self.ss[j * k + kept]) = (s_with[k + j], s_with[k + j]);
            (self.yy[kept * k + j], self.yy[j * k + kept]) = (y_with[j], y_with[j]);
            self.sy[kept * k + j] = s_with[j];
            self.sy[j * k + kept] = y_with[k + j];
        }
        let diagonal = kept * k + kept;
        (self.ss[diagonal], self.sy[diagonal], self.yy[diagonal]) = (sums.ss, sums.sy, sums.yy);
    }
}

/// Appends `v` to `with`, returning its index.
fn push_slot<'v, V>(with: &mut Vec<&'v V>, v: &'v V) -> usize {
    with.push(v);
    with.len() - 1
}

#[cfg(test)]
mod tests;
