//! MGH 24, penalty function II: `n ≥ 1`, `m = 2n`, `a = 10⁻⁵`.
//! - `f₁ = x₁ − 0.2`
//! - `f_i = √a(e^{x_i/10} + e^{x_{i−1}/10} − y_i)`, `y_i = e^{i/10} + e^{(i−1)/10}`, `i = 2..n`
//! - `f_i = √a(e^{x_{i−n+1}/10} − e^{−1/10})`, `i = n+1..2n−1`
//! - `f_{2n} = Σ_j (n − j + 1)x_j² − 1`

use crate::least_squares::Residuals;
use crate::{Num, Real, Vars};

/// MGH 24, penalty function II: see the module doc.
pub struct Mgh24;

/// The weight `a` of the penalties.
const A: f64 = 1e-5;

impl Residuals for Mgh24 {
    fn count(n: usize) -> usize {
        2 * n
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let n = x.len();
        let tenth_exp = |v: Num<R>| (v * 0.1).exp();
        if i == 0 {
            x[0] - 0.2
        } else if i == 2 * n - 1 {
            let mut weighted = Num::constant(0.0);
            for j in 0..n {
                weighted += x[j].sq() * (n - j) as f64;
            }
            weighted - 1.0
        } else if i < n {
            let y = Real::exp((i + 1) as f64 * 0.1) + Real::exp(i as f64 * 0.1);
            (tenth_exp(x[i]) + tenth_exp(x[i - 1]) - y) * Real::sqrt(A)
        } else {
            (tenth_exp(x[i - n + 1]) - Real::exp(-0.1_f64)) * Real::sqrt(A)
        }
    }
}

crate::register_residuals!(by_index Mgh24, mgh24);
