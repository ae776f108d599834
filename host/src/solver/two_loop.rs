//! The BFGS inverse Hessian applied implicitly, from its curvature pairs.

use crate::objective::EvalError;
use crate::space::VectorSpace;
use std::collections::VecDeque;

/// One BFGS update: the step `s = x₊ − x`, the gradient change `y = g₊ − g`, and `ρ`
/// (normally `1/yᵀs`).
#[derive(Clone, Debug)]
pub(super) struct CurvaturePair<V> {
    pub s: V,
    pub y: V,
    pub rho: f64,
}

/// Curvature pairs as the two-loop recursion reads them: by position, oldest first.
pub(super) trait PairList<V> {
    /// How many pairs there are.
    fn count(&self) -> usize;
    /// The `i`-th pair, oldest first: `(s, y, ρ)`.
    fn pair(&self, i: usize) -> (&V, &V, f64);
}

impl<V> PairList<V> for VecDeque<CurvaturePair<V>> {
    fn count(&self) -> usize {
        self.len()
    }

    fn pair(&self, i: usize) -> (&V, &V, f64) {
        let pair = &self[i];
        (&pair.s, &pair.y, pair.rho)
    }
}

/// `v ← H·v`, where `H` is `H₀` updated by `pairs` (oldest first), each update being
/// `H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ`: the two-loop recursion (Nocedal & Wright,
/// Algorithm 7.4), `O(n)` per pair plus `apply_h0`, which must do `v ← H₀·v`.
/// `alphas` is scratch space, kept by the caller so that no call allocates once it has grown.
pub(super) fn two_loop<S: VectorSpace>(
    space: &mut S,
    pairs: &impl PairList<S::Vector>,
    v: &mut S::Vector,
    alphas: &mut Vec<f64>,
    apply_h0: impl FnOnce(&mut S, &mut S::Vector) -> Result<(), EvalError>,
) -> Result<(), EvalError> {
    let k = pairs.count();
    alphas.clear();
    alphas.resize(k, 0.0);
    if k == 0 {
        return apply_h0(space, v);
    }
    // Each `axpy` is fused with the dot product the next pair needs, over the vector just
    // updated (`VectorSpace::axpy_dot`): the same numbers as separate passes, half the traffic.
    let mut s_dot = space.dot(pairs.pair(k - 1).0, v)?;
    for i in (0..k).rev() {
        let (_, y, rho) = pairs.pair(i);
        alphas[i] = rho * s_dot;
        match i.checked_sub(1) {
            Some(older) => s_dot = space.axpy_dot(-alphas[i], y, v, pairs.pair(older).0)?,
            None => space.axpy(-alphas[i], y, v)?,
        }
    }
    apply_h0(space, v)?;
    let mut y_dot = space.dot(pairs.pair(0).1, v)?;
    for (i, &alpha) in alphas.iter().enumerate() {
        let (s, _, rho) = pairs.pair(i);
        let beta = rho * y_dot;
        if i + 1 < k {
            y_dot = space.axpy_dot(alpha - beta, s, v, pairs.pair(i + 1).1)?;
        } else {
            space.axpy(alpha - beta, s, v)?;
        }
    }
    Ok(())
}
