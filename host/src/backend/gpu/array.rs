//! An array a caller keeps on a GPU backend's device between solves: a start made there once
//! ([`Backend::to_device`](crate::backend::Backend::to_device)), or a solution left there
//! ([`Options::keep_on_device`](crate::solver::Options::keep_on_device)). Nothing crosses to
//! the host until [`DeviceArray::to_host`] is called.

use super::driver::Buffer;
use super::launcher::Launcher;
use crate::error::BackendError;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// `len` f64 in a GPU backend's device memory (or the simulator's), with the launcher that
/// owns that memory: the array keeps its device open while it lives. Solves only read it; a
/// clone shares the memory.
#[derive(Clone)]
pub struct DeviceArray {
    memory: Arc<Memory>,
}

/// A device array's memory, shared by its clones.
struct Memory {
    buffer: Buffer,
    launcher: Arc<Launcher>,
    /// Whether another library may have read it ([`DeviceArray::wait`]).
    lent: AtomicBool,
}

impl Drop for Memory {
    fn drop(&mut self) {
        // A free is queued behind cudamin's work alone. Memory another library may have read,
        // on its own stream, waits for the whole device first, so that no read of it is in
        // flight when the memory is handed out again.
        if *self.lent.get_mut() {
            self.launcher.settle();
        }
    }
}

impl DeviceArray {
    /// Wraps `buffer`, made by `launcher`.
    pub(super) fn new(buffer: Buffer, launcher: Arc<Launcher>) -> Self {
        Self {
            memory: Arc::new(Memory {
                buffer,
                launcher,
                lent: AtomicBool::new(false),
            }),
        }
    }

    /// A device copy of `values`, by `launcher`.
    pub(crate) fn upload(launcher: &Arc<Launcher>, values: &[f64]) -> Result<Self, BackendError> {
        let buffer = launcher.upload("an array kept on the device", values)?;
        Ok(Self::new(buffer, launcher.clone()))
    }

    /// `len` f64 from `address` in another library's memory on `launcher`'s device, read where
    /// they lie.
    pub(crate) fn foreign(
        launcher: &Arc<Launcher>,
        address: u64,
        len: usize,
        synchronize: bool,
    ) -> Result<Self, BackendError> {
        let buffer = launcher.foreign(address, len, synchronize)?;
        Ok(Self::new(buffer, launcher.clone()))
    }

    /// The device address of the first entry, as another library takes it (CUDA's
    /// `__cuda_array_interface__`); on the simulator, an address in its memory. Handing it out
    /// lends the array, as [`wait`](Self::wait) does: another library may read it on its own
    /// streams, so its memory, once dropped, is freed only after all work on the device is
    /// done. Call `wait` before another library reads it.
    pub fn device_address(&self) -> u64 {
        self.memory.lent.store(true, Ordering::Relaxed);
        self.memory.buffer.address()
    }

    /// Whether it lives in the PTX simulator's memory, which no other library can read.
    pub fn is_simulated(&self) -> bool {
        self.memory.launcher.is_simulated()
    }

    /// Waits until the work that writes the array is complete, so that another library may
    /// read it from its [`device_address`](Self::device_address). The array is then lent: its
    /// memory, once dropped, is freed only after all work on the device is done.
    pub fn wait(&self) -> Result<(), BackendError> {
        self.memory.lent.store(true, Ordering::Relaxed);
        self.memory.launcher.wait()
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.memory.buffer.len()
    }

    /// Whether it has no entries.
    pub fn is_empty(&self) -> bool {
        self.memory.buffer.is_empty()
    }

    /// A host copy of the entries: one copy from the device, counted in the backend's
    /// [`Traffic`](super::Traffic).
    pub fn to_host(&self) -> Result<Vec<f64>, BackendError> {
        self.memory
            .launcher
            .read_new(&self.memory.buffer, "an array's download")
    }

    /// The device memory.
    pub(super) fn buffer(&self) -> &Buffer {
        &self.memory.buffer
    }

    /// The launcher that owns the memory.
    pub(super) fn launcher(&self) -> &Arc<Launcher> {
        &self.memory.launcher
    }

    /// Whether this array lives where `launcher` launches: then its kernels may read it.
    pub(crate) fn is_on(&self, launcher: &Arc<Launcher>) -> bool {
        Arc::ptr_eq(&self.memory.launcher, launcher)
    }
}

/// Equal when they are one array: clones of one another, sharing its memory.
impl PartialEq for DeviceArray {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.memory, &other.memory)
    }
}

impl std::fmt::Debug for DeviceArray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceArray({} f64 on {})",
            self.len(),
            self.memory.launcher.device_summary()
        )
    }
}
