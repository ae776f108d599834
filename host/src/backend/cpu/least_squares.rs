//! The CPU's residual passes: a sum of squares' residual rows, chunk by chunk of the plan's row
//! blocks, each chunk's rows folded into a triangle (`R`, `Qᵀr`), or summed into `JᵀJ` and
//! `Jᵀr`, by the scheme's rows.

use super::evaluator::{CpuEvaluator, catching_panics};
use super::plan::{each_chunk, row_block};
use super::schemes::{RowsInto, SchemePasses};
use crate::backend::mpi::{Layout, Partials, Share};
use crate::backend::problem::TermProblem;
use crate::backend::with_residuals::{NormalPass, WithResiduals};
use crate::error::BackendError;
use gpu_kernels::Gradient;
use gpu_kernels::kernel::loss::RobustLoss;
use gpu_kernels::kernel::triangle::triangle_len;
use gpu_kernels::kernel::{CompensatedRun, term_value};
use gpu_kernels::{SumOfSquares, Term};
use std::marker::PhantomData;
use std::ops::Range;

/// The CPU's normal-equations pass over residual term `T`, for the sum of squares its
/// [`CpuEvaluator`] holds.
pub struct CpuResiduals<T>(PhantomData<fn() -> T>);

/// A sum of squares of residual term `T` on the CPU.
pub type CpuLeastSquares<T> = WithResiduals<CpuEvaluator<SumOfSquares<T>>, CpuResiduals<T>>;

impl<T: Term> CpuLeastSquares<T> {
    /// The sum of squares of `problem`'s residual term, with its normal-equations pass.
    pub fn new(problem: TermProblem<SumOfSquares<T>>) -> Self {
        WithResiduals {
            sum: CpuEvaluator::new(problem),
            pass: CpuResiduals(PhantomData),
        }
    }
}

impl<T: Term> NormalPass<CpuEvaluator<SumOfSquares<T>>> for CpuResiduals<T> {
    fn residuals(&self, sum: &CpuEvaluator<SumOfSquares<T>>) -> usize {
        sum.problem.terms()
    }

    fn normal_equations(
        &mut self,
        sum: &mut CpuEvaluator<SumOfSquares<T>>,
        x: &[f64],
        jacobian: Gradient,
        jtj: &mut [f64],
        jtr: &mut [f64],
    ) -> Result<f64, BackendError> {
        self.normal_partials(sum, x, jacobian, Share::Whole)?
            .normal_into(jtj, jtr)
    }

    fn normal_partials(
        &mut self,
        sum: &mut CpuEvaluator<SumOfSquares<T>>,
        x: &[f64],
        jacobian: Gradient,
        share: Share,
    ) -> Result<Partials, BackendError> {
        rows_partials(sum, x, jacobian, share, RowsInto::NormalEquations)
    }

    fn factor_partials(
        &mut self,
        sum: &mut CpuEvaluator<SumOfSquares<T>>,
        x: &[f64],
        jacobian: Gradient,
        loss: RobustLoss,
        share: Share,
    ) -> Result<Partials, BackendError> {
        rows_partials(sum, x, jacobian, share, RowsInto::Triangle(loss))
    }

    /// The residuals alone, each point's `C²ρ(r²/C²)` summed as a value pass sums.
    fn cost_partials(
        &mut self,
        sum: &mut CpuEvaluator<SumOfSquares<T>>,
        x: &[f64],
        loss: RobustLoss,
        share: Share,
    ) -> Result<Partials, BackendError> {
        let data = sum.data();
        chunk_partials(sum, x, share, Layout::sums(0), 0, |rows, _| {
            let mut cost = CompensatedRun::default();
            for k in rows {
                cost.add(loss.cost(term_value::<T>(k, x, data)));
            }
            cost.value()
        })
    }
}

/// The residual rows of `jacobian`'s scheme, chunk by chunk, reduced as `into` says: the
/// normal equations' `n² + n` sums, or a triangle and `Qᵀr`.
fn rows_partials<T: Term>(
    sum: &CpuEvaluator<SumOfSquares<T>>,
    x: &[f64],
    jacobian: Gradient,
    share: Share,
    into: RowsInto,
) -> Result<Partials, BackendError> {
    let n = x.len();
    let (layout, len) = match into {
        RowsInto::NormalEquations => (Layout::sums(n * n + n), n * n + n),
        RowsInto::Triangle(_) => (Layout::Triangles { n }, triangle_len(n)),
    };
    let rows_chunk = SchemePasses::<T>::of(jacobian).rows_chunk;
    let (data, bounds) = (sum.data(), sum.bounds.view());
    chunk_partials(sum, x, share, layout, len, |rows, vector| {
        rows_chunk(rows, x, data, bounds, vector, into)
    })
}

/// The residuals in chunks of [`row_block`] terms, fixed by the problem alone (never the thread
/// count or the ranks), each chunk's `len` values made by `chunk` (which returns its value),
/// combined as `layout` says, in chunk order: the same bits for any number of threads or ranks.
fn chunk_partials<T: Term>(
    sum: &CpuEvaluator<SumOfSquares<T>>,
    x: &[f64],
    share: Share,
    layout: Layout,
    len: usize,
    chunk: impl Fn(Range<usize>, &mut [f64]) -> f64 + Sync,
) -> Result<Partials, BackendError> {
    catching_panics(|| {
        let terms = sum.problem.terms();
        let size = row_block(x.len(), sum.planned_rows(share));
        let chunks = share.range(terms.div_ceil(size));
        let mut vectors = vec![0.0; chunks.len() * len];
        // A pass without vectors (`len` 0) still has its chunks.
        let slices: Vec<&mut [f64]> = if len == 0 {
            chunks.clone().map(|_| <&mut [f64]>::default()).collect()
        } else {
            vectors.chunks_mut(len).collect()
        };
        let values = each_chunk(slices.into_iter().zip(chunks).collect(), |(vector, c)| {
            chunk(c * size..((c + 1) * size).min(terms), vector)
        });
        Ok(Partials::of_chunks(values, vectors, layout))
    })
}
