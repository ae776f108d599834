//! The seam between the GPU backend and whatever runs its kernels.
//!
//! Everything above it (the term evaluator, the normal-equations pass, the device vectors) is
//! safe code written once against [`Driver`]: load nothing, know nothing of CUDA, only
//! allocate, copy and launch, and read results back. An implementation runs the embedded PTX:
//! the cust driver (`cust.rs`, feature `cuda`) on a real device, holding every `unsafe` block of
//! the GPU path, or the simulated driver (`sim.rs`), which interprets it on the CPU.
//!
//! The contract every implementation keeps:
//! - operations run in the order they are called, as on one CUDA stream: a launch sees every
//!   earlier write and copy, a read sees every earlier launch;
//! - [`write`](Driver::write) returns once the caller may change `values`;
//!   [`read`](Driver::read) returns once `out` holds the data (it waits for the work before it);
//! - an asynchronous fault of a kernel surfaces at the next call that waits
//!   ([`read`](Driver::read)), as [`BackendError::Launch`];
//! - addresses come only from [`alloc`](Driver::alloc), and a [`Buffer`] frees its own.

use super::abi::KernelArg;
use crate::backend::launch::LaunchConfig;
use crate::error::BackendError;
pub use cudamin_ptx_sim::{Counts as KernelCounts, SECTOR_BYTES};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a driver knows of one kernel of the loaded module, for choosing its launch sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KernelLimits {
    /// The most threads one block of this kernel may have (fewer than 1024 when its registers
    /// do not allow more).
    pub max_threads: u32,
    /// Registers per thread, for the message that refuses a block too large.
    pub registers: u32,
    /// The block size that maximizes occupancy (the occupancy API's answer).
    pub suggested_threads: u32,
    /// Blocks of that size the whole device holds at once.
    pub resident_blocks: u32,
}

/// The kernels of one PTX module on one device (loaded when the implementation chooses: the
/// cust driver loads each on its first use), and that device's memory.
///
/// Crate-private: its memory operations take addresses that only [`alloc`](Driver::alloc)
/// made, through [`Buffer`]s whose lengths the [`Launcher`](super::Launcher) checks.
/// What a driver's module loads have cost so far ([`Driver::module_loads`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ModuleLoads {
    /// Modules loaded.
    pub count: u64,
    /// Seconds the loads took.
    pub seconds: f64,
}

pub(crate) trait Driver: Send + Sync {
    /// The device, in words, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB)".
    fn summary(&self) -> &str;
    /// The modules loaded so far, and the seconds their loads took: on a real device, one
    /// module per kernel launched so far, JIT-compiled (or found in the driver's compute
    /// cache); on the simulator, the whole PTX, parsed once.
    fn module_loads(&self) -> ModuleLoads;
    /// The device's multiprocessors.
    fn multiprocessors(&self) -> u32;
    /// The launch limits of `kernel`, or [`BackendError::KernelMissing`].
    fn limits(&self, kernel: &str) -> Result<KernelLimits, BackendError>;
    /// `len` zeros in device memory (ordered before any later use); its address. An empty
    /// allocation is address 0 and no memory.
    fn alloc(&self, what: &'static str, len: usize) -> Result<u64, BackendError>;
    /// Releases what [`alloc`](Driver::alloc) returned for `len` values. Nothing may use it
    /// after.
    fn free(&self, address: u64, len: usize);
    /// Whether the device is the PTX simulator, whose addresses no other library can read.
    fn is_simulated(&self) -> bool {
        false
    }
    /// Waits until all work queued so far is complete, so that another library may read what
    /// it wrote.
    fn wait(&self) -> Result<(), BackendError> {
        Ok(())
    }
    /// Waits until all work on the device is complete, another library's too: before memory
    /// that library may have read is freed, since a free is queued behind this driver's work
    /// alone.
    fn settle(&self) {}
    /// Checks that `len` f64 from `address` are memory another library allocated on this
    /// device, for kernels to read where they lie; `synchronize` first waits for all work on
    /// the device, so that its producer's writes are complete.
    fn check_foreign(
        &self,
        address: u64,
        len: usize,
        synchronize: bool,
    ) -> Result<(), BackendError>;
    /// `to[at..at + values.len()] ← values` (within `to`, as the launcher checks).
    fn write(&self, to: &Buffer, at: usize, values: &[f64]) -> Result<(), BackendError>;
    /// Each `(from, out)`: `out ←` the first `out.len()` entries of `from` (at most all of
    /// them), waiting for all earlier work; `after` names that work in the error of a fault.
    fn read(&self, reads: &mut [(&Buffer, &mut [f64])], after: &str) -> Result<(), BackendError>;
    /// `len` zeros in host memory for a copy from the device to land in: [`host_zeros`]; a
    /// driver may first ready long ones for its copy.
    fn host_memory(&self, len: usize) -> Result<Vec<f64>, BackendError> {
        host_zeros(len)
    }
    /// `from` in new host memory ([`host_memory`](Driver::host_memory)), as
    /// [`read`](Driver::read) reads it.
    fn read_new(&self, from: &Buffer, after: &str) -> Result<Vec<f64>, BackendError> {
        let mut out = self.host_memory(from.len())?;
        self.read(&mut [(from, &mut out)], after)?;
        Ok(out)
    }
    /// `to ← from`, on the device (equal lengths).
    fn copy(&self, from: &Buffer, to: &Buffer) -> Result<(), BackendError>;
    /// Starts counting what each kernel's launches cost, from zero, or stops (`false`); whether
    /// this driver counts at all. Only the simulator does.
    fn count_kernels(&self, _on: bool) -> bool {
        false
    }
    /// The counts per kernel since counting started; `None` while it is off.
    fn kernel_counts(&self) -> Option<BTreeMap<String, KernelCounts>> {
        None
    }
    /// Launches `kernel` over `config` with `args`, whose list `abi` built for its signature.
    fn launch(
        &self,
        kernel: &str,
        config: LaunchConfig,
        args: &[KernelArg],
    ) -> Result<(), BackendError>;
}

/// `len` f64 of device memory, freed when dropped if this backend allocated it. Made by the
/// [`Launcher`](super::Launcher).
pub(crate) struct Buffer {
    address: u64,
    len: usize,
    driver: Arc<dyn Driver>,
    /// Whether `driver.alloc` made it; another library's memory is only read, never freed.
    owned: bool,
}

impl Buffer {
    /// Wraps what `driver.alloc` returned.
    pub(super) fn new(address: u64, len: usize, driver: Arc<dyn Driver>) -> Self {
        Self {
            address,
            len,
            driver,
            owned: true,
        }
    }

    /// Wraps memory another library allocated, which [`Driver::check_foreign`] accepted.
    pub(super) fn foreign(address: u64, len: usize, driver: Arc<dyn Driver>) -> Self {
        Self {
            address,
            len,
            driver,
            owned: false,
        }
    }

    /// Entries `at..at + len` of this buffer, to read or write as a buffer of their own; the
    /// memory stays this buffer's. `None` past its end.
    pub(super) fn view(&self, at: usize, len: usize) -> Option<Buffer> {
        let end = at.checked_add(len)?;
        (end <= self.len).then(|| Buffer {
            address: self.address + (at * size_of::<f64>()) as u64,
            len,
            driver: self.driver.clone(),
            owned: false,
        })
    }

    /// The device address of the first entry (0 when empty), as kernels take it.
    pub fn address(&self) -> u64 {
        self.address
    }

    /// The number of f64 entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no entries.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if self.owned {
            self.driver.free(self.address, self.len);
        }
    }
}

/// `len` zeros in host memory, for a copy from the device; out of memory is an error, not an
/// abort.
pub(crate) fn host_zeros(len: usize) -> Result<Vec<f64>, BackendError> {
    crate::backend::host_zeros("host memory for a copy from the device", len)
}
