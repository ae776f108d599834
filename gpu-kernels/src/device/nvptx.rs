//! nvptx64 implementations of the device prelude.

use super::{MAX_BLOCK_THREADS, WARP_SIZE};
use core::arch::{asm, nvptx};

// SAFETY (all four): reading the special index registers has no preconditions.
/// `threadIdx.x`.
#[inline(always)]
pub fn thread_idx() -> usize {
    unsafe { nvptx::_thread_idx_x() as usize }
}
/// `blockIdx.x`.
#[inline(always)]
pub fn block_idx() -> usize {
    unsafe { nvptx::_block_idx_x() as usize }
}
/// `blockDim.x`.
#[inline(always)]
pub fn block_dim() -> usize {
    unsafe { nvptx::_block_dim_x() as usize }
}
/// `gridDim.x`.
#[inline(always)]
pub fn grid_dim() -> usize {
    unsafe { nvptx::_grid_dim_x() as usize }
}

/// This thread's index in the grid, `cuda.grid(1)` in Numba.
#[inline(always)]
pub fn global_thread_idx() -> usize {
    block_idx() * block_dim() + thread_idx()
}

/// Threads in the grid, `cuda.gridsize(1)` in Numba.
#[inline(always)]
pub fn grid_threads() -> usize {
    grid_dim() * block_dim()
}

/// The indices `0..n` this thread handles in a grid-stride loop.
#[inline(always)]
pub fn grid_stride(n: usize) -> core::iter::StepBy<core::ops::Range<usize>> {
    (global_thread_idx()..n).step_by(grid_threads())
}

/// `__syncthreads()`. Every thread of the block must reach it.
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: a barrier; callers keep it out of divergent branches.
    unsafe { nvptx::_syncthreads() }
}

// The block reduction's scratch has one slot per warp of the largest block.
const _: () = assert!(MAX_BLOCK_THREADS / WARP_SIZE == 32);

/// `__shfl_down_sync(mask, v, delta)` for an f64 (two 32-bit shuffles). Every lane in `mask`
/// must call it, with the same mask.
#[inline(always)]
pub fn shfl_down(v: f64, delta: u32, mask: u32) -> f64 {
    let out: f64;
    // SAFETY: a warp shuffle over the lanes in `mask`, which the callers make the lanes that
    // exist.
    unsafe {
        asm!(
            "{{ .reg .b32 lo, hi;",
            "mov.b64 {{lo, hi}}, {v};",
            "shfl.sync.down.b32 lo, lo, {d}, 0x1f, {m};",
            "shfl.sync.down.b32 hi, hi, {d}, 0x1f, {m};",
            "mov.b64 {o}, {{lo, hi}}; }}",
            v = in(reg64) v,
            d = in(reg32) delta,
            m = in(reg32) mask,
            o = out(reg64) out,
        )
    };
    out
}

/// `v` combined over the warp's first `lanes` lanes (`1..=32`: the lanes that exist; the last
/// warp of a block whose size is not a multiple of 32 has fewer), valid in lane 0. Every one
/// of those lanes must call it. The tree is fixed, so the result is reproducible.
#[inline(always)]
pub fn warp_reduce(v: f64, lanes: usize, combine: impl Fn(f64, f64) -> f64) -> f64 {
    let [v] = warp_reduce_each([v], lanes, combine);
    v
}

/// Each of `v`'s `L` values combined over the warp as [`warp_reduce`] combines one, by the same
/// tree, so each has the bits it would have alone. One loop over the tree with the values
/// inside keeps them in registers.
#[inline(always)]
pub fn warp_reduce_each<const L: usize>(
    mut v: [f64; L],
    lanes: usize,
    combine: impl Fn(f64, f64) -> f64,
) -> [f64; L] {
    let lane = thread_idx() % WARP_SIZE;
    let mask = if lanes >= WARP_SIZE {
        u32::MAX
    } else {
        (1u32 << lanes) - 1
    };
    let mut delta = WARP_SIZE / 2;
    while delta > 0 {
        // Every lane shuffles (the instruction needs the whole mask); only a value from a lane
        // that exists is combined.
        let exists = lane + delta < lanes;
        for value in &mut v {
            let other = shfl_down(*value, delta as u32, mask);
            if exists {
                *value = combine(*value, other);
            }
        }
        delta /= 2;
    }
    v
}

/// `v` combined over the block, valid in thread 0, `identity` being `combine`'s neutral
/// value. Every thread of the block must call it; any block size works. Deterministic: warp
/// trees, then the warps' results in warp order. Ends with a barrier, so it can be called
/// again at once.
#[inline(always)]
pub fn block_reduce(v: f64, identity: f64, combine: impl Fn(f64, f64) -> f64 + Copy) -> f64 {
    let threads = block_dim();
    let lane = thread_idx() % WARP_SIZE;
    let warp = thread_idx() / WARP_SIZE;
    let warps = threads.div_ceil(WARP_SIZE);
    let scratch = crate::shared_array!(cudamin_reduce_scratch, 32);
    let warp_result = warp_reduce(v, (threads - warp * WARP_SIZE).min(WARP_SIZE), combine);
    if lane == 0 {
        scratch.set(warp, warp_result);
    }
    sync_threads();
    let mut total = identity;
    if warp == 0 {
        // The barrier made the warps' results visible.
        let mine = if lane < warps {
            scratch.get(lane)
        } else {
            identity
        };
        total = warp_reduce(mine, threads.min(WARP_SIZE), combine);
    }
    sync_threads();
    total
}

/// Sum of `v` over the block: [`block_reduce`] with `+`.
#[inline(always)]
pub fn block_reduce_sum(v: f64) -> f64 {
    block_reduce(v, 0.0, |a, b| a + b)
}

/// `atomicAdd(address, value)` on global memory; returns the old value. Not used by the
/// term kernels (their sums are deterministic); for raw kernels that want it.
///
/// # Safety
/// `address` must point to an f64 in global memory.
#[inline(always)]
pub unsafe fn atomic_add_f64(address: *mut f64, value: f64) -> f64 {
    let old: f64;
    // SAFETY: the caller guarantees a global f64 address.
    unsafe {
        asm!(
            "{{ .reg .u64 g;",
            "cvta.to.global.u64 g, {a};",
            "atom.global.add.f64 {o}, [g], {v}; }}",
            a = in(reg64) address,
            v = in(reg64) value,
            o = out(reg64) old,
        )
    };
    old
}

/// `__threadfence()`: this thread's global writes before it are seen by every thread of the
/// device before its writes after it.
#[inline(always)]
pub fn fence() {
    // SAFETY: a memory fence; no operands.
    unsafe { asm!("membar.gl;") }
}

/// Whether this block is the last of the grid to get here: each block's caller takes one
/// ticket from the counter at `ticket`, and the block that takes the last one gets `true`. The
/// global writes any block made before its ticket are then visible to the caller, which may
/// finish the launch's work in the same launch (CUDA's "last block" reduction). The last block
/// sets the counter back to 0 for the next launch.
///
/// One thread per block calls it, once, after its block's writes.
///
/// # Safety
/// `ticket` points to a u64 in global memory that is 0 when the launch starts and that
/// nothing else touches during it.
#[inline(always)]
pub unsafe fn last_block(ticket: *mut u64) -> bool {
    let taken: u64;
    // SAFETY: the caller guarantees a global u64. The fence orders this block's earlier
    // writes before its ticket, so the block that takes the last ticket sees them all.
    unsafe {
        asm!(
            "{{ .reg .u64 g;",
            "membar.gl;",
            "cvta.to.global.u64 g, {a};",
            "atom.global.add.u64 {o}, [g], 1; }}",
            a = in(reg64) ticket,
            o = out(reg64) taken,
        )
    };
    let last = taken + 1 == grid_dim() as u64;
    if last {
        // The fence orders the other blocks' writes before this block's reads.
        fence();
        // SAFETY: as above.
        unsafe { ticket.write_volatile(0) };
    }
    last
}

/// A kernel argument pair `(ptr, len)` as a slice. A zero length may come with a null pointer.
///
/// # Safety
/// `ptr` must point to `len` initialized f64 that nothing writes during the kernel.
#[inline(always)]
pub unsafe fn slice<'a>(ptr: *const f64, len: usize) -> &'a [f64] {
    if len == 0 {
        &[]
    } else {
        unsafe { core::slice::from_raw_parts(ptr, len) }
    }
}

/// As [`slice`], writable.
///
/// # Safety
/// `ptr` must point to `len` f64 that no other thread accesses while the slice lives.
#[inline(always)]
pub unsafe fn slice_mut<'a>(ptr: *mut f64, len: usize) -> &'a mut [f64] {
    if len == 0 {
        &mut []
    } else {
        unsafe { core::slice::from_raw_parts_mut(ptr, len) }
    }
}

/// On the GPU a panic (an out-of-bounds index, say) traps the kernel; the host sees a launch
/// failure. `-Cpanic=immediate-abort` already inlines the trap at every panic site.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` aborts the kernel; it has no preconditions.
    unsafe { nvptx::trap() }
}
