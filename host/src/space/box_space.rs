//! The vector passes of a quasi-Newton step within box bounds `lower ≤ x ≤ upper`, L-BFGS-B's
//! (`solver::lbfgsb`): the projected steepest-descent path and its breakpoints, the Cauchy
//! point, the Gram matrix of the variables left free, the projected subspace step, the line
//! toward the step's target and the points on it, and the new pair. The solver decides on the
//! host (which breakpoints the path passes, the compact form's small matrices); these are its
//! `n`-sized work, done where the vectors live. Each slope and product a pass returns has
//! [`VectorSpace::dot`]'s bits (`masked_gram`'s are its own sums); each maximum is of finite
//! values (the driver tests the gradient's finiteness before it asks).

use super::VectorSpace;
use crate::error::EvalError;

/// A box as vectors of a space: each variable's lower and upper bound, `±∞` where a side has
/// none.
pub struct BoxVectors<V> {
    /// The lower bounds.
    pub lower: V,
    /// The upper bounds.
    pub upper: V,
}

/// A variable's breakpoint `t` (along the Cauchy path, or the fraction of the subspace step
/// that meets its bound) and its index, ordered by `t`, then by index (`total_cmp`: the
/// breakpoints are never NaN).
#[derive(Clone, Copy, Debug)]
pub struct Breakpoint(pub f64, pub usize);

impl PartialEq for Breakpoint {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

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

/// What [`BoxSpace::new_pair`] sums (each product the bits of [`VectorSpace::dot`]).
#[derive(Clone, Copy, Debug)]
pub struct PairSums {
    /// `sᵀy`.
    pub sy: f64,
    /// `yᵀy`.
    pub yy: f64,
    /// `sᵀs`.
    pub ss: f64,
    /// `gᵀs`, the step's slope.
    pub gs: f64,
    /// `g₊ᵀg₊`.
    pub gg: f64,
    /// `‖g₊‖∞`, NaN if `g₊` has a NaN.
    pub g_new_max: f64,
}

impl From<[f64; 6]> for PairSums {
    /// `[sᵀy, yᵀy, sᵀs, gᵀs, g₊ᵀg₊, ‖g₊‖∞]`.
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

/// A [`VectorSpace`] that can make the passes of a step within a box. `bounds: None` is the
/// box with no finite side, which needs no vectors.
pub trait BoxSpace: VectorSpace {
    /// One flag per variable: whether it is free (strictly inside its bounds).
    type Mask;

    /// Where the Cauchy walk's later breakpoints wait in order ([`order_later`](Self::order_later)).
    type Later: Default;

    /// A mask of `n` flags.
    fn new_mask(&mut self) -> Result<Self::Mask, EvalError>;

    /// `‖x − P(x − g)‖∞`, the projected gradient's ∞-norm (`P` the projection into the box;
    /// without bounds, `‖g‖∞`).
    fn projected_gradient_norm(
        &mut self,
        bounds: Option<&BoxVectors<Self::Vector>>,
        x: &Self::Vector,
        g: &Self::Vector,
    ) -> Result<f64, EvalError>;

    /// The projected steepest-descent path at `(x, g)`: `times ←` when each variable meets its
    /// bound along `−g` (0: it cannot move, `∞`: it never meets one), `path ← −g`, 0 where a
    /// variable cannot move; and the projected gradient's ∞-norm, from the same pass.
    fn steepest_path(
        &mut self,
        bounds: Option<&BoxVectors<Self::Vector>>,
        x: &Self::Vector,
        g: &Self::Vector,
        times: &mut Self::Vector,
        path: &mut Self::Vector,
    ) -> Result<f64, EvalError>;

    /// The `count` earliest breakpoints of `times` (its finite positive entries) strictly after
    /// `after` (`None`: all) in [`Breakpoint`]'s order (time, then index: exactly the `count`
    /// least, ties included), and how many breakpoints there are after `after`.
    fn earliest_breakpoints(
        &mut self,
        times: &Self::Vector,
        after: Option<Breakpoint>,
        count: usize,
    ) -> Result<(Vec<Breakpoint>, usize), EvalError>;

    /// Whether the Cauchy walk past the earliest breakpoints should take the next ones from
    /// [`earliest_breakpoints`](Self::earliest_breakpoints) again, batch by batch, while few
    /// are held, before it orders all the rest ([`order_later`](Self::order_later)). The
    /// default orders them at once, which suits host memory; a GPU's space picks the first
    /// batches, each of which crosses fewer bytes than the order's passes over all `n`.
    fn picks_later_breakpoints(&self) -> bool {
        false
    }

    /// Every breakpoint of `times` strictly after `after`, put in order into `later` (storage
    /// the walk keeps from one iteration to the next) for [`next_later`](Self::next_later).
    fn order_later(
        &mut self,
        times: &Self::Vector,
        after: Breakpoint,
        later: &mut Self::Later,
    ) -> Result<(), EvalError>;

    /// The next `count` breakpoints of `later` in order (fewer at its end, none past it), with
    /// their rows of `vectors` into `rows` as [`gather`](Self::gather) writes them.
    fn next_later(
        &mut self,
        later: &mut Self::Later,
        vectors: &[&Self::Vector],
        count: usize,
        rows: &mut Vec<f64>,
    ) -> Result<Vec<Breakpoint>, EvalError>;

    /// `out[r·k + j] ← vectors[j][indices[r]]` (`k = vectors.len()`, `out` of
    /// `indices.len()·k` entries): a few rows of the vectors, brought to the host.
    fn gather(
        &mut self,
        vectors: &[&Self::Vector],
        indices: &[usize],
        out: &mut [f64],
    ) -> Result<(), EvalError>;

    /// `v[i] ← value` for each `(i, value)` of `entries` (distinct indices).
    fn scatter(&mut self, v: &mut Self::Vector, entries: &[(usize, f64)]) -> Result<(), EvalError>;

    /// The point `t` along the path: `cauchy ← x + t·path` where `path` is not 0, `x` where it
    /// is.
    fn path_point(
        &mut self,
        x: &Self::Vector,
        t: f64,
        path: &Self::Vector,
        cauchy: &mut Self::Vector,
    ) -> Result<(), EvalError>;

    /// `free ←` which variables lie strictly inside their bounds at `point`; returns how many.
    fn free_variables(
        &mut self,
        bounds: &BoxVectors<Self::Vector>,
        point: &Self::Vector,
        free: &mut Self::Mask,
    ) -> Result<usize, EvalError>;

    /// The Gram matrix of the rows `i` with `free[i] == keep` and their products with `u`:
    /// with `wᵢ = [c₀·v₀[i], c₁·v₁[i], …]` for `columns = [(c₀, v₀), …]` and
    /// `uᵢ = Σ aₜ·uₜ[i]` over `u = [(a₀, u₀), …]` (in order, as [`VectorSpace::combine_dot`]
    /// forms an entry), `Σ wᵢ·wᵢᵀ` (`w × w` by rows, symmetric to the bit) and `Σ uᵢ·wᵢ`.
    fn masked_gram(
        &mut self,
        columns: &[(f64, &Self::Vector)],
        free: &Self::Mask,
        keep: bool,
        u: &[(f64, &Self::Vector)],
    ) -> Result<(Vec<f64>, Vec<f64>), EvalError>;

    /// A subspace step from `cauchy` and its projection, in one pass: `step ← Σ cⱼ·vⱼ` over
    /// `terms` (as [`VectorSpace::combine_dot`] forms it), `target ← P(cauchy + step)` for the
    /// free variables and `cauchy` for the others, then [`aim`](Self::aim) at `target`.
    #[allow(clippy::too_many_arguments)]
    fn projected_step(
        &mut self,
        terms: &[(f64, &Self::Vector)],
        bounds: &BoxVectors<Self::Vector>,
        free: &Self::Mask,
        cauchy: &Self::Vector,
        x: &Self::Vector,
        g: &Self::Vector,
        step: &mut Self::Vector,
        target: &mut Self::Vector,
        direction: &mut Self::Vector,
    ) -> Result<(f64, f64), EvalError>;

    /// The subspace `step` from `cauchy` cut at the first bound a free variable meets: `α` the
    /// least room `room(lower, upper, cauchy, step)` below 1 over the free variables (the lowest
    /// index among equals; 1 where none is below), `target ← cauchy + α·step` over the free
    /// variables, the bound itself (upper where `step > 0`, else lower) for the one that meets
    /// it, `cauchy` for the others.
    fn truncated_step(
        &mut self,
        bounds: &BoxVectors<Self::Vector>,
        free: &Self::Mask,
        cauchy: &Self::Vector,
        step: &Self::Vector,
        target: &mut Self::Vector,
    ) -> Result<(), EvalError>;

    /// The line toward the step's target: `direction ← target − x`, its slope `gᵀd` and the
    /// multiple of `d` at which it first leaves the box (`∞`: never).
    fn aim(
        &mut self,
        bounds: Option<&BoxVectors<Self::Vector>>,
        x: &Self::Vector,
        g: &Self::Vector,
        target: &Self::Vector,
        direction: &mut Self::Vector,
    ) -> Result<(f64, f64), EvalError>;

    /// An unbounded step: `direction ← Σ cⱼ·vⱼ` over `terms` (as
    /// [`VectorSpace::combine_dot`] forms it), `target ← x + direction`, and the slope
    /// `gᵀdirection`. The default makes the two passes; a space that can makes one.
    fn combined_step(
        &mut self,
        terms: &[(f64, &Self::Vector)],
        x: &Self::Vector,
        g: &Self::Vector,
        direction: &mut Self::Vector,
        target: &mut Self::Vector,
    ) -> Result<f64, EvalError> {
        let slope = self.combine_dot(terms, direction, g)?;
        self.ray_point(x, 1.0, direction, target)?;
        Ok(slope)
    }

    /// `out ← P(x + step·d)`, a point of the line within the box.
    fn clipped_ray_point(
        &mut self,
        bounds: &BoxVectors<Self::Vector>,
        x: &Self::Vector,
        step: f64,
        d: &Self::Vector,
        out: &mut Self::Vector,
    ) -> Result<(), EvalError>;

    /// `out[i] ←` which bound `x[i]` is at: −1 its lower, 1 its upper, 0 neither
    /// ([`active`](gpu_kernels::bounds::active)).
    fn active_mask(
        &mut self,
        bounds: &BoxVectors<Self::Vector>,
        x: &Self::Vector,
        out: &mut Self::Vector,
    ) -> Result<(), EvalError>;

    /// The new pair from the step `step·d` that took the gradient from `g` to `g_new`:
    /// `s ← step·d` and `y ← g_new − g`, with their products, in one pass.
    fn new_pair(
        &mut self,
        step: f64,
        d: &Self::Vector,
        g_new: &Self::Vector,
        g: &Self::Vector,
        s: &mut Self::Vector,
        y: &mut Self::Vector,
    ) -> Result<PairSums, EvalError>;
}

// `BoxSpace` on host vectors.
mod host;

pub(crate) use host::projected_gradient_norm;

#[cfg(test)]
mod tests;
