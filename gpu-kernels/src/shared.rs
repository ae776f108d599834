//! The shared kernels: every PTX entry that is not a term's, declared once in the table of
//! [`__shared_kernels!`](crate::__shared_kernels). A row gives the kernel's name constant, its
//! name, the device module that holds its body and its typed parameters. Derived from the table:
//! the name constants in [`kernel`](crate::kernel), [`SHARED_KERNELS`], the PTX entries, which
//! call the bodies, and the host's launch builders. Adding a shared kernel is its body and one
//! row.

/// The kind of one shared-kernel parameter; each is one 64-bit `.param`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// `usize`: a count, an index or a flag.
    U64,
    /// `f64`.
    F64,
    /// `*const f64`: a vector read.
    In,
    /// `*mut f64`: a vector written, and maybe read.
    Out,
    /// `*const u64`: a table of addresses, indices or (index, value) pairs.
    Words,
}

/// One shared kernel: its `.entry` name and its parameters, in order.
#[derive(Clone, Copy, Debug)]
pub struct SharedKernel {
    /// The `.entry` name, `cudamin_` and the kernel's name.
    pub name: &'static str,
    /// Each parameter's name and kind.
    pub params: &'static [(&'static str, Param)],
}

crate::__shared_kernels! { @rows table () }

/// The table of shared kernels, and what is generated from it. A row: its docs, the name
/// constant, the kernel's name (the entry is `cudamin_` and it; the body is
/// `device::HOME::NAME`), `in HOME`, and the parameters with their [`Param`] kinds.
///
/// `@rows RULE (ARGS)` expands rule `@RULE` below with `(ARGS) [rows]`; `@with MACRO` expands
/// a macro of the caller's, `MACRO! { [rows] }`.
#[doc(hidden)]
#[macro_export]
macro_rules! __shared_kernels {
    (@rows $rule:ident $args:tt) => {
        $crate::__shared_kernels! { @$rule $args [
            /// `y ← y + α·x`, for a solver whose vectors stay on the device.
            AXPY axpy in vector_entry (n: U64, alpha: F64, x: In, y: Out);
            /// `v ← α·v`.
            SCALE scale in vector_entry (n: U64, alpha: F64, v: Out);
            /// `out ← x + step·p`.
            RAY_POINT ray_point in vector_entry (n: U64, x: In, step: F64, p: In, out: Out);
            /// `old ← new − old`.
            DIFFERENCE difference in vector_entry (n: U64, new: In, old: Out);
            /// `w ← 1/σ`, a fit's weights, NaN where `σ` is not positive and finite; all 1
            /// where `sigma` is null.
            WEIGHTS weights in vector_entry (n: U64, sigma: In, w: Out);
            /// `to[i] ← from[i·stride]`: a strided column copied into a contiguous one.
            STRIDED_COPY strided_copy in vector_entry (n: U64, from: In, stride: U64, to: Out);
            /// One partial sum of `Σ a_i·b_i` per block; [`SUM_PARTIAL_ROWS`] adds them.
            DOT_PARTIALS dot_partials in vector_entry (n: U64, a: In, b: In, partials: Out);
            /// One partial `max |v_i|` per block (NaN if any is NaN); launched again with one
            /// block on the partials, it gives `‖v‖∞`.
            MAX_ABS_PARTIALS max_abs_partials in vector_entry (n: U64, v: In, partials: Out);
            /// [`DOT_PARTIALS`] for several vectors against several others, in one launch: the
            /// table holds the `count` vectors, then the `withs` others; row `k·count + j` of
            /// the partials holds vector `j`'s product with other `k`, summed as
            /// `DOT_PARTIALS` sums it; [`SUM_PARTIAL_ROWS`] adds each row.
            DOTS_PARTIALS dots_partials in vector_entry
                (n: U64, table: Words, count: U64, withs: U64, partials: Out);
            /// `out ← Σ cⱼ·vⱼ` (as a copy, a scaling and axpys would form it), with the
            /// partials of `zᵀout`, in one pass; with `z` null, the combination alone. `v₀` is
            /// `first`, the others the table's.
            COMBINE_DOT_PARTIALS combine_dot_partials in vector_entry (n: U64, first: In,
                table: Words, coefficients: In, count: U64, out: Out, z: In, partials: Out);
            /// The end of a quasi-Newton step in one pass: `p ← step·p`, `g ← g₊ − g`, and the
            /// partials of `sᵀy`, `yᵀy`, `g₊ᵀg₊`, `sᵀs` (rows 0–3) and `max |g₊ᵢ|` (row 4).
            STEP_END_PARTIALS step_end_partials in vector_entry
                (n: U64, step: F64, p: Out, g_new: In, g: Out, partials: Out);
            /// Each of `rows` rows of partials added in block order
            /// ([`sum_in_order`](crate::kernel::sum_in_order)): row `j` into `out[j]`.
            SUM_PARTIAL_ROWS sum_partial_rows in vector_entry
                (partials: In, blocks: U64, rows: U64, out: Out);
            /// `blocks` vectors of `len` values, laid end to end, added value by value in
            /// block order as [`SUM_PARTIAL_ROWS`] adds: `out[j] = Σ_b vectors[b·len + j]` (the
            /// least-squares blocks' Gram matrices). Launch at least `len` threads.
            SUM_BLOCK_VECTORS sum_block_vectors in vector_entry
                (vectors: In, blocks: U64, len: U64, out: Out);
            /// One level of a tree fold of `count` least-squares triangles laid end to end, a
            /// block a pair: triangle `2k·stride` takes in triangle `(2k + 1)·stride`; levels
            /// at strides 1, 2, 4, … leave them all folded into the first.
            FOLD_TRIANGLE_PAIRS fold_triangle_pairs in triangle_entry
                (triangles: Out, count: U64, stride: U64, n: U64);
            /// The Gram matrix of several vectors, and their products with one more, over the
            /// rows a mask keeps (its nonzero or its zero entries), in one pass:
            /// [`DOTS_PARTIALS`]' sums.
            MASKED_GRAM_PARTIALS masked_gram_partials in vector_entry (n: U64, table: Words,
                count: U64, u: In, mask: In, keep: U64, partials: Out);
            /// A vector written into the entries of a longer one that an index table names
            /// (the free variables into the whole point); [`GATHER`] reads them back.
            PLACE place in vector_entry (count: U64, indices: Words, from: In, to: Out);
            /// The box passes of a step within bounds (`device::box_entry`): the
            /// steepest-descent path and the projected gradient's norm.
            BOX_PATH_PARTIALS box_path_partials in box_entry (n: U64, lower: In, upper: In,
                x: In, g: In, times: Out, path: Out, partials: Out);
            /// A point of the Cauchy path.
            PATH_POINT path_point in box_entry (n: U64, x: In, t: F64, path: In, out: Out);
            /// The free mask and its count.
            FREE_PARTIALS free_partials in box_entry
                (n: U64, lower: In, upper: In, point: In, free: Out, partials: Out);
            /// The line toward a target: the direction, its slope and its room to the box.
            AIM_PARTIALS aim_partials in box_entry (n: U64, lower: In, upper: In, x: In, g: In,
                target: In, direction: Out, partials: Out);
            /// A subspace step projected into the box, and the line toward it.
            PROJECT_AIM_PARTIALS project_aim_partials in box_entry (n: U64, lower: In,
                upper: In, free: In, cauchy: In, step: In, x: In, g: In, target: Out,
                direction: Out, partials: Out);
            /// How far the free variables may follow a step, and the first to meet its bound.
            REACH_PARTIALS reach_partials in box_entry (n: U64, lower: In, upper: In,
                free: In, cauchy: In, step: In, alpha: F64, partials: Out);
            /// A step cut at its first bound.
            TRUNCATE truncate in box_entry (n: U64, lower: In, upper: In, free: In,
                cauchy: In, step: In, alpha: F64, first: U64, target: Out);
            /// A point of the line search's ray within the box.
            CLIPPED_RAY_POINT clipped_ray_point in box_entry
                (n: U64, lower: In, upper: In, x: In, step: F64, d: In, out: Out);
            /// Which bound each variable is at: a kept solution's `active_mask`.
            ACTIVE_MASK active_mask in box_entry
                (n: U64, lower: In, upper: In, x: In, out: Out);
            /// The new pair and its products.
            NEW_PAIR_PARTIALS new_pair_partials in box_entry (n: U64, step: F64, d: In,
                g_new: In, g: In, s: Out, y: Out, partials: Out);
            /// Each run of consecutive breakpoint times: its least and how many after a
            /// given breakpoint, from which the host picks the runs that hold the earliest.
            BREAKPOINT_CHUNKS breakpoint_chunks in box_entry
                (n: U64, times: In, chunk: U64, after_time: F64, after_index: U64, out: Out);
            /// The breakpoint sort's tiles, each in a block's shared memory
            /// (`device::sort_entry`); with `times` not null, the sort's start.
            SORT_TILES sort_tiles in sort_entry (n: U64, times: In, after_time: F64,
                after_index: U64, keys: Out, indices: Out);
            /// One step of the breakpoint sort whose pairs span tiles.
            SORT_STEP sort_step in sort_entry
                (n: U64, half: U64, flip: U64, keys: Out, indices: Out);
            /// A few rows of several vectors.
            GATHER gather in box_entry
                (table: Words, count: U64, indices: Words, rows: U64, out: Out);
            /// A few entries of a vector set.
            SCATTER scatter in box_entry (v: Out, entries: Words, count: U64);
        ] }
    };
    (@with $callback:ident) => {
        $crate::__shared_kernels! { @rows forward_to ($callback) }
    };
    (@forward_to ($callback:ident) $rows:tt) => {
        $callback! { $rows }
    };
    // The entry names, in `kernel`.
    (@names () [$($(#[$doc:meta])* $NAME:ident $name:ident in $home:ident
        ($($arg:ident: $kind:ident),* $(,)?);)*]) => {
        $(
            $(#[$doc])*
            pub const $NAME: &str = concat!("cudamin_", stringify!($name));
        )*
    };
    // The descriptors, in `shared`.
    (@table () [$($(#[$doc:meta])* $NAME:ident $name:ident in $home:ident
        ($($arg:ident: $kind:ident),* $(,)?);)*]) => {
        /// Every shared kernel, in table order.
        pub const SHARED_KERNELS: &[$crate::shared::SharedKernel] = &[$(
            $crate::shared::SharedKernel {
                name: concat!("cudamin_", stringify!($name)),
                params: &[$((stringify!($arg), $crate::shared::Param::$kind)),*],
            },
        )*];
    };
    // The PTX entries, each calling its body in `HOME`, a module of `device`, where this expands:
    // `device` may hold `unsafe`.
    (@entries () [$($(#[$doc:meta])* $NAME:ident $name:ident in $home:ident
        ($($arg:ident: $kind:ident),* $(,)?);)*]) => {
        $(
            #[cfg(target_arch = "nvptx64")]
            const _: () = {
                #[unsafe(export_name = concat!("cudamin_", stringify!($name)))]
                unsafe extern "ptx-kernel" fn entry(
                    $($arg: $crate::__shared_ptx_type!($kind)),*
                ) {
                    // SAFETY: the host launches it with the arguments of this same row, which
                    // the body's contract describes.
                    unsafe { self::$home::$name($($arg),*) }
                }
            };
        )*
    };
}

/// The PTX parameter type of a shared kernel's parameter of kind `U64`, `F64`, `In`, `Out` or
/// `Words`.
#[doc(hidden)]
#[macro_export]
macro_rules! __shared_ptx_type {
    (U64) => {
        usize
    };
    (F64) => {
        f64
    };
    (In) => {
        *const f64
    };
    (Out) => {
        *mut f64
    };
    (Words) => {
        *const u64
    };
}
