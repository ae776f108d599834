//! One small fit, whole: MINPACK's loop ([`solve`]) over the residual rows of one data set,
//! each row exact (on [`Dual`](crate::Dual)s, `row.rs`), folded into `R` by Householder
//! reflections [`BLOCK`] rows at a time. `J` is never squared: the normal equations by Cholesky
//! were faster, but squaring `J`'s condition number moved some fits off scipy's answers. It
//! borrows no memory but its stack, so a CPU task or a GPU thread runs one fit of a batch with
//! it, the same code on both, to the same bits. A fit runs in `f64` or, asked, in single
//! precision ([`Single`]): the rows, the fold and the loop alike, the data and the report read
//! and written as `f64`.

use super::{End, FactorAt, Passes, Settings, solve, work_len};
use crate::float::Float;
use crate::kernel::triangle::{Reflection, reflection};
use crate::raw::{Out, Thread};
use crate::single::Single;
use crate::term::{Data, Term, Vars};
use core::iter::StepBy;
use core::marker::PhantomData;
use core::ops::Range;

mod names;
mod row;
mod table;
pub use names::{PARAMS, POISSON_SUFFIX, SUFFIX, is_named};
use row::ExactRows;
pub use table::{BATCH_TABLE, batch_table};

/// The rows a fit folds at once into its triangle. Eight: a sweep over them is a constant
/// length, unrolled, its reflection's vector held in registers; on the GPU the block of rows
/// is a small part of a thread's stack. At least [`PARAMS_MAX`]: a block form's fold of
/// another thread's triangle takes its rows as one block.
pub const BLOCK: usize = 8;

/// The derivative lanes of a row's evaluation in `f64`. A GPU thread takes four, a row in two
/// evaluations past four parameters: eight held more values than its registers. A CPU core
/// takes eight, one vector register. The rows' bits are the same either way.
pub const LANES: usize = if cfg!(target_arch = "nvptx64") { 4 } else { 8 };

/// The same in single precision: eight on both, the registers of four doubles.
pub const SINGLE_LANES: usize = 8;

/// The threads of a block of a batch kernel's block form (`lm::block`), one fit per block: the
/// host launches blocks of this many. Its shared memory holds a triangle, `Qᵀr` and `Σ r²` per
/// thread.
pub const BLOCK_THREADS: usize = 64;

/// The most parameters a fit of a batch has: its triangle and the loop's memory are arrays of
/// this size on the stack.
pub const PARAMS_MAX: usize = 8;

/// Why a fit could not run, or stopped before its end: each a status below 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Its parameters are more than [`PARAMS_MAX`], none is free, or its free ones are more
    /// than its points.
    Shape,
    /// `Σ r²` at the start is not finite: NaN or ∞ in its data or its start.
    NonFiniteResiduals,
    /// `Σ r²` at the start underflowed while some residual is not 0.
    UnderflowingResiduals,
    /// The Jacobian at the point after `nit` steps is not finite.
    NonFiniteJacobian {
        /// Accepted steps before it.
        nit: usize,
    },
}

impl Failure {
    /// The status a batch reports for it.
    pub const fn code(self) -> i32 {
        match self {
            Failure::Shape => -1,
            Failure::NonFiniteResiduals => -3,
            Failure::UnderflowingResiduals => -4,
            Failure::NonFiniteJacobian { .. } => -5,
        }
    }

    /// The failure of status `code`, where it is one.
    pub const fn of_code(code: i32) -> Option<Failure> {
        match code {
            -1 => Some(Failure::Shape),
            -3 => Some(Failure::NonFiniteResiduals),
            -4 => Some(Failure::UnderflowingResiduals),
            -5 => Some(Failure::NonFiniteJacobian { nit: 0 }),
            _ => None,
        }
    }
}

/// Fits residual term `T` (a dense window) to `data` from `x` (its `n ≤` [`PARAMS_MAX`]
/// parameters, overwritten by the end point), by MINPACK's Levenberg–Marquardt with exact
/// rows. Parameter `j` is held at its start where bit `j` of `fixed` is set: the loop runs on
/// the function of the `k` free ones. `r` (`k × k`, row-major) receives `R` of `J = Q·R` in
/// the free parameters at the end point, from which `curve_fit`'s covariance follows. Every
/// term of `data` is one residual. It computes in `F`, `L` values side by side ([`LANES`] for
/// `f64`, [`SINGLE_LANES`] for [`Single`]; at least half of [`PARAMS_MAX`]). `T` is dense.
pub fn fit<T: Term, F: Float, const L: usize>(
    x: &mut [F],
    fixed: u64,
    data: Data<'_>,
    settings: &Settings,
    r: &mut [F],
) -> Result<End<F>, Failure> {
    fit_in::<T, F, L, Alone>(Alone(Thread::new(0, 1)), x, fixed, data, settings, r)
}

/// [`fit`] by `crew`: a thread alone, or a block's threads together, each taking its share of
/// the rows and all of them running the same loop on the whole's sums.
pub(super) fn fit_in<T: Term, F: Float, const L: usize, C: Crew>(
    crew: C,
    x: &mut [F],
    fixed: u64,
    data: Data<'_>,
    settings: &Settings,
    r: &mut [F],
) -> Result<End<F>, Failure> {
    let n = x.len();
    if n == 0 || n > PARAMS_MAX {
        return Err(Failure::Shape);
    }
    let mut passes = Rows::<T, F, L, C> {
        crew,
        data,
        r: [F::ZERO; PARAMS_MAX * PARAMS_MAX],
        qtr: [F::ZERO; PARAMS_MAX],
        n,
        k: 0,
        held: fixed & ((1 << n) - 1),
        whole: [F::ZERO; PARAMS_MAX],
        term: PhantomData,
    };
    let mut free_x = [F::ZERO; PARAMS_MAX];
    for (j, &value) in x.iter().enumerate() {
        passes.whole[j] = value;
        if fixed >> j & 1 == 0 {
            free_x[passes.k] = value;
            passes.k += 1;
        }
    }
    let k = passes.k;
    if k == 0 || T::terms(n, data) < k {
        return Err(Failure::Shape);
    }
    let mut memory = [F::ZERO; work_len(PARAMS_MAX)];
    let mut ipvt = [0; PARAMS_MAX];
    let end = solve(
        &mut passes,
        &mut free_x[..k],
        settings,
        &mut memory,
        &mut ipvt[..k],
    )?;
    x.copy_from_slice(&passes.whole(&free_x[..k])[..n]);
    r[..k * k].copy_from_slice(&passes.r[..k * k]);
    Ok(end)
}

/// What a batch kernel writes per fit after its end point's `n` parameters: the status
/// ([`LmStatus::code`](super::LmStatus::code) or [`Failure::code`]), `nfev`, `njev`, `nit`
/// and `Σ r²`; then `R` at the end point in its `k` free parameters, its upper triangle row
/// after row (`k(k + 1)/2` values), in the first of [`triangle_len`]`(n)` values.
pub const REPORT: usize = 5;

/// The values of an `n × n` upper triangle, row after row.
pub const fn triangle_len(n: usize) -> usize {
    n * (n + 1) / 2
}

/// The values a batch kernel writes per fit of `n` parameters.
pub const fn out_stride(n: usize) -> usize {
    n + REPORT + triangle_len(n)
}

/// A batch kernel's work for the fits `crew` takes (a thread's grid-stride loop, or a block's
/// fits in turn), one fit at a time, fits of `params = n` parameters; what
/// [`batch_kernel!`](crate::batch_kernel)'s entries run. Fit `f` has the points `offsets[f] ..
/// offsets[f + 1]` of all `N = offsets[F]`: it reads its table from `data` (`cols` columns of its
/// points, column after column, from `cols · offsets[f]`, where `data` holds `cols · N` values)
/// and its start from `starts[f·n ..]` (or from `starts` itself, where it holds `n` values that
/// every fit starts from), and writes [`out_stride`]`(n)` values to `out` from
/// `f · out_stride(n)`, in single precision where `single` is not 0, holding the parameters
/// whose bits are set in `fixed` at their starts. The offsets are whole numbers as `f64`s, exact
/// below 2⁵³. A fit's failure is its own status; no fit reads another's data.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn entry<T: Term, C: Crew>(
    crew: C,
    data: &[f64],
    offsets: &[f64],
    starts: &[f64],
    out: Out<'_>,
    params: u64,
    fixed: u64,
    ftol: f64,
    xtol: f64,
    gtol: f64,
    factor: f64,
    max_nfev: u64,
    single: u64,
) {
    let settings = Settings {
        ftol,
        xtol,
        gtol,
        factor,
        max_nfev: max_nfev as usize,
    };
    let batch = Tables {
        data,
        offsets,
        starts,
        out,
        n: params as usize,
    };
    fit_tasks::<T, C>(crew, batch, fixed, &settings, single != 0);
}

/// A batch's arrays, as a batch kernel takes them, for fits of `n` parameters.
#[derive(Clone, Copy)]
struct Tables<'a> {
    data: &'a [f64],
    offsets: &'a [f64],
    starts: &'a [f64],
    out: Out<'a>,
    n: usize,
}

/// The fits `crew` takes, each by `crew`: see [`entry`].
#[inline(always)]
fn fit_tasks<T: Term, C: Crew>(
    crew: C,
    batch: Tables<'_>,
    fixed: u64,
    settings: &Settings,
    single: bool,
) {
    let Tables {
        data,
        offsets,
        starts,
        out,
        n,
    } = batch;
    if n == 0 || n > PARAMS_MAX {
        return;
    }
    let fits = (out.len() / out_stride(n)).min(offsets.len().saturating_sub(1));
    let shared = starts.len() == n;
    if !shared && starts.len() < fits * n {
        return;
    }
    let total = offsets.get(fits).map_or(0, |&last| last as usize);
    let cols = data.len().checked_div(total).unwrap_or(0);
    let stride = out_stride(n);
    for f in crew.tasks(fits) {
        let (first, end) = (offsets[f] as usize, offsets[f + 1] as usize);
        // Offsets out of order or past the data leave the fit no points: it fails alone.
        let table = data.get(cols * first..cols * end).unwrap_or(&[]);
        let rows = if table.is_empty() { 0 } else { end - first };
        let own = Data::new(table, rows);
        let start = if shared {
            starts
        } else {
            &starts[f * n..(f + 1) * n]
        };
        let at = (out, f * stride);
        match single {
            true => fit_into::<T, Single, SINGLE_LANES, C>(crew, start, fixed, own, settings, at),
            false => fit_into::<T, f64, LANES, C>(crew, start, fixed, own, settings, at),
        }
    }
}

/// One fit of a batch in numbers `F`, from `start`, its report written to `out` from `first`.
/// Not inlined: with both precisions' loops in the kernel's own body, it spilled a quarter more.
#[inline(never)]
fn fit_into<T: Term, F: Float, const L: usize, C: Crew>(
    crew: C,
    start: &[f64],
    fixed: u64,
    data: Data<'_>,
    settings: &Settings,
    (out, first): (Out<'_>, usize),
) {
    let n = start.len();
    let mut x = [F::ZERO; PARAMS_MAX];
    for (x, &s) in x.iter_mut().zip(start) {
        *x = F::from_f64(s);
    }
    let mut r = [F::ZERO; PARAMS_MAX * PARAMS_MAX];
    let report = match fit_in::<T, F, L, C>(crew, &mut x[..n], fixed, data, settings, &mut r) {
        Ok(end) => [
            end.stop.code() as f64,
            end.nfev as f64,
            end.njev as f64,
            end.nit as f64,
            end.sum_of_squares.value(),
        ],
        Err(failure) => [failure.code() as f64, 0.0, 0.0, 0.0, f64::NAN],
    };
    // R's upper triangle in the `k` free parameters, row after row, then zeros to `n`'s.
    let k = n - (fixed & ((1 << n) - 1)).count_ones() as usize;
    let triangle = (0..k).flat_map(|i| r[i * k + i..(i + 1) * k].iter().map(|v| v.value()));
    let values = x[..n].iter().map(|v| v.value()).chain(report);
    let values = (values.chain(triangle))
        .chain(core::iter::repeat(0.0))
        .take(out_stride(n));
    if crew.leads() {
        for (i, v) in values.enumerate() {
            out.set(first + i, v);
        }
    }
}

/// Who computes a batch's fits: a thread alone ([`Alone`]), one fit after another, or on the
/// GPU a block's threads together (`lm::block::Together`), each fit by all of them. Every thread
/// of a crew runs the same loop on the same sums, so each barrier a crew's methods wait at is
/// met by all of them.
pub trait Crew: Copy {
    /// The fits, of `fits`, that this crew takes, in turn.
    fn tasks(self, fits: usize) -> StepBy<Range<usize>>;
    /// The terms, of `terms`, that this thread evaluates.
    fn share(self, terms: usize) -> StepBy<Range<usize>>;
    /// `R`, `Qᵀr` and `Σ r²` of the crew's rows, from this thread's own (`r`, `qtr` and `sum`,
    /// in `k = qtr.len()` free parameters), folded in a fixed order: every thread gets the
    /// whole's.
    fn combine<F: Float>(self, r: &mut [F], qtr: &mut [F], sum: F) -> F;
    /// The sum of every thread's `value`, in a fixed order.
    fn total<F: Float>(self, value: F) -> F;
    /// Whether this thread writes the fit's report.
    fn leads(self) -> bool;
}

/// A thread of a grid that computes its fits alone: every row, no one to wait for.
#[derive(Clone, Copy)]
pub struct Alone(pub Thread);

impl Crew for Alone {
    #[inline(always)]
    fn tasks(self, fits: usize) -> StepBy<Range<usize>> {
        self.0.grid_stride(fits)
    }

    #[inline(always)]
    fn share(self, terms: usize) -> StepBy<Range<usize>> {
        (0..terms).step_by(1)
    }

    #[inline(always)]
    fn combine<F: Float>(self, _r: &mut [F], _qtr: &mut [F], sum: F) -> F {
        sum
    }

    #[inline(always)]
    fn total<F: Float>(self, value: F) -> F {
        value
    }

    #[inline(always)]
    fn leads(self) -> bool {
        true
    }
}

/// One data set's residual passes in numbers `F`, in its free parameters, by `crew`: its
/// triangle on the stack.
struct Rows<'d, T, F, const L: usize, C> {
    crew: C,
    data: Data<'d>,
    /// `R`, `k × k`, row-major, in the first `k²` values.
    r: [F; PARAMS_MAX * PARAMS_MAX],
    qtr: [F; PARAMS_MAX],
    /// The parameters, `n`, of which `k` are free.
    n: usize,
    k: usize,
    /// The held parameters' bits, below `n`.
    held: u64,
    /// All `n` parameters, the held ones at their values; the free ones are written in turn.
    whole: [F; PARAMS_MAX],
    term: PhantomData<T>,
}

impl<T: Term, F: Float, const L: usize, C: Crew> Rows<'_, T, F, L, C> {
    /// All `n` parameters, the free ones at `x` (`k`), the held ones at their values.
    #[inline(always)]
    fn whole(&self, x: &[F]) -> [F; PARAMS_MAX] {
        let mut whole = self.whole;
        let mut free = x.iter();
        for (j, entry) in whole[..self.n].iter_mut().enumerate() {
            if self.held >> j & 1 == 0
                && let Some(&value) = free.next()
            {
                *entry = value;
            }
        }
        whole
    }

    /// `R` and `Qᵀr` in the free parameters at `x` by folding the rows [`BLOCK`] at a time
    /// (Householder, the triangle pass's reflections); `Σ r²`.
    fn fold_factor(&mut self, x: &[F]) -> F {
        let whole = self.whole(x);
        let Rows {
            crew,
            data,
            r,
            qtr,
            n,
            k,
            held,
            ..
        } = self;
        let (crew, n, k, data, held) = (*crew, *n, *k, *data, *held);
        let (r, qtr) = (&mut r[..k * k], &mut qtr[..k]);
        // The rows not yet folded, column by column: `J`'s column in free parameter `a` at
        // `a·BLOCK`, then the residuals. A column is contiguous, so that a reflection sweeps it
        // in vector steps. Here rather than in `Rows`: there it made a GPU thread's stack frame
        // larger.
        let mut block = [F::ZERO; BLOCK * (PARAMS_MAX + 1)];
        let columns = &mut block[..(k + 1) * BLOCK];
        r.fill(F::ZERO);
        qtr.fill(F::ZERO);
        let rows = ExactRows::<F, L>::new(&whole, n);
        let (mut filled, mut sum) = (0, F::ZERO);
        for term in crew.share(T::terms(n, data)) {
            let (jacobian, rest) = columns.split_at_mut(k * BLOCK);
            let residual = rows.row::<T>(term, data, |j, derivative| {
                // A free parameter's column: the free ones before it.
                if held >> j & 1 == 0 {
                    let a = j - (held & ((1 << j) - 1)).count_ones() as usize;
                    if let Some(entry) = jacobian.get_mut(a * BLOCK + filled) {
                        *entry = derivative;
                    }
                }
            });
            sum += residual * residual;
            rest[filled] = residual;
            filled += 1;
            if filled == BLOCK {
                fold_block(r, qtr, columns);
                filled = 0;
            }
        }
        if filled > 0 {
            // Rows of zeros change nothing, and keep every sweep BLOCK long.
            for column in columns.chunks_exact_mut(BLOCK) {
                column[filled..].fill(F::ZERO);
            }
            fold_block(r, qtr, columns);
        }
        crew.combine(r, qtr, sum)
    }
}

/// Folds the rows of `columns` (`J`'s `n` columns of [`BLOCK`] rows, then the residuals'; rows
/// past the data are zeros) into `R` (`n × n`, row-major, upper) and `Qᵀr`:
/// afterwards they are those of the stacked rows `[R; rows]`, and `columns` holds scratch. One
/// Householder reflection per column, the triangle pass's ([`reflection`]).
#[inline(always)]
pub(super) fn fold_block<F: Float>(r: &mut [F], qtr: &mut [F], columns: &mut [F]) {
    const { assert!(BLOCK >= PARAMS_MAX) };
    let n = qtr.len();
    for j in 0..n {
        let (column, rest) = columns[j * BLOCK..].split_at_mut(BLOCK);
        let Ok(v) = <&mut [F; BLOCK]>::try_from(column) else {
            return;
        };
        let Some(Reflection { beta, tau }) = reflection(r[j * n + j], v) else {
            continue;
        };
        // A copy, so that the compiler keeps it in registers across the columns.
        let v = *v;
        r[j * n + j] = beta;
        // Column k of the stacked rows: R's entry (j, k) above the rows' column k; k = n is
        // the residuals', with Qᵀr's entry j above.
        for (k, column) in (j + 1..).zip(rest.chunks_exact_mut(BLOCK)) {
            let Ok(column) = <&mut [F; BLOCK]>::try_from(column) else {
                return;
            };
            let top = if k < n { r[j * n + k] } else { qtr[j] };
            let w = top + dot(&v, column);
            if k < n {
                r[j * n + k] = top - tau * w;
            } else {
                qtr[j] = top - tau * w;
            }
            for (entry, &vi) in column.iter_mut().zip(&v) {
                *entry -= (tau * vi) * w;
            }
        }
    }
}

/// `Σ v_i·c_i` over a block's rows, the products added pairwise in a fixed tree: no chain of
/// additions waits on itself, and every target adds in the same order, whatever its lanes, so
/// a fit has the same bits on a GPU thread and a CPU core.
#[inline(always)]
fn dot<F: Float>(v: &[F; BLOCK], column: &[F; BLOCK]) -> F {
    // Written out for eight: a loop over the tree's levels kept the sums in memory.
    const { assert!(BLOCK == 8) };
    let p: [F; BLOCK] = core::array::from_fn(|i| v[i] * column[i]);
    let (q0, q1, q2, q3) = (p[0] + p[4], p[1] + p[5], p[2] + p[6], p[3] + p[7]);
    (q0 + q2) + (q1 + q3)
}

impl<T: Term, F: Float, const L: usize, C: Crew> Passes<F> for Rows<'_, T, F, L, C> {
    type Error = Failure;

    // Not inlined, here and below: a GPU thread's registers are allocated per function, and
    // the whole fit in one ran out of them.
    #[inline(never)]
    fn factor(&mut self, x: &[F], at: FactorAt) -> Result<F, Failure> {
        let k = self.k;
        let sum = self.fold_factor(x);
        let (r, qtr) = (&self.r[..k * k], &self.qtr[..k]);
        let finite = r.iter().chain(qtr).all(|v| v.is_finite());
        match at {
            FactorAt::Start if !sum.is_finite() => return Err(Failure::NonFiniteResiduals),
            FactorAt::Start
                if finite
                    && sum < F::MIN_POSITIVE / F::EPSILON
                    && qtr.iter().any(|&v| v != F::ZERO) =>
            {
                return Err(Failure::UnderflowingResiduals);
            }
            FactorAt::Start if !finite => return Err(Failure::NonFiniteJacobian { nit: 0 }),
            FactorAt::Iteration(nit) if !finite => return Err(Failure::NonFiniteJacobian { nit }),
            _ => {}
        }
        Ok(sum)
    }

    fn triangle(&self) -> (&[F], &[F]) {
        (&self.r[..self.k * self.k], &self.qtr[..self.k])
    }

    #[inline(never)]
    fn sum_of_squares(&mut self, x: &[F]) -> Result<F, Failure> {
        let whole = self.whole(x);
        let x = &whole[..self.n];
        let mut sum = F::ZERO;
        for term in self.crew.share(T::terms(self.n, self.data)) {
            let local = T::prepare(term, self.n, self.data);
            let residual = T::eval(Vars::new(x), &local).0;
            sum += residual * residual;
        }
        Ok(self.crew.total(sum))
    }
}
