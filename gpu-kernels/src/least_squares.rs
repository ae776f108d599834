//! Sums of squares, `F(x) = Σ_i f_i(x)²`, as terms: write the residuals, get a [`Term`] whose
//! term `i` is `f_i(x)²` over a dense window. The Moré–Garbow–Hillstrom problems are written so.

use crate::{Data, Num, Real, Term, Vars, Window};
use core::marker::PhantomData;

/// The residuals `f_i(x)`, `i < count(n)`, of a least-squares objective.
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

/// The term objective `Σ_i f_i(x)²` of residuals `P`. Register it as
/// `register_term!(LeastSquares<P>, name)`.
pub struct LeastSquares<P>(PhantomData<P>);

impl<P: Residuals> Term for LeastSquares<P> {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = usize;

    fn terms(n: usize, _data: Data<'_>) -> usize {
        P::count(n)
    }

    fn check(n: usize, _data: Data<'_>) -> Result<(), &'static str> {
        P::check(n)
    }

    fn prepare(i: usize, _n: usize, _data: Data<'_>) -> usize {
        i
    }

    fn eval<R: Real>(x: Vars<'_, R>, &i: &usize) -> Num<R> {
        P::residual(i, x).sq()
    }
}

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
