//! MGH 9, Gaussian: `n = 3`, `m = 15`.
//! `f_i = x₁·exp(−x₂(t_i − x₃)²/2) − y_i`, `t_i = (8 − i)/2`, `y` symmetric about `i = 8`.

use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 9, Gaussian: see the module doc.
pub struct Mgh09;

/// `y₁ … y₈`; `y_{16−i} = y_i`.
const Y_HALF: [f64; 8] = [
    0.0009, 0.0044, 0.0175, 0.0540, 0.1295, 0.2420, 0.3521, 0.3989,
];

impl Residuals for Mgh09 {
    fn count(_n: usize) -> usize {
        2 * Y_HALF.len() - 1
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 3)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let t = (7.0 - i as f64) / 2.0;
        let y = Y_HALF[i.min(14 - i)];
        x[0] * ((x[1] * (x[2] - t).sq()) * -0.5).exp() - y
    }
}

crate::register_residuals!(by_index Mgh09, mgh09);
