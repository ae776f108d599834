//! MGH 1, Rosenbrock: `n = 2`, `m = 2`.
//! `f₁ = 10(x₂ − x₁²)`, `f₂ = 1 − x₁`.

use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 1, Rosenbrock: see the module doc.
pub struct Mgh01;

impl Residuals for Mgh01 {
    fn count(_n: usize) -> usize {
        2
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 2)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        match i {
            0 => (x[1] - x[0].sq()) * 10.0,
            _ => 1.0 - x[0],
        }
    }
}

crate::register_residuals!(by_index Mgh01, mgh01);
