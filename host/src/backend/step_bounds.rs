//! [`StepBounds`]: the box that finite-difference points stay in.

use crate::error::BackendError;
use gpu_kernels::StepBox;

/// The box every finite-difference point stays in (what scipy's `approx_derivative` takes as
/// `bounds`): each variable's `[lower, upper]`, or none (the default). Near a bound a step
/// turns inward or a central stencil becomes one-sided (`gpu_kernels::fd`); exact derivatives
/// take no points and are unaffected.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepBounds {
    lower: Vec<f64>,
    upper: Vec<f64>,
}

impl StepBounds {
    /// The box `[lower[i], upper[i]]` (`±∞` for an open side).
    pub fn new(lower: &[f64], upper: &[f64]) -> Self {
        Self {
            lower: lower.to_vec(),
            upper: upper.to_vec(),
        }
    }

    /// Whether there is no box.
    pub fn is_open(&self) -> bool {
        self.lower.is_empty()
    }

    /// The lower ends (empty without a box).
    pub fn lower(&self) -> &[f64] {
        &self.lower
    }

    /// The upper ends (empty without a box).
    pub fn upper(&self) -> &[f64] {
        &self.upper
    }

    /// As the kernels take it (empty sides: `StepBox::OPEN`).
    pub fn view(&self) -> StepBox<'_> {
        StepBox::new(&self.lower, &self.upper)
    }

    /// `self`, refused unless it is open or bounds `n` variables.
    pub fn checked(&self, n: usize) -> Result<&Self, BackendError> {
        let got = self.lower.len();
        if self.is_open() || (got == n && self.upper.len() == n) {
            Ok(self)
        } else {
            Err(BackendError::BoxLength { got, n })
        }
    }
}
