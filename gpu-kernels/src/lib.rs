//! cudamin's device code, written once for the GPU and the CPU.
//!
//! An objective is a sum of terms, `f(x) = Σ_k φ(k, x[W(k)], data)`. You write `φ` as a
//! [`Term`]: a plain, generic Rust function of a window of `x`, computing with [`Num`]s. One
//! [`register_term!`] line turns it into PTX kernels (value, forward- and central-difference
//! gradients); the host's CPU executor runs the very same functions over rayon. A term file
//! needs one `use` line and no `unsafe`:
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
//! Layout: [`prelude`] is what term files import; [`term`] and [`real`] define terms and their
//! numbers; [`kernel`] holds the per-thread work both backends run and the registration macro;
//! [`device`] is the one audited place with the GPU plumbing (indices, shared memory, shuffles,
//! atomics, entry points). With the `builtin` feature, `terms` holds cudamin's own problems and
//! `raw::examples` its raw-kernel examples; a user's kernel crate leaves it off, so its PTX holds
//! its own kernels and the shared ones the host launches (sums, finishing, vector kernels).
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

#[allow(unsafe_code)]
pub mod device;
pub mod dual;
pub mod fd;
pub mod kernel;
pub mod lanes;
pub mod least_squares;
pub mod math;
pub mod prelude;
pub mod raw;
pub mod real;
pub mod term;
#[cfg(feature = "builtin")]
pub mod terms;

pub use dual::Dual;
pub use fd::{Central, FdScheme, Forward};
pub use kernel::{Kernels, ResidualKernels};
pub use lanes::Lanes;
pub use least_squares::{LeastSquares, ResidualTerm, Residuals, SumOfSquares};
pub use real::{Num, Real};
pub use term::{Data, Row, Term, Vars, Window};
