//! Where terms run: on all CPU cores ([`cpu`], rayon) or on an NVIDIA GPU ([`gpu`], through a
//! driver: cust, feature `cuda`; or the PTX simulator, which runs the same PTX on the CPU), and
//! how `--backend auto` chooses. Both backends implement the contract of
//! [`Evaluator`] for a [`TermProblem`]; this module only picks one and hands problems to it.
//! With feature `mpi`, `mpi` makes any backend's evaluator of one shard collective across the
//! processes of an MPI job.

pub mod cpu;
mod evaluator;
pub mod gpu;
mod launch;
mod load;
pub mod mpi;
mod pass;
pub mod problem;
mod step_bounds;
pub mod sum;
mod with_residuals;

pub use crate::error::BackendError;
pub use evaluator::{Evaluator, LeastSquaresEvaluator, PieceEvaluator, checked_against};
pub use gpu::{DeviceArray, KernelCounts, SECTOR_BYTES, Traffic};
pub use gpu_kernels::Gradient;
pub use gpu_kernels::kernel::loss::{Loss, RobustLoss};
pub use launch::{BatchColumns, LaunchConfig, LaunchOverride, RawArg};
pub use mpi::{Factor, Layout, Partials, Share};
pub use pass::{Evaluation, Pass};
pub use problem::{Columns, ProblemError, TermProblem};
pub use step_bounds::StepBounds;
pub use sum::{ResidualSum, SumEvaluator, TermSum};
pub use with_residuals::{NormalPass, WithResiduals};

use gpu_kernels::raw::{Arg, RawKernel};
use gpu_kernels::{Kernels, ResidualKernels, SumOfSquares};
use std::collections::BTreeMap;

/// `len` zeros in host memory, `what` naming them where memory runs out: an error, not the
/// abort of `vec!`.
pub(crate) fn host_zeros(what: &'static str, len: usize) -> Result<Vec<f64>, BackendError> {
    crate::linalg::try_zeros(len).ok_or(BackendError::OutOfMemory {
        what,
        bytes: len.saturating_mul(size_of::<f64>()),
    })
}

/// What the user asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// The GPU when the `cuda` feature is on, the PTX is embedded and a device answers; else
    /// the CPU.
    #[default]
    Auto,
    /// The CPU executor, always.
    Cpu,
    /// The GPU, or an error saying why it cannot be had.
    Cuda,
    /// The PTX simulator: the embedded PTX run on the CPU with a GPU's semantics and
    /// compute-sanitizer's checks. Slow and exact, for tests and debugging; `Auto` never picks
    /// it.
    Simulated,
}

/// A backend ready to load problems. A clone shares the GPU's context and loaded modules.
#[derive(Clone)]
pub enum Backend {
    /// The CPU executor: terms run over rayon on all cores.
    Cpu,
    /// The GPU launcher: a device with the embedded PTX loaded, shared by the evaluators it
    /// loads.
    #[cfg(feature = "cuda")]
    Cuda(std::sync::Arc<gpu::Launcher>),
    /// The GPU launcher on the PTX simulator: the same launches as on a device, interpreted.
    Simulated(std::sync::Arc<gpu::Launcher>),
}

impl Backend {
    /// The GPU when `ptx` was built and a device answers, else the CPU: [`BackendChoice::Auto`]
    /// with the occupancy API's launch sizes. Returns the backend and a sentence saying why it
    /// was chosen. `ptx` is what [`include_ptx!`](crate::include_ptx) defines.
    pub fn auto(
        ptx: Result<&'static str, &'static str>,
    ) -> Result<(Backend, String), BackendError> {
        Self::select(BackendChoice::Auto, ptx, LaunchOverride::default())
    }

    /// Picks a backend. `ptx` is the embedded PTX, or why it was not built; `launch` overrides
    /// the GPU's launch configurations (the CPU ignores it). Returns the backend and a sentence
    /// saying why it was chosen.
    pub fn select(
        choice: BackendChoice,
        ptx: Result<&'static str, &'static str>,
        launch: LaunchOverride,
    ) -> Result<(Backend, String), BackendError> {
        launch.check()?;
        match choice {
            BackendChoice::Cpu => Ok((Backend::Cpu, "requested".to_owned())),
            BackendChoice::Cuda => {
                Self::cuda(ptx, launch).map(|(b, why)| (b, format!("requested; {why}")))
            }
            BackendChoice::Simulated => {
                let ptx = ptx.map_err(|why| BackendError::PtxMissing(why.to_owned()))?;
                let launcher = gpu::open_simulator(ptx, launch)?;
                let why = format!("requested; {}", launcher.device_summary());
                Ok((Backend::Simulated(std::sync::Arc::new(launcher)), why))
            }
            BackendChoice::Auto => match Self::cuda(ptx, launch) {
                Ok(found) => Ok(found),
                Err(why) => Ok((Backend::Cpu, format!("CPU fallback: {why}"))),
            },
        }
    }

    #[cfg(feature = "cuda")]
    fn cuda(
        ptx: Result<&'static str, &'static str>,
        launch: LaunchOverride,
    ) -> Result<(Backend, String), BackendError> {
        let ptx = ptx.map_err(|why| BackendError::PtxMissing(why.to_owned()))?;
        let launcher = gpu::open_cuda(ptx, launch)?;
        let why = format!("CUDA device: {}", launcher.device_summary());
        Ok((Backend::Cuda(std::sync::Arc::new(launcher)), why))
    }

    #[cfg(not(feature = "cuda"))]
    fn cuda(
        _ptx: Result<&'static str, &'static str>,
        _launch: LaunchOverride,
    ) -> Result<(Backend, String), BackendError> {
        Err(BackendError::CudaNotCompiled)
    }

    /// `"cpu"`, `"cuda"` or `"sim"`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => "cuda",
            Backend::Simulated(_) => "sim",
        }
    }

    /// The GPU launcher, on a device or on the simulator; `None` on the CPU.
    fn launcher(&self) -> Option<&std::sync::Arc<gpu::Launcher>> {
        match self {
            Backend::Cpu => None,
            #[cfg(feature = "cuda")]
            Backend::Cuda(launcher) => Some(launcher),
            Backend::Simulated(launcher) => Some(launcher),
        }
    }

    /// The GPU backend's device in words (the simulator says what it is); `None` on the CPU.
    pub fn device_summary(&self) -> Option<&str> {
        self.launcher().map(|launcher| launcher.device_summary())
    }

    /// What the GPU backend's device has been asked to do so far, by every problem loaded on
    /// it and every solve's vectors there: launches, waits, copies and allocations. Read it
    /// before and after a solve to see the round trips a GPU solve pays whatever its size;
    /// `None` on the CPU.
    pub fn traffic(&self) -> Option<Traffic> {
        self.launcher().map(|launcher| launcher.traffic())
    }

    /// A copy of `values` kept on the GPU backend's device, for solves to start from
    /// ([`minimize_from_device`](crate::solver::minimize_from_device)) without a copy each
    /// time. The CPU has no device: an error says so.
    pub fn to_device(&self, values: &[f64]) -> Result<DeviceArray, BackendError> {
        match self.launcher() {
            Some(launcher) => DeviceArray::upload(launcher, values),
            None => Err(no_device()),
        }
    }

    /// `len` f64 from device address `address`, memory another library (torch, CuPy, JAX)
    /// allocated on this backend's device, as a [`DeviceArray`] that solves read where it
    /// lies: nothing is copied. The memory is checked to lie in one allocation on this device;
    /// the caller keeps it alive and unchanged while the array lives. `synchronize` first waits
    /// for all work on the device, as `__cuda_array_interface__` asks when its producer names
    /// a stream. On the simulator, `address` is one of its own arrays'
    /// ([`DeviceArray::device_address`]). The CPU has no device: an error says so.
    pub fn device_array_at(
        &self,
        address: u64,
        len: usize,
        synchronize: bool,
    ) -> Result<DeviceArray, BackendError> {
        match self.launcher() {
            Some(launcher) => DeviceArray::foreign(launcher, address, len, synchronize),
            None => Err(BackendError::NoDevice(
                "the CPU backend cannot read device memory: open a cuda session".to_owned(),
            )),
        }
    }

    /// Whether `array` lies on this backend's device, where its kernels read it; an array of
    /// another session's device is read through the host.
    pub fn holds(&self, array: &DeviceArray) -> bool {
        self.launcher()
            .is_some_and(|launcher| array.is_on(launcher))
    }

    /// A fit's weights on this backend's device: `1/σᵢ` of `sigma` there, NaN where `σᵢ` is
    /// not positive and finite (which loading the data then refuses), or `rows` ones; formed
    /// there, nothing crossing to the host. The CPU has no device: an error says so.
    pub fn device_weights(
        &self,
        sigma: Option<&DeviceArray>,
        rows: usize,
    ) -> Result<DeviceArray, BackendError> {
        match self.launcher() {
            Some(launcher) => gpu::weights(launcher, sigma, rows),
            None => Err(no_device()),
        }
    }

    /// `len` values of `array`, on this backend's device, a `stride` apart from its value
    /// `start`, in a new array there: column `start` of a row-major table of `stride` columns,
    /// copied on the device. The CPU has no device: an error says so.
    pub fn device_strided(
        &self,
        array: &DeviceArray,
        (start, stride): (usize, usize),
        len: usize,
    ) -> Result<DeviceArray, BackendError> {
        match self.launcher() {
            Some(launcher) => gpu::strided(launcher, array, (start, stride), len),
            None => Err(no_device()),
        }
    }

    /// `columns`, each on this backend's device and of one length, laid end to end in a new
    /// array there by copies on the device: a term problem's data where they lie
    /// ([`Columns::Device`]). The CPU has no device: an error says so.
    pub fn device_columns(&self, columns: &[&DeviceArray]) -> Result<DeviceArray, BackendError> {
        match self.launcher() {
            Some(launcher) => gpu::concatenated(launcher, columns),
            None => Err(no_device()),
        }
    }

    /// Starts counting what each kernel's launches cost, from zero (`true`), or stops
    /// (`false`). Only the simulator counts: it returns whether counting is on.
    pub fn count_kernels(&self, on: bool) -> bool {
        self.launcher()
            .is_some_and(|launcher| launcher.count_kernels(on))
    }

    /// What each kernel's launches cost since [`count_kernels`](Self::count_kernels) started:
    /// instructions, f64 operations, bytes per memory space, barriers. `None` unless the
    /// simulator counts.
    pub fn kernel_counts(&self) -> Option<BTreeMap<String, KernelCounts>> {
        self.launcher()?.kernel_counts()
    }

    /// Seconds the GPU backend's driver has spent loading kernels so far: a device compiles
    /// each kernel on its first launch (unless its compute cache holds it); `None` on the CPU.
    pub fn module_load_seconds(&self) -> Option<f64> {
        self.launcher()
            .map(|launcher| launcher.module_load_seconds())
    }

    /// Launches a raw kernel, Numba's `kernel[blocks, threads](args)`: on the GPU, or on the
    /// CPU for grid kernels (block kernels need the GPU and are refused here with an error).
    pub fn launch_raw(
        &self,
        kernel: &RawKernel,
        config: LaunchConfig,
        args: &mut [RawArg<'_>],
    ) -> Result<(), BackendError> {
        let refuse = |reason: String| BackendError::Kernel {
            kernel: kernel.name.to_owned(),
            reason,
        };
        if args.len() != kernel.params.len()
            || !args.iter().zip(kernel.params).all(|(a, &p)| a.kind() == p)
        {
            return Err(refuse(format!(
                "takes parameters {:?}; the arguments do not match",
                kernel.params
            )));
        }
        if config.blocks == 0 || !(1..=1024).contains(&config.threads) {
            return Err(refuse(format!(
                "cannot launch with {} blocks of {} threads (need >= 1 block of 1..=1024 threads)",
                config.blocks, config.threads
            )));
        }
        match self.launcher() {
            None => cpu::launch_raw(kernel, config, args),
            Some(launcher) => launcher.launch_raw(kernel, config, args),
        }
    }

    /// Launches `kernel`, a batch kernel (`gpu_kernels::batch_kernel!`), on the fits of
    /// `columns`: each fit's table is made where the kernel runs, so a GPU receives the columns
    /// alone; `args` are the kernel's after its table and offsets. Its outputs are not sent: a
    /// GPU's start at zeros, and the kernel writes them whole; they come back whole.
    pub fn launch_batch(
        &self,
        kernel: &RawKernel,
        config: LaunchConfig,
        columns: BatchColumns<'_>,
        args: &mut [RawArg<'_>],
    ) -> Result<(), BackendError> {
        let leading = [Arg::In(()), Arg::In(())];
        let kinds = leading.into_iter().chain(args.iter().map(RawArg::kind));
        if args.len() + 2 != kernel.params.len() || !kinds.eq(kernel.params.iter().copied()) {
            return Err(BackendError::Kernel {
                kernel: kernel.name.to_owned(),
                reason: format!(
                    "takes parameters {:?}; the arguments do not match",
                    kernel.params
                ),
            });
        }
        match self.launcher() {
            None => cpu::launch_batch(kernel, config, columns, args),
            Some(launcher) => launcher.launch_batch(kernel, config, columns, args),
        }
    }

    /// Loads a problem: on the GPU its data is uploaded once, here.
    pub fn load<T: Kernels + 'static>(
        &self,
        problem: TermProblem<T>,
    ) -> Result<Box<dyn Evaluator>, BackendError> {
        load::terms(problem, self.launcher())
    }

    /// Loads a sum of squares of residual term `T` with its residuals: an evaluator that also
    /// makes the normal-equations pass Levenberg–Marquardt needs.
    pub fn load_least_squares<T: ResidualKernels + 'static>(
        &self,
        problem: TermProblem<SumOfSquares<T>>,
    ) -> Result<Box<dyn LeastSquaresEvaluator>, BackendError> {
        load::residuals(problem, self.launcher())
    }

    /// Loads a sum of term problems (a data term and a penalty, say) as one objective: every
    /// part on this backend, each pass each part's in the sum's order (see [`TermSum`]). A sum
    /// of one part is that part's evaluator.
    pub fn load_sum(&self, sum: TermSum) -> Result<Box<dyn Evaluator>, BackendError> {
        let mut parts = (sum.into_parts().into_iter())
            .map(|part| part.load(self.launcher()))
            .collect::<Result<Vec<_>, _>>()?;
        match parts.len() {
            1 => Ok(parts.remove(0)),
            _ => Ok(Box::new(SumEvaluator::new(parts))),
        }
    }

    /// Loads a sum of residual terms' sums of squares with all their residuals, which
    /// Levenberg–Marquardt takes (see [`ResidualSum`]).
    pub fn load_least_squares_sum(
        &self,
        sum: ResidualSum,
    ) -> Result<Box<dyn LeastSquaresEvaluator>, BackendError> {
        let mut parts = (sum.into_parts().into_iter())
            .map(|part| part.load_residuals(self.launcher()))
            .collect::<Result<Vec<_>, _>>()?;
        match parts.len() {
            1 => Ok(parts.remove(0)),
            _ => Ok(Box::new(SumEvaluator::new(parts))),
        }
    }
}

/// The error of a device array asked of the CPU backend.
fn no_device() -> BackendError {
    BackendError::NoDevice("the CPU backend keeps arrays in host memory".to_owned())
}
