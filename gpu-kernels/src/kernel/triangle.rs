//! Least squares reduced to a triangle (tall-skinny QR): a chunk's residual rows, `[J | r]`, are
//! folded by Householder reflections into an upper-triangular `R` (`n × n`) and `Qᵀr` (`n`),
//! where `J = Q·R` over the chunk's rows. `J` is never stored and never squared: MINPACK,
//! Ceres and scipy factor `J` itself, and so keeps its condition number; the normal equations
//! (`super::normal`) square it. Chunks' triangles fold into one another the same way, in
//! chunk order: stacked, `[R₁; R₂]` and `[Qᵀr₁; Qᵀr₂]` are the rows of a least-squares
//! problem with the same solution and the same `JᵀJ`.
//!
//! Rows are folded [`FOLD_ROWS`] at a time: each reflection then updates the rows' later
//! columns as contiguous multiply-adds along each row (which the compiler vectorizes), at
//! about twice the normal equations' multiply-adds per row.
//!
//! The triangle is packed row after row (`(i, j ≥ i)`, [`packed_len`] values), `Qᵀr` after it:
//! [`triangle_len`] values per chunk.

use super::exact::EXACT_DENSE_WIDTH_MAX_GPU;
use super::loss::RobustLoss;
use super::normal::NormalSum;
use super::{CompensatedLanes, SUM_LANES};
use crate::float::Float;
use crate::term::{Term, Window};

/// Whether the GPU's triangle pass takes residual term `T` with `n` variables: a dense window
/// of at most 64 (a block's shared rows, and for exact rows its shared window of duals, are
/// sized for 64). The CPU's takes any.
pub fn triangle_supported_on_gpu<T: Term>(n: usize) -> Result<(), &'static str> {
    match T::WINDOW {
        Window::Dense if n <= EXACT_DENSE_WIDTH_MAX_GPU => Ok(()),
        Window::Dense => Err(
            "the GPU's least-squares pass takes at most 64 variables; run Levenberg–Marquardt with --backend cpu",
        ),
        _ => Err(
            "the GPU's least-squares pass takes dense windows only; run Levenberg–Marquardt with --backend cpu",
        ),
    }
}

/// Rows the CPU folds into the triangle at once: each column's reflection then has that many
/// rows to update for its fixed work (its vector, norm and `R`'s row), and the held rows, 14 KiB
/// at 25 variables, stay in the first-level cache.
pub const FOLD_ROWS: usize = 64;

/// Rows a GPU block folds at once, held in shared memory (17 KiB at the widest window it takes).
pub const FOLD_ROWS_GPU: usize = 32;

/// The values of the shared array in which a GPU block holds its residual rows:
/// [`FOLD_ROWS_GPU`] rows at the widest window the GPU takes.
pub const HELD_VALUES_GPU: usize = FOLD_ROWS_GPU * row_width(EXACT_DENSE_WIDTH_MAX_GPU);

/// The rows a GPU block holds at once over `n` variables: as many as its held values take, in
/// whole groups of [`FOLD_ROWS_GPU`] (96 at 16 variables, 32 at 64). Each thread makes its row
/// straight into them, so the triangle pass runs at most this many threads per block.
pub const fn held_rows_gpu(n: usize) -> usize {
    HELD_VALUES_GPU / row_width(n) / FOLD_ROWS_GPU * FOLD_ROWS_GPU
}

/// The packed upper triangle of `n × n`: `n(n + 1)/2` values.
pub const fn packed_len(n: usize) -> usize {
    n * (n + 1) / 2
}

/// A chunk's factor: the packed `R` and `Qᵀr`.
pub const fn triangle_len(n: usize) -> usize {
    packed_len(n) + n
}

/// Where row `i` of a packed upper triangle of `n × n` starts (its entry `(i, i)`).
#[inline(always)]
pub const fn packed_row(i: usize, n: usize) -> usize {
    i * n - i * i.saturating_sub(1) / 2
}

/// The values a held row takes: `J`'s row, its residual, then zeros to a multiple of four, so
/// that every pass along a row is whole groups of four.
pub const fn row_width(n: usize) -> usize {
    (n + 1).next_multiple_of(4)
}

/// Scratch for folding rows over `n` variables: [`FOLD_ROWS`] rows of [`row_width`] values and
/// one vector of as many.
pub const fn fold_scratch_len(n: usize) -> usize {
    (FOLD_ROWS + 1) * row_width(n)
}

/// Folds the `held` rows in `scratch` into the triangle `r` (packed, `n = qtr.len()`) and
/// `qtr`: the first `held ≤` [`FOLD_ROWS`] rows of [`row_width`]`(n)` values are `J`'s rows,
/// each followed by its residual and zeros; the rest is work space. Afterwards `r` and `qtr`
/// are those of the stacked rows `[R; rows]`, and the rows hold scratch. A chunk's last,
/// partly filled fold (all of a small fit's rows) then works on its rows alone.
///
/// Column `j`'s reflection `H = I − τ·v·vᵀ` maps `(R_jj, rows' column j)` to `(β, 0)`, with
/// `v = (1, column/(R_jj − β))`, `β = −sign(R_jj)·‖(R_jj, column)‖` and `τ = (β − R_jj)/β`
/// (LAPACK's `dlarfg` convention, so `R_jj − β` never cancels). A column with nothing below
/// `R_jj` to annihilate is left alone. Where the squares would overflow or underflow, the norm
/// is taken of values scaled by the column's largest. Applying `H` to the later columns is two
/// passes along the rows (`w = R_j· + vᵀ·rows`, then `rows −= τ·v·wᵀ`) in whole groups of four
/// columns from the group holding column `j + 1`: the few columns before it in that group are
/// done columns, never read again, and computing them too keeps the loops free of remainders.
#[inline(always)]
pub fn fold_rows(r: &mut [f64], qtr: &mut [f64], scratch: &mut [f64], held: usize) {
    let n = qtr.len();
    let width = row_width(n);
    let (rows, w) = scratch.split_at_mut(FOLD_ROWS * width);
    let rows = &mut rows[..held.min(FOLD_ROWS) * width];
    let mut v = [0.0; FOLD_ROWS];
    for j in 0..n {
        for (vi, row) in v.iter_mut().zip(rows.chunks_exact(width)) {
            *vi = row[j];
        }
        let start = packed_row(j, n);
        let Some(Reflection { beta, tau }) = reflection(r[start], &mut v) else {
            continue;
        };
        r[start] = beta;
        // w = (R's row j, qtr_j) over the columns j + 1 ..= n, 0 elsewhere, plus vᵀ·rows.
        let first = (j + 1) & !3;
        let r_row = &mut r[start + 1..start + n - j];
        w.fill(0.0);
        w[j + 1..n].copy_from_slice(r_row);
        w[n] = qtr[j];
        add_transposed_product(&mut w[first..], &v, rows, width, first);
        for (entry, &wk) in r_row.iter_mut().zip(&w[j + 1..n]) {
            *entry -= tau * wk;
        }
        qtr[j] -= tau * w[n];
        subtract_outer_product(rows, &v, tau, &w[first..], width, first);
    }
}

/// A Householder reflection `H = I − τ·v·vᵀ` that maps `(R_jj, column)` to `(β, 0)` (see
/// [`fold_rows`]).
#[derive(Clone, Copy)]
pub struct Reflection<F = f64> {
    /// The new diagonal entry.
    pub beta: F,
    /// `τ`.
    pub tau: F,
}

/// Column `j`'s reflection, from its diagonal entry `R_jj` and the held rows' column `v`, which
/// becomes the reflection's vector below its leading 1; `None` (and `v` unchanged) where the
/// column has nothing below the diagonal to annihilate. Shared by the CPU's fold and the GPU's
/// (`M` rows each, [`FOLD_ROWS`] and [`FOLD_ROWS_GPU`]), so that both reflect alike.
#[inline(always)]
pub fn reflection<F: Float, const M: usize>(diagonal: F, v: &mut [F; M]) -> Option<Reflection<F>> {
    let below = sum_of_squares(v);
    if below == F::ZERO {
        return None;
    }
    let norm = norm_of(diagonal, below, v);
    let beta = if diagonal >= F::ZERO { -norm } else { norm };
    let tau = (beta - diagonal) / beta;
    let inverse_divisor = F::ONE / (diagonal - beta);
    for x in v.iter_mut() {
        *x *= inverse_divisor;
    }
    Some(Reflection { beta, tau })
}

/// `$group::<Q>(slice, args…, column)` for each group of up to sixteen of the columns from
/// `$first` whose values `$w` holds (a multiple of four), `slice` that group's part of `$w` and
/// `Q` its groups of four: a constant, so that the group's values stay in registers across the
/// rows. One dispatch for [`fold_rows`]'s two passes over the rows.
macro_rules! by_column_groups {
    ($w:expr, $chunks:ident, $first:expr, $group:ident($($arg:expr),*)) => {
        for (group, column) in $w.$chunks(16).zip(($first..).step_by(16)) {
            match group.len() / 4 {
                4 => $group::<4>(group, $($arg,)* column),
                3 => $group::<3>(group, $($arg,)* column),
                2 => $group::<2>(group, $($arg,)* column),
                _ => $group::<1>(group, $($arg,)* column),
            }
        }
    };
}

/// `w += rowsᵀ·v` over the columns `first ..` of the rows (`width` values each, `w` as long as
/// the columns, a multiple of four): up to sixteen columns at a time kept in registers across
/// the rows (adding row by row into `w` in memory made each row wait on the previous one's
/// stores, `perf`). Each column's sum is a chain of one multiply-add per row; sweeping four
/// groups of four columns at once lets four chains overlap where one waited on itself.
#[inline(always)]
fn add_transposed_product(
    w: &mut [f64],
    v: &[f64; FOLD_ROWS],
    rows: &[f64],
    width: usize,
    first: usize,
) {
    by_column_groups!(w, chunks_mut, first, add_columns(v, rows, width));
}

/// [`add_transposed_product`] over `4·Q` columns from `column`.
#[inline(always)]
fn add_columns<const Q: usize>(
    w: &mut [f64],
    v: &[f64; FOLD_ROWS],
    rows: &[f64],
    width: usize,
    column: usize,
) {
    let mut sums: [[f64; 4]; Q] =
        core::array::from_fn(|q| [w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]]);
    for (&vi, row) in v.iter().zip(rows.chunks_exact(width)) {
        for (sum, x) in sums
            .iter_mut()
            .zip(row[column..column + 4 * Q].chunks_exact(4))
        {
            for lane in 0..4 {
                sum[lane] += vi * x[lane];
            }
        }
    }
    for (quad, sum) in w.chunks_exact_mut(4).zip(sums) {
        quad.copy_from_slice(&sum);
    }
}

/// `rows −= τ·v·wᵀ` over the columns `first ..` of the rows (`w` as long as the columns, a
/// multiple of four), each element as `x − (τ·vᵢ)·w_k`: up to sixteen columns at a time, their
/// `w` kept in registers across the rows. Row by row over the whole tail, each row's loop of at
/// most seven groups of four paid its own length and overlap checks, and that loop was a large
/// part of a fold (`perf`).
#[inline(always)]
fn subtract_outer_product(
    rows: &mut [f64],
    v: &[f64; FOLD_ROWS],
    tau: f64,
    w: &[f64],
    width: usize,
    first: usize,
) {
    by_column_groups!(w, chunks, first, subtract_columns(rows, v, tau, width));
}

/// [`subtract_outer_product`] over `4·Q` columns from `column`.
#[inline(always)]
fn subtract_columns<const Q: usize>(
    w: &[f64],
    rows: &mut [f64],
    v: &[f64; FOLD_ROWS],
    tau: f64,
    width: usize,
    column: usize,
) {
    let w: [[f64; 4]; Q] =
        core::array::from_fn(|q| [w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]]);
    for (&vi, row) in v.iter().zip(rows.chunks_exact_mut(width)) {
        let tv = tau * vi;
        for (quad, wq) in (row[column..column + 4 * Q].chunks_exact_mut(4)).zip(&w) {
            for lane in 0..4 {
                quad[lane] -= tv * wq[lane];
            }
        }
    }
}

/// `Σ v_i²`, in four running sums (a chain of additions per column was most of a fold's
/// time, `perf`).
#[inline(always)]
fn sum_of_squares<F: Float, const M: usize>(v: &[F; M]) -> F {
    let mut lanes = [F::ZERO; 4];
    for chunk in v.chunks_exact(4) {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane += x * x;
        }
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3])
}

/// `‖(diagonal, v)‖`, given `below = Σ v_i²`: directly where the squares neither overflow nor
/// lose their digits to underflow, else of the values scaled by the largest.
#[inline(always)]
fn norm_of<F: Float, const M: usize>(diagonal: F, below: F, v: &[F; M]) -> F {
    let squares = diagonal * diagonal + below;
    if squares.is_finite() && squares > F::MIN_POSITIVE / F::EPSILON {
        return squares.sqrt();
    }
    let scale = v.iter().fold(diagonal.abs(), |m, &x| m.max(x.abs()));
    if scale == F::ZERO || !scale.is_finite() {
        return scale;
    }
    let inverse = F::ONE / scale;
    let scaled: F = v.iter().map(|&x| (x * inverse) * (x * inverse)).sum();
    scale * ((diagonal * inverse) * (diagonal * inverse) + scaled).sqrt()
}

/// Folds triangle `other` (packed, with its `other_qtr`) into `r` and `qtr`, `FOLD_ROWS` rows
/// at a time through `scratch` ([`fold_scratch_len`]): how chunks' factors merge, in chunk
/// order.
pub fn fold_triangle(
    r: &mut [f64],
    qtr: &mut [f64],
    other: &[f64],
    other_qtr: &[f64],
    scratch: &mut [f64],
) {
    let n = qtr.len();
    let width = row_width(n);
    for first in (0..n).step_by(FOLD_ROWS) {
        scratch.fill(0.0);
        let rows = first..(first + FOLD_ROWS).min(n);
        let held = rows.len();
        for (row, i) in scratch.chunks_exact_mut(width).zip(rows) {
            row[i..n].copy_from_slice(&other[packed_row(i, n)..packed_row(i, n) + n - i]);
            row[n] = other_qtr[i];
        }
        fold_rows(r, qtr, scratch, held);
    }
}

/// A CPU chunk's residual rows folded into its triangle: rows are held [`FOLD_ROWS`] at a time,
/// then folded ([`fold_rows`]); each row is first rescaled for the robust loss, and the
/// points' costs `C²ρ(r²/C²)` (`r²` for the linear loss) are summed as the normal equations
/// sum `Σ r²`, in a [`CompensatedLanes`].
pub struct TriangleRows<'a> {
    /// The packed `R`.
    r: &'a mut [f64],
    qtr: &'a mut [f64],
    /// The rows held, then work space (see [`fold_rows`]).
    scratch: &'a mut [f64],
    held: usize,
    sum_of_squares: CompensatedLanes,
    loss: RobustLoss,
}

impl<'a> TriangleRows<'a> {
    /// Starts a chunk's triangle in `factor` ([`triangle_len`]`(n)` values, zeroed here), with
    /// [`fold_scratch_len`]`(n)` values of `scratch`, its rows rescaled for `loss`.
    pub fn new(n: usize, factor: &'a mut [f64], scratch: &'a mut [f64], loss: RobustLoss) -> Self {
        factor.fill(0.0);
        scratch.fill(0.0);
        let (r, qtr) = factor.split_at_mut(packed_len(n));
        TriangleRows {
            r,
            qtr,
            scratch,
            held: 0,
            sum_of_squares: CompensatedLanes::default(),
            loss,
        }
    }

    fn fold(&mut self) {
        fold_rows(self.r, self.qtr, self.scratch, self.held);
        self.scratch.fill(0.0);
        self.held = 0;
    }
}

impl TriangleRows<'_> {
    /// Adds the row `make` writes in place, into the `len` variables from `offset` (the term's
    /// window), returning its residual: no copy of the row (a copy per row showed in profiles).
    #[inline(always)]
    pub fn add_made(&mut self, offset: usize, len: usize, make: impl FnOnce(&mut [f64]) -> f64) {
        let n = self.qtr.len();
        let width = row_width(n);
        let held = &mut self.scratch[self.held * width..(self.held + 1) * width];
        let row = &mut held[offset..offset + len];
        let r = make(row);
        let (rescaled, cost) = self.loss.rescale(r, row);
        held[n] = rescaled;
        self.sum_of_squares.add_to(self.held % SUM_LANES, cost);
        self.held += 1;
        if self.held == FOLD_ROWS {
            self.fold();
        }
    }
}

impl NormalSum for TriangleRows<'_> {
    #[inline(always)]
    fn add(&mut self, r: f64, offset: usize, row: &[f64]) {
        self.add_made(offset, row.len(), |held| {
            held.copy_from_slice(row);
            r
        });
    }

    fn finish(mut self) -> f64 {
        if self.held > 0 {
            self.fold();
        }
        self.sum_of_squares.value()
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// `RᵀR` of a packed triangle, `n × n` row-major.
    fn gram(r: &[f64], n: usize) -> Vec<f64> {
        let at = |i: usize, j: usize| {
            if j < i {
                0.0
            } else {
                r[packed_row(i, n) + j - i]
            }
        };
        let mut g = vec![0.0; n * n];
        for a in 0..n {
            for b in 0..n {
                g[a * n + b] = (0..n).map(|k| at(k, a) * at(k, b)).sum();
            }
        }
        g
    }

    #[test]
    fn folded_rows_keep_the_gram_matrix_and_the_projection() {
        // J (5 × 3) and r, by hand: JᵀJ and Jᵀr must be RᵀR and Rᵀ(Qᵀr).
        let j = [
            [1.0, 2.0, 0.5],
            [0.0, -1.0, 3.0],
            [4.0, 0.0, 1.0],
            [1.0, 1.0, 1.0],
            [-2.0, 0.5, 0.0],
        ];
        let res = [0.3, -1.0, 2.0, 0.5, 1.5];
        let n = 3;
        let mut factor = vec![0.0; triangle_len(n)];
        let mut scratch = vec![0.0; fold_scratch_len(n)];
        let mut rows = TriangleRows::new(n, &mut factor, &mut scratch, RobustLoss::default());
        for (row, &ri) in j.iter().zip(&res) {
            rows.add(ri, 0, row);
        }
        let sum_of_squares = rows.finish();
        assert_eq!(sum_of_squares, res.iter().map(|v| v * v).sum::<f64>());
        let (r, qtr) = factor.split_at(packed_len(n));
        let g = gram(r, n);
        for a in 0..n {
            for b in 0..n {
                let jtj: f64 = j.iter().map(|row| row[a] * row[b]).sum();
                assert!((g[a * n + b] - jtj).abs() < 1e-13, "({a},{b})");
            }
            let jtr: f64 = j.iter().zip(&res).map(|(row, ri)| row[a] * ri).sum();
            let rtq: f64 = (0..=a).map(|k| r[packed_row(k, n) + a - k] * qtr[k]).sum();
            assert!((rtq - jtr).abs() < 1e-13, "{a}");
        }
    }

    #[test]
    fn a_folded_triangle_is_the_stacked_rows() {
        let n = 2;
        let rows_a = [[3.0, 1.0], [0.0, 2.0]];
        let rows_b = [[1.0, -1.0], [2.0, 5.0], [0.5, 0.5]];
        let (ra, rb) = ([1.0, 2.0], [-1.0, 0.0, 3.0]);
        let fold = |rows: &[[f64; 2]], res: &[f64]| {
            let mut factor = vec![0.0; triangle_len(n)];
            let mut scratch = vec![0.0; fold_scratch_len(n)];
            let mut t = TriangleRows::new(n, &mut factor, &mut scratch, RobustLoss::default());
            for (row, &v) in rows.iter().zip(res) {
                t.add(v, 0, row);
            }
            t.finish();
            factor
        };
        let mut merged = fold(&rows_a, &ra);
        let other = fold(&rows_b, &rb);
        let mut scratch = vec![0.0; fold_scratch_len(n)];
        let (r, qtr) = merged.split_at_mut(packed_len(n));
        let (other_r, other_qtr) = other.split_at(packed_len(n));
        fold_triangle(r, qtr, other_r, other_qtr, &mut scratch);
        let all: Vec<[f64; 2]> = rows_a.iter().chain(&rows_b).copied().collect();
        let res: Vec<f64> = ra.iter().chain(&rb).copied().collect();
        let whole = fold(&all, &res);
        let g = gram(r, n);
        let g_whole = gram(&whole[..packed_len(n)], n);
        for (a, b) in g.iter().zip(&g_whole) {
            assert!((a - b).abs() < 1e-13);
        }
    }
}
