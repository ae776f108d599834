//! Where terms run: on all CPU cores ([`executor`](crate::executor)) or on an NVIDIA GPU
//! ([`launcher`](crate::launcher), feature `cuda`), and how `--backend auto` chooses.

use crate::executor::CpuEvaluator;
use crate::launcher::abi::{LaunchConfig, LaunchOverride};
use crate::objective::{FiniteDifference, TermProblem};
use gpu_kernels::Kernels;
use gpu_kernels::raw::{RawKernel, RawParam};

/// What the user asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// The GPU when the `cuda` feature is on, the PTX is embedded and a device answers; else
    /// the CPU.
    #[default]
    Auto,
    Cpu,
    Cuda,
}

/// Why a backend is unavailable or failed. Every message names the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error("the cuda backend is not compiled in: rebuild with `--features cuda`")]
    CudaNotCompiled,
    #[error("GPU kernels not built: {0}")]
    PtxMissing(String),
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    #[error("the CUDA driver rejected the embedded PTX: {0}")]
    PtxRejected(String),
    #[error("kernel `{0}` is not in the embedded PTX")]
    KernelMissing(String),
    #[error("out of device memory allocating {what} ({bytes} bytes)")]
    OutOfMemory { what: &'static str, bytes: usize },
    #[error("launch of `{kernel}` failed: {detail}")]
    Launch { kernel: String, detail: String },
    #[error("CUDA call `{call}` failed: {detail}")]
    Driver { call: &'static str, detail: String },
    #[error("kernel `{kernel}` {reason}")]
    Kernel { kernel: String, reason: String },
    #[error("invalid launch configuration: {0}")]
    InvalidLaunch(String),
}

/// The value and finite-difference gradient of one problem loaded on a backend. A backend's
/// implementation holds the problem's data (uploaded once, for the GPU).
pub trait Evaluator: Send {
    fn dim(&self) -> usize;
    fn value(&mut self, x: &[f64]) -> Result<f64, BackendError>;
    fn gradient(
        &mut self,
        x: &[f64],
        fd: FiniteDifference,
        g: &mut [f64],
    ) -> Result<(), BackendError>;
}

/// An argument of a raw kernel launch (see `gpu_kernels::raw`).
pub enum RawArg<'a> {
    /// An input slice (`In`).
    In(&'a [f64]),
    /// An output buffer (`Out`): its contents go to the kernel and come back.
    Out(&'a mut [f64]),
    F64(f64),
    U64(u64),
}

impl RawArg<'_> {
    fn fits(&self, param: RawParam) -> bool {
        matches!(
            (self, param),
            (RawArg::In(_), RawParam::In)
                | (RawArg::Out(_), RawParam::Out)
                | (RawArg::F64(_), RawParam::F64)
                | (RawArg::U64(_), RawParam::U64)
        )
    }
}

/// A backend ready to load problems.
pub enum Backend {
    Cpu,
    #[cfg(feature = "cuda")]
    Cuda(std::sync::Arc<crate::launcher::CudaLauncher>),
}

impl Backend {
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
        let launcher = crate::launcher::CudaLauncher::new(ptx, launch)?;
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

    /// `"cpu"` or `"cuda"`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            #[cfg(feature = "cuda")]
            Backend::Cuda(_) => "cuda",
        }
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
            || !args.iter().zip(kernel.params).all(|(a, &p)| a.fits(p))
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
        match self {
            Backend::Cpu => crate::executor::launch_raw(kernel, config, args),
            #[cfg(feature = "cuda")]
            Backend::Cuda(launcher) => launcher.launch_raw(kernel, config, args),
        }
    }

    /// Loads a problem: on the GPU its data is uploaded once, here.
    pub fn load<T: Kernels + 'static>(
        &self,
        problem: TermProblem<T>,
    ) -> Result<Box<dyn Evaluator>, BackendError> {
        match self {
            Backend::Cpu => Ok(Box::new(CpuEvaluator::new(problem))),
            #[cfg(feature = "cuda")]
            Backend::Cuda(launcher) => Ok(Box::new(crate::launcher::CudaEvaluator::new(
                launcher.clone(),
                problem,
            )?)),
        }
    }
}
