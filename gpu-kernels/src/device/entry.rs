//! PTX entry-point bodies of the term kernels: raw arguments in, the shared per-thread work of
//! [`crate::kernel`] over the grid, results out. The generic ones are instantiated per term by
//! [`register_term!`](crate::register_term); the finishing kernels are exported here once.
//!
//! Argument lists (the host launcher passes exactly these; a test checks them against the PTX):
//! - term value / gradient: `(x: *const f64, n: u64, lower: *const f64, upper: *const f64,
//!   data: *const f64, data_len: u64, data_rows: u64, out: *mut f64, values: *mut f64)`: the
//!   gradient (or its dense partials) in `out`, the value's per-block partials in `values`;
//!   `lower` and `upper` (`n` each, or both null for none) the box finite-difference points
//!   stay in;
//! - [`SUM_PARTIALS`](crate::kernel::SUM_PARTIALS): `(partials: *const f64, count: u64, out: *mut f64)`;
//! - a residual term's triangle and cost kernels: the term kernels' list with `loss: u64,
//!   f_scale: f64` before `out` (see `ResidualKernels`);
//! - the dense finishing kernels (one per gradient scheme): `(x: *const f64, n: u64,
//!   lower: *const f64, upper: *const f64, partials: *const f64, blocks: u64, g: *mut f64)`;
//! - the vector kernels of a solver that keeps its vectors on the device
//!   ([`AXPY`](crate::kernel::AXPY) and its neighbours): `n` first, then scalars and vectors in
//!   the order of their formulas.

pub use nvptx::*;

mod nvptx {
    use crate::device::{
        SharedArray, block_dim, block_idx, block_reduce, block_reduce_sum, global_thread_idx,
        grid_dim, grid_stride, slice, slice_mut, sync_threads, thread_idx,
    };
    use crate::dual::Dual;
    use crate::fd::{FdScheme, StepBox};
    use crate::kernel::exact::{
        EXACT_DENSE_WIDTH_MAX_GPU, EXACT_LANES, banded_group_gradient_exact, eval_seeded,
        fill_constants,
    };
    use crate::kernel::loss::{Loss, RobustLoss};
    use crate::kernel::normal::{DifferenceRow, ExactRow, JacobianRow};
    use crate::kernel::reverse::{reverse_mode, with_gpu_rows};
    use crate::kernel::triangle::{
        FOLD_ROWS_GPU, Reflection, packed_len, packed_row, reflection, row_width, triangle_len,
    };
    use crate::kernel::{
        CompensatedSum, DOTS_SWEEP, DenseTerm, GRAM_TILE, GradientWork, banded_group_gradient,
        dense_gradient_component, sum_in_order, term_value, value_partial,
    };
    use crate::scheme::{Differences, Exact, Scheme};
    use crate::term::{Data, Term};

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
    /// `x` holds `n` f64, the box is as [`step_box`] needs, and `data` holds `data_len`, none
    /// written during the kernel.
    #[inline(always)]
    unsafe fn term_inputs<'a>(
        x: *const f64,
        n: usize,
        (lower, upper): (*const f64, *const f64),
        data: *const f64,
        data_len: usize,
        data_rows: usize,
    ) -> (&'a [f64], StepBox<'a>, Data<'a>) {
        let x = unsafe { slice(x, n) };
        let bounds = unsafe { step_box(lower, upper, n) };
        (
            x,
            bounds,
            Data::new(unsafe { slice(data, data_len) }, data_rows),
        )
    }

    /// Writes the block's sum of the threads' `value` partials to `values[block]`, when the
    /// launch asked for values (`values` not null: uniform over the grid, so every thread of
    /// the block reaches the reduction or none does).
    #[inline(always)]
    unsafe fn block_value(value: CompensatedSum, values: *mut f64) {
        if values.is_null() {
            return;
        }
        let block_sum = block_reduce_sum(value.value());
        if thread_idx() == 0 {
            // SAFETY: the launcher passes one slot per block.
            unsafe { values.add(block_idx()).write(block_sum) };
        }
    }

    /// Value kernel: `values[block] = Σ φ_k(x)` over the block's grid-stride share of terms.
    /// `out` and the box are unused.
    ///
    /// # Safety
    /// `x` holds `n` f64, `data` holds `data_len`, `values` has one slot per block.
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
        _out: *mut f64,
        values: *mut f64,
    ) {
        let (x, _, data) = unsafe { term_inputs(x, n, (lower, upper), data, data_len, data_rows) };
        let sum = value_partial::<T, CompensatedSum>(grid_stride(T::terms(n, data)), x, data);
        let block_sum = block_reduce_sum(sum);
        if thread_idx() == 0 {
            unsafe { values.add(block_idx()).write(block_sum) };
        }
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
            loss: RobustLoss,
            out: *mut f64,
            values: *mut f64,
        ) {
            let rows = &mut DifferenceRow::<S>::new(bounds);
            unsafe { triangle_partials::<T, _>(x, data, loss, out, values, rows) }
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

    /// The blocks' least-squares triangles with exact rows (see [`triangle_partials`]): in
    /// reverse mode where [`reverse_mode`] says, else `EXACT_LANES` variables per evaluation on
    /// duals.
    impl LeastSquaresPass for Exact {
        #[inline(always)]
        unsafe fn run<T: Term>(
            x: &[f64],
            data: Data<'_>,
            _: StepBox<'_>,
            loss: RobustLoss,
            out: *mut f64,
            values: *mut f64,
        ) {
            if reverse_mode::<T>(x.len(), true) {
                return with_gpu_rows::<T, EXACT_LANES, _>(x, |rows| unsafe {
                    triangle_partials::<T, _>(x, data, loss, out, values, rows)
                });
            }
            let mut window = [Dual::<EXACT_LANES>::constant(0.0); EXACT_DENSE_WIDTH_MAX_GPU];
            // A dense term's window is x itself: filled once per thread, not at every term.
            let rows = &mut ExactRow::new::<T>(&mut window[..x.len()], x);
            unsafe { triangle_partials::<T, _>(x, data, loss, out, values, rows) }
        }
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
            if reverse_mode::<T>(x.len(), true) {
                with_gpu_rows::<T, EXACT_LANES, _>(x, |rows| unsafe {
                    dense_row_partials::<T, _>(x, data, partials, value, rows)
                })
            } else {
                unsafe { dense_exact_partials::<T>(x, data, partials, value) }
            }
        }
    }

    /// Gradient kernel, by scheme `D`. Banded windows: `out` is the gradient, each thread
    /// gathers its groups. Dense windows: `out` holds `n` partial sums per block, finished by
    /// the dense finishing kernels. Unless `values` is null, the same pass also writes the
    /// block's partial sum of the value to `values[block]` (each term counted once: see
    /// `banded_group_gradient`).
    ///
    /// # Safety
    /// As [`value`]; `out` holds `n` f64 (banded) or `n · gridDim` f64 (dense); `values` is null
    /// or has one slot per block; for [`Exact`], a dense window has at most
    /// `EXACT_DENSE_WIDTH_MAX_GPU` variables.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn gradient<T: Term, D: GradientScheme>(
        x: *const f64,
        n: usize,
        lower: *const f64,
        upper: *const f64,
        data: *const f64,
        data_len: usize,
        data_rows: usize,
        out: *mut f64,
        values: *mut f64,
    ) {
        let (x, bounds, data) =
            unsafe { term_inputs(x, n, (lower, upper), data, data_len, data_rows) };
        let with_value = !values.is_null();
        let mut value = CompensatedSum::default();
        match GradientWork::of::<T>(n, data) {
            GradientWork::Terms(_) => unsafe {
                D::dense_partials::<T>(x, data, bounds, out, with_value.then_some(&mut value))
            },
            GradientWork::Groups { groups, stride } => {
                for group in grid_stride(groups) {
                    let first = group * stride;
                    let len = stride.min(n - first);
                    // SAFETY: groups are disjoint and each belongs to one thread.
                    let g = unsafe { slice_mut(out.add(first), len) };
                    value.add(D::group::<T>(group, x, data, bounds, g, with_value));
                }
            }
        }
        unsafe { block_value(value, values) };
    }

    /// The block's `n` partial sums of a dense gradient's first stage, in `partials`, zeroed by
    /// thread 0 (which alone writes them, after each block-wide sum).
    ///
    /// # Safety
    /// `partials` holds `n · gridDim` f64.
    #[inline(always)]
    unsafe fn block_partials(partials: *mut f64, n: usize) -> *mut f64 {
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
    /// thread; each term is prepared once, then for every variable the block sums the terms'
    /// differences and thread 0 adds that to the block's partial, tile after tile in order.
    /// With `value`, each thread also adds up its terms' values.
    #[inline(always)]
    unsafe fn dense_partials<T: Term, S: FdScheme>(
        x: &[f64],
        data: Data<'_>,
        bounds: StepBox<'_>,
        partials: *mut f64,
        mut value: Option<&mut CompensatedSum>,
    ) {
        let n = x.len();
        let terms = T::terms(n, data);
        let mine = unsafe { block_partials(partials, n) };
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
                unsafe { add_block_sum(mine, i, d) };
            }
            tile += grid_dim();
        }
    }

    /// Dense exact gradient, first stage: as [`dense_partials`], with each thread's term
    /// evaluated on its own copy of the window as duals, `EXACT_LANES` variables at a time.
    #[inline(always)]
    unsafe fn dense_exact_partials<T: Term>(
        x: &[f64],
        data: Data<'_>,
        partials: *mut f64,
        mut value: Option<&mut CompensatedSum>,
    ) {
        let n = x.len();
        let terms = T::terms(n, data);
        let mine = unsafe { block_partials(partials, n) };
        let mut storage = [Dual::constant(0.0); EXACT_DENSE_WIDTH_MAX_GPU];
        let window = &mut storage[..n];
        fill_constants(window, x);
        let tiles = terms.div_ceil(block_dim());
        let mut tile = block_idx();
        while tile < tiles {
            let k = tile * block_dim() + thread_idx();
            let local = (k < terms).then(|| T::prepare(k, n, data));
            for first in (0..n).step_by(EXACT_LANES) {
                let result = local
                    .as_ref()
                    .map(|l| eval_seeded::<T, EXACT_LANES>(l, window, first));
                if let (Some(result), Some(value), 0) = (result, value.as_deref_mut(), first) {
                    value.add(result.value);
                }
                for lane in 0..EXACT_LANES.min(n - first) {
                    let d = result.map_or(0.0, |r| r.derivatives[lane]);
                    unsafe { add_block_sum(mine, first + lane, d) };
                }
            }
            tile += grid_dim();
        }
    }

    /// Dense exact gradient, first stage, from whole rows: as [`dense_partials`], each thread's
    /// term's partials in all `n` variables made at once by `rows` (reverse mode).
    ///
    /// # Safety
    /// `partials` holds `n · gridDim` f64; `n ≤ EXACT_DENSE_WIDTH_MAX_GPU`.
    #[inline(always)]
    unsafe fn dense_row_partials<T: Term, J: JacobianRow>(
        x: &[f64],
        data: Data<'_>,
        partials: *mut f64,
        mut value: Option<&mut CompensatedSum>,
        rows: &mut J,
    ) {
        let n = x.len();
        let terms = T::terms(n, data);
        let mine = unsafe { block_partials(partials, n) };
        let mut storage = [0.0; EXACT_DENSE_WIDTH_MAX_GPU];
        let row = &mut storage[..n];
        let tiles = terms.div_ceil(block_dim());
        let mut tile = block_idx();
        while tile < tiles {
            let k = tile * block_dim() + thread_idx();
            if k < terms {
                let term_value = rows.row::<T>(k, x, data, row);
                if let Some(value) = value.as_deref_mut() {
                    value.add(term_value);
                }
            } else {
                row.fill(0.0);
            }
            for (j, &d) in row.iter().enumerate() {
                unsafe { add_block_sum(mine, j, d) };
            }
            tile += grid_dim();
        }
    }

    /// The rows a block folds at once, each [`row_width`] values at the widest window the GPU
    /// takes: 17 KiB of shared memory.
    const HELD_VALUES: usize = FOLD_ROWS_GPU * row_width(EXACT_DENSE_WIDTH_MAX_GPU);

    /// The shared array that holds them (its length is a literal in PTX).
    type Held = SharedArray<2176>;
    const _: () = assert!(HELD_VALUES == 2176);

    /// Least-squares triangle of residual term `T` (dense, `n ≤ EXACT_DENSE_WIDTH_MAX_GPU`):
    /// as [`dense_partials`], one term per thread and tile after tile, each thread makes its
    /// term's residual and Jacobian row (by `rows`) and rescales them for `loss`; then the
    /// block folds the tile's rows into its triangle [`FOLD_ROWS_GPU`] at a time, in thread order,
    /// the rows held in shared memory and each reflection's later columns one per thread
    /// ([`fold_held`]). The block's packed `R` and `Qᵀr` go to `out`; the sum of the points'
    /// costs `C²ρ(r²/C²)` to `values[block]`. The host folds the blocks' triangles in block
    /// order.
    ///
    /// # Safety
    /// `out` holds `triangle_len(n) · gridDim` f64, `values` one slot per block.
    #[inline(always)]
    unsafe fn triangle_partials<T: Term, J: JacobianRow>(
        x: &[f64],
        data: Data<'_>,
        loss: RobustLoss,
        out: *mut f64,
        values: *mut f64,
        rows: &mut J,
    ) {
        let n = x.len();
        let terms = T::terms(n, data);
        let width = row_width(n);
        let mine = unsafe { block_partials(out, triangle_len(n)) };
        let held: Held = crate::shared_array!(cudamin_fold_held, 2176);
        let mut storage = [0.0; EXACT_DENSE_WIDTH_MAX_GPU];
        let row = &mut storage[..n];
        let mut cost = CompensatedSum::default();
        let tiles = terms.div_ceil(block_dim());
        let mut tile = block_idx();
        while tile < tiles {
            let k = tile * block_dim() + thread_idx();
            let residual = if k < terms {
                let r = rows.row::<T>(k, x, data, row);
                let (rescaled, point_cost) = loss.rescale(r, row);
                cost.add(point_cost);
                rescaled
            } else {
                0.0
            };
            for group in 0..block_dim().div_ceil(FOLD_ROWS_GPU) {
                // The same on every thread: the whole block leaves together.
                if tile * block_dim() + group * FOLD_ROWS_GPU >= terms {
                    break;
                }
                for i in (thread_idx()..FOLD_ROWS_GPU * width).step_by(block_dim()) {
                    held.set(i, 0.0);
                }
                sync_threads();
                if thread_idx() / FOLD_ROWS_GPU == group && k < terms {
                    let at = (thread_idx() % FOLD_ROWS_GPU) * width;
                    for (j, &d) in row.iter().enumerate() {
                        held.set(at + j, d);
                    }
                    held.set(at + n, residual);
                }
                sync_threads();
                unsafe { fold_held(mine, n, held, width) };
            }
            tile += grid_dim();
        }
        unsafe { block_value(cost, values) };
    }

    /// Folds the [`FOLD_ROWS_GPU`] rows `held` (each `width` values: `J`'s row, the residual,
    /// zeros) into the block's packed triangle at `mine` (`R`, then `Qᵀr`) as
    /// `kernel::triangle::fold_rows` does on the CPU: the same reflections ([`reflection`]) and
    /// the same order of operations per column. Every thread computes column `j`'s reflection
    /// from the held column; then column `k > j` (and `Qᵀr` as column `n`) is updated by
    /// thread `k − j − 1` (and every `blockDim` after), its dot product over the rows in row
    /// order. Every thread of the block calls it (it holds barriers), and it returns once every
    /// thread is done with `held`.
    ///
    /// # Safety
    /// `mine` holds the block's `triangle_len(n)` values, written by this block alone.
    #[inline(always)]
    unsafe fn fold_held(mine: *mut f64, n: usize, held: Held, width: usize) {
        let qtr = unsafe { mine.add(packed_len(n)) };
        for j in 0..n {
            let mut v = [0.0; FOLD_ROWS_GPU];
            for (i, vi) in v.iter_mut().enumerate() {
                *vi = held.get(i * width + j);
            }
            let start = packed_row(j, n);
            // SAFETY: the block's own triangle, written below only after the barrier.
            let diagonal = unsafe { mine.add(start).read_volatile() };
            // The same on every thread, so the branch is uniform over the block.
            let Some(Reflection { beta, tau }) = reflection(diagonal, &mut v) else {
                continue;
            };
            // Every thread has read column j and R_jj before any is written.
            sync_threads();
            let mut column = j + 1 + thread_idx();
            while column <= n {
                // SAFETY: entry `column` of row j belongs to this thread alone until the barrier.
                let entry = unsafe {
                    if column < n {
                        mine.add(start + column - j)
                    } else {
                        qtr.add(j)
                    }
                };
                let old = unsafe { entry.read_volatile() };
                let mut w = old;
                for (i, &vi) in v.iter().enumerate() {
                    w += vi * held.get(i * width + column);
                }
                unsafe { entry.write_volatile(old - tau * w) };
                for (i, &vi) in v.iter().enumerate() {
                    let at = i * width + column;
                    held.set(at, held.get(at) - tau * vi * w);
                }
                column += block_dim();
            }
            if thread_idx() == 0 {
                unsafe { mine.add(start).write_volatile(beta) };
            }
            sync_threads();
        }
        // Every thread is done reading `held` before any returns to refill it: a column with
        // nothing below its diagonal skips its barriers, and where the last columns do, a fast
        // thread's zeroing of the next rows raced the others' reads of these (the simulator's
        // race check stopped every fit whose exponentials underflow over a row group).
        sync_threads();
    }

    /// What a residual term's least-squares kernel computes: the triangle with a scheme's
    /// rows (each gradient scheme), or the points' costs alone ([`Cost`]).
    pub trait LeastSquaresPass {
        /// The pass over residual term `T`, its rows rescaled for `loss`.
        ///
        /// # Safety
        /// `out` holds what the pass writes per block, `values` one slot per block.
        unsafe fn run<T: Term>(
            x: &[f64],
            data: Data<'_>,
            bounds: StepBox<'_>,
            loss: RobustLoss,
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
            loss: RobustLoss,
            _out: *mut f64,
            values: *mut f64,
        ) {
            let mut sum = CompensatedSum::default();
            for k in grid_stride(T::terms(x.len(), data)) {
                sum.add(loss.cost(term_value::<T>(k, x, data)));
            }
            unsafe { block_value(sum, values) };
        }
    }

    /// A residual term's least-squares kernel: pass `P` over residual term `T`, for the robust
    /// loss `Loss::ALL[loss]` of scale `f_scale`.
    ///
    /// # Safety
    /// As [`value`]; for a triangle, `out` holds `triangle_len(n) · gridDim` f64; `values` one
    /// slot per block.
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
        loss: usize,
        f_scale: f64,
        out: *mut f64,
        values: *mut f64,
    ) {
        let (x, bounds, data) =
            unsafe { term_inputs(x, n, (lower, upper), data, data_len, data_rows) };
        let loss = RobustLoss {
            loss: Loss::from_index(loss),
            f_scale,
        };
        unsafe { P::run::<T>(x, data, bounds, loss, out, values) }
    }

    /// Second stage of the dense gradient of scheme `S`: `g_i = Σ_b partials[b·n + i] /
    /// S::divisor(x_i)`, in the box `lower`, `upper`. Exported once per scheme as
    /// `cudamin_dense_finish_<name>`.
    ///
    /// # Safety
    /// `x` holds `n` f64, the box is as [`step_box`] needs, `partials` holds `blocks · n`, `g`
    /// `n`.
    #[inline(always)]
    pub unsafe fn dense_finish<S: Scheme>(
        x: *const f64,
        n: usize,
        lower: *const f64,
        upper: *const f64,
        partials: *const f64,
        blocks: usize,
        g: *mut f64,
    ) {
        let x = unsafe { slice(x, n) };
        let bounds = unsafe { step_box(lower, upper, n) };
        let partials = unsafe { slice(partials, n * blocks) };
        for i in grid_stride(n) {
            let parts = (0..blocks).map(|b| partials[b * n + i]);
            let gi = dense_gradient_component(S::divisor(x[i], bounds.interval(i)), parts);
            unsafe { g.add(i).write(gi) };
        }
    }

    crate::__schemes! { @rows finish_entries () }

    /// `|a|` and `|b|`'s maximum, NaN when either is NaN (an ∞-norm must not hide a NaN).
    #[inline(always)]
    fn max_abs_nan(a: f64, b: f64) -> f64 {
        let (a, b) = (a.abs(), b.abs());
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    }

    /// `y ← y + alpha·x`.
    #[unsafe(export_name = "cudamin_axpy")]
    unsafe extern "ptx-kernel" fn axpy(n: usize, alpha: f64, x: *const f64, y: *mut f64) {
        for i in grid_stride(n) {
            // SAFETY: the launcher passes vectors of `n` f64; each thread owns its `i`.
            unsafe { *y.add(i) = *y.add(i) + alpha * *x.add(i) };
        }
    }

    /// `v ← alpha·v`.
    #[unsafe(export_name = "cudamin_scale")]
    unsafe extern "ptx-kernel" fn scale(n: usize, alpha: f64, v: *mut f64) {
        for i in grid_stride(n) {
            // SAFETY: as in `axpy`.
            unsafe { *v.add(i) = alpha * *v.add(i) };
        }
    }

    /// `out ← x + step·p`: a point on the line search's ray.
    #[unsafe(export_name = "cudamin_ray_point")]
    unsafe extern "ptx-kernel" fn ray_point(
        n: usize,
        x: *const f64,
        step: f64,
        p: *const f64,
        out: *mut f64,
    ) {
        for i in grid_stride(n) {
            // SAFETY: as in `axpy`.
            unsafe { *out.add(i) = *x.add(i) + step * *p.add(i) };
        }
    }

    /// `old ← new − old`: a gradient change `y = g₊ − g` in the old gradient's place.
    #[unsafe(export_name = "cudamin_difference")]
    unsafe extern "ptx-kernel" fn difference(n: usize, new: *const f64, old: *mut f64) {
        for i in grid_stride(n) {
            // SAFETY: as in `axpy`.
            unsafe { *old.add(i) = *new.add(i) - *old.add(i) };
        }
    }

    /// `to[indices[r]] ← from[r]` for the `count` indices (`u64` words, distinct) at
    /// `indices`: a solve's free variables written into the whole point.
    #[unsafe(export_name = "cudamin_place")]
    unsafe extern "ptx-kernel" fn place(
        count: usize,
        indices: *const u64,
        from: *const f64,
        to: *mut f64,
    ) {
        for r in grid_stride(count) {
            // SAFETY: the launcher passes `count` distinct indices within `to`, and `count`
            // values at `from`; each thread writes its own index's slot.
            unsafe {
                let i = indices.add(r).read() as usize;
                *to.add(i) = *from.add(r);
            }
        }
    }

    /// `partials[block] = Σ a_i·b_i` over the block's grid-stride share; [`sum_partials`]
    /// finishes the dot product.
    #[unsafe(export_name = "cudamin_dot_partials")]
    unsafe extern "ptx-kernel" fn dot_partials(
        n: usize,
        a: *const f64,
        b: *const f64,
        partials: *mut f64,
    ) {
        // SAFETY: the launcher passes vectors of `n` f64 and one partial per block.
        let (a, b) = unsafe { (slice(a, n), slice(b, n)) };
        let mut sum = 0.0;
        for i in grid_stride(n) {
            sum += a[i] * b[i];
        }
        let block_sum = block_reduce_sum(sum);
        if thread_idx() == 0 {
            unsafe { partials.add(block_idx()).write(block_sum) };
        }
    }

    /// `partials[block] = max |v_i|` over the block's share, NaN if any is NaN; then
    /// [`max_abs_partials`] over the partials with one block gives `‖v‖∞`.
    #[unsafe(export_name = "cudamin_max_abs_partials")]
    unsafe extern "ptx-kernel" fn max_abs_partials(n: usize, v: *const f64, partials: *mut f64) {
        // SAFETY: the launcher passes `n` f64 and one partial per block.
        let v = unsafe { slice(v, n) };
        let mut max = 0.0;
        for i in grid_stride(n) {
            max = max_abs_nan(max, v[i]);
        }
        let block_max = block_reduce(max, 0.0, max_abs_nan);
        if thread_idx() == 0 {
            unsafe { partials.add(block_idx()).write(block_max) };
        }
    }

    /// The device address of a vector, as a table of them holds it.
    #[inline(always)]
    pub(crate) fn vector_at(table: *const u64, j: usize) -> *const f64 {
        // SAFETY: the launcher passes a table of at least `j + 1` addresses.
        (unsafe { table.add(j).read() }) as usize as *const f64
    }

    /// Row `j` of `partials[j·blocks + block]` is `Σ vⱼ,ᵢ·withᵢ` over the block's share, for
    /// the `count` vectors whose addresses `table` holds: each summed as [`dot_partials`] sums
    /// `dot(vⱼ, with)`, so each row's total has its bits. `DOTS_SWEEP` running sums per sweep
    /// over the rows, held in registers.
    #[unsafe(export_name = "cudamin_dots_partials")]
    unsafe extern "ptx-kernel" fn dots_partials(
        n: usize,
        table: *const u64,
        count: usize,
        with: *const f64,
        partials: *mut f64,
    ) {
        // SAFETY: the launcher passes `count` addresses of vectors of `n` f64, and `count`
        // rows of one partial per block.
        let with = unsafe { slice(with, n) };
        unsafe { dots_sweeps(n, table, count, partials, |i| with[i], |_| true) };
    }

    /// The Gram matrix of the `count` vectors `table` holds over the rows `i` with
    /// `mask[i] ≠ 0` (`keep = 1`) or `= 0` (`keep = 0`) alone, and their products with `u`
    /// (none where `u` is null): row `b·(b + 1)/2 + a` of the partials (`a ≤ b`) holds
    /// `Σ vₐ,ᵢ·v_b,ᵢ`, row `count·(count + 1)/2 + a` holds `Σ vₐ,ᵢ·uᵢ`, each summed as
    /// [`dots_partials`] sums a product. The rows the mask drops add nothing, whatever their
    /// values. One launch, in tiles of [`GRAM_TILE`] columns by as many (`u` the last column):
    /// each tile's columns are read once for all its products, so the triangle of `c` columns
    /// reads about `c²/4` column vectors where one sweep per column read `c²/2`.
    #[unsafe(export_name = "cudamin_masked_gram_partials")]
    unsafe extern "ptx-kernel" fn masked_gram_partials(
        n: usize,
        table: *const u64,
        count: usize,
        u: *const f64,
        mask: *const f64,
        keep: usize,
        partials: *mut f64,
    ) {
        // SAFETY: as in `dots_partials`, with `u` null or of `n` f64, a mask of `n` f64 and
        // `count·(count + 1)/2` rows of partials (the triangle's), `count` more (`u`'s) where
        // `u` is not null.
        let mask = unsafe { slice(mask, n) };
        let gram = Gram {
            n,
            table,
            count,
            u,
            columns: count + usize::from(!u.is_null()),
            kept: |i: usize| (mask[i] != 0.0) == (keep != 0),
        };
        // Where `count` is a multiple of the tile, `u` has a tile of its own, whose sweep with
        // itself writes nothing (`u`'s product with itself is not asked): a twenty-first sweep
        // at m = 10. Skipping it in the loop's bounds made the kernel take 148–158 registers on
        // sm_70 (ptxas), past the 128 that 512-thread blocks allow.
        let mut high = 0;
        while high < gram.columns {
            let mut low = 0;
            while low <= high {
                unsafe { gram.tile(low, high, partials) };
                low += GRAM_TILE;
            }
            high += GRAM_TILE;
        }
    }

    /// The columns of [`masked_gram_partials`]: the table's `count`, then `u` where it is not
    /// null.
    struct Gram<K> {
        n: usize,
        table: *const u64,
        count: usize,
        u: *const f64,
        columns: usize,
        kept: K,
    }

    impl<K: Fn(usize) -> bool> Gram<K> {
        /// Column `j`'s address (`j < columns`).
        #[inline(always)]
        fn column(&self, j: usize) -> *const f64 {
            if j < self.count {
                vector_at(self.table, j)
            } else {
                self.u
            }
        }

        /// The addresses of the tile of columns from `first` (past the last column, `first`
        /// again: loaded anyway, its products dropped, so the loop has no branch).
        #[inline(always)]
        fn tile_columns(&self, first: usize) -> [*const f64; GRAM_TILE] {
            let mut columns = [self.column(first); GRAM_TILE];
            for (t, column) in columns.iter_mut().enumerate() {
                if first + t < self.columns {
                    *column = self.column(first + t);
                }
            }
            columns
        }

        /// The products of the tiles of columns from `low` and from `high` (`low ≤ high`), in
        /// one sweep over the rows: row `b·(b + 1)/2 + a` of `partials` for each `a ≤ b` of
        /// them but `u`'s with itself.
        ///
        /// # Safety
        /// As in [`masked_gram_partials`].
        #[inline(always)]
        unsafe fn tile(&self, low: usize, high: usize, partials: *mut f64) {
            let (a_columns, b_columns) = (self.tile_columns(low), self.tile_columns(high));
            let mut sums = [[0.0; GRAM_TILE]; GRAM_TILE];
            for i in grid_stride(self.n) {
                if !(self.kept)(i) {
                    continue;
                }
                // Indexed, not zipped, with constant counts: the loops unroll and the arrays
                // stay in registers.
                let mut a = [0.0; GRAM_TILE];
                let mut b = [0.0; GRAM_TILE];
                for t in 0..GRAM_TILE {
                    a[t] = unsafe { *a_columns[t].add(i) };
                    b[t] = unsafe { *b_columns[t].add(i) };
                }
                for s in 0..GRAM_TILE {
                    for t in 0..GRAM_TILE {
                        sums[s][t] += a[s] * b[t];
                    }
                }
            }
            // Every product is reduced, the dropped ones too (the barriers inside are reached
            // by the whole block), each by name: a sum indexed by a variable would put them all
            // in local memory.
            let blocks = grid_dim();
            let write = |s: usize, t: usize, total: f64| {
                let (a, b) = (low + s, high + t);
                // `a < count` leaves out `u`'s product with itself, the one pair of columns
                // with `a ≤ b` that is not the table's.
                if thread_idx() == 0 && a <= b && b < self.columns && a < self.count {
                    let row = b * (b + 1) / 2 + a;
                    unsafe { partials.add(row * blocks + block_idx()).write(total) };
                }
            };
            let [r0, r1, r2, r3] = sums;
            block_sums(r0, |t, total| write(0, t, total));
            block_sums(r1, |t, total| write(1, t, total));
            block_sums(r2, |t, total| write(2, t, total));
            block_sums(r3, |t, total| write(3, t, total));
        }
    }

    /// Each of a row of [`masked_gram_partials`]' sums over the block, given to `write` with
    /// its place in the row (the total is valid in thread 0).
    #[inline(always)]
    fn block_sums([s0, s1, s2, s3]: [f64; GRAM_TILE], write: impl Fn(usize, f64)) {
        write(0, block_reduce_sum(s0));
        write(1, block_reduce_sum(s1));
        write(2, block_reduce_sum(s2));
        write(3, block_reduce_sum(s3));
    }

    /// The sweeps of [`dots_partials`], against `with(i)`, over the rows `kept(i)` admits.
    ///
    /// # Safety
    /// `table` holds `count` addresses of vectors of `n` f64, and `partials` `count` rows of
    /// one partial per block.
    #[inline(always)]
    unsafe fn dots_sweeps(
        n: usize,
        table: *const u64,
        count: usize,
        partials: *mut f64,
        with: impl Fn(usize) -> f64,
        kept: impl Fn(usize) -> bool,
    ) {
        let blocks = grid_dim();
        let mut first = 0;
        while first < count {
            let width = (count - first).min(DOTS_SWEEP);
            // A sweep past the last vector reads the sweep's first one in its place (loaded
            // anyway) and drops those sums: no branch in the loop, so every slot's load can be
            // in flight at once. Every loop over the slots has a constant count, so that it
            // unrolls and the arrays stay in registers.
            let mut vectors = [vector_at(table, first); DOTS_SWEEP];
            for (t, v) in vectors.iter_mut().enumerate() {
                if t < width {
                    *v = vector_at(table, first + t);
                }
            }
            let mut sums = [0.0; DOTS_SWEEP];
            for i in grid_stride(n) {
                if !kept(i) {
                    continue;
                }
                let w = with(i);
                // Indexed, not zipped: the zip leaves the arrays in local memory.
                for t in 0..DOTS_SWEEP {
                    sums[t] += unsafe { *vectors[t].add(i) } * w;
                }
            }
            // Every slot is reduced, the unused ones too, each by name: a slot indexed by a
            // variable would put the sums in local memory. The barriers inside are reached by
            // the whole block.
            let [s0, s1, s2, s3, s4, s5, s6, s7] = sums;
            let totals = [
                block_reduce_sum(s0),
                block_reduce_sum(s1),
                block_reduce_sum(s2),
                block_reduce_sum(s3),
                block_reduce_sum(s4),
                block_reduce_sum(s5),
                block_reduce_sum(s6),
                block_reduce_sum(s7),
            ];
            if thread_idx() == 0 {
                for (t, &total) in totals.iter().enumerate() {
                    if t < width {
                        unsafe {
                            partials
                                .add((first + t) * blocks + block_idx())
                                .write(total)
                        };
                    }
                }
            }
            first += width;
        }
    }

    /// `out ← Σⱼ cⱼ·vⱼ` over the `count` vectors `table` holds and their coefficients, formed
    /// as `out ← c₀·v₀` then `out ← out + cⱼ·vⱼ` in order (the bits of a copy, a [`scale`] and
    /// [`axpy`]s), and `partials[block] = Σ zᵢ·outᵢ` over the block's share, as
    /// [`dot_partials`] sums `dot(z, out)`; with `z` null, the combination alone (no partials:
    /// a pass whose product nobody reads costs no finishing launch and no read-back).
    #[unsafe(export_name = "cudamin_combine_dot_partials")]
    unsafe extern "ptx-kernel" fn combine_dot_partials(
        n: usize,
        table: *const u64,
        coefficients: *const f64,
        count: usize,
        out: *mut f64,
        z: *const f64,
        partials: *mut f64,
    ) {
        // SAFETY: the launcher passes `count ≥ 1` addresses of vectors of `n` f64 and their
        // `count` coefficients, `out` of `n` f64 (none of the others), and `z` of `n` f64 with
        // one partial per block, or both null.
        let coefficients = unsafe { slice(coefficients, count) };
        let z = (!z.is_null()).then(|| unsafe { slice(z, n) });
        let first = vector_at(table, 0);
        let mut sum = 0.0;
        for i in grid_stride(n) {
            let mut value = coefficients[0] * unsafe { *first.add(i) };
            let mut next = 1;
            while next < count {
                // A group's loads first, all of them (past the last term, `v₀` again): they
                // wait on nothing, so they are in flight together; the sum then takes its terms
                // in order.
                let width = (count - next).min(DOTS_SWEEP);
                let mut terms = [(0.0, 0.0); DOTS_SWEEP];
                for (t, term) in terms.iter_mut().enumerate() {
                    let j = if t < width { next + t } else { 0 };
                    *term = (coefficients[j], unsafe { *vector_at(table, j).add(i) });
                }
                for (t, &(c, x)) in terms.iter().enumerate() {
                    if t < width {
                        value = value + c * x;
                    }
                }
                next += width;
            }
            unsafe { out.add(i).write(value) };
            if let Some(z) = z {
                sum += z[i] * value;
            }
        }
        // `z` is the launch's, so the whole block takes the reduction or skips it.
        if z.is_some() {
            let block_sum = block_reduce_sum(sum);
            if thread_idx() == 0 {
                unsafe { partials.add(block_idx()).write(block_sum) };
            }
        }
    }

    /// The end of a quasi-Newton step: `p ← step·p` (the step `s`), `g ← g₊ − g` (the
    /// gradient change `y`), with five rows of per-block partials: `sᵀy`, `yᵀy`, `g₊ᵀg₊`,
    /// `sᵀs` (sums, as [`dot_partials`] sums each) and `max |g₊ᵢ|` (as [`max_abs_partials`]).
    /// Each entry's arithmetic is [`scale`]'s and [`difference`]'s.
    #[unsafe(export_name = "cudamin_step_end_partials")]
    unsafe extern "ptx-kernel" fn step_end_partials(
        n: usize,
        step: f64,
        p: *mut f64,
        g_new: *const f64,
        g: *mut f64,
        partials: *mut f64,
    ) {
        // SAFETY: the launcher passes vectors of `n` f64, `g_new` neither of the others, and
        // `STEP_END_ROWS` rows of one partial per block; each thread owns its `i`.
        let g_new = unsafe { slice(g_new, n) };
        let (mut sy, mut yy, mut gg, mut ss, mut max) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for i in grid_stride(n) {
            let s = step * unsafe { *p.add(i) };
            let y = g_new[i] - unsafe { *g.add(i) };
            unsafe {
                p.add(i).write(s);
                g.add(i).write(y);
            }
            sy += s * y;
            yy += y * y;
            gg += g_new[i] * g_new[i];
            ss += s * s;
            max = max_abs_nan(max, g_new[i]);
        }
        let blocks = grid_dim();
        let totals = [
            block_reduce_sum(sy),
            block_reduce_sum(yy),
            block_reduce_sum(gg),
            block_reduce_sum(ss),
            block_reduce(max, 0.0, max_abs_nan),
        ];
        if thread_idx() == 0 {
            for (row, &total) in totals.iter().enumerate() {
                unsafe { partials.add(row * blocks + block_idx()).write(total) };
            }
        }
    }

    /// `out[j] = Σ partials[j·blocks..(j + 1)·blocks]` for each of `rows` rows, each added in
    /// order by one thread as [`sum_partials`] adds; launch at least `rows` threads.
    #[unsafe(export_name = "cudamin_sum_partial_rows")]
    unsafe extern "ptx-kernel" fn sum_partial_rows(
        partials: *const f64,
        blocks: usize,
        rows: usize,
        out: *mut f64,
    ) {
        // SAFETY: the launcher passes `rows · blocks` partials and `rows` output slots.
        let partials = unsafe { slice(partials, rows * blocks) };
        for row in grid_stride(rows) {
            let sum = sum_in_order(partials[row * blocks..][..blocks].iter().copied());
            unsafe { out.add(row).write(sum) };
        }
    }

    /// `out[0] = Σ partials`, added in order by one thread ([`sum_in_order`]), as the CPU adds
    /// its chunks' partials.
    #[unsafe(export_name = "cudamin_sum_partials")]
    unsafe extern "ptx-kernel" fn sum_partials(partials: *const f64, count: usize, out: *mut f64) {
        // SAFETY: the launcher passes `count` partials and one output slot.
        let partials = unsafe { slice(partials, count) };
        if global_thread_idx() == 0 {
            unsafe { out.write(sum_in_order(partials.iter().copied())) };
        }
    }
}
