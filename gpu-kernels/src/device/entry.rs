//! PTX entry-point bodies of the term kernels: raw arguments in, the shared per-thread work of
//! [`crate::kernel`] over the grid, results out. The generic ones are instantiated per term by
//! [`register_term!`](crate::register_term); the finishing kernels are exported here once.
//!
//! Argument lists (the host launcher passes exactly these; a test checks them against the PTX):
//! - term value / gradient: `(x: *const f64, n: u64, data: *const f64, data_len: u64,
//!   data_rows: u64, out: *mut f64)`;
//! - [`SUM_PARTIALS`](crate::kernel::SUM_PARTIALS): `(partials: *const f64, count: u64, out: *mut f64)`;
//! - the dense finishing kernels: `(x: *const f64, n: u64, partials: *const f64, blocks: u64,
//!   g: *mut f64)`.

pub use nvptx::*;

mod nvptx {
    use crate::device::{
        block_dim, block_idx, block_reduce_sum, grid_dim, grid_stride, slice, slice_mut, thread_idx,
    };
    use crate::fd::{Central, FdScheme, Forward};
    use crate::kernel::{
        CompensatedSum, DenseTerm, banded_group_gradient, dense_gradient_component,
        gradient_groups, term_value,
    };
    use crate::term::{Data, Term, Window};

    /// `x` and the data as the term kernels' raw arguments describe them.
    ///
    /// # Safety
    /// `x` holds `n` f64 and `data` holds `data_len`, neither written during the kernel.
    #[inline(always)]
    unsafe fn term_inputs<'a>(
        x: *const f64,
        n: usize,
        data: *const f64,
        data_len: usize,
        data_rows: usize,
    ) -> (&'a [f64], Data<'a>) {
        let x = unsafe { slice(x, n) };
        (x, Data::new(unsafe { slice(data, data_len) }, data_rows))
    }

    /// Value kernel: `partials[block] = Σ φ_k(x)` over the block's grid-stride share of terms.
    ///
    /// # Safety
    /// `x` holds `n` f64, `data` holds `data_len`, `partials` has one slot per block.
    #[inline(always)]
    pub unsafe fn value<T: Term>(
        x: *const f64,
        n: usize,
        data: *const f64,
        data_len: usize,
        data_rows: usize,
        partials: *mut f64,
    ) {
        let (x, data) = unsafe { term_inputs(x, n, data, data_len, data_rows) };
        let mut sum = CompensatedSum::default();
        for k in grid_stride(T::terms(n, data)) {
            sum.add(term_value::<T>(k, x, data));
        }
        let block_sum = block_reduce_sum(sum.value());
        if thread_idx() == 0 {
            unsafe { partials.add(block_idx()).write(block_sum) };
        }
    }

    /// Gradient kernel. Banded windows: `out` is the gradient, each thread gathers its groups.
    /// Dense windows: `out` holds `n` partial sums per block, finished by
    /// the dense finishing kernels.
    ///
    /// # Safety
    /// As [`value`]; `out` holds `n` f64 (banded) or `n · gridDim` f64 (dense).
    #[inline(always)]
    pub unsafe fn gradient<T: Term, S: FdScheme>(
        x: *const f64,
        n: usize,
        data: *const f64,
        data_len: usize,
        data_rows: usize,
        out: *mut f64,
    ) {
        let (x, data) = unsafe { term_inputs(x, n, data, data_len, data_rows) };
        match T::WINDOW {
            Window::Dense => unsafe { dense_partials::<T, S>(x, data, out) },
            Window::Separable | Window::Banded { .. } => {
                let (stride, _) = T::WINDOW.stride_width(n);
                for group in grid_stride(gradient_groups::<T>(n)) {
                    let first = group * stride;
                    let len = stride.min(n - first);
                    // SAFETY: groups are disjoint and each belongs to one thread.
                    let g = unsafe { slice_mut(out.add(first), len) };
                    banded_group_gradient::<T, S>(group, x, data, g);
                }
            }
        }
    }

    /// Dense gradient, first stage. The block takes tiles of `blockDim` terms, one term per
    /// thread; each term is prepared once, then for every variable the block sums the terms'
    /// differences and thread 0 adds that to the block's partial, tile after tile in order.
    #[inline(always)]
    unsafe fn dense_partials<T: Term, S: FdScheme>(x: &[f64], data: Data<'_>, partials: *mut f64) {
        let n = x.len();
        let terms = T::terms(n, data);
        let mine = unsafe { partials.add(block_idx() * n) };
        if thread_idx() == 0 {
            for i in 0..n {
                unsafe { mine.add(i).write(0.0) };
            }
        }
        let tiles = terms.div_ceil(block_dim());
        let mut tile = block_idx();
        while tile < tiles {
            let k = tile * block_dim() + thread_idx();
            let term = (k < terms).then(|| DenseTerm::<T>::prepare::<S>(k, x, data));
            for i in 0..n {
                let d = term.as_ref().map_or(0.0, |t| t.difference::<S>(x, i));
                let sum = block_reduce_sum(d);
                if thread_idx() == 0 {
                    // SAFETY: the block's own partials, written by thread 0 only.
                    unsafe { *mine.add(i) += sum };
                }
            }
            tile += grid_dim();
        }
    }

    /// Second stage of the dense gradient: `g_i = Σ_b partials[b·n + i] / spacing(x_i)`.
    #[inline(always)]
    unsafe fn dense_finish<S: FdScheme>(
        x: *const f64,
        n: usize,
        partials: *const f64,
        blocks: usize,
        g: *mut f64,
    ) {
        let x = unsafe { slice(x, n) };
        let partials = unsafe { slice(partials, n * blocks) };
        for i in grid_stride(n) {
            let gi = dense_gradient_component::<S>(x[i], (0..blocks).map(|b| partials[b * n + i]));
            unsafe { g.add(i).write(gi) };
        }
    }

    #[unsafe(export_name = "cudamin_dense_finish_forward")]
    unsafe extern "ptx-kernel" fn dense_finish_forward(
        x: *const f64,
        n: usize,
        partials: *const f64,
        blocks: usize,
        g: *mut f64,
    ) {
        // SAFETY: the launcher passes `n` variables and `blocks · n` partials.
        unsafe { dense_finish::<Forward>(x, n, partials, blocks, g) }
    }

    #[unsafe(export_name = "cudamin_dense_finish_central")]
    unsafe extern "ptx-kernel" fn dense_finish_central(
        x: *const f64,
        n: usize,
        partials: *const f64,
        blocks: usize,
        g: *mut f64,
    ) {
        // SAFETY: as above.
        unsafe { dense_finish::<Central>(x, n, partials, blocks, g) }
    }

    /// `out[0] = Σ partials`, summed by one block in a fixed order.
    #[unsafe(export_name = "cudamin_sum_partials")]
    unsafe extern "ptx-kernel" fn sum_partials(partials: *const f64, count: usize, out: *mut f64) {
        // SAFETY: the launcher passes `count` partials and one output slot.
        let partials = unsafe { slice(partials, count) };
        let mut sum = 0.0;
        let mut i = thread_idx();
        while i < count {
            sum += partials[i];
            i += block_dim();
        }
        let total = block_reduce_sum(sum);
        if thread_idx() == 0 {
            unsafe { out.write(total) };
        }
    }
}
