//! The BFGS inverse Hessian applied implicitly, from its curvature pairs.

use super::workspace::Workspace;
use crate::objective::EvalError;
use crate::objective::VectorSpace;
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
    // Each `axpy` is fused with the dot product the next pair needs, over the vector just
    // updated (`VectorSpace::axpy_dot`): the same numbers as separate passes, half the traffic.
    let mut newest_first = pairs.iter().rev().peekable();
    let mut s_dot = match pairs.back() {
        Some(newest) => workspace.space_mut().dot(&newest.s, v)?,
        None => 0.0,
    };
    while let Some(pair) = newest_first.next() {
        let alpha = pair.rho * s_dot;
        match newest_first.peek() {
            Some(older) => {
                s_dot = workspace
                    .space_mut()
                    .axpy_dot(-alpha, &pair.y, v, &older.s)?
            }
            None => workspace.space_mut().axpy(-alpha, &pair.y, v)?,
        }
        alphas.push(alpha);
    }
    apply_h0(workspace, v)?;
    // `alphas` is newest first; this loop goes oldest first.
    let mut oldest_first = pairs.iter().zip(alphas.iter().rev()).peekable();
    let mut y_dot = match pairs.front() {
        Some(oldest) => workspace.space_mut().dot(&oldest.y, v)?,
        None => 0.0,
    };
    while let Some((pair, &alpha)) = oldest_first.next() {
        let beta = pair.rho * y_dot;
        match oldest_first.peek() {
            Some((newer, _)) => {
                y_dot = workspace
                    .space_mut()
                    .axpy_dot(alpha - beta, &pair.s, v, &newer.y)?
            }
            None => workspace.space_mut().axpy(alpha - beta, &pair.s, v)?,
        }
    }
    Ok(())
}
