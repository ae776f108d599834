//! The dense kernels' per-block work: the window every thread of an exact kernel's block
//! shares, and the per-warp sums a dense gradient's partials gather in. Both live in shared memory, so a thread
//! keeps no array of its own and nothing goes to local memory.

use crate::device::{
    SharedArray, WARP_SIZE, block_dim, block_idx, grid_dim, sync_threads, thread_idx,
    warp_reduce_each,
};
use crate::dual::Dual;
use crate::kernel::CompensatedSum;
use crate::kernel::exact::{EXACT_DENSE_WIDTH_MAX_GPU, SeedRuns};
use crate::term::{Data, Term};

/// Derivative lanes per evaluation of a dense term's exact gradient on the GPU: half as many
/// evaluations as four lanes, each still in registers.
pub(in crate::device) const DENSE_LANES_GPU: usize = 8;

/// Derivative lanes per evaluation of a dense term's exact residual row where the triangle
/// kernels fold rows by reflections. Fewer than the gradient's: the fold holds many registers,
/// and eight lanes spill there on sm_70 and sm_80. Their Gram sums take [`DENSE_LANES_GPU`].
pub(in crate::device) const ROW_LANES_GPU: usize = 4;

/// The f64s of the shared window at the widest dense window the GPU's exact kernels take, at
/// the most lanes: its constants and its seeds, `DENSE_LANES_GPU + 1` values per dual (9 KiB).
const WINDOW_VALUES: usize = 2 * EXACT_DENSE_WIDTH_MAX_GPU * (DENSE_LANES_GPU + 1);
const _: () = assert!(WINDOW_VALUES == 1152 && ROW_LANES_GPU <= DENSE_LANES_GPU);

/// The per-warp sums at the widest window, for a block of 1024 threads (16 KiB).
const WARP_SUM_VALUES: usize = EXACT_DENSE_WIDTH_MAX_GPU * 1024 / WARP_SIZE;
const _: () = assert!(WARP_SUM_VALUES == 2048);

/// The dense window `x` seeded for every group of `L` variables ([`SeedRuns`]), written once
/// into the block's shared memory. Every thread of the block calls it (it holds a barrier); a
/// kernel calls it once, before any thread reads the window.
///
/// # Safety
/// `x.len() ≤ EXACT_DENSE_WIDTH_MAX_GPU` and `L ≤ DENSE_LANES_GPU`.
#[inline(always)]
pub(in crate::device) unsafe fn shared_window<'s, const L: usize>(x: &[f64]) -> SeedRuns<'s, L> {
    let array = crate::shared_array!(cudamin_dense_window, 1152);
    let n = x.len();
    for i in (thread_idx()..2 * n * (L + 1)).step_by(block_dim()) {
        array.set(i, SeedRuns::<L>::layout_value(x, i));
    }
    sync_threads();
    let duals = array.as_ptr().cast::<Dual<L>>();
    // SAFETY: `Dual` is `repr(C)` over f64s, and the array holds the `2n` duals just written;
    // no thread writes them again during the kernel.
    unsafe {
        SeedRuns::new(
            core::slice::from_raw_parts(duals, n),
            core::slice::from_raw_parts(duals.add(n), n),
        )
    }
}

/// Running sums of a dense gradient's `n` partials, one set per warp of the block: each
/// derivative (or difference) is summed over the warp by shuffles, and the warp's first lane
/// adds that to its set. The block's sets are combined once, at the end, in warp order: the same
/// bits on every run.
pub(in crate::device) struct WarpSums {
    array: SharedArray<2048>,
    n: usize,
}

impl WarpSums {
    /// Zeroed sums of `n ≤ EXACT_DENSE_WIDTH_MAX_GPU` partials. Every thread of the block calls
    /// it (it holds a barrier).
    #[inline(always)]
    pub(in crate::device) fn new(n: usize) -> Self {
        let array = crate::shared_array!(cudamin_dense_warp_sums, 2048);
        for i in (thread_idx()..block_dim().div_ceil(WARP_SIZE) * n).step_by(block_dim()) {
            array.set(i, 0.0);
        }
        sync_threads();
        WarpSums { array, n }
    }

    /// Adds the warp's sums of every lane's `d` to partials `first ..` (those below `n`).
    /// Every lane of the warp calls it with the same `first`.
    #[inline(always)]
    pub(in crate::device) fn add<const L: usize>(&self, first: usize, d: [f64; L]) {
        let warp = thread_idx() / WARP_SIZE;
        let lanes = (block_dim() - warp * WARP_SIZE).min(WARP_SIZE);
        let sums = warp_reduce_each(d, lanes, |a, b| a + b);
        if thread_idx() % WARP_SIZE == 0 {
            // Lanes by constant index: an iterator over the array by value kept it in local
            // memory.
            for (lane, sum) in sums.iter().enumerate() {
                let at = warp * self.n + first + lane;
                if first + lane < self.n {
                    self.array.set(at, self.array.get(at) + sum);
                }
            }
        }
    }

    /// Writes the block's sum of partial `j`, the warps' sums in warp order, to `mine[j]`.
    /// Every thread of the block calls it (it holds a barrier).
    ///
    /// # Safety
    /// `mine` holds the block's `n` partials.
    #[inline(always)]
    pub(in crate::device) unsafe fn write(&self, mine: *mut f64) {
        sync_threads();
        for j in (thread_idx()..self.n).step_by(block_dim()) {
            let mut sum = 0.0;
            for warp in 0..block_dim().div_ceil(WARP_SIZE) {
                sum += self.array.get(warp * self.n + j);
            }
            // SAFETY: entry `j` of the block's own partials, written by this thread alone.
            unsafe { mine.add(j).write(sum) };
        }
    }
}

/// Dense exact gradient, first stage: the block's `n` partial sums of `∇f` into
/// `partials[block·n ..]`. The block takes tiles of `blockDim` terms, one term per thread;
/// each thread evaluates its term on the block's shared window ([`shared_window`]),
/// `DENSE_LANES_GPU` variables per evaluation, and each derivative joins its warp's sums
/// ([`WarpSums`]). With `value`, each thread also adds up its terms' values.
///
/// # Safety
/// `partials` holds `n · gridDim` f64; `n ≤ EXACT_DENSE_WIDTH_MAX_GPU`.
#[inline(always)]
pub(in crate::device) unsafe fn dense_exact_partials<T: Term>(
    x: &[f64],
    data: Data<'_>,
    partials: *mut f64,
    mut value: Option<&mut CompensatedSum>,
) {
    let n = x.len();
    let terms = T::terms(n, data);
    let window = unsafe { shared_window::<DENSE_LANES_GPU>(x) };
    let sums = WarpSums::new(n);
    let tiles = terms.div_ceil(block_dim());
    let mut tile = block_idx();
    // Uniform over the block: every lane of a warp reaches each shuffle.
    while tile < tiles {
        let k = tile * block_dim() + thread_idx();
        let local = (k < terms).then(|| T::prepare(k, n, data));
        for first in (0..n).step_by(DENSE_LANES_GPU) {
            let result = local.as_ref().map(|l| window.eval::<T>(l, first));
            if let (Some(result), Some(value), 0) = (result, value.as_deref_mut(), first) {
                value.add(result.value);
            }
            sums.add(
                first,
                result.map_or([0.0; DENSE_LANES_GPU], |r| r.derivatives),
            );
        }
        tile += grid_dim();
    }
    unsafe { sums.write(partials.add(block_idx() * n)) };
}
