//! cudamin's device code, written once for the GPU and the CPU.
//!
//! An objective is a sum of terms, `f(x) = Σ_k φ(k, x[W(k)], data)`. You write `φ` as a
//! [`Term`]: a plain, generic Rust function of a window of `x`. One [`register_term!`] line turns
//! it into three PTX kernels (value, forward-difference gradient, central-difference gradient);
//! the host's CPU executor runs the very same functions over rayon.
//!
//! ```
//! use gpu_kernels::{Data, Real, Term, Vars, Window};
//!
//! /// Σ x_i² + e^{x_i}: one term per variable.
//! pub struct SquarePlusExp;
//!
//! impl Term for SquarePlusExp {
//!     const WINDOW: Window = Window::Separable;
//!     type Local<'a> = ();
//!     fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}
//!     fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> R {
//!         x[0] * x[0] + x[0].exp()
//!     }
//! }
//! gpu_kernels::register_term!(SquarePlusExp, square_plus_exp);
//! ```
//!
//! Layout: [`terms`] holds the built-in term functions (one file each); [`kernel`] holds the
//! per-thread work that both backends run and the registration macro; [`device`] is the one
//! audited place with the GPU plumbing (indices, shared memory, shuffles, atomics).
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

pub mod device;
pub mod fd;
pub mod kernel;
pub mod lanes;
pub mod least_squares;
pub mod math;
pub mod raw;
pub mod real;
pub mod term;
pub mod terms;

pub use fd::{Central, FdScheme, Forward};
pub use kernel::Kernels;
pub use lanes::Lanes;
pub use least_squares::{LeastSquares, Residuals};
pub use real::Real;
pub use term::{Data, Term, Vars, Window};

/// On the GPU a panic (an out-of-bounds index, say) traps the kernel; the host sees a launch
/// failure. `-Cpanic=immediate-abort` already inlines the trap at every panic site.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { core::arch::nvptx::trap() }
}
