//! The errors every layer answers with: [`BackendError`], why a backend is unavailable or
//! failed, and [`EvalError`], why an objective or a vector space could not do what a solver
//! asked. They sit on the ground floor, beside the vector spaces that answer them too.

/// Why a backend is unavailable or failed. Every message names the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The cuda backend was asked for in a build without the `cuda` feature.
    #[error("the cuda backend is not compiled in: rebuild with `--features cuda`")]
    CudaNotCompiled,
    /// The cuda backend was asked for, but the build embedded no PTX; with the build's reason.
    #[error("GPU kernels not built: {0}")]
    PtxMissing(String),
    /// The driver found no usable device (or no driver); with its reason.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// Loading the PTX module failed; with the driver's error and its JIT log.
    #[error("the CUDA driver rejected the embedded PTX: {0}")]
    PtxRejected(String),
    /// A kernel the launcher needs, named here, is not in the loaded module.
    #[error("kernel `{0}` is not in the embedded PTX")]
    KernelMissing(String),
    /// A device allocation failed for lack of memory.
    #[error("out of device memory allocating {what} ({bytes} bytes)")]
    OutOfMemory {
        /// The buffer being allocated.
        what: &'static str,
        /// Its size in bytes.
        bytes: usize,
    },
    /// A kernel launch failed, or a kernel faulted (reported at the next synchronization).
    #[error("launch of `{kernel}` failed: {detail}")]
    Launch {
        /// The kernel launched, or the work after which the stream was synchronized (e.g.
        /// "the gradient kernels").
        kernel: String,
        /// The driver's error.
        detail: String,
    },
    /// Any other driver call failed.
    #[error("CUDA call `{call}` failed: {detail}")]
    Driver {
        /// The driver API call, e.g. `cuStreamCreate`.
        call: &'static str,
        /// The driver's error.
        detail: String,
    },
    /// Memory another library allocated was refused as an array on the device: not device
    /// memory of this backend's device, too short, or misaligned; with the reason.
    #[error("a device array was refused: {0}")]
    Foreign(String),
    /// A kernel was refused before launch: raw-kernel arguments or sizes that do not fit it, a
    /// block kernel on the CPU, a device vector of the wrong length.
    #[error("kernel `{kernel}` {reason}")]
    Kernel {
        /// The kernel, or the operation that was refused.
        kernel: String,
        /// Why, as a predicate completing "kernel `…`".
        reason: String,
    },
    /// A term's own code panicked during a CPU pass (a bug in its source, say an index past an
    /// array of its own; on the GPU the same bug is a kernel fault, a [`Launch`](Self::Launch)
    /// error); with the panic's message.
    #[error("a term panicked: {0}")]
    TermPanicked(String),
    /// A [`LaunchOverride`](crate::backend::LaunchOverride) no kernel, or not this kernel, can launch with.
    #[error("invalid launch configuration: {0}")]
    InvalidLaunch(String),
    /// An exact gradient was asked of a term whose window the exact kernels do not take; the
    /// reason names the way out. [`checked_against`](crate::backend::checked_against) then checks against another
    /// finite-difference scheme.
    #[error("{0}")]
    ExactUnsupported(&'static str),
    /// A pass this evaluator cannot make, with the reason: term-range shares off the CPU, or
    /// the normal equations of an objective that is not a sum of squares.
    #[error("{0}")]
    Unsupported(&'static str),
    /// A finite-difference box ([`StepBounds`](crate::backend::StepBounds)) whose length is not the problem's.
    #[error("a box of {got} bounds for {n} variables")]
    BoxLength {
        /// The box's length.
        got: usize,
        /// The number of variables.
        n: usize,
    },
    /// Another process of a sharded evaluation failed: its rank and its error. Every rank
    /// returns the same error, so that all of them stop together.
    #[error("rank {rank}: {message}")]
    Rank {
        /// The rank that failed first (the lowest, when several did).
        rank: usize,
        /// Its error, as it would have printed it.
        message: String,
    },
}

impl BackendError {
    /// Whether this is a pass declined before anything ran (one the evaluator does not make,
    /// by design or for its sizes), which a caller may do without, not a failure.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::Kernel { .. }
                | Self::InvalidLaunch(_)
                | Self::ExactUnsupported(_)
                | Self::Unsupported(_)
        )
    }
}

/// Why an objective could not be evaluated. A non-finite value is not an error: the solver
/// handles it (it shrinks the step, or stops with status 3).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A vector (`x`, `g`, or the `v` of an operator's `H·v`) does not have the number of
    /// variables.
    #[error("a vector of {got} entries where there are {expected} variables")]
    WrongLength {
        /// The number of variables.
        expected: usize,
        /// The length given.
        got: usize,
    },
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A host allocation the solve needed could not be made.
    #[error("out of memory: {what} ({bytes} bytes) could not be allocated")]
    OutOfMemory {
        /// The buffer being allocated.
        what: &'static str,
        /// Its size in bytes.
        bytes: usize,
    },
    /// For user objectives.
    #[error("{0}")]
    Failed(String),
}
