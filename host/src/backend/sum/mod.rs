//! Objectives made of several terms: `f(x) = Σ_parts Σ_k φ_k(x)`, each part a registered term
//! with its own window, size and data over the same `n` variables (a data term over rows plus
//! a separable penalty, a prior, a smoothness term over neighbours).
//!
//! `problem.rs` holds the sum before it is loaded ([`TermSum`], [`ResidualSum`]);
//! `evaluator.rs` evaluates the loaded parts as one problem ([`SumEvaluator`]): one pass is
//! each part's pass, in the sum's order, and the results are added in that order, on the host
//! or, for a solver's device vectors, on the device. Under MPI the first part is the one whose
//! rows or term ranges the ranks share; the further parts, which every rank holds whole, are
//! split by term ranges ([`Share::of_whole_parts`](super::Share::of_whole_parts)).

mod evaluator;
mod problem;

pub use evaluator::SumEvaluator;
pub use problem::{IntoPart, Part, ResidualPart, ResidualSum, TermSum};
