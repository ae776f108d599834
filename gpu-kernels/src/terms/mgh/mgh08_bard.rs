//! MGH 8, Bard: `n = 3`, `m = 15`.
//! `f_i = y_i − (x₁ + u_i / (v_i x₂ + w_i x₃))` with `u_i = i`, `v_i = 16 − i`,
//! `w_i = min(u_i, v_i)`.

use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 8, Bard: see the module doc.
pub struct Mgh08;

const Y: [f64; 15] = [
    0.14, 0.18, 0.22, 0.25, 0.29, 0.32, 0.35, 0.39, 0.37, 0.58, 0.73, 0.96, 1.34, 2.10, 4.39,
];

impl Residuals for Mgh08 {
    fn count(_n: usize) -> usize {
        Y.len()
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 3)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let (u, v) = (i + 1, 15 - i);
        let w = u.min(v);
        Y[i] - (x[0] + u as f64 / (x[1] * v as f64 + x[2] * w as f64))
    }
}

crate::register_residuals!(by_index Mgh08, mgh08);
