//! cudamin's device code, written once for the GPU and the CPU.
//!
//! An objective is a sum of terms, `f(x) = Σ_k φ(k, x[W(k)], data)`. You write `φ` as a
//! [`Term`]: a plain, generic Rust function of a window of `x`, computing with [`Num`]s. One
//! [`register_term!`] line turns it into PTX kernels (the value, and the gradient: exact, from
//! the term on dual numbers, or by forward and central differences); the host's CPU executor
//! runs the very same functions over rayon. A term file needs one `use` line and no `unsafe`:
//!
//! ```
//! use gpu_kernels::prelude::*;
//!
//! /// Σ x_i² + e^{x_i}: one term per variable.
//! pub struct SquarePlusExp;
//!
//! impl Term for SquarePlusExp {
//!     const WINDOW: Window = Window::Separable;
//!     type Local<'a> = ();
//!     fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}
//!     fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
//!         x[0] * x[0] + x[0].exp()
//!     }
//! }
//! register_term!(SquarePlusExp, square_plus_exp);
//! ```
//!
//! A residual of a least-squares fit is a term too, registered with [`register_residuals!`]:
//! its sum of squares gets the same kernels, plus the normal equations Levenberg–Marquardt
//! takes. [`grid_kernel!`] and [`block_kernel!`] register raw kernels, Numba's `cuda.jit`.
//!
//! This page lists what a term file uses. The modules behind it are the two backends' shared
//! plumbing, hidden here: `kernel` holds the per-thread work both backends run, `device` is the
//! one audited place with the GPU's `unsafe` (indices, shared memory, shuffles, atomics, entry
//! points). With the `builtin` feature, `terms` holds cudamin's own problems; a user's kernel
//! crate leaves it off, so its PTX holds its own kernels and the shared ones the host launches
//! (sums, finishing, vector kernels).
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_ptx,
        stdarch_nvptx,
        asm_experimental_arch,
        allow_internal_unstable,
        allow_internal_unsafe
    )
)]
// `unsafe` lives in `device` alone; the registration macros expand their entry points with
// the device module's permission (`allow_internal_unsafe`), so term files, here or in a
// user's crate, contain none. Those two attributes are compiler-internal features, used for
// exactly what they are for.
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![deny(unsafe_code)]
#![warn(missing_docs)]

// What a user's term file touches is the root's short list below (and the prelude, which
// gathers it); the modules are the two backends' shared plumbing, public because the host
// crate and the registration macros' expansions in a user's crate reach into them.
#[doc(hidden)]
pub mod bounds;
#[allow(unsafe_code)]
#[doc(hidden)]
pub mod device;
#[doc(hidden)]
pub mod dual;
#[doc(hidden)]
pub mod fd;
#[doc(hidden)]
pub mod kernel;
#[doc(hidden)]
pub mod lanes;
#[doc(hidden)]
pub mod least_squares;
#[doc(hidden)]
pub mod math;
#[doc(hidden)]
pub mod penalty;
pub mod prelude;
#[doc(hidden)]
pub mod raw;
#[doc(hidden)]
pub mod real;
#[doc(hidden)]
pub mod scheme;
#[doc(hidden)]
pub mod tape;
#[doc(hidden)]
pub mod term;
#[cfg(feature = "builtin")]
#[doc(hidden)]
pub mod terms;

#[doc(hidden)]
pub use dual::Dual;
#[doc(hidden)]
pub use fd::{Central, FdScheme, Forward, Interval, StepBox};
pub use kernel::{Kernels, ResidualKernels};
#[doc(hidden)]
pub use lanes::Lanes;
pub use least_squares::{LeastSquares, ResidualTerm, Residuals, SumOfSquares};
pub use penalty::L2Penalty;
pub use real::{Num, Real};
#[doc(hidden)]
pub use scheme::Gradient;
pub use term::{Data, Differentiation, Row, Term, Vars, Window};
