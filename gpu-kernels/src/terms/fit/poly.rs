//! `poly`: `m(θ, t) = Σ_{k<p} θ_k·t^k`, a polynomial of degree `p − 1`, by Horner's rule.

use super::{check_columns, residual};
use crate::{Data, Num, Real, Row, Term, Vars, Window};

/// The `poly` model's residual term: a polynomial of degree `p − 1` (see the module doc).
pub struct Poly;

impl Term for Poly {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Row<'a>;

    fn check(_n: usize, data: Data<'_>) -> Result<(), &'static str> {
        check_columns(data)
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(theta: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        let t = row.get(0);
        let last = theta.len() - 1;
        let mut model = theta[last];
        for k in (0..last).rev() {
            model = model * t + theta[k];
        }
        residual(row, model)
    }
}

crate::register_residuals!(Poly, fit_poly);
crate::batch_kernel!(FIT_POLY_BATCH = fit_poly_batch(Poly));
