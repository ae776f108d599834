//! `f(x) = Σ x_i² + e^{x_i}`: the seed articles' Numba example, one term per variable.

use crate::{Data, Num, Real, Term, Vars, Window};

/// `Σ x_i² + e^{x_i}`, one separable term per variable.
pub struct SeedExpSum;

impl Term for SeedExpSum {
    const WINDOW: Window = Window::Separable;
    type Local<'a> = ();
    const EVAL_IN_LANES: bool = true;

    fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}

    #[inline(always)]
    fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
        x[0] * x[0] + x[0].exp()
    }
}

crate::register_term!(SeedExpSum, seed_expsum);
