//! The registration macros' unsafe halves: each expands a `ptx-kernel` entry point, with its
//! raw arguments turned into safe views, in the crate that registers a term or raw kernel.
//! They carry this module's permission (`allow_internal_unstable`, `allow_internal_unsafe`), so
//! the registering crate needs neither the `abi_ptx` feature nor `unsafe`: a term file, here or
//! in a user's crate, contains none. `register_term!`, `grid_kernel!` and `block_kernel!` call
//! them.

/// One PTX entry of a term, with the term kernels' argument list, calling `$body` (one of
/// `device::entry`'s bodies). With `@loss`, a residual term's least-squares entry: the same
/// list with the loss (its index in `Loss::ALL`) and its `f_scale` before `out`.
#[doc(hidden)]
#[macro_export]
#[cfg_attr(
    target_arch = "nvptx64",
    allow_internal_unstable(abi_ptx),
    allow_internal_unsafe
)]
macro_rules! __term_entry {
    (@loss $export:expr, $($body:tt)+) => {
        $crate::__term_entry!(@with (loss: usize, f_scale: f64) $export, $($body)+);
    };
    (@with ($($extra:ident: $ty:ty),*) $export:expr, $($body:tt)+) => {
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[unsafe(export_name = $export)]
            unsafe extern "ptx-kernel" fn entry(
                x: *const f64,
                n: usize,
                lower: *const f64,
                upper: *const f64,
                data: *const f64,
                data_len: usize,
                data_rows: usize,
                data_type: usize,
                $($extra: $ty,)*
                out: *mut f64,
                values: *mut f64,
            ) {
                // SAFETY: the host launcher passes buffers of the lengths given (a test checks
                // every launch against this signature).
                unsafe {
                    $($body)+(x, n, lower, upper, data, data_len, data_rows, data_type, $($extra,)* out, values)
                }
            }
        };
    };
    ($export:expr, $($body:tt)+) => {
        $crate::__term_entry!(@with () $export, $($body)+);
    };
}

#[doc(hidden)]
#[macro_export]
#[cfg_attr(
    target_arch = "nvptx64",
    allow_internal_unstable(abi_ptx),
    allow_internal_unsafe
)]
macro_rules! __raw_entry {
    // The entry `$export` (a string), which calls `$call(context, args...)`.
    (@named $export:expr, $call:path, $context:expr, $($arg:ident: $kind:ident),*) => {
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[unsafe(export_name = $export)]
            unsafe extern "ptx-kernel" fn entry($($arg: $crate::__raw_ptx_type!($kind)),*) {
                $(let $arg = $crate::__raw_view!($kind, $arg);)*
                $call($context, $($arg),*)
            }
        };
    };
    ($function:ident, $context:expr, $($arg:ident: $kind:ident),*) => {
        #[cfg(target_arch = "nvptx64")]
        const _: () = {
            #[unsafe(export_name = stringify!($function))]
            unsafe extern "ptx-kernel" fn entry($($arg: $crate::__raw_ptx_type!($kind)),*) {
                $(let $arg = $crate::__raw_view!($kind, $arg);)*
                $function($context, $($arg),*)
            }
        };
    };
}

#[doc(hidden)]
#[macro_export]
#[cfg_attr(target_arch = "nvptx64", allow_internal_unsafe)]
macro_rules! __raw_view {
    // SAFETY (both): the host launcher passes a live device buffer for every slice argument.
    (In, $arg:ident) => {
        unsafe { $crate::device::input($arg) }
    };
    (Out, $arg:ident) => {
        unsafe { $crate::device::output($arg) }
    };
    (F64, $arg:ident) => {
        $arg
    };
    (U64, $arg:ident) => {
        $arg
    };
}

/// The PTX parameter type of a raw kernel argument of kind `In`, `Out`, `F64` or `U64`.
#[doc(hidden)]
#[macro_export]
macro_rules! __raw_ptx_type {
    (In) => {
        $crate::device::SliceArg
    };
    (Out) => {
        $crate::device::SliceArg
    };
    (F64) => {
        f64
    };
    (U64) => {
        u64
    };
}
