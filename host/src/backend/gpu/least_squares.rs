//! The GPU's least-squares passes over a residual term's sum of squares: a `_triangle_` kernel
//! sums each block's residual rows' products into its Gram matrix, a second kernel adds the
//! blocks' in block order, and the host factors the sum by Cholesky where the columns allow
//! (`kernel::gram`); where they do not, the same kernel folds each block's rows into a
//! triangle (`R`, `Qᵀr`), and a tree of `fold_triangle_pairs` launches folds the blocks'
//! triangles into one on the device, which alone comes back. A `_cost` kernel sums the points'
//! costs. The normal equations, where asked for, are the triangle's (`JᵀJ = RᵀR`).

use super::abi::Launch;
use super::driver::Buffer;
use super::evaluator::GpuEvaluator;
use super::launcher::Launcher;
use super::launcher::thread_per_row;
use crate::backend::evaluator::Evaluator;
use crate::backend::launch::LaunchConfig;
use crate::backend::mpi::{Factor, Layout, Partials, Share};
use crate::backend::problem::TermProblem;
use crate::backend::with_residuals::{NormalPass, WithResiduals};
use crate::error::BackendError;
use gpu_kernels::Gradient;
use gpu_kernels::kernel::gram::{Reduction, gram_len, gram_triangle, pivots_clear};
use gpu_kernels::kernel::loss::RobustLoss;
use gpu_kernels::kernel::triangle::{held_rows_gpu, triangle_len, triangle_supported_on_gpu};
use gpu_kernels::{ResidualKernels, SumOfSquares};
use std::sync::Arc;

/// The most residual-row work, `m·n²`, for which a solver factors its trial points
/// ([`NormalPass::factors_trials`]): below it, a factor pass's arithmetic beyond the value
/// pass's costs less than the write, launch and wait an accepted step's own factor pass would
/// (the cost model's figures: BENCHMARKS.md, "LM trials").
const TRIAL_FACTOR_WORK_MAX: usize = 1 << 24;

/// How far above [`GRAM_PIVOT_MIN`](gpu_kernels::kernel::gram::GRAM_PIVOT_MIN) each pivot of
/// the last factor must be for the next factor pass to try the Gram sums first: nearer, they
/// would likely be refused at the next point too, and their pass and wait wasted.
const GRAM_MARGIN: f64 = 4.0;

/// The least-squares passes of a sum of squares loaded in a [`GpuEvaluator`].
pub struct GpuResiduals {
    residuals: usize,
    /// The triangle kernels' plans; or why the pass does not take this problem at all.
    triangles: Result<Triangles, &'static str>,
    cost: BlockPass,
    /// Whether the next factor pass folds the rows at once: the last factor's pivots were
    /// within [`GRAM_MARGIN`] of what Cholesky of `JᵀJ` refuses.
    fold_first: bool,
}

/// The plans of a residual term's triangle kernels.
struct Triangles {
    /// Per scheme, in the table's order, its kernel's plan or why the kernel refuses the
    /// launch size.
    plans: Vec<Result<BlockPass, BackendError>>,
    /// The blocks' Gram matrices added: `gram_len(n)` values.
    total: Buffer,
}

/// A sum of squares of a residual term on the GPU.
pub type GpuLeastSquares = WithResiduals<GpuEvaluator, GpuResiduals>;

/// One kernel that writes a vector of at most `len` values and a value per block, with its
/// buffers.
struct BlockPass {
    kernel: &'static str,
    config: LaunchConfig,
    /// `len · blocks` values.
    out: Buffer,
    /// One value per block.
    values: Buffer,
}

impl BlockPass {
    /// The pass of `kernel` over `work` items, at most `threads` per block (see
    /// [`Launcher::config_within`]), each block writing `len` values.
    fn plan(
        l: &Launcher,
        kernel: &'static str,
        (work, threads): (usize, u32),
        len: usize,
    ) -> Result<BlockPass, BackendError> {
        let config = l.config_within(kernel, work, threads)?;
        let blocks = config.blocks as usize;
        Ok(BlockPass {
            kernel,
            config,
            out: l.alloc("least-squares triangles", len * blocks)?,
            values: l.alloc("least-squares costs", blocks)?,
        })
    }

    /// Launches `launch` (this pass's kernel), whose blocks each write a triangle of `n`
    /// variables, folds the triangles into the first on the device (`fold_triangle_pairs`, a
    /// launch a level, a block a pair) and reads the blocks' values and that one triangle back.
    fn run_folded(
        &self,
        sum: &GpuEvaluator,
        launch: Launch,
        n: usize,
    ) -> Result<(Vec<f64>, Vec<f64>), BackendError> {
        let l = &sum.launcher;
        l.launch(&launch, self.config)?;
        let count = self.config.blocks as usize;
        let mut stride = 1;
        while stride < count {
            let fold = Launch::fold_triangle_pairs(self.out.address(), count, stride, n);
            l.launch(&fold, fold_config(count.div_ceil(2 * stride), n))?;
            stride *= 2;
        }
        let mut triangle = vec![0.0; triangle_len(n)];
        let mut values = vec![0.0; self.values.len()];
        l.read(
            &mut [(&self.out, &mut triangle), (&self.values, &mut values)],
            self.kernel,
        )?;
        Ok((values, triangle))
    }

    /// Launches `launch` (this pass's kernel) and reads the blocks' values back.
    fn run(&self, sum: &GpuEvaluator, launch: Launch) -> Result<Vec<f64>, BackendError> {
        let l = &sum.launcher;
        l.launch(&launch, self.config)?;
        let mut values = vec![0.0; self.values.len()];
        l.read(&mut [(&self.values, &mut values)], self.kernel)?;
        Ok(values)
    }
}

/// A level of the triangles' fold: a block a pair, a thread for each column a reflection
/// updates (`n` of them, and `Qᵀr`), in whole warps.
fn fold_config(pairs: usize, n: usize) -> LaunchConfig {
    LaunchConfig {
        // Past CUDA's grid limit, blocks loop over the pairs.
        blocks: pairs.min(i32::MAX as usize) as u32,
        threads: (32 * n.div_ceil(32)).max(32) as u32,
    }
}

/// Loads the sum of squares of residual term `T` and plans its least-squares passes (the
/// triangle refused, with the reason, where [`triangle_supported_on_gpu`] says so; the value, the
/// gradient and the cost still run).
pub fn load_least_squares<T: ResidualKernels>(
    launcher: Arc<Launcher>,
    problem: TermProblem<SumOfSquares<T>>,
) -> Result<GpuLeastSquares, BackendError> {
    let n = problem.n();
    let residuals = problem.terms();
    let supported = triangle_supported_on_gpu::<T>(n);
    let sum = GpuEvaluator::new(launcher.clone(), problem)?;
    let l = &*launcher;
    // As for the gradients: a scheme whose kernel refuses the launch size is refused when it
    // is asked for.
    // A block makes its rows straight into shared memory: no more threads than rows it holds.
    let held = u32::try_from(held_rows_gpu(n)).unwrap_or(u32::MAX);
    let triangles = match supported {
        Ok(()) => Ok(Triangles {
            plans: (T::TRIANGLES.iter())
                .map(|kernel| BlockPass::plan(l, kernel, (residuals, held), gram_len(n)))
                .collect(),
            total: l.alloc("the least-squares Gram matrix", gram_len(n))?,
        }),
        Err(why) => Err(why),
    };
    let pass = GpuResiduals {
        residuals,
        triangles,
        cost: BlockPass::plan(l, T::COST, (residuals, u32::MAX), 0)?,
        fold_first: false,
    };
    Ok(WithResiduals { pass, sum })
}

impl NormalPass<GpuEvaluator> for GpuResiduals {
    fn residuals(&self, _sum: &GpuEvaluator) -> usize {
        self.residuals
    }

    /// The triangle's: `JᵀJ = RᵀR`, `Jᵀr = Rᵀ(Qᵀr)`.
    fn normal_equations(
        &mut self,
        sum: &mut GpuEvaluator,
        x: &[f64],
        jacobian: Gradient,
        jtj: &mut [f64],
        jtr: &mut [f64],
    ) -> Result<f64, BackendError> {
        let mut factor = Factor::new(x.len());
        let partials =
            self.factor_partials(sum, x, jacobian, RobustLoss::default(), Share::Whole)?;
        let sum_of_squares = partials.factor_into(&mut factor)?;
        factor.normal_equations_into(jtj, jtr);
        Ok(sum_of_squares)
    }

    /// The blocks' Gram matrices, added on the device in block order and factored here as one
    /// triangle: one download of `gram_len(n)` values and the blocks' costs. Where the columns
    /// refuse Cholesky ([`gram_triangle`]), a second launch's triangle per block, folded into
    /// one on the device (`BlockPass::run_folded`). Where the last factor was near that
    /// refusal, the fold alone. The GPU takes no share of the terms: rank 0 evaluates the whole
    /// pass.
    fn factor_partials(
        &mut self,
        sum: &mut GpuEvaluator,
        x: &[f64],
        jacobian: Gradient,
        loss: RobustLoss,
        share: Share,
    ) -> Result<Partials, BackendError> {
        let layout = Layout::Triangles { n: x.len() };
        if !share.evaluates_whole() {
            return Ok(Partials::none(layout));
        }
        let triangles = self
            .triangles
            .as_ref()
            .map_err(|why| BackendError::Kernel {
                kernel: "least-squares triangle".to_owned(),
                reason: (*why).to_owned(),
            })?;
        let plan = triangles.plans[jacobian as usize]
            .as_ref()
            .map_err(Clone::clone)?;
        sum.send_x(x)?;
        let (out, values) = (plan.out.address(), plan.values.address());
        let n = x.len();
        let launch =
            |reduction| Launch::triangle(plan.kernel, sum.buffers, (loss, reduction), out, values);
        let l = &sum.launcher;
        if !self.fold_first {
            l.launch(&launch(Reduction::Gram), plan.config)?;
            let (blocks, len) = (plan.config.blocks as usize, gram_len(n));
            let total = triangles.total.address();
            l.launch(
                &Launch::sum_block_vectors(out, blocks, len, total),
                thread_per_row(len),
            )?;
            let (mut gram, mut costs) = (vec![0.0; len], vec![0.0; plan.values.len()]);
            l.read(
                &mut [(&triangles.total, &mut gram), (&plan.values, &mut costs)],
                plan.kernel,
            )?;
            let mut triangle = vec![0.0; triangle_len(n)];
            if gram_triangle(&gram, n, &mut triangle) {
                self.fold_first = !pivots_clear(&triangle, n, GRAM_MARGIN);
                return Ok(Partials::of_chunks(costs, triangle, layout));
            }
        }
        let fold = launch(Reduction::Fold);
        let (costs, triangle) = plan.run_folded(sum, fold, n)?;
        self.fold_first = !pivots_clear(&triangle, n, GRAM_MARGIN);
        Ok(Partials::of_chunks(costs, triangle, layout))
    }

    /// Where the triangle kernels take the problem and its rows' work, `m·n²`, is at most
    /// 2²⁴ (`TRIAL_FACTOR_WORK_MAX`).
    fn factors_trials(&self, sum: &GpuEvaluator) -> bool {
        let n = sum.dim();
        let work = (self.residuals).saturating_mul(n.saturating_mul(n));
        self.triangles.is_ok() && work <= TRIAL_FACTOR_WORK_MAX
    }

    /// The points' costs, one sum per block.
    fn cost_partials(
        &mut self,
        sum: &mut GpuEvaluator,
        x: &[f64],
        loss: RobustLoss,
        share: Share,
    ) -> Result<Partials, BackendError> {
        let layout = Layout::sums(0);
        if !share.evaluates_whole() {
            return Ok(Partials::none(layout));
        }
        sum.send_x(x)?;
        let launch = Launch::cost(
            self.cost.kernel,
            sum.buffers,
            loss,
            self.cost.values.address(),
        );
        let costs = self.cost.run(sum, launch)?;
        Ok(Partials::of_chunks(costs, Vec::new(), layout))
    }
}
