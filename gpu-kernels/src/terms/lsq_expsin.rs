//! A least-squares data fit: `y ≈ θ₀·e^{−θ₁t} + Σ_{k=2}^{p−1} θ_k·sin(k·t)`, one term per data
//! point, `(y_j − m(θ, t_j))²`. Data columns: `t`, `y`, then the sine basis `sin(k·t)` for
//! `k = 2 .. p−1`, so `p` columns in all.
//!
//! The sines do not depend on θ, so they are data, computed once when the problem is built
//! (as a numpy user would precompute them), not in every evaluation. [`prepare`](Term::prepare)
//! gathers a point's row; the gradient's `p + 1` evaluations of the point then cost one `exp`
//! and a dot product each (and on the CPU run four at a time, on [`Lanes`](crate::Lanes)).

use crate::{Data, Real, Term, Vars, Window};

/// The most parameters the fit supports (a point's basis lives in registers / local memory).
pub const MAX_PARAMETERS: usize = 64;

pub struct LsqExpSin;

/// One data point with its row of the sine basis.
#[derive(Clone, Copy)]
pub struct Point {
    t: f64,
    y: f64,
    /// `sin(k·t)` for `k = 2 .. p−1`, at `basis[k − 2]`.
    basis: [f64; MAX_PARAMETERS - 2],
}

impl Term for LsqExpSin {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Point;
    const EVAL_IN_LANES: bool = true;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if !(2..=MAX_PARAMETERS).contains(&n) {
            Err("lsq-expsin needs 2 <= n <= 64 parameters")
        } else if data.cols() != n {
            Err("lsq-expsin data must have n columns: t, y and sin(k·t) for k = 2 .. n-1")
        } else {
            Ok(())
        }
    }

    fn prepare(j: usize, n: usize, data: Data<'_>) -> Point {
        let mut basis = [0.0; MAX_PARAMETERS - 2];
        for (k, b) in basis.iter_mut().enumerate().take(n - 2) {
            *b = data.col(k + 2)[j];
        }
        let (t, y) = (data.col(0)[j], data.col(1)[j]);
        Point { t, y, basis }
    }

    fn eval<R: Real>(theta: Vars<'_, R>, p: &Point) -> R {
        let sines = theta.dot(2, &p.basis[..theta.len() - 2]);
        (theta[0] * (-theta[1] * p.t).exp() + sines - p.y).sq()
    }
}

crate::register_term!(LsqExpSin, lsq_expsin);
