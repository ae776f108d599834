//! The sorting network that orders a Cauchy path's breakpoints on the device: a bitonic sort
//! whose comparators all put the lesser entry first. A stage opens by comparing each entry of
//! a run with its mirror in the next (a *flip*), so no comparator ever sorts downward. An array
//! of any length then sorts as if padded with `+∞` up to a power of two: the padding would
//! never move, so it is neither stored nor compared.
//!
//! Entries are `(time, index)` pairs in the path's order: by time, then by index. Indices are
//! distinct, so the order is total and the result the same on every device and launch shape.
//!
//! The launches ([`sort_launches`]) sort tiles of [`SORT_TILE`] entries in a block's shared
//! memory, then merge longer runs with one launch per step whose pairs span tiles, and finish
//! each merge in the tiles again. The host runs the same plan; a test here runs it on the CPU.

/// Entries one block sorts in shared memory: the steps whose pairs lie within a tile run there
/// in one launch.
pub const SORT_TILE: usize = 1024;

/// One step of the network: each entry `i` whose bit `half` is clear is compared with its
/// partner `i ^ (2·half − 1)` (a flip) or `i ^ half`, and the lesser goes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SortStep {
    /// Half the span of the runs the step works in (a power of two).
    pub half: usize,
    /// Whether each entry meets its mirror in the span, rather than the entry `half` past it.
    pub flip: bool,
}

impl SortStep {
    /// Pair `t`'s two positions, the lower first. Pairs `0..len/2` cover a power-of-two length.
    #[inline(always)]
    pub fn pair(self, t: usize) -> (usize, usize) {
        let i = (t / self.half) * 2 * self.half + t % self.half;
        let mask = if self.flip {
            2 * self.half - 1
        } else {
            self.half
        };
        (i, i ^ mask)
    }

    /// Whether its pairs lie within one tile.
    #[inline(always)]
    pub fn in_tile(self) -> bool {
        2 * self.half <= SORT_TILE
    }
}

/// Whether entry `a` comes before entry `b`: by time, then by index.
#[inline(always)]
pub fn sorts_before(a: (f64, u64), b: (f64, u64)) -> bool {
    a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// Calls `visit` with each step of the stages for runs of `first_span` up to `last_span` (powers
/// of two, the first at least 2), in order: each stage's flip, then its halves down to 1.
#[inline(always)]
pub fn for_each_step(first_span: usize, last_span: usize, mut visit: impl FnMut(SortStep)) {
    let mut span = first_span;
    while span <= last_span {
        visit(SortStep {
            half: span / 2,
            flip: true,
        });
        let mut half = span / 4;
        while half >= 1 {
            visit(SortStep { half, flip: false });
            half /= 2;
        }
        span *= 2;
    }
}

/// The steps one tile launch runs, in order: with `start`, every stage up to runs of a whole
/// tile; without, the halves that finish a longer merge.
#[inline(always)]
pub fn for_each_tile_step(start: bool, mut visit: impl FnMut(SortStep)) {
    if start {
        for_each_step(2, SORT_TILE, visit);
    } else {
        let mut half = SORT_TILE / 2;
        while half >= 1 {
            visit(SortStep { half, flip: false });
            half /= 2;
        }
    }
}

/// One launch of the sort's plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortLaunch {
    /// Each tile in shared memory ([`for_each_tile_step`]); `start` makes the entries from
    /// the times first.
    Tiles {
        /// Whether this is the first launch, which makes the entries.
        start: bool,
    },
    /// One step whose pairs span tiles, a thread a pair.
    Step(SortStep),
}

/// The launches that sort `len` entries, in order.
pub fn sort_launches(len: usize, mut visit: impl FnMut(SortLaunch)) {
    visit(SortLaunch::Tiles { start: true });
    let mut span = 2 * SORT_TILE;
    while span < 2 * len {
        for_each_step(span, span, |step| {
            if !step.in_tile() {
                visit(SortLaunch::Step(step));
            }
        });
        visit(SortLaunch::Tiles { start: false });
        span *= 2;
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// Compares and swaps pair `(i, l)` of `entries` where `l` is stored.
    fn exchange(entries: &mut [(f64, u64)], (i, l): (usize, usize)) {
        if l < entries.len() && sorts_before(entries[l], entries[i]) {
            entries.swap(i, l);
        }
    }

    /// The plan run on the CPU as the device runs it: tile by tile, then step by step.
    fn sort_as_the_device(entries: &mut [(f64, u64)]) {
        let len = entries.len();
        let pairs = len.next_power_of_two() / 2;
        sort_launches(len, |launch| match launch {
            SortLaunch::Tiles { start } => {
                for base in (0..len).step_by(SORT_TILE) {
                    for_each_tile_step(start, |step| {
                        for t in 0..SORT_TILE / 2 {
                            let (i, l) = step.pair(t);
                            exchange(entries, (base + i, base + l));
                        }
                    });
                }
            }
            SortLaunch::Step(step) => {
                for t in 0..pairs {
                    exchange(entries, step.pair(t));
                }
            }
        });
    }

    #[test]
    fn the_network_sorts_any_length_with_ties() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for len in [
            0, 1, 2, 3, 5, 1000, 1024, 1025, 2047, 2048, 3000, 4097, 9001,
        ] {
            let mut entries: Vec<(f64, u64)> = (0..len as u64)
                .map(|i| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Few distinct times, so many ties; some never met.
                    let t = match state % 50 {
                        0 => f64::INFINITY,
                        k => (k % 17) as f64 * 0.25,
                    };
                    (t, i)
                })
                .collect();
            let mut expected = entries.clone();
            expected.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            sort_as_the_device(&mut entries);
            assert_eq!(entries, expected, "length {len}");
        }
    }

    #[test]
    fn launches_grow_with_the_square_of_the_doublings_past_a_tile() {
        let count = |len| {
            let mut launches = 0;
            sort_launches(len, |_| launches += 1);
            launches
        };
        assert_eq!(count(SORT_TILE), 1);
        // Runs of 2 tiles: a flip and a tile launch.
        assert_eq!(count(2 * SORT_TILE), 3);
        assert_eq!(count(2 * SORT_TILE + 1), 3 + 3);
        // 2²⁴ entries: 14 merges, 14 flips, 91 steps between tiles besides.
        assert_eq!(count(1 << 24), 1 + 14 + 14 + 91);
    }
}
