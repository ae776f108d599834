//! The device prelude: the GPU plumbing kernels are built from, modelled on `cuda_std`'s
//! thread, shared-memory and atomic helpers. This module and [`crate::kernel::entry`] are the
//! only places in the crate with `unsafe`; term functions never need it.
//!
//! Everything here is for `nvptx64` only: on the CPU the executor plays the role of the grid.

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
pub use nvptx::*;

/// Threads per warp; blocks are launched in whole warps.
pub const WARP_SIZE: usize = 32;
/// The most threads a block may have (CUDA's limit); the reduction scratch holds one value per
/// warp of such a block.
pub const MAX_BLOCK_THREADS: usize = 1024;
