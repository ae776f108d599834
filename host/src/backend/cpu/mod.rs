//! The CPU executor: runs the kernels' per-thread work (`gpu_kernels::kernel`) over rayon.
//!
//! Work is split into chunks whose size depends only on the problem, never on the number of
//! threads, and chunk results are combined in chunk order. So `f` and `∇f` are the same bits
//! for any `RAYON_NUM_THREADS`, and from run to run.

mod raw;

pub use raw::launch_raw;

use crate::backend::evaluator::{
    BackendError, Evaluator, FiniteDifference, Gradient, NormalPass, WithResiduals,
};
use crate::backend::problem::TermProblem;
use gpu_kernels::kernel::exact::{
    banded_group_gradient_exact, eval_seeded, exact_supported, fill_constants,
};
use gpu_kernels::kernel::normal::{
    DifferenceRow, ExactRow, JacobianRow, NormalPartial, mirror_upper, normal_partial,
};
use gpu_kernels::kernel::{
    CompensatedSum, DenseTerm, GradientWork, banded_group_gradient, dense_gradient_component,
    sum_in_order, value_partial,
};
use gpu_kernels::lanes::{LANES, Lanes};
use gpu_kernels::{Central, Data, Dual, FdScheme, Forward, SumOfSquares, Term};
use rayon::prelude::*;
use std::marker::PhantomData;
use std::ops::Range;

/// Terms per chunk of the value sum.
const VALUE_CHUNK: usize = 4096;
/// Variable groups per chunk of a banded gradient.
const GROUP_CHUNK: usize = 4096;
/// Dense gradients keep `n` partial sums per chunk: aim for this many chunks at most.
const DENSE_CHUNKS: usize = 64;

/// The number of worker threads (`RAYON_NUM_THREADS`, else one per core).
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// A term problem evaluated on the CPU.
pub struct CpuEvaluator<T> {
    problem: TermProblem<T>,
}

impl<T: Term> CpuEvaluator<T> {
    /// Holds `problem`: on the CPU there is nothing to upload.
    pub fn new(problem: TermProblem<T>) -> Self {
        Self { problem }
    }

    /// `Σ_k φ_k(x)`: compensated chunk sums in parallel, then added in chunk order, as the GPU
    /// adds its blocks'.
    pub fn value(&self, x: &[f64]) -> f64 {
        let data = self.problem.data();
        let terms = self.problem.terms();
        let chunk_sums: Vec<f64> = (0..terms.div_ceil(VALUE_CHUNK))
            .into_par_iter()
            .map(|c| {
                let chunk = c * VALUE_CHUNK..((c + 1) * VALUE_CHUNK).min(terms);
                value_partial::<T>(chunk, x, data)
            })
            .collect();
        sum_in_order(chunk_sums.into_iter())
    }

    /// Refuses an exact gradient the kernels cannot take (a banded window too wide).
    fn check(&self, gradient: Gradient) -> Result<(), BackendError> {
        if gradient == Gradient::Exact {
            exact_supported::<T>(self.problem.n(), false)
                .map_err(BackendError::ExactUnsupported)?;
        }
        Ok(())
    }

    /// The gradient, per term, into `g`; with `value`, also `f(x)` from the same pass (else
    /// the return is 0).
    pub fn gradient(&self, x: &[f64], gradient: Gradient, g: &mut [f64], value: bool) -> f64 {
        match gradient {
            Gradient::Exact => self.gradient_with::<Exact>(x, g, value),
            Gradient::FiniteDifference(FiniteDifference::Forward) => {
                self.gradient_with::<Differences<Forward>>(x, g, value)
            }
            Gradient::FiniteDifference(FiniteDifference::Central) => {
                self.gradient_with::<Differences<Central>>(x, g, value)
            }
        }
    }

    fn gradient_with<S: CpuScheme<T>>(&self, x: &[f64], g: &mut [f64], value: bool) -> f64 {
        let data = self.problem.data();
        let n = x.len();
        match GradientWork::of::<T>(n, data) {
            GradientWork::Groups { stride, .. } => {
                // Each chunk owns its groups' slice of g: no combining needed, but for the value.
                let chunk_values: Vec<f64> = g
                    .par_chunks_mut(GROUP_CHUNK * stride)
                    .enumerate()
                    .map(|(c, chunk)| {
                        let mut sum = CompensatedSum::default();
                        for (j, group_g) in chunk.chunks_mut(stride).enumerate() {
                            let group = c * GROUP_CHUNK + j;
                            sum.add(S::group(group, x, data, group_g, value));
                        }
                        sum.value()
                    })
                    .collect();
                sum_in_order(chunk_values.into_iter())
            }
            GradientWork::Terms(terms) => {
                let chunk = terms.div_ceil(DENSE_CHUNKS);
                let partials: Vec<(Vec<f64>, f64)> = (0..terms.div_ceil(chunk))
                    .into_par_iter()
                    .map(|c| {
                        let mut acc = vec![0.0; n];
                        let terms = c * chunk..((c + 1) * chunk).min(terms);
                        let sum = S::dense_terms(terms, x, data, &mut acc, value);
                        (acc, sum)
                    })
                    .collect();
                for (i, gi) in g.iter_mut().enumerate() {
                    let parts = partials.iter().map(|p| p.0[i]);
                    *gi = dense_gradient_component(S::divisor(x[i]), parts);
                }
                sum_in_order(partials.iter().map(|p| p.1))
            }
        }
    }
}

/// A gradient scheme as the CPU runs it, over the work the window gives: one variable group
/// (banded windows), or a run of dense terms adding to a chunk's partials, finished by
/// dividing by `divisor`.
trait CpuScheme<T: Term> {
    /// A group's part of `∇f` into `g`; with `value`, the value of the term it owns.
    fn group(group: usize, x: &[f64], data: Data<'_>, g: &mut [f64], value: bool) -> f64;
    /// Adds `terms`' contributions to `acc`; with `value`, returns their values' sum.
    fn dense_terms(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        acc: &mut [f64],
        value: bool,
    ) -> f64;
    fn divisor(xi: f64) -> f64;
}

/// Finite differences with scheme `S`.
struct Differences<S>(PhantomData<S>);

impl<T: Term, S: FdScheme> CpuScheme<T> for Differences<S> {
    fn group(group: usize, x: &[f64], data: Data<'_>, g: &mut [f64], value: bool) -> f64 {
        banded_group_gradient::<T, S>(group, x, data, g, value)
    }

    fn dense_terms(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        acc: &mut [f64],
        value: bool,
    ) -> f64 {
        let mut sum = CompensatedSum::default();
        let mut lanes = DenseLanes::<T>::new(x);
        for k in terms {
            let term = DenseTerm::<T>::prepare::<S>(k, x, data);
            lanes.accumulate::<S>(&term, x, acc);
            if value {
                sum.add(term.value::<S>(x));
            }
        }
        sum.value()
    }

    fn divisor(xi: f64) -> f64 {
        S::steps(xi).spacing
    }
}

/// Exact derivatives on duals (`gpu_kernels::kernel::exact`).
struct Exact;

/// Derivative lanes per evaluation of a dense term on the CPU: more than the GPU's
/// `EXACT_LANES`, since memory for the window is no constraint here and each evaluation
/// repeats the term's non-derivative work (lsq-expsin, p = 16: 43.7 ms per gradient with 16
/// lanes, 52.6 ms with 4; `cargo bench --bench kernels`).
const DENSE_LANES: usize = 16;

impl<T: Term> CpuScheme<T> for Exact {
    fn group(group: usize, x: &[f64], data: Data<'_>, g: &mut [f64], value: bool) -> f64 {
        banded_group_gradient_exact::<T>(group, x, data, g, value)
    }

    fn dense_terms(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        acc: &mut [f64],
        value: bool,
    ) -> f64 {
        let mut sum = CompensatedSum::default();
        let mut window = vec![Dual::constant(0.0); x.len()];
        fill_constants(&mut window, x);
        for k in terms {
            let local = T::prepare(k, x.len(), data);
            for first in (0..x.len()).step_by(DENSE_LANES) {
                let result = eval_seeded::<T, DENSE_LANES>(&local, &mut window, first);
                for (a, d) in acc[first..].iter_mut().zip(result.derivatives) {
                    *a += d;
                }
                if value && first == 0 {
                    sum.add(result.value);
                }
            }
        }
        sum.value()
    }

    fn divisor(_xi: f64) -> f64 {
        1.0
    }
}

/// How a chunk adds up a dense term's differences: four variables per `eval` call on lanes
/// when the term allows it (then this holds `x` splatted), one at a time otherwise.
struct DenseLanes<T> {
    lanes: Vec<Lanes>,
    term: PhantomData<T>,
}

impl<T: Term> DenseLanes<T> {
    fn new(x: &[f64]) -> Self {
        let lanes = if T::EVAL_IN_LANES {
            x.iter().map(|&v| Lanes::splat(v)).collect()
        } else {
            Vec::new()
        };
        DenseLanes {
            lanes,
            term: PhantomData,
        }
    }

    /// `acc[i] += term's difference in variable i`, for every i.
    fn accumulate<S: FdScheme>(&mut self, term: &DenseTerm<'_, T>, x: &[f64], acc: &mut [f64]) {
        if T::EVAL_IN_LANES {
            for (first, acc) in (0..x.len()).step_by(LANES).zip(acc.chunks_mut(LANES)) {
                let differences = term.differences_in_lanes::<S>(&mut self.lanes, first);
                for (a, d) in acc.iter_mut().zip(differences) {
                    *a += d;
                }
            }
        } else {
            for (i, a) in acc.iter_mut().enumerate() {
                *a += term.difference::<S>(x, i);
            }
        }
    }
}

impl<T: Term + 'static> Evaluator for CpuEvaluator<T> {
    fn dim(&self) -> usize {
        self.problem.n()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, BackendError> {
        Ok(CpuEvaluator::value(self, x))
    }

    fn gradient(
        &mut self,
        x: &[f64],
        gradient: Gradient,
        g: &mut [f64],
    ) -> Result<(), BackendError> {
        self.check(gradient)?;
        CpuEvaluator::gradient(self, x, gradient, g, false);
        Ok(())
    }

    fn value_and_gradient(
        &mut self,
        x: &[f64],
        gradient: Gradient,
        g: &mut [f64],
    ) -> Result<f64, BackendError> {
        self.check(gradient)?;
        Ok(CpuEvaluator::gradient(self, x, gradient, g, true))
    }
}

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

/// The normal equations' chunks each keep `n² + n` partial sums: at most 64 chunks, fewer
/// for large `n`, so that the partials stay within `2²²` values (32 MiB).
const NORMAL_PARTIAL_VALUES: usize = 1 << 22;

impl<T: Term> NormalPass<CpuEvaluator<SumOfSquares<T>>> for CpuResiduals<T> {
    fn residuals(&self, sum: &CpuEvaluator<SumOfSquares<T>>) -> usize {
        sum.problem.terms()
    }

    /// Chunks of terms fixed by the problem alone (never the thread count), each summed by
    /// [`normal_partial`], then added in chunk order: the same bits for any number of threads.
    fn normal_equations(
        &mut self,
        sum: &mut CpuEvaluator<SumOfSquares<T>>,
        x: &[f64],
        jacobian: Gradient,
        jtj: &mut [f64],
        jtr: &mut [f64],
    ) -> Result<f64, BackendError> {
        let problem = &sum.problem;
        let (n, data, terms) = (x.len(), problem.data(), problem.terms());
        let width = T::WINDOW.stride_width(n).1;
        let chunks = (NORMAL_PARTIAL_VALUES / (n * n + n)).clamp(1, DENSE_CHUNKS);
        let chunk = terms.div_ceil(chunks);
        let partials: Vec<(Vec<f64>, Vec<f64>, f64)> = (0..terms.div_ceil(chunk))
            .into_par_iter()
            .map(|c| {
                let terms = c * chunk..((c + 1) * chunk).min(terms);
                match jacobian {
                    Gradient::Exact if width <= 4 => {
                        let mut window = [Dual::<4>::constant(0.0); 4];
                        let rows = &mut ExactRow {
                            window: &mut window[..width],
                        };
                        chunk_partial::<T, _>(terms, x, data, rows)
                    }
                    Gradient::Exact => {
                        let mut window = vec![Dual::<DENSE_LANES>::constant(0.0); width];
                        let rows = &mut ExactRow {
                            window: &mut window,
                        };
                        chunk_partial::<T, _>(terms, x, data, rows)
                    }
                    Gradient::FiniteDifference(FiniteDifference::Forward) => {
                        let rows = &mut DifferenceRow::<Forward>(PhantomData);
                        chunk_partial::<T, _>(terms, x, data, rows)
                    }
                    Gradient::FiniteDifference(FiniteDifference::Central) => {
                        let rows = &mut DifferenceRow::<Central>(PhantomData);
                        chunk_partial::<T, _>(terms, x, data, rows)
                    }
                }
            })
            .collect();
        jtj.fill(0.0);
        jtr.fill(0.0);
        for (part_jtj, part_jtr, _) in &partials {
            for (total, part) in jtj.iter_mut().zip(part_jtj) {
                *total += part;
            }
            for (total, part) in jtr.iter_mut().zip(part_jtr) {
                *total += part;
            }
        }
        mirror_upper(jtj, n);
        Ok(sum_in_order(partials.iter().map(|p| p.2)))
    }
}

/// One chunk's normal equations, `(JᵀJ upper triangle, Jᵀr, Σ r²)`, over `terms`, with rows
/// made by `rows`.
fn chunk_partial<T: Term, J: JacobianRow>(
    terms: Range<usize>,
    x: &[f64],
    data: Data<'_>,
    rows: &mut J,
) -> (Vec<f64>, Vec<f64>, f64) {
    let n = x.len();
    let (mut jtj, mut jtr) = (vec![0.0; n * n], vec![0.0; n]);
    let mut partial = NormalPartial::new(&mut jtj, &mut jtr);
    let mut row = vec![0.0; T::WINDOW.stride_width(n).1];
    normal_partial::<T, J>(terms, x, data, rows, &mut partial, &mut row);
    let sum_of_squares = partial.sum_of_squares();
    (jtj, jtr, sum_of_squares)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_kernels::kernel::term_value;
    use gpu_kernels::terms::LsqExpSin;

    /// The dense gradient on lanes (four variables per `eval`) against differencing one
    /// variable at a time; n = 7 leaves a partial group of lanes at the end.
    #[test]
    fn lanes_agree_with_one_variable_at_a_time() {
        let n = 7;
        // Columns t, y and sin(k·t) for k = 2 .. n−1, as lsq-expsin's term reads them.
        let rows = 500;
        let t: Vec<f64> = (0..rows).map(|j| 0.02 * j as f64).collect();
        let mut values: Vec<f64> = t.iter().copied().chain(t.iter().map(|t| t.cos())).collect();
        for k in 2..n {
            values.extend(t.iter().map(|t| (k as f64 * t).sin()));
        }
        let problem = || TermProblem::<LsqExpSin>::with_data(n, values.clone(), rows).unwrap();
        let x = [1.9, 0.65, 0.4, -0.3, 0.3, -0.2, 0.1];
        let evaluator = CpuEvaluator::new(problem());
        let problem = problem();
        let data = problem.data();
        for fd in [FiniteDifference::Forward, FiniteDifference::Central] {
            let mut g = vec![0.0; n];
            evaluator.gradient(&x, fd.into(), &mut g, false);
            let mut reference = vec![0.0; n];
            for k in 0..problem.terms() {
                let scalar = |i| match fd {
                    FiniteDifference::Forward => {
                        DenseTerm::<LsqExpSin>::prepare::<Forward>(k, &x, data)
                            .difference::<Forward>(&x, i)
                    }
                    FiniteDifference::Central => {
                        DenseTerm::<LsqExpSin>::prepare::<Central>(k, &x, data)
                            .difference::<Central>(&x, i)
                    }
                };
                for (i, r) in reference.iter_mut().enumerate() {
                    *r += scalar(i);
                }
            }
            // Both are finite differences of the same terms; they may differ only by rounding in
            // the term values: a few ε·Σ|φ_k| over the spacing.
            let sum_abs: f64 = (0..problem.terms())
                .map(|k| term_value::<LsqExpSin>(k, &x, data).abs())
                .sum();
            for (i, (gi, r)) in g.iter().zip(&reference).enumerate() {
                let spacing = match fd {
                    FiniteDifference::Forward => Forward::steps(x[i]).spacing,
                    FiniteDifference::Central => Central::steps(x[i]).spacing,
                };
                let expected = r / spacing;
                let rounding = 8.0 * f64::EPSILON * sum_abs / spacing.abs();
                assert!(
                    (gi - expected).abs() <= rounding,
                    "{fd:?} g[{i}] = {gi}, one at a time {expected}, allowed {rounding:e}"
                );
            }
        }
    }
}
