//! A solve's vectors and the objective evaluated at them.
//!
//! [`Workspace`] pairs a [`VectorSpace`] (host vectors, or the device vectors of an objective
//! whose problem lives on a GPU, see [`OnBackend::device`](crate::objective::OnBackend::device)) with the objective's evaluations at
//! that space's vectors. The solver's logic is written once, over the trait: its arithmetic goes
//! through [`Workspace::space_mut`], its evaluations through the workspace itself.

use crate::backend::DeviceArray;
use crate::linalg::vector;
use crate::objective::{
    DeviceVector, DeviceVectors, EvalError, GradientError, Objective, OnDevice, gradient_error,
};
use crate::solver::correction_pairs::{CorrectionPairs, DevicePairs, ResultPairs};
use crate::solver::result::{DeviceSolution, SolveError};
use crate::solver::start::{Start, non_finite};
use crate::solver::trial_sweep::{TrialSweep, trial_sweep};
use crate::space::{HostVectors, VectorSpace};
use std::collections::VecDeque;

/// The fewest variables for which a solve keeps its vectors on the GPU. Below it, an
/// iteration's dozens of launches and scalar round trips cost more than host vectors; above it,
/// copying `x` and `∇f` over PCIe for every evaluation dominates.
const DEVICE_MIN_LEN: usize = 1 << 15;

/// The device `objective`'s problem lives on, where a solve of `n` variables keeps its vectors
/// there: from [`DEVICE_MIN_LEN`] variables up. An error where the device has the problem but
/// cannot take the solve's vectors.
pub(super) fn device_of(
    objective: &mut dyn Objective,
    n: usize,
) -> Result<Option<OnDevice<'_>>, EvalError> {
    match objective.on_backend() {
        Some(backend) if n >= DEVICE_MIN_LEN => backend.device(),
        _ => Ok(None),
    }
}

/// A memory's pairs, `(s, y)`, oldest first (`Memory::into_vectors`).
pub(super) type Pairs<V> = (VecDeque<V>, VecDeque<V>);

/// A distance between gradients at `x`: `distance(x, g, reference)`, on host vectors (the
/// reference's may be overwritten).
pub(super) type Distance<'d> = dyn FnMut(&[f64], &[f64], &mut [f64]) -> f64 + 'd;

/// The vectors of a solve and the objective at them. Each vector has the objective's `n`
/// entries.
pub(super) trait Workspace {
    /// A vector of the space.
    type Vector;
    /// Where the vectors live.
    type Space: VectorSpace<Vector = Self::Vector>;

    /// Where the vectors live, for reading them.
    fn space(&self) -> &Self::Space;
    /// The arithmetic on the vectors.
    fn space_mut(&mut self) -> &mut Self::Space;

    /// `x0` as a vector of this space, refused unless every entry is finite. A device checks
    /// its vector there, and copies a start already on it there.
    fn start(&mut self, x0: Start<'_>) -> Result<Self::Vector, SolveError>;
    /// The solution `x` and its gradient `g` for the result: on the host, or on the device
    /// where `keep` asks and they are there (the host vectors are then empty).
    fn finish(
        &mut self,
        x: Self::Vector,
        g: Self::Vector,
        keep: bool,
    ) -> Result<Finished, EvalError>;

    /// Whether the vectors live on a device, where [`finish`](Workspace::finish) can keep
    /// them.
    const ON_DEVICE: bool = false;

    /// `v` as an array a result keeps on the device, where the vectors are there; `None` on
    /// the host.
    fn kept(&mut self, v: Self::Vector) -> Option<DeviceArray> {
        let _ = v;
        None
    }

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
    /// A line search's trial: `f(x)`, `∇f(x)` into `g` in one evaluation, and the slope
    /// `∇f(x)ᵀd`. A device brings both numbers back in one wait where it can.
    fn value_and_slope(
        &mut self,
        x: &Self::Vector,
        g: &mut Self::Vector,
        d: &Self::Vector,
    ) -> Result<(f64, f64), EvalError> {
        let value = self.value_and_gradient(x, g)?;
        Ok((value, self.space_mut().dot(g, d)?))
    }
    /// An estimate of the error in the gradient `g` at `x`, against the objective's reference
    /// gradient (`Objective::reference_gradient`), in the norm `ord`.
    fn gradient_error(
        &mut self,
        x: &Self::Vector,
        g: &Self::Vector,
        ord: f64,
    ) -> Result<Option<GradientError>, EvalError>;
    /// As [`gradient_error`](Self::gradient_error), the distance measured by `distance(x, g,
    /// reference)` on host copies (once, at a solution).
    fn gradient_error_by(
        &mut self,
        x: &Self::Vector,
        g: &Self::Vector,
        distance: &mut Distance<'_>,
    ) -> Result<Option<GradientError>, EvalError>;
    /// A memory's pairs `(s, y)` over `n` variables, oldest first, for a result
    /// ([`Options::return_hess_inv`](super::Options::return_hess_inv)): in host memory (host
    /// vectors are handed over, not copied); a device leaves them where they are.
    fn result_pairs(
        &mut self,
        (s, y): Pairs<Self::Vector>,
        n: usize,
    ) -> Result<ResultPairs, EvalError> {
        let space = self.space_mut();
        let mut host = |vectors: VecDeque<Self::Vector>| -> Result<Vec<Vec<f64>>, EvalError> {
            vectors.into_iter().map(|v| space.host_vector(v)).collect()
        };
        let s = host(s)?;
        Ok((Some(CorrectionPairs::new(n, s, host(y)?)), None))
    }
    /// L-BFGS's direction and first trial in one sweep (`solver::trial_sweep`):
    /// `p ← Σ cᵢ·vᵢ` over `terms`, `x₊ ← x + p`, `f(x₊)`, `g₊ ← ∇f(x₊)` and `g₊`'s products,
    /// into `buffers = [p, x₊, g₊]`; `None` where the objective does not evaluate by pieces.
    /// The default says `None`: device vectors make the separate passes.
    fn trial_sweep(
        &mut self,
        terms: &[(f64, &Self::Vector)],
        x: &Self::Vector,
        g: &Self::Vector,
        buffers: [&mut Self::Vector; 3],
        with: &[&Self::Vector],
    ) -> Result<Option<TrialSweep>, EvalError> {
        let _ = (terms, x, g, buffers, with);
        Ok(None)
    }
}

/// A solution's `x` and `jac` on the host, or on the device ([`Workspace::finish`]).
pub(super) type Finished = (Vec<f64>, Vec<f64>, Option<DeviceSolution>);

/// Host vectors, for any objective.
pub(super) struct HostWorkspace<'o> {
    objective: &'o mut dyn Objective,
    space: HostVectors,
}

impl<'o> HostWorkspace<'o> {
    pub fn new(objective: &'o mut dyn Objective) -> Self {
        let space = HostVectors::new(objective.dim());
        Self { objective, space }
    }
}

impl Workspace for HostWorkspace<'_> {
    type Vector = Vec<f64>;
    type Space = HostVectors;

    fn space(&self) -> &HostVectors {
        &self.space
    }

    fn space_mut(&mut self) -> &mut HostVectors {
        &mut self.space
    }

    fn start(&mut self, x0: Start<'_>) -> Result<Vec<f64>, SolveError> {
        let x = match x0 {
            Start::Host(values) => values.to_vec(),
            Start::Device(array) => array.to_host().map_err(EvalError::from)?,
        };
        match non_finite(&x) {
            Some(error) => Err(error),
            None => Ok(x),
        }
    }

    fn finish(&mut self, x: Vec<f64>, g: Vec<f64>, _keep: bool) -> Result<Finished, EvalError> {
        Ok((x, g, None))
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
        gradient_error(self.objective, x, |reference| {
            vector::update_with(reference, g, |r, g| g - r);
            vector::norm(reference, ord)
        })
    }

    fn gradient_error_by(
        &mut self,
        x: &Vec<f64>,
        g: &Vec<f64>,
        distance: &mut Distance<'_>,
    ) -> Result<Option<GradientError>, EvalError> {
        gradient_error(self.objective, x, |reference| distance(x, g, reference))
    }

    fn trial_sweep(
        &mut self,
        terms: &[(f64, &Vec<f64>)],
        x: &Vec<f64>,
        g: &Vec<f64>,
        buffers: [&mut Vec<f64>; 3],
        with: &[&Vec<f64>],
    ) -> Result<Option<TrialSweep>, EvalError> {
        let Some(pieces) = self.objective.on_backend().and_then(|b| b.pieces()) else {
            return Ok(None);
        };
        let terms: Vec<(f64, &[f64])> = terms.iter().map(|&(c, v)| (c, v.as_slice())).collect();
        let with: Vec<&[f64]> = with.iter().map(|v| v.as_slice()).collect();
        let buffers = buffers.map(Vec::as_mut_slice);
        trial_sweep(pieces, &terms, x, g, buffers, &with).map(Some)
    }
}

/// Device vectors, next to a term problem loaded there. Every operation is a launch in order
/// with the evaluations; dot products and norms bring one scalar back.
pub(super) struct DeviceWorkspace<'e> {
    objective: OnDevice<'e>,
    space: DeviceVectors,
}

impl<'e> DeviceWorkspace<'e> {
    pub fn new(mut objective: OnDevice<'e>) -> Result<Self, EvalError> {
        let space = objective.vectors()?;
        Ok(Self { objective, space })
    }
}

impl Workspace for DeviceWorkspace<'_> {
    type Vector = DeviceVector;
    type Space = DeviceVectors;
    const ON_DEVICE: bool = true;

    fn space(&self) -> &DeviceVectors {
        &self.space
    }

    fn space_mut(&mut self) -> &mut DeviceVectors {
        &mut self.space
    }

    fn start(&mut self, x0: Start<'_>) -> Result<DeviceVector, SolveError> {
        let adopted = match x0 {
            Start::Device(array) => self.space.adopt(array).map_err(EvalError::from)?,
            Start::Host(_) => None,
        };
        let x = match (adopted, x0) {
            (Some(x), _) => x,
            (None, Start::Host(values)) => self.space.upload(values)?,
            (None, Start::Device(array)) => {
                let values = array.to_host().map_err(EvalError::from)?;
                self.space.upload(&values)?
            }
        };
        // One reduction on the device (NaN if an entry is); the host reads the vector only to
        // say which entry it refuses.
        if !self.space.norm(&x, f64::INFINITY)?.is_finite()
            && let Some(error) = non_finite(&self.space.download(&x)?)
        {
            return Err(error);
        }
        Ok(x)
    }

    fn finish(
        &mut self,
        x: DeviceVector,
        g: DeviceVector,
        keep: bool,
    ) -> Result<Finished, EvalError> {
        if keep {
            let kept = DeviceSolution {
                x: self.space.into_array(x),
                jac: self.space.into_array(g),
                active_mask: None,
            };
            return Ok((Vec::new(), Vec::new(), Some(kept)));
        }
        let x = self.space.host_vector(x)?;
        Ok((x, self.space.host_vector(g)?, None))
    }

    fn kept(&mut self, v: DeviceVector) -> Option<DeviceArray> {
        Some(self.space.into_array(v))
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

    fn value_and_slope(
        &mut self,
        x: &DeviceVector,
        g: &mut DeviceVector,
        d: &DeviceVector,
    ) -> Result<(f64, f64), EvalError> {
        self.objective.value_and_slope(x, g, d, &mut self.space)
    }

    /// The pairs stay on the device: each vector becomes an array there, no copy.
    fn result_pairs(
        &mut self,
        (s, y): Pairs<DeviceVector>,
        n: usize,
    ) -> Result<ResultPairs, EvalError> {
        let space = &self.space;
        let arrays = |vectors: VecDeque<DeviceVector>| -> Vec<_> {
            vectors.into_iter().map(|v| space.into_array(v)).collect()
        };
        Ok((None, Some(DevicePairs::new(n, arrays(s), arrays(y)))))
    }

    fn gradient_error(
        &mut self,
        x: &DeviceVector,
        g: &DeviceVector,
        ord: f64,
    ) -> Result<Option<GradientError>, EvalError> {
        self.error_against_reference(x, |space, mut reference| {
            space.difference(g, &mut reference)?;
            space.norm(&reference, ord)
        })
    }

    fn gradient_error_by(
        &mut self,
        x: &DeviceVector,
        g: &DeviceVector,
        distance: &mut Distance<'_>,
    ) -> Result<Option<GradientError>, EvalError> {
        self.error_against_reference(x, |space, reference| {
            let mut reference = space.host_vector(reference)?;
            let (x, g) = (space.download(x)?, space.download(g)?);
            Ok(distance(&x, &g, &mut reference))
        })
    }
}

impl DeviceWorkspace<'_> {
    /// `measure` of the objective's reference gradient at `x`, where its gradient is not
    /// exact.
    fn error_against_reference(
        &mut self,
        x: &DeviceVector,
        measure: impl FnOnce(&mut DeviceVectors, DeviceVector) -> Result<f64, EvalError>,
    ) -> Result<Option<GradientError>, EvalError> {
        let mut reference = self.space.zeros()?;
        let objective = &mut self.objective;
        let checked = crate::objective::checked_against(objective.gradient_kind(), |kind| {
            objective.gradient_as(kind, x, &mut reference)
        })?;
        let Some((kind, ())) = checked else {
            return Ok(None);
        };
        Ok(Some(GradientError {
            estimate: measure(&mut self.space, reference)?,
            reference: kind,
        }))
    }
}

/// An objective that is only a length: enough for tests of the solver's vector operations,
/// which need no values.
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
