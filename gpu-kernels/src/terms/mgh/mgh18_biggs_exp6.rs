//! MGH 18, Biggs EXP6: `n = 6`, `m = 13`.
//! `f_i = x₃e^{−t_i x₁} − x₄e^{−t_i x₂} + x₆e^{−t_i x₅} − y_i`, `t_i = i/10`,
//! `y_i = e^{−t_i} − 5e^{−10t_i} + 3e^{−4t_i}`.

use super::sample_point;
use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 18, Biggs EXP6: see the module doc.
pub struct Mgh18;

impl Residuals for Mgh18 {
    fn count(_n: usize) -> usize {
        13
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 6)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let t = sample_point(i, 10.0);
        let y = Real::exp(-t) - 5.0 * Real::exp(-10.0 * t) + 3.0 * Real::exp(-4.0 * t);
        x[2] * (x[0] * -t).exp() - x[3] * (x[1] * -t).exp() + x[5] * (x[4] * -t).exp() - y
    }
}

crate::register_residuals!(by_index Mgh18, mgh18);
