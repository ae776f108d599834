//! The penalty every kernel crate ships (not only the built-in terms): registered here, so a
//! user's PTX holds its entries and a user's sum of terms can add it on the GPU too.
//!
//! A weighted L2 penalty, or an independent Gaussian prior, on every variable:
//! `½·w_k·(x_k − c_k)²`, one term per variable. Data: `n` rows of two columns, the weight
//! `w_k ≥ 0` and the centre `c_k`. Ridge regression's `½λ‖θ‖²` with an unpenalized intercept
//! is `w = (0, λ, …, λ)`, `c = 0`; a prior `N(μ_k, σ_k²)` is `w_k = 1/σ_k²`, `c_k = μ_k`.
//!
//! A separable window: term `k` reads `x[k]` alone, so beside a dense data term over `10⁶`
//! rows it costs `n` cheap terms per pass, and its gradient is written, not added, per
//! variable.

use crate::{Data, Num, Real, Term, Vars, Window};

/// `½·w_k·(x_k − c_k)²` per variable: a ridge penalty or a Gaussian prior beside a data term
/// (see the module doc; data columns `w`, then `c`, of `n` rows each).
pub struct L2Penalty;

impl Term for L2Penalty {
    const WINDOW: Window = Window::Separable;
    /// `(w_k, c_k)`.
    type Local<'a> = (f64, f64);

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if data.rows() != n || data.cols() != 2 {
            return Err(
                "l2-penalty data must be two columns of n rows: the weights w, then the centres c",
            );
        }
        if data.col(0).iter().any(|w| w < 0.0) {
            return Err("l2-penalty weights must be >= 0");
        }
        Ok(())
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> (f64, f64) {
        let row = data.row(k);
        (row.get(0), row.get(1))
    }

    #[inline(always)]
    fn eval<R: Real>(x: Vars<'_, R>, &(w, c): &(f64, f64)) -> Num<R> {
        0.5 * w * (x[0] - c).sq()
    }
}

crate::register_term!(L2Penalty, l2_penalty);
