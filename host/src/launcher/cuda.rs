//! The cust launcher: one context, the module loaded from the embedded PTX, one stream, and
//! launch configurations from the device's properties. All `unsafe` of the host's GPU path is
//! in this file.

use super::abi::{KernelArg, Launch, LaunchConfig, LaunchOverride, SchemeKernels, TermBuffers};
use crate::backend::RawArg;
use crate::backend::{BackendError, Evaluator};
use crate::objective::{FiniteDifference, TermProblem};
use cust::CudaFlags;
use cust::context::{Context, CurrentContext};
use cust::device::{Device, DeviceAttribute};
use cust::error::CudaError;
use cust::function::{BlockSize, GridSize};
use cust::memory::{AsyncCopyDestination, CopyDestination, DeviceBuffer, LockedBuffer};
use cust::module::Module;
use cust::stream::{Stream, StreamFlags};
use gpu_kernels::kernel::SUM_PARTIALS;
use gpu_kernels::kernel::gradient_groups;
use gpu_kernels::raw::RawKernel;
use gpu_kernels::{Central, Forward, Kernels, Window};
use std::ffi::c_void;
use std::sync::Arc;

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
pub struct CudaLauncher {
    // Field order is drop order: module and stream go before the context that owns them.
    module: Module,
    stream: Stream,
    context: Context,
    multiprocessors: u32,
    launch: LaunchOverride,
    summary: String,
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
        let module =
            Module::from_ptx(ptx, &[]).map_err(|e| BackendError::PtxRejected(describe(e)))?;
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
        })
    }

    /// The device, e.g. "NVIDIA A100-SXM4-40GB (sm_80, 108 SMs, 39.4 GiB)".
    pub fn device_summary(&self) -> &str {
        &self.summary
    }

    /// Makes this launcher's context current on the calling thread (contexts are per thread).
    fn make_current(&self) -> Result<(), BackendError> {
        CurrentContext::set_current(&self.context).map_err(driver("cuCtxSetCurrent"))
    }

    /// A configuration for `kernel` over `work` items: the occupancy API's block size for the
    /// kernel's register use (whole warps, as the block reductions need), and no more blocks
    /// than are resident at once (the kernels loop grid-stride) nor than the work needs; or
    /// what the user's [`LaunchOverride`] says.
    pub fn config(&self, kernel: &str, work: usize) -> Result<LaunchConfig, BackendError> {
        let function = self
            .module
            .get_function(kernel)
            .map_err(|_| BackendError::KernelMissing(kernel.to_owned()))?;
        let (resident_blocks, threads) = function
            .suggested_launch_configuration(0, BlockSize::x(1024))
            .map_err(driver("cuOccupancyMaxPotentialBlockSize"))?;
        let threads = (threads / 32 * 32).max(32);
        let needed = work.div_ceil(threads as usize).max(1);
        let resident = (resident_blocks.max(self.multiprocessors)) as usize;
        Ok(LaunchConfig {
            blocks: self.launch.blocks.unwrap_or(needed.min(resident) as u32),
            threads: self.launch.threads.unwrap_or(threads),
        })
    }

    /// Enqueues one launch on the stream.
    fn launch(&self, launch: &Launch, config: LaunchConfig) -> Result<(), BackendError> {
        let function = self
            .module
            .get_function(launch.kernel)
            .map_err(|_| BackendError::KernelMissing(launch.kernel.to_owned()))?;
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

    fn alloc(&self, what: &'static str, len: usize) -> Result<DeviceBuffer<f64>, BackendError> {
        DeviceBuffer::zeroed(len).map_err(allocating(what, len, "cuMemAlloc"))
    }

    /// Runs a raw kernel: uploads its slices, launches it, waits, and copies its outputs back.
    /// Arguments were checked against the kernel's parameters by the caller.
    pub fn launch_raw(
        &self,
        kernel: &RawKernel,
        config: LaunchConfig,
        args: &mut [RawArg<'_>],
    ) -> Result<(), BackendError> {
        self.make_current()?;
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
        self.launch(&launch, config)?;
        self.synchronize(kernel.name)?;
        for (arg, buffer) in args.iter_mut().zip(&buffers) {
            if let (RawArg::Out(values), Some(buffer)) = (arg, buffer) {
                buffer
                    .copy_to(&mut **values)
                    .map_err(driver("cuMemcpyDtoH"))?;
            }
        }
        Ok(())
    }

    fn upload(
        &self,
        what: &'static str,
        values: &[f64],
    ) -> Result<DeviceBuffer<f64>, BackendError> {
        DeviceBuffer::from_slice(values).map_err(allocating(what, values.len(), "cuMemcpyHtoD"))
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
}

impl GradientTargets {
    fn plan<T: Kernels, S: SchemeKernels>(
        &self,
        launcher: &CudaLauncher,
        config: LaunchConfig,
    ) -> Result<GradientPlan, BackendError> {
        let b = self.buffers;
        Ok(match self.partials {
            None => GradientPlan {
                kernel: Launch::gradient::<T, S>(b, self.g),
                config,
                finish: None,
            },
            Some(partials) => {
                let finish =
                    Launch::dense_finish::<S>(b.x, b.n, partials, config.blocks as usize, self.g);
                let finish_config = launcher.config(S::DENSE_FINISH, b.n)?;
                GradientPlan {
                    kernel: Launch::gradient::<T, S>(b, partials),
                    config,
                    finish: Some((finish, finish_config)),
                }
            }
        })
    }
}

/// The launches of one gradient scheme, built once per problem.
struct GradientPlan {
    kernel: Launch,
    config: LaunchConfig,
    /// The dense second stage; banded gradients need none.
    finish: Option<(Launch, LaunchConfig)>,
}

/// A term problem on the GPU. Its data lives on the device from [`new`](CudaEvaluator::new)
/// on; an evaluation sends `x` down and brings `f` or `∇f` back, through page-locked buffers.
pub struct CudaEvaluator {
    launcher: Arc<CudaLauncher>,
    n: usize,
    value: (Launch, LaunchConfig),
    sum: (Launch, LaunchConfig),
    forward: GradientPlan,
    central: GradientPlan,
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
        // One block sums the partials; its size comes from the occupancy query like the rest.
        let sum_config = LaunchConfig {
            blocks: 1,
            ..l.config(SUM_PARTIALS, 1)?
        };
        let sum = (
            Launch::sum_partials(
                address(&value_partials),
                value_config.blocks as usize,
                address(&f),
            ),
            sum_config,
        );

        // Dense gradients need `n` partials per block; size them for the larger of the two plans.
        let dense = T::WINDOW == Window::Dense;
        let work = if dense {
            terms
        } else {
            gradient_groups::<T>(n)
        };
        let forward_config = l.config(T::GRADIENT_FORWARD, work)?;
        let central_config = l.config(T::GRADIENT_CENTRAL, work)?;
        let partial_blocks = forward_config.blocks.max(central_config.blocks) as usize;
        let gradient_partials = l.alloc(
            "gradient partial sums",
            if dense { partial_blocks * n } else { 0 },
        )?;
        let targets = GradientTargets {
            buffers,
            g: address(&g),
            partials: dense.then(|| address(&gradient_partials)),
        };
        let forward = targets.plan::<T, Forward>(l, forward_config)?;
        let central = targets.plan::<T, Central>(l, central_config)?;

        Ok(Self {
            n,
            value,
            sum,
            forward,
            central,
            x_host: locked(n)?,
            g_host: locked(n)?,
            f_host: locked(1)?,
            x,
            g,
            f,
            _data: data_buffer,
            _value_partials: value_partials,
            _gradient_partials: gradient_partials,
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

// SAFETY: cust leaves `DeviceBuffer` !Send because it holds a raw device address. The
// evaluator owns its buffers, uses them only through `&mut self` and makes its context current
// on the calling thread first, so moving it to another thread is sound.
unsafe impl Send for CudaEvaluator {}

impl Evaluator for CudaEvaluator {
    fn dim(&self) -> usize {
        self.n
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, BackendError> {
        self.send_x(x)?;
        let l = &self.launcher;
        l.launch(&self.value.0, self.value.1)?;
        l.launch(&self.sum.0, self.sum.1)?;
        // SAFETY: `f_host` is read only after the synchronize below.
        unsafe { self.f.async_copy_to(&mut self.f_host, &l.stream) }
            .map_err(driver("cuMemcpyDtoHAsync"))?;
        l.synchronize(self.value.0.kernel)?;
        Ok(self.f_host[0])
    }

    fn gradient(
        &mut self,
        x: &[f64],
        fd: FiniteDifference,
        g: &mut [f64],
    ) -> Result<(), BackendError> {
        self.send_x(x)?;
        let plan = match fd {
            FiniteDifference::Forward => &self.forward,
            FiniteDifference::Central => &self.central,
        };
        let l = &self.launcher;
        l.launch(&plan.kernel, plan.config)?;
        if let Some((finish, config)) = &plan.finish {
            l.launch(finish, *config)?;
        }
        // SAFETY: `g_host` is read only after the synchronize below.
        unsafe { self.g.async_copy_to(&mut self.g_host, &l.stream) }
            .map_err(driver("cuMemcpyDtoHAsync"))?;
        l.synchronize(plan.kernel.kernel)?;
        g.copy_from_slice(&self.g_host);
        Ok(())
    }
}
