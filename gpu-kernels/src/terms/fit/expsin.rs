//! `expsin`: `m(θ, t) = θ₀·e^{−θ₁t} + Σ_{k=2}^{p−1} θ_k·sin(k·t)`, `p ≥ 2` parameters: the
//! model of the built-in `lsq-expsin`, fitted to data.
//!
//! The sines come from one `sin` and one `cos` by the recurrence
//! `sin((k+1)t) = 2·cos t·sin(kt) − sin((k−1)t)`: a multiply-add per parameter instead of a
//! `sin` each.

use super::{check_columns, residual};
use crate::{Data, Num, Real, Row, Term, Vars, Window};

/// The `expsin` model's residual term: a decaying exponential plus sines (see the module doc).
pub struct ExpSin;

impl Term for ExpSin {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n < 2 {
            return Err("expsin needs at least 2 parameters");
        }
        check_columns(data)
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(theta: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        let t = row.get(0);
        let two_cos = 2.0 * Real::cos(t);
        let (mut below, mut sine) = (0.0, Real::sin(t));
        let mut model = theta[0] * (-theta[1] * t).exp();
        for k in 2..theta.len() {
            (below, sine) = (sine, two_cos * sine - below);
            model += theta[k] * sine;
        }
        residual(row, model)
    }
}

crate::register_residuals!(ExpSin, fit_expsin);
