//! The cust launcher: one context, the module loaded from the embedded PTX, one stream, and
//! launch configurations from the device's properties. All `unsafe` of the host's GPU path is
//! in this file.

use super::abi::{Exact, KernelArg, Launch, SchemeKernels, TermBuffers};
use crate::backend::evaluator::{
    BackendError, Evaluator, FiniteDifference, Gradient, LaunchConfig, LaunchOverride, NormalPass,
    RawArg, WithResiduals,
};
use crate::backend::problem::TermProblem;
use cust::CudaFlags;
use cust::context::{Context, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::function::{BlockSize, Function, FunctionAttribute, GridSize};
use cust::memory::{AsyncCopyDestination, DeviceBuffer, LockedBuffer};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use gpu_kernels::kernel::GradientWork;
use gpu_kernels::kernel::exact::exact_supported;
use gpu_kernels::kernel::normal::{mirror_upper, normal_supported};
use gpu_kernels::kernel::{AXPY, DOT_PARTIALS, MAX_ABS_PARTIALS};
use gpu_kernels::raw::RawKernel;
use gpu_kernels::{Central, Forward, Kernels, ResidualKernels, SumOfSquares};
use std::ffi::{CString, c_void};
use std::sync::Arc;
use std::time::Instant;

/// The driver's message and code, e.g. "no CUDA-capable device is detected (CUDA error 100)".
fn describe(err: CudaError) -> String {
    format!(
        "{} (CUDA error {})",
        err.to_string().trim_matches('"'),
        err as u32
    )
}

/// The launch of [`SUM_PARTIALS`](gpu_kernels::kernel::SUM_PARTIALS), which adds the partials
/// in order on one thread.
const SINGLE_THREAD: LaunchConfig = LaunchConfig {
    blocks: 1,
    threads: 1,
};

/// Maps a failed driver call to a [`BackendError`] naming the call.
fn driver(call: &'static str) -> impl Fn(CudaError) -> BackendError {
    move |err| BackendError::Driver {
        call,
        detail: describe(err),
    }
}

/// As [`driver`], for a call that allocates `len` f64 for `what`: running out of device memory
/// gets its own error, which names the buffer.
fn allocating(
    what: &'static str,
    len: usize,
    call: &'static str,
) -> impl Fn(CudaError) -> BackendError {
    move |err| match err {
        CudaError::OutOfMemory => BackendError::OutOfMemory {
            what,
            bytes: len * size_of::<f64>(),
        },
        other => driver(call)(other),
    }
}

/// A CUDA device with cudamin's kernels loaded.
///
/// Every copy, memset and launch goes on the one stream, in program order. The stream is
/// `NON_BLOCKING`, so nothing may use the legacy default stream (cust's synchronous copies and
/// `DeviceBuffer::zeroed` do): it would not be ordered with the launches.
pub struct CudaLauncher {
    // Field order is drop order: module and stream go before the context that owns them.
    module: Module,
    stream: Stream,
    context: Context,
    multiprocessors: u32,
    launch: LaunchOverride,
    summary: String,
    module_load_seconds: f64,
}

impl CudaLauncher {
    /// Initializes the driver on device 0 and loads `ptx`. With no device this is
    /// [`BackendError::NoDevice`] carrying the driver's reason. `launch` (checked by the caller)
    /// overrides the launch sizes.
    pub fn new(ptx: &str, launch: LaunchOverride) -> Result<Self, BackendError> {
        let no_device = |err| BackendError::NoDevice(describe(err));
        cust::init(CudaFlags::empty()).map_err(no_device)?;
        let device = Device::get_device(0).map_err(no_device)?;
        let context = Context::new(device).map_err(driver("cuDevicePrimaryCtxRetain"))?;
        let load_start = Instant::now();
        let module = Module::from_ptx(ptx, &[])
            .map_err(|e| BackendError::PtxRejected(format!("{}: {}", describe(e), jit_log(ptx))))?;
        let module_load_seconds = load_start.elapsed().as_secs_f64();
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
            "{name} (sm_{major}{minor}, {multiprocessors} SMs, {:.1} GiB)",
            memory as f64 / (1u64 << 30) as f64
        );
        Ok(Self {
            module,
            stream,
            context,
            multiprocessors,
            launch,
            summary,
            module_load_seconds,
        })
    }

    /// Seconds the driver took to load the module: the PTX's JIT compilation, unless the
    /// driver's compute cache already held it.
    pub fn module_load_seconds(&self) -> f64 {
        self.module_load_seconds
    }

    /// The device, e.g. "NVIDIA A100-SXM4-40GB (sm_80, 108 SMs, 39.4 GiB)".
    pub fn device_summary(&self) -> &str {
        &self.summary
    }

    /// Makes this launcher's context current on the calling thread (contexts are per thread).
    fn make_current(&self) -> Result<(), BackendError> {
        CurrentContext::set_current(&self.context).map_err(driver("cuCtxSetCurrent"))
    }

    fn function(&self, kernel: &str) -> Result<Function<'_>, BackendError> {
        self.module
            .get_function(kernel)
            .map_err(|_| BackendError::KernelMissing(kernel.to_owned()))
    }

    /// Refuses `threads` per block where `kernel` cannot run them: the limit depends on the
    /// kernel's registers (a kernel using 80 registers cannot launch 1024 threads).
    fn check_threads(&self, kernel: &str, threads: u32) -> Result<(), BackendError> {
        let function = self.function(kernel)?;
        let attribute = |attr| {
            function
                .get_attribute(attr)
                .map_err(driver("cuFuncGetAttribute"))
        };
        let limit = attribute(FunctionAttribute::MaxThreadsPerBlock)?;
        if threads as i64 > limit as i64 {
            let registers = attribute(FunctionAttribute::NumRegisters)?;
            return Err(BackendError::InvalidLaunch(format!(
                "{threads} threads per block: kernel `{kernel}` uses {registers} registers per \
                 thread, so this device runs at most {limit} threads in one of its blocks"
            )));
        }
        Ok(())
    }

    /// A configuration for `kernel` over `work` items: the occupancy API's block size for the
    /// kernel's register use (whole warps), and no more blocks than are resident at once (the
    /// kernels loop grid-stride) nor than the work needs; or what the user's
    /// [`LaunchOverride`] says, if this kernel can run it.
    pub fn config(&self, kernel: &str, work: usize) -> Result<LaunchConfig, BackendError> {
        let function = self.function(kernel)?;
        let (resident_blocks, threads) = function
            .suggested_launch_configuration(0, BlockSize::x(1024))
            .map_err(driver("cuOccupancyMaxPotentialBlockSize"))?;
        let threads = match self.launch.threads {
            Some(threads) => {
                self.check_threads(kernel, threads)?;
                threads
            }
            None => (threads / 32 * 32).max(32),
        };
        let needed = work.div_ceil(threads as usize).max(1);
        let resident = (resident_blocks.max(self.multiprocessors)) as usize;
        Ok(LaunchConfig {
            blocks: self.launch.blocks.unwrap_or(needed.min(resident) as u32),
            threads,
        })
    }

    /// Enqueues one launch on the stream.
    fn launch(&self, launch: &Launch, config: LaunchConfig) -> Result<(), BackendError> {
        let function = self.function(launch.kernel)?;
        let values: Vec<[u64; 2]> = launch.args.iter().map(|arg| arg.words()).collect();
        let params: Vec<*mut c_void> = values.iter().map(|v| v.as_ptr() as *mut c_void).collect();
        // SAFETY: `abi` built `launch.args` for this kernel's signature (the PTX signature test
        // checks every list against its `.entry`); each parameter (8 or 16 bytes) is read from
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
            kernel: launch.kernel.to_owned(),
            detail: describe(e),
        })
    }

    /// Waits for the stream; an asynchronous kernel fault surfaces here.
    fn synchronize(&self, after: &str) -> Result<(), BackendError> {
        self.stream.synchronize().map_err(|e| BackendError::Launch {
            kernel: after.to_owned(),
            detail: describe(e),
        })
    }

    /// `len` zeros on the device, set on the stream. An empty buffer is no allocation and no
    /// memset (a memset of a null pointer may be refused by the driver).
    fn alloc(&self, what: &'static str, len: usize) -> Result<DeviceBuffer<f64>, BackendError> {
        // SAFETY: the memset is ordered before any use of the buffer on the same stream, and
        // `set_zero_async` skips empty buffers.
        unsafe {
            let mut buffer =
                DeviceBuffer::uninitialized(len).map_err(allocating(what, len, "cuMemAlloc"))?;
            buffer
                .set_zero_async(&self.stream)
                .map_err(driver("cuMemsetD8Async"))?;
            Ok(buffer)
        }
    }

    /// A device copy of `values`, sent on the stream. The caller synchronizes the stream
    /// before `values` may change (the driver stages pageable memory, but only a
    /// synchronize says the copy is done).
    fn upload(
        &self,
        what: &'static str,
        values: &[f64],
    ) -> Result<DeviceBuffer<f64>, BackendError> {
        // SAFETY: as in `alloc`; the copy is ordered before any launch that reads the buffer.
        unsafe {
            let mut buffer = DeviceBuffer::uninitialized(values.len()).map_err(allocating(
                what,
                values.len(),
                "cuMemAlloc",
            ))?;
            buffer
                .async_copy_from(values, &self.stream)
                .map_err(driver("cuMemcpyHtoDAsync"))?;
            Ok(buffer)
        }
    }

    /// `to ← from`, on the stream (same lengths).
    fn copy_on_device(
        &self,
        from: &DeviceBuffer<f64>,
        to: &mut DeviceBuffer<f64>,
    ) -> Result<(), BackendError> {
        // SAFETY: both buffers are device memory of the same length; later work on the stream
        // sees the copy.
        unsafe { to.async_copy_from(from, &self.stream) }.map_err(driver("cuMemcpyDtoDAsync"))
    }

    /// Runs a raw kernel: uploads its slices, launches it, copies its outputs back and waits,
    /// all on the stream. Arguments were checked against the kernel's parameters by the caller.
    pub fn launch_raw(
        &self,
        kernel: &RawKernel,
        config: LaunchConfig,
        args: &mut [RawArg<'_>],
    ) -> Result<(), BackendError> {
        self.make_current()?;
        self.check_threads(kernel.name, config.threads)?;
        let buffers = args
            .iter()
            .map(|arg| match arg {
                RawArg::In(values) => self.upload("a raw kernel input", values).map(Some),
                RawArg::Out(values) => self.upload("a raw kernel output", values).map(Some),
                RawArg::F64(_) | RawArg::U64(_) => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let kernel_args = args
            .iter()
            .zip(&buffers)
            .map(|(arg, buffer)| match (arg, buffer) {
                (RawArg::F64(v), _) => KernelArg::F64(*v),
                (RawArg::U64(v), _) => KernelArg::U64(*v),
                (_, buffer) => KernelArg::Slice {
                    ptr: buffer.as_ref().map_or(0, address),
                    len: buffer.as_ref().map_or(0, |b| b.len() as u64),
                },
            })
            .collect();
        let launch = Launch::raw(kernel, kernel_args).ok_or_else(|| BackendError::Kernel {
            kernel: kernel.name.to_owned(),
            reason: "was given arguments that do not match its parameters".to_owned(),
        })?;
        let ran = self.launch(&launch, config).and_then(|()| {
            for (arg, buffer) in args.iter_mut().zip(&buffers) {
                if let (RawArg::Out(values), Some(buffer)) = (arg, buffer) {
                    // SAFETY: `values` is not read until the synchronize below.
                    unsafe { buffer.async_copy_to(&mut **values, &self.stream) }
                        .map_err(driver("cuMemcpyDtoHAsync"))?;
                }
            }
            Ok(())
        });
        // Whatever failed, nothing may still be copying into `args` or reading `buffers` when
        // they are released.
        let finished = self.synchronize(kernel.name);
        ran.and(finished)
    }
}

impl Drop for CudaLauncher {
    fn drop(&mut self) {
        // The module and the stream are released in this context, whichever thread drops the
        // launcher. If that fails there is nothing left to release them with.
        let _ = CurrentContext::set_current(&self.context);
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

fn locked(len: usize) -> Result<LockedBuffer<f64>, BackendError> {
    LockedBuffer::new(&0.0, len).map_err(driver("cuMemAllocHost"))
}

fn address(buffer: &DeviceBuffer<f64>) -> u64 {
    buffer.as_device_ptr().as_raw()
}

/// Where a term problem's gradient kernels write.
struct GradientTargets {
    buffers: TermBuffers,
    g: u64,
    /// Dense windows: the per-block partial sums, finished into `g` by a second kernel.
    partials: Option<u64>,
    /// The value's per-block partials, when a gradient pass also takes the value.
    values: u64,
    /// Where the value's sum goes.
    f: u64,
}

impl GradientTargets {
    fn plan<T: Kernels, S: SchemeKernels>(
        &self,
        launcher: &CudaLauncher,
        config: LaunchConfig,
    ) -> Result<GradientPlan, BackendError> {
        let b = self.buffers;
        let out = self.partials.unwrap_or(self.g);
        let finish = match self.partials {
            None => None,
            Some(partials) => {
                let blocks = config.blocks as usize;
                let finish = Launch::dense_finish::<S>(b.x, b.n, partials, blocks, self.g);
                Some((finish, launcher.config(S::DENSE_FINISH, b.n)?))
            }
        };
        Ok(GradientPlan {
            kernel: Launch::gradient::<T, S>(b, out, 0),
            with_value: Launch::gradient::<T, S>(b, out, self.values),
            value_sum: Launch::sum_partials(self.values, config.blocks as usize, self.f),
            config,
            finish,
        })
    }
}

/// The launches of one gradient scheme, built once per problem.
struct GradientPlan {
    kernel: Launch,
    /// The same pass, also writing the value's partials; `value_sum` adds them up.
    with_value: Launch,
    value_sum: Launch,
    config: LaunchConfig,
    /// The dense second stage; banded gradients need none.
    finish: Option<(Launch, LaunchConfig)>,
}

/// A term problem on the GPU. Its data lives on the device from [`new`](CudaEvaluator::new)
/// on; an evaluation sends `x` down and brings `f` or `∇f` back, through page-locked buffers.
pub struct CudaEvaluator {
    n: usize,
    /// The problem's device buffers, as the term kernels take them.
    buffers: TermBuffers,
    value: (Launch, LaunchConfig),
    sum: (Launch, LaunchConfig),
    forward: GradientPlan,
    central: GradientPlan,
    /// Or why the exact kernels cannot take this problem.
    exact: Result<GradientPlan, &'static str>,
    x_host: LockedBuffer<f64>,
    g_host: LockedBuffer<f64>,
    f_host: LockedBuffer<f64>,
    // Device buffers; the launches above hold their addresses.
    x: DeviceBuffer<f64>,
    g: DeviceBuffer<f64>,
    f: DeviceBuffer<f64>,
    _data: DeviceBuffer<f64>,
    _value_partials: DeviceBuffer<f64>,
    _gradient_partials: DeviceBuffer<f64>,
    _gradient_value_partials: DeviceBuffer<f64>,
    // Last, so that the buffers above are freed while the context is alive (the launcher may
    // hold its last reference).
    launcher: Arc<CudaLauncher>,
}

impl CudaEvaluator {
    /// Uploads the problem's data and plans every launch.
    pub fn new<T: Kernels>(
        launcher: Arc<CudaLauncher>,
        problem: TermProblem<T>,
    ) -> Result<Self, BackendError> {
        launcher.make_current()?;
        let l = &*launcher;
        let n = problem.n();
        let terms = problem.terms();
        let data = problem.data();
        let x = l.alloc("x", n)?;
        let g = l.alloc("the gradient", n)?;
        let f = l.alloc("the value", 1)?;
        let data_buffer = l.upload("the data", data.values())?;
        // The upload reads `problem`'s memory, which goes when this function returns.
        l.synchronize("the data upload")?;
        let buffers = TermBuffers {
            x: address(&x),
            n,
            data: address(&data_buffer),
            data_len: data.values().len(),
            data_rows: data.rows(),
        };

        let value_config = l.config(T::VALUE, terms)?;
        let value_partials = l.alloc("value partial sums", value_config.blocks as usize)?;
        let value = (
            Launch::value::<T>(buffers, address(&value_partials)),
            value_config,
        );
        let sum = (
            Launch::sum_partials(
                address(&value_partials),
                value_config.blocks as usize,
                address(&f),
            ),
            SINGLE_THREAD,
        );

        // Dense gradients need `n` partials per block; size them for the larger of the two plans.
        let work = GradientWork::of::<T>(n, data);
        let dense = matches!(work, GradientWork::Terms(_));
        let work = work.units();
        let forward_config = l.config(T::GRADIENT_FORWARD, work)?;
        let central_config = l.config(T::GRADIENT_CENTRAL, work)?;
        let exact_config = l.config(T::GRADIENT_EXACT, work)?;
        let partial_blocks = forward_config
            .blocks
            .max(central_config.blocks)
            .max(exact_config.blocks) as usize;
        let gradient_partials = l.alloc(
            "gradient partial sums",
            if dense { partial_blocks * n } else { 0 },
        )?;
        let gradient_value_partials = l.alloc("value partial sums", partial_blocks)?;
        let targets = GradientTargets {
            buffers,
            g: address(&g),
            partials: dense.then(|| address(&gradient_partials)),
            values: address(&gradient_value_partials),
            f: address(&f),
        };
        let forward = targets.plan::<T, Forward>(l, forward_config)?;
        let central = targets.plan::<T, Central>(l, central_config)?;
        let exact = match exact_supported::<T>(n, true) {
            Ok(()) => Ok(targets.plan::<T, Exact>(l, exact_config)?),
            Err(why) => Err(why),
        };

        Ok(Self {
            n,
            buffers,
            value,
            sum,
            forward,
            central,
            exact,
            x_host: locked(n)?,
            g_host: locked(n)?,
            f_host: locked(1)?,
            x,
            g,
            f,
            _data: data_buffer,
            _value_partials: value_partials,
            _gradient_partials: gradient_partials,
            _gradient_value_partials: gradient_value_partials,
            launcher,
        })
    }

    /// Sends `x` to the device (through the page-locked staging buffer).
    fn send_x(&mut self, x: &[f64]) -> Result<(), BackendError> {
        self.launcher.make_current()?;
        // An evaluation that failed part-way may have left a copy from `x_host` in flight.
        self.launcher.synchronize("an earlier evaluation")?;
        self.x_host.as_mut_slice().copy_from_slice(x);
        // SAFETY: both buffers live until the stream is synchronized, before `x_host` is
        // written again.
        unsafe { self.x.async_copy_from(&self.x_host, &self.launcher.stream) }
            .map_err(driver("cuMemcpyHtoDAsync"))
    }
}

impl Drop for CudaEvaluator {
    fn drop(&mut self) {
        // The buffers are freed after this, in the launcher's context, which must be current
        // on the dropping thread (an evaluator may be dropped on another thread than it ran
        // on). No evaluation is in flight: each one ends with a synchronize.
        let _ = self.launcher.make_current();
    }
}

// SAFETY: cust leaves `DeviceBuffer` !Send because it holds a raw device address. The
// evaluator owns its buffers, uses them only through `&mut self` and makes its context current
// on the calling thread first, so moving it to another thread is sound.
unsafe impl Send for CudaEvaluator {}

impl CudaEvaluator {
    /// The vector arithmetic for a solver that keeps this problem's vectors on the device, on
    /// this evaluator's stream.
    pub fn vectors(&self) -> Result<DeviceVectors, BackendError> {
        DeviceVectors::new(self.launcher.clone(), self.n)
    }

    /// `f(x)` for `x` already on the device.
    pub fn value_on_device(&mut self, x: &DeviceVector) -> Result<f64, BackendError> {
        self.take_x(x)?;
        self.value_at_x()
    }

    /// `∇f(x)` into `g`, both on the device. Nothing comes back to the host; a fault surfaces
    /// at the next operation that waits for the stream.
    pub fn gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        self.take_x(x)?;
        self.gradient_at_x(gradient, false)?;
        self.launcher.copy_on_device(&self.g, &mut g.0)
    }

    /// Copies a device vector into the evaluator's `x`, which the planned launches read.
    fn take_x(&mut self, x: &DeviceVector) -> Result<(), BackendError> {
        self.launcher.make_current()?;
        if x.0.len() != self.n {
            return Err(BackendError::Kernel {
                kernel: "a device evaluation".to_owned(),
                reason: format!("got a vector of {} entries for n = {}", x.0.len(), self.n),
            });
        }
        self.launcher.copy_on_device(&x.0, &mut self.x)
    }

    /// Launches the value kernels on the evaluator's `x` and brings `f` back.
    fn value_at_x(&mut self) -> Result<f64, BackendError> {
        let l = &self.launcher;
        l.launch(&self.value.0, self.value.1)?;
        l.launch(&self.sum.0, self.sum.1)?;
        self.read_f(self.value.0.kernel)
    }

    /// Launches the gradient kernels on the evaluator's `x`, into its `g`; `with_value` also
    /// takes the value in the same pass, into its `f`.
    fn gradient_at_x(&mut self, gradient: Gradient, with_value: bool) -> Result<(), BackendError> {
        let plan = match gradient {
            Gradient::FiniteDifference(FiniteDifference::Forward) => &self.forward,
            Gradient::FiniteDifference(FiniteDifference::Central) => &self.central,
            Gradient::Exact => self
                .exact
                .as_ref()
                .map_err(|why| BackendError::ExactUnsupported(why))?,
        };
        let l = &self.launcher;
        l.launch(
            if with_value {
                &plan.with_value
            } else {
                &plan.kernel
            },
            plan.config,
        )?;
        if let Some((finish, config)) = &plan.finish {
            l.launch(finish, *config)?;
        }
        if with_value {
            l.launch(&plan.value_sum, SINGLE_THREAD)?;
        }
        Ok(())
    }

    /// Brings `f` back, waiting for the stream.
    fn read_f(&mut self, after: &str) -> Result<f64, BackendError> {
        let l = &self.launcher;
        // SAFETY: `f_host` is read only after the synchronize below.
        unsafe { self.f.async_copy_to(&mut self.f_host, &l.stream) }
            .map_err(driver("cuMemcpyDtoHAsync"))?;
        l.synchronize(after)?;
        Ok(self.f_host[0])
    }

    /// Brings `∇f` back into `g`, waiting for the stream.
    fn read_g(&mut self, g: &mut [f64]) -> Result<(), BackendError> {
        let l = &self.launcher;
        // SAFETY: `g_host` is read only after the synchronize below.
        unsafe { self.g.async_copy_to(&mut self.g_host, &l.stream) }
            .map_err(driver("cuMemcpyDtoHAsync"))?;
        l.synchronize("the gradient kernels")?;
        g.copy_from_slice(&self.g_host);
        Ok(())
    }

    /// `f(x)` and `∇f(x)` into `g`, in one gradient pass, all on the device.
    pub fn value_and_gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<f64, BackendError> {
        self.take_x(x)?;
        self.gradient_at_x(gradient, true)?;
        self.launcher.copy_on_device(&self.g, &mut g.0)?;
        self.read_f("the gradient kernels")
    }
}

impl Evaluator for CudaEvaluator {
    fn dim(&self) -> usize {
        self.n
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, BackendError> {
        self.send_x(x)?;
        self.value_at_x()
    }

    fn gradient(
        &mut self,
        x: &[f64],
        gradient: Gradient,
        g: &mut [f64],
    ) -> Result<(), BackendError> {
        self.send_x(x)?;
        self.gradient_at_x(gradient, false)?;
        self.read_g(g)
    }

    fn value_and_gradient(
        &mut self,
        x: &[f64],
        gradient: Gradient,
        g: &mut [f64],
    ) -> Result<f64, BackendError> {
        self.send_x(x)?;
        self.gradient_at_x(gradient, true)?;
        let l = &self.launcher;
        // SAFETY: `f_host` is read only after `read_g`'s synchronize, which follows this copy
        // on the stream.
        unsafe { self.f.async_copy_to(&mut self.f_host, &l.stream) }
            .map_err(driver("cuMemcpyDtoHAsync"))?;
        self.read_g(g)?;
        Ok(self.f_host[0])
    }
}

/// The GPU's normal-equations pass over a residual term's sum of squares, loaded in a
/// [`CudaEvaluator`]: one `_normal_` kernel (per-block partials), then a block-ordered sum.
pub struct CudaResiduals {
    residuals: usize,
    /// Per scheme (forward, central, exact); or why the pass does not take this problem.
    normal: Result<[NormalPlan; 3], &'static str>,
    normal_host: LockedBuffer<f64>,
    normal_out: DeviceBuffer<f64>,
    _partials: DeviceBuffer<f64>,
    _value_partials: DeviceBuffer<f64>,
    // Last, so that the buffers above are freed while the context is alive.
    launcher: Arc<CudaLauncher>,
}

impl Drop for CudaResiduals {
    fn drop(&mut self) {
        // As for `CudaEvaluator`: the buffers are freed next, in this context.
        let _ = self.launcher.make_current();
    }
}

/// A sum of squares of a residual term on the GPU.
pub type CudaLeastSquares = WithResiduals<CudaEvaluator, CudaResiduals>;

/// The launches of one scheme's normal equations.
struct NormalPlan {
    /// The first stage: `n² + n` partials and `Σ r²` per block.
    first: (Launch, LaunchConfig),
    /// The blocks' partials summed in block order.
    finish: (Launch, LaunchConfig),
    /// The blocks' `Σ r²` summed into the evaluator's `f`.
    value_sum: Launch,
}

/// Loads the sum of squares of residual term `T` and plans its normal equations (refused,
/// with the reason, where [`normal_supported`] says so; the value and gradient still run).
pub fn load_least_squares<T: ResidualKernels>(
    launcher: Arc<CudaLauncher>,
    problem: TermProblem<SumOfSquares<T>>,
) -> Result<CudaLeastSquares, BackendError> {
    let n = problem.n();
    let residuals = problem.terms();
    let supported = normal_supported::<T>(n, true);
    let sum = CudaEvaluator::new(launcher.clone(), problem)?;
    let l = &*launcher;
    l.make_current()?;
    let len = n * n + n;
    let configs = [
        l.config(T::NORMAL_FORWARD, residuals)?,
        l.config(T::NORMAL_CENTRAL, residuals)?,
        l.config(T::NORMAL_EXACT, residuals)?,
    ];
    let blocks = configs.iter().map(|c| c.blocks).max().unwrap_or(1) as usize;
    let partials = l.alloc(
        "normal-equations partial sums",
        if supported.is_ok() { blocks * len } else { 0 },
    )?;
    let value_partials = l.alloc("value partial sums", blocks)?;
    let normal_out = l.alloc("the normal equations", len)?;
    let finish_config = l.config(gpu_kernels::kernel::SUM_BLOCKS, len)?;
    let (out, values, f) = (
        address(&partials),
        address(&value_partials),
        address(&sum.f),
    );
    let plan = |first: Launch, config: LaunchConfig| {
        let blocks = config.blocks as usize;
        NormalPlan {
            first: (first, config),
            finish: (
                Launch::sum_blocks(out, len, blocks, address(&normal_out)),
                finish_config,
            ),
            value_sum: Launch::sum_partials(values, blocks, f),
        }
    };
    let b = sum.buffers;
    let normal = supported.map(|()| {
        [
            plan(Launch::normal::<T, Forward>(b, out, values), configs[0]),
            plan(Launch::normal::<T, Central>(b, out, values), configs[1]),
            plan(Launch::normal::<T, Exact>(b, out, values), configs[2]),
        ]
    });
    let pass = CudaResiduals {
        residuals,
        normal,
        normal_host: locked(len)?,
        normal_out,
        _partials: partials,
        _value_partials: value_partials,
        launcher,
    };
    Ok(WithResiduals { pass, sum })
}

impl NormalPass<CudaEvaluator> for CudaResiduals {
    fn residuals(&self, _sum: &CudaEvaluator) -> usize {
        self.residuals
    }

    fn normal_equations(
        &mut self,
        sum: &mut CudaEvaluator,
        x: &[f64],
        jacobian: Gradient,
        jtj: &mut [f64],
        jtr: &mut [f64],
    ) -> Result<f64, BackendError> {
        let plans = self.normal.as_ref().map_err(|why| BackendError::Kernel {
            kernel: "normal equations".to_owned(),
            reason: (*why).to_owned(),
        })?;
        let plan = match jacobian {
            Gradient::FiniteDifference(FiniteDifference::Forward) => &plans[0],
            Gradient::FiniteDifference(FiniteDifference::Central) => &plans[1],
            Gradient::Exact => &plans[2],
        };
        let n = sum.n;
        sum.send_x(x)?;
        let l = &sum.launcher;
        l.launch(&plan.first.0, plan.first.1)?;
        l.launch(&plan.finish.0, plan.finish.1)?;
        l.launch(&plan.value_sum, SINGLE_THREAD)?;
        // SAFETY: `normal_host` is read only after `read_f`'s synchronize, which follows this
        // copy on the stream.
        unsafe {
            self.normal_out
                .async_copy_to(&mut self.normal_host, &l.stream)
        }
        .map_err(driver("cuMemcpyDtoHAsync"))?;
        let sum_of_squares = sum.read_f(plan.first.0.kernel)?;
        let (upper, products) = self.normal_host.as_slice().split_at(n * n);
        jtj.copy_from_slice(upper);
        mirror_upper(jtj, n);
        jtr.copy_from_slice(products);
        Ok(sum_of_squares)
    }
}

// SAFETY: cust leaves its buffers !Send (raw device addresses); the pass owns them and uses
// them only through `&mut self`, with its evaluator's context made current (`send_x`) first.
unsafe impl Send for CudaResiduals {}

/// An `n`-vector in device memory, made by [`DeviceVectors`].
pub struct DeviceVector(DeviceBuffer<f64>);

/// The vector arithmetic of a solver whose vectors stay on the device: each operation is one
/// or two launches on the launcher's stream, and only scalars (a dot product, a norm) come
/// back. Evaluations run on the same stream, so the two stay in program order.
pub struct DeviceVectors {
    n: usize,
    elementwise: LaunchConfig,
    reduction: LaunchConfig,
    /// One block, for the second stage of the max-abs reduction.
    finish: LaunchConfig,
    partials: DeviceBuffer<f64>,
    scalar: DeviceBuffer<f64>,
    scalar_host: LockedBuffer<f64>,
    // Last: the buffers above are freed while the context is alive.
    launcher: Arc<CudaLauncher>,
}

impl DeviceVectors {
    fn new(launcher: Arc<CudaLauncher>, n: usize) -> Result<Self, BackendError> {
        launcher.make_current()?;
        let l = &*launcher;
        let elementwise = l.config(AXPY, n)?;
        let dot = l.config(DOT_PARTIALS, n)?;
        let max = l.config(MAX_ABS_PARTIALS, n)?;
        // Both reductions take the smaller grid, so that one partials buffer serves both and
        // the second stage's block reads all of them.
        let reduction = LaunchConfig {
            blocks: dot.blocks.min(max.blocks),
            threads: dot.threads.min(max.threads),
        };
        let finish = LaunchConfig {
            blocks: 1,
            ..l.config(MAX_ABS_PARTIALS, 1)?
        };
        Ok(Self {
            n,
            elementwise,
            reduction,
            finish,
            partials: l.alloc("reduction partials", reduction.blocks as usize)?,
            scalar: l.alloc("a reduction's result", 1)?,
            scalar_host: locked(1)?,
            launcher,
        })
    }

    /// `n` zeros.
    pub fn zeros(&mut self) -> Result<DeviceVector, BackendError> {
        self.launcher.make_current()?;
        self.launcher
            .alloc("a solver vector", self.n)
            .map(DeviceVector)
    }

    /// A device copy of `x` (`n` entries).
    pub fn upload(&mut self, x: &[f64]) -> Result<DeviceVector, BackendError> {
        self.launcher.make_current()?;
        let buffer = self.launcher.upload("a solver vector", x)?;
        // `x` may change once this returns.
        self.launcher.synchronize("a vector upload")?;
        Ok(DeviceVector(buffer))
    }

    /// `v` in host memory.
    pub fn download(&self, v: &DeviceVector, host: &mut [f64]) -> Result<(), BackendError> {
        self.launcher.make_current()?;
        // SAFETY: `host` is not touched until the synchronize below.
        unsafe { v.0.async_copy_to(host, &self.launcher.stream) }
            .map_err(driver("cuMemcpyDtoHAsync"))?;
        self.launcher.synchronize("a vector download")
    }

    /// `to ← from`.
    pub fn copy(&mut self, from: &DeviceVector, to: &mut DeviceVector) -> Result<(), BackendError> {
        self.launcher.copy_on_device(&from.0, &mut to.0)
    }

    /// `y ← y + alpha·x`.
    pub fn axpy(
        &mut self,
        alpha: f64,
        x: &DeviceVector,
        y: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let launch = Launch::axpy(self.n, alpha, address(&x.0), address(&y.0));
        self.launcher.launch(&launch, self.elementwise)
    }

    /// `v ← alpha·v`.
    pub fn scale(&mut self, alpha: f64, v: &mut DeviceVector) -> Result<(), BackendError> {
        let launch = Launch::scale(self.n, alpha, address(&v.0));
        self.launcher.launch(&launch, self.elementwise)
    }

    /// `out ← x + step·p`.
    pub fn ray_point(
        &mut self,
        x: &DeviceVector,
        step: f64,
        p: &DeviceVector,
        out: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let launch = Launch::ray_point(self.n, address(&x.0), step, address(&p.0), address(&out.0));
        self.launcher.launch(&launch, self.elementwise)
    }

    /// `old ← new − old`.
    pub fn difference(
        &mut self,
        new: &DeviceVector,
        old: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let launch = Launch::difference(self.n, address(&new.0), address(&old.0));
        self.launcher.launch(&launch, self.elementwise)
    }

    /// `aᵀb`, summed in a fixed order (deterministic for a given launch configuration).
    pub fn dot(&mut self, a: &DeviceVector, b: &DeviceVector) -> Result<f64, BackendError> {
        let partials = address(&self.partials);
        let first = Launch::dot_partials(self.n, address(&a.0), address(&b.0), partials);
        self.launcher.launch(&first, self.reduction)?;
        let blocks = self.reduction.blocks as usize;
        let second = Launch::sum_partials(partials, blocks, address(&self.scalar));
        self.launcher.launch(&second, SINGLE_THREAD)?;
        self.read_scalar(DOT_PARTIALS)
    }

    /// `‖v‖∞`, NaN if any entry is NaN.
    pub fn max_abs(&mut self, v: &DeviceVector) -> Result<f64, BackendError> {
        let partials = address(&self.partials);
        let first = Launch::max_abs_partials(self.n, address(&v.0), partials);
        self.launcher.launch(&first, self.reduction)?;
        let blocks = self.reduction.blocks as usize;
        let second = Launch::max_abs_partials(blocks, partials, address(&self.scalar));
        self.launcher.launch(&second, self.finish)?;
        self.read_scalar(MAX_ABS_PARTIALS)
    }

    /// Brings the reduction's result back, waiting for the stream.
    fn read_scalar(&mut self, after: &str) -> Result<f64, BackendError> {
        let l = &self.launcher;
        // SAFETY: `scalar_host` is read only after the synchronize below.
        unsafe { self.scalar.async_copy_to(&mut self.scalar_host, &l.stream) }
            .map_err(driver("cuMemcpyDtoHAsync"))?;
        l.synchronize(after)?;
        Ok(self.scalar_host[0])
    }
}

impl Drop for DeviceVectors {
    fn drop(&mut self) {
        // As for `CudaEvaluator`: free the buffers in the launcher's context.
        let _ = self.launcher.make_current();
    }
}

// SAFETY: as for `CudaEvaluator`: the vectors own their buffers and make their context current
// before using them.
unsafe impl Send for DeviceVectors {}
