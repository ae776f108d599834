//! Kernels on `n`-vectors (`[f64]`), rayon-parallel for long vectors.
//!
//! Results never depend on thread scheduling: parallel reductions split a vector into a fixed
//! number of blocks and add the block sums in order, so a solve is bitwise reproducible.

use gpu_kernels::kernel::nan_max;
use rayon::prelude::*;
use std::ops::Range;

/// Below this length a parallel pass costs more in scheduling than it saves.
pub(crate) const PARALLEL_MIN_LEN: usize = 1 << 15;
/// The number of blocks of a parallel reduction (more than any core count we target, so that
/// the work balances).
const REDUCTION_BLOCKS: usize = 64;

/// What a pass cuts into blocks: a vector (`&[T]`, `&mut [T]`: values, or a mask of bytes), the
/// index range of one (`Range<usize>`, for kernels that need to know where their block
/// starts), or a pair of these, cut alike.
pub(crate) trait Blocks: Sized + Send {
    /// The entries of each vector.
    fn len(&self) -> usize;
    /// The consecutive blocks of `block` entries (the last one shorter), in order.
    fn split(self, block: usize) -> Vec<Self>;
}

impl<T: Sync> Blocks for &[T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn split(self, block: usize) -> Vec<Self> {
        self.chunks(block).collect()
    }
}

impl<T: Send> Blocks for &mut [T] {
    fn len(&self) -> usize {
        <[T]>::len(self)
    }
    fn split(self, block: usize) -> Vec<Self> {
        self.chunks_mut(block).collect()
    }
}

impl Blocks for Range<usize> {
    fn len(&self) -> usize {
        ExactSizeIterator::len(self)
    }
    fn split(self, block: usize) -> Vec<Self> {
        let end = self.end;
        self.step_by(block)
            .map(|start| start..(start + block).min(end))
            .collect()
    }
}

impl<A: Blocks, B: Blocks> Blocks for (A, B) {
    fn len(&self) -> usize {
        debug_assert_eq!(self.0.len(), self.1.len());
        self.0.len()
    }
    fn split(self, block: usize) -> Vec<Self> {
        self.0
            .split(block)
            .into_iter()
            .zip(self.1.split(block))
            .collect()
    }
}

/// `kernel` on the whole of `parts` when they are short; else on [`REDUCTION_BLOCKS`] fixed
/// blocks of them, on every core, with `combine` given the blocks' results in block order.
/// The blocks depend on the length alone, so a reduction is the same bits for any number of
/// threads. Passes that fuse several steps (a solver's) are written on it, with the serial
/// kernels below ([`serial_dot`], [`serial_dots_of`]) giving their sums the bits of the
/// separate passes'.
pub(crate) fn blockwise<P: Blocks, T: Send>(
    parts: P,
    kernel: impl Fn(P) -> T + Sync + Send,
    combine: impl FnOnce(Vec<T>) -> T,
) -> T {
    let len = parts.len();
    if len < PARALLEL_MIN_LEN {
        return kernel(parts);
    }
    let block = len.div_ceil(REDUCTION_BLOCKS);
    combine(parts.split(block).into_par_iter().map(kernel).collect())
}

/// The sum of the blocks' sums, in block order.
pub(crate) fn sum_of(sums: Vec<f64>) -> f64 {
    sums.iter().sum()
}

/// `aᵀb`.
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    blockwise((a, b), |(a, b)| serial_dot(a, b), sum_of)
}

/// [`dot`] of one block.
pub(crate) fn serial_dot(a: &[f64], b: &[f64]) -> f64 {
    let [product] = serial_dots_of([a], b);
    product
}

/// `[vᵀw for v in vectors]` in one sweep, each summed the same way: four running sums (so that
/// consecutive additions need not wait on each other), added pairwise, then the tail. Each
/// sweep reads `w` once for all `V` vectors and keeps `4·V` additions in flight.
#[inline(always)]
pub(crate) fn serial_dots_of<const V: usize>(vectors: [&[f64]; V], w: &[f64]) -> [f64; V] {
    let whole = w.len() - w.len() % 4;
    let mut sums = [[[0.0; 4]; 1]; V];
    add_lane_products(vectors.map(|v| &v[..whole]), [&w[..whole]], &mut sums);
    let mut products = [0.0; V];
    for ((product, [sums]), v) in products.iter_mut().zip(sums).zip(vectors) {
        *product = lane_total(sums, &v[whole..], &w[whole..]);
    }
    products
}

/// The running sums of [`serial_dots_of`] for `V × W` products at once, carried over `with`
/// (a multiple of 4 entries long): lane `l` of `sums[v][w]` adds `vectors[v][4q + l]·with[w][4q + l]`
/// in order of `q`. `V·W` independent sums of four lanes keep both multiply-add units busy
/// (one sum waits on the last: four in flight did half the work a cycle that eight do).
#[inline(always)]
fn add_lane_products<const V: usize, const W: usize>(
    vectors: [&[f64]; V],
    with: [&[f64]; W],
    sums: &mut [[[f64; 4]; W]; V],
) {
    let len = with.first().map_or(0, |w| w.len());
    debug_assert_eq!(len % 4, 0);
    let vectors = vectors.map(|v| &v[..len]);
    let with = with.map(|w| &w[..len]);
    for q in (0..len).step_by(4) {
        for (sums, v) in sums.iter_mut().zip(&vectors) {
            for (sum, w) in sums.iter_mut().zip(&with) {
                for lane in 0..4 {
                    sum[lane] += v[q + lane] * w[q + lane];
                }
            }
        }
    }
}

/// A product from its four running sums and the entries past the last whole four.
fn lane_total(sums: [f64; 4], v_tail: &[f64], w_tail: &[f64]) -> f64 {
    let tail: f64 = v_tail.iter().zip(w_tail).map(|(x, y)| x * y).sum();
    (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail
}

/// `y ← y + alpha·x`, then `zᵀy`: each block is updated and then read again while it is in
/// cache, so the vectors cross memory once, and the sum is exactly [`axpy`] then [`dot`]'s
/// (the same blocks, each summed the same way).
pub(crate) fn axpy_dot(alpha: f64, x: &[f64], y: &mut [f64], z: &[f64]) -> f64 {
    let kernel = |(y, (x, z)): (&mut [f64], (&[f64], &[f64]))| {
        for (y, &x) in y.iter_mut().zip(x) {
            *y += alpha * x;
        }
        serial_dot(z, y)
    };
    blockwise((y, (x, z)), kernel, sum_of)
}

/// `out[i·k + j] ← vectors[i]ᵀ with[j]` (`k = with.len()`) in one pass: each block of every
/// vector is read once, while the same blocks of `with` stay in cache. Each product is exactly
/// [`dot`]'s (the same blocks, each summed the same way, the block sums added in order).
pub(crate) fn dots(vectors: &[&[f64]], with: &[&[f64]], out: &mut [f64]) {
    let n = with.first().map_or(0, |w| w.len());
    debug_assert!(vectors.iter().chain(with).all(|v| v.len() == n));
    debug_assert_eq!(out.len(), vectors.len() * with.len());
    if out.is_empty() {
        return;
    }
    let block_products =
        |r: Range<usize>| serial_dots(&blocks_of(vectors, r.clone()), &blocks_of(with, r));
    out.copy_from_slice(&blockwise(0..n, block_products, sum_blocks));
}

/// `dots` of one block: `vectors[i]ᵀ with[j]` at `i·k + j`, `V × W` of them per sweep (up to
/// four by four, or eight by one where `with` is one vector), each exactly
/// [`serial_dots_of`]'s. Four by four takes a bounded L-BFGS-B iteration's pair pass in fewer
/// sweeps than four by one, and faster.
pub(crate) fn serial_dots(vectors: &[&[f64]], with: &[&[f64]]) -> Vec<f64> {
    let k = with.len();
    let len = with.first().map_or(0, |w| w.len());
    let whole = len - len % 4;
    let mut sums = vec![[0.0; 4]; vectors.len() * k];
    let vector_groups = groups(
        vectors.len(),
        if k == 1 { &[8, 4, 2, 1] } else { &[4, 2, 1] },
    );
    for &(first_w, w_count) in &groups(k, &[4, 2, 1]) {
        for &(first_v, v_count) in &vector_groups {
            let at = Sweep {
                vectors,
                with,
                first: (first_v, first_w),
                whole,
            };
            match (v_count, w_count) {
                (8, _) => at.add::<8, 1>(&mut sums),
                (4, 4) => at.add::<4, 4>(&mut sums),
                (4, 2) => at.add::<4, 2>(&mut sums),
                (4, _) => at.add::<4, 1>(&mut sums),
                (2, 4) => at.add::<2, 4>(&mut sums),
                (2, 2) => at.add::<2, 2>(&mut sums),
                (2, _) => at.add::<2, 1>(&mut sums),
                (_, 4) => at.add::<1, 4>(&mut sums),
                (_, 2) => at.add::<1, 2>(&mut sums),
                _ => at.add::<1, 1>(&mut sums),
            }
        }
    }
    let mut products = vec![0.0; vectors.len() * k];
    for (i, v) in vectors.iter().enumerate() {
        for (j, w) in with.iter().enumerate() {
            products[i * k + j] = lane_total(sums[i * k + j], &v[whole..], &w[whole..]);
        }
    }
    products
}

/// `0..len` cut greedily into runs of the first of `sizes` that fits: `(start, size)`.
fn groups(len: usize, sizes: &[usize]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = 0;
    while start < len {
        let size = sizes
            .iter()
            .copied()
            .find(|&s| s <= len - start)
            .unwrap_or(1);
        runs.push((start, size));
        start += size;
    }
    runs
}

/// One sweep of [`serial_dots`]: the vectors and `with` from `first`, over their first `whole`
/// entries (a multiple of 4).
struct Sweep<'a, 'v> {
    vectors: &'a [&'v [f64]],
    with: &'a [&'v [f64]],
    first: (usize, usize),
    whole: usize,
}

impl Sweep<'_, '_> {
    /// Adds the lane products of `V` vectors by `W` to their running sums (`sums[i·k + j]`).
    fn add<const V: usize, const W: usize>(&self, sums: &mut [[f64; 4]]) {
        let (k, (first_v, first_w)) = (self.with.len(), self.first);
        let vectors = std::array::from_fn(|i| &self.vectors[first_v + i][..self.whole]);
        let with = std::array::from_fn(|j| &self.with[first_w + j][..self.whole]);
        let at = |i: usize, j: usize| (first_v + i) * k + first_w + j;
        let mut local = std::array::from_fn(|i| std::array::from_fn(|j| sums[at(i, j)]));
        add_lane_products::<V, W>(vectors, with, &mut local);
        for (i, row) in local.iter().enumerate() {
            for (j, &sum) in row.iter().enumerate() {
                sums[at(i, j)] = sum;
            }
        }
    }
}

/// The `range` of each of `vectors`.
pub(crate) fn blocks_of<'v>(vectors: &[&'v [f64]], range: Range<usize>) -> Vec<&'v [f64]> {
    vectors.iter().map(|v| &v[range.clone()]).collect()
}

/// Each entry's block sums, in block order.
pub(crate) fn sum_blocks(blocks: Vec<Vec<f64>>) -> Vec<f64> {
    let len = blocks.first().map_or(0, Vec::len);
    (0..len)
        .map(|q| blocks.iter().map(|b| b[q]).sum())
        .collect()
}

/// `out ← Σ cᵢ·vᵢ` over `terms = [(c₀, v₀), (c₁, v₁), …]`, then `zᵀout`, in one pass: each
/// block of `out` stays in cache while every `vᵢ` is read once, and is summed against `z` while
/// it is there. The entries are exactly those of `out ← v₀`, `out ← c₀·out`, then
/// `out ← out + cᵢ·vᵢ` in order (no fused multiply-adds), and the sum is [`dot`]'s. No terms:
/// zeros.
pub(crate) fn combine_dot(terms: &[(f64, &[f64])], out: &mut [f64], z: &[f64]) -> f64 {
    debug_assert!(terms.iter().all(|(_, v)| v.len() == out.len()));
    debug_assert_eq!(z.len(), out.len());
    let len = out.len();
    let kernel = |(out, range): (&mut [f64], Range<usize>)| -> f64 {
        combine_block(terms, out, range.clone());
        serial_dot(&z[range], out)
    };
    blockwise((out, 0..len), kernel, sum_of)
}

/// `out ← Σ cᵢ·vᵢ[range]`, as [`combine_dot`] forms each block (zeros without terms).
pub(crate) fn combine_block(terms: &[(f64, &[f64])], out: &mut [f64], range: Range<usize>) {
    let (start, end) = (range.start, range.end);
    let Some(((c0, v0), rest)) = terms.split_first() else {
        out.fill(0.0);
        return;
    };
    for (o, &v) in out.iter_mut().zip(&v0[start..end]) {
        *o = c0 * v;
    }
    // Four terms per sweep over `out`, the partial sums in registers: the additions happen
    // in the same order, with a quarter of the loads and stores of `out`.
    let mut quads = rest.chunks_exact(4);
    for quad in &mut quads {
        let [(c1, v1), (c2, v2), (c3, v3), (c4, v4)] = [0, 1, 2, 3].map(|t| quad[t]);
        let [v1, v2, v3, v4] = [v1, v2, v3, v4].map(|v| &v[start..end]);
        for ((((o, v1), v2), v3), v4) in out.iter_mut().zip(v1).zip(v2).zip(v3).zip(v4) {
            *o = (((*o + c1 * v1) + c2 * v2) + c3 * v3) + c4 * v4;
        }
    }
    for (c, v) in quads.remainder() {
        for (o, &v) in out.iter_mut().zip(&v[start..end]) {
            *o += c * v;
        }
    }
}

/// What the end of a quasi-Newton step needs of its vectors, from [`finish_step`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct StepSums {
    /// `max |g₊ᵢ|` (NaN if any entry is NaN).
    pub gradient_max_abs: f64,
    /// `sᵀs`.
    pub ss: f64,
    /// `sᵀy`.
    pub sy: f64,
    /// `yᵀy`.
    pub yy: f64,
}

/// `p ← step·p` (the step `s`) and `g ← g₊ − g` (the gradient change `y`), with `‖g₊‖∞`, `sᵀs`,
/// `sᵀy` and `yᵀy`, in one pass over the three vectors: each block is written and summed in the
/// same sweep, exactly as the separate passes sum it (same blocks, same lanes, same order).
pub(crate) fn finish_step(step: f64, p: &mut [f64], g_new: &[f64], g: &mut [f64]) -> StepSums {
    debug_assert!(p.len() == g_new.len() && g_new.len() == g.len());
    let kernel =
        |(p, (g_new, g)): (&mut [f64], (&[f64], &mut [f64]))| serial_step_sums(step, p, g_new, g);
    let combine = |sums: Vec<StepSums>| {
        let maxima: Vec<f64> = sums.iter().map(|s| s.gradient_max_abs).collect();
        StepSums {
            gradient_max_abs: max_abs_serial(&maxima),
            ss: sums.iter().map(|s| s.ss).sum(),
            sy: sums.iter().map(|s| s.sy).sum(),
            yy: sums.iter().map(|s| s.yy).sum(),
        }
    };
    blockwise((p, (g_new, g)), kernel, combine)
}

/// [`finish_step`] of one block, in one sweep: each entry of `s` and `y` goes into the four
/// running sums of [`serial_dot`]'s lanes as it is written. Scaling, differencing and then
/// summing in separate sweeps is slower, even from cache.
fn serial_step_sums(step: f64, p: &mut [f64], g_new: &[f64], g: &mut [f64]) -> StepSums {
    let whole = p.len() - p.len() % 4;
    let (mut ss, mut sy, mut yy) = ([0.0f64; 4], [0.0f64; 4], [0.0f64; 4]);
    let mut gradient_max = LaneMax::default();
    let quads = p[..whole]
        .chunks_exact_mut(4)
        .zip(g_new[..whole].chunks_exact(4))
        .zip(g[..whole].chunks_exact_mut(4));
    for ((p, g_new), g) in quads {
        for lane in 0..4 {
            let s = step * p[lane];
            let y = g_new[lane] - g[lane];
            (p[lane], g[lane]) = (s, y);
            ss[lane] += s * s;
            sy[lane] += s * y;
            yy[lane] += y * y;
            gradient_max.add(lane, g_new[lane]);
        }
    }
    for i in whole..p.len() {
        (p[i], g[i]) = (step * p[i], g_new[i] - g[i]);
        gradient_max.add(0, g_new[i]);
    }
    let (s_tail, y_tail) = (&p[whole..], &g[whole..]);
    StepSums {
        gradient_max_abs: gradient_max.value(),
        ss: lane_total(ss, s_tail, s_tail),
        sy: lane_total(sy, s_tail, y_tail),
        yy: lane_total(yy, y_tail, y_tail),
    }
}

/// `‖v‖∞ = max |vᵢ|`, NaN if any entry is NaN, in one pass (on every core for long vectors):
/// the norm of scipy's `gtol` test, for reports of a result's gradient.
pub fn max_abs(v: &[f64]) -> f64 {
    blockwise(v, max_abs_serial, |maxima| max_abs_serial(&maxima))
}

/// [`max_abs`] on one thread.
fn max_abs_serial(v: &[f64]) -> f64 {
    let mut max = LaneMax::default();
    let quads = v.chunks_exact(4);
    for &x in quads.remainder() {
        max.add(0, x);
    }
    for quad in quads {
        for (lane, &x) in quad.iter().enumerate() {
            max.add(lane, x);
        }
    }
    max.value()
}

/// `max |xᵢ|` in four running maxima and a NaN flag, with no branch on the data, so that a loop
/// feeding it vectorizes: the `‖·‖∞` of [`max_abs`] and of [`finish_step`]'s sweep. The order
/// entries arrive in does not change the answer.
#[derive(Clone, Copy, Default)]
struct LaneMax {
    maxima: [f64; 4],
    nan: bool,
}

impl LaneMax {
    #[inline(always)]
    fn add(&mut self, lane: usize, x: f64) {
        let size = x.abs();
        self.nan |= size.is_nan();
        self.maxima[lane] = if size > self.maxima[lane] {
            size
        } else {
            self.maxima[lane]
        };
    }

    /// The maximum, or NaN if any entry was NaN.
    fn value(self) -> f64 {
        if self.nan {
            f64::NAN
        } else {
            self.maxima.into_iter().fold(0.0, f64::max)
        }
    }
}

/// `‖v‖₂`.
pub(crate) fn norm2(v: &[f64]) -> f64 {
    dot(v, v).sqrt()
}

/// scipy's `vecnorm(v, ord)`: max `|vᵢ|` for `ord = ∞`, min `|vᵢ|` for `ord = −∞`, else
/// `(Σ|vᵢ|^ord)^(1/ord)`. NaN if any entry is NaN (`f64::max` alone would skip it).
pub(crate) fn norm(v: &[f64], ord: f64) -> f64 {
    if ord == f64::INFINITY {
        // The gradient norm of every iteration: one parallel pass.
        return max_abs(v);
    }
    if v.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    let abs = v.iter().map(|x| x.abs());
    if ord == f64::NEG_INFINITY {
        abs.fold(f64::INFINITY, f64::min)
    } else if ord == 2.0 {
        norm2(v)
    } else {
        abs.map(|a| a.powf(ord)).sum::<f64>().powf(ord.recip())
    }
}

/// `out[i] ← f(a[i], b[i])`.
pub(crate) fn fill_with(out: &mut [f64], a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64 + Sync) {
    debug_assert!(out.len() == a.len() && a.len() == b.len());
    let kernel = |(o, (a, b)): (&mut [f64], (&[f64], &[f64]))| {
        for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
            *o = f(a, b);
        }
    };
    blockwise((out, (a, b)), kernel, |_| ());
}

/// `out[i] ← f(out[i], a[i])`.
pub(crate) fn update_with(out: &mut [f64], a: &[f64], f: impl Fn(f64, f64) -> f64 + Sync) {
    debug_assert_eq!(out.len(), a.len());
    let kernel = |(o, a): (&mut [f64], &[f64])| {
        for (o, &a) in o.iter_mut().zip(a) {
            *o = f(*o, a);
        }
    };
    blockwise((out, a), kernel, |_| ());
}

/// `out[i] ← f(i, out[i])`: for updates that read other vectors, or bounds, at `i`.
pub(crate) fn update_indexed(out: &mut [f64], f: impl Fn(usize, f64) -> f64 + Sync) {
    let len = out.len();
    let kernel = |(o, range): (&mut [f64], Range<usize>)| {
        for (o, i) in o.iter_mut().zip(range) {
            *o = f(i, *o);
        }
    };
    blockwise((out, 0..len), kernel, |_| ());
}

/// The Gram matrix of the rows `i` where `mask[i] == keep`, and their products with `u`: with
/// `v[i] ← f(v[i])`.
pub(crate) fn map_in_place(v: &mut [f64], f: impl Fn(f64) -> f64 + Sync) {
    blockwise(
        v,
        |v: &mut [f64]| v.iter_mut().for_each(|x| *x = f(*x)),
        |_| (),
    );
}

/// The index of the first entry that is NaN or infinite. Each block is scanned first by
/// [`max_abs_serial`], which has no branch on the data and is not finite exactly when the block
/// holds such an entry; only such a block is then searched entry by entry. (rayon's
/// `position_first` is far slower than a branch-free sweep.)
pub(crate) fn first_non_finite(v: &[f64]) -> Option<usize> {
    let kernel = |(v, range): (&[f64], Range<usize>)| {
        if max_abs_serial(v).is_finite() {
            return None;
        }
        let position = v.iter().position(|x| !x.is_finite());
        position.map(|i| range.start + i)
    };
    blockwise((v, 0..v.len()), kernel, |found| {
        found.into_iter().flatten().next()
    })
}

/// The `count` smallest of the keys `key(i)` over `0..len` (indices whose key is `None` take
/// no part), in increasing order, and how many keys there were: one pass on every core, each
/// block keeping its own `count` smallest. The keys are totally ordered, so the answer does not
/// depend on the blocks.
pub(crate) fn smallest_indexed<K: Ord + Send>(
    len: usize,
    count: usize,
    key: impl Fn(usize) -> Option<K> + Sync,
) -> (Vec<K>, usize) {
    let kernel = |range: Range<usize>| {
        // A max-heap of the block's smallest so far: a key joins only below its top.
        let mut kept = std::collections::BinaryHeap::with_capacity(count + 1);
        let mut keys = 0;
        for k in range.filter_map(&key) {
            keys += 1;
            if kept.len() < count {
                kept.push(k);
            } else if kept.peek().is_some_and(|top| k < *top) {
                kept.pop();
                kept.push(k);
            }
        }
        (kept.into_sorted_vec(), keys)
    };
    blockwise(0..len, kernel, |blocks| {
        let keys = blocks.iter().map(|(_, keys)| keys).sum();
        let mut all: Vec<K> = blocks.into_iter().flat_map(|(kept, _)| kept).collect();
        all.sort_unstable();
        all.truncate(count);
        (all, keys)
    })
}

/// `max f(i)` over `0..len` (0 when empty), on every core; NaN if any value is NaN.
pub(crate) fn max_indexed(len: usize, f: impl Fn(usize) -> f64 + Sync) -> f64 {
    let kernel = |range: Range<usize>| range.map(&f).fold(0.0, nan_max);
    blockwise(0..len, kernel, |maxima| {
        maxima.into_iter().fold(0.0, nan_max)
    })
}

/// `y ← y + a·x`.
pub(crate) fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    update_with(y, x, |y, x| y + a * x);
}

mod gram;

pub(crate) use gram::masked_gram;

#[cfg(test)]
mod tests;
