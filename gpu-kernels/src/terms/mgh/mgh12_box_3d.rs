//! MGH 12, Box three-dimensional: `n = 3`, `m = 10`.
//! `f_i = e^{−t_i x₁} − e^{−t_i x₂} − x₃(e^{−t_i} − e^{−10 t_i})`, `t_i = i/10`.

use super::sample_point;
use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 12, Box three-dimensional: see the module doc.
pub struct Mgh12;

impl Residuals for Mgh12 {
    fn count(_n: usize) -> usize {
        10
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 3)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let t = sample_point(i, 10.0);
        let target = Real::exp(-t) - Real::exp(-10.0 * t);
        (x[0] * -t).exp() - (x[1] * -t).exp() - x[2] * target
    }
}

crate::register_residuals!(by_index Mgh12, mgh12);
