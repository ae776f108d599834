//! The cust driver's device memory: a stream-ordered pool of its own. An allocation and a free
//! are queued on the driver's stream like a launch, so neither waits for the device, and the
//! pool keeps freed memory for the next allocation instead of handing it back to the driver.
//! A loop of solves on one session then allocates from memory it already holds.
//!
//! The pool is the driver's alone (`cuMemPoolCreate`): the device's default pool, which other
//! libraries in the process may use, keeps its own settings. It is destroyed with the driver.

use crate::error::BackendError;
use cust::device::Device;
use cust::stream::Stream;
use cust::sys::{self as cuda, cudaError_enum};
use std::ffi::c_void;

/// A memory pool on one device, holding every byte freed into it until the pool is destroyed,
/// or until an allocation finds the device full.
pub(super) struct Pool {
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

impl Pool {
    /// A pool on `device`, the driver's device `ordinal`, or `None` where the device or its
    /// driver offers no memory pools (CUDA 11.2 and later do). Then the driver allocates with
    /// `cuMemAlloc` instead.
    pub(super) fn open(device: &Device, ordinal: i32) -> Result<Option<Self>, BackendError> {
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
    pub(super) fn alloc(
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
            stream.synchronize().map_err(|err| BackendError::Driver {
                call: "cuStreamSynchronize",
                detail: err.to_string(),
            })?;
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

    /// Returns `address`, from [`alloc`](Pool::alloc), to the pool once the work queued on
    /// `stream` so far is done. A failure cannot be reported from a drop: the memory is then
    /// held until the pool is destroyed.
    ///
    /// # Safety
    /// `address` came from `alloc` and is freed once; no work but `stream`'s uses it, and
    /// nothing queued after this call.
    pub(super) unsafe fn free(&self, address: u64, stream: &Stream) {
        // SAFETY: as the caller promises.
        let _ = unsafe { cuda::cuMemFreeAsync(address, stream.as_inner()) };
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
