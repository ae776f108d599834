//! MGH 25, variably dimensioned: `n ≥ 1`, `m = n + 2`.
//! `f_i = x_i − 1` for `i = 1..n`, `f_{n+1} = Σ_j j(x_j − 1)`, `f_{n+2} = f_{n+1}²`.

use crate::least_squares::Residuals;
use crate::{Num, Real, Vars};

/// MGH 25, variably dimensioned: see the module doc.
pub struct Mgh25;

impl Residuals for Mgh25 {
    fn count(n: usize) -> usize {
        n + 2
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let n = x.len();
        if i < n {
            return x[i] - 1.0;
        }
        let mut weighted = Num::constant(0.0);
        for j in 0..n {
            weighted += (x[j] - 1.0) * (j + 1) as f64;
        }
        if i == n { weighted } else { weighted.sq() }
    }
}

crate::register_residuals!(by_index Mgh25, mgh25);
