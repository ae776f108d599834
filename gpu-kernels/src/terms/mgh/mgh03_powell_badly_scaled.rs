//! MGH 3, Powell badly scaled: `n = 2`, `m = 2`.
//! `f₁ = 10⁴x₁x₂ − 1`, `f₂ = e^{−x₁} + e^{−x₂} − 1.0001`.

use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 3, Powell badly scaled: see the module doc.
pub struct Mgh03;

impl Residuals for Mgh03 {
    fn count(_n: usize) -> usize {
        2
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 2)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        match i {
            0 => x[0] * x[1] * 1e4 - 1.0,
            _ => (-x[0]).exp() + (-x[1]).exp() - 1.0001,
        }
    }
}

crate::register_residuals!(by_index Mgh03, mgh03);
