//! The launches of the shared kernels: the vector kernels of a solver whose vectors stay on
//! the device, L-BFGS-B's box passes and the partial sums. Each builder is generated from the
//! kernel's row in `gpu_kernels::shared`'s table, its arguments in the entry's order;
//! [`vector_launches`] launches every kernel of the table once for the PTX signature test.

use super::{KernelArg, Launch};
use gpu_kernels::shared::{Param, SHARED_KERNELS};

/// The host type of a shared-kernel parameter of a kind: vectors and tables by address.
macro_rules! host_type {
    (U64) => {
        usize
    };
    (F64) => {
        f64
    };
    ($pointer:ident) => {
        u64
    };
}

/// The launch argument of a parameter of a kind. `super::count`, not `count`: several
/// kernels have a parameter of that name.
macro_rules! host_arg {
    (U64, $arg:ident) => {
        super::count($arg)
    };
    (F64, $arg:ident) => {
        KernelArg::F64($arg)
    };
    ($pointer:ident, $arg:ident) => {
        KernelArg::Ptr($arg)
    };
}

/// One builder per row of the table.
macro_rules! launch_builders {
    ([$($(#[$doc:meta])* $NAME:ident $name:ident in $home:ident
        ($($arg:ident: $kind:ident),* $(,)?);)*]) => {
        /// The shared kernels' launches, one per row of `gpu_kernels::shared`'s table.
        impl Launch {$(
            #[doc = concat!(
                "A launch of [`", stringify!($NAME), "`](gpu_kernels::kernel::",
                stringify!($NAME), "), its arguments in the entry's order."
            )]
            #[allow(clippy::too_many_arguments)]
            pub fn $name($($arg: host_type!($kind)),*) -> Launch {
                Launch::of(gpu_kernels::kernel::$NAME, vec![$(host_arg!($kind, $arg)),*])
            }
        )*}
    };
}

gpu_kernels::__shared_kernels! { @with launch_builders }

/// A launch of every shared kernel, with placeholder arguments of its declared kinds, for the
/// PTX signature test.
pub fn vector_launches() -> Vec<Launch> {
    (SHARED_KERNELS.iter())
        .map(|kernel| {
            let args = (kernel.params.iter().zip(1..)).map(|(&(_, kind), at)| match kind {
                Param::U64 => KernelArg::U64(1),
                Param::F64 => KernelArg::F64(1.0),
                Param::In | Param::Out | Param::Words => KernelArg::Ptr(at),
            });
            Launch::of(kernel.name, args.collect())
        })
        .collect()
}
