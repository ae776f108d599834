//! The CPU executor: runs the kernels' per-thread work (`gpu_kernels::kernel`) over rayon.
//!
//! Work is split into chunks whose size depends only on the problem, never on the number of
//! threads, and chunk results are combined in chunk order. So `f` and `∇f` are the same bits
//! for any `RAYON_NUM_THREADS`, and from run to run.

mod raw;

pub use raw::launch_raw;

use crate::backend::{BackendError, Evaluator};
use crate::objective::{FiniteDifference, TermProblem};
use gpu_kernels::kernel::{
    CompensatedSum, DenseTerm, banded_group_gradient, dense_gradient_component, term_value,
};
use gpu_kernels::lanes::{LANES, Lanes};
use gpu_kernels::{Central, FdScheme, Forward, Term, Window};
use rayon::prelude::*;
use std::marker::PhantomData;

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
    pub fn new(problem: TermProblem<T>) -> Self {
        Self { problem }
    }

    /// `Σ_k φ_k(x)`: compensated chunk sums in parallel, then added in chunk order.
    pub fn value(&self, x: &[f64]) -> f64 {
        let data = self.problem.data();
        let terms = self.problem.terms();
        let chunk_sums: Vec<f64> = (0..terms.div_ceil(VALUE_CHUNK))
            .into_par_iter()
            .map(|c| {
                let mut sum = CompensatedSum::default();
                for k in c * VALUE_CHUNK..((c + 1) * VALUE_CHUNK).min(terms) {
                    sum.add(term_value::<T>(k, x, data));
                }
                sum.value()
            })
            .collect();
        let mut total = CompensatedSum::default();
        chunk_sums.iter().for_each(|&s| total.add(s));
        total.value()
    }

    /// The finite-difference gradient, per term.
    pub fn gradient(&self, x: &[f64], fd: FiniteDifference, g: &mut [f64]) {
        match fd {
            FiniteDifference::Forward => self.gradient_with::<Forward>(x, g),
            FiniteDifference::Central => self.gradient_with::<Central>(x, g),
        }
    }

    fn gradient_with<S: FdScheme>(&self, x: &[f64], g: &mut [f64]) {
        let data = self.problem.data();
        let n = x.len();
        match T::WINDOW {
            Window::Separable | Window::Banded { .. } => {
                // Each chunk owns its groups' slice of g: no combining needed.
                let (stride, _) = T::WINDOW.stride_width(n);
                g.par_chunks_mut(GROUP_CHUNK * stride)
                    .enumerate()
                    .for_each(|(c, chunk)| {
                        for (j, group_g) in chunk.chunks_mut(stride).enumerate() {
                            banded_group_gradient::<T, S>(c * GROUP_CHUNK + j, x, data, group_g);
                        }
                    });
            }
            Window::Dense => {
                let terms = self.problem.terms();
                let chunk = terms.div_ceil(DENSE_CHUNKS);
                let partials: Vec<Vec<f64>> = (0..terms.div_ceil(chunk))
                    .into_par_iter()
                    .map(|c| {
                        let mut acc = vec![0.0; n];
                        let mut lanes = DenseLanes::<T>::new(x);
                        for k in c * chunk..((c + 1) * chunk).min(terms) {
                            let term = DenseTerm::<T>::prepare::<S>(k, x, data);
                            lanes.accumulate::<S>(&term, x, &mut acc);
                        }
                        acc
                    })
                    .collect();
                for (i, gi) in g.iter_mut().enumerate() {
                    *gi = dense_gradient_component::<S>(x[i], partials.iter().map(|p| p[i]));
                }
            }
        }
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

impl<T: Term> Evaluator for CpuEvaluator<T> {
    fn dim(&self) -> usize {
        self.problem.n()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, BackendError> {
        Ok(CpuEvaluator::value(self, x))
    }

    fn gradient(
        &mut self,
        x: &[f64],
        fd: FiniteDifference,
        g: &mut [f64],
    ) -> Result<(), BackendError> {
        CpuEvaluator::gradient(self, x, fd, g);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_kernels::terms::LsqExpSin;

    /// The dense gradient on lanes (four variables per `eval`) against differencing one
    /// variable at a time; n = 7 leaves a partial group of lanes at the end.
    #[test]
    fn lanes_agree_with_one_variable_at_a_time() {
        let n = 7;
        let (values, rows) = crate::problems::lsq_expsin_data(n, 500).unwrap();
        let problem = || TermProblem::<LsqExpSin>::with_data(n, values.clone(), rows).unwrap();
        let x = [1.9, 0.65, 0.4, -0.3, 0.3, -0.2, 0.1];
        let evaluator = CpuEvaluator::new(problem());
        let problem = problem();
        let data = problem.data();
        for fd in [FiniteDifference::Forward, FiniteDifference::Central] {
            let mut g = vec![0.0; n];
            evaluator.gradient(&x, fd, &mut g);
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
