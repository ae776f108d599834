//! MGH 20, Watson: `2 ≤ n ≤ 31`, `m = 31`.
//! With `p(t) = Σ_j x_j t^{j−1}`: `f_i = p′(t_i) − p(t_i)² − 1` for `i = 1..29`, `t_i = i/29`;
//! `f₃₀ = x₁`, `f₃₁ = x₂ − x₁² − 1`.

use super::sample_point;
use crate::least_squares::Residuals;
use crate::{Num, Real, Vars};

/// MGH 20, Watson: see the module doc.
pub struct Mgh20;

/// The residuals sampled at `t_i`; two more follow.
const SAMPLES: usize = 29;

impl Residuals for Mgh20 {
    fn count(_n: usize) -> usize {
        SAMPLES + 2
    }

    fn check(n: usize) -> Result<(), &'static str> {
        if (2..=31).contains(&n) {
            Ok(())
        } else {
            Err("Watson needs 2 <= n <= 31")
        }
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        if i == SAMPLES {
            return x[0];
        }
        if i == SAMPLES + 1 {
            return x[1] - x[0].sq() - 1.0;
        }
        let t = sample_point(i, SAMPLES as f64);
        let mut p = x[0];
        let mut dp = Num::constant(0.0);
        let mut t_pow = 1.0; // t^{j−1}
        for j in 1..x.len() {
            dp += x[j] * (j as f64 * t_pow);
            t_pow *= t;
            p += x[j] * t_pow;
        }
        dp - p.sq() - 1.0
    }
}

crate::register_residuals!(by_index Mgh20, mgh20);
