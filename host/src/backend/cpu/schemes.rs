//! The gradient schemes as the CPU runs them: [`CpuScheme`], implemented for the scheme types of
//! `gpu_kernels::scheme`, and the chunk loops each scheme's passes are made of. A kind becomes
//! its scheme type in one match, generated from the scheme table ([`SchemePasses::of`]).

use super::plan::{GROUP_CHUNK, each_chunk};
use gpu_kernels::Gradient;
use gpu_kernels::kernel::exact::{
    Seeded, banded_group_gradient_exact, disjoint_exact_in_lanes, fill_constants, terms_in_lanes,
};
use gpu_kernels::kernel::loss::RobustLoss;
use gpu_kernels::kernel::normal::{
    DifferenceRow, ExactRow, JacobianRow, NORMAL_LANES_WIDTH_MAX, NormalLanes, NormalPartial,
    NormalSum, normal_partial,
};
use gpu_kernels::kernel::reverse::{
    ReverseRow, TAPE_STEPS_CPU, TAPE_WEIGHTS_CPU, TapeStorage, reverse_mode,
};
use gpu_kernels::kernel::triangle::{TriangleRows, fold_scratch_len};
use gpu_kernels::kernel::{CompensatedLanes, CompensatedRun, DenseTerm, banded_group_gradient};
use gpu_kernels::lanes::{LANES, Lanes, TERM_LANES};
use gpu_kernels::scheme::{Differences, Exact};
use gpu_kernels::{Data, Dual, FdScheme, StepBox, Term, Window};
use std::cell::RefCell;
use std::io::Write;
use std::marker::PhantomData;
use std::ops::Range;

/// A gradient scheme as the CPU runs it, over the work the window gives: one variable group
/// (banded windows), or a run of dense terms adding to a chunk's partials (which
/// [`Partials::gradient_into`] finishes).
pub(super) trait CpuScheme<T: Term> {
    /// A group's part of `∇f` into `g`, difference points within `bounds`; with `value`, the
    /// value of the term it owns. Implementations are `#[inline(always)]`: called once per
    /// variable from the chunk loops, a call per group is a large share of a cheap term's pass.
    fn group(
        group: usize,
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        g: &mut [f64],
        value: bool,
    ) -> f64;
    /// [`group`](CpuScheme::group) for groups `first .. first + TERM_LANES` (their slices of
    /// `∇f` end to end in `g`), with the same results: one group at a time unless the scheme
    /// can take their terms side by side.
    #[inline(always)]
    fn groups(
        first: usize,
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        g: &mut [f64],
        value: bool,
    ) -> [f64; TERM_LANES] {
        one_group_at_a_time::<T, Self>(first, x, data, bounds, g, value)
    }
    /// Adds `terms`' contributions to `acc`; with `value`, returns their values' sum.
    fn dense_terms(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        acc: &mut [f64],
        value: bool,
    ) -> f64;
    /// Residual term `T`'s rows over `terms`, with this scheme's Jacobian rows, reduced as
    /// `into` says into `vector` (see [`chunk_partial`]); returns `Σ r²`.
    fn rows_chunk(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        vector: &mut [f64],
        into: RowsInto,
    ) -> f64;
}

/// A scheme's CPU passes over term `T`, as functions of the scheme type that the table maps a
/// [`Gradient`] to: chosen once per pass, their work monomorphized inside.
pub(super) struct SchemePasses<T: Term> {
    /// [`group_chunks`] of the scheme.
    pub group_chunks: GroupChunks,
    /// [`dense_chunks`] of the scheme.
    pub dense_chunks: DenseChunks,
    /// [`CpuScheme::rows_chunk`] of the scheme.
    pub rows_chunk: RowsChunk,
    term: PhantomData<fn() -> T>,
}

/// [`CpuScheme::rows_chunk`] of one scheme: a chunk's `Σ r²`.
type RowsChunk = fn(Range<usize>, &[f64], Data<'_>, StepBox<'_>, &mut [f64], RowsInto) -> f64;
/// [`group_chunks`] of one scheme: the chunks' value sums.
type GroupChunks = fn(Data<'_>, &[f64], StepBox<'_>, usize, usize, &mut [f64], bool) -> Vec<f64>;
/// [`dense_chunks`] of one scheme: the chunks' value sums and vectors.
type DenseChunks =
    fn(Data<'_>, usize, &[f64], StepBox<'_>, usize, Range<usize>, bool) -> (Vec<f64>, Vec<f64>);

impl<T: Term> SchemePasses<T> {
    fn with<S: CpuScheme<T>>() -> Self {
        Self {
            group_chunks: group_chunks::<T, S>,
            dense_chunks: dense_chunks::<T, S>,
            rows_chunk: S::rows_chunk,
            term: PhantomData,
        }
    }
}

/// The one place the CPU turns a [`Gradient`] into its scheme type: a match generated from the
/// scheme table (`gpu_kernels::scheme`).
macro_rules! scheme_passes {
    ([$(($variant:ident $suffix:ident $help:literal => $ty:ty))*]) => {
        impl<T: Term> SchemePasses<T> {
            pub(super) fn of(gradient: Gradient) -> Self {
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
    bounds: StepBox<'_>,
    g: &mut [f64],
    value: bool,
) -> [f64; TERM_LANES] {
    let mut values = [0.0; TERM_LANES];
    let groups = g.chunks_exact_mut(g.len() / TERM_LANES).zip(first..);
    for (v, (group_g, group)) in values.iter_mut().zip(groups) {
        *v = S::group(group, x, data, bounds, group_g, value);
    }
    values
}

impl<T: Term, S: FdScheme> CpuScheme<T> for Differences<S> {
    #[inline(always)]
    fn group(
        group: usize,
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        g: &mut [f64],
        value: bool,
    ) -> f64 {
        banded_group_gradient::<T, S>(group, x, data, bounds, g, value)
    }

    fn dense_terms(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        acc: &mut [f64],
        value: bool,
    ) -> f64 {
        let mut sum = CompensatedRun::default();
        let mut lanes = DenseLanes::<T>::new(x);
        for k in terms {
            let term = DenseTerm::<T>::prepare::<S>(k, x, data);
            lanes.accumulate::<S>(&term, x, bounds, acc);
            if value {
                sum.add(term.value::<S>(x));
            }
        }
        sum.value()
    }

    fn rows_chunk(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        vector: &mut [f64],
        into: RowsInto,
    ) -> f64 {
        let rows = &mut DifferenceRow::<S>::new(bounds);
        chunk_partial::<T, _>(terms, x, data, rows, vector, into)
    }
}

/// The derivative lanes of `terms` at one seeding, summed in order; with `values`, their values
/// added to it. Kept out of line, one copy for both cases: the lanes' sums then stay in
/// registers through the chunk, and the term's `eval` is inlined into the loop, which ran far
/// slower inlined into its caller.
#[inline(never)]
fn seeded_terms<T: Term>(
    seeded: &Seeded<'_, DENSE_LANES>,
    terms: Range<usize>,
    x: &[f64],
    data: Data<'_>,
    values: Option<&mut CompensatedRun>,
) -> [f64; DENSE_LANES] {
    super::per_data_type!(data, seeded_terms_of::<T>(seeded, terms, x, data, values))
}

/// [`seeded_terms`], for one way the data are stored.
#[inline(always)]
fn seeded_terms_of<T: Term>(
    seeded: &Seeded<'_, DENSE_LANES>,
    terms: Range<usize>,
    x: &[f64],
    data: Data<'_>,
    mut values: Option<&mut CompensatedRun>,
) -> [f64; DENSE_LANES] {
    let mut lanes = [0.0; DENSE_LANES];
    for k in terms {
        let result = seeded.eval::<T>(&T::prepare(k, x.len(), data));
        for (l, d) in lanes.iter_mut().zip(result.derivatives) {
            *l += d;
        }
        if let Some(sum) = values.as_deref_mut() {
            sum.add(result.value);
        }
    }
    lanes
}

/// Derivative lanes per evaluation of a dense term on the CPU: more than the GPU's
/// `EXACT_LANES`, since memory for the window is no constraint here and each evaluation
/// repeats the term's non-derivative work (`cargo bench --bench kernels` compares the widths).
const DENSE_LANES: usize = 16;

impl<T: Term> CpuScheme<T> for Exact {
    #[inline(always)]
    fn group(
        group: usize,
        x: &[f64],
        data: Data<'_>,
        _: StepBox<'_>,
        g: &mut [f64],
        value: bool,
    ) -> f64 {
        banded_group_gradient_exact::<T>(group, x, data, g, value)
    }

    /// Side by side where the term allows it: one evaluation on lanes of eight terms, which
    /// the compiler vectorizes across them (`exp` included).
    #[inline(always)]
    fn groups(
        first: usize,
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        g: &mut [f64],
        value: bool,
    ) -> [f64; TERM_LANES] {
        if terms_in_lanes::<T>() {
            disjoint_exact_in_lanes::<T>(first, x, data, g)
        } else {
            one_group_at_a_time::<T, Self>(first, x, data, bounds, g, value)
        }
    }

    fn dense_terms(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        _: StepBox<'_>,
        acc: &mut [f64],
        value: bool,
    ) -> f64 {
        if reverse_mode::<T>(x.len()) {
            return dense_terms_reverse::<T>(terms, x, data, acc, value);
        }
        let mut sum = CompensatedRun::default();
        let mut window = vec![Dual::constant(0.0); x.len()];
        fill_constants(&mut window, x);
        // One seeding per group of lanes for all the chunk's terms (whose data then come from
        // cache after the first group); each variable still adds its terms in order.
        for first in (0..x.len()).step_by(DENSE_LANES) {
            let seeded = Seeded::<DENSE_LANES>::new(&mut window, first);
            let values = (value && first == 0).then_some(&mut sum);
            let lanes = seeded_terms::<T>(&seeded, terms.clone(), x, data, values);
            // `acc` holds zeros until now, so the bits are those of adding into it directly.
            for (a, l) in acc[first..].iter_mut().zip(lanes) {
                *a += l;
            }
        }
        sum.value()
    }

    /// Rows of at most four variables on `Dual<4>`, of at most eight on `Dual<8>`, wider ones
    /// on `Dual<DENSE_LANES>`, or in reverse mode where [`reverse_mode`] says.
    fn rows_chunk(
        terms: Range<usize>,
        x: &[f64],
        data: Data<'_>,
        _: StepBox<'_>,
        vector: &mut [f64],
        into: RowsInto,
    ) -> f64 {
        let width = T::WINDOW.stride_width(x.len()).1;
        if reverse_mode::<T>(width) {
            with_cpu_rows::<T, _>(x, data, |rows| {
                chunk_partial::<T, _>(terms, x, data, rows, vector, into)
            })
        } else if width <= 4 {
            let mut window = [Dual::<4>::constant(0.0); 4];
            let rows = &mut ExactRow::new::<T>(&mut window[..width], x);
            chunk_partial::<T, _>(terms, x, data, rows, vector, into)
        } else if width <= 8 {
            let mut window = [Dual::<8>::constant(0.0); 8];
            let rows = &mut ExactRow::new::<T>(&mut window[..width], x);
            chunk_partial::<T, _>(terms, x, data, rows, vector, into)
        } else {
            let mut window = vec![Dual::<DENSE_LANES>::constant(0.0); width];
            let rows = &mut ExactRow::new::<T>(&mut window, x);
            chunk_partial::<T, _>(terms, x, data, rows, vector, into)
        }
    }
}

/// A CPU tape's storage: 4096 steps and weights, 160 KiB.
type CpuTape = TapeStorage<TAPE_STEPS_CPU, TAPE_WEIGHTS_CPU>;

/// A worker thread's tape storage and sweep scratch, reused by every chunk it runs: made per
/// chunk, their clearing and copying (a memset and memmove per chunk) was a visible share of a
/// gradient pass.
struct ThreadTape {
    storage: Box<CpuTape>,
    adjoints: RefCell<Vec<f64>>,
}

thread_local! {
    static THREAD_TAPE: ThreadTape = ThreadTape {
        storage: Box::new(CpuTape::new()),
        adjoints: RefCell::new(Vec::new()),
    };
}

/// `f` with reverse-mode rows of dense term `T` at `x` over `data`, on this thread's tape;
/// overflows are taken forward on duals of `DENSE_LANES` lanes, and the first of a process
/// says so.
fn with_cpu_rows<T: Term, Out>(
    x: &[f64],
    data: Data<'_>,
    f: impl FnOnce(&mut ReverseRow<'_, '_, DENSE_LANES>) -> Out,
) -> Out {
    THREAD_TAPE.with(|thread| {
        let tape = thread.storage.tape(x, data.by_row());
        let window: Vec<_> = tape.variables().collect();
        // All zero: made so here, left so by every sweep (`Tape::sweep`).
        let mut adjoints = thread.adjoints.borrow_mut();
        adjoints.resize(TAPE_STEPS_CPU, 0.0);
        let mut forward = vec![Dual::<DENSE_LANES>::constant(0.0); x.len()];
        let forward = ExactRow::new::<T>(&mut forward, x);
        let mut rows = ReverseRow::new(&tape, &window, &mut adjoints, forward);
        let out = f(&mut rows);
        if rows.overflows > 0 {
            warn_tape_overflow::<T>();
        }
        out
    })
}

/// [`CpuScheme::dense_terms`] of the exact scheme in reverse mode: each term swept back into
/// `acc` directly ([`ReverseRow::add_gradient`]), term after term.
fn dense_terms_reverse<T: Term>(
    terms: Range<usize>,
    x: &[f64],
    data: Data<'_>,
    acc: &mut [f64],
    value: bool,
) -> f64 {
    with_cpu_rows::<T, _>(x, data, |rows| {
        let mut scratch = vec![0.0; x.len()];
        let mut sum = CompensatedRun::default();
        for k in terms {
            let term_value = rows.add_gradient::<T>(k, x, data, acc, &mut scratch);
            if value {
                sum.add(term_value);
            }
        }
        sum.value()
    })
}

/// Says once per process that a term's record overflowed the reverse-mode tape.
fn warn_tape_overflow<T: Term>() {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        // A warning only: a stderr that cannot be written does not stop the evaluation.
        let _ = writeln!(
            std::io::stderr(),
            "cudamin: a term of {} records more than {TAPE_STEPS_CPU} operations (or \
             {TAPE_WEIGHTS_CPU} weights); its exact gradient is taken in forward mode",
            std::any::type_name::<T>()
        );
    });
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

    /// `acc[i] += term's difference in variable i` within `bounds`, for every i.
    fn accumulate<S: FdScheme>(
        &mut self,
        term: &DenseTerm<'_, T>,
        x: &[f64],
        bounds: StepBox<'_>,
        acc: &mut [f64],
    ) {
        if T::EVAL_IN_LANES {
            for (first, acc) in (0..x.len()).step_by(LANES).zip(acc.chunks_mut(LANES)) {
                let differences = term.differences_in_lanes::<S>(&mut self.lanes, first, bounds);
                for (a, d) in acc.iter_mut().zip(differences) {
                    *a += d;
                }
            }
        } else {
            for (i, a) in acc.iter_mut().enumerate() {
                *a += term.difference::<S>(x, i, bounds);
            }
        }
    }
}

/// A banded gradient's chunks from `first` on, as many as `out` holds variables of (it starts at
/// chunk `first`'s first variable): each writes its groups' part of `∇f` and returns its terms'
/// value sum when `value` is set.
fn group_chunks<T: Term, S: CpuScheme<T>>(
    data: Data<'_>,
    x: &[f64],
    bounds: StepBox<'_>,
    first: usize,
    stride: usize,
    out: &mut [f64],
    value: bool,
) -> Vec<f64> {
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
            // large part of a cheap term's pass.
            for (group, block_g) in blocks {
                S::groups(group, x, data, bounds, block_g, false);
            }
            for (group, group_g) in groups {
                S::group(group, x, data, bounds, group_g, false);
            }
            return 0.0;
        }
        // Group i of the chunk owns its term i, which goes to running sum i mod 8 as in the
        // value pass: a block's eight at once, then the rest (at most eight) one each.
        let mut sum = CompensatedLanes::default();
        for (group, block_g) in blocks {
            sum.add_lanes(S::groups(group, x, data, bounds, block_g, true));
        }
        for (lane, (group, group_g)) in groups.enumerate() {
            sum.add_to(lane, S::group(group, x, data, bounds, group_g, true));
        }
        sum.value()
    })
}

/// A dense gradient's chunks `chunks` of `chunk` of the `terms` terms: their value sums, and
/// their vectors end to end.
fn dense_chunks<T: Term, S: CpuScheme<T>>(
    data: Data<'_>,
    terms: usize,
    x: &[f64],
    bounds: StepBox<'_>,
    chunk: usize,
    chunks: Range<usize>,
    value: bool,
) -> (Vec<f64>, Vec<f64>) {
    let n = x.len();
    let mut vectors = vec![0.0; chunks.len() * n];
    let values = each_chunk(vectors.chunks_mut(n).zip(chunks).collect(), |(acc, c)| {
        S::dense_terms(
            c * chunk..((c + 1) * chunk).min(terms),
            x,
            data,
            bounds,
            acc,
            value,
        )
    });
    (values, vectors)
}

/// What a chunk of residual rows is reduced to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum RowsInto {
    /// The normal equations: `JᵀJ` (upper triangle, `n × n`) then `Jᵀr`, `n² + n` values.
    NormalEquations,
    /// The triangle `R` (packed) then `Qᵀr`, `triangle_len(n)` values, of the rows rescaled for
    /// the loss.
    Triangle(RobustLoss),
}

/// One chunk's residual rows over `terms`, made by `rows`, reduced into `vector` as `into`
/// says; returns `Σ r²`. Normal equations of dense terms of at most
/// [`NORMAL_LANES_WIDTH_MAX`] variables are summed in eight running sums per entry
/// ([`NormalLanes`]).
fn chunk_partial<T: Term, J: JacobianRow>(
    terms: Range<usize>,
    x: &[f64],
    data: Data<'_>,
    rows: &mut J,
    vector: &mut [f64],
    into: RowsInto,
) -> f64 {
    let n = x.len();
    let width = T::WINDOW.stride_width(n).1;
    if let RowsInto::Triangle(loss) = into {
        let mut scratch = vec![0.0; fold_scratch_len(n)];
        let mut triangle = TriangleRows::new(n, vector, &mut scratch, loss);
        for k in terms {
            triangle.add_made(T::WINDOW.offset(k, n), width, |held| {
                rows.row::<T>(k, x, data, held)
            });
        }
        return triangle.finish();
    }
    let mut row = vec![0.0; width];
    let (jtj, jtr) = vector.split_at_mut(n * n);
    if matches!(T::WINDOW, Window::Dense) && n <= NORMAL_LANES_WIDTH_MAX {
        let mut scratch = vec![0.0; NormalLanes::scratch_len(n)];
        let mut partial = NormalLanes::new(&mut scratch, jtj, jtr);
        normal_partial::<T, J, _>(terms, x, data, rows, &mut partial, &mut row);
        partial.finish()
    } else {
        let mut partial = NormalPartial::new(jtj, jtr);
        normal_partial::<T, J, _>(terms, x, data, rows, &mut partial, &mut row);
        partial.finish()
    }
}
