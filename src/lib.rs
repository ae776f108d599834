//! cudamin: write an objective once in Rust, as a sum of terms; minimize it with scipy-style
//! BFGS / L-BFGS, or Levenberg–Marquardt for sums of squares, with gradients computed per term
//! (exact, from the term's own source, or by finite differences) on an NVIDIA GPU (PTX built from
//! the same source) or on all CPU cores.
//!
//! # Your objective, in your own crate
//!
//! 1. **A term**, in a `#![no_std]` kernel crate of yours (see [`kernels`] for what a term may
//!    use): one small file, no `unsafe`.
//! 2. **Its PTX**, built by your program's `build.rs` with one call of `cudamin-builder`:
//!    `PtxBuilder::new("../my-kernels").build_for_build_script("my_kernels")`.
//! 3. **The solve**, in your program: embed the PTX with [`include_ptx!`], pick a backend with
//!    [`Backend::auto`] (the GPU when one answers, else every CPU core), load the problem,
//!    minimize.
//!
//! ```
//! use cudamin::kernels::prelude::*;
//! use cudamin::{Backend, Gradient, Method, Options, TermObjective, TermProblem, minimize};
//!
//! // 1. In the kernel crate: Σ (x_i − 1)² + e^{x_i}/10, one term per variable.
//! pub struct Bowl;
//!
//! impl Term for Bowl {
//!     const WINDOW: Window = Window::Separable;
//!     type Local<'a> = ();
//!     fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}
//!     fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
//!         (x[0] - 1.0).sq() + 0.1 * x[0].exp()
//!     }
//! }
//! register_term!(Bowl, bowl);
//!
//! // 3. In the program: `cudamin::include_ptx!("my_kernels");` then
//! //    `let (backend, why) = Backend::auto(PTX)?;`. This page has no build script, so it
//! //    takes the CPU.
//! let backend = Backend::Cpu;
//! let n = 100_000;
//! let problem = TermProblem::<Bowl>::new(n)?;
//! // Exact gradients (the default), from `eval` on dual numbers.
//! let mut objective = TermObjective::new(backend.load(problem)?, Gradient::Exact);
//! let result = minimize(&mut objective, &vec![0.0; n], Method::Lbfgs, &Options::default())?;
//! assert!(result.success, "{}", result.message);
//! // 2(x − 1) + e^x/10 = 0 at x = 0.87951…
//! assert!(result.x.iter().all(|&x| (x - 0.879_513_63).abs() < 1e-5));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Sums of squares go to [`least_squares`] (Levenberg–Marquardt with MINPACK's rules, and
//! `curve_fit`'s covariance from [`LeastSquaresResult`]); a residual term is registered with
//! `register_residuals!` and loaded with [`Backend::load_least_squares`].
//!
//! This crate also embeds the PTX of cudamin's built-in problems ([`PTX`], [`backend()`]) for
//! the `cudamin` command line.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use cudamin_host::*;
pub use gpu_kernels as kernels;

pub mod problems;

include_ptx!("kernels");

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
