//! Objectives: what a solver minimizes.
//!
//! [`Objective`] is the solver's view: a value and a gradient at `x`. [`TermObjective`] is the
//! one built from a registered term: a [`TermProblem`] (term, `n`, data) loaded on a
//! [`Backend`](crate::Backend), with finite-difference gradients computed per term by the
//! kernels. Implement [`Objective`] yourself for a function with an analytic gradient.

mod problem;

pub use problem::{ProblemError, TermProblem};

use crate::backend::{BackendError, Evaluator};

/// A function to minimize, with its gradient.
pub trait Objective {
    /// The number of variables.
    fn dim(&self) -> usize;
    /// `f(x)`.
    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError>;
    /// `∇f(x)`, written to `g`.
    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError>;
}

/// Why an objective could not be evaluated. A non-finite value is not an error: the solver
/// handles it (it shrinks the step, or stops with status 3).
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("x has {got} entries, the objective has {expected} variables")]
    WrongLength { expected: usize, got: usize },
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// For user objectives.
    #[error("{0}")]
    Failed(String),
}

/// The finite-difference scheme of a term objective's gradient.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FiniteDifference {
    /// `[φ(x + h e_i) − φ(x)] / h` with `h = √ε·max(1, |x_i|)`: scipy's `'2-point'`.
    #[default]
    Forward,
    /// `[φ(x + h e_i) − φ(x − h e_i)] / 2h` with `h = ∛ε·max(1, |x_i|)`: scipy's `'3-point'`.
    Central,
}

impl FiniteDifference {
    pub const fn name(self) -> &'static str {
        match self {
            Self::Forward => "forward",
            Self::Central => "central",
        }
    }
}

/// A term objective on a backend: value and gradient each one pass of the kernels.
pub struct TermObjective {
    evaluator: Box<dyn Evaluator>,
    fd: FiniteDifference,
}

impl TermObjective {
    pub fn new(evaluator: Box<dyn Evaluator>, fd: FiniteDifference) -> Self {
        Self { evaluator, fd }
    }

    pub fn finite_difference(&self) -> FiniteDifference {
        self.fd
    }

    fn check_len(&self, got: usize) -> Result<(), EvalError> {
        let expected = self.evaluator.dim();
        if got == expected {
            Ok(())
        } else {
            Err(EvalError::WrongLength { expected, got })
        }
    }
}

impl Objective for TermObjective {
    fn dim(&self) -> usize {
        self.evaluator.dim()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        self.check_len(x.len())?;
        Ok(self.evaluator.value(x)?)
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        self.check_len(x.len())?;
        self.check_len(g.len())?;
        Ok(self.evaluator.gradient(x, self.fd, g)?)
    }
}
