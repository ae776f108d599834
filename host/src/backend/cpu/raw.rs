//! Grid kernels on the CPU: the executor supplies each thread's index.

use crate::backend::launch::{BatchColumns, LaunchConfig, RawArg};
use crate::error::BackendError;
use gpu_kernels::lm::batch::BATCH_TABLE;
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

/// Makes the tables of `columns` in host memory by the tables' kernel, then runs `kernel`, a
/// batch kernel, on them: its table and offsets, then `args`.
pub fn launch_batch(
    kernel: &RawKernel,
    config: LaunchConfig,
    columns: BatchColumns<'_>,
    args: &mut [RawArg<'_>],
) -> Result<(), BackendError> {
    let mut table = crate::backend::host_zeros("a batch's tables", columns.table_len())?;
    let inputs = columns.table_inputs().map(|(_, values)| RawArg::In(values));
    let mut pack: Vec<RawArg<'_>> = (inputs.into_iter())
        .chain([
            RawArg::Out(&mut table),
            RawArg::U64(columns.predictors as u64),
        ])
        .collect();
    launch_raw(&BATCH_TABLE, columns.table_config(), &mut pack)?;
    drop(pack);
    let leading = [RawArg::In(&table), RawArg::In(columns.offsets)];
    let mut all: Vec<RawArg<'_>> = leading
        .into_iter()
        .chain(args.iter_mut().map(reborrow))
        .collect();
    launch_raw(kernel, config, &mut all)
}

/// `arg` for another launch, its output borrowed again.
fn reborrow<'a>(arg: &'a mut RawArg<'_>) -> RawArg<'a> {
    match arg {
        RawArg::In(values) => RawArg::In(values),
        RawArg::Out(values) => RawArg::Out(values),
        RawArg::F64(v) => RawArg::F64(*v),
        RawArg::U64(v) => RawArg::U64(*v),
    }
}
