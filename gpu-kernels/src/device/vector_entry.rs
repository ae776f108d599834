//! The vector kernels of a solver that keeps its vectors on the device, and the kernels that
//! sum per-block partials. Each is exported once under its `cudamin_` name. Arguments: `n`
//! first, then scalars and vectors in the order of their formulas.

use crate::device::{
    block_idx, block_reduce, block_reduce_sum, global_thread_idx, grid_dim, grid_stride, slice,
    thread_idx,
};
use crate::kernel::{DOTS_SWEEP, GRAM_TILE, nan_max, sum_in_order};

/// `|a|` and `|b|`'s maximum, NaN when either is NaN (an ∞-norm must not hide a NaN).
#[inline(always)]
fn max_abs_nan(a: f64, b: f64) -> f64 {
    nan_max(a.abs(), b.abs())
}

/// `y ← y + alpha·x`.
#[inline(always)]
pub(crate) unsafe fn axpy(n: usize, alpha: f64, x: *const f64, y: *mut f64) {
    for i in grid_stride(n) {
        // SAFETY: the launcher passes vectors of `n` f64; each thread owns its `i`.
        unsafe { *y.add(i) = *y.add(i) + alpha * *x.add(i) };
    }
}

/// `v ← alpha·v`.
#[inline(always)]
pub(crate) unsafe fn scale(n: usize, alpha: f64, v: *mut f64) {
    for i in grid_stride(n) {
        // SAFETY: as in `axpy`.
        unsafe { *v.add(i) = alpha * *v.add(i) };
    }
}

/// `out ← x + step·p`: a point on the line search's ray.
#[inline(always)]
pub(crate) unsafe fn ray_point(n: usize, x: *const f64, step: f64, p: *const f64, out: *mut f64) {
    for i in grid_stride(n) {
        // SAFETY: as in `axpy`.
        unsafe { *out.add(i) = *x.add(i) + step * *p.add(i) };
    }
}

/// `old ← new − old`: a gradient change `y = g₊ − g` in the old gradient's place.
#[inline(always)]
pub(crate) unsafe fn difference(n: usize, new: *const f64, old: *mut f64) {
    for i in grid_stride(n) {
        // SAFETY: as in `axpy`.
        unsafe { *old.add(i) = *new.add(i) - *old.add(i) };
    }
}

/// `w ← 1/σ`: a fit's weights from its standard deviations ([`weight`](super::weight)); all 1
/// where `sigma` is null.
#[inline(always)]
pub(crate) unsafe fn weights(n: usize, sigma: *const f64, w: *mut f64) {
    for i in grid_stride(n) {
        let weight = if sigma.is_null() {
            1.0
        } else {
            // SAFETY: as in `axpy`; a non-null `sigma` holds `n` f64.
            super::weight(unsafe { *sigma.add(i) })
        };
        // SAFETY: as in `axpy`.
        unsafe { *w.add(i) = weight };
    }
}

/// `to[i] ← from[i·stride]`: a column of a row-major table, gathered where it lies.
#[inline(always)]
pub(crate) unsafe fn strided_copy(n: usize, from: *const f64, stride: usize, to: *mut f64) {
    for i in grid_stride(n) {
        // SAFETY: the launcher passes `from` holding `(n − 1)·stride + 1` f64 and `to` `n`.
        unsafe { *to.add(i) = *from.add(i * stride) };
    }
}

/// `to[indices[r]] ← from[r]` for the `count` indices (`u64` words, distinct) at
/// `indices`: a solve's free variables written into the whole point.
#[inline(always)]
pub(crate) unsafe fn place(count: usize, indices: *const u64, from: *const f64, to: *mut f64) {
    for r in grid_stride(count) {
        // SAFETY: the launcher passes `count` distinct indices within `to`, and `count`
        // values at `from`; each thread writes its own index's slot.
        unsafe {
            let i = indices.add(r).read() as usize;
            *to.add(i) = *from.add(r);
        }
    }
}

/// `partials[block] = Σ a_i·b_i` over the block's grid-stride share; [`sum_in_order`]
/// finishes the dot product.
#[inline(always)]
pub(crate) unsafe fn dot_partials(n: usize, a: *const f64, b: *const f64, partials: *mut f64) {
    // SAFETY: the launcher passes vectors of `n` f64 and one partial per block.
    let (a, b) = unsafe { (slice(a, n), slice(b, n)) };
    let mut sum = 0.0;
    for i in grid_stride(n) {
        sum += a[i] * b[i];
    }
    let block_sum = block_reduce_sum(sum);
    if thread_idx() == 0 {
        unsafe { partials.add(block_idx()).write(block_sum) };
    }
}

/// `partials[block] = max |v_i|` over the block's share, NaN if any is NaN; then
/// [`max_abs_partials`] over the partials with one block gives `‖v‖∞`.
#[inline(always)]
pub(crate) unsafe fn max_abs_partials(n: usize, v: *const f64, partials: *mut f64) {
    // SAFETY: the launcher passes `n` f64 and one partial per block.
    let v = unsafe { slice(v, n) };
    let mut max = 0.0;
    for i in grid_stride(n) {
        max = max_abs_nan(max, v[i]);
    }
    let block_max = block_reduce(max, 0.0, max_abs_nan);
    if thread_idx() == 0 {
        unsafe { partials.add(block_idx()).write(block_max) };
    }
}

/// The device address of a vector, as a table of them holds it.
#[inline(always)]
pub(crate) fn vector_at(table: *const u64, j: usize) -> *const f64 {
    // SAFETY: the launcher passes a table of at least `j + 1` addresses.
    (unsafe { table.add(j).read() }) as usize as *const f64
}

/// Row `k·count + j` of `partials[row·blocks + block]` is `Σ vⱼ,ᵢ·wₖ,ᵢ` over the block's
/// share, for the `count` vectors `v` whose addresses `table` holds, then the `withs` vectors
/// `w`: each summed as [`dot_partials`] sums `dot(vⱼ, wₖ)`, so each row's total has its bits.
/// One `w` after another, `DOTS_SWEEP` running sums per sweep over the rows, held in registers.
#[inline(always)]
pub(crate) unsafe fn dots_partials(
    n: usize,
    table: *const u64,
    count: usize,
    withs: usize,
    partials: *mut f64,
) {
    let blocks = grid_dim();
    for k in 0..withs {
        // SAFETY: the launcher passes `count + withs` addresses of vectors of `n` f64, and
        // `count·withs` rows of one partial per block.
        let with = unsafe { slice(vector_at(table, count + k), n) };
        let rows = unsafe { partials.add(k * count * blocks) };
        unsafe { dots_sweeps(n, table, count, rows, |i| with[i], |_| true) };
    }
}

/// The Gram matrix of the `count` vectors `table` holds over the rows `i` with
/// `mask[i] ≠ 0` (`keep = 1`) or `= 0` (`keep = 0`) alone, and their products with `u`
/// (none where `u` is null): row `b·(b + 1)/2 + a` of the partials (`a ≤ b`) holds
/// `Σ vₐ,ᵢ·v_b,ᵢ`, row `count·(count + 1)/2 + a` holds `Σ vₐ,ᵢ·uᵢ`, each summed as
/// [`dots_partials`] sums a product. The rows the mask drops add nothing, whatever their
/// values. One launch, in tiles of [`GRAM_TILE`] columns by as many (`u` the last column):
/// each tile's columns are read once for all its products, so the triangle of `c` columns
/// reads about `c²/4` column vectors where one sweep per column read `c²/2`.
#[inline(always)]
pub(crate) unsafe fn masked_gram_partials(
    n: usize,
    table: *const u64,
    count: usize,
    u: *const f64,
    mask: *const f64,
    keep: usize,
    partials: *mut f64,
) {
    // SAFETY: as in `dots_partials`, with `u` null or of `n` f64, a mask of `n` f64 and
    // `count·(count + 1)/2` rows of partials (the triangle's), `count` more (`u`'s) where
    // `u` is not null.
    let mask = unsafe { slice(mask, n) };
    let gram = Gram {
        n,
        table,
        count,
        u,
        columns: count + usize::from(!u.is_null()),
        kept: |i: usize| (mask[i] != 0.0) == (keep != 0),
    };
    // Where `count` is a multiple of the tile, `u` has a tile of its own, whose sweep with
    // itself writes nothing (`u`'s product with itself is not asked): a twenty-first sweep
    // at m = 10. Skipping it in the loop's bounds made the kernel take 148–158 registers on
    // sm_70 (ptxas), past the 128 that 512-thread blocks allow.
    let mut high = 0;
    while high < gram.columns {
        let mut low = 0;
        while low <= high {
            unsafe { gram.tile(low, high, partials) };
            low += GRAM_TILE;
        }
        high += GRAM_TILE;
    }
}

/// The columns of [`masked_gram_partials`]: the table's `count`, then `u` where it is not
/// null.
struct Gram<K> {
    n: usize,
    table: *const u64,
    count: usize,
    u: *const f64,
    columns: usize,
    kept: K,
}

impl<K: Fn(usize) -> bool> Gram<K> {
    /// Column `j`'s address (`j < columns`).
    #[inline(always)]
    fn column(&self, j: usize) -> *const f64 {
        if j < self.count {
            vector_at(self.table, j)
        } else {
            self.u
        }
    }

    /// The addresses of the tile of columns from `first` (past the last column, `first`
    /// again: loaded anyway, its products dropped, so the loop has no branch).
    #[inline(always)]
    fn tile_columns(&self, first: usize) -> [*const f64; GRAM_TILE] {
        let mut columns = [self.column(first); GRAM_TILE];
        for (t, column) in columns.iter_mut().enumerate() {
            if first + t < self.columns {
                *column = self.column(first + t);
            }
        }
        columns
    }

    /// The products of the tiles of columns from `low` and from `high` (`low ≤ high`), in
    /// one sweep over the rows: row `b·(b + 1)/2 + a` of `partials` for each `a ≤ b` of
    /// them but `u`'s with itself.
    ///
    /// # Safety
    /// As in [`masked_gram_partials`].
    #[inline(always)]
    unsafe fn tile(&self, low: usize, high: usize, partials: *mut f64) {
        let (a_columns, b_columns) = (self.tile_columns(low), self.tile_columns(high));
        let mut sums = [[0.0; GRAM_TILE]; GRAM_TILE];
        for i in grid_stride(self.n) {
            if !(self.kept)(i) {
                continue;
            }
            // Indexed, not zipped, with constant counts: the loops unroll and the arrays
            // stay in registers.
            let mut a = [0.0; GRAM_TILE];
            let mut b = [0.0; GRAM_TILE];
            for t in 0..GRAM_TILE {
                a[t] = unsafe { *a_columns[t].add(i) };
                b[t] = unsafe { *b_columns[t].add(i) };
            }
            for s in 0..GRAM_TILE {
                for t in 0..GRAM_TILE {
                    sums[s][t] += a[s] * b[t];
                }
            }
        }
        // Every product is reduced, the dropped ones too (the barriers inside are reached
        // by the whole block), each by name: a sum indexed by a variable would put them all
        // in local memory.
        let blocks = grid_dim();
        let write = |s: usize, t: usize, total: f64| {
            let (a, b) = (low + s, high + t);
            // `a < count` leaves out `u`'s product with itself, the one pair of columns
            // with `a ≤ b` that is not the table's.
            if thread_idx() == 0 && a <= b && b < self.columns && a < self.count {
                let row = b * (b + 1) / 2 + a;
                unsafe { partials.add(row * blocks + block_idx()).write(total) };
            }
        };
        let [r0, r1, r2, r3] = sums;
        block_sums(r0, |t, total| write(0, t, total));
        block_sums(r1, |t, total| write(1, t, total));
        block_sums(r2, |t, total| write(2, t, total));
        block_sums(r3, |t, total| write(3, t, total));
    }
}

/// Each of a row of [`masked_gram_partials`]' sums over the block, given to `write` with
/// its place in the row (the total is valid in thread 0).
#[inline(always)]
fn block_sums([s0, s1, s2, s3]: [f64; GRAM_TILE], write: impl Fn(usize, f64)) {
    write(0, block_reduce_sum(s0));
    write(1, block_reduce_sum(s1));
    write(2, block_reduce_sum(s2));
    write(3, block_reduce_sum(s3));
}

/// The sweeps of [`dots_partials`], against `with(i)`, over the rows `kept(i)` admits.
///
/// # Safety
/// `table` holds `count` addresses of vectors of `n` f64, and `partials` `count` rows of
/// one partial per block.
#[inline(always)]
unsafe fn dots_sweeps(
    n: usize,
    table: *const u64,
    count: usize,
    partials: *mut f64,
    with: impl Fn(usize) -> f64,
    kept: impl Fn(usize) -> bool,
) {
    let blocks = grid_dim();
    let mut first = 0;
    while first < count {
        let width = (count - first).min(DOTS_SWEEP);
        // A sweep past the last vector reads the sweep's first one in its place (loaded
        // anyway) and drops those sums: no branch in the loop, so every slot's load can be
        // in flight at once. Every loop over the slots has a constant count, so that it
        // unrolls and the arrays stay in registers.
        let mut vectors = [vector_at(table, first); DOTS_SWEEP];
        for (t, v) in vectors.iter_mut().enumerate() {
            if t < width {
                *v = vector_at(table, first + t);
            }
        }
        let mut sums = [0.0; DOTS_SWEEP];
        for i in grid_stride(n) {
            if !kept(i) {
                continue;
            }
            let w = with(i);
            // Indexed, not zipped: the zip leaves the arrays in local memory.
            for t in 0..DOTS_SWEEP {
                sums[t] += unsafe { *vectors[t].add(i) } * w;
            }
        }
        // Every slot is reduced, the unused ones too, each by name: a slot indexed by a
        // variable would put the sums in local memory. The barriers inside are reached by
        // the whole block.
        let [s0, s1, s2, s3, s4, s5, s6, s7] = sums;
        let totals = [
            block_reduce_sum(s0),
            block_reduce_sum(s1),
            block_reduce_sum(s2),
            block_reduce_sum(s3),
            block_reduce_sum(s4),
            block_reduce_sum(s5),
            block_reduce_sum(s6),
            block_reduce_sum(s7),
        ];
        if thread_idx() == 0 {
            for (t, &total) in totals.iter().enumerate() {
                if t < width {
                    unsafe {
                        partials
                            .add((first + t) * blocks + block_idx())
                            .write(total)
                    };
                }
            }
        }
        first += width;
    }
}

/// `out ← Σⱼ cⱼ·vⱼ` over the `count` vectors, `first` then the `count − 1` whose addresses
/// `table` holds, and their coefficients, formed as `out ← c₀·v₀` then `out ← out + cⱼ·vⱼ` in
/// order (the bits of a copy, a [`scale`] and [`axpy`]s), and `partials[block] = Σ zᵢ·outᵢ`
/// over the block's share, as [`dot_partials`] sums `dot(z, out)`; with `z` null, the
/// combination alone (no partials: a pass whose product nobody reads costs no finishing
/// launch and no read-back). The first term is apart because it is the one whose vector
/// changes most often (L-BFGS's gradient): the table then changes only past the others.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn combine_dot_partials(
    n: usize,
    first: *const f64,
    table: *const u64,
    coefficients: *const f64,
    count: usize,
    out: *mut f64,
    z: *const f64,
    partials: *mut f64,
) {
    // SAFETY: the launcher passes `count ≥ 1` vectors of `n` f64, `first` and `count − 1`
    // addresses, their `count` coefficients, `out` of `n` f64 (none of the others), and `z` of
    // `n` f64 with one partial per block, or both null.
    let coefficients = unsafe { slice(coefficients, count) };
    let z = (!z.is_null()).then(|| unsafe { slice(z, n) });
    let term_at = |j: usize| {
        if j == 0 {
            first
        } else {
            vector_at(table, j - 1)
        }
    };
    let mut sum = 0.0;
    for i in grid_stride(n) {
        let mut value = coefficients[0] * unsafe { *first.add(i) };
        let mut next = 1;
        while next < count {
            // A group's loads first, all of them (past the last term, `v₀` again): they
            // wait on nothing, so they are in flight together; the sum then takes its terms
            // in order.
            let width = (count - next).min(DOTS_SWEEP);
            let mut terms = [(0.0, 0.0); DOTS_SWEEP];
            for (t, term) in terms.iter_mut().enumerate() {
                let j = if t < width { next + t } else { 0 };
                *term = (coefficients[j], unsafe { *term_at(j).add(i) });
            }
            for (t, &(c, x)) in terms.iter().enumerate() {
                if t < width {
                    value = value + c * x;
                }
            }
            next += width;
        }
        unsafe { out.add(i).write(value) };
        if let Some(z) = z {
            sum += z[i] * value;
        }
    }
    // `z` is the launch's, so the whole block takes the reduction or skips it.
    if z.is_some() {
        let block_sum = block_reduce_sum(sum);
        if thread_idx() == 0 {
            unsafe { partials.add(block_idx()).write(block_sum) };
        }
    }
}

/// The end of a quasi-Newton step: `p ← step·p` (the step `s`), `g ← g₊ − g` (the
/// gradient change `y`), with five rows of per-block partials: `sᵀy`, `yᵀy`, `g₊ᵀg₊`,
/// `sᵀs` (sums, as [`dot_partials`] sums each) and `max |g₊ᵢ|` (as [`max_abs_partials`]).
/// Each entry's arithmetic is [`scale`]'s and [`difference`]'s.
#[inline(always)]
pub(crate) unsafe fn step_end_partials(
    n: usize,
    step: f64,
    p: *mut f64,
    g_new: *const f64,
    g: *mut f64,
    partials: *mut f64,
) {
    // SAFETY: the launcher passes vectors of `n` f64, `g_new` neither of the others, and
    // `STEP_END_ROWS` rows of one partial per block; each thread owns its `i`.
    let g_new = unsafe { slice(g_new, n) };
    let (mut sy, mut yy, mut gg, mut ss, mut max) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for i in grid_stride(n) {
        let s = step * unsafe { *p.add(i) };
        let y = g_new[i] - unsafe { *g.add(i) };
        unsafe {
            p.add(i).write(s);
            g.add(i).write(y);
        }
        sy += s * y;
        yy += y * y;
        gg += g_new[i] * g_new[i];
        ss += s * s;
        max = max_abs_nan(max, g_new[i]);
    }
    let blocks = grid_dim();
    let totals = [
        block_reduce_sum(sy),
        block_reduce_sum(yy),
        block_reduce_sum(gg),
        block_reduce_sum(ss),
        block_reduce(max, 0.0, max_abs_nan),
    ];
    if thread_idx() == 0 {
        for (row, &total) in totals.iter().enumerate() {
            unsafe { partials.add(row * blocks + block_idx()).write(total) };
        }
    }
}

/// `out[j] = Σ partials[j·blocks..(j + 1)·blocks]` for each of `rows` rows, each added in
/// order by one thread as [`sum_in_order`] adds; launch at least `rows` threads.
#[inline(always)]
pub(crate) unsafe fn sum_partial_rows(
    partials: *const f64,
    blocks: usize,
    rows: usize,
    out: *mut f64,
) {
    // SAFETY: the launcher passes `rows · blocks` partials and `rows` output slots.
    let partials = unsafe { slice(partials, rows * blocks) };
    unsafe {
        sum_each_in_order(rows, blocks, out, |row, block| {
            partials[row * blocks + block]
        })
    }
}

/// `out[j] = Σ_b vectors[b·len + j]` for each of `len` values: the `blocks` vectors laid end
/// to end added value by value, in block order, as [`sum_in_order`] adds; launch at least
/// `len` threads.
#[inline(always)]
pub(crate) unsafe fn sum_block_vectors(
    vectors: *const f64,
    blocks: usize,
    len: usize,
    out: *mut f64,
) {
    // SAFETY: the launcher passes `blocks · len` values and `len` output slots.
    let vectors = unsafe { slice(vectors, blocks * len) };
    unsafe { sum_each_in_order(len, blocks, out, |j, block| vectors[block * len + j]) }
}

/// `out[j] = Σ_b value(j, b)` over `blocks` values, added in order ([`sum_in_order`]), for
/// each of `count` outputs, one thread each.
///
/// # Safety
/// `out` holds `count` f64.
#[inline(always)]
unsafe fn sum_each_in_order(
    count: usize,
    blocks: usize,
    out: *mut f64,
    value: impl Fn(usize, usize) -> f64,
) {
    for j in grid_stride(count) {
        let sum = sum_in_order((0..blocks).map(|block| value(j, block)));
        unsafe { out.add(j).write(sum) };
    }
}
