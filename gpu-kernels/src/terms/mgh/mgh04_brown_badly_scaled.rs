//! MGH 4, Brown badly scaled: `n = 2`, `m = 3`.
//! `f₁ = x₁ − 10⁶`, `f₂ = x₂ − 2·10⁻⁶`, `f₃ = x₁x₂ − 2`.

use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 4, Brown badly scaled: see the module doc.
pub struct Mgh04;

impl Residuals for Mgh04 {
    fn count(_n: usize) -> usize {
        3
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 2)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        match i {
            0 => x[0] - 1e6,
            1 => x[1] - 2e-6,
            _ => x[0] * x[1] - 2.0,
        }
    }
}

crate::register_residuals!(by_index Mgh04, mgh04);
