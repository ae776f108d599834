//! Registration: the two traits that name a registered term's PTX entries, and the macros that
//! emit the entries and implement the traits, in the crate that registers the term. The entry
//! names come from the scheme table (`scheme.rs`).

use crate::least_squares::{ResidualTerm, Residuals};
use crate::scheme::SCHEMES;
use crate::term::Term;

/// The PTX entry points of a registered term. Implemented by
/// [`register_term!`](crate::register_term); the host launches kernels by these names.
pub trait Kernels: Term {
    /// The name the term was registered under.
    const NAME: &'static str;
    /// `(x, n, data, data_len, data_rows, data_type, out, values)`: one partial sum per block
    /// into `values`; `out` unused.
    const VALUE: &'static str;
    /// Per gradient scheme, in the table's order (`Gradient::ALL`):
    /// `(x, n, data, data_len, data_rows, data_type, out, values)`, the gradient (banded) or
    /// one partial gradient per block (dense) into `out`; unless `values` is null, the value's
    /// per-block partials, from the same pass.
    const GRADIENTS: [&'static str; SCHEMES];
}

/// Emits the PTX entry points of a [`Term`] and implements [`Kernels`] for it.
///
/// ```ignore
/// register_term!(SeedExpSum, seed_expsum);
/// // PTX: seed_expsum_value, seed_expsum_gradient_{exact,forward,central}
/// ```
#[macro_export]
macro_rules! register_term {
    ($term:ty, $name:ident) => {
        impl $crate::kernel::Kernels for $term {
            $crate::__kernel_names!($name);
        }
        $crate::__term_entries!($term, $name);
    };
}

/// Registers a residual term `T` (its `eval` returns the residual `r_k`): emits the PTX entry
/// points of its objective [`SumOfSquares<T>`](crate::SumOfSquares), which then implements
/// [`Kernels`], and implements [`ResidualKernels`] for `T`. A registration in a user's crate
/// goes through here, since `SumOfSquares` is not that crate's type.
///
/// ```ignore
/// register_residuals!(ExpDecay, exp_decay);
/// // PTX: exp_decay_value, exp_decay_gradient_{exact,forward,central}, of Σ r_k²;
/// //      exp_decay_triangle_{exact,forward,central}, the residual rows folded into R (least
/// //      squares), and exp_decay_cost, the residuals' cost under a robust loss
/// ```
///
/// Residuals given by index, with no data (a [`Residuals`](crate::Residuals) type `P`, whose
/// `count(n)` is the number of terms), are registered with `by_index`: the same entries, for
/// the residual term [`ResidualTerm<P>`](crate::ResidualTerm), whose objective is
/// [`LeastSquares<P>`](crate::LeastSquares). It implements [`IndexedKernels`] for `P`, which
/// a user's crate may do for its own `P` (where implementing `ResidualKernels` for
/// `ResidualTerm<P>`, a type of this crate, would break the orphan rule).
///
/// ```ignore
/// register_residuals!(by_index Beale, beale);
/// // load TermProblem::<LeastSquares<Beale>>::new(2) with Backend::load_least_squares
/// ```
#[macro_export]
macro_rules! register_residuals {
    (by_index $residuals:ty, $name:ident) => {
        impl $crate::kernel::IndexedKernels for $residuals {
            $crate::__kernel_names!($name);
            $crate::__residual_names!($name);
        }
        $crate::__residual_entries!($crate::ResidualTerm<$residuals>, $name);
    };
    ($residual:ty, $name:ident) => {
        impl $crate::kernel::ResidualKernels for $residual {
            $crate::__kernel_names!($name);
            $crate::__residual_names!($name);
        }
        $crate::__residual_entries!($residual, $name);
    };
}

/// The entry names a residual term registered as `$name` adds to its sum of squares'.
#[doc(hidden)]
#[macro_export]
macro_rules! __residual_names {
    ($name:ident) => {
        $crate::__schemes! { @rows triangle_names ($name) }
        const COST: &'static str = concat!(stringify!($name), "_cost");
    };
}

/// The PTX entry points of residual term `$residual`, named after `$name`: its sum of
/// squares' term entries, its triangle entries and its cost entry.
#[doc(hidden)]
#[macro_export]
macro_rules! __residual_entries {
    ($residual:ty, $name:ident) => {
        $crate::__term_entries!($crate::SumOfSquares<$residual>, $name);
        $crate::__schemes! { @rows triangle_entries ($residual, $name) }
        $crate::__term_entry!(
            @loss concat!(stringify!($name), "_cost"),
            $crate::device::entry::least_squares::<$residual, $crate::device::entry::Cost>
        );
    };
}

/// The residual terms registered with [`register_residuals!`](crate::register_residuals): the
/// entry points of their sum of squares, under the name given.
pub trait ResidualKernels: Term {
    /// As [`Kernels::NAME`].
    const NAME: &'static str;
    /// As [`Kernels::VALUE`].
    const VALUE: &'static str;
    /// As [`Kernels::GRADIENTS`].
    const GRADIENTS: [&'static str; SCHEMES];
    /// Per gradient scheme, in the table's order: `(x, n, data, data_len, data_rows,
    /// data_type, loss, f_scale, out, values)`, the least-squares triangle (see
    /// [`triangle`](super::triangle)) with the scheme's Jacobian rows, rescaled for the robust
    /// loss `Loss::ALL[loss]` of scale `f_scale`: per block, the packed `R` then `Qᵀr` into
    /// `out` (`triangle_len(n)` values a block), the points' costs `C²ρ(r²/C²)` summed into
    /// `values`.
    const TRIANGLES: [&'static str; SCHEMES];
    /// `(x, n, data, data_len, data_rows, data_type, loss, f_scale, out, values)`: the points'
    /// costs alone, one sum per block into `values`; `out` unused.
    const COST: &'static str;
}

/// The residuals by index registered with `register_residuals!(by_index P, name)`: the entry
/// points of [`ResidualTerm<P>`](crate::ResidualTerm)'s sum of squares, which through this
/// trait implements [`ResidualKernels`].
pub trait IndexedKernels: Residuals {
    /// As [`Kernels::NAME`].
    const NAME: &'static str;
    /// As [`Kernels::VALUE`].
    const VALUE: &'static str;
    /// As [`Kernels::GRADIENTS`].
    const GRADIENTS: [&'static str; SCHEMES];
    /// As [`ResidualKernels::TRIANGLES`].
    const TRIANGLES: [&'static str; SCHEMES];
    /// As [`ResidualKernels::COST`].
    const COST: &'static str;
}

impl<P: IndexedKernels> ResidualKernels for ResidualTerm<P> {
    const NAME: &'static str = P::NAME;
    const VALUE: &'static str = P::VALUE;
    const GRADIENTS: [&'static str; SCHEMES] = P::GRADIENTS;
    const TRIANGLES: [&'static str; SCHEMES] = P::TRIANGLES;
    const COST: &'static str = P::COST;
}

impl<T: ResidualKernels> Kernels for crate::SumOfSquares<T> {
    const NAME: &'static str = T::NAME;
    const VALUE: &'static str = T::VALUE;
    const GRADIENTS: [&'static str; SCHEMES] = T::GRADIENTS;
}

/// The entry-point names of a term registered as `$name`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_names {
    ($name:ident) => {
        const NAME: &'static str = stringify!($name);
        const VALUE: &'static str = concat!(stringify!($name), "_value");
        $crate::__schemes! { @rows gradient_names ($name) }
    };
}

/// The PTX entry points of term `$term`, named after `$name`.
#[doc(hidden)]
#[macro_export]
macro_rules! __term_entries {
    ($term:ty, $name:ident) => {
        $crate::__term_entry!(
            concat!(stringify!($name), "_value"),
            $crate::device::entry::value::<$term>
        );
        $crate::__schemes! { @rows gradient_entries ($term, $name) }
    };
}
