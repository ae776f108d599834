//! The BFGS inverse Hessian applied implicitly, from its curvature pairs.

use super::workspace::Workspace;
use crate::objective::EvalError;
use std::collections::VecDeque;

/// One BFGS update: the step `s = x₊ − x`, the gradient change `y = g₊ − g`, and `ρ`
/// (normally `1/yᵀs`).
#[derive(Clone, Debug)]
pub(super) struct CurvaturePair<V> {
    pub s: V,
    pub y: V,
    pub rho: f64,
}

/// `v ← H·v`, where `H` is `H₀` updated by `pairs` (oldest first), each update being
/// `H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ`: the two-loop recursion (Nocedal & Wright,
/// Algorithm 7.4), `O(n)` per pair plus `apply_h0`, which must do `v ← H₀·v`.
/// `alphas` is scratch space, kept by the caller so that no call allocates once it has grown.
pub(super) fn two_loop<W: Workspace>(
    workspace: &mut W,
    pairs: &VecDeque<CurvaturePair<W::Vector>>,
    v: &mut W::Vector,
    alphas: &mut Vec<f64>,
    apply_h0: impl FnOnce(&mut W, &mut W::Vector) -> Result<(), EvalError>,
) -> Result<(), EvalError> {
    alphas.clear();
    for pair in pairs.iter().rev() {
        let alpha = pair.rho * workspace.dot(&pair.s, v)?;
        workspace.axpy(-alpha, &pair.y, v)?;
        alphas.push(alpha);
    }
    apply_h0(workspace, v)?;
    // `alphas` is newest first; this loop goes oldest first.
    for (pair, &alpha) in pairs.iter().zip(alphas.iter().rev()) {
        let beta = pair.rho * workspace.dot(&pair.y, v)?;
        workspace.axpy(alpha - beta, &pair.s, v)?;
    }
    Ok(())
}
