//! cudamin's host side. Data flows one way:
//!
//! 1. a term function (`gpu-kernels/src/terms/`),
//! 2. run by the CPU [`executor`] (rayon) or by the GPU kernels through the [`launcher`]
//!    (cust, feature `cuda`), chosen by [`backend`],
//! 3. gives an [`objective`]: the value and finite-difference gradient of a sum of terms,
//! 4. which a [`solver`] (BFGS, L-BFGS) minimizes,
//! 5. into a scipy-like [`OptimizeResult`].
//!
//! [`problems`] names the built-in objectives for the command line.

pub mod backend;
pub mod executor;
pub mod launcher;
pub mod objective;
pub mod problems;
pub mod solver;

pub use backend::{Backend, BackendChoice, BackendError, RawArg};
pub use objective::{EvalError, FiniteDifference, Objective, TermObjective, TermProblem};
pub use solver::{Method, OptimizeResult, Options, SolveError, Status};
