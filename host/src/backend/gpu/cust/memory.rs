//! The cust driver's device memory. Where the driver offers memory pools (CUDA 11.2 and
//! later), a stream-ordered pool of its own: an allocation and a free are queued on the
//! driver's stream like a launch, so neither waits for the device, and the pool keeps freed
//! memory for the next allocation instead of handing it back. A loop of solves on one session
//! then allocates from memory it already holds. Elsewhere, each buffer is a `cuMemAlloc` of
//! its own, freed after the stream is done with it.
//!
//! The pool is the driver's alone (`cuMemPoolCreate`): the device's default pool, which other
//! libraries in the process may use, keeps its own settings. It is destroyed with the driver.
//! Every live allocation is recorded, so that the driver knows its own arrays exactly when one
//! comes back as another library's memory.

use super::driver;
use crate::error::BackendError;
use cust::device::Device;
use cust::error::CudaError;
use cust::memory::{DeviceBuffer, DevicePointer, DeviceSlice};
use cust::stream::Stream;
use cust::sys::{self as cuda, cudaError_enum};
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Mutex, PoisonError};

/// A driver's device memory: its pool, if any, and its live allocations.
pub(super) struct Memory {
    pool: Option<Pool>,
    /// Address → bytes of each allocation not yet freed.
    live: Mutex<BTreeMap<u64, usize>>,
}

/// A memory pool on one device, holding every byte freed into it until the pool is destroyed,
/// or until an allocation finds the device full.
struct Pool {
    handle: cuda::CUmemoryPool,
}

/// `Ok` where the driver's `call` succeeded, else its error with the driver's code.
fn check(call: &'static str, result: cuda::CUresult) -> Result<(), BackendError> {
    match result {
        cudaError_enum::CUDA_SUCCESS => Ok(()),
        error => Err(BackendError::Driver {
            call,
            detail: format!("{error:?} (CUDA error {})", error as u32),
        }),
    }
}

impl Memory {
    /// The memory of `device`, the driver's device `ordinal`: from a pool where one can be
    /// made, else by `cuMemAlloc`. A pool is only faster, so any failure to make one leaves
    /// the driver without.
    pub(super) fn open(device: &Device, ordinal: i32) -> Self {
        Memory {
            pool: Pool::open(device, ordinal).ok().flatten(),
            live: Mutex::default(),
        }
    }

    /// `len` zeros of device memory (`len > 0`), usable by work queued on `stream` after this
    /// call; `what` names it in the error where the device is full.
    pub(super) fn alloc(
        &self,
        what: &'static str,
        len: usize,
        stream: &Stream,
    ) -> Result<u64, BackendError> {
        let bytes = len
            .checked_mul(size_of::<f64>())
            .ok_or(BackendError::OutOfMemory {
                what,
                bytes: usize::MAX,
            })?;
        let address = match &self.pool {
            Some(pool) => pool.alloc(what, bytes, stream)?,
            None => alloc_unpooled(what, len)?,
        };
        // SAFETY: exactly this allocation, zeroed on the stream before any work that uses it.
        let mut zeros =
            unsafe { DeviceSlice::from_raw_parts(DevicePointer::<f64>::from_raw(address), len) };
        // SAFETY: as above.
        if let Err(err) = unsafe { zeros.set_zero_async(stream) } {
            // SAFETY: the allocation just made, which nothing else has seen.
            unsafe { self.release(address, len, stream) };
            return Err(driver("cuMemsetD8Async")(err));
        }
        self.lock().insert(address, bytes);
        Ok(address)
    }

    /// Frees `address`, from [`alloc`](Memory::alloc) for `len` values, once the work queued
    /// on `stream` so far is done: queued behind it in the pool, or after waiting for it. A
    /// failure cannot be reported from a drop.
    ///
    /// # Safety
    /// `address` came from `alloc` and is freed once; nothing queued after this call uses it,
    /// and no work but `stream`'s still reads it.
    pub(super) unsafe fn free(&self, address: u64, len: usize, stream: &Stream) {
        self.lock().remove(&address);
        // SAFETY: as the caller promises.
        unsafe { self.release(address, len, stream) };
    }

    /// The allocation holding `address`, live: its first address and its bytes.
    pub(super) fn allocation_of(&self, address: u64) -> Option<(u64, usize)> {
        let live = self.lock();
        let (&start, &bytes) = live.range(..=address).next_back()?;
        (address - start < bytes as u64).then_some((start, bytes))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, usize>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `address` back, recorded or not.
    ///
    /// # Safety
    /// As [`free`](Memory::free)'s.
    unsafe fn release(&self, address: u64, len: usize, stream: &Stream) {
        if self.pool.is_some() {
            // SAFETY: as the caller promises; the pool and the stream are live.
            let _ = unsafe { cuda::cuMemFreeAsync(address, stream.as_inner()) };
            return;
        }
        // The memory may still be in use by work on the stream: wait for it. A fault found now
        // was or will be reported by the operation that waits for it.
        let _ = stream.synchronize();
        // SAFETY: `address` and `len` are a `cuMemAlloc` of `alloc_unpooled`, freed once.
        drop(unsafe { DeviceBuffer::from_raw_parts(DevicePointer::<f64>::from_raw(address), len) });
    }
}

impl Pool {
    /// A pool on `device`, the driver's device `ordinal`; `None` where the device or its driver
    /// offers no memory pools.
    fn open(device: &Device, ordinal: i32) -> Result<Option<Self>, BackendError> {
        let mut supported = 0;
        // SAFETY: `supported` is a valid place for the attribute's int.
        let result = unsafe {
            cuda::cuDeviceGetAttribute(
                &mut supported,
                cuda::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
                device.as_raw(),
            )
        };
        check("cuDeviceGetAttribute", result)?;
        if supported == 0 {
            return Ok(None);
        }
        let props = cuda::CUmemPoolProps {
            allocType: cuda::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
            handleTypes: cuda::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
            location: cuda::CUmemLocation {
                type_: cuda::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: ordinal,
            },
            win32SecurityAttributes: std::ptr::null_mut(),
            reserved: [0; 64],
        };
        let mut handle = std::ptr::null_mut();
        // SAFETY: `props` is a whole description (its reserved bytes zero, as the driver asks)
        // and `handle` a valid place for the new pool.
        check("cuMemPoolCreate", unsafe {
            cuda::cuMemPoolCreate(&mut handle, &props)
        })?;
        let pool = Pool { handle };
        // Keep every freed byte: by default a pool hands its unused memory back at each
        // synchronization, and a solve synchronizes at every step.
        let mut keep = u64::MAX;
        // SAFETY: the release threshold is a `cuuint64_t`, read from `keep`; the pool is live.
        let result = unsafe {
            cuda::cuMemPoolSetAttribute(
                pool.handle,
                cuda::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&raw mut keep).cast::<c_void>(),
            )
        };
        check("cuMemPoolSetAttribute", result)?;
        Ok(Some(pool))
    }

    /// `bytes` of device memory, usable by work queued on `stream` after this call. Where the
    /// device is full, the pool first waits for `stream`, hands back what it holds unused and
    /// tries once more; `what` names the memory in the error if that fails too.
    fn alloc(
        &self,
        what: &'static str,
        bytes: usize,
        stream: &Stream,
    ) -> Result<u64, BackendError> {
        let try_alloc = || {
            let mut address = 0;
            // SAFETY: `address` is a valid place for the pointer; the pool and stream are live.
            let result = unsafe {
                cuda::cuMemAllocFromPoolAsync(&mut address, bytes, self.handle, stream.as_inner())
            };
            (result, address)
        };
        let (mut result, mut address) = try_alloc();
        if result == cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
            // Frees still queued hold their memory until the stream reaches them.
            stream
                .synchronize()
                .map_err(driver("cuStreamSynchronize"))?;
            // SAFETY: the pool is live.
            check("cuMemPoolTrimTo", unsafe {
                cuda::cuMemPoolTrimTo(self.handle, 0)
            })?;
            (result, address) = try_alloc();
        }
        if result == cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
            return Err(BackendError::OutOfMemory { what, bytes });
        }
        check("cuMemAllocFromPoolAsync", result)?;
        Ok(address)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // The driver destroys a pool with frees still in flight once they are done; there is
        // nothing to report from a drop.
        // SAFETY: the pool is live and destroyed once.
        let _ = unsafe { cuda::cuMemPoolDestroy(self.handle) };
    }
}

/// `len` f64 of device memory by `cuMemAlloc`, not yet zeroed, for a driver without memory
/// pools; its address.
fn alloc_unpooled(what: &'static str, len: usize) -> Result<u64, BackendError> {
    // SAFETY: the caller zeroes the memory on the stream before any use of it.
    let buffer = unsafe { DeviceBuffer::<f64>::uninitialized(len) }.map_err(|err| match err {
        CudaError::OutOfMemory => BackendError::OutOfMemory {
            what,
            bytes: len * size_of::<f64>(),
        },
        other => driver("cuMemAlloc")(other),
    })?;
    let address = buffer.as_device_ptr().as_raw();
    // Owned from here on by the `Buffer` that the launcher wraps around `address`.
    std::mem::forget(buffer);
    Ok(address)
}
