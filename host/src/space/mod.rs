//! The ground floor: where a solve keeps its vectors, and the arithmetic it does on them.
//!
//! The quasi-Newton driver, the line search and the inverse-Hessian products need little of
//! their vectors: a few BLAS-1 operations and reductions that return a scalar. [`VectorSpace`]
//! is that list; [`BoxSpace`] adds L-BFGS-B's passes over a box. [`HostVectors`] keeps the
//! vectors in host memory, rayon-parallel. The GPU backend's device vectors implement both
//! traits too: they keep the vectors next to a term problem's data, so an iteration moves only
//! scalars over PCIe. Nothing here knows a backend, an objective or a solver.

mod box_space;

pub(crate) use box_space::projected_gradient_norm;
pub use box_space::{BoxSpace, BoxVectors, Breakpoint, PairSums};

use crate::error::EvalError;
use crate::linalg::vector::{self, dot, map_in_place, norm};
use std::borrow::Cow;

/// Where a solve keeps its `n`-vectors, and the arithmetic it does on them. Every vector of one
/// space has the same `n` entries.
pub trait VectorSpace {
    /// A vector of this space.
    type Vector;

    /// `n`, the entries of every vector.
    fn dim(&self) -> usize;

    /// `n` zeros.
    fn zeros(&mut self) -> Result<Self::Vector, EvalError>;
    /// A vector holding `x`.
    fn upload(&mut self, x: &[f64]) -> Result<Self::Vector, EvalError>;
    /// `v` in host memory (borrowed where it already is).
    fn download<'v>(&'v self, v: &'v Self::Vector) -> Result<Cow<'v, [f64]>, EvalError>;
    /// `v` as a host vector, moved where it already is one.
    fn host_vector(&mut self, v: Self::Vector) -> Result<Vec<f64>, EvalError>;

    /// `aᵀb`.
    fn dot(&mut self, a: &Self::Vector, b: &Self::Vector) -> Result<f64, EvalError>;
    /// The end of a quasi-Newton step: `p ← step·p` (the step `s`), `g ← g_new − g` (the
    /// gradient change `y`), with `vecnorm(g_new, ord)`, `‖s‖₂`, `sᵀy` and `yᵀy`. The default
    /// makes the separate passes; a space that can makes one.
    fn finish_step(
        &mut self,
        step: f64,
        p: &mut Self::Vector,
        g_new: &Self::Vector,
        g: &mut Self::Vector,
        ord: f64,
    ) -> Result<StepEnd, EvalError> {
        finish_step_pass_by_pass(self, step, p, g_new, g, ord)
    }
    /// `y ← y + alpha·x`, then `zᵀy`: the two-loop recursion's steps. The default is
    /// [`axpy`](Self::axpy) then [`dot`](Self::dot); a space that can fuses them.
    fn axpy_dot(
        &mut self,
        alpha: f64,
        x: &Self::Vector,
        y: &mut Self::Vector,
        z: &Self::Vector,
    ) -> Result<f64, EvalError> {
        self.axpy(alpha, x, y)?;
        self.dot(z, y)
    }
    /// `out[i·k + j] ← vectors[i]ᵀ with[j]` (`k = with.len()`): L-BFGS's products, all of
    /// them from one pass where the space can. The default takes them one by one.
    fn dots(
        &mut self,
        vectors: &[&Self::Vector],
        with: &[&Self::Vector],
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        dots_one_by_one(self, vectors, with, out)
    }
    /// `out ← Σ cᵢ·vᵢ` over `terms = [(c₀, v₀), (c₁, v₁), …]`, as `out ← c₀·v₀` then
    /// `out ← out + cᵢ·vᵢ` in order, and then `zᵀout`. The default makes those passes; a
    /// workspace that can makes one.
    fn combine_dot(
        &mut self,
        terms: &[(f64, &Self::Vector)],
        out: &mut Self::Vector,
        z: &Self::Vector,
    ) -> Result<f64, EvalError> {
        combine_term_by_term(self, terms, out)?;
        self.dot(z, out)
    }
    /// scipy's `vecnorm(v, ord)` (see `vector::norm`).
    fn norm(&mut self, v: &Self::Vector, ord: f64) -> Result<f64, EvalError>;
    /// `y ← y + alpha·x`.
    fn axpy(&mut self, alpha: f64, x: &Self::Vector, y: &mut Self::Vector)
    -> Result<(), EvalError>;
    /// `v ← alpha·v`.
    fn scale(&mut self, alpha: f64, v: &mut Self::Vector) -> Result<(), EvalError>;
    /// `out ← x + step·p`.
    fn ray_point(
        &mut self,
        x: &Self::Vector,
        step: f64,
        p: &Self::Vector,
        out: &mut Self::Vector,
    ) -> Result<(), EvalError>;
    /// `old ← new − old`.
    fn difference(&mut self, new: &Self::Vector, old: &mut Self::Vector) -> Result<(), EvalError>;
    /// `to ← from`.
    fn copy(&mut self, from: &Self::Vector, to: &mut Self::Vector) -> Result<(), EvalError>;
}

/// [`VectorSpace::finish_step`] from a scaling, a difference, dot products and norms.
pub(crate) fn finish_step_pass_by_pass<S: VectorSpace + ?Sized>(
    space: &mut S,
    step: f64,
    p: &mut S::Vector,
    g_new: &S::Vector,
    g: &mut S::Vector,
    ord: f64,
) -> Result<StepEnd, EvalError> {
    space.scale(step, p)?;
    space.difference(g_new, g)?;
    let (sy, yy) = (space.dot(p, g)?, space.dot(g, g)?);
    Ok(StepEnd {
        gradient_norm: space.norm(g_new, ord)?,
        step_norm: space.norm(p, 2.0)?,
        sy,
        yy,
    })
}

/// [`VectorSpace::dots`] from separate [`VectorSpace::dot`]s.
pub(crate) fn dots_one_by_one<S: VectorSpace + ?Sized>(
    space: &mut S,
    vectors: &[&S::Vector],
    with: &[&S::Vector],
    out: &mut [f64],
) -> Result<(), EvalError> {
    let pairs = vectors
        .iter()
        .flat_map(|v| with.iter().map(move |w| (v, w)));
    for (product, (v, w)) in out.iter_mut().zip(pairs) {
        *product = space.dot(v, w)?;
    }
    Ok(())
}

/// The combination of [`VectorSpace::combine_dot`] from a copy, a scaling and
/// [`VectorSpace::axpy`]s.
pub(crate) fn combine_term_by_term<S: VectorSpace + ?Sized>(
    space: &mut S,
    terms: &[(f64, &S::Vector)],
    out: &mut S::Vector,
) -> Result<(), EvalError> {
    let Some((&(c0, v0), rest)) = terms.split_first() else {
        *out = space.zeros()?;
        return Ok(());
    };
    space.copy(v0, out)?;
    space.scale(c0, out)?;
    for &(c, v) in rest {
        space.axpy(c, v, out)?;
    }
    Ok(())
}

/// What [`VectorSpace::finish_step`] returns.
#[derive(Clone, Copy, Debug)]
pub struct StepEnd {
    /// `vecnorm(g₊, ord)`, the new gradient's norm.
    pub gradient_norm: f64,
    /// `‖s‖₂`.
    pub step_norm: f64,
    /// `sᵀy`, the curvature along the step.
    pub sy: f64,
    /// `yᵀy`.
    pub yy: f64,
}

/// `n`-vectors in host memory, with rayon-parallel operations.
pub struct HostVectors {
    n: usize,
}

impl HostVectors {
    /// The space of `n`-vectors.
    pub fn new(n: usize) -> Self {
        Self { n }
    }
}

/// The error of an `n`-vector the solver could not allocate.
fn solver_vector_too_large(n: usize) -> EvalError {
    EvalError::OutOfMemory {
        what: "an n-vector of the solver",
        bytes: n.saturating_mul(size_of::<f64>()),
    }
}

impl VectorSpace for HostVectors {
    type Vector = Vec<f64>;

    fn dim(&self) -> usize {
        self.n
    }

    fn zeros(&mut self) -> Result<Vec<f64>, EvalError> {
        let n = self.n;
        crate::linalg::try_zeros(n).ok_or_else(|| solver_vector_too_large(n))
    }

    fn upload(&mut self, x: &[f64]) -> Result<Vec<f64>, EvalError> {
        crate::linalg::try_copy(x).ok_or_else(|| solver_vector_too_large(x.len()))
    }

    fn download<'v>(&'v self, v: &'v Vec<f64>) -> Result<Cow<'v, [f64]>, EvalError> {
        Ok(Cow::Borrowed(v))
    }

    fn host_vector(&mut self, v: Vec<f64>) -> Result<Vec<f64>, EvalError> {
        Ok(v)
    }

    fn dot(&mut self, a: &Vec<f64>, b: &Vec<f64>) -> Result<f64, EvalError> {
        Ok(dot(a, b))
    }

    fn finish_step(
        &mut self,
        step: f64,
        p: &mut Vec<f64>,
        g_new: &Vec<f64>,
        g: &mut Vec<f64>,
        ord: f64,
    ) -> Result<StepEnd, EvalError> {
        let sums = vector::finish_step(step, p, g_new, g);
        Ok(StepEnd {
            // The ∞-norm (the default) came with the pass; other orders take their own.
            gradient_norm: if ord == f64::INFINITY {
                sums.gradient_max_abs
            } else {
                norm(g_new, ord)
            },
            step_norm: sums.ss.sqrt(),
            sy: sums.sy,
            yy: sums.yy,
        })
    }

    fn axpy_dot(
        &mut self,
        alpha: f64,
        x: &Vec<f64>,
        y: &mut Vec<f64>,
        z: &Vec<f64>,
    ) -> Result<f64, EvalError> {
        Ok(vector::axpy_dot(alpha, x, y, z))
    }

    fn dots(
        &mut self,
        vectors: &[&Vec<f64>],
        with: &[&Vec<f64>],
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        fn slices<'v>(vectors: &[&'v Vec<f64>]) -> Vec<&'v [f64]> {
            vectors.iter().map(|v| v.as_slice()).collect()
        }
        vector::dots(&slices(vectors), &slices(with), out);
        Ok(())
    }

    fn combine_dot(
        &mut self,
        terms: &[(f64, &Vec<f64>)],
        out: &mut Vec<f64>,
        z: &Vec<f64>,
    ) -> Result<f64, EvalError> {
        let terms: Vec<(f64, &[f64])> = terms.iter().map(|&(c, v)| (c, v.as_slice())).collect();
        Ok(vector::combine_dot(&terms, out, z))
    }

    fn norm(&mut self, v: &Vec<f64>, ord: f64) -> Result<f64, EvalError> {
        Ok(norm(v, ord))
    }

    fn axpy(&mut self, alpha: f64, x: &Vec<f64>, y: &mut Vec<f64>) -> Result<(), EvalError> {
        vector::axpy(alpha, x, y);
        Ok(())
    }

    fn scale(&mut self, alpha: f64, v: &mut Vec<f64>) -> Result<(), EvalError> {
        map_in_place(v, |v| alpha * v);
        Ok(())
    }

    fn ray_point(
        &mut self,
        x: &Vec<f64>,
        step: f64,
        p: &Vec<f64>,
        out: &mut Vec<f64>,
    ) -> Result<(), EvalError> {
        vector::fill_with(out, x, p, |x, p| x + step * p);
        Ok(())
    }

    fn difference(&mut self, new: &Vec<f64>, old: &mut Vec<f64>) -> Result<(), EvalError> {
        vector::update_with(old, new, |old, new| new - old);
        Ok(())
    }

    fn copy(&mut self, from: &Vec<f64>, to: &mut Vec<f64>) -> Result<(), EvalError> {
        to.copy_from_slice(from);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's one-pass products and combination equal the separate operations the GPU's
    /// vectors use (the trait's defaults), bit for bit.
    #[test]
    fn one_pass_products_and_combination_equal_the_defaults() {
        for n in [3, 100_003] {
            let mut host = HostVectors::new(n);
            let ramp = |scale: f64| -> Vec<f64> {
                (0..n).map(|i| scale * ((i % 13) as f64 - 6.5)).collect()
            };
            let vectors = [ramp(0.5), ramp(-1.25), ramp(3.0)];
            let with = [ramp(0.1), ramp(-7.0)];
            let vectors: Vec<&Vec<f64>> = vectors.iter().collect();
            let with: Vec<&Vec<f64>> = with.iter().collect();
            let (mut fused, mut separate) = ([0.0; 6], [0.0; 6]);
            host.dots(&vectors, &with, &mut fused).unwrap();
            dots_one_by_one(&mut host, &vectors, &with, &mut separate).unwrap();
            assert_eq!(fused.map(f64::to_bits), separate.map(f64::to_bits));
            let terms: Vec<(f64, &Vec<f64>)> = [0.3, -2.0, 1e-3].into_iter().zip(vectors).collect();
            let (mut fused, mut separate) = (host.zeros().unwrap(), host.zeros().unwrap());
            let sum = host.combine_dot(&terms, &mut fused, with[0]).unwrap();
            combine_term_by_term(&mut host, &terms, &mut separate).unwrap();
            assert_eq!(fused, separate);
            assert_eq!(
                sum.to_bits(),
                host.dot(with[0], &separate).unwrap().to_bits()
            );
        }
    }
}
