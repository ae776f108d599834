//! MGH 5, Beale: `n = 2`, `m = 3`.
//! `f_i = y_i − x₁(1 − x₂^i)`, `y = (1.5, 2.25, 2.625)`.

use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 5, Beale: see the module doc.
pub struct Mgh05;

const Y: [f64; 3] = [1.5, 2.25, 2.625];

impl Residuals for Mgh05 {
    fn count(_n: usize) -> usize {
        Y.len()
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 2)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let power = x[1].powi(i as i32 + 1);
        Y[i] - x[0] * (1.0 - power)
    }
}

crate::register_residuals!(by_index Mgh05, mgh05);
