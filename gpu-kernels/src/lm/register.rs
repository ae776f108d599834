//! The registration of a residual term's batch kernels ([`batch_kernel!`](crate::batch_kernel)):
//! the grid form of `lm::batch`, one fit per thread on either backend, and the block form of
//! `lm::block`, one fit per block on the GPU.

/// Registers the batch kernel of residual term `$term`, whose window is
/// [`Window::Dense`](crate::Window): `batch_kernel!(NAME = function(Term))` declares the grid
/// kernel `NAME` (PTX entry `function`), which runs [`entry`](crate::lm::batch::entry) on the GPU
/// or on the CPU, and its block form `NAME.block` (entry `function_block`), a block per fit on
/// the GPU. Both take `(data: In, offsets: In, starts: In, out: Out, params: U64, fixed: U64,
/// ftol: F64, xtol: F64, gtol: F64, factor: F64, max_nfev: U64, single: U64)`: `fixed` holds the
/// parameters of its set bits at their starts, and `single` other than 0 runs the fits in
/// single precision. Name `function` after the term's registration, with
/// [`SUFFIX`](crate::lm::batch::SUFFIX) (or [`POISSON_SUFFIX`](crate::lm::batch::POISSON_SUFFIX)
/// for `PoissonDeviance<Term>`): a model takes only its own term's batch kernel, and a kernel
/// crate's test finds it by that name.
///
/// ```ignore
/// register_residuals!(MichaelisMenten, michaelis_menten);
/// batch_kernel!(MICHAELIS_MENTEN_BATCH = michaelis_menten_batch(MichaelisMenten));
/// ```
#[macro_export]
macro_rules! batch_kernel {
    ($name:ident = $function:ident($term:ty)) => {
        $crate::__batch_kernel!(
            $name = $function($term),
            data: In,
            offsets: In,
            starts: In,
            out: Out,
            params: U64,
            fixed: U64,
            ftol: F64,
            xtol: F64,
            gtol: F64,
            factor: F64,
            max_nfev: U64,
            single: U64
        );
    };
}

/// A batch kernel's static and its two entries, `$function`, one fit per thread, and
/// `$function_block`, one per block (`lm::block::Together`), from the arguments listed once;
/// their kinds are [`PARAMS`](crate::lm::batch::PARAMS), which the host reads by name alone.
#[doc(hidden)]
#[macro_export]
macro_rules! __batch_kernel {
    ($name:ident = $function:ident($term:ty), $($arg:ident: $kind:ident),*) => {
        #[doc = concat!(
            "The batch kernel `", stringify!($function), "` and its block form `",
            stringify!($function), "_block`, registered to launch on the GPU or the CPU."
        )]
        pub static $name: $crate::raw::RawKernel = $crate::raw::RawKernel {
            name: stringify!($function),
            params: $crate::lm::batch::PARAMS,
            cpu: Some(|thread, args| {
                let mut args = args.iter();
                $(let Some(&$crate::__raw_cpu_pattern!($kind, $arg)) = args.next() else { return };)*
                $crate::lm::batch::entry::<$term, _>(
                    $crate::lm::batch::Alone(thread),
                    $($arg),*
                )
            }),
            block: Some(&$crate::raw::RawKernel {
                name: concat!(stringify!($function), "_block"),
                params: $crate::lm::batch::PARAMS,
                cpu: None,
                block: None,
            }),
        };
        $crate::__raw_entry!(
            @named stringify!($function),
            $crate::lm::batch::entry::<$term, $crate::lm::batch::Alone>,
            $crate::lm::batch::Alone($crate::raw::Thread::current()),
            $($arg: $kind),*
        );
        $crate::__raw_entry!(
            @named concat!(stringify!($function), "_block"),
            $crate::lm::batch::entry::<$term, $crate::lm::block::Together>,
            $crate::lm::block::Together::current(),
            $($arg: $kind),*
        );
    };
}
