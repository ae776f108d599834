//! MGH 23, penalty function I: `n ≥ 1`, `m = n + 1`.
//! `f_i = √a(x_i − 1)` for `i = 1..n`, `f_{n+1} = Σ_j x_j² − ¼`, with `a = 10⁻⁵`.

use crate::least_squares::Residuals;
use crate::{Num, Real, Vars};

/// MGH 23, penalty function I: see the module doc.
pub struct Mgh23;

/// The weight `a` of the penalties.
const A: f64 = 1e-5;

impl Residuals for Mgh23 {
    fn count(n: usize) -> usize {
        n + 1
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let n = x.len();
        if i < n {
            return (x[i] - 1.0) * Real::sqrt(A);
        }
        let mut norm_sq = Num::constant(0.0);
        for j in 0..n {
            norm_sq += x[j].sq();
        }
        norm_sq - 0.25
    }
}

crate::register_residuals!(by_index Mgh23, mgh23);
