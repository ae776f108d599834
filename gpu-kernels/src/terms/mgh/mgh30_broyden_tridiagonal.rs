//! MGH 30, Broyden tridiagonal: `n ≥ 1`, `m = n`.
//! `f_i = (3 − 2x_i)x_i − x_{i−1} − 2x_{i+1} + 1`, with `x₀ = x_{n+1} = 0`.

use crate::least_squares::Residuals;
use crate::{Num, Real, Vars};

/// MGH 30, Broyden tridiagonal: see the module doc.
pub struct Mgh30;

impl Residuals for Mgh30 {
    fn count(n: usize) -> usize {
        n
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let zero = Num::constant(0.0);
        let left = if i > 0 { x[i - 1] } else { zero };
        let right = if i + 1 < x.len() { x[i + 1] } else { zero };
        (3.0 - x[i] * 2.0) * x[i] - left - right * 2.0 + 1.0
    }
}

crate::register_residuals!(by_index Mgh30, mgh30);
