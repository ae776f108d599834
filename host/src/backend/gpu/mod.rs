//! The GPU backend: term problems, their normal equations and a solver's vectors on a device
//! that runs the embedded PTX.
//!
//! One job per file. [`driver`](self) is the seam: a small trait to allocate, copy, launch and
//! synchronize, which the rest is written against in safe code. `cust.rs` implements it on a
//! real device (feature `cuda`), with every `unsafe` block of the GPU path; `sim.rs` on the PTX
//! simulator (`cudamin-ptx-sim`, always built), which runs the same PTX on the CPU. Above the seam:
//! `launcher.rs` chooses launch sizes and checks every copy, `evaluator.rs` evaluates a term
//! problem, `least_squares.rs` makes the normal-equations pass, `vectors.rs` holds a solver's
//! vectors, `array.rs` an array a caller keeps on the device, `on_device.rs` says what a solver asks of a problem at those vectors, `held.rs`
//! answers it for a problem with variables held fixed. [`abi`] builds the argument list of every launch and [`ptx`] reads the `.entry`
//! signatures of the PTX; a test checks every launch against the PTX with them, on machines
//! without a GPU.

pub mod abi;
mod array;
mod batch;
mod box_passes;
#[cfg(feature = "cuda")]
#[allow(unsafe_code)]
mod cust;
mod driver;
mod evaluator;
mod held;
mod launcher;
mod least_squares;
mod on_device;
// Read by the cust driver alone; its tests run without it.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod ordinal;
#[cfg(test)]
mod plans;
pub mod ptx;
mod sim;
mod table;
mod tables;
mod vectors;

pub use array::DeviceArray;
pub use driver::{KernelCounts, SECTOR_BYTES};
pub use evaluator::GpuEvaluator;
pub(crate) use held::{DeviceHeld, HeldOnDevice};
pub use launcher::{Launcher, Traffic};
pub use least_squares::{GpuLeastSquares, GpuResiduals, load_least_squares};
pub use on_device::DeviceEvaluator;
pub use sim::simulated_entries;
pub(crate) use table::{concatenated, strided, weights};
pub use vectors::{DeviceVector, DeviceVectors};

/// Opens a CUDA device with the cust driver (this process's, see `ordinal.rs`) and loads
/// `ptx` on it.
#[cfg(feature = "cuda")]
pub(crate) fn open_cuda(
    ptx: &str,
    launch: crate::backend::LaunchOverride,
) -> Result<Launcher, crate::backend::BackendError> {
    let driver = cust::CustDriver::open(ptx)?;
    Ok(Launcher::new(std::sync::Arc::new(driver), launch))
}

/// Loads `ptx` on a simulated device (`cudamin-ptx-sim`), which runs it on the CPU.
pub(crate) fn open_simulator(
    ptx: &str,
    launch: crate::backend::LaunchOverride,
) -> Result<Launcher, crate::backend::BackendError> {
    let driver = sim::SimDriver::open(ptx)?;
    Ok(Launcher::new(std::sync::Arc::new(driver), launch))
}
