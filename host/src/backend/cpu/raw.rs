//! Grid kernels on the CPU: the executor supplies each thread's index.

use crate::backend::launch::{LaunchConfig, RawArg};
use crate::error::BackendError;
use gpu_kernels::raw::{CpuArg, Out, RawKernel, Thread};
use rayon::prelude::*;

/// Simulated threads per rayon task: enough to amortize scheduling.
const THREADS_PER_TASK: usize = 1024;

/// Runs `kernel` over `config.blocks · config.threads` threads, in parallel. Block kernels
/// (shared memory, barriers) cannot run here. Arguments were checked by the caller.
pub fn launch_raw(
    kernel: &RawKernel,
    config: LaunchConfig,
    args: &mut [RawArg<'_>],
) -> Result<(), BackendError> {
    let Some(thread_body) = kernel.cpu else {
        return Err(BackendError::Kernel {
            kernel: kernel.name.to_owned(),
            reason:
                "uses shared memory or block synchronization, so it runs only on the cuda backend"
                    .to_owned(),
        });
    };
    let views: Vec<CpuArg<'_>> = args
        .iter_mut()
        .map(|arg| match arg {
            RawArg::In(values) => CpuArg::In(values),
            RawArg::Out(values) => CpuArg::Out(Out::new(values)),
            RawArg::F64(v) => CpuArg::F64(*v),
            RawArg::U64(v) => CpuArg::U64(*v),
        })
        .collect();
    let threads = config.blocks as usize * config.threads as usize;
    (0..threads)
        .into_par_iter()
        .with_min_len(THREADS_PER_TASK)
        .for_each(|index| thread_body(Thread::new(index, threads), &views));
    Ok(())
}
