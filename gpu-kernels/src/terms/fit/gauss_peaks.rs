//! `gauss-peaks`: `m(θ, t) = c + Σ_{i<K} a_i·exp(−(t − μ_i)² / (2 s_i²))`, `K` Gaussian peaks
//! on a constant baseline, with `θ = (c, a₀, μ₀, s₀, a₁, μ₁, s₁, …)`: `p = 3K + 1` parameters.

use super::{check_columns, residual};
use crate::{Data, Num, Real, Row, Term, Vars, Window};

/// The `gauss-peaks` model's residual term: `K` Gaussian peaks on a constant baseline (see the
/// module doc).
pub struct GaussPeaks;

impl Term for GaussPeaks {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n % 3 != 1 {
            return Err(
                "gauss-peaks has a baseline and 3 parameters per peak (a_i, mu_i, s_i): p = 3K + 1",
            );
        }
        check_columns(data)
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(theta: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        let t = row.get(0);
        let mut model = theta[0];
        for i in (1..theta.len()).step_by(3) {
            let z = (t - theta[i + 1]) / theta[i + 2];
            model = model.add_product(theta[i], z.gaussian());
        }
        residual(row, model)
    }
}

crate::register_residuals!(GaussPeaks, fit_gauss_peaks);
crate::batch_kernel!(FIT_GAUSS_PEAKS_BATCH = fit_gauss_peaks_batch(GaussPeaks));
