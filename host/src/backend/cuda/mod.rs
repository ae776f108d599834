//! The GPU backend: launches the term kernels with cust (feature `cuda`).
//!
//! [`abi`] builds the argument list of every launch and [`ptx`] reads the `.entry` signatures
//! of the embedded PTX; both are compiled without the `cuda` feature too, so that a test can
//! check every launch against the PTX on machines without CUDA.

pub mod abi;
pub mod ptx;

#[cfg(feature = "cuda")]
#[allow(unsafe_code)]
mod launcher;
#[cfg(feature = "cuda")]
pub use launcher::{
    CudaEvaluator, CudaLauncher, CudaLeastSquares, CudaResiduals, DeviceVector, DeviceVectors,
    load_least_squares,
};
