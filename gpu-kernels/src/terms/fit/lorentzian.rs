//! `lorentzian`: `m(θ, x) = a·γ² / ((x − x₀)² + γ²) + b`, a Lorentzian (Cauchy) line of height
//! `a` and half width `γ` at half maximum on a constant background, `θ = (a, x₀, γ, b)`: the
//! shape of a spectral line broadened by lifetime, or of a resonance.

use super::{check_columns, residual};
use crate::{Data, Num, Real, Row, Term, Vars, Window};

/// The `lorentzian` model's residual term (see the module doc).
pub struct Lorentzian;

impl Term for Lorentzian {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n != 4 {
            return Err("it takes p = 4 (a, x0, g, b)");
        }
        check_columns(data)
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(theta: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        let dx = row.get(0) - theta[1];
        let g2 = theta[2] * theta[2];
        residual(row, theta[0] * g2 / (dx * dx + g2) + theta[3])
    }
}

crate::register_residuals!(Lorentzian, fit_lorentzian);
crate::batch_kernel!(FIT_LORENTZIAN_BATCH = fit_lorentzian_batch(Lorentzian));
crate::batch_kernel!(
    FIT_LORENTZIAN_POISSON_BATCH = fit_lorentzian_poisson_batch(crate::PoissonDeviance<Lorentzian>)
);
