//! A term problem on the CPU: every pass cut into the chunks of the plan, each chunk's work
//! given by the scheme, the chunks' results combined in chunk order.

use super::plan::{GROUP_CHUNK, VALUE_CHUNK, dense_chunk, each_chunk};
use super::schemes::SchemePasses;
use crate::backend::evaluator::{Evaluator, PieceEvaluator};
use crate::backend::mpi::{Layout, Partials, Share};
use crate::backend::pass::{Evaluation, Pass};
use crate::backend::problem::TermProblem;
use crate::backend::step_bounds::StepBounds;
use crate::error::BackendError;
use gpu_kernels::Gradient;
use gpu_kernels::kernel::exact::{exact_supported, terms_in_lanes};
use gpu_kernels::kernel::{
    CompensatedLanes, CompensatedRun, GradientWork, sum_in_order, term_value, value_partial,
    values_in_lanes,
};
use gpu_kernels::lanes::TERM_LANES;
use gpu_kernels::{Data, Term, Values, Window};
use rayon::prelude::*;
use std::ops::Range;

/// Data of at least this many columns are also kept row after row ([`Data::with_rows`]), so
/// that a term reads a row from one place. Wide rows sum faster side by side, because a row's
/// column streams outnumber what the prefetchers follow. Below 16 columns the copy's memory buys
/// little.
const BY_ROW_MIN_COLS: usize = 16;

/// A term problem evaluated on the CPU.
pub struct CpuEvaluator<T> {
    pub(super) problem: TermProblem<T>,
    /// The data row after row where they have [`BY_ROW_MIN_COLS`] columns or more (and memory
    /// allowed the copy), else empty.
    by_row: Vec<f64>,
    /// The box finite-difference points stay in ([`Evaluator::confine_steps`]).
    pub(super) bounds: StepBounds,
}

impl<T: Term> CpuEvaluator<T> {
    /// Holds `problem`, and its data row after row where they are wide.
    pub fn new(problem: TermProblem<T>) -> Self {
        let by_row = rows_side_by_side(problem.data());
        Self {
            problem,
            by_row,
            bounds: StepBounds::default(),
        }
    }

    /// The data as the terms read them: row after row where they are kept so.
    pub(super) fn data(&self) -> Data<'_> {
        self.problem.data().with_rows(&self.by_row)
    }

    /// The rows the chunks of a dense problem are sized for: the whole problem's.
    pub(super) fn planned_rows(&self, share: Share) -> usize {
        match share {
            Share::Rows { total, .. } => total,
            Share::Whole | Share::Terms { .. } => self.problem.terms(),
        }
    }

    /// `Σ_k φ_k(x)`: compensated chunk sums in parallel, then added in chunk order, as the GPU
    /// adds its blocks'.
    pub fn value(&self, x: &[f64]) -> f64 {
        self.value_partials(x, Share::Whole).value()
    }

    fn value_partials(&self, x: &[f64], share: Share) -> Partials {
        let data = self.data();
        let terms = self.problem.terms();
        let chunk = match T::WINDOW {
            Window::Dense => dense_chunk(x.len(), self.planned_rows(share)),
            Window::Separable | Window::Banded { .. } => VALUE_CHUNK,
        };
        let chunks = share.range(terms.div_ceil(chunk)).collect();
        let values = each_chunk(chunks, |c| {
            chunk_value::<T>(c * chunk..((c + 1) * chunk).min(terms), x, data)
        });
        Partials::of_chunks(values, Vec::new(), Layout::sums(0))
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
    pub fn gradient(
        &self,
        x: &[f64],
        gradient: Gradient,
        g: &mut [f64],
        value: bool,
    ) -> Result<f64, BackendError> {
        match GradientWork::of::<T>(x.len(), self.data()) {
            GradientWork::Groups { stride, .. } if g.len() == x.len() => {
                // Straight into g, which the chunks own slices of: no partials to copy.
                let values = self.group_chunks(x, gradient, 0, stride, g, value);
                Ok(sum_in_order(values.into_iter()))
            }
            _ => self
                .gradient_partials(x, gradient, value, Share::Whole)
                .gradient_into(x, self.bounds.view(), g),
        }
    }

    /// As [`Evaluator::partials`] for a gradient.
    fn gradient_partials(
        &self,
        x: &[f64],
        gradient: Gradient,
        value: bool,
        share: Share,
    ) -> Partials {
        match GradientWork::of::<T>(x.len(), self.data()) {
            GradientWork::Groups { groups, stride } => {
                let chunks = share.range(groups.div_ceil(GROUP_CHUNK));
                let width = GROUP_CHUNK * stride;
                let slice = chunks.start * width..(chunks.end * width).min(x.len());
                let mut vectors = vec![0.0; slice.len()];
                let values =
                    self.group_chunks(x, gradient, chunks.start, stride, &mut vectors, value);
                Partials::of_chunks(values, vectors, Layout::Slices)
            }
            GradientWork::Terms(_) => self.dense_partials(x, gradient, value, share),
        }
    }

    /// A banded gradient's chunks from `first` on, as many as `out` holds variables of (it
    /// starts at chunk `first`'s first variable): each writes its groups' part of `∇f` and
    /// returns its terms' value sum when `value` is set.
    fn group_chunks(
        &self,
        x: &[f64],
        gradient: Gradient,
        first: usize,
        stride: usize,
        out: &mut [f64],
        value: bool,
    ) -> Vec<f64> {
        let values = (SchemePasses::<T>::of(gradient).group_chunks)(
            self.data(),
            x,
            self.bounds.view(),
            first,
            stride,
            out,
            value,
        );
        if value { values } else { Vec::new() }
    }

    /// A dense gradient's chunks of `share`: each a vector of `n` partial sums (not yet divided
    /// by the scheme's divisor), and its terms' value sum when `value` is set.
    fn dense_partials(&self, x: &[f64], gradient: Gradient, value: bool, share: Share) -> Partials {
        let chunk = dense_chunk(x.len(), self.planned_rows(share));
        let chunks = share.range(self.problem.terms().div_ceil(chunk));
        let (data, terms) = (self.data(), self.problem.terms());
        let dense_chunks = SchemePasses::<T>::of(gradient).dense_chunks;
        let bounds = self.bounds.view();
        let (values, vectors) = dense_chunks(data, terms, x, bounds, chunk, chunks, value);
        let layout = Layout::Sums {
            len: x.len(),
            divided_by: Some(gradient),
        };
        Partials::of_chunks(if value { values } else { Vec::new() }, vectors, layout)
    }
}

/// `data`'s table row after row, where it has [`BY_ROW_MIN_COLS`] columns or more; else, or
/// where memory does not allow the copy (the columns then serve, only slower), empty.
fn rows_side_by_side(data: Data<'_>) -> Vec<f64> {
    let cols = data.cols();
    if cols < BY_ROW_MIN_COLS {
        return Vec::new();
    }
    let Some(mut by_row) = crate::linalg::try_zeros(data.values().len()) else {
        return Vec::new();
    };
    let rows = data.rows();
    match data.values() {
        Values::F64(values) => transpose_into(&mut by_row, values, rows, cols),
        Values::F32(values) => transpose_into(&mut by_row, values, rows, cols),
    }
    by_row
}

/// `by_row[k·cols + c] = values[c·rows + k]`, widened to f64: the copy [`rows_side_by_side`]
/// makes, its loop over one element type.
fn transpose_into<E: Copy + Into<f64> + Sync>(
    by_row: &mut [f64],
    values: &[E],
    rows: usize,
    cols: usize,
) {
    by_row
        .par_chunks_mut(cols)
        .with_min_len(VALUE_CHUNK)
        .enumerate()
        .for_each(|(k, row)| {
            for (c, value) in row.iter_mut().enumerate() {
                *value = values[c * rows + k].into();
            }
        });
}

/// The value of a chunk's `terms`, summed as every CPU pass sums a chunk (term `i` of the
/// chunk to running sum `i mod 8`): eight terms per `eval` on lanes where the term allows it
/// ([`terms_in_lanes`], which the compiler vectorizes), else one at a time.
fn chunk_value<T: Term>(terms: Range<usize>, x: &[f64], data: Data<'_>) -> f64 {
    super::per_data_type!(data, chunk_value_of::<T>(terms, x, data))
}

/// [`chunk_value`], for one way the data are stored.
#[inline(always)]
fn chunk_value_of<T: Term>(terms: Range<usize>, x: &[f64], data: Data<'_>) -> f64 {
    if !terms_in_lanes::<T>() {
        return value_partial::<T, CompensatedRun>(terms, x, data);
    }
    let whole = terms.start + terms.len() / TERM_LANES * TERM_LANES;
    let mut sum = CompensatedLanes::default();
    for first in (terms.start..whole).step_by(TERM_LANES) {
        sum.add_lanes(values_in_lanes::<T>(first, x, data));
    }
    for (lane, k) in (whole..terms.end).enumerate() {
        sum.add_to(lane, term_value::<T>(k, x, data));
    }
    sum.value()
}

/// Runs one pass over the terms, turning a panic in a term's own code (a bug in its source,
/// say an index past an array of its own) into [`BackendError::TermPanicked`], which the
/// solver returns, as a kernel fault is on the GPU, instead of unwinding through the caller's
/// solve. (rayon hands a worker's panic to the thread that started the pass.) A pass leaves
/// nothing behind but its output, which the error replaces: no state is half-updated, so
/// `AssertUnwindSafe` holds.
pub(super) fn catching_panics<V>(
    pass: impl FnOnce() -> Result<V, BackendError>,
) -> Result<V, BackendError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(pass)).unwrap_or_else(|payload| {
        let message = match (
            payload.downcast_ref::<&str>(),
            payload.downcast_ref::<String>(),
        ) {
            (Some(text), _) => (*text).to_string(),
            (None, Some(text)) => text.clone(),
            (None, None) => "(a panic without a message)".to_string(),
        };
        // The commonest such bug in a new term: more variables or columns read than the
        // caller gave, which the term's `check` is there to refuse up front.
        let hint = if message.starts_with("index out of bounds") {
            " (the term read past its variables or its data row: give it a `check` that refuses an n or data it cannot take)"
        } else {
            ""
        };
        Err(BackendError::TermPanicked(format!("{message}{hint}")))
    })
}

impl<T: Term + 'static> Evaluator for CpuEvaluator<T> {
    fn dim(&self) -> usize {
        self.problem.n()
    }

    fn evaluate(&mut self, x: &[f64], evaluation: Evaluation<'_>) -> Result<f64, BackendError> {
        match evaluation {
            Evaluation::Value => catching_panics(|| Ok(CpuEvaluator::value(self, x))),
            Evaluation::Gradient { gradient, g, value } => {
                self.check(gradient)?;
                catching_panics(|| CpuEvaluator::gradient(self, x, gradient, g, value))
            }
            Evaluation::Normal { .. } | Evaluation::Factor { .. } | Evaluation::Cost { .. } => {
                Err(Evaluation::not_a_sum_of_squares())
            }
        }
    }

    /// The chunks of the one-process plan, for any share: a rank's partials are exactly those
    /// chunks' sums, so the ranks' partials in rank order finish to the one-process bits.
    fn partials(&mut self, x: &[f64], pass: Pass, share: Share) -> Result<Partials, BackendError> {
        match pass {
            Pass::Value => catching_panics(|| Ok(self.value_partials(x, share))),
            Pass::Gradient { gradient, value } => {
                self.check(gradient)?;
                catching_panics(|| Ok(self.gradient_partials(x, gradient, value, share)))
            }
            Pass::Normal { .. } | Pass::Factor { .. } | Pass::Cost { .. } => {
                Err(Evaluation::not_a_sum_of_squares())
            }
        }
    }

    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), BackendError> {
        self.bounds = bounds.checked(self.problem.n())?.clone();
        Ok(())
    }

    /// Exact gradients of terms that go side by side ([`terms_in_lanes`]): their windows do not
    /// overlap and they have nothing of their own to prepare, so a chunk of groups reads its
    /// own variables alone.
    fn pieces(&self, gradient: Gradient) -> Option<&dyn PieceEvaluator> {
        let groups = matches!(
            GradientWork::of::<T>(self.problem.n(), self.data()),
            GradientWork::Groups { .. }
        );
        let local = gradient == Gradient::Exact && terms_in_lanes::<T>() && groups;
        (local && self.check(gradient).is_ok()).then_some(self as &dyn PieceEvaluator)
    }
}

/// A piece is a chunk of [`CpuEvaluator::gradient`]'s pass: the same groups, numbered from
/// the piece's start (the terms, which [`Evaluator::pieces`] admits, read nothing but their
/// window), so the same bits.
impl<T: Term + 'static> PieceEvaluator for CpuEvaluator<T> {
    fn piece_len(&self) -> usize {
        GROUP_CHUNK * T::WINDOW.stride_width(self.problem.n()).0
    }

    fn piece(&self, x: &[f64], g: &mut [f64]) -> Result<f64, BackendError> {
        let (stride, _) = T::WINDOW.stride_width(self.problem.n());
        catching_panics(|| {
            let values = self.group_chunks(x, Gradient::Exact, 0, stride, g, true);
            Ok(sum_in_order(values.into_iter()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_kernels::kernel::DenseTerm;
    use gpu_kernels::kernel::exact::banded_group_gradient_exact;
    use gpu_kernels::terms::{ExtPowell, ExtRosenbrock, LsqExpSin, PoissonRegression, SeedExpSum};
    use gpu_kernels::{Central, FdScheme, Forward};

    /// The exact gradient with terms side by side (eight per `eval`) is, to the bit, what one
    /// group at a time gives, and so are the value taken in the same pass and the value pass
    /// (both on lanes) what one term at a time gives. The sizes leave partial blocks of lanes
    /// at the end of a chunk and of the problem, and more than one chunk.
    #[test]
    fn terms_side_by_side_are_one_group_at_a_time() {
        fn check<T: Term + gpu_kernels::Kernels>(n: usize) {
            assert!(terms_in_lanes::<T>());
            let problem = TermProblem::<T>::new(n).unwrap();
            let x: Vec<f64> = (0..n)
                .map(|i| ((i * 37) % 101) as f64 / 40.0 - 1.2)
                .collect();
            let evaluator = CpuEvaluator::new(problem);
            let mut g = vec![f64::NAN; n];
            let f = evaluator
                .gradient(&x, Gradient::Exact, &mut g, true)
                .unwrap();
            assert_eq!(f.to_bits(), evaluator.value(&x).to_bits(), "n = {n}");
            let terms = T::terms(n, Data::EMPTY);
            let chunks = (0..terms).step_by(VALUE_CHUNK);
            let one_term_at_a_time = sum_in_order(chunks.map(|start| {
                let chunk = start..(start + VALUE_CHUNK).min(terms);
                value_partial::<T, CompensatedRun>(chunk, &x, Data::EMPTY)
            }));
            assert_eq!(f.to_bits(), one_term_at_a_time.to_bits(), "n = {n}");
            let (stride, _) = T::WINDOW.stride_width(n);
            for (group, group_g) in g.chunks(stride).enumerate() {
                let mut one = vec![f64::NAN; group_g.len()];
                banded_group_gradient_exact::<T>(group, &x, Data::EMPTY, &mut one, false);
                for (a, b) in group_g.iter().zip(&one) {
                    assert_eq!(a.to_bits(), b.to_bits(), "n = {n}, group {group}");
                }
            }
        }
        for n in [1, 7, 8, 9, GROUP_CHUNK + 13, 3 * GROUP_CHUNK] {
            check::<SeedExpSum>(n);
        }
        for n in [2, 16, 18, 2 * GROUP_CHUNK + 6] {
            check::<ExtRosenbrock>(n);
        }
        for n in [4, 32, 36, 4 * GROUP_CHUNK + 12] {
            check::<ExtPowell>(n);
        }
    }

    /// The dense gradient on lanes (four variables per `eval`) against differencing one
    /// variable at a time, without a box and within one that holds variables at either bound
    /// and in a gap narrower than a step (one-sided and narrowed stencils in the same lanes);
    /// n = 7 leaves a partial group of lanes at the end.
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
        let problem = TermProblem::<LsqExpSin>::with_data(n, values, rows).unwrap();
        let x = [1.9, 0.65, 0.4, -0.3, 0.3, -0.2, 0.1];
        let mut evaluator = CpuEvaluator::new(problem);
        fn check<S: FdScheme>(kind: Gradient, evaluator: &CpuEvaluator<LsqExpSin>, x: &[f64]) {
            let n = x.len();
            let bounds = evaluator.bounds.view();
            let data = evaluator.problem.data();
            let terms = evaluator.problem.terms();
            let mut g = vec![0.0; n];
            evaluator.gradient(x, kind, &mut g, false).unwrap();
            let mut reference = vec![0.0; n];
            for k in 0..terms {
                let term = DenseTerm::<LsqExpSin>::prepare::<S>(k, x, data);
                for (i, r) in reference.iter_mut().enumerate() {
                    *r += term.difference::<S>(x, i, bounds);
                }
            }
            // Both are finite differences of the same terms; they may differ only by rounding in
            // the term values: a few ε·Σ|φ_k| over the spacing.
            let sum_abs: f64 = (0..terms)
                .map(|k| term_value::<LsqExpSin>(k, x, data).abs())
                .sum();
            for (i, (gi, r)) in g.iter().zip(&reference).enumerate() {
                let spacing = S::steps(x[i], bounds.interval(i)).spacing;
                let expected = r / spacing;
                let rounding = 8.0 * f64::EPSILON * sum_abs / spacing.abs();
                assert!(
                    (gi - expected).abs() <= rounding,
                    "{kind:?} g[{i}] = {gi}, one at a time {expected}, allowed {rounding:e}"
                );
            }
        }
        check::<Forward>(Gradient::Forward, &evaluator, &x);
        check::<Central>(Gradient::Central, &evaluator, &x);
        let inf = f64::INFINITY;
        let lower = [-inf, 0.65, -inf, -1.0, 0.3 - 1e-9, -inf, 0.1];
        let upper = [inf, inf, 1.0, -0.3, 0.3 + 4e-9, inf, 0.1];
        let bounds = StepBounds::new(&lower, &upper);
        evaluator.confine_steps(&bounds).unwrap();
        check::<Forward>(Gradient::Forward, &evaluator, &x);
        check::<Central>(Gradient::Central, &evaluator, &x);
    }

    /// Wide data are kept row after row too, narrow data not, and the rows read from there
    /// give every pass the bits the columns give: the value, and the exact, forward and
    /// central gradients (with their values), over several chunks of rows.
    #[test]
    fn rows_side_by_side_change_no_bits() {
        let (n, rows) = (BY_ROW_MIN_COLS + 4, 3 * VALUE_CHUNK + 17);
        let mut values = Vec::with_capacity(n * rows);
        values.extend((0..rows).map(|k| (k % 5) as f64));
        for c in 1..n {
            values.extend((0..rows).map(|k| (((k * 7 + c * 13) % 17) as f64 - 8.0) / 40.0));
        }
        let problem = TermProblem::<PoissonRegression>::with_data(n, values, rows).unwrap();
        let columns = CpuEvaluator {
            problem: problem.clone(),
            by_row: Vec::new(),
            bounds: StepBounds::default(),
        };
        let side_by_side = CpuEvaluator::new(problem);
        assert_eq!(side_by_side.by_row.len(), n * rows);
        let x: Vec<f64> = (0..n).map(|j| 0.3 - 0.05 * j as f64).collect();
        let value = |e: &CpuEvaluator<PoissonRegression>| e.value(&x).to_bits();
        assert_eq!(value(&columns), value(&side_by_side));
        for kind in Gradient::ALL {
            let gradient = |e: &CpuEvaluator<PoissonRegression>| {
                let mut g = vec![0.0; n];
                let f = e.gradient(&x, kind, &mut g, true).unwrap();
                (
                    f.to_bits(),
                    g.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                )
            };
            assert_eq!(gradient(&columns), gradient(&side_by_side), "{kind:?}");
        }
        let narrow = TermProblem::<LsqExpSin>::with_data(3, vec![1.0; 30], 10).unwrap();
        assert!(CpuEvaluator::new(narrow).by_row.is_empty());
    }
}
