//! MGH 35, Chebyquad: `n ≥ 1`, `m = n` here (the paper allows `m ≥ n`).
//! `f_i = (1/n) Σ_j T*_i(x_j) − ∫₀¹ T*_i`, where `T*_i(x) = T_i(2x − 1)` is the Chebyshev
//! polynomial shifted to [0, 1]; its integral is 0 for odd `i` and `−1/(i² − 1)` for even `i`.

use crate::least_squares::Residuals;
use crate::{Num, Real, Vars};

/// MGH 35, Chebyquad: see the module doc.
pub struct Mgh35;

/// `T*_order(x)` for `order ≥ 1`, by the three-term recurrence `T_{k+1} = 2zT_k − T_{k−1}`.
fn shifted_chebyshev<R: Real>(order: usize, x: Num<R>) -> Num<R> {
    let z = x * 2.0 - 1.0;
    let (mut previous, mut current) = (Num::constant(1.0), z);
    for _ in 1..order {
        let next = z * current * 2.0 - previous;
        previous = current;
        current = next;
    }
    current
}

/// `∫₀¹ T*_order(x) dx`.
fn integral(order: usize) -> f64 {
    if order % 2 == 1 {
        0.0
    } else {
        -1.0 / (order * order - 1) as f64
    }
}

impl Residuals for Mgh35 {
    fn count(n: usize) -> usize {
        n
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let order = i + 1;
        let mut sum = Num::constant(0.0);
        for j in 0..x.len() {
            sum += shifted_chebyshev(order, x[j]);
        }
        sum / x.len() as f64 - integral(order)
    }
}

crate::register_residuals!(by_index Mgh35, mgh35);
