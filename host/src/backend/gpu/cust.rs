//! The cust driver: the [`Driver`] of a real CUDA device. One context, one non-blocking
//! stream, and each entry's module of the embedded PTX ([`EntryModules`]) loaded, that is
//! JIT-compiled, on the entry's first use. Every cust call and every `unsafe` block of the GPU
//! path is in this file, and nothing else is.

use super::abi::KernelArg;
use super::driver::{Buffer, Driver, KernelLimits, ModuleLoads, host_zeros};
use super::ptx::{self, EntryModules};
use crate::backend::launch::LaunchConfig;
use crate::error::BackendError;
use cust::CudaFlags;
use cust::context::{Context, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::function::{BlockSize, Function, FunctionAttribute, GridSize};
use cust::memory::{AsyncCopyDestination, DevicePointer, DeviceSlice, LockedBuffer};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

mod memory;
use memory::Memory;

/// The driver's message and code, e.g. "no CUDA-capable device is detected (CUDA error 100)".
fn describe(err: CudaError) -> String {
    format!(
        "{} (CUDA error {})",
        err.to_string().trim_matches('"'),
        err as u32
    )
}

/// Maps a failed driver call to a [`BackendError`] naming the call.
fn driver(call: &'static str) -> impl Fn(CudaError) -> BackendError {
    move |err| BackendError::Driver {
        call,
        detail: describe(err),
    }
}

/// The device memory of `buffer`, as cust copies to and from it.
fn slice(buffer: &Buffer) -> DeviceSlice<f64> {
    prefix(buffer, buffer.len())
}

/// Entries `at..at + len` of `buffer` (clipped to it).
fn part(buffer: &Buffer, at: usize, len: usize) -> DeviceSlice<f64> {
    let at = at.min(buffer.len());
    let len = len.min(buffer.len() - at);
    let address = buffer.address() + (at * size_of::<f64>()) as u64;
    // SAFETY: as `prefix`'s: the entries lie within the buffer's allocation, which outlives
    // the borrow.
    unsafe { DeviceSlice::from_raw_parts(DevicePointer::from_raw(address), len) }
}

/// The first `len` f64 of `buffer` (all of them where it is shorter).
fn prefix(buffer: &Buffer, len: usize) -> DeviceSlice<f64> {
    let len = len.min(buffer.len());
    // SAFETY: a `Buffer` holds an address that `CustDriver::alloc` made for `len` f64 and that
    // stays allocated until the buffer's drop; the slice, no longer than that, lives no longer
    // than the borrow.
    unsafe { DeviceSlice::from_raw_parts(DevicePointer::from_raw(buffer.address()), len) }
}

/// Copies of at most this many f64 (1 MiB) go through the page-locked staging buffer, which
/// lets a small copy (a solver's `x`, a scalar) run in stream order without a wait. Larger ones
/// are copied from pageable memory and waited for: page-locking a large buffer costs more than
/// it saves, and a staged upload's host copy alone outlasts a pageable upload, so staging a big
/// vector only costs.
const STAGED_MAX: usize = 1 << 17;

/// A CUDA device with cudamin's kernels loaded.
///
/// Every copy, memset and launch goes on the one stream, in program order. The stream is
/// `NON_BLOCKING`, so nothing may use the legacy default stream (cust's synchronous copies and
/// `DeviceBuffer::zeroed` do): it would not be ordered with the launches.
pub(crate) struct CustDriver {
    // Field order is drop order: modules and stream go before the context that owns them.
    loaded: Mutex<Loaded>,
    stream: Stream,
    /// Page-locked host memory for copies; held for a whole write or read, so that two threads
    /// sharing the driver never stage through it at once.
    staging: Mutex<LockedBuffer<f64>>,
    /// The device memory: a pool's, allocated and freed in stream order, where the driver has
    /// pools.
    memory: Memory,
    context: Context,
    /// The device's ordinal, as the driver numbers it.
    ordinal: i32,
    multiprocessors: u32,
    summary: String,
    /// The PTX, cut into one module per entry.
    modules: EntryModules,
}

/// The entries' modules loaded so far, and the seconds their loads took.
#[derive(Default)]
struct Loaded {
    modules: HashMap<String, Module>,
    seconds: f64,
}

// SAFETY: cust leaves its handles !Send and !Sync because they are raw driver pointers. The CUDA
// driver API is thread-safe; every method below makes this driver's context current on the
// calling thread before it uses them, and the one piece of host memory they share (the staging
// buffer) is behind a mutex held for the whole copy that uses it.
unsafe impl Send for CustDriver {}
// SAFETY: as for `Send`.
unsafe impl Sync for CustDriver {}

impl CustDriver {
    /// Initializes the driver on this process's device (`ordinal.rs`: one per local rank of
    /// an MPI job, or `CUDAMIN_DEVICE`) with the kernels of `ptx`, each loaded on its first
    /// use. With no device this is [`BackendError::NoDevice`] carrying the driver's reason;
    /// PTX that cannot be cut into entries is [`BackendError::PtxRejected`].
    pub(crate) fn open(ptx: &str) -> Result<Self, BackendError> {
        let modules = ptx::modules(ptx).map_err(BackendError::PtxRejected)?;
        let no_device = |err| BackendError::NoDevice(describe(err));
        cust::init(CudaFlags::empty()).map_err(no_device)?;
        let devices = Device::num_devices().map_err(no_device)?;
        let ordinal = super::ordinal::choose(devices, |name| std::env::var(name).ok())
            .map_err(BackendError::NoDevice)?;
        let device = Device::get_device(ordinal).map_err(no_device)?;
        let context = Context::new(device).map_err(driver("cuDevicePrimaryCtxRetain"))?;
        let stream =
            Stream::new(StreamFlags::NON_BLOCKING, None).map_err(driver("cuStreamCreate"))?;
        let attribute = |attr| {
            device
                .get_attribute(attr)
                .map_err(driver("cuDeviceGetAttribute"))
        };
        let multiprocessors = attribute(DeviceAttribute::MultiprocessorCount)? as u32;
        let (major, minor) = (
            attribute(DeviceAttribute::ComputeCapabilityMajor)?,
            attribute(DeviceAttribute::ComputeCapabilityMinor)?,
        );
        let name = device.name().map_err(driver("cuDeviceGetName"))?;
        let memory = device.total_memory().map_err(driver("cuDeviceTotalMem"))?;
        let summary = format!(
            "{name} (device {ordinal}, sm_{major}{minor}, {multiprocessors} SMs, {:.1} GiB)",
            memory as f64 / (1u64 << 30) as f64
        );
        let staging = LockedBuffer::new(&0.0, 1).map_err(driver("cuMemAllocHost"))?;
        let memory = Memory::open(&device, ordinal as i32);
        Ok(Self {
            loaded: Mutex::default(),
            stream,
            staging: Mutex::new(staging),
            memory,
            context,
            ordinal: ordinal as i32,
            multiprocessors,
            summary,
            modules,
        })
    }

    /// The loaded modules, with `kernel`'s among them: loaded now if this is its first use
    /// (the driver JIT-compiles it, or finds it in its compute cache). The lock is held while
    /// the caller uses the kernel's function, which borrows the module.
    fn with_kernel(&self, kernel: &str) -> Result<MutexGuard<'_, Loaded>, BackendError> {
        self.make_current()?;
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if !loaded.modules.contains_key(kernel) {
            let text = (self.modules.module(kernel))
                .ok_or_else(|| BackendError::KernelMissing(kernel.to_owned()))?;
            let start = Instant::now();
            let module = Module::from_ptx(&text, &[]).map_err(|e| {
                BackendError::PtxRejected(format!(
                    "kernel `{kernel}`: {}: {}",
                    describe(e),
                    jit_log(&text)
                ))
            })?;
            loaded.seconds += start.elapsed().as_secs_f64();
            loaded.modules.insert(kernel.to_owned(), module);
        }
        Ok(loaded)
    }

    /// Makes this driver's context current on the calling thread (contexts are per thread).
    fn make_current(&self) -> Result<(), BackendError> {
        CurrentContext::set_current(&self.context).map_err(driver("cuCtxSetCurrent"))
    }

    /// Waits for all work on the stream; `after` names it in the error of a fault.
    fn synchronize(&self, after: &str) -> Result<(), BackendError> {
        self.make_current()?;
        self.stream.synchronize().map_err(|e| BackendError::Launch {
            kernel: after.to_owned(),
            detail: describe(e),
        })
    }

    /// The staging buffer, grown to hold at least `len` values.
    fn staging(
        &self,
        len: usize,
    ) -> Result<std::sync::MutexGuard<'_, LockedBuffer<f64>>, BackendError> {
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if staging.len() < len {
            // The old buffer may still be the source or target of a copy in flight.
            self.synchronize("an earlier copy")?;
            *staging = LockedBuffer::new(&0.0, len).map_err(driver("cuMemAllocHost"))?;
        }
        Ok(staging)
    }
}

impl Driver for CustDriver {
    fn summary(&self) -> &str {
        &self.summary
    }

    fn module_loads(&self) -> ModuleLoads {
        let loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        ModuleLoads {
            count: loaded.modules.len() as u64,
            seconds: loaded.seconds,
        }
    }

    fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    fn limits(&self, kernel: &str) -> Result<KernelLimits, BackendError> {
        let loaded = self.with_kernel(kernel)?;
        let function = function(&loaded, kernel)?;
        let attribute = |attr| {
            function
                .get_attribute(attr)
                .map_err(driver("cuFuncGetAttribute"))
        };
        let (resident_blocks, suggested_threads) = function
            .suggested_launch_configuration(0, BlockSize::x(1024))
            .map_err(driver("cuOccupancyMaxPotentialBlockSize"))?;
        Ok(KernelLimits {
            max_threads: attribute(FunctionAttribute::MaxThreadsPerBlock)?.max(0) as u32,
            registers: attribute(FunctionAttribute::NumRegisters)?.max(0) as u32,
            suggested_threads,
            resident_blocks,
        })
    }

    fn alloc(&self, what: &'static str, len: usize) -> Result<u64, BackendError> {
        if len == 0 {
            // A memset of a null pointer may be refused by the driver.
            return Ok(0);
        }
        self.make_current()?;
        self.memory.alloc(what, len, &self.stream)
    }

    fn free(&self, address: u64, len: usize) {
        if address == 0 || self.make_current().is_err() {
            // Nothing was allocated; or the context is gone, and the memory with it.
            return;
        }
        // SAFETY: `address` is an allocation of `alloc` for `len` values, freed once: only its
        // `Buffer`'s drop calls this, and nothing uses a buffer after its drop. Work already
        // queued that reads it is on the stream, ahead of the free; another library's work
        // finished before the drop (`settle`).
        unsafe { self.memory.free(address, len, &self.stream) };
    }

    fn settle(&self) {
        // Every stream of the context: another library's work is on its own streams. A fault
        // found now is that work's, and its library reports it.
        if self.make_current().is_ok() {
            let _ = CurrentContext::synchronize();
        }
    }

    fn wait(&self) -> Result<(), BackendError> {
        self.make_current()?;
        self.stream
            .synchronize()
            .map_err(driver("cuStreamSynchronize"))
    }

    fn check_foreign(
        &self,
        address: u64,
        len: usize,
        synchronize: bool,
    ) -> Result<(), BackendError> {
        use cust::sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_UNIFIED};
        use cust::sys::CUpointer_attribute::{
            CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        };
        if len == 0 {
            return Ok(());
        }
        self.make_current()?;
        if synchronize {
            CurrentContext::synchronize().map_err(driver("cuCtxSynchronize"))?;
        }
        let bytes = len.saturating_mul(size_of::<f64>());
        let refuse =
            |why: &str| BackendError::Foreign(format!("{bytes} bytes at {address:#x} {why}"));
        if address % size_of::<f64>() as u64 != 0 {
            return Err(refuse("are not aligned to 8 bytes"));
        }
        // This driver's own memory, come back through another library: its allocation is known
        // exactly, where a pool's ranges may not be.
        if let Some((start, size)) = self.memory.allocation_of(address) {
            if address - start + bytes as u64 > size as u64 {
                return Err(refuse(&format!(
                    "run past their allocation of {size} bytes"
                )));
            }
            return Ok(());
        }
        let unknown = |_| refuse("are not memory the CUDA driver knows");
        let memory_type: u32 =
            pointer_attribute(address, CU_POINTER_ATTRIBUTE_MEMORY_TYPE).map_err(unknown)?;
        if ![CU_MEMORYTYPE_DEVICE as u32, CU_MEMORYTYPE_UNIFIED as u32].contains(&memory_type) {
            return Err(refuse("are host memory, not device memory"));
        }
        let ordinal: i32 =
            pointer_attribute(address, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL).map_err(unknown)?;
        if ordinal != self.ordinal {
            return Err(refuse(&format!(
                "are on device {ordinal}, this session's is {}",
                self.ordinal
            )));
        }
        let start: u64 =
            pointer_attribute(address, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR).map_err(unknown)?;
        let size: usize =
            pointer_attribute(address, CU_POINTER_ATTRIBUTE_RANGE_SIZE).map_err(unknown)?;
        if address.saturating_sub(start) + bytes as u64 > size as u64 {
            return Err(refuse(&format!(
                "run past their allocation of {size} bytes"
            )));
        }
        Ok(())
    }

    fn write(&self, to: &Buffer, at: usize, values: &[f64]) -> Result<(), BackendError> {
        if values.is_empty() {
            return Ok(());
        }
        self.make_current()?;
        let mut target = part(to, at, values.len());
        if values.len() > STAGED_MAX {
            // SAFETY: `to` holds `values.len()` f64 from `at` (the launcher checked); the copy is
            // complete when the synchronize below returns, before `values` may change.
            unsafe { target.async_copy_from(values, &self.stream) }
                .map_err(driver("cuMemcpyHtoDAsync"))?;
            return self.synchronize("a copy to the device");
        }
        let mut staging = self.staging(values.len())?;
        // A copy out of the staging buffer may still be in flight.
        self.synchronize("an earlier evaluation")?;
        let staged = &mut staging.as_mut_slice()[..values.len()];
        staged.copy_from_slice(values);
        // SAFETY: `to` holds `values.len()` f64 from `at`; the staging buffer is page-locked and is not
        // written again before a synchronize (above, or in `read`), which waits for this copy.
        unsafe { target.async_copy_from(&*staged, &self.stream) }
            .map_err(driver("cuMemcpyHtoDAsync"))
    }

    fn read(&self, reads: &mut [(&Buffer, &mut [f64])], after: &str) -> Result<(), BackendError> {
        self.make_current()?;
        let total: usize = reads.iter().map(|(_, out)| out.len()).sum();
        if total > STAGED_MAX {
            for (from, out) in reads.iter_mut() {
                // SAFETY: `out` holds at most `from.len()` f64 (the launcher checked), the
                // prefix as many, and `out` is not touched until the synchronize below, which
                // waits for the copy.
                unsafe { prefix(from, out.len()).async_copy_to(&mut **out, &self.stream) }
                    .map_err(driver("cuMemcpyDtoHAsync"))?;
            }
            return self.synchronize(after);
        }
        let mut staging = self.staging(total)?;
        let mut offset = 0;
        for (from, out) in reads.iter() {
            if out.is_empty() {
                continue;
            }
            let target = &mut staging.as_mut_slice()[offset..offset + out.len()];
            // SAFETY: `target` is page-locked memory of `out.len()` f64, as many as the prefix
            // (at most `from.len()`: the launcher checked), read only after the synchronize
            // below.
            unsafe { prefix(from, out.len()).async_copy_to(target, &self.stream) }
                .map_err(driver("cuMemcpyDtoHAsync"))?;
            offset += out.len();
        }
        self.synchronize(after)?;
        let mut offset = 0;
        for (_, out) in reads.iter_mut() {
            out.copy_from_slice(&staging.as_slice()[offset..offset + out.len()]);
            offset += out.len();
        }
        Ok(())
    }

    /// A long vector lands in memory mapped beforehand, on every core: the driver's copy out of
    /// its own staging would map each fresh page on its one thread (faulting pages on one thread
    /// is far slower than copying into mapped memory). Transparent huge pages (`madvise`) were
    /// tried and made no visible difference.
    fn host_memory(&self, len: usize) -> Result<Vec<f64>, BackendError> {
        let mut out = host_zeros(len)?;
        if len > STAGED_MAX {
            crate::linalg::vector::map_in_place(&mut out, |_| 0.0);
        }
        Ok(out)
    }

    fn copy(&self, from: &Buffer, to: &Buffer) -> Result<(), BackendError> {
        if from.is_empty() {
            return Ok(());
        }
        self.make_current()?;
        // SAFETY: both are device buffers of `from.len()` f64 (the launcher checked); later
        // work on the stream sees the copy.
        unsafe { slice(to).async_copy_from(&slice(from), &self.stream) }
            .map_err(driver("cuMemcpyDtoDAsync"))
    }

    fn launch(
        &self,
        kernel: &str,
        config: LaunchConfig,
        args: &[KernelArg],
    ) -> Result<(), BackendError> {
        let loaded = self.with_kernel(kernel)?;
        let function = function(&loaded, kernel)?;
        let values: Vec<[u64; 2]> = args.iter().map(|arg| arg.words()).collect();
        let params: Vec<*mut c_void> = values.iter().map(|v| v.as_ptr() as *mut c_void).collect();
        // SAFETY: `abi` built `args` for this kernel's signature (the PTX signature test checks
        // every list against its `.entry`); each parameter (8 or 16 bytes) is read from
        // `values`, which outlives the call (the driver copies parameters at launch). The
        // device addresses are live buffers of the caller that built the launch.
        unsafe {
            self.stream.launch(
                &function,
                GridSize::x(config.blocks),
                BlockSize::x(config.threads),
                0,
                &params,
            )
        }
        .map_err(|e| BackendError::Launch {
            kernel: kernel.to_owned(),
            detail: describe(e),
        })
    }
}

impl Drop for CustDriver {
    fn drop(&mut self) {
        // The module, the stream and the staging buffer are released in this context,
        // whichever thread drops the driver. If that fails there is nothing left to release
        // them with.
        let _ = CurrentContext::set_current(&self.context);
    }
}

/// `kernel`'s function in its loaded module.
fn function<'a>(loaded: &'a Loaded, kernel: &str) -> Result<Function<'a>, BackendError> {
    (loaded.modules.get(kernel))
        .and_then(|module| module.get_function(kernel).ok())
        .ok_or_else(|| BackendError::KernelMissing(kernel.to_owned()))
}

/// One attribute of the allocation that holds device address `address`, of the type the driver
/// writes for it: `u32` for the memory type, `i32` for the ordinal, `u64` for the start,
/// `usize` for the size.
fn pointer_attribute<T: Copy + Default>(
    address: u64,
    attribute: cust::sys::CUpointer_attribute,
) -> Result<T, cust::sys::CUresult> {
    let mut value = T::default();
    // SAFETY: `value` has the size the driver writes for `attribute` (the callers above pair
    // each attribute with its type), and the driver only reads `address`.
    let result =
        unsafe { cust::sys::cuPointerGetAttribute((&raw mut value).cast(), attribute, address) };
    match result {
        cust::sys::cudaError_enum::CUDA_SUCCESS => Ok(value),
        error => Err(error),
    }
}

/// The JIT compiler's error log for `ptx`, which `Module::from_ptx` does not return: a second
/// load with a log buffer, made only after the first failed.
fn jit_log(ptx: &str) -> String {
    use cust::sys::{CUjit_option, cuModuleLoadDataEx, cuModuleUnload, cudaError_enum};
    let Ok(source) = CString::new(ptx) else {
        return "the PTX contains a NUL byte".to_owned();
    };
    let mut log = vec![0u8; 64 * 1024];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    // cuModuleLoadDataEx takes option values that fit in a pointer by value.
    let mut values = [log.as_mut_ptr().cast::<c_void>(), log.len() as *mut c_void];
    let mut module = std::ptr::null_mut();
    // SAFETY: the two options point at `log` and give its size; the driver writes at most
    // that many bytes. A module loaded after all is unloaded at once.
    let result = unsafe {
        cuModuleLoadDataEx(
            &mut module,
            source.as_ptr().cast(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if result == cudaError_enum::CUDA_SUCCESS {
        // SAFETY: `module` was just loaded and nothing else refers to it.
        unsafe { cuModuleUnload(module) };
        return "a second load succeeded, so no JIT log".to_owned();
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    match String::from_utf8_lossy(&log[..end]).trim() {
        "" => "the JIT compiler left no log".to_owned(),
        text => format!("JIT log: {}", text.replace('\n', "; ")),
    }
}
