//! PTX entry points of the passes of a quasi-Newton step within a box (L-BFGS-B's), on a
//! solver's device vectors: each thread does one variable's arithmetic of
//! [`crate::bounds`], as the host's passes do, and each reduction leaves one row of partials per
//! result, one partial per block, which the host finishes (sums in block order by
//! [`sum_in_order`](crate::kernel::sum_in_order), as the device's own dot products are
//! finished; maxima and minima in any order).
//!
//! Argument lists: `n` first, then the box (`lower`, `upper`: `n` f64 each, or both null for a
//! box with no finite side), then scalars and vectors in the order of their formulas, then
//! `partials` (rows of `gridDim` f64) for the reductions.

pub(crate) use nvptx::*;

mod nvptx {
    use crate::bounds::truncated;
    use crate::bounds::{active, breakpoint, clip, is_breakpoint_after, projected, reach, room};
    use crate::device::vector_entry::vector_at;
    use crate::device::{WARP_SIZE, block_dim, block_idx, block_reduce, block_reduce_sum};
    use crate::device::{grid_dim, grid_stride, slice, thread_idx, warp_reduce};
    use crate::kernel::nan_max;

    /// Variable `i`'s bounds: `(−∞, ∞)` where the box is null.
    ///
    /// # Safety
    /// `lower` and `upper` are both null or both hold more than `i` f64.
    #[inline(always)]
    unsafe fn sides(lower: *const f64, upper: *const f64, i: usize) -> (f64, f64) {
        if lower.is_null() || upper.is_null() {
            (f64::NEG_INFINITY, f64::INFINITY)
        } else {
            unsafe { (*lower.add(i), *upper.add(i)) }
        }
    }

    /// Thread 0 writes the block's `totals` into rows `0..R` of the partials.
    ///
    /// # Safety
    /// `partials` holds `R` rows of one f64 per block.
    #[inline(always)]
    unsafe fn write_rows<const R: usize>(partials: *mut f64, totals: [f64; R]) {
        if thread_idx() == 0 {
            let blocks = grid_dim();
            for (row, &total) in totals.iter().enumerate() {
                unsafe { partials.add(row * blocks + block_idx()).write(total) };
            }
        }
    }

    /// The block's least value (`∞` for none).
    #[inline(always)]
    fn block_min(v: f64) -> f64 {
        block_reduce(v, f64::INFINITY, f64::min)
    }

    /// The block's greatest value (0 for none; the values are never negative), NaN if any is.
    #[inline(always)]
    fn block_max(v: f64) -> f64 {
        block_reduce(v, 0.0, nan_max)
    }

    /// The projected steepest-descent path at `(x, g)`: `times[i]` when variable `i` meets its
    /// bound along `−g`, `path[i] = −g[i]` where that time is positive, else 0 (neither written
    /// where `times` is null); row 0 of the partials `max |x − P(x − g)|`.
    #[inline(always)]
    pub(crate) unsafe fn box_path_partials(
        n: usize,
        lower: *const f64,
        upper: *const f64,
        x: *const f64,
        g: *const f64,
        times: *mut f64,
        path: *mut f64,
        partials: *mut f64,
    ) {
        // SAFETY: the launcher passes vectors of `n` f64 (`times` and `path` both, or neither)
        // and a row of partials; each thread owns its `i`.
        let (x, g) = unsafe { (slice(x, n), slice(g, n)) };
        let mut norm = 0.0;
        for i in grid_stride(n) {
            let (lo, hi) = unsafe { sides(lower, upper, i) };
            if !times.is_null() {
                let t = breakpoint(lo, hi, x[i], g[i]);
                let d = if t > 0.0 { -g[i] } else { 0.0 };
                unsafe {
                    times.add(i).write(t);
                    path.add(i).write(d);
                }
            }
            norm = nan_max(norm, projected(lo, hi, x[i], g[i]).abs());
        }
        let block = block_max(norm);
        unsafe { write_rows(partials, [block]) };
    }

    /// `out ← x + t·path` where `path` is not 0, `x` where it is: a point of the path.
    #[inline(always)]
    pub(crate) unsafe fn path_point(
        n: usize,
        x: *const f64,
        t: f64,
        path: *const f64,
        out: *mut f64,
    ) {
        // SAFETY: vectors of `n` f64; each thread owns its `i`.
        let (x, path) = unsafe { (slice(x, n), slice(path, n)) };
        for i in grid_stride(n) {
            let d = path[i];
            let point = if d != 0.0 { x[i] + t * d } else { x[i] };
            unsafe { out.add(i).write(point) };
        }
    }

    /// `free[i] ← 1` where `point[i]` lies strictly inside its bounds, else 0; row 0 of the
    /// partials how many.
    #[inline(always)]
    pub(crate) unsafe fn free_partials(
        n: usize,
        lower: *const f64,
        upper: *const f64,
        point: *const f64,
        free: *mut f64,
        partials: *mut f64,
    ) {
        // SAFETY: as in `box_path_partials`.
        let point = unsafe { slice(point, n) };
        let mut count = 0.0;
        for i in grid_stride(n) {
            let (lo, hi) = unsafe { sides(lower, upper, i) };
            let inside = lo < point[i] && point[i] < hi;
            unsafe { free.add(i).write(if inside { 1.0 } else { 0.0 }) };
            count += if inside { 1.0 } else { 0.0 };
        }
        let block = block_reduce_sum(count);
        unsafe { write_rows(partials, [block]) };
    }

    /// A thread's share of the line toward a target: the slope `gᵀd` and the least room.
    struct Line {
        slope: f64,
        least: f64,
    }

    impl Line {
        const START: Line = Line {
            slope: 0.0,
            least: f64::INFINITY,
        };

        /// `direction[i] ← t − x[i]` for the target's entry `t`, and its share of the slope
        /// and the room.
        ///
        /// # Safety
        /// `direction` holds more than `i` f64, entry `i` this thread's.
        #[inline(always)]
        unsafe fn aim(
            &mut self,
            i: usize,
            (lo, hi): (f64, f64),
            (x, g): (f64, f64),
            t: f64,
            direction: *mut f64,
        ) {
            let d = t - x;
            unsafe { direction.add(i).write(d) };
            self.slope += g * d;
            self.least = f64::min(self.least, room(lo, hi, x, d));
        }

        /// The block's slope and room into rows 0 and 1 of the partials.
        ///
        /// # Safety
        /// As [`write_rows`]'.
        #[inline(always)]
        unsafe fn write(self, partials: *mut f64) {
            let totals = [block_reduce_sum(self.slope), block_min(self.least)];
            unsafe { write_rows(partials, totals) };
        }
    }

    /// The line toward `target`: `direction ← target − x`; row 0 of the partials its slope
    /// `gᵀd` (summed as a dot product), row 1 the least `room` to the box along it.
    #[inline(always)]
    pub(crate) unsafe fn aim_partials(
        n: usize,
        lower: *const f64,
        upper: *const f64,
        x: *const f64,
        g: *const f64,
        target: *const f64,
        direction: *mut f64,
        partials: *mut f64,
    ) {
        // SAFETY: as in `box_path_partials`.
        let (x, g, target) = unsafe { (slice(x, n), slice(g, n), slice(target, n)) };
        let mut line = Line::START;
        for i in grid_stride(n) {
            let sides = unsafe { sides(lower, upper, i) };
            unsafe { line.aim(i, sides, (x[i], g[i]), target[i], direction) };
        }
        unsafe { line.write(partials) };
    }

    /// A subspace step's projection and the line toward it: `target ← P(cauchy + step)` where
    /// `free` is not 0, `cauchy` elsewhere; then [`aim_partials`]' work on `target`.
    #[inline(always)]
    pub(crate) unsafe fn project_aim_partials(
        n: usize,
        lower: *const f64,
        upper: *const f64,
        free: *const f64,
        cauchy: *const f64,
        step: *const f64,
        x: *const f64,
        g: *const f64,
        target: *mut f64,
        direction: *mut f64,
        partials: *mut f64,
    ) {
        // SAFETY: as in `box_path_partials`.
        let (free, cauchy, step) = unsafe { (slice(free, n), slice(cauchy, n), slice(step, n)) };
        let (x, g) = unsafe { (slice(x, n), slice(g, n)) };
        let mut line = Line::START;
        for i in grid_stride(n) {
            let (lo, hi) = unsafe { sides(lower, upper, i) };
            let t = if free[i] != 0.0 {
                clip(lo, hi, cauchy[i] + step[i])
            } else {
                cauchy[i]
            };
            unsafe { target.add(i).write(t) };
            unsafe { line.aim(i, (lo, hi), (x[i], g[i]), t, direction) };
        }
        unsafe { line.write(partials) };
    }

    /// How far each free variable may follow `step` from `cauchy`, `fraction =
    /// min(room, 1)` (1 for the others): row 0 of the partials the least fraction, row 1 the
    /// least index whose fraction is `alpha` (`∞` for none).
    #[inline(always)]
    pub(crate) unsafe fn reach_partials(
        n: usize,
        lower: *const f64,
        upper: *const f64,
        free: *const f64,
        cauchy: *const f64,
        step: *const f64,
        alpha: f64,
        partials: *mut f64,
    ) {
        // SAFETY: as in `box_path_partials`.
        let (free, cauchy, step) = unsafe { (slice(free, n), slice(cauchy, n), slice(step, n)) };
        let (mut least, mut first) = (f64::INFINITY, f64::INFINITY);
        for i in grid_stride(n) {
            let (lo, hi) = unsafe { sides(lower, upper, i) };
            let fraction = reach(lo, hi, free[i] != 0.0, cauchy[i], step[i]);
            least = f64::min(least, fraction);
            if fraction == alpha {
                first = f64::min(first, i as f64);
            }
        }
        let totals = [block_min(least), block_min(first)];
        unsafe { write_rows(partials, totals) };
    }

    /// The step cut at its first bound: `target ← cauchy + alpha·step` where `free` is not 0,
    /// the bound itself at `first` (upper where the step is positive), `cauchy` elsewhere.
    #[inline(always)]
    pub(crate) unsafe fn truncate(
        n: usize,
        lower: *const f64,
        upper: *const f64,
        free: *const f64,
        cauchy: *const f64,
        step: *const f64,
        alpha: f64,
        first: usize,
        target: *mut f64,
    ) {
        // SAFETY: as in `box_path_partials`.
        let (free, cauchy, step) = unsafe { (slice(free, n), slice(cauchy, n), slice(step, n)) };
        for i in grid_stride(n) {
            let (lo, hi) = unsafe { sides(lower, upper, i) };
            let t = truncated(
                lo,
                hi,
                free[i] != 0.0,
                i == first,
                cauchy[i],
                step[i],
                alpha,
            );
            unsafe { target.add(i).write(t) };
        }
    }

    /// `out ← P(x + step·d)`: a point of the line search's ray, within the box.
    #[inline(always)]
    pub(crate) unsafe fn clipped_ray_point(
        n: usize,
        lower: *const f64,
        upper: *const f64,
        x: *const f64,
        step: f64,
        d: *const f64,
        out: *mut f64,
    ) {
        // SAFETY: as in `box_path_partials`.
        let (x, d) = unsafe { (slice(x, n), slice(d, n)) };
        for i in grid_stride(n) {
            let (lo, hi) = unsafe { sides(lower, upper, i) };
            unsafe { out.add(i).write(clip(lo, hi, x[i] + step * d[i])) };
        }
    }

    /// `out[i] ←` which bound `x[i]` is at ([`active`](crate::bounds::active)).
    #[inline(always)]
    pub(crate) unsafe fn active_mask(
        n: usize,
        lower: *const f64,
        upper: *const f64,
        x: *const f64,
        out: *mut f64,
    ) {
        // SAFETY: as in `box_path_partials`.
        let x = unsafe { slice(x, n) };
        for i in grid_stride(n) {
            let (lo, hi) = unsafe { sides(lower, upper, i) };
            unsafe { out.add(i).write(active(lo, hi, x[i])) };
        }
    }

    /// The new pair: `s ← step·d`, `y ← g₊ − g`; rows of partials `sᵀy`, `yᵀy`, `sᵀs`, `gᵀs`,
    /// `g₊ᵀg₊` (sums) and `max |g₊ᵢ|`.
    #[inline(always)]
    pub(crate) unsafe fn new_pair_partials(
        n: usize,
        step: f64,
        d: *const f64,
        g_new: *const f64,
        g: *const f64,
        s: *mut f64,
        y: *mut f64,
        partials: *mut f64,
    ) {
        // SAFETY: vectors of `n` f64, `s` and `y` none of the others, and six rows of
        // partials; each thread owns its `i`.
        let (d, g_new, g) = unsafe { (slice(d, n), slice(g_new, n), slice(g, n)) };
        let (mut sy, mut yy, mut ss, mut gs, mut gg, mut max) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        for i in grid_stride(n) {
            let si = step * d[i];
            let yi = g_new[i] - g[i];
            unsafe {
                s.add(i).write(si);
                y.add(i).write(yi);
            }
            sy += si * yi;
            yy += yi * yi;
            ss += si * si;
            gs += g[i] * si;
            gg += g_new[i] * g_new[i];
            max = nan_max(max, g_new[i].abs());
        }
        let totals = [
            block_reduce_sum(sy),
            block_reduce_sum(yy),
            block_reduce_sum(ss),
            block_reduce_sum(gs),
            block_reduce_sum(gg),
            block_max(max),
        ];
        unsafe { write_rows(partials, totals) };
    }

    /// For each of the `chunks = ⌈n / chunk⌉` runs of `chunk` consecutive `times` (the last
    /// one shorter): `out[c]` ← the run's least breakpoint time (`∞` for none) and
    /// `out[chunks + c]` ← how many breakpoints it holds, counting only those after breakpoint
    /// `(after_time, after_index)` (`after_time = 0`: all). A warp takes whole runs, its lanes
    /// striding through each (a run is an index range the host can fetch), and reduces them
    /// by shuffles alone: no barrier, and no lane waits on a run that is not its warp's.
    #[inline(always)]
    pub(crate) unsafe fn breakpoint_chunks(
        n: usize,
        times: *const f64,
        chunk: usize,
        after_time: f64,
        after_index: usize,
        out: *mut f64,
    ) {
        // SAFETY: the launcher passes `n` times and `2·⌈n / chunk⌉` output slots; lane 0 of
        // the warp that takes a run writes its two.
        let times = unsafe { slice(times, n) };
        let chunks = n.div_ceil(chunk);
        let (warp, lane) = (thread_idx() / WARP_SIZE, thread_idx() % WARP_SIZE);
        let warps_per_block = block_dim().div_ceil(WARP_SIZE);
        // The last warp of a block whose size is not a multiple of 32 has fewer lanes.
        let lanes = (block_dim() - warp * WARP_SIZE).min(WARP_SIZE);
        // The loop bound is the warp's alone, so all its lanes reach each shuffle.
        let mut c = block_idx() * warps_per_block + warp;
        while c < chunks {
            let end = n.min((c + 1) * chunk);
            let (mut least, mut count) = (f64::INFINITY, 0.0);
            let mut i = c * chunk + lane;
            while i < end {
                if is_breakpoint_after(times[i], i, (after_time, after_index)) {
                    least = least.min(times[i]);
                    count += 1.0;
                }
                i += lanes;
            }
            let least = warp_reduce(least, lanes, f64::min);
            let count = warp_reduce(count, lanes, |a, b| a + b);
            if lane == 0 {
                unsafe {
                    out.add(c).write(least);
                    out.add(chunks + c).write(count);
                }
            }
            c += grid_dim() * warps_per_block;
        }
    }

    /// `out[r·count + j] ← vⱼ[indices[r]]` for the `count` vectors `table` holds and the
    /// `rows` indices (`u64` words) at `indices`.
    #[inline(always)]
    pub(crate) unsafe fn gather(
        table: *const u64,
        count: usize,
        indices: *const u64,
        rows: usize,
        out: *mut f64,
    ) {
        // SAFETY: the launcher passes `count` addresses, `rows` indices within the vectors and
        // `rows·count` output slots; each thread owns its slot.
        for at in grid_stride(rows * count) {
            let (r, j) = (at / count, at % count);
            let i = unsafe { indices.add(r).read() } as usize;
            unsafe { out.add(at).write(*vector_at(table, j).add(i)) };
        }
    }

    /// `v[index] ← value` for each of the `count` pairs `(index as a u64 word, value)` at
    /// `entries` (distinct indices).
    #[inline(always)]
    pub(crate) unsafe fn scatter(v: *mut f64, entries: *const u64, count: usize) {
        // SAFETY: the launcher passes `count` pairs whose indices are distinct and within `v`.
        for e in grid_stride(count) {
            let i = unsafe { entries.add(2 * e).read() } as usize;
            let value = f64::from_bits(unsafe { entries.add(2 * e + 1).read() });
            unsafe { v.add(i).write(value) };
        }
    }
}
