//! The CPU executor: runs the kernels' per-thread work (`gpu_kernels::kernel`) over rayon.
//!
//! Work is split into chunks whose size depends only on the problem, never on the number of
//! threads, and chunk results are combined in chunk order. So `f` and `∇f` are the same bits
//! for any `RAYON_NUM_THREADS`, and from run to run.

mod raw;

pub use raw::launch_raw;

use crate::backend::evaluator::{
    BackendError, Evaluation, Evaluator, Gradient, Layout, NormalPass, Partials, Pass, Share,
    WithResiduals,
};
use crate::backend::problem::TermProblem;
use gpu_kernels::kernel::exact::{
    Seeded, banded_group_gradient_exact, disjoint_exact_in_lanes, exact_supported, fill_constants,
    terms_in_lanes,
};
use gpu_kernels::kernel::normal::{
    DifferenceRow, ExactRow, JacobianRow, NORMAL_LANES_WIDTH_MAX, NormalLanes, NormalPartial,
    NormalSum, normal_partial,
};
use gpu_kernels::kernel::{
    CompensatedLanes, CompensatedRun, DenseTerm, GradientWork, banded_group_gradient, sum_in_order,
    term_value, value_partial, values_in_lanes,
};
use gpu_kernels::lanes::{LANES, Lanes, TERM_LANES};
use gpu_kernels::scheme::{Differences, Exact};
use gpu_kernels::{Data, Dual, FdScheme, SumOfSquares, Term, Window};
use rayon::prelude::*;
use std::marker::PhantomData;
use std::ops::Range;

/// Terms per chunk of a separable or banded problem's value.
const VALUE_CHUNK: usize = 4096;
/// Variable groups per chunk of a banded gradient.
const GROUP_CHUNK: usize = 4096;
/// Rows (terms) per chunk of a dense problem, unless [`PARTIAL_VALUES`] or [`MAX_DENSE_CHUNKS`]
/// asks for more. Small
/// enough that a data set of a few thousand rows still splits across the ranks of an MPI job;
/// large enough that a chunk's fixed cost (its partial vector) is noise.
const ROW_CHUNK: usize = 1024;
/// At most this many chunks per dense pass, however many rows: the chunks' partials are what
/// the ranks of an MPI job exchange at every evaluation, so their number is bounded by the plan
/// (`4096·n` values for a gradient), not by the data, while there are still many more chunks
/// than cores.
const MAX_DENSE_CHUNKS: usize = 4096;
/// A dense pass keeps one vector of partial sums per chunk (`n` for a gradient, `n² + n` for
/// the normal equations): chunks grow so that the partials stay within `2²⁰` values (8 MiB).
const PARTIAL_VALUES: usize = 1 << 20;

/// A pass of at most this many chunks runs them on the calling thread. Handing a pass to the
/// pool costs a wake-up and a wait across threads, more than a few chunks' work: BFGS on
/// seed-expsum at n = 10⁴ (3 chunks a pass) took 2.1 ms this way, 4.3 ms through the pool.
const SERIAL_MAX_CHUNKS: usize = 4;

/// `work` on each of a pass's chunks, results in chunk order: on every core, or on this
/// thread for a pass of at most [`SERIAL_MAX_CHUNKS`] chunks (the same bits either way).
fn each_chunk<C: Send, R: Send>(chunks: Vec<C>, work: impl Fn(C) -> R + Sync + Send) -> Vec<R> {
    if chunks.len() <= SERIAL_MAX_CHUNKS {
        chunks.into_iter().map(work).collect()
    } else {
        chunks.into_par_iter().map(work).collect()
    }
}

/// Rows per chunk of a dense problem's value and gradient, for `n` variables and `rows` rows in
/// the whole problem: a multiple of [`ROW_CHUNK`].
fn dense_chunk(n: usize, rows: usize) -> usize {
    let max_chunks = (PARTIAL_VALUES / n.max(1)).min(MAX_DENSE_CHUNKS);
    ROW_CHUNK * grown(rows.div_ceil(ROW_CHUNK), max_chunks)
}

/// The factor by which chunks grow so that `chunks` of them become at most `max_chunks`.
fn grown(chunks: usize, max_chunks: usize) -> usize {
    chunks.div_ceil(max_chunks.max(1)).max(1)
}

/// Rows per chunk of the normal equations, for `n` parameters and `rows` rows (residuals) in
/// the whole problem: a multiple of the value's and gradient's chunk, so that a block of these
/// rows is whole chunks of every pass. The rank of a data-sharded fit holds whole blocks.
pub fn row_block(n: usize, rows: usize) -> usize {
    let chunk = dense_chunk(n, rows);
    chunk * grown(rows.div_ceil(chunk), PARTIAL_VALUES / (n * n + n).max(1))
}

/// The rows that rank `rank` of `ranks` holds of a dense problem of `rows` rows: its share of
/// the [`row_block`]s. `None` when there are fewer blocks than ranks, so that some rank would
/// hold nothing.
pub fn rank_rows(n: usize, rows: usize, rank: usize, ranks: usize) -> Option<Range<usize>> {
    let block = row_block(n, rows);
    let blocks = rows.div_ceil(block);
    if blocks < ranks {
        return None;
    }
    let mine = Share::Terms { rank, ranks }.range(blocks);
    Some(mine.start * block..(mine.end * block).min(rows))
}

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

    /// The rows the chunks of a dense problem are sized for: the whole problem's.
    fn planned_rows(&self, share: Share) -> usize {
        match share {
            Share::Rows { total } => total,
            Share::Whole | Share::Terms { .. } => self.problem.terms(),
        }
    }

    /// `Σ_k φ_k(x)`: compensated chunk sums in parallel, then added in chunk order, as the GPU
    /// adds its blocks'.
    pub fn value(&self, x: &[f64]) -> f64 {
        self.value_partials(x, Share::Whole).value()
    }

    fn value_partials(&self, x: &[f64], share: Share) -> Partials {
        let data = self.problem.data();
        let terms = self.problem.terms();
        let chunk = match T::WINDOW {
            Window::Dense => dense_chunk(x.len(), self.planned_rows(share)),
            Window::Separable | Window::Banded { .. } => VALUE_CHUNK,
        };
        let chunks = share.range(terms.div_ceil(chunk)).collect();
        let values = each_chunk(chunks, |c| {
            chunk_value::<T>(c * chunk..((c + 1) * chunk).min(terms), x, data)
        });
        Partials {
            values,
            vectors: Vec::new(),
            layout: Layout::sums(0),
        }
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
        match GradientWork::of::<T>(x.len(), self.problem.data()) {
            GradientWork::Groups { stride, .. } if g.len() == x.len() => {
                // Straight into g, which the chunks own slices of: no partials to copy.
                let values = self.group_chunks(x, gradient, 0, stride, g, value);
                Ok(sum_in_order(values.into_iter()))
            }
            _ => self
                .gradient_partials(x, gradient, value, Share::Whole)
                .gradient_into(x, g),
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
        match GradientWork::of::<T>(x.len(), self.problem.data()) {
            GradientWork::Groups { groups, stride } => {
                let chunks = share.range(groups.div_ceil(GROUP_CHUNK));
                let width = GROUP_CHUNK * stride;
                let slice = chunks.start * width..(chunks.end * width).min(x.len());
                let mut vectors = vec![0.0; slice.len()];
                let values =
                    self.group_chunks(x, gradient, chunks.start, stride, &mut vectors, value);
                Partials {
                    values,
                    vectors,
                    layout: Layout::Slices,
                }
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
        let values = (SchemePasses::of(gradient).group_chunks)(self, x, first, stride, out, value);
        if value { values } else { Vec::new() }
    }

    fn group_chunks_with<S: CpuScheme<T>>(
        &self,
        x: &[f64],
        first: usize,
        stride: usize,
        out: &mut [f64],
        value: bool,
    ) -> Vec<f64> {
        let data = self.problem.data();
        let chunks = out.chunks_mut(GROUP_CHUNK * stride).enumerate().collect();
        each_chunk(chunks, |(c, chunk)| {
            let first_group = (first + c) * GROUP_CHUNK;
            // Whole blocks of TERM_LANES groups (which a scheme may take side by side), then
            // the rest one group at a time.
            let block = TERM_LANES * stride;
            let in_blocks = chunk.len() / block * TERM_LANES;
            let (blocks, rest) = chunk.split_at_mut(in_blocks * stride);
            let blocks = blocks.chunks_exact_mut(block).enumerate();
            let blocks = blocks.map(|(b, block_g)| (first_group + b * TERM_LANES, block_g));
            let groups = rest.chunks_mut(stride).enumerate();
            let groups = groups.map(|(j, group_g)| (first_group + in_blocks + j, group_g));
            if !value {
                // A gradient alone: no sum to carry. Its serial chain of additions is a
                // large part of a cheap term's pass (perf: ~30 % of ext-rosenbrock's).
                for (group, block_g) in blocks {
                    S::groups(group, x, data, block_g, false);
                }
                for (group, group_g) in groups {
                    S::group(group, x, data, group_g, false);
                }
                return 0.0;
            }
            // Group i of the chunk owns its term i, which goes to running sum i mod 8 as in the
            // value pass: a block's eight at once, then the rest (at most eight) one each.
            let mut sum = CompensatedLanes::default();
            for (group, block_g) in blocks {
                sum.add_lanes(S::groups(group, x, data, block_g, true));
            }
            for (lane, (group, group_g)) in groups.enumerate() {
                sum.add_to(lane, S::group(group, x, data, group_g, true));
            }
            sum.value()
        })
    }

    /// A dense gradient's chunks of `share`: each a vector of `n` partial sums (not yet divided
    /// by the scheme's divisor), and its terms' value sum when `value` is set.
    fn dense_partials(&self, x: &[f64], gradient: Gradient, value: bool, share: Share) -> Partials {
        let chunk = dense_chunk(x.len(), self.planned_rows(share));
        let chunks = share.range(self.problem.terms().div_ceil(chunk));
        let (values, vectors) =
            (SchemePasses::of(gradient).dense_chunks)(self, x, chunk, chunks, value);
        Partials {
            values: if value { values } else { Vec::new() },
            vectors,
            layout: Layout::Sums {
                len: x.len(),
                divided_by: Some(gradient),
            },
        }
    }

    /// Chunks `chunks` of `chunk` terms: their value sums, and their vectors end to end.
    fn dense_chunks<S: CpuScheme<T>>(
        &self,
        x: &[f64],
        chunk: usize,
        chunks: Range<usize>,
        value: bool,
    ) -> (Vec<f64>, Vec<f64>) {
        let (n, data, terms) = (x.len(), self.problem.data(), self.problem.terms());
        let mut vectors = vec![0.0; chunks.len() * n];
        let values = each_chunk(vectors.chunks_mut(n).zip(chunks).collect(), |(acc, c)| {
            S::dense_terms(c * chunk..((c + 1) * chunk).min(terms), x, data, acc, value)
        });
        (values, vectors)
    }
}

/// The value of a chunk's `terms`, summed as every CPU pass sums a chunk (term `i` of the
/// chunk to running sum `i mod 8`): eight terms per `eval` on lanes where the term allows it
/// ([`terms_in_lanes`]; seed-expsum's value at n = 10⁶: 1.85 → 0.78 ms), else one at a time.
fn chunk_value<T: Term>(terms: Range<usize>, x: &[f64], data: Data<'_>) -> f64 {
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

/// A gradient scheme as the CPU runs it, over the work the window gives: one variable group
/// (banded windows), or a run of dense terms adding to a chunk's partials (which
/// [`Partials::gradient_into`] finishes).
trait CpuScheme<T: Term> {
    /// A group's part of `∇f` into `g`; with `value`, the value of the term it owns.
    /// Implementations are `#[inline(always)]`: called once per variable from the chunk loops,
    /// a call per group had cost seed-expsum's value-and-gradient pass a quarter of its time.
    fn group(group: usize, x: &[f64], data: Data<'_>, g: &mut [f64], value: bool) -> f64;
    /// [`group`](CpuScheme::group) for groups `first .. first + TERM_LANES` (their slices of
    /// `∇f` end to end in `g`), with the same results: one group at a time unless the scheme
    /// can take their terms side by side.
    #[inline(always)]
    fn groups(
        first: usize,
        x: &[f64],
        data: Data<'_>,
        g: &mut [f64],
        value: bool,
    ) -> [f64; TERM_LANES] {
        one_group_at_a_time::<T, Self>(first, x, data, g, value)
    }
    /// Adds `terms`' contributions to `acc`; with `value`, returns their values' sum.
    fn dense_terms(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        acc: &mut [f64],
        value: bool,
    ) -> f64;
    /// The normal equations of residual term `T` over `terms`, with this scheme's Jacobian
    /// rows, into `vector` (see [`chunk_partial`]); returns `Σ r²`.
    fn normal_chunk(terms: Range<usize>, x: &[f64], data: Data<'_>, vector: &mut [f64]) -> f64;
}

/// A scheme's CPU passes over term `T`, as functions of the scheme type that the table maps a
/// [`Gradient`] to: chosen once per pass, their work monomorphized inside.
struct SchemePasses<T: Term> {
    group_chunks: GroupChunks<T>,
    dense_chunks: DenseChunks<T>,
    normal_chunk: fn(Range<usize>, &[f64], Data<'_>, &mut [f64]) -> f64,
}

/// [`CpuEvaluator::group_chunks_with`] of one scheme.
type GroupChunks<T> = fn(&CpuEvaluator<T>, &[f64], usize, usize, &mut [f64], bool) -> Vec<f64>;
/// [`CpuEvaluator::dense_chunks`] of one scheme: the chunks' value sums and vectors.
type DenseChunks<T> =
    fn(&CpuEvaluator<T>, &[f64], usize, Range<usize>, bool) -> (Vec<f64>, Vec<f64>);

impl<T: Term> SchemePasses<T> {
    fn with<S: CpuScheme<T>>() -> Self {
        Self {
            group_chunks: CpuEvaluator::<T>::group_chunks_with::<S>,
            dense_chunks: CpuEvaluator::<T>::dense_chunks::<S>,
            normal_chunk: S::normal_chunk,
        }
    }
}

/// The one place the CPU turns a [`Gradient`] into its scheme type: a match generated from the
/// scheme table (`gpu_kernels::scheme`).
macro_rules! scheme_passes {
    ([$(($variant:ident $suffix:ident $help:literal => $ty:ty))*]) => {
        impl<T: Term> SchemePasses<T> {
            fn of(gradient: Gradient) -> Self {
                match gradient {
                    $(Gradient::$variant => Self::with::<$ty>(),)*
                }
            }
        }
    };
}

gpu_kernels::__schemes! { @with scheme_passes }

/// Groups `first ..` of `g`'s `TERM_LANES` equal slices, one [`CpuScheme::group`] each.
#[inline(always)]
fn one_group_at_a_time<T: Term, S: CpuScheme<T> + ?Sized>(
    first: usize,
    x: &[f64],
    data: Data<'_>,
    g: &mut [f64],
    value: bool,
) -> [f64; TERM_LANES] {
    let mut values = [0.0; TERM_LANES];
    let groups = g.chunks_exact_mut(g.len() / TERM_LANES).zip(first..);
    for (v, (group_g, group)) in values.iter_mut().zip(groups) {
        *v = S::group(group, x, data, group_g, value);
    }
    values
}

impl<T: Term, S: FdScheme> CpuScheme<T> for Differences<S> {
    #[inline(always)]
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
        let mut sum = CompensatedRun::default();
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

    fn normal_chunk(terms: Range<usize>, x: &[f64], data: Data<'_>, vector: &mut [f64]) -> f64 {
        let rows = &mut DifferenceRow::<S>(PhantomData);
        chunk_partial::<T, _>(terms, x, data, rows, vector)
    }
}

/// Derivative lanes per evaluation of a dense term on the CPU: more than the GPU's
/// `EXACT_LANES`, since memory for the window is no constraint here and each evaluation
/// repeats the term's non-derivative work (lsq-expsin, p = 16: 43.7 ms per gradient with 16
/// lanes, 52.6 ms with 4; `cargo bench --bench kernels`).
const DENSE_LANES: usize = 16;

impl<T: Term> CpuScheme<T> for Exact {
    #[inline(always)]
    fn group(group: usize, x: &[f64], data: Data<'_>, g: &mut [f64], value: bool) -> f64 {
        banded_group_gradient_exact::<T>(group, x, data, g, value)
    }

    /// Side by side where the term allows it: one evaluation on lanes of eight terms, which
    /// the compiler vectorizes across them (`exp` included). At n = 10⁶, the exact gradient
    /// alone took 1.95 → 0.43 ms for seed-expsum and 3.9 → 1.3 ms for ext-powell.
    #[inline(always)]
    fn groups(
        first: usize,
        x: &[f64],
        data: Data<'_>,
        g: &mut [f64],
        value: bool,
    ) -> [f64; TERM_LANES] {
        if terms_in_lanes::<T>() {
            disjoint_exact_in_lanes::<T>(first, x, data, g)
        } else {
            one_group_at_a_time::<T, Self>(first, x, data, g, value)
        }
    }

    fn dense_terms(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        acc: &mut [f64],
        value: bool,
    ) -> f64 {
        let mut sum = CompensatedRun::default();
        let mut window = vec![Dual::constant(0.0); x.len()];
        fill_constants(&mut window, x);
        // One seeding per group of lanes for all the chunk's terms (whose data then come from
        // cache after the first group); each variable still adds its terms in order.
        for first in (0..x.len()).step_by(DENSE_LANES) {
            let seeded = Seeded::<DENSE_LANES>::new(&mut window, first);
            // The lanes' sums stay in registers through the chunk rather than in `acc`
            // (memory) at every term. One loop, its value sum optional, in a closure: as
            // measured on lsq-expsin, two copies of the loop left the term's `eval` to the
            // inliner, which declined it (1.7× slower), and the same loop without the closure
            // took 10 % longer.
            let mut lanes = [0.0; DENSE_LANES];
            let mut each_term = |mut values: Option<&mut CompensatedRun>| {
                for k in terms.clone() {
                    let result = seeded.eval::<T>(&T::prepare(k, x.len(), data));
                    for (l, d) in lanes.iter_mut().zip(result.derivatives) {
                        *l += d;
                    }
                    if let Some(sum) = values.as_deref_mut() {
                        sum.add(result.value);
                    }
                }
            };
            if value && first == 0 {
                each_term(Some(&mut sum));
            } else {
                each_term(None);
            }
            // `acc` holds zeros until now, so the bits are those of adding into it directly.
            for (a, l) in acc[first..].iter_mut().zip(lanes) {
                *a += l;
            }
        }
        sum.value()
    }

    /// Rows of at most four variables on `Dual<4>`, wider ones on `Dual<DENSE_LANES>`.
    fn normal_chunk(terms: Range<usize>, x: &[f64], data: Data<'_>, vector: &mut [f64]) -> f64 {
        let width = T::WINDOW.stride_width(x.len()).1;
        if width <= 4 {
            let mut window = [Dual::<4>::constant(0.0); 4];
            let rows = &mut ExactRow::new::<T>(&mut window[..width], x);
            chunk_partial::<T, _>(terms, x, data, rows, vector)
        } else {
            let mut window = vec![Dual::<DENSE_LANES>::constant(0.0); width];
            let rows = &mut ExactRow::new::<T>(&mut window, x);
            chunk_partial::<T, _>(terms, x, data, rows, vector)
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

/// Runs one pass over the terms, turning a panic in a term's own code (a bug in its source,
/// say an index past an array of its own) into [`BackendError::TermPanicked`], which the
/// solver returns, as a kernel fault is on the GPU, instead of unwinding through the caller's
/// solve. (rayon hands a worker's panic to the thread that started the pass.) A pass leaves
/// nothing behind but its output, which the error replaces: no state is half-updated, so
/// `AssertUnwindSafe` holds.
fn catching_panics<V>(pass: impl FnOnce() -> Result<V, BackendError>) -> Result<V, BackendError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(pass)).unwrap_or_else(|payload| {
        let message = match (
            payload.downcast_ref::<&str>(),
            payload.downcast_ref::<String>(),
        ) {
            (Some(text), _) => (*text).to_string(),
            (None, Some(text)) => text.clone(),
            (None, None) => "(a panic without a message)".to_string(),
        };
        Err(BackendError::TermPanicked(message))
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
            Evaluation::Normal { .. } => Err(Evaluation::not_a_sum_of_squares()),
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
            Pass::Normal { .. } => Err(Evaluation::not_a_sum_of_squares()),
        }
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

    /// Chunks of [`row_block`] terms, fixed by the problem alone (never the thread count or
    /// the ranks), each summed by [`normal_partial`]: added in chunk order, the same bits for
    /// any number of threads or ranks.
    fn normal_partials(
        &mut self,
        sum: &mut CpuEvaluator<SumOfSquares<T>>,
        x: &[f64],
        jacobian: Gradient,
        share: Share,
    ) -> Result<Partials, BackendError> {
        catching_panics(|| {
            let problem = &sum.problem;
            let (n, data, terms) = (x.len(), problem.data(), problem.terms());
            let chunk = row_block(n, sum.planned_rows(share));
            let chunks = share.range(terms.div_ceil(chunk));
            let len = n * n + n;
            let normal_chunk = SchemePasses::<T>::of(jacobian).normal_chunk;
            let mut vectors = vec![0.0; chunks.len() * len];
            let values = each_chunk(
                vectors.chunks_mut(len).zip(chunks).collect(),
                |(vector, c)| {
                    normal_chunk(c * chunk..((c + 1) * chunk).min(terms), x, data, vector)
                },
            );
            Ok(Partials {
                values,
                vectors,
                layout: Layout::sums(len),
            })
        })
    }
}

/// One chunk's normal equations over `terms`, with rows made by `rows`: the upper triangle of
/// `JᵀJ` and then `Jᵀr` into `vector` (`n² + n`, zeroed); returns `Σ r²`. Dense terms of at
/// most [`NORMAL_LANES_WIDTH_MAX`] variables are summed eight rows at a time ([`NormalLanes`]).
fn chunk_partial<T: Term, J: JacobianRow>(
    terms: Range<usize>,
    x: &[f64],
    data: Data<'_>,
    rows: &mut J,
    vector: &mut [f64],
) -> f64 {
    let n = x.len();
    let (jtj, jtr) = vector.split_at_mut(n * n);
    let mut row = vec![0.0; T::WINDOW.stride_width(n).1];
    if matches!(T::WINDOW, Window::Dense) && n <= NORMAL_LANES_WIDTH_MAX {
        let mut scratch = vec![Lanes::splat(0.0); NormalLanes::scratch_len(n)];
        let mut partial = NormalLanes::new(&mut scratch, jtj, jtr);
        normal_partial::<T, J, _>(terms, x, data, rows, &mut partial, &mut row);
        partial.finish()
    } else {
        let mut partial = NormalPartial::new(jtj, jtr);
        normal_partial::<T, J, _>(terms, x, data, rows, &mut partial, &mut row);
        partial.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_kernels::terms::{ExtPowell, ExtRosenbrock, LsqExpSin, SeedExpSum};
    use gpu_kernels::{Central, Forward};

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
        let problem = TermProblem::<LsqExpSin>::with_data(n, values, rows).unwrap();
        let x = [1.9, 0.65, 0.4, -0.3, 0.3, -0.2, 0.1];
        let evaluator = CpuEvaluator::new(problem);
        fn check<S: FdScheme>(kind: Gradient, evaluator: &CpuEvaluator<LsqExpSin>, x: &[f64]) {
            let n = x.len();
            let data = evaluator.problem.data();
            let terms = evaluator.problem.terms();
            let mut g = vec![0.0; n];
            evaluator.gradient(x, kind, &mut g, false).unwrap();
            let mut reference = vec![0.0; n];
            for k in 0..terms {
                let term = DenseTerm::<LsqExpSin>::prepare::<S>(k, x, data);
                for (i, r) in reference.iter_mut().enumerate() {
                    *r += term.difference::<S>(x, i);
                }
            }
            // Both are finite differences of the same terms; they may differ only by rounding in
            // the term values: a few ε·Σ|φ_k| over the spacing.
            let sum_abs: f64 = (0..terms)
                .map(|k| term_value::<LsqExpSin>(k, x, data).abs())
                .sum();
            for (i, (gi, r)) in g.iter().zip(&reference).enumerate() {
                let spacing = S::steps(x[i]).spacing;
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
    }
}
