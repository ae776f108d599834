//! PTX entry-point bodies of the term kernels: raw arguments in, the shared per-thread work of
//! [`crate::kernel`] over the grid, results out. The generic ones are instantiated per term by
//! [`register_term!`](crate::register_term).
//!
//! Argument lists (the host launcher passes exactly these; a test checks them against the PTX):
//! - term value / gradient: `(x: *const f64, n: u64, lower: *const f64, upper: *const f64,
//!   data: *const f64, data_len: u64, data_rows: u64, data_type: u64, out: *mut f64,
//!   values: *mut f64)`: the gradient in `out`, the value in `values[0]` (laid out as
//!   `VALUE_HEAD` says); `lower` and `upper` (`n` each, or both null for none) the box
//!   finite-difference points stay in; `data_len` values of type `DataType::ALL[data_type]`;
//! - a residual term's triangle and cost kernels: the term kernels' list with `loss: u64,
//!   f_scale: f64` before `out` (see `ResidualKernels`);
//! - the vector kernels of a solver that keeps its vectors on the device are in
//!   `vector_entry.rs`, and the least-squares triangle's block work in `triangle_entry.rs`.

pub use nvptx::*;

mod nvptx {
    use crate::device::dense_entry::{
        DENSE_LANES_GPU, ROW_LANES_GPU, WarpSums, dense_exact_partials, shared_window,
    };
    use crate::device::triangle_entry::triangle_partials;
    use crate::device::{
        block_dim, block_idx, block_reduce_sum, fence, grid_dim, grid_stride, last_block, slice,
        slice_mut, sync_threads, thread_idx,
    };
    use crate::fd::{FdScheme, StepBox};
    use crate::kernel::exact::{EXACT_DENSE_WIDTH_MAX_GPU, banded_group_gradient_exact};
    use crate::kernel::gram::Reduction;
    use crate::kernel::loss::{Loss, RobustLoss};
    use crate::kernel::normal::{DifferenceRow, SharedExactRow};
    use crate::kernel::{
        CompensatedSum, DenseTerm, GradientWork, VALUE_HEAD, banded_group_gradient,
        dense_gradient_component, sum_in_order, term_value, value_partial,
    };
    use crate::scheme::{Differences, Exact, Scheme};
    use crate::term::{Data, Term};
    use crate::{DataType, Values};

    /// The box `lower`, `upper` describe: `n` f64 each, or none where both are null.
    ///
    /// # Safety
    /// `lower` and `upper` are both null or both hold `n` f64, not written during the kernel.
    #[inline(always)]
    unsafe fn step_box<'a>(lower: *const f64, upper: *const f64, n: usize) -> StepBox<'a> {
        if lower.is_null() || upper.is_null() {
            StepBox::OPEN
        } else {
            unsafe { StepBox::new(slice(lower, n), slice(upper, n)) }
        }
    }

    /// `x`, the box and the data as the term kernels' raw arguments describe them.
    ///
    /// # Safety
    /// `x` holds `n` f64, the box is as [`step_box`] needs, and `data` holds `data_len` values
    /// of type `DataType::ALL[data_type]`, none written during the kernel. An unknown type
    /// reads as no values: every read is NaN, which the solvers report.
    #[inline(always)]
    unsafe fn term_inputs<'a>(
        x: *const f64,
        n: usize,
        (lower, upper): (*const f64, *const f64),
        (data, data_len, data_rows, data_type): (*const f64, usize, usize, usize),
    ) -> (&'a [f64], StepBox<'a>, Data<'a>) {
        let x = unsafe { slice(x, n) };
        let bounds = unsafe { step_box(lower, upper, n) };
        let values = match DataType::from_index(data_type) {
            Some(DataType::F64) => Values::F64(unsafe { slice(data, data_len) }),
            // SAFETY: the host uploaded `data_len` f32 there.
            Some(DataType::F32) if data_len > 0 => {
                Values::F32(unsafe { core::slice::from_raw_parts(data.cast::<f32>(), data_len) })
            }
            Some(DataType::F32) | None => Values::F64(&[]),
        };
        (x, bounds, Data::of(values, data_rows))
    }

    /// Writes the block's sum of the threads' `value` partials to `values[block]`, when the
    /// launch asked for values (`values` not null: uniform over the grid, so every thread of
    /// the block reaches the reduction or none does).
    #[inline(always)]
    pub(in crate::device) unsafe fn block_value(value: f64, values: *mut f64) {
        if values.is_null() {
            return;
        }
        let block_sum = block_reduce_sum(value);
        if thread_idx() == 0 {
            // SAFETY: the launcher passes one slot per block.
            unsafe { values.add(block_idx()).write(block_sum) };
        }
    }

    /// The value into `values[0]`: every block's partial added in block order, as the CPU adds
    /// its chunks' ([`sum_in_order`]). One thread of the last block calls it.
    ///
    /// # Safety
    /// `values` holds `VALUE_HEAD` slots and one per block, every block's partial written and
    /// visible to this thread.
    #[inline(always)]
    unsafe fn sum_blocks(values: *mut f64) {
        // SAFETY: the head and one slot per block.
        unsafe {
            let partials = values.add(VALUE_HEAD);
            let sum = sum_in_order((0..grid_dim()).map(|b| partials.add(b).read_volatile()));
            values.write(sum);
        }
    }

    /// Sums the threads' `value` partials into `values[0]` in the same launch: each block's
    /// into its slot after the head ([`block_value`]), then the block that finishes last adds
    /// them all ([`sum_blocks`]). Every thread of the block calls it.
    ///
    /// # Safety
    /// `values` holds `VALUE_HEAD` slots and one per block, its ticket 0 at the launch.
    #[inline(always)]
    unsafe fn finish_value(value: f64, values: *mut f64) {
        unsafe { block_value(value, values.add(VALUE_HEAD)) };
        // SAFETY: the ticket is a u64 slot of its own, taken after this block's partial.
        if thread_idx() == 0 && unsafe { last_block(values.add(1).cast::<u64>()) } {
            unsafe { sum_blocks(values) };
        }
    }

    /// Value kernel: `values[0] = Σ φ_k(x)` in one launch, by way of one partial per block
    /// ([`finish_value`]). `out` and the box are unused.
    ///
    /// # Safety
    /// `x` holds `n` f64, `data` holds `data_len`, `values` is laid out as [`VALUE_HEAD`] says,
    /// with one slot per block.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn value<T: Term>(
        x: *const f64,
        n: usize,
        lower: *const f64,
        upper: *const f64,
        data: *const f64,
        data_len: usize,
        data_rows: usize,
        data_type: usize,
        _out: *mut f64,
        values: *mut f64,
    ) {
        let (x, _, data) =
            unsafe { term_inputs(x, n, (lower, upper), (data, data_len, data_rows, data_type)) };
        let sum = value_partial::<T, CompensatedSum>(grid_stride(T::terms(n, data)), x, data);
        unsafe { finish_value(sum, values) };
    }

    /// How a scheme's kernels differentiate each term: by finite differences with step rule
    /// `S` ([`Differences`]), or exactly, on duals ([`Exact`]).
    pub trait GradientScheme {
        /// A banded group's part of `∇f` into `g`, difference points within `bounds`; with
        /// `value`, the value of the term it owns.
        fn group<T: Term>(
            group: usize,
            x: &[f64],
            data: Data<'_>,
            bounds: StepBox<'_>,
            g: &mut [f64],
            value: bool,
        ) -> f64;
        /// The dense gradient's first stage: the block's `n` partial sums into `partials`.
        ///
        /// # Safety
        /// `partials` holds `n · gridDim` f64.
        unsafe fn dense_partials<T: Term>(
            x: &[f64],
            data: Data<'_>,
            bounds: StepBox<'_>,
            partials: *mut f64,
            value: Option<&mut CompensatedSum>,
        );
    }

    /// The blocks' least-squares triangles with finite-difference rows (see
    /// [`triangle_partials`]).
    impl<S: FdScheme> LeastSquaresPass for Differences<S> {
        #[inline(always)]
        unsafe fn run<T: Term>(
            x: &[f64],
            data: Data<'_>,
            bounds: StepBox<'_>,
            (loss, reduction): (RobustLoss, Reduction),
            out: *mut f64,
            values: *mut f64,
        ) {
            let rows = &mut DifferenceRow::<S>::new(bounds);
            unsafe { triangle_partials::<T, _>(x, data, (loss, reduction), out, values, rows) }
        }
    }

    impl<S: FdScheme> GradientScheme for Differences<S> {
        #[inline(always)]
        fn group<T: Term>(
            group: usize,
            x: &[f64],
            data: Data<'_>,
            bounds: StepBox<'_>,
            g: &mut [f64],
            value: bool,
        ) -> f64 {
            banded_group_gradient::<T, S>(group, x, data, bounds, g, value)
        }

        #[inline(always)]
        unsafe fn dense_partials<T: Term>(
            x: &[f64],
            data: Data<'_>,
            bounds: StepBox<'_>,
            partials: *mut f64,
            value: Option<&mut CompensatedSum>,
        ) {
            unsafe { dense_partials::<T, S>(x, data, bounds, partials, value) }
        }
    }

    /// The blocks' least-squares triangles with exact rows (see [`triangle_partials`]):
    /// `ROW_LANES_GPU` variables per evaluation on duals, from the block's shared window. The GPU
    /// differentiates forward only: a tape would live in local memory.
    impl LeastSquaresPass for Exact {
        #[inline(always)]
        unsafe fn run<T: Term>(
            x: &[f64],
            data: Data<'_>,
            _: StepBox<'_>,
            (loss, reduction): (RobustLoss, Reduction),
            out: *mut f64,
            values: *mut f64,
        ) {
            // The Gram sums hold few registers, so their rows take the gradient's lanes.
            let how = (loss, reduction);
            match reduction {
                Reduction::Gram => unsafe {
                    exact_triangle::<T, DENSE_LANES_GPU>(x, data, how, out, values)
                },
                Reduction::Fold => unsafe {
                    exact_triangle::<T, ROW_LANES_GPU>(x, data, how, out, values)
                },
            }
        }
    }

    /// [`triangle_partials`] with exact rows on `L` lanes. A dense term's window is `x`
    /// itself: the block shares one copy.
    ///
    /// # Safety
    /// As [`triangle_partials`].
    #[inline(always)]
    unsafe fn exact_triangle<T: Term, const L: usize>(
        x: &[f64],
        data: Data<'_>,
        how: (RobustLoss, Reduction),
        out: *mut f64,
        values: *mut f64,
    ) {
        let rows = &mut SharedExactRow::new(unsafe { shared_window::<L>(x) });
        unsafe { triangle_partials::<T, _>(x, data, how, out, values, rows) }
    }

    impl GradientScheme for Exact {
        #[inline(always)]
        fn group<T: Term>(
            group: usize,
            x: &[f64],
            data: Data<'_>,
            _: StepBox<'_>,
            g: &mut [f64],
            value: bool,
        ) -> f64 {
            banded_group_gradient_exact::<T>(group, x, data, g, value)
        }

        #[inline(always)]
        unsafe fn dense_partials<T: Term>(
            x: &[f64],
            data: Data<'_>,
            _: StepBox<'_>,
            partials: *mut f64,
            value: Option<&mut CompensatedSum>,
        ) {
            unsafe { dense_exact_partials::<T>(x, data, partials, value) }
        }
    }

    /// Gradient kernel, by scheme `D`, into `out`, the gradient. Banded windows: each thread
    /// gathers its groups; unless `values` is null, the same pass also sums the value into
    /// `values[0]`, as [`value`] does (each term counted once: see `banded_group_gradient`).
    /// Dense windows: the blocks sum their terms' differences into partials in `values`, and
    /// the last block finishes the value and the gradient ([`finish_dense`]).
    ///
    /// # Safety
    /// As [`value`]; `out` holds `n` f64; `values` is null or as [`value`]'s for a banded
    /// window, and as [`finish_dense`] needs for a dense one; for [`Exact`], a dense window has at most
    /// `EXACT_DENSE_WIDTH_MAX_GPU` variables.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gradient<T: Term, D: GradientScheme + Scheme>(
        x: *const f64,
        n: usize,
        lower: *const f64,
        upper: *const f64,
        data: *const f64,
        data_len: usize,
        data_rows: usize,
        data_type: usize,
        out: *mut f64,
        values: *mut f64,
    ) {
        let (x, bounds, data) =
            unsafe { term_inputs(x, n, (lower, upper), (data, data_len, data_rows, data_type)) };
        let mut value = CompensatedSum::default();
        match GradientWork::of::<T>(n, data) {
            GradientWork::Terms(_) => unsafe {
                // The blocks' partials of `∇f` lie after those of the value.
                let partials = values.add(VALUE_HEAD + grid_dim());
                D::dense_partials::<T>(x, data, bounds, partials, Some(&mut value));
                finish_dense::<D>(x, bounds, value.value(), values, out);
            },
            GradientWork::Groups { groups, stride } => {
                let with_value = !values.is_null();
                for group in grid_stride(groups) {
                    let first = group * stride;
                    let len = stride.min(n - first);
                    // SAFETY: groups are disjoint and each belongs to one thread.
                    let g = unsafe { slice_mut(out.add(first), len) };
                    value.add(D::group::<T>(group, x, data, bounds, g, with_value));
                }
                if with_value {
                    unsafe { finish_value(value.value(), values) };
                }
            }
        }
    }

    /// Whether this block is the last of the launch to get here ([`last_block`] on the
    /// ticket in `values[1]`), told to every thread of the block. The global writes every
    /// thread of every block made before its call are then visible to the last block's
    /// threads. Every thread of the block calls it, once.
    ///
    /// # Safety
    /// `values` is laid out as [`VALUE_HEAD`] says, its ticket 0 at the launch.
    #[inline(always)]
    unsafe fn last_block_of_all(values: *mut f64) -> bool {
        // Each thread orders its own writes before the block's ticket.
        fence();
        sync_threads();
        let flag = crate::shared_array!(cudamin_last_block_flag, 1);
        if thread_idx() == 0 {
            let last = unsafe { last_block(values.add(1).cast::<u64>()) };
            flag.set(0, if last { 1.0 } else { 0.0 });
        }
        sync_threads();
        let last = flag.get(0) != 0.0;
        if last {
            // Orders the other blocks' writes, seen through thread 0's ticket, before this
            // thread's reads.
            fence();
        }
        last
    }

    /// The end of a dense gradient pass, in its own launch: the block's partial of the value
    /// into its slot; then, in the block that finishes last, the value into `values[0]` and
    /// each `g_i = Σ_b partials[b·n + i] / D::divisor(x_i)`, both summed in block order as
    /// the CPU sums its chunks'. Every thread of the block calls it.
    ///
    /// # Safety
    /// `values` holds [`VALUE_HEAD`] slots, one per block, then `n` per block, each block's
    /// `∇f` partials written; `g` holds `n` f64.
    #[inline(always)]
    unsafe fn finish_dense<D: Scheme>(
        x: &[f64],
        bounds: StepBox<'_>,
        value: f64,
        values: *mut f64,
        g: *mut f64,
    ) {
        let n = x.len();
        // SAFETY (all below): the slots the layout above gives, each written by one thread;
        // the last block reads them after every block's ticket.
        unsafe { block_value(value, values.add(VALUE_HEAD)) };
        if !unsafe { last_block_of_all(values) } {
            return;
        }
        if thread_idx() == 0 {
            unsafe { sum_blocks(values) };
        }
        let blocks = grid_dim();
        let partials = unsafe { values.add(VALUE_HEAD + blocks) };
        for i in (thread_idx()..n).step_by(block_dim()) {
            let parts = (0..blocks).map(|b| unsafe { partials.add(b * n + i).read_volatile() });
            let gi = dense_gradient_component(D::divisor(x[i], bounds.interval(i)), parts);
            unsafe { g.add(i).write(gi) };
        }
    }

    /// The block's `n` partial sums of a dense gradient's first stage, in `partials`, zeroed by
    /// thread 0 (which alone writes them, after each block-wide sum).
    ///
    /// # Safety
    /// `partials` holds `n · gridDim` f64.
    #[inline(always)]
    pub(in crate::device) unsafe fn block_partials(partials: *mut f64, n: usize) -> *mut f64 {
        let mine = unsafe { partials.add(block_idx() * n) };
        if thread_idx() == 0 {
            for i in 0..n {
                unsafe { mine.add(i).write(0.0) };
            }
        }
        mine
    }

    /// Adds the block's sum of every thread's `d` to `mine[i]`. Every thread of the block calls
    /// it (it holds a barrier).
    ///
    /// # Safety
    /// `mine` comes from [`block_partials`] and `i < n`.
    #[inline(always)]
    unsafe fn add_block_sum(mine: *mut f64, i: usize, d: f64) {
        let sum = block_reduce_sum(d);
        if thread_idx() == 0 {
            // SAFETY: the block's own partials, written by thread 0 only.
            unsafe { *mine.add(i) += sum };
        }
    }

    /// Dense gradient, first stage. The block takes tiles of `blockDim` terms, one term per
    /// thread; each term is prepared once, then each variable's difference is summed: up to
    /// `EXACT_DENSE_WIDTH_MAX_GPU` variables over the warp into per-warp sums
    /// ([`WarpSums`]) combined once at the end, past that over the block at every tile, thread
    /// 0 adding each sum to the block's partial in order. With `value`, each thread also adds
    /// up its terms' values.
    #[inline(always)]
    unsafe fn dense_partials<T: Term, S: FdScheme>(
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        partials: *mut f64,
        value: Option<&mut CompensatedSum>,
    ) {
        let n = x.len();
        if n <= EXACT_DENSE_WIDTH_MAX_GPU {
            let sums = WarpSums::new(n);
            dense_tiles::<T, S>(x, data, bounds, value, |i, d| sums.add(i, [d]));
            unsafe { sums.write(partials.add(block_idx() * n)) };
        } else {
            let mine = unsafe { block_partials(partials, n) };
            // SAFETY: `i < n`, and `mine` is the block's.
            dense_tiles::<T, S>(x, data, bounds, value, |i, d| unsafe {
                add_block_sum(mine, i, d)
            });
        }
    }

    /// The tiles of [`dense_partials`]: each variable's difference to `sum(i, d)`, which every
    /// thread of the block calls with the same `i`.
    #[inline(always)]
    fn dense_tiles<T: Term, S: FdScheme>(
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        mut value: Option<&mut CompensatedSum>,
        sum: impl Fn(usize, f64),
    ) {
        let n = x.len();
        let terms = T::terms(n, data);
        let tiles = terms.div_ceil(block_dim());
        let mut tile = block_idx();
        while tile < tiles {
            let k = tile * block_dim() + thread_idx();
            let term = (k < terms).then(|| DenseTerm::<T>::prepare::<S>(k, x, data));
            if let (Some(term), Some(value)) = (&term, value.as_deref_mut()) {
                value.add(term.value::<S>(x));
            }
            for i in 0..n {
                let d = term
                    .as_ref()
                    .map_or(0.0, |t| t.difference::<S>(x, i, bounds));
                sum(i, d);
            }
            tile += grid_dim();
        }
    }

    /// What a residual term's least-squares kernel computes: the triangle with a scheme's
    /// rows (each gradient scheme), or the points' costs alone ([`Cost`]).
    pub trait LeastSquaresPass {
        /// The pass over residual term `T`, its rows rescaled for `loss` and reduced by
        /// `reduction`.
        ///
        /// # Safety
        /// `out` holds what the pass writes per block, `values` one slot per block.
        unsafe fn run<T: Term>(
            x: &[f64],
            data: Data<'_>,
            bounds: StepBox<'_>,
            loss: (RobustLoss, Reduction),
            out: *mut f64,
            values: *mut f64,
        );
    }

    /// The cost kernel: `values[block] = Σ C²ρ(r_k²/C²)` over the block's grid-stride share of
    /// residuals; `out` is unused.
    pub struct Cost;

    impl LeastSquaresPass for Cost {
        #[inline(always)]
        unsafe fn run<T: Term>(
            x: &[f64],
            data: Data<'_>,
            _: StepBox<'_>,
            (loss, _): (RobustLoss, Reduction),
            _out: *mut f64,
            values: *mut f64,
        ) {
            let mut sum = CompensatedSum::default();
            for k in grid_stride(T::terms(x.len(), data)) {
                sum.add(loss.cost(term_value::<T>(k, x, data)));
            }
            unsafe { block_value(sum.value(), values) };
        }
    }

    /// A residual term's least-squares kernel: pass `P` over residual term `T`, for the robust
    /// loss `Loss::ALL[i]` of scale `f_scale` and a triangle pass's reduction, where `loss` is
    /// `reduction.with_loss(i)` ([`Reduction`]).
    ///
    /// # Safety
    /// As [`value`]; for a triangle, `out` holds `reduction.len(n) · gridDim` f64; `values`
    /// one slot per block.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn least_squares<T: Term, P: LeastSquaresPass>(
        x: *const f64,
        n: usize,
        lower: *const f64,
        upper: *const f64,
        data: *const f64,
        data_len: usize,
        data_rows: usize,
        data_type: usize,
        loss: usize,
        f_scale: f64,
        out: *mut f64,
        values: *mut f64,
    ) {
        let (x, bounds, data) =
            unsafe { term_inputs(x, n, (lower, upper), (data, data_len, data_rows, data_type)) };
        let (index, reduction) = Reduction::split(loss);
        let loss = RobustLoss {
            loss: Loss::from_index(index),
            f_scale,
        };
        unsafe { P::run::<T>(x, data, bounds, (loss, reduction), out, values) }
    }
}
