//! MGH 2, Freudenstein and Roth: `n = 2`, `m = 2`.
//! `f₁ = −13 + x₁ + ((5 − x₂)x₂ − 2)x₂`, `f₂ = −29 + x₁ + ((x₂ + 1)x₂ − 14)x₂`.
//! Besides the zero at (5, 4) it has a local minimum, F = 48.98425…, near (11.41, −0.8968).

use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 2, Freudenstein and Roth: see the module doc.
pub struct Mgh02;

impl Residuals for Mgh02 {
    fn count(_n: usize) -> usize {
        2
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 2)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let (x1, x2) = (x[0], x[1]);
        match i {
            0 => x1 - 13.0 + ((5.0 - x2) * x2 - 2.0) * x2,
            _ => x1 - 29.0 + ((x2 + 1.0) * x2 - 14.0) * x2,
        }
    }
}

crate::register_residuals!(by_index Mgh02, mgh02);
