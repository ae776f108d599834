//! `expsin`: `m(θ, t) = θ₀·e^{−θ₁t} + Σ_{k=2}^{p−1} θ_k·sin(k·t)`, `p ≥ 2` parameters: the
//! model of the built-in `lsq-expsin`, fitted to data.
//!
//! The sines come from one `sin` and one `cos` by the recurrence
//! `sin((k+1)t) = 2·cos t·sin(kt) − sin((k−1)t)`: a multiply-add per parameter instead of a
//! `sin` each. The two depend on the data alone, so `prepare` takes them once per point, not
//! once per evaluation: an exact gradient evaluates a point once per group of parameters.

use super::{check_columns, residual};
use crate::{Data, Num, Real, Row, Term, Vars, Window};

/// The `expsin` model's residual term: a decaying exponential plus sines (see the module doc).
pub struct ExpSin;

/// A point's data row, with `sin t` and `cos t`.
#[derive(Clone, Copy)]
pub struct Point<'a> {
    row: Row<'a>,
    sin_t: f64,
    cos_t: f64,
}

impl Term for ExpSin {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Point<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n < 2 {
            return Err("expsin needs at least 2 parameters");
        }
        check_columns(data)
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Point<'_> {
        let row = data.row(k);
        let t = row.get(0);
        Point {
            row,
            sin_t: Real::sin(t),
            cos_t: Real::cos(t),
        }
    }

    fn eval<R: Real>(theta: Vars<'_, R>, point: &Point<'_>) -> Num<R> {
        let t = point.row.get(0);
        let two_cos = 2.0 * point.cos_t;
        let (mut below, mut sine) = (0.0, point.sin_t);
        let mut model = theta[0] * (-theta[1] * t).exp();
        for k in 2..theta.len() {
            (below, sine) = (sine, two_cos * sine - below);
            model += theta[k] * sine;
        }
        residual(&point.row, model)
    }
}

crate::register_residuals!(ExpSin, fit_expsin);
crate::batch_kernel!(FIT_EXPSIN_BATCH = fit_expsin_batch(ExpSin));
