//! The gradient schemes, defined once.
//!
//! A scheme is a type: [`Exact`] (the term on dual numbers) or [`Differences<S>`] (finite
//! differences with the step rule `S`). [`__schemes!`](crate::__schemes)'s table lists them,
//! one row each (variant, name, type, help), and everything that depends on the list is
//! generated from it: the [`Gradient`] kinds and their names (`--grad`'s values), the PTX
//! entries of every registered term (`<term>_gradient_<name>`, `<term>_triangle_<name>`), and
//! the entry-name arrays the host launches by. Adding a finite-difference scheme is one `FdScheme`
//! implementation (its stencil, in `fd`) and one row.

use crate::fd::{FdScheme, Interval};
use core::marker::PhantomData;

/// Finite differences of each term with step rule `S` (see `fd`).
pub struct Differences<S>(PhantomData<S>);

/// Exact derivatives: each term's `eval` on dual numbers (see `kernel::exact`).
pub struct Exact;

/// What a scheme's dense gradient divides its summed partials by.
pub trait Scheme: 'static {
    /// The divisor of variable `i`'s summed partials at `x_i` in `interval` (where there is
    /// one): the spacing of the finite difference (the step actually taken), or 1 for exact
    /// derivatives.
    fn divisor(x_i: f64, interval: Option<Interval>) -> f64;
}

impl<S: FdScheme + 'static> Scheme for Differences<S> {
    #[inline(always)]
    fn divisor(x_i: f64, interval: Option<Interval>) -> f64 {
        S::steps(x_i, interval).spacing
    }
}

impl Scheme for Exact {
    #[inline(always)]
    fn divisor(_: f64, _: Option<Interval>) -> f64 {
        1.0
    }
}

/// The table of gradient schemes, and what is generated from it. Rows: the kind's variant, its
/// name (entry suffix, `--grad` value), one line of help, and its type. The first row is the
/// default.
///
/// `@rows RULE (ARGS)` expands rule `@RULE` below with `(ARGS) [rows]`; `@with MACRO` expands
/// a macro of the caller's, `MACRO! { [rows] }`, where the caller dispatches on its own traits.
#[doc(hidden)]
#[macro_export]
macro_rules! __schemes {
    (@rows $rule:ident $args:tt) => {
        $crate::__schemes! { @$rule $args [
            (Exact exact
                "Exact derivatives of the terms, from their own source on dual numbers: no step, no truncation error"
                => $crate::scheme::Exact)
            (Forward forward "Forward differences per term, scipy's '2-point'"
                => $crate::scheme::Differences<$crate::fd::Forward>)
            (Central central "Central differences per term, scipy's '3-point'"
                => $crate::scheme::Differences<$crate::fd::Central>)
        ] }
    };
    (@with $callback:ident) => {
        $crate::__schemes! { @rows forward_to ($callback) }
    };
    (@forward_to ($callback:ident) $rows:tt) => {
        $callback! { $rows }
    };
    // The entry names of a term registered as `$name`, in table order.
    (@gradient_names ($name:ident) [$(($variant:ident $suffix:ident $help:literal => $ty:ty))*]) => {
        const GRADIENTS: [&'static str; $crate::scheme::SCHEMES] =
            [$(concat!(stringify!($name), "_gradient_", stringify!($suffix))),*];
    };
    (@triangle_names ($name:ident) [$(($variant:ident $suffix:ident $help:literal => $ty:ty))*]) => {
        const TRIANGLES: [&'static str; $crate::scheme::SCHEMES] =
            [$(concat!(stringify!($name), "_triangle_", stringify!($suffix))),*];
    };
    // A term's gradient entries, one per scheme.
    (@gradient_entries ($term:ty, $name:ident) [$(($variant:ident $suffix:ident $help:literal => $ty:ty))*]) => {
        $(
            $crate::__term_entry!(
                concat!(stringify!($name), "_gradient_", stringify!($suffix)),
                $crate::device::entry::gradient::<$term, $ty>
            );
        )*
    };
    // A residual term's triangle entries, one per scheme.
    (@triangle_entries ($residual:ty, $name:ident) [$(($variant:ident $suffix:ident $help:literal => $ty:ty))*]) => {
        $(
            $crate::__term_entry!(
                @loss concat!(stringify!($name), "_triangle_", stringify!($suffix)),
                $crate::device::entry::least_squares::<$residual, $ty>
            );
        )*
    };
}

macro_rules! gradient_kinds {
    ([$(($variant:ident $suffix:ident $help:literal => $ty:ty))*]) => {
        /// How a gradient (or a Jacobian row) is computed: one kind per row of the scheme
        /// table. The default is [`Exact`](Gradient::Exact).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Gradient {
            $(
                #[doc = $help]
                $variant,
            )*
        }

        /// The number of gradient schemes.
        pub const SCHEMES: usize = [$(stringify!($suffix)),*].len();

        impl Gradient {
            /// Every kind, in table order (its position is `kind as usize`).
            pub const ALL: [Gradient; SCHEMES] = [$(Gradient::$variant),*];

            /// Its name: `"exact"`, `"forward"`, `"central"`, ...
            pub const fn name(self) -> &'static str {
                match self {
                    $(Gradient::$variant => stringify!($suffix),)*
                }
            }

            /// One line saying what it is.
            pub const fn help(self) -> &'static str {
                match self {
                    $(Gradient::$variant => $help,)*
                }
            }

            /// The divisor of a dense gradient's summed partials at `x_i` in `interval` (see
            /// [`Scheme::divisor`]).
            #[inline(always)]
            pub fn divisor(self, x_i: f64, interval: Option<Interval>) -> f64 {
                match self {
                    $(Gradient::$variant => <$ty as Scheme>::divisor(x_i, interval),)*
                }
            }
        }
    };
}

__schemes! { @with gradient_kinds }

impl Default for Gradient {
    /// The first row of the table.
    fn default() -> Self {
        Gradient::ALL[0]
    }
}
