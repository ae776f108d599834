//! The device prelude: the GPU plumbing kernels are built from, modelled on `cuda_std`'s
//! thread, shared-memory and atomic helpers, and the entry-point bodies built on it. This module
//! is the only place in the crate with `unsafe` (besides the entry points the registration
//! macros emit, which call into it); term functions never need it.
//!
//! Apart from the raw kernels' argument views, everything here is for `nvptx64` only: on the
//! CPU the executor plays the role of the grid.

#[cfg(target_arch = "nvptx64")]
pub mod box_entry;
#[cfg(target_arch = "nvptx64")]
mod dense_entry;
#[cfg(target_arch = "nvptx64")]
pub mod entry;
mod macros;
#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
mod shared;
#[cfg(target_arch = "nvptx64")]
mod sort_entry;
#[cfg(target_arch = "nvptx64")]
mod triangle_entry;
#[cfg(target_arch = "nvptx64")]
mod vector_entry;
#[cfg(target_arch = "nvptx64")]
pub use nvptx::*;
#[cfg(target_arch = "nvptx64")]
pub use shared::SharedArray;
pub(crate) mod strided;
mod views;

// The shared kernels' PTX entries, from their table (`crate::shared`).
crate::__shared_kernels! { @rows entries () }

pub use strided::{Elements, RawTable, Strided};
pub use views::*;

/// Threads per warp.
pub const WARP_SIZE: usize = 32;
/// The most threads a block may have (CUDA's limit); the reduction scratch holds one value per
/// warp of such a block.
pub const MAX_BLOCK_THREADS: usize = 1024;

/// `1/σ`, a point's weight, as the host forms it; NaN where `σ` is not positive and finite,
/// which the data's finite check then refuses (a batch's fit fails alone).
#[inline(always)]
pub(crate) fn weight(sigma: f64) -> f64 {
    if sigma > 0.0 && sigma < f64::INFINITY {
        1.0 / sigma
    } else {
        f64::NAN
    }
}
