//! An objective with some variables held at fixed values (lmfit's `vary=False`, Gpufit's
//! `parameters_to_fit`): the solver sees only the free ones, and each evaluation writes them
//! into the full point, whose fixed entries never change. The counts of evaluations are the
//! inner objective's, one for one.

use super::device::{DeviceHeld, OnDevice};
use super::{EvalError, LeastSquaresObjective, Objective, OnBackend, confine_steps};
use crate::backend::{Factor, Gradient, RobustLoss, StepBounds};
use crate::linalg::{try_copy, try_zeros};
use gpu_kernels::kernel::normal::NormalSum;
use gpu_kernels::kernel::triangle::{TriangleRows, fold_scratch_len, triangle_len};

/// Which variables are free, and the full point their values are written into.
#[derive(Clone, Debug)]
pub struct Held {
    /// The free variables' indices, in order.
    free: Vec<usize>,
    /// The full point: the fixed variables' values, and the free ones' last written.
    full: Vec<f64>,
}

impl Held {
    /// Holds the variables where `fixed` is true at their values in `x0`. `None` where
    /// nothing is fixed.
    pub fn new(x0: &[f64], fixed: &[bool]) -> Option<Self> {
        fixed.iter().any(|&f| f).then(|| Held {
            free: (0..x0.len()).filter(|&i| !fixed[i]).collect(),
            full: x0.to_vec(),
        })
    }

    /// The free variables' indices.
    pub fn free(&self) -> &[usize] {
        &self.free
    }

    /// The free entries of a full vector.
    pub fn gather(&self, full: &[f64]) -> Vec<f64> {
        self.free.iter().map(|&i| full[i]).collect()
    }

    /// The number of variables, fixed and free.
    pub fn whole_dim(&self) -> usize {
        self.full.len()
    }

    /// The variables held fixed, ascending.
    pub fn fixed(&self) -> Vec<usize> {
        let mut is_free = vec![false; self.full.len()];
        self.free.iter().for_each(|&i| is_free[i] = true);
        (0..self.full.len()).filter(|&i| !is_free[i]).collect()
    }

    /// The full point with the free variables at `free_values`; `EvalError::OutOfMemory` where
    /// it cannot be allocated.
    pub fn expand(&self, free_values: &[f64]) -> Result<Vec<f64>, EvalError> {
        let full = try_copy(&self.full).ok_or_else(|| self.too_large())?;
        Ok(self.scatter_into(free_values, full))
    }

    /// A full vector with `free_values` at the free variables and `fill` at the fixed ones;
    /// `EvalError::OutOfMemory` where it cannot be allocated.
    pub fn expand_with(&self, free_values: &[f64], fill: f64) -> Result<Vec<f64>, EvalError> {
        let mut full = try_zeros(self.full.len()).ok_or_else(|| self.too_large())?;
        if fill != 0.0 {
            full.fill(fill);
        }
        Ok(self.scatter_into(free_values, full))
    }

    fn scatter_into(&self, free_values: &[f64], mut full: Vec<f64>) -> Vec<f64> {
        scatter(&self.free, free_values, &mut full);
        full
    }

    /// The error of a vector over every variable that cannot be allocated.
    fn too_large(&self) -> EvalError {
        EvalError::OutOfMemory {
            what: "a vector over every variable",
            bytes: self.full.len().saturating_mul(size_of::<f64>()),
        }
    }

    /// A box over the free variables as a box over all of them, the fixed ones unbounded (no
    /// solver asks for their partials).
    fn expand_bounds(&self, bounds: &StepBounds) -> Result<StepBounds, EvalError> {
        if bounds.is_open() {
            return Ok(StepBounds::default());
        }
        let lower = self.expand_with(bounds.lower(), f64::NEG_INFINITY)?;
        let upper = self.expand_with(bounds.upper(), f64::INFINITY)?;
        Ok(StepBounds::new(&lower, &upper))
    }

    /// Writes `free_values` into the held point and returns it.
    fn point(&mut self, free_values: &[f64]) -> Result<&[f64], EvalError> {
        if free_values.len() != self.free.len() {
            return Err(EvalError::WrongLength {
                expected: self.free.len(),
                got: free_values.len(),
            });
        }
        scatter(&self.free, free_values, &mut self.full);
        Ok(&self.full)
    }
}

/// `full[free[a]] = values[a]`.
fn scatter(free: &[usize], values: &[f64], full: &mut [f64]) {
    for (&i, &v) in free.iter().zip(values) {
        full[i] = v;
    }
}

/// `inner` with the variables of `held` fixed: an [`Objective`], or a
/// [`LeastSquaresObjective`], in the free variables.
pub struct FixedObjective<'o, O: ?Sized> {
    inner: &'o mut O,
    held: Held,
    /// The inner objective's full gradient at the last point.
    gradient: Vec<f64>,
    /// What the device keeps of the held variables, where the inner objective lives on one:
    /// made at the first [`OnBackend::device`].
    device_held: Option<DeviceHeld>,
    /// Its full factor at the last point a least-squares solve asked for one; made then, since
    /// its `n²` entries are of no use to a minimization (made here, they ended BFGS and L-BFGS
    /// solves of 10⁵ variables with one held in the allocator's abort).
    factor: Option<Factor>,
}

impl<'o, O: ?Sized> FixedObjective<'o, O> {
    /// `inner` (over all `n` variables) seen through its free variables.
    pub fn new(inner: &'o mut O, held: Held) -> Self {
        let n = held.full.len();
        FixedObjective {
            inner,
            held,
            gradient: vec![0.0; n],
            device_held: None,
            factor: None,
        }
    }

    /// The inner objective's factor over all the variables at the last point
    /// [`factor`](LeastSquaresObjective::factor) was asked at; `None` before the first.
    pub fn full_factor(&self) -> Option<&Factor> {
        self.factor.as_ref()
    }

    /// Refuses a box that does not bound exactly the free variables.
    fn check_free_len(&self, bounds: &StepBounds) -> Result<(), EvalError> {
        Ok(bounds.checked(self.held.free.len()).map(drop)?)
    }
}

impl Objective for FixedObjective<'_, dyn Objective + '_> {
    fn dim(&self) -> usize {
        self.held.free.len()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        let full = self.held.point(x)?;
        self.inner.value(full)
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        let full = self.held.point(x)?;
        self.inner.gradient(full, &mut self.gradient)?;
        g.copy_from_slice(&self.held.gather(&self.gradient));
        Ok(())
    }

    fn value_and_gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        let full = self.held.point(x)?;
        let f = self.inner.value_and_gradient(full, &mut self.gradient)?;
        g.copy_from_slice(&self.held.gather(&self.gradient));
        Ok(f)
    }

    /// The inner objective's reference gradient at the full point, at the free variables: the
    /// fixed ones' partials are not the solver's, and their error does not count.
    fn reference_gradient(
        &mut self,
        x: &[f64],
        into: &mut [f64],
    ) -> Result<Option<Gradient>, EvalError> {
        let full = self.held.point(x)?;
        let kind = self.inner.reference_gradient(full, &mut self.gradient)?;
        if kind.is_some() {
            into.copy_from_slice(&self.held.gather(&self.gradient));
        }
        Ok(kind)
    }

    fn on_backend(&mut self) -> Option<&mut dyn OnBackend> {
        Some(self)
    }
}

/// The inner objective's backend, seen through the free variables. It offers no pieces: a
/// sweep would form the trial point in the free variables alone.
impl OnBackend for FixedObjective<'_, dyn Objective + '_> {
    /// The inner objective's device seen through the free variables: each evaluation writes
    /// them into the whole point and reads their partials out of the whole gradient there.
    /// Where the inner objective holds variables itself, none: the solve keeps its vectors in
    /// host memory. Where the device cannot hold the whole point and gradient, its error.
    fn device(&mut self) -> Result<Option<OnDevice<'_>>, EvalError> {
        let Some(backend) = self.inner.on_backend() else {
            return Ok(None);
        };
        let Some(inner) = backend.device()? else {
            return Ok(None);
        };
        inner.through_free(&mut self.device_held, &self.held.full, &self.held.free)
    }

    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), EvalError> {
        self.check_free_len(bounds)?;
        confine_steps(&mut *self.inner, &self.held.expand_bounds(bounds)?)
    }
}

impl LeastSquaresObjective for FixedObjective<'_, dyn LeastSquaresObjective + '_> {
    fn dim(&self) -> usize {
        self.held.free.len()
    }

    fn residuals(&self) -> usize {
        self.inner.residuals()
    }

    fn sum_of_squares(&mut self, x: &[f64], loss: RobustLoss) -> Result<f64, EvalError> {
        let full = self.held.point(x)?;
        self.inner.sum_of_squares(full, loss)
    }

    /// The inner factor over all the variables, then the triangle of its free columns.
    fn factor(
        &mut self,
        x: &[f64],
        loss: RobustLoss,
        factor: &mut Factor,
    ) -> Result<f64, EvalError> {
        let n = self.held.full.len();
        let full_factor = match &mut self.factor {
            Some(made) => made,
            None => self
                .factor
                .insert(Factor::try_new(n).ok_or(EvalError::OutOfMemory {
                    what: "the factor of the Jacobian over every variable, held ones included",
                    bytes: n.saturating_mul(n).saturating_mul(size_of::<f64>()),
                })?),
        };
        let full = self.held.point(x)?;
        let sum_of_squares = self.inner.factor(full, loss, full_factor)?;
        *factor = free_factor(full_factor, &self.held.free);
        Ok(sum_of_squares)
    }

    fn factors_trials(&self) -> bool {
        self.inner.factors_trials()
    }

    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), EvalError> {
        self.check_free_len(bounds)?;
        self.inner.confine_steps(&self.held.expand_bounds(bounds)?)
    }
}

/// The factor of `J`'s columns `free` alone, from the factor of all of `J`: `J_F = Q·R_F`, so
/// folding the rows of `R_F` (`R`'s columns `free`, with `Qᵀr`) into a triangle gives `R'` with
/// `R'ᵀR' = J_FᵀJ_F`, and the matching `Q'ᵀr`.
pub fn free_factor(full: &Factor, free: &[usize]) -> Factor {
    let n = full.qtr.len();
    let k = free.len();
    let mut packed = vec![0.0; triangle_len(k)];
    let mut scratch = vec![0.0; fold_scratch_len(k)];
    let mut rows = TriangleRows::new(k, &mut packed, &mut scratch, RobustLoss::default());
    let mut row = vec![0.0; k];
    for i in 0..n {
        for (entry, &j) in row.iter_mut().zip(free) {
            *entry = full.r[i * n + j];
        }
        rows.add(full.qtr[i], 0, &row);
    }
    rows.finish();
    let mut factor = Factor::new(k);
    factor.unpack(&packed);
    factor
}
