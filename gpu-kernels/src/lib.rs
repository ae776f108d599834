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
//! The root lists what a term file uses. The modules are the two backends' shared plumbing:
//! `kernel` holds the per-thread work both backends run, `fd` and `scheme` the gradient
//! schemes, `raw` the raw kernels, `tape` reverse mode. The `device` module, left out of these
//! docs, is the one audited place with the GPU's `unsafe`: indices, shared memory, shuffles,
//! atomics and entry points. With the `builtin` feature, `terms` holds cudamin's own problems.
//! A user's kernel crate leaves it off, so its PTX holds its own kernels and the shared ones
//! the host launches: sums and vector kernels.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        abi_ptx,
        core_float_math,
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

// What a user's term file touches is the root's list below, and the prelude that gathers it.
// The public modules are the plumbing that the host crate and the registration macros'
// expansions reach: documented, and a term file needs none of them. `device` stays out of the
// docs: only the macros' expansions reach into it.
pub mod bounds;
mod data;
#[allow(unsafe_code)]
#[doc(hidden)]
pub mod device;
mod dual;
pub mod fd;
mod float;
pub mod kernel;
pub mod lanes;
mod least_squares;
pub mod lm;
mod math;
mod penalty;
mod poisson;
pub mod prelude;
pub mod raw;
pub mod real;
pub mod scheme;
pub mod shared;
mod single;
pub mod sort;
pub mod tape;
pub mod term;
#[cfg(feature = "builtin")]
pub mod terms;

pub use data::{DataType, Values};
pub use device::Strided;
pub use dual::Dual;
pub use fd::{Central, FdScheme, Forward, Interval, StepBox};
pub use float::Float;
pub use kernel::{IndexedKernels, Kernels, ResidualKernels};
pub use lanes::Lanes;
pub use least_squares::{LeastSquares, ResidualTerm, Residuals, SumOfSquares, exactly};
pub use penalty::L2Penalty;
pub use poisson::PoissonDeviance;
pub use real::{Exponent, Num, Real};
pub use scheme::Gradient;
pub use single::Single;
pub use term::{Data, Differentiation, Row, Term, Vars, Window};
