//! MGH 16, Brown and Dennis: `n = 4`, `m = 20`.
//! `f_i = (x₁ + t_i x₂ − e^{t_i})² + (x₃ + x₄ sin t_i − cos t_i)²`, `t_i = i/5`.

use super::sample_point;
use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 16, Brown and Dennis: see the module doc.
pub struct Mgh16;

impl Residuals for Mgh16 {
    fn count(_n: usize) -> usize {
        20
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 4)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let t = sample_point(i, 5.0);
        let linear = x[0] + x[1] * t - Real::exp(t);
        let periodic = x[2] + x[3] * Real::sin(t) - Real::cos(t);
        linear.sq() + periodic.sq()
    }
}

crate::register_residuals!(by_index Mgh16, mgh16);
