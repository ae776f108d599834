//! MGH 26, trigonometric: `n ≥ 1`, `m = n`.
//! `f_i = n − Σ_j cos x_j + i(1 − cos x_i) − sin x_i`.

use crate::least_squares::Residuals;
use crate::{Num, Real, Vars};

/// MGH 26, trigonometric: see the module doc.
pub struct Mgh26;

impl Residuals for Mgh26 {
    fn count(n: usize) -> usize {
        n
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let n = x.len();
        let mut cos_sum = Num::constant(0.0);
        for j in 0..n {
            cos_sum += x[j].cos();
        }
        let own = (1.0 - x[i].cos()) * (i + 1) as f64 - x[i].sin();
        n as f64 - cos_sum + own
    }
}

crate::register_residuals!(by_index Mgh26, mgh26);
