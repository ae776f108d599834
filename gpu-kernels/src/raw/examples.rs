//! The two raw-kernel examples of the seed articles, written the Numba way.

use crate::raw::{Out, Thread};

/// `out[i] = x[i]² + 2·x[i] + 1`, a grid-stride loop. Runs on the GPU and on the CPU.
pub fn square_plus_two_x_plus_one(thread: Thread, x: &[f64], out: Out<'_>) {
    for i in thread.grid_stride(x.len().min(out.len())) {
        out.set(i, x[i] * x[i] + 2.0 * x[i] + 1.0);
    }
}

crate::grid_kernel!(SQUARE_PLUS_TWO_X_PLUS_ONE = square_plus_two_x_plus_one(x: In, out: Out));

/// `out[0] += x·y`: each block reduces its threads' partial sums in shared memory (a tree over
/// the next power of two, so any block size up to 1024 works: one cache slot per thread), then
/// adds the block's sum atomically. GPU-only.
#[cfg(target_arch = "nvptx64")]
pub fn dot_shared(block: crate::raw::Block, x: &[f64], y: &[f64], out: Out<'_>) {
    let cache = crate::shared_array!(cudamin_dot_cache, 1024);
    let t = block.thread_idx();
    let threads = block.block_dim();
    let mut sum = 0.0;
    for i in block.thread().grid_stride(x.len().min(y.len())) {
        sum += x[i] * y[i];
    }
    cache.set(t, sum);
    block.sync();
    let mut half = threads.next_power_of_two() / 2;
    while half > 0 {
        if t < half && t + half < threads {
            cache.set(t, cache.get(t) + cache.get(t + half));
        }
        block.sync();
        half /= 2;
    }
    if t == 0 {
        out.add(0, cache.get(0));
    }
}

crate::block_kernel!(DOT_SHARED = dot_shared(x: In, y: In, out: Out));
