//! A least-squares data fit: `y ≈ θ₀·e^{−θ₁t} + Σ_{k=2}^{p−1} θ_k·sin(k·t)`, one term per data
//! point, `(y_j − m(θ, t_j))²`. Data: column 0 is `t`, column 1 is `y`.
//!
//! The sines do not depend on θ, so [`prepare`](Term::prepare) computes them once per point
//! and per launch (by rotating `(sin kt, cos kt)` by `t`: two `libm` calls, not `p − 2`); the
//! gradient's `p + 1` evaluations of each point then cost one `exp` and a dot product each.

use crate::{Data, Real, Term, Vars, Window};

/// The most parameters the fit supports (the sine basis lives in registers / local memory).
pub const MAX_PARAMETERS: usize = 64;

pub struct LsqExpSin;

/// One data point with its sine basis.
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

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if !(2..=MAX_PARAMETERS).contains(&n) {
            Err("lsq-expsin needs 2 <= n <= 64 parameters")
        } else if data.cols() != 2 {
            Err("lsq-expsin data must have two columns, t and y")
        } else {
            Ok(())
        }
    }

    fn prepare(j: usize, n: usize, data: Data<'_>) -> Point {
        let t = data.col(0)[j];
        let (sin_t, cos_t) = (Real::sin(t), Real::cos(t));
        // (sin kt, cos kt) from k = 2, each step a rotation by t: k·ε error at k, ≤ 1e-14 here.
        let (mut sin_kt, mut cos_kt) = (2.0 * sin_t * cos_t, cos_t * cos_t - sin_t * sin_t);
        let mut basis = [0.0; MAX_PARAMETERS - 2];
        for b in basis.iter_mut().take(n.saturating_sub(2)) {
            *b = sin_kt;
            (sin_kt, cos_kt) = (
                sin_kt * cos_t + cos_kt * sin_t,
                cos_kt * cos_t - sin_kt * sin_t,
            );
        }
        let y = data.col(1)[j];
        Point { t, y, basis }
    }

    fn eval<R: Real>(theta: Vars<'_, R>, p: &Point) -> R {
        let sines = theta.dot(2, &p.basis[..theta.len() - 2]);
        (theta[0] * (-theta[1] * p.t).exp() + sines - p.y).sq()
    }
}

crate::register_term!(LsqExpSin, lsq_expsin);
