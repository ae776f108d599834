//! Sums of squares, `F(x) = Σ_k r_k(x)²`. A *residual term* is a [`Term`] whose `eval` returns
//! the residual `r_k` instead of a summand; [`SumOfSquares`] turns it into the objective's term
//! `r_k²`, which BFGS and L-BFGS minimize, while Levenberg–Marquardt reads the residuals
//! themselves (their Jacobian rows, through [`kernel::normal`](crate::kernel::normal)).
//!
//! A data fit's residual term reads one data row, `(y_k − m(x, t_k))·w_k`; the
//! Moré–Garbow–Hillstrom problems give their residuals by index, as [`Residuals`], which
//! [`ResidualTerm`] makes a residual term.

use crate::{Data, Num, Real, Term, Vars, Window};
use core::marker::PhantomData;

/// The objective `Σ_k r_k(x)²` of the residual term `T` (whose `eval` returns `r_k`). Every
/// property of the term (window, data, preparation) is `T`'s; only the value is squared.
/// Register it with [`register_residuals!`](crate::register_residuals).
pub struct SumOfSquares<T>(PhantomData<T>);

impl<T: Term> Term for SumOfSquares<T> {
    const WINDOW: Window = T::WINDOW;
    type Local<'a> = T::Local<'a>;
    const EVAL_IN_LANES: bool = T::EVAL_IN_LANES;

    #[inline(always)]
    fn terms(n: usize, data: Data<'_>) -> usize {
        T::terms(n, data)
    }

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        T::check(n, data)
    }

    #[inline(always)]
    fn prepare<'a>(k: usize, n: usize, data: Data<'a>) -> T::Local<'a> {
        T::prepare(k, n, data)
    }

    #[inline(always)]
    fn eval<R: Real>(x: Vars<'_, R>, local: &T::Local<'_>) -> Num<R> {
        T::eval(x, local).sq()
    }
}

/// The residuals `f_i(x)`, `i < count(n)`, of a least-squares objective, given by index (no
/// data). Register them with `register_residuals!(by_index P, name)`; their objective is
/// [`LeastSquares<P>`], with `count(n)` terms.
pub trait Residuals {
    /// The number of residuals `m` for `n` variables.
    fn count(n: usize) -> usize;
    /// Rejects an `n` the problem is not defined for, beyond `n ≥ 1` (checked by the window).
    /// The default accepts every `n`.
    fn check(n: usize) -> Result<(), &'static str> {
        let _ = n;
        Ok(())
    }
    /// `f_i(x)`.
    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R>;
}

/// The residual term of residuals `P`: term `i` is `f_i(x)`, over a dense window.
pub struct ResidualTerm<P>(PhantomData<P>);

impl<P: Residuals> Term for ResidualTerm<P> {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = usize;

    fn terms(n: usize, _data: Data<'_>) -> usize {
        P::count(n)
    }

    fn check(n: usize, _data: Data<'_>) -> Result<(), &'static str> {
        P::check(n)
    }

    #[inline(always)]
    fn prepare(i: usize, _n: usize, _data: Data<'_>) -> usize {
        i
    }

    fn eval<R: Real>(x: Vars<'_, R>, &i: &usize) -> Num<R> {
        P::residual(i, x)
    }
}

/// `Σ_i f_i(x)²` for residuals `P`. Register it as `register_residuals!(by_index P, name)`.
pub type LeastSquares<P> = SumOfSquares<ResidualTerm<P>>;

/// `Ok` when `n` is `expected`, for problems of one size.
pub const fn exactly(n: usize, expected: usize) -> Result<(), &'static str> {
    if n == expected {
        return Ok(());
    }
    Err(match expected {
        2 => "the problem has n = 2 variables",
        3 => "the problem has n = 3 variables",
        4 => "the problem has n = 4 variables",
        6 => "the problem has n = 6 variables",
        _ => "the problem has a fixed number of variables",
    })
}
