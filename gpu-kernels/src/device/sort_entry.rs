//! PTX entry points of the breakpoint sort ([`crate::sort`]): the entries the Cauchy walk reads
//! in order once it has passed the earliest. `keys` holds the times, `∞` for a variable that is
//! no breakpoint after the given one; `indices` holds each entry's variable as a `u64` word.

pub(crate) use nvptx::*;

mod nvptx {
    use crate::bounds::is_breakpoint_after;
    use crate::device::thread_idx;
    use crate::device::{SharedArray, block_dim, block_idx, grid_dim, grid_stride, sync_threads};
    use crate::sort::{SORT_TILE, SortStep, for_each_tile_step, sorts_before};

    // The shared arrays below are declared with this length written out.
    const _: () = assert!(SORT_TILE == 1024);

    /// A stored entry: position `i` of `keys` and `indices`.
    ///
    /// # Safety
    /// Both hold more than `i` f64.
    #[inline(always)]
    unsafe fn entry(keys: *const f64, indices: *const f64, i: usize) -> (f64, u64) {
        unsafe { (keys.add(i).read(), indices.add(i).read().to_bits()) }
    }

    /// Stores entry `e` at position `i`.
    ///
    /// # Safety
    /// Both hold more than `i` f64, which no other thread touches meanwhile.
    #[inline(always)]
    unsafe fn store(keys: *mut f64, indices: *mut f64, i: usize, e: (f64, u64)) {
        unsafe {
            keys.add(i).write(e.0);
            indices.add(i).write(f64::from_bits(e.1));
        }
    }

    /// Each tile of [`SORT_TILE`] entries through its steps ([`for_each_tile_step`]) in shared
    /// memory, a block a tile at a time. With `times` not null (the start), the entries are
    /// made first: variable `i`'s time where it is a breakpoint after `(after_time,
    /// after_index)`, else `∞`. Past `n` a tile holds padding that sorts last and is not
    /// stored.
    #[inline(always)]
    pub(crate) unsafe fn sort_tiles(
        n: usize,
        times: *const f64,
        after_time: f64,
        after_index: usize,
        keys: *mut f64,
        indices: *mut f64,
    ) {
        // SAFETY: the launcher passes `n` f64 for each of `keys` and `indices` (and `times`
        // where not null); between two barriers each position of a tile is written by one
        // thread alone, and each tile belongs to one block.
        let tile_keys: SharedArray<1024> = crate::shared_array!(cudamin_sort_keys, 1024);
        let tile_indices: SharedArray<1024> = crate::shared_array!(cudamin_sort_indices, 1024);
        let tile_entry = |i: usize| (tile_keys.get(i), tile_indices.get(i).to_bits());
        let padding = (f64::INFINITY, u64::MAX);
        let start = !times.is_null();
        // The loop bound is the block's alone, so all its threads reach each barrier.
        let mut base = block_idx() * SORT_TILE;
        while base < n {
            let mut local = thread_idx();
            while local < SORT_TILE {
                let i = base + local;
                let e = if i >= n {
                    padding
                } else if start {
                    let t = unsafe { times.add(i).read() };
                    let after = (after_time, after_index);
                    let key = if is_breakpoint_after(t, i, after) {
                        t
                    } else {
                        f64::INFINITY
                    };
                    (key, i as u64)
                } else {
                    unsafe { entry(keys, indices, i) }
                };
                tile_keys.set(local, e.0);
                tile_indices.set(local, f64::from_bits(e.1));
                local += block_dim();
            }
            sync_threads();
            for_each_tile_step(start, |step| {
                let mut t = thread_idx();
                while t < SORT_TILE / 2 {
                    let (i, l) = step.pair(t);
                    let (a, b) = (tile_entry(i), tile_entry(l));
                    if sorts_before(b, a) {
                        tile_keys.set(i, b.0);
                        tile_indices.set(i, f64::from_bits(b.1));
                        tile_keys.set(l, a.0);
                        tile_indices.set(l, f64::from_bits(a.1));
                    }
                    t += block_dim();
                }
                sync_threads();
            });
            let mut local = thread_idx();
            while local < SORT_TILE && base + local < n {
                unsafe { store(keys, indices, base + local, tile_entry(local)) };
                local += block_dim();
            }
            // Every thread is done with this tile before the next one overwrites it.
            sync_threads();
            base += grid_dim() * SORT_TILE;
        }
    }

    /// One step of the network whose pairs span tiles, a thread a pair: the lesser entry of
    /// each first. `flip` is 0 or 1 ([`SortStep::flip`]).
    #[inline(always)]
    pub(crate) unsafe fn sort_step(
        n: usize,
        half: usize,
        flip: usize,
        keys: *mut f64,
        indices: *mut f64,
    ) {
        // SAFETY: the launcher passes `n` f64 for each; the step's pairs are disjoint.
        let step = SortStep {
            half,
            flip: flip != 0,
        };
        for t in grid_stride(n.next_power_of_two() / 2) {
            let (i, l) = step.pair(t);
            if l >= n {
                continue;
            }
            let (key_a, key_b) = unsafe { (keys.add(i).read(), keys.add(l).read()) };
            // Where the keys alone keep the pair as it is, its indices are not read: only a
            // swap moves them, and only a tie compares them.
            if key_a < key_b {
                continue;
            }
            let index = |at: usize| unsafe { indices.add(at).read().to_bits() };
            let (a, b) = ((key_a, index(i)), (key_b, index(l)));
            if sorts_before(b, a) {
                unsafe {
                    store(keys, indices, i, b);
                    store(keys, indices, l, a);
                }
            }
        }
    }
}
