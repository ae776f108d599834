//! The Gauss–Newton normal equations of a sum of squares `f(x) = Σ_k r_k(x)²`, for
//! Levenberg–Marquardt: one pass over the residual terms accumulates `Σ r_k²`, `Jᵀr` and `JᵀJ`,
//! where row `k` of the Jacobian `J` is `∇r_k`. `J` itself (m × n, m the number of data points)
//! is never stored: each term's row lives only while its products are added, so the pass reads
//! the data once and keeps `n² + n` numbers per GPU block or CPU chunk (a CPU chunk of a dense
//! term adds its rows in turn into eight running sums per number, [`NormalLanes`]).
//!
//! A row is exact (the residual evaluated on [`Dual`]s, as for exact gradients), or made of
//! finite differences of the residual, term by term.

use super::exact::{SeedRuns, eval_seeded, fill_constants};
use super::{CompensatedLanes, CompensatedSum, SUM_LANES, window};
use crate::dual::{Dual, DualScalar};
use crate::fd::{FdScheme, StepBox};
use crate::term::{Data, Term, Window};
use core::marker::PhantomData;

/// One chunk's share of the normal equations of `n` variables: `JᵀJ` (row-major, `n × n`, upper
/// triangle only, until [`mirror_upper`]) and `Jᵀr`, each a plain running sum in term
/// order, and `Σ r_k²`, compensated.
pub struct NormalPartial<'a> {
    jtj: &'a mut [f64],
    jtr: &'a mut [f64],
    sum_of_squares: CompensatedSum,
}

impl<'a> NormalPartial<'a> {
    /// Zeroes `jtj` (`n²` entries) and `jtr` (`n`) and starts adding into them.
    #[inline(always)]
    pub fn new(jtj: &'a mut [f64], jtr: &'a mut [f64]) -> Self {
        jtj.fill(0.0);
        jtr.fill(0.0);
        NormalPartial {
            jtj,
            jtr,
            sum_of_squares: CompensatedSum::default(),
        }
    }
}

/// Where a CPU chunk's residuals and Jacobian rows go: summed into normal equations
/// ([`NormalLanes`] for dense windows of at most [`NORMAL_LANES_WIDTH_MAX`] variables,
/// [`NormalPartial`] for the others), or folded into a triangle
/// ([`TriangleRows`](super::triangle::TriangleRows)).
pub trait NormalSum {
    /// Adds residual `r` whose gradient is `row` over the variables `offset .. offset +
    /// row.len()` (the term's window; the rest of its Jacobian row is zero).
    fn add(&mut self, r: f64, offset: usize, row: &[f64]);

    /// `Σ r_k²` over the terms added, once the chunk's result is complete.
    fn finish(self) -> f64;
}

impl NormalSum for NormalPartial<'_> {
    #[inline(always)]
    fn add(&mut self, r: f64, offset: usize, row: &[f64]) {
        let n = self.jtr.len();
        self.sum_of_squares.add(r * r);
        for (a, &ja) in row.iter().enumerate() {
            let i = offset + a;
            self.jtr[i] += ja * r;
            let line = &mut self.jtj[i * n + offset..i * n + offset + row.len()];
            for (entry, &jb) in line.iter_mut().zip(row).skip(a) {
                *entry += ja * jb;
            }
        }
    }

    #[inline(always)]
    fn finish(self) -> f64 {
        self.sum_of_squares.value()
    }
}

/// The widest dense window whose normal equations the CPU sums on lanes ([`NormalLanes`]):
/// its `SUM_LANES` running sums per entry of `JᵀJ` take `64·n(n+1)/2` bytes per chunk, 133 KiB
/// at 64 variables.
pub const NORMAL_LANES_WIDTH_MAX: usize = 64;

/// A CPU chunk's share of the normal equations of a dense residual term: each entry of `JᵀJ` and
/// `Jᵀr` is kept in `SUM_LANES` running sums, the chunk's term `k` going to sum `k mod
/// SUM_LANES`, so that consecutive rows add into different sums and need not wait on each other.
/// The sums are laid out lane after lane, each lane's `JᵀJ` triangle contiguous, so that adding
/// a row is one contiguous multiply-add per row of the triangle, which the compiler vectorizes
/// across the variables (eight rows' sums side by side per entry made it gather and scatter,
/// which dominated a fit). [`finish`](NormalSum::finish) adds each entry's sums up in lane order
/// into the plain `JᵀJ` (upper triangle) and `Jᵀr`. `Σ r²` is a [`CompensatedLanes`].
pub struct NormalLanes<'a> {
    /// `JᵀJ`'s upper triangle, packed row after row (`(i, j ≥ i)`), once per lane.
    jtj_lanes: &'a mut [f64],
    /// `Jᵀr`, once per lane.
    jtr_lanes: &'a mut [f64],
    /// The lane the next term adds into.
    lane: usize,
    sum_of_squares: CompensatedLanes,
    /// Where [`finish`](NormalSum::finish) writes: `JᵀJ` (`n × n`, row-major) and `Jᵀr`.
    jtj: &'a mut [f64],
    jtr: &'a mut [f64],
}

impl<'a> NormalLanes<'a> {
    /// The values of scratch that [`new`](NormalLanes::new) needs for `n` variables.
    pub const fn scratch_len(n: usize) -> usize {
        SUM_LANES * (n * (n + 1) / 2 + n)
    }

    /// Starts a chunk over `n = jtr.len()` variables, writing into `jtj` (`n²`) and `jtr` at the
    /// end, with [`scratch_len`](NormalLanes::scratch_len)`(n)` values of `scratch`.
    pub fn new(scratch: &'a mut [f64], jtj: &'a mut [f64], jtr: &'a mut [f64]) -> Self {
        let n = jtr.len();
        scratch.fill(0.0);
        let (jtr_lanes, jtj_lanes) = scratch.split_at_mut(SUM_LANES * n);
        NormalLanes {
            jtj_lanes,
            jtr_lanes,
            lane: 0,
            sum_of_squares: CompensatedLanes::default(),
            jtj,
            jtr,
        }
    }
}

impl NormalSum for NormalLanes<'_> {
    /// `offset` is 0 and `row` the whole gradient: the term is dense.
    #[inline(always)]
    fn add(&mut self, r: f64, offset: usize, row: &[f64]) {
        debug_assert!(offset == 0 && row.len() == self.jtr.len());
        let n = row.len();
        let triangle = n * (n + 1) / 2;
        let lane = self.lane;
        let jtr = &mut self.jtr_lanes[lane * n..(lane + 1) * n];
        for (sum, &d) in jtr.iter_mut().zip(row) {
            *sum += d * r;
        }
        let mut entries = &mut self.jtj_lanes[lane * triangle..(lane + 1) * triangle];
        for (i, &row_i) in row.iter().enumerate() {
            let (line, rest) = entries.split_at_mut(n - i);
            for (entry, &row_j) in line.iter_mut().zip(&row[i..]) {
                *entry += row_i * row_j;
            }
            entries = rest;
        }
        self.sum_of_squares.add_to(lane, r * r);
        self.lane = (lane + 1) % SUM_LANES;
    }

    fn finish(self) -> f64 {
        let n = self.jtr.len();
        let triangle = n * (n + 1) / 2;
        let in_order = |lanes: &[f64], at: usize, stride: usize| {
            (0..SUM_LANES).fold(0.0, |total, l| total + lanes[l * stride + at])
        };
        let mut packed = 0;
        for i in 0..n {
            self.jtr[i] = in_order(self.jtr_lanes, i, n);
            for entry in &mut self.jtj[i * n + i..(i + 1) * n] {
                *entry = in_order(self.jtj_lanes, packed, triangle);
                packed += 1;
            }
        }
        self.sum_of_squares.value()
    }
}

/// How a Jacobian row is made, in numbers `F`: exactly, or by finite differences of the
/// residual.
pub trait JacobianRow<F = f64> {
    /// Residual term `k`'s value at `x`, and its gradient over the term's window into `row`
    /// (the window's width).
    fn row<T: Term>(&mut self, k: usize, x: &[F], data: Data<'_>, row: &mut [F]) -> F;
}

/// Exact rows: the residual on [`Dual`]s, `L` variables seeded per evaluation, in a window of
/// duals the caller provides (the term's width).
pub struct ExactRow<'w, const L: usize, S = f64> {
    /// Scratch for the term's window as duals, one per window variable.
    window: &'w mut [Dual<L, S>],
    /// Whether `window` already holds every term's window as constants: a dense window is all
    /// of `x`, the same for every term, so it is written once rather than at each term (for a
    /// fit of 10 parameters on 16 lanes, 1.4 KB of stores per point).
    shared: bool,
}

impl<'w, const L: usize, S: DualScalar> ExactRow<'w, L, S> {
    /// Rows of term `T` at `x` (every call of [`row`](JacobianRow::row) passes this `x`), in
    /// `window`, the term's width.
    #[inline(always)]
    pub fn new<T: Term>(window: &'w mut [Dual<L, S>], x: &[S]) -> Self {
        let shared = matches!(T::WINDOW, Window::Dense);
        if shared {
            fill_constants(window, x);
        }
        ExactRow { window, shared }
    }
}

impl<const L: usize, S: DualScalar> JacobianRow<S> for ExactRow<'_, L, S> {
    #[inline(always)]
    fn row<T: Term>(&mut self, k: usize, x: &[S], data: Data<'_>, row: &mut [S]) -> S {
        let local = T::prepare(k, x.len(), data);
        if !self.shared {
            fill_constants(self.window, window::<T, S>(x, k));
        }
        let mut r = S::from_f64(0.0);
        for first in (0..row.len()).step_by(L) {
            let result = eval_seeded::<T, L, S>(&local, self.window, first);
            for (entry, d) in row[first..].iter_mut().zip(result.derivatives) {
                *entry = d;
            }
            r = result.value;
        }
        r
    }
}

/// Exact rows of a dense term from a window every thread shares ([`SeedRuns`]): the GPU's,
/// whose threads then keep no window of their own. The same rows as [`ExactRow`], to the bit.
pub struct SharedExactRow<'s, const L: usize> {
    window: SeedRuns<'s, L>,
}

impl<'s, const L: usize> SharedExactRow<'s, L> {
    /// Rows of a dense term whose window, `x`, `window` holds.
    #[inline(always)]
    pub fn new(window: SeedRuns<'s, L>) -> Self {
        SharedExactRow { window }
    }
}

impl<const L: usize> JacobianRow for SharedExactRow<'_, L> {
    #[inline(always)]
    fn row<T: Term>(&mut self, k: usize, x: &[f64], data: Data<'_>, row: &mut [f64]) -> f64 {
        let local = T::prepare(k, x.len(), data);
        let mut r = 0.0;
        for first in (0..self.window.width()).step_by(L) {
            let result = self.window.eval::<T>(&local, first);
            // Lanes by constant index: a zip over the lanes by value kept them in local memory.
            for lane in 0..L {
                if let Some(entry) = row.get_mut(first + lane) {
                    *entry = result.derivatives[lane];
                }
            }
            r = result.value;
        }
        r
    }
}

/// Finite-difference rows with scheme `S`: the residual's difference in each variable of its
/// window, over the spacing, the residual's own evaluations alone, the points within `bounds`.
pub struct DifferenceRow<'b, S> {
    bounds: StepBox<'b>,
    scheme: PhantomData<S>,
}

impl<'b, S> DifferenceRow<'b, S> {
    /// Rows whose difference points stay within `bounds`.
    #[inline(always)]
    pub fn new(bounds: StepBox<'b>) -> Self {
        DifferenceRow {
            bounds,
            scheme: PhantomData,
        }
    }
}

impl<S: FdScheme> JacobianRow for DifferenceRow<'_, S> {
    #[inline(always)]
    fn row<T: Term>(&mut self, k: usize, x: &[f64], data: Data<'_>, row: &mut [f64]) -> f64 {
        let local = T::prepare(k, x.len(), data);
        let win = window::<T, _>(x, k);
        let offset = T::WINDOW.offset(k, x.len());
        let base = S::base::<T>(win, &local);
        for (j, entry) in row.iter_mut().enumerate() {
            let steps = S::steps(win[j], self.bounds.interval(offset + j));
            *entry = S::difference::<T>(win, j, &local, base, steps) / steps.spacing;
        }
        S::value::<T>(win, &local, base)
    }
}

/// Adds residual terms `terms` to `partial`, each row made by `rows` into `row` (the window's
/// width).
#[inline(always)]
pub fn normal_partial<T: Term, J: JacobianRow, S: NormalSum>(
    terms: impl Iterator<Item = usize>,
    x: &[f64],
    data: Data<'_>,
    rows: &mut J,
    partial: &mut S,
    row: &mut [f64],
) {
    let n = x.len();
    for k in terms {
        let r = rows.row::<T>(k, x, data, row);
        partial.add(r, T::WINDOW.offset(k, n), row);
    }
}

/// Fills `jtj`'s lower triangle from its upper one, once the partials are summed.
pub fn mirror_upper(jtj: &mut [f64], n: usize) {
    for i in 0..n {
        for j in 0..i {
            jtj[i * n + j] = jtj[j * n + i];
        }
    }
}
