//! Brown's almost-linear function, a classic test of least-squares solvers: `n` residuals of
//! `n` unknowns, `r_i = x_i + Σ_j x_j − (n + 1)` for `i < n − 1` and `r_{n−1} = Π_j x_j − 1`.
//! Its minimum is `Σr² = 0` at `x = (α, …, α, α^(1−n))` for each root `α` of
//! `n·α^n − (n + 1)·α^(n−1) + 1 = 0`, `α = 1` among them; `x = (0, …, 0, n + 1)` is a local
//! minimum with `Σr² = 1` (Moré, Garbow & Hillstrom, ACM TOMS 7(1), 1981, problem 27, started
//! at `x_j = 1/2`).
//!
//! Residuals given by index, with no data: `count` says how many there are for `n` unknowns,
//! `residual` computes one, and `register_residuals!(by_index ..)` makes the sum of their
//! squares, `LeastSquares<BrownAlmostLinear>`, the objective.

use gpu_kernels::prelude::*;

pub struct BrownAlmostLinear;

impl Residuals for BrownAlmostLinear {
    fn count(n: usize) -> usize {
        n
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        let n = x.len();
        if i + 1 < n {
            let mut sum = x[i];
            for j in 0..n {
                sum += x[j];
            }
            sum - (n + 1) as f64
        } else {
            let mut product = x[0];
            for j in 1..n {
                product *= x[j];
            }
            product - 1.0
        }
    }
}

register_residuals!(by_index BrownAlmostLinear, brown_almost_linear);
