//! cudamin: write an objective once in Rust, as a sum of terms; minimize it with scipy-style
//! BFGS / L-BFGS, with gradients computed per term (exact, from the term's own source, or by
//! finite differences) on an NVIDIA GPU (PTX built from the same source) or on all CPU cores.
//!
//! This crate is the facade: it re-exports the host library ([`cudamin_host`]) and the kernel
//! crate ([`kernels`]), and embeds the kernels' PTX built by `build.rs`.
//!
//! ```no_run
//! use cudamin::{Backend, BackendChoice, FiniteDifference, Method, Options, TermObjective, TermProblem};
//! use cudamin::kernels::terms::SeedExpSum;
//! use std::ops::ControlFlow;
//!
//! let (backend, why) = cudamin::backend(BackendChoice::Auto).unwrap();
//! eprintln!("running on {} ({why})", backend.name());
//! let n = 10_000;
//! let evaluator = backend.load(TermProblem::<SeedExpSum>::new(n).unwrap()).unwrap();
//! let mut objective = TermObjective::new(evaluator, FiniteDifference::Forward);
//! let result = cudamin::solver::minimize(
//!     &mut objective, &vec![0.5; n], Method::Bfgs, &Options::default(), &mut |_| ControlFlow::Continue(()),
//! ).unwrap();
//! assert!(result.success);
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use cudamin_host::*;
pub use gpu_kernels as kernels;

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

/// Picks a backend, with this crate's embedded PTX. Returns it and why it was chosen.
pub fn backend(choice: BackendChoice) -> Result<(Backend, String), BackendError> {
    Backend::select(choice, PTX, LaunchOverride::default())
}

/// As [`backend()`], with launch sizes that override the occupancy-based ones on the GPU.
pub fn backend_with_launch(
    choice: BackendChoice,
    launch: LaunchOverride,
) -> Result<(Backend, String), BackendError> {
    Backend::select(choice, PTX, launch)
}
