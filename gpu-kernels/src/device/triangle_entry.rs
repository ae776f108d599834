//! The least-squares triangle entries' per-block work: each thread makes its term's residual
//! row, and the block folds the rows into its triangle in shared memory, or sums their
//! products into its Gram matrix.

use super::entry::{block_partials, block_value};
use crate::device::{SharedArray, block_dim, block_idx, grid_dim, sync_threads, thread_idx};
use crate::kernel::CompensatedSum;
use crate::kernel::gram::{Reduction, gram_len};
use crate::kernel::loss::RobustLoss;
use crate::kernel::normal::JacobianRow;
use crate::kernel::triangle::triangle_len;
use crate::kernel::triangle::{
    FOLD_ROWS_GPU, HELD_VALUES_GPU, Reflection, held_rows_gpu, packed_len, packed_row, reflection,
    row_width,
};
use crate::term::{Data, Term};

/// The shared array that holds a block's rows (its length is a literal in PTX): 17 KiB.
type Held = SharedArray<2176>;
const _: () = assert!(HELD_VALUES_GPU == 2176);

/// The block's [`Held`] rows: one declaration of the array, for each kernel that folds rows.
#[inline(always)]
fn held_rows() -> Held {
    crate::shared_array!(cudamin_fold_held, 2176)
}

/// Least-squares triangle of residual term `T` (dense, `n ≤ EXACT_DENSE_WIDTH_MAX_GPU`):
/// tile after tile of terms, one term per thread, each thread makes its term's residual and
/// Jacobian row (by `rows`) straight into the block's shared rows and rescales them there for
/// `loss`; then the block folds the tile's rows into its triangle [`FOLD_ROWS_GPU`] at a time,
/// in thread order, each reflection's later columns one per thread ([`fold_held`]); or, for
/// [`Reduction::Gram`], sums their products into its Gram matrix ([`gram_held`]). No row sits
/// in a thread's local memory. A tile is [`held_rows_gpu`] terms, or the block's threads where
/// there are fewer; the host launches no more threads than that, and any more would only help
/// fold. The block's packed `R` and `Qᵀr` (or its Gram matrix) go to `out`; the sum of the
/// points' costs `C²ρ(r²/C²)` to `values[block]`. The blocks' triangles are folded by
/// [`fold_triangle_pairs`], their Gram matrices added in block order by `SUM_BLOCK_VECTORS`.
///
/// # Safety
/// `out` holds `reduction.len(n) · gridDim` f64, `values` one slot per block.
#[inline(always)]
pub(super) unsafe fn triangle_partials<T: Term, J: JacobianRow>(
    x: &[f64],
    data: Data<'_>,
    (loss, reduction): (RobustLoss, Reduction),
    out: *mut f64,
    values: *mut f64,
    rows: &mut J,
) {
    let n = x.len();
    let terms = T::terms(n, data);
    let width = row_width(n);
    let mine = unsafe { block_partials(out, reduction.len(n)) };
    let held = held_rows();
    let tile_rows = held_rows_gpu(n).min(block_dim());
    let groups = tile_rows.div_ceil(FOLD_ROWS_GPU);
    let mut cost = CompensatedSum::default();
    let tiles = terms.div_ceil(tile_rows);
    let mut tile = block_idx();
    while tile < tiles {
        let first = tile * tile_rows;
        // Every thread is done with the last tile's rows (fold_held ends on a barrier). Thread
        // t makes row t of the tile: its term's, or zeros past the terms.
        let (t, k) = (thread_idx(), first + thread_idx());
        if t < tile_rows && k < terms {
            // SAFETY: row t of the held rows, in bounds (tile_rows ≤ held_rows_gpu(n) rows of
            // `width`), written by this thread alone until the barrier below.
            let row = unsafe {
                core::slice::from_raw_parts_mut(held.as_ptr().cast_mut().add(t * width), n)
            };
            let r = rows.row::<T>(k, x, data, row);
            let (rescaled, point_cost) = loss.rescale(r, row);
            cost.add(point_cost);
            held.set(t * width + n, rescaled);
        } else if t < tile_rows {
            zero_row(held, t * width, n);
        }
        // Rows past the tile in its last group (a block of part of a warp): zeros.
        let mut i = tile_rows + t;
        while i < groups * FOLD_ROWS_GPU {
            zero_row(held, i * width, n);
            i += block_dim();
        }
        sync_threads();
        if reduction == Reduction::Gram {
            unsafe { gram_held(mine, n, held, tile_rows, width) };
            tile += grid_dim();
            continue;
        }
        for group in 0..groups {
            // The same on every thread: the whole block leaves together.
            if first + group * FOLD_ROWS_GPU >= terms {
                break;
            }
            unsafe { fold_held(mine, n, held, group * FOLD_ROWS_GPU * width, width) };
        }
        tile += grid_dim();
    }
    unsafe { block_value(cost.value(), values) };
}

/// One level of a tree fold of `count` triangles (`R` packed, then `Qᵀr`: `triangle_len(n)`
/// values each, end to end): for each `k`, triangle `2k·stride` takes in triangle
/// `(2k + 1)·stride` where there is one. Block `k` (and every `gridDim` after) holds the other
/// triangle's rows in shared memory, [`FOLD_ROWS_GPU`] at a time, and folds them into its own
/// by [`fold_held`], as a block folds its residual rows. Levels at strides 1, 2, 4, … fold
/// every triangle into the first, in a fixed order.
///
/// # Safety
/// `triangles` holds `count · triangle_len(n)` f64; `n ≤ EXACT_DENSE_WIDTH_MAX_GPU`.
#[inline(always)]
pub(crate) unsafe fn fold_triangle_pairs(
    triangles: *mut f64,
    count: usize,
    stride: usize,
    n: usize,
) {
    let (len, width) = (triangle_len(n), row_width(n));
    let held = held_rows();
    let mut k = block_idx();
    while k < count.div_ceil(2 * stride) {
        let (first, other) = (2 * k * stride, (2 * k + 1) * stride);
        // The same on every thread of the block: the whole block skips a pair without one.
        if other < count {
            // SAFETY: triangles `first` and `other` lie within the `count`; this block alone
            // touches either at this level.
            let (mine, from) = unsafe { (triangles.add(first * len), triangles.add(other * len)) };
            for top in (0..n).step_by(FOLD_ROWS_GPU) {
                // Held row i is the other triangle's row top + i: zeros left of its diagonal,
                // its packed entries, then its Qᵀr entry in column n; zeros past its n rows.
                let mut at = thread_idx();
                while at < FOLD_ROWS_GPU * width {
                    let (i, column) = (at / width, at % width);
                    let row = top + i;
                    let value = if row >= n || column > n || (column < n && column < row) {
                        0.0
                    } else if column == n {
                        // SAFETY: Qᵀr's entry `row < n`, after the packed R.
                        unsafe { from.add(packed_len(n) + row).read() }
                    } else {
                        // SAFETY: entry `column ≥ row` of packed row `row`.
                        unsafe { from.add(packed_row(row, n) + column - row).read() }
                    };
                    held.set(at, value);
                    at += block_dim();
                }
                sync_threads();
                unsafe { fold_held(mine, n, held, 0, width) };
            }
        }
        k += grid_dim();
    }
}

/// Adds the products of the first `rows` held rows (each `width` values: `J`'s row, then the
/// residual) into the block's packed Gram matrix at `mine` ([`gram_len`]`(n)` values, entry
/// `(a, b)` with `a ≤ b ≤ n`, row after row). Thread `t` owns entries `t`, `t + blockDim`, …:
/// each adds its rows' products in row order, by fused multiply-adds. Every thread of the block
/// calls it (it ends on a barrier, after which `held` may be refilled).
///
/// # Safety
/// `mine` holds the block's `gram_len(n)` values, written by this block alone; `held` holds
/// `rows` rows of `width > n` values.
#[inline(always)]
unsafe fn gram_held(mine: *mut f64, n: usize, held: Held, rows: usize, width: usize) {
    let base = held.as_ptr();
    let mut entry = thread_idx();
    // Entry `entry` is (a, a + offset): row a of the packed triangle has n + 1 − a entries.
    let (mut a, mut offset) = (0, entry);
    while entry < gram_len(n) {
        while offset > n - a {
            offset -= n + 1 - a;
            a += 1;
        }
        let b = a + offset;
        // SAFETY: the block's own values; entry `entry` belongs to this thread alone.
        let mut sum = unsafe { mine.add(entry).read() };
        for i in 0..rows {
            // SAFETY: values `i·width + a` and `+ b` lie in the held rows (`a ≤ b ≤ n < width`),
            // which no thread writes until the barrier below.
            let (ja, jb) = unsafe {
                (
                    base.add(i * width + a).read(),
                    base.add(i * width + b).read(),
                )
            };
            sum = crate::math::fma(ja, jb, sum);
        }
        unsafe { mine.add(entry).write(sum) };
        entry += block_dim();
        offset += block_dim();
    }
    sync_threads();
}

/// Writes zeros over the `n + 1` values of the held row at `at`: a row that folds to nothing.
#[inline(always)]
fn zero_row(held: Held, at: usize, n: usize) {
    for j in 0..=n {
        held.set(at + j, 0.0);
    }
}

/// The shared array that holds a column's reflection for the whole block: its vector, then
/// `τ` and whether there is one (1) or not (0).
type Reflected = SharedArray<{ FOLD_ROWS_GPU + 2 }>;
const _: () = assert!(FOLD_ROWS_GPU + 2 == 34);

/// Folds the [`FOLD_ROWS_GPU`] rows of `held` from value `base` on (each `width` values: `J`'s
/// row, the residual, then values the fold never reads) into the block's packed triangle at
/// `mine` (`R`, then `Qᵀr`) as `kernel::triangle::fold_rows` does on the CPU: the same
/// reflections ([`reflection`]) and the same order of operations per column. Thread 0 computes
/// column `j`'s reflection from the held column, into shared memory, once for the block; then
/// column `k > j` (and `Qᵀr` as column `n`) is updated by thread `k − j − 1` (and every
/// `blockDim` after), its dot product over the rows in row order. A thread with no column
/// passes the two barriers and nothing else. The vector and the held rows are read and
/// written in place with plain loads and stores (no bounds checks, no volatile accesses): the
/// barriers order them. Every thread of the block calls it (it holds barriers), and it returns
/// once every thread is done with `held`.
///
/// # Safety
/// `mine` holds the block's `triangle_len(n)` values, written by this block alone; `held`
/// holds `FOLD_ROWS_GPU` rows of `width > n` values from `base`.
#[inline(always)]
unsafe fn fold_held(mine: *mut f64, n: usize, held: Held, base: usize, width: usize) {
    let qtr = unsafe { mine.add(packed_len(n)) };
    let reflected: Reflected = crate::shared_array!(cudamin_fold_reflection, 34);
    let (tau_at, some_at) = (FOLD_ROWS_GPU, FOLD_ROWS_GPU + 1);
    // SAFETY (for every access through `rows` below): value `i·width + k` with `i <
    // FOLD_ROWS_GPU` and `k ≤ n < width` lies in the held rows; between two barriers each
    // column is read and written by one thread alone.
    let rows = unsafe { held.as_ptr().cast_mut().add(base) };
    let vector = reflected.as_ptr().cast::<[f64; FOLD_ROWS_GPU]>();
    for j in 0..n {
        let start = packed_row(j, n);
        if thread_idx() == 0 {
            // SAFETY: the block's own triangle; the other threads wait at the barrier below.
            let diagonal = unsafe { mine.add(start).read_volatile() };
            // SAFETY: the array holds FOLD_ROWS_GPU f64 first, touched by this thread alone
            // until the barrier.
            let v = unsafe { &mut *vector.cast_mut() };
            for (i, vi) in v.iter_mut().enumerate() {
                *vi = unsafe { rows.add(i * width + j).read() };
            }
            let found = reflection(diagonal, v);
            let Reflection { beta, tau } = found.unwrap_or(Reflection {
                beta: diagonal,
                tau: 0.0,
            });
            reflected.set(tau_at, tau);
            reflected.set(some_at, if found.is_some() { 1.0 } else { 0.0 });
            // R_jj: no other thread reads it; without a reflection β is R_jj as it was.
            unsafe { mine.add(start).write_volatile(beta) };
        }
        // The reflection is written, and every thread has read column j and R_jj before any
        // is written.
        sync_threads();
        let mut column = j + 1 + thread_idx();
        // A column is updated only where there is a reflection: the flag is the same for
        // every thread, read by those with a column alone.
        if column <= n && reflected.get(some_at) != 0.0 {
            let tau = reflected.get(tau_at);
            // SAFETY: written by thread 0 before the barrier above, not again until the next.
            let v = unsafe { &*vector };
            while column <= n {
                // SAFETY: entry `column` of row j belongs to this thread alone until the
                // barrier.
                let entry = unsafe {
                    if column < n {
                        mine.add(start + column - j)
                    } else {
                        qtr.add(j)
                    }
                };
                let old = unsafe { entry.read_volatile() };
                let mut w = old;
                for (i, vi) in v.iter().enumerate() {
                    w += vi * unsafe { rows.add(i * width + column).read() };
                }
                unsafe { entry.write_volatile(old - tau * w) };
                for (i, vi) in v.iter().enumerate() {
                    let at = unsafe { rows.add(i * width + column) };
                    unsafe { at.write(at.read() - tau * vi * w) };
                }
                column += block_dim();
            }
        }
        // Every thread is done with this column's reflection before thread 0 writes the next.
        sync_threads();
    }
    // Every thread is done reading `held` before any returns to refill it. Each column ends
    // on a barrier, whether it has a reflection or not (a column that skipped its barriers
    // once let a fast thread's zeroing of the next rows race the others' reads of these); this
    // one covers `n = 0`.
    sync_threads();
}
