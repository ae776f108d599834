//! Rosenbrock's function, in its two large-scale forms. Both sum the same pair term
//! `100(x₁ − x₀²)² + (1 − x₀)²`; they differ only in which pairs.

use crate::{Data, Num, Real, Term, Vars, Window};

#[inline(always)]
fn pair<R: Real>(x0: Num<R>, x1: Num<R>) -> Num<R> {
    (x1 - x0 * x0).sq() * 100.0 + (1.0 - x0).sq()
}

/// MGH 21, extended Rosenbrock: disjoint pairs `(x₂ₖ, x₂ₖ₊₁)`; `n` even.
pub struct ExtRosenbrock;

impl Term for ExtRosenbrock {
    const WINDOW: Window = Window::Banded {
        stride: 2,
        width: 2,
    };
    type Local<'a> = ();
    const EVAL_IN_LANES: bool = true;

    fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}

    #[inline(always)]
    fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
        pair(x[0], x[1])
    }
}

crate::register_term!(ExtRosenbrock, ext_rosenbrock);

/// Chained Rosenbrock, `scipy.optimize.rosen`: overlapping pairs `(xᵢ, xᵢ₊₁)`.
pub struct ChainedRosenbrock;

impl Term for ChainedRosenbrock {
    const WINDOW: Window = Window::Banded {
        stride: 1,
        width: 2,
    };
    type Local<'a> = ();

    fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}

    #[inline(always)]
    fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
        pair(x[0], x[1])
    }
}

crate::register_term!(ChainedRosenbrock, rosenbrock);
