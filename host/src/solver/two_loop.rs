//! The BFGS inverse Hessian applied implicitly, from its curvature pairs.

use super::vector::{axpy, dot};
use std::collections::VecDeque;

/// One BFGS update: the step `s = x₊ − x`, the gradient change `y = g₊ − g`, and `ρ`
/// (normally `1/yᵀs`).
#[derive(Clone, Debug)]
pub(super) struct CurvaturePair {
    pub s: Vec<f64>,
    pub y: Vec<f64>,
    pub rho: f64,
}

/// `v ← H·v`, where `H` is `H₀` updated by `pairs` (oldest first), each update being
/// `H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ`: the two-loop recursion (Nocedal & Wright,
/// Algorithm 7.4), `O(n)` per pair plus `apply_h0`, which must do `v ← H₀·v`.
/// `alphas` is scratch space, kept by the caller so that no call allocates once it has grown.
pub(super) fn two_loop(
    pairs: &VecDeque<CurvaturePair>,
    v: &mut [f64],
    alphas: &mut Vec<f64>,
    apply_h0: impl FnOnce(&mut [f64]),
) {
    alphas.clear();
    for pair in pairs.iter().rev() {
        let alpha = pair.rho * dot(&pair.s, v);
        axpy(-alpha, &pair.y, v);
        alphas.push(alpha);
    }
    apply_h0(v);
    // `alphas` is newest first; this loop goes oldest first.
    for (pair, &alpha) in pairs.iter().zip(alphas.iter().rev()) {
        let beta = pair.rho * dot(&pair.y, v);
        axpy(alpha - beta, &pair.s, v);
    }
}
