//! The CPU's residual passes: a sum of squares' residual rows, chunk by chunk of the plan's row
//! blocks, each chunk's rows folded into a triangle (`R`, `Qᵀr`), or summed into `JᵀJ` and
//! `Jᵀr`, by the scheme's rows.

use super::evaluator::{CpuEvaluator, catching_panics};
use super::plan::{each_chunk, row_block};
use super::schemes::{RowsInto, SchemePasses};
use crate::backend::evaluator::{
    BackendError, Gradient, Layout, NormalPass, Partials, Share, WithResiduals,
};
use crate::backend::problem::TermProblem;
use gpu_kernels::kernel::triangle::triangle_len;
use gpu_kernels::{SumOfSquares, Term};
use std::marker::PhantomData;

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
        share: Share,
    ) -> Result<Partials, BackendError> {
        rows_partials(sum, x, jacobian, share, RowsInto::Triangle)
    }
}

/// The residual rows in chunks of [`row_block`] terms, fixed by the problem alone (never the
/// thread count or the ranks), each reduced `into` normal equations or a triangle: combined in
/// chunk order, the same bits for any number of threads or ranks.
fn rows_partials<T: Term>(
    sum: &CpuEvaluator<SumOfSquares<T>>,
    x: &[f64],
    jacobian: Gradient,
    share: Share,
    into: RowsInto,
) -> Result<Partials, BackendError> {
    catching_panics(|| {
        let problem = &sum.problem;
        let (n, data, terms) = (x.len(), problem.data(), problem.terms());
        let chunk = row_block(n, sum.planned_rows(share));
        let chunks = share.range(terms.div_ceil(chunk));
        let (len, layout) = match into {
            RowsInto::NormalEquations => (n * n + n, Layout::sums(n * n + n)),
            RowsInto::Triangle => (triangle_len(n), Layout::Triangles { n }),
        };
        let rows_chunk = SchemePasses::<T>::of(jacobian).rows_chunk;
        let mut vectors = vec![0.0; chunks.len() * len];
        let values = each_chunk(
            vectors.chunks_mut(len).zip(chunks).collect(),
            |(vector, c)| {
                let rows = c * chunk..((c + 1) * chunk).min(terms);
                rows_chunk(rows, x, data, vector, into)
            },
        );
        Ok(Partials::of_chunks(values, vectors, layout))
    })
}
