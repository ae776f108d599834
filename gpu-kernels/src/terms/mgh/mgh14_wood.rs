//! MGH 14, Wood: `n = 4`, `m = 6`.
//! `f₁ = 10(x₂ − x₁²)`, `f₂ = 1 − x₁`, `f₃ = √90(x₄ − x₃²)`, `f₄ = 1 − x₃`,
//! `f₅ = √10(x₂ + x₄ − 2)`, `f₆ = (x₂ − x₄)/√10`.

use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 14, Wood: see the module doc.
pub struct Mgh14;

impl Residuals for Mgh14 {
    fn count(_n: usize) -> usize {
        6
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 4)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let one = Num::constant(1.0);
        match i {
            0 => (x[1] - x[0].sq()) * 10.0,
            1 => one - x[0],
            2 => (x[3] - x[2].sq()) * Real::sqrt(90.0_f64),
            3 => one - x[2],
            4 => (x[1] + x[3] - 2.0) * Real::sqrt(10.0_f64),
            _ => (x[1] - x[3]) / Real::sqrt(10.0_f64),
        }
    }
}

crate::register_residuals!(by_index Mgh14, mgh14);
