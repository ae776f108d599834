//! MGH 13, Powell singular: `n = 4`, `m = 4`.
//! `f₁ = x₁ + 10x₂`, `f₂ = √5(x₃ − x₄)`, `f₃ = (x₂ − 2x₃)²`, `f₄ = √10(x₁ − x₄)²`.
//! The minimum, 0 at the origin, has a singular Hessian.

use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 13, Powell singular: see the module doc.
pub struct Mgh13;

impl Residuals for Mgh13 {
    fn count(_n: usize) -> usize {
        4
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 4)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        match i {
            0 => x[0] + x[1] * 10.0,
            1 => (x[2] - x[3]) * Real::sqrt(5.0_f64),
            2 => (x[1] - x[2] * 2.0).sq(),
            _ => (x[0] - x[3]).sq() * Real::sqrt(10.0_f64),
        }
    }
}

crate::register_residuals!(by_index Mgh13, mgh13);
