//! MGH 31, Broyden banded: `n ≥ 1`, `m = n`.
//! `f_i = x_i(2 + 5x_i²) + 1 − Σ_{j ∈ J_i} x_j(1 + x_j)`, where `J_i` is the band
//! `i − 5 ≤ j ≤ i + 1` within `1..n`, without `i` itself.

use crate::least_squares::Residuals;
use crate::{Num, Real, Vars};

/// MGH 31, Broyden banded: see the module doc.
pub struct Mgh31;

/// How far the band reaches below and above the diagonal.
const LOWER: usize = 5;
const UPPER: usize = 1;

impl Residuals for Mgh31 {
    fn count(n: usize) -> usize {
        n
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let last = (i + UPPER).min(x.len() - 1);
        let mut coupling = Num::constant(0.0);
        for j in i.saturating_sub(LOWER)..=last {
            if j != i {
                coupling += x[j] * (x[j] + 1.0);
            }
        }
        x[i] * (x[i].sq() * 5.0 + 2.0) + 1.0 - coupling
    }
}

crate::register_residuals!(by_index Mgh31, mgh31);
