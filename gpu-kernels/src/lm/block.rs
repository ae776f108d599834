//! A fit of many points by a whole block: the block form of a batch kernel
//! ([`batch_kernel!`](crate::batch_kernel)), where a fit has too many points for one thread.
//! Block `b` takes fits `b`, `b + blocks`, …; each of its threads evaluates and folds every
//! [`BLOCK_THREADS`](super::batch::BLOCK_THREADS)-th row into a triangle of its own, the block folds those triangles in a fixed
//! tree in shared memory, and every thread reads the whole's back. Every thread then runs the
//! same Levenberg–Marquardt loop on the same sums, so each takes the same steps and meets the
//! same barriers, and thread 0 writes the report. GPU-only: the CPU runs a fit per task.

use super::batch::{BLOCK, BLOCK_THREADS as THREADS, Crew, PARAMS_MAX, fold_block};
use crate::float::Float;
use crate::raw::Block;
use core::iter::StepBy;
use core::ops::Range;

/// The values a thread's share takes in shared memory.
const SLOT: usize = PARAMS_MAX * PARAMS_MAX + PARAMS_MAX + 1;

/// A block's threads, computing each of its fits together: the crew of a batch kernel's block
/// form. Block `b` of `B` takes fits `b`, `b + B`, …; a block of more than
/// [`BLOCK_THREADS`](super::batch::BLOCK_THREADS) threads takes none.
#[derive(Clone, Copy)]
pub struct Together {
    block: Block,
}

impl Together {
    /// The calling thread's block.
    #[inline(always)]
    pub fn current() -> Self {
        Together {
            block: Block::current(),
        }
    }
}

impl Crew for Together {
    #[inline(always)]
    fn tasks(self, fits: usize) -> StepBy<Range<usize>> {
        let (threads, grid) = (self.block.block_dim(), self.block.thread().threads());
        match threads <= THREADS {
            true => (self.block.block_idx()..fits).step_by(grid / threads),
            false => (0..0).step_by(1),
        }
    }

    #[inline(always)]
    fn share(self, terms: usize) -> StepBy<Range<usize>> {
        (self.block.thread_idx()..terms).step_by(self.block.block_dim())
    }

    fn combine<F: Float>(self, r: &mut [F], qtr: &mut [F], sum: F) -> F {
        let shared = crate::shared_array!(cudamin_lm_block_triangles, 4672);
        const _: () = assert!(THREADS * SLOT == 4672);
        let (t, threads, k) = (self.block.thread_idx(), self.block.block_dim(), qtr.len());
        let own = t * SLOT;
        let store = |r: &[F], qtr: &[F], sum: F| {
            let values = r.iter().chain(qtr).chain([&sum]);
            for (i, v) in values.enumerate() {
                shared.set(own + i, v.value());
            }
        };
        store(r, qtr, sum);
        self.block.sync();
        let mut sum = sum;
        let mut half = threads.next_power_of_two() / 2;
        while half > 0 {
            if t < half && t + half < threads {
                // The other thread's triangle as k rows of [R | Qᵀr], folded into this one's.
                let other = (t + half) * SLOT;
                let mut columns = [F::ZERO; BLOCK * (PARAMS_MAX + 1)];
                for i in 0..k {
                    for j in 0..k {
                        columns[j * BLOCK + i] = F::from_f64(shared.get(other + i * k + j));
                    }
                    columns[k * BLOCK + i] = F::from_f64(shared.get(other + k * k + i));
                }
                fold_block(r, qtr, &mut columns[..(k + 1) * BLOCK]);
                sum += F::from_f64(shared.get(other + k * k + k));
                store(r, qtr, sum);
            }
            self.block.sync();
            half /= 2;
        }
        let whole = r.iter_mut().chain(qtr.iter_mut()).chain([&mut sum]);
        for (i, v) in whole.enumerate() {
            *v = F::from_f64(shared.get(i));
        }
        // No thread writes again before every thread has read.
        self.block.sync();
        sum
    }

    fn total<F: Float>(self, value: F) -> F {
        let shared = crate::shared_array!(cudamin_lm_block_totals, 64);
        const _: () = assert!(THREADS == 64);
        shared.set(self.block.thread_idx(), value.value());
        self.block.sync();
        let mut total = F::ZERO;
        for i in 0..self.block.block_dim() {
            total += F::from_f64(shared.get(i));
        }
        self.block.sync();
        total
    }

    #[inline(always)]
    fn leads(self) -> bool {
        self.block.thread_idx() == 0
    }
}
