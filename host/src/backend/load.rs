//! Loading one term problem on the backend that a [`Backend`](super::Backend) holds: the CPU
//! executor, or a GPU launcher (a device or the simulator). [`Backend::load`] and the parts of
//! a sum ([`super::sum`]) load through these two functions.
//!
//! [`Backend::load`]: super::Backend::load

use super::cpu::{CpuEvaluator, CpuLeastSquares};
use super::gpu::{self, Launcher};
use super::problem::TermProblem;
use crate::backend::evaluator::{Evaluator, LeastSquaresEvaluator};
use crate::error::BackendError;
use gpu_kernels::{Kernels, ResidualKernels, SumOfSquares};
use std::sync::Arc;

/// `problem` on the GPU of `launcher` (its data uploaded once, here), or on the CPU for
/// `None`.
pub(crate) fn terms<T: Kernels + 'static>(
    problem: TermProblem<T>,
    launcher: Option<&Arc<Launcher>>,
) -> Result<Box<dyn Evaluator>, BackendError> {
    match launcher {
        None => Ok(Box::new(CpuEvaluator::new(on_host(problem)?))),
        Some(launcher) => Ok(Box::new(gpu::GpuEvaluator::new(launcher.clone(), problem)?)),
    }
}

/// A sum of squares of residual term `T` with its normal-equations pass, on the GPU of
/// `launcher` or on the CPU for `None`.
pub(crate) fn residuals<T: ResidualKernels + 'static>(
    problem: TermProblem<SumOfSquares<T>>,
    launcher: Option<&Arc<Launcher>>,
) -> Result<Box<dyn LeastSquaresEvaluator>, BackendError> {
    match launcher {
        None => Ok(Box::new(CpuLeastSquares::new(on_host(problem)?))),
        Some(launcher) => Ok(Box::new(gpu::load_least_squares(
            launcher.clone(),
            problem,
        )?)),
    }
}

/// `problem`, whose data the CPU must read on the host: data on a device are refused.
fn on_host<T: Kernels>(problem: TermProblem<T>) -> Result<TermProblem<T>, BackendError> {
    match problem.device_data() {
        None => Ok(problem),
        Some(_) => Err(BackendError::NoDevice(
            "the data lie on a device; the CPU backend reads them from host memory".to_owned(),
        )),
    }
}
