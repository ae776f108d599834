//! cudamin's host side. Data flows one way:
//!
//! 1. a term function (in a kernel crate: `gpu-kernels`' built-ins, or your own),
//! 2. run by a [`backend`]: the CPU executor ([`backend::cpu`], rayon) or the GPU launcher
//!    ([`backend::gpu`], through a driver: cust, feature `cuda`), both behind one contract
//!    ([`backend::evaluator`]); with feature `mpi`, each process of an MPI job runs its shard
//!    and `backend::mpi` gathers the shards' partials into one evaluator,
//! 3. gives an [`objective`]: the value and gradient of a sum of terms,
//! 4. which a [`solver`] (BFGS, L-BFGS) minimizes,
//! 5. into a scipy-like [`OptimizeResult`].
//!
//! [`problems`] names the built-in objectives for the command line; `linalg` holds the
//! host-memory vector and matrix kernels the solver and the problems share.

// `unsafe` is the cust driver's alone (`backend::gpu::cust`, the one audited file).
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod data;
mod linalg;
pub mod objective;
pub mod problems;
pub mod solver;

pub use backend::{
    Backend, BackendChoice, BackendError, FiniteDifference, Gradient, LaunchConfig, LaunchOverride,
    RawArg, TermProblem,
};
pub use linalg::{available_memory, inf_norm};
pub use objective::{EvalError, GradientError, Objective, TermObjective};
pub use solver::{Method, OptimizeResult, Options, SolveError, Status};
