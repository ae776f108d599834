//! The GPU's normal-equations pass over a residual term's sum of squares: one `_normal_`
//! kernel (per-block partials of `JᵀJ`, `Jᵀr` and `Σ r²`), then block-ordered sums.

use super::abi::Launch;
use super::driver::Buffer;
use super::evaluator::GpuEvaluator;
use super::launcher::{Launcher, SINGLE_THREAD};
use crate::backend::evaluator::{BackendError, Gradient, LaunchConfig, NormalPass, WithResiduals};
use crate::backend::problem::TermProblem;
use gpu_kernels::kernel::normal::{mirror_upper, normal_supported};
use gpu_kernels::{ResidualKernels, SumOfSquares};
use std::sync::Arc;

/// The normal-equations pass of a sum of squares loaded in a [`GpuEvaluator`].
pub struct GpuResiduals {
    residuals: usize,
    /// Per scheme, in the table's order, its plan or why its kernel refuses the launch size;
    /// or why the pass does not take this problem at all.
    normal: Result<Vec<Result<NormalPlan, BackendError>>, &'static str>,
    normal_out: Buffer,
    _partials: Buffer,
    _value_partials: Buffer,
}

/// A sum of squares of a residual term on the GPU.
pub type GpuLeastSquares = WithResiduals<GpuEvaluator, GpuResiduals>;

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
    launcher: Arc<Launcher>,
    problem: TermProblem<SumOfSquares<T>>,
) -> Result<GpuLeastSquares, BackendError> {
    let n = problem.n();
    let residuals = problem.terms();
    let supported = normal_supported::<T>(n, true);
    let sum = GpuEvaluator::new(launcher.clone(), problem)?;
    let l = &*launcher;
    let len = n * n + n;
    // As for the gradients: a scheme whose kernel refuses the launch size is refused when it
    // is asked for.
    let configs: Vec<Result<LaunchConfig, BackendError>> = (T::NORMALS.iter())
        .map(|kernel| l.config(kernel, residuals))
        .collect();
    let blocks = configs
        .iter()
        .flatten()
        .map(|c| c.blocks)
        .max()
        .unwrap_or(1) as usize;
    let partials = l.alloc(
        "normal-equations partial sums",
        if supported.is_ok() { blocks * len } else { 0 },
    )?;
    let value_partials = l.alloc("value partial sums", blocks)?;
    let normal_out = l.alloc("the normal equations", len)?;
    let finish_config = l.config(gpu_kernels::kernel::SUM_BLOCKS, len)?;
    let (out, values, f) = (
        partials.address(),
        value_partials.address(),
        sum.f.address(),
    );
    let plan = |first: Launch, config: LaunchConfig| {
        let blocks = config.blocks as usize;
        NormalPlan {
            first: (first, config),
            finish: (
                Launch::sum_blocks(out, len, blocks, normal_out.address()),
                finish_config,
            ),
            value_sum: Launch::sum_partials(values, blocks, f),
        }
    };
    let b = sum.buffers;
    let normal = supported.map(|()| {
        (Gradient::ALL.iter().zip(configs))
            .map(|(&kind, config)| {
                config.map(|config| plan(Launch::normal::<T>(kind, b, out, values), config))
            })
            .collect()
    });
    let pass = GpuResiduals {
        residuals,
        normal,
        normal_out,
        _partials: partials,
        _value_partials: value_partials,
    };
    Ok(WithResiduals { pass, sum })
}

impl NormalPass<GpuEvaluator> for GpuResiduals {
    fn residuals(&self, _sum: &GpuEvaluator) -> usize {
        self.residuals
    }

    fn normal_equations(
        &mut self,
        sum: &mut GpuEvaluator,
        x: &[f64],
        jacobian: Gradient,
        jtj: &mut [f64],
        jtr: &mut [f64],
    ) -> Result<f64, BackendError> {
        let plans = self.normal.as_ref().map_err(|why| BackendError::Kernel {
            kernel: "normal equations".to_owned(),
            reason: (*why).to_owned(),
        })?;
        let plan = plans[jacobian as usize].as_ref().map_err(Clone::clone)?;
        let n = x.len();
        sum.send_x(x)?;
        let l = &sum.launcher;
        l.launch(&plan.first.0, plan.first.1)?;
        l.launch(&plan.finish.0, plan.finish.1)?;
        l.launch(&plan.value_sum, SINGLE_THREAD)?;
        let mut sum_of_squares = [0.0];
        let mut normal = vec![0.0; n * n + n];
        l.read(
            &mut [
                (&sum.f, &mut sum_of_squares),
                (&self.normal_out, &mut normal),
            ],
            &plan.first.0.kernel,
        )?;
        let (upper, products) = normal.split_at(n * n);
        jtj.copy_from_slice(upper);
        mirror_upper(jtj, n);
        jtr.copy_from_slice(products);
        Ok(sum_of_squares[0])
    }
}
