//! Where a solve keeps its `n`-vectors, and the objective evaluated at them.
//!
//! The quasi-Newton driver, the line search and the inverse-Hessian products need little of
//! their vectors: a few BLAS-1 operations, reductions that return a scalar, and the objective's
//! value and gradient. [`Workspace`] is that list. [`HostWorkspace`] keeps the vectors in host
//! memory, for any [`Objective`]; [`DeviceWorkspace`] keeps them on the device an objective
//! offers ([`Objective::device`]), next to a term problem's data, so an iteration moves only
//! scalars over PCIe. The solver's logic is written once, over the trait.

use crate::linalg::vector::{self, dot, map_in_place, norm};
use crate::objective::{EvalError, GradientError, Objective};
use std::borrow::Cow;

/// The fewest variables for which a solve keeps its vectors on the GPU. On an H100, an
/// L-BFGS iteration with device vectors took about 0.75 ms at n = 1000 (dozens of launches and
/// scalar round trips) against 0.08 ms with host vectors, and 1 ms against 3 ms at n = 10⁵,
/// where copying `x` and `∇f` over PCIe for every evaluation starts to dominate.
pub(super) const DEVICE_MIN_LEN: usize = 1 << 15;

/// The vectors of a solve and the objective at them. Each vector has the objective's `n`
/// entries.
pub(super) trait Workspace {
    type Vector;

    /// `n` zeros.
    fn zeros(&mut self) -> Result<Self::Vector, EvalError>;
    /// A vector holding `x`.
    fn upload(&mut self, x: &[f64]) -> Result<Self::Vector, EvalError>;
    /// `v` in host memory (borrowed where it already is).
    fn download<'v>(&'v self, v: &'v Self::Vector) -> Result<Cow<'v, [f64]>, EvalError>;
    /// `v` as a host vector, moved where it already is one.
    fn host_vector(&mut self, v: Self::Vector) -> Result<Vec<f64>, EvalError>;

    /// `f(x)`.
    fn value(&mut self, x: &Self::Vector) -> Result<f64, EvalError>;
    /// `∇f(x)` into `g`.
    fn gradient(&mut self, x: &Self::Vector, g: &mut Self::Vector) -> Result<(), EvalError>;
    /// `f(x)`, and `∇f(x)` into `g`, in one evaluation.
    fn value_and_gradient(
        &mut self,
        x: &Self::Vector,
        g: &mut Self::Vector,
    ) -> Result<f64, EvalError>;
    /// An estimate of the error in the gradient `g` at `x` (see `Objective::gradient_error`).
    fn gradient_error(
        &mut self,
        x: &Self::Vector,
        g: &Self::Vector,
        ord: f64,
    ) -> Result<Option<GradientError>, EvalError>;

    /// `aᵀb`.
    fn dot(&mut self, a: &Self::Vector, b: &Self::Vector) -> Result<f64, EvalError>;
    /// The end of a quasi-Newton step: `p ← step·p` (the step `s`), `g ← g_new − g` (the
    /// gradient change `y`), with `vecnorm(g_new, ord)`, `‖s‖₂`, `sᵀy` and `yᵀy`. The default
    /// makes the separate passes; a workspace that can makes one.
    fn finish_step(
        &mut self,
        step: f64,
        p: &mut Self::Vector,
        g_new: &Self::Vector,
        g: &mut Self::Vector,
        ord: f64,
    ) -> Result<StepEnd, EvalError> {
        self.scale(step, p)?;
        self.difference(g_new, g)?;
        let (sy, yy) = (self.dot(p, g)?, self.dot(g, g)?);
        Ok(StepEnd {
            gradient_norm: self.norm(g_new, ord)?,
            step_norm: self.norm(p, 2.0)?,
            sy,
            yy,
        })
    }
    /// `y ← y + alpha·x`, then `zᵀy`: the two-loop recursion's steps. The default is
    /// [`axpy`](Self::axpy) then [`dot`](Self::dot); a workspace that can fuses them.
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
    /// them from one pass where the workspace can. The default takes them one by one.
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

/// [`Workspace::dots`] from separate [`Workspace::dot`]s.
fn dots_one_by_one<W: Workspace + ?Sized>(
    workspace: &mut W,
    vectors: &[&W::Vector],
    with: &[&W::Vector],
    out: &mut [f64],
) -> Result<(), EvalError> {
    let pairs = vectors
        .iter()
        .flat_map(|v| with.iter().map(move |w| (v, w)));
    for (product, (v, w)) in out.iter_mut().zip(pairs) {
        *product = workspace.dot(v, w)?;
    }
    Ok(())
}

/// The combination of [`Workspace::combine_dot`] from a copy, a scaling and
/// [`Workspace::axpy`]s.
fn combine_term_by_term<W: Workspace + ?Sized>(
    workspace: &mut W,
    terms: &[(f64, &W::Vector)],
    out: &mut W::Vector,
) -> Result<(), EvalError> {
    let Some((&(c0, v0), rest)) = terms.split_first() else {
        *out = workspace.zeros()?;
        return Ok(());
    };
    workspace.copy(v0, out)?;
    workspace.scale(c0, out)?;
    for &(c, v) in rest {
        workspace.axpy(c, v, out)?;
    }
    Ok(())
}

/// What [`Workspace::finish_step`] returns.
#[derive(Clone, Copy, Debug)]
pub(super) struct StepEnd {
    /// `vecnorm(g₊, ord)`, the new gradient's norm.
    pub gradient_norm: f64,
    /// `‖s‖₂`.
    pub step_norm: f64,
    /// `sᵀy`, the curvature along the step.
    pub sy: f64,
    /// `yᵀy`.
    pub yy: f64,
}

/// Vectors in host memory (rayon-parallel operations), for any objective.
pub(super) struct HostWorkspace<'o> {
    objective: &'o mut dyn Objective,
}

impl<'o> HostWorkspace<'o> {
    pub fn new(objective: &'o mut dyn Objective) -> Self {
        Self { objective }
    }
}

/// The error of an `n`-vector the solver could not allocate.
fn solver_vector_too_large(n: usize) -> EvalError {
    EvalError::OutOfMemory {
        what: "an n-vector of the solver",
        bytes: n.saturating_mul(size_of::<f64>()),
    }
}

impl Workspace for HostWorkspace<'_> {
    type Vector = Vec<f64>;

    fn zeros(&mut self) -> Result<Vec<f64>, EvalError> {
        let n = self.objective.dim();
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

    fn value(&mut self, x: &Vec<f64>) -> Result<f64, EvalError> {
        self.objective.value(x)
    }

    fn gradient(&mut self, x: &Vec<f64>, g: &mut Vec<f64>) -> Result<(), EvalError> {
        self.objective.gradient(x, g)
    }

    fn value_and_gradient(&mut self, x: &Vec<f64>, g: &mut Vec<f64>) -> Result<f64, EvalError> {
        self.objective.value_and_gradient(x, g)
    }

    fn gradient_error(
        &mut self,
        x: &Vec<f64>,
        g: &Vec<f64>,
        ord: f64,
    ) -> Result<Option<GradientError>, EvalError> {
        self.objective.gradient_error(x, g, ord)
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

pub(super) use device::DeviceWorkspace;

mod device {
    use super::{Cow, EvalError, GradientError, Workspace, vector};
    use crate::objective::{DeviceVector, DeviceVectors, OnDevice};

    /// Vectors on the device, next to a term problem loaded there. Every operation is a launch
    /// in order with the evaluations; dot products and norms bring one scalar back.
    pub(in crate::solver) struct DeviceWorkspace<'e> {
        objective: OnDevice<'e>,
        vectors: DeviceVectors,
        n: usize,
    }

    impl<'e> DeviceWorkspace<'e> {
        pub fn new(objective: OnDevice<'e>, n: usize) -> Result<Self, EvalError> {
            let vectors = objective.vectors()?;
            Ok(Self {
                objective,
                vectors,
                n,
            })
        }
    }

    impl Workspace for DeviceWorkspace<'_> {
        type Vector = DeviceVector;

        fn zeros(&mut self) -> Result<DeviceVector, EvalError> {
            Ok(self.vectors.zeros()?)
        }

        fn upload(&mut self, x: &[f64]) -> Result<DeviceVector, EvalError> {
            Ok(self.vectors.upload(x)?)
        }

        fn download<'v>(&'v self, v: &'v DeviceVector) -> Result<Cow<'v, [f64]>, EvalError> {
            let mut host = vector::touched_zeros(self.n);
            self.vectors.download(v, &mut host)?;
            Ok(Cow::Owned(host))
        }

        fn host_vector(&mut self, v: DeviceVector) -> Result<Vec<f64>, EvalError> {
            Ok(self.download(&v)?.into_owned())
        }

        fn value(&mut self, x: &DeviceVector) -> Result<f64, EvalError> {
            self.objective.value(x)
        }

        fn gradient(&mut self, x: &DeviceVector, g: &mut DeviceVector) -> Result<(), EvalError> {
            self.objective.gradient(x, g)
        }

        fn value_and_gradient(
            &mut self,
            x: &DeviceVector,
            g: &mut DeviceVector,
        ) -> Result<f64, EvalError> {
            self.objective.value_and_gradient(x, g)
        }

        fn gradient_error(
            &mut self,
            x: &DeviceVector,
            g: &DeviceVector,
            ord: f64,
        ) -> Result<Option<GradientError>, EvalError> {
            let mut reference = self.zeros()?;
            let objective = &mut self.objective;
            let checked = crate::objective::checked_against(objective.gradient_kind(), |kind| {
                objective.gradient_as(kind, x, &mut reference)
            })?;
            let Some((kind, ())) = checked else {
                return Ok(None);
            };
            self.difference(g, &mut reference)?;
            Ok(Some(GradientError {
                estimate: self.norm(&reference, ord)?,
                reference: kind,
            }))
        }

        fn dot(&mut self, a: &DeviceVector, b: &DeviceVector) -> Result<f64, EvalError> {
            Ok(self.vectors.dot(a, b)?)
        }

        fn norm(&mut self, v: &DeviceVector, ord: f64) -> Result<f64, EvalError> {
            if ord == f64::INFINITY {
                Ok(self.vectors.max_abs(v)?)
            } else if ord == 2.0 {
                Ok(self.vectors.dot(v, v)?.sqrt())
            } else {
                // Other norms are rare options: computed on the host, as scipy does.
                Ok(vector::norm(&self.download(v)?, ord))
            }
        }

        fn axpy(
            &mut self,
            alpha: f64,
            x: &DeviceVector,
            y: &mut DeviceVector,
        ) -> Result<(), EvalError> {
            Ok(self.vectors.axpy(alpha, x, y)?)
        }

        fn scale(&mut self, alpha: f64, v: &mut DeviceVector) -> Result<(), EvalError> {
            Ok(self.vectors.scale(alpha, v)?)
        }

        fn ray_point(
            &mut self,
            x: &DeviceVector,
            step: f64,
            p: &DeviceVector,
            out: &mut DeviceVector,
        ) -> Result<(), EvalError> {
            Ok(self.vectors.ray_point(x, step, p, out)?)
        }

        fn difference(
            &mut self,
            new: &DeviceVector,
            old: &mut DeviceVector,
        ) -> Result<(), EvalError> {
            Ok(self.vectors.difference(new, old)?)
        }

        fn copy(&mut self, from: &DeviceVector, to: &mut DeviceVector) -> Result<(), EvalError> {
            Ok(self.vectors.copy(from, to)?)
        }
    }
}

/// An objective that is only a length: enough for tests of the vector operations, which need
/// no values.
#[cfg(test)]
pub(super) struct Length(pub(super) usize);

#[cfg(test)]
impl Objective for Length {
    fn dim(&self) -> usize {
        self.0
    }

    fn value(&mut self, _: &[f64]) -> Result<f64, EvalError> {
        Ok(0.0)
    }

    fn gradient(&mut self, _: &[f64], _: &mut [f64]) -> Result<(), EvalError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host's one-pass products and combination equal the separate operations the GPU's
    /// workspace uses (the trait's defaults), bit for bit.
    #[test]
    fn one_pass_products_and_combination_equal_the_defaults() {
        for n in [3, 100_003] {
            let mut length = Length(n);
            let mut host = HostWorkspace::new(&mut length);
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
