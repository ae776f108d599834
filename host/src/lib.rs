//! cudamin's host side: loads a problem of terms on a backend and minimizes it. Data flows one
//! way:
//!
//! 1. a term (in a kernel crate: `gpu-kernels`' built-ins, or your own) with its data makes a
//!    [`TermProblem`]; several over the same variables (a data term and a penalty) make a
//!    [`TermSum`],
//! 2. which a [`Backend`] loads: the CPU executor (rayon, every core) or the GPU (the PTX of
//!    the same term, through cust with feature `cuda`), as an [`Evaluator`];
//! 3. a [`TermObjective`] is its value and gradient, exact or by finite differences
//!    ([`Gradient`]); implement [`Objective`] yourself for a function with an analytic gradient;
//! 4. [`minimize`] (BFGS, L-BFGS) or [`least_squares`] (Levenberg–Marquardt) minimizes it,
//! 5. into a scipy-like [`OptimizeResult`] or [`LeastSquaresResult`].
//!
//! The `cudamin` crate re-exports all of this with the kernel crate, and its front page tells
//! the whole story with an example. ARCHITECTURE.md, in the repository, describes the layers
//! behind these names.

// `unsafe` is the cust driver's alone (`backend::gpu::cust`, the one audited file).
#![deny(unsafe_code)]
#![warn(missing_docs)]

// The modules are the layers of the flow above. What a user touches is re-exported here;
// what the command line, the Python module, the tests and the benches need beyond it is in
// `plumbing`, documented there.
mod backend;
pub mod data;
mod error;
mod linalg;
mod objective;
pub mod plumbing;
mod shown;
mod solver;
mod space;

/// Embeds the PTX that `cudamin-builder` built from your kernel crate in your build script:
/// defines `PTX: Result<&str, &str>`, the PTX text or the reason it was not built, which
/// [`Backend::auto`] takes. The name is the one given to `build_for_build_script`.
///
/// ```ignore
/// cudamin::include_ptx!("my_kernels"); // build.rs: PtxBuilder::new("../my-kernels").build_for_build_script("my_kernels")
/// let (backend, why) = cudamin::Backend::auto(PTX)?;
/// ```
#[macro_export]
macro_rules! include_ptx {
    ($name:literal) => {
        include!(concat!(env!("OUT_DIR"), "/", $name, ".rs"));
    };
}

pub use backend::sum::{IntoPart, Part, ResidualPart};
pub use backend::{
    Backend, BackendChoice, BackendError, BatchColumns, Columns, DeviceArray, Evaluation,
    Evaluator, Factor, Gradient, KernelCounts, LaunchConfig, LaunchOverride, LeastSquaresEvaluator,
    Loss, ProblemError, RawArg, ResidualSum, RobustLoss, SECTOR_BYTES, StepBounds, TermProblem,
    TermSum, Traffic,
};
pub use gpu_kernels::DataType;
pub use objective::{
    EvalError, GradientError, LeastSquaresObjective, Objective, OnBackend, TermObjective,
};
pub use solver::{
    Bounds, CorrectionPairs, Covariance, DevicePairs, DeviceSolution, Iterate, LeastSquaresResult,
    LmOptions, LmStatus, LsqMethod, Method, OptimizeResult, Options, SolveError, Status, XScale,
    covariance, covariance_in, covariance_of_free, least_squares, least_squares_with_observer,
    minimize, minimize_from_device, minimize_with_observer, spread_in,
};
