//! Models to fit to data, `y ≈ m(θ, t)`, as residual terms: term `k` is one data point's
//! weighted residual `w_k·(y_k − m(θ, t_k))`, where `w_k = 1/σ_k` (1 without uncertainties).
//! Each is registered with [`register_residuals!`](crate::register_residuals), so its objective
//! is `χ² = Σ_k w_k²·(y_k − m(θ, t_k))²`, and Levenberg–Marquardt reads its Jacobian rows.
//!
//! The data have three columns, in this order: `t`, `y`, `w`. A model of `k` predictors
//! ([`Linear`], [`Gauss2d`], or a term of the caller's own) reads `k` columns first, then `y`
//! and `w`.

pub mod exp_decay;
pub mod expsin;
pub mod gauss_2d;
pub mod gauss_peaks;
pub mod linear;
pub mod lorentzian;
pub mod poly;

pub use exp_decay::ExpDecay;
pub use expsin::ExpSin;
pub use gauss_2d::{Gauss2d, Gauss2dElliptic};
pub use gauss_peaks::GaussPeaks;
pub use linear::Linear;
pub use lorentzian::Lorentzian;
pub use poly::Poly;

use crate::{Data, Num, Real, Row};

/// The data columns every one-predictor model reads.
pub const COLUMNS: usize = 3;

/// The residual of a point whose model value is `model`: `w·(y − model)`.
#[inline(always)]
pub fn residual<R: Real>(row: &Row<'_>, model: Num<R>) -> Num<R> {
    (row.get(1) - model) * row.get(2)
}

/// Checks the data's shape for the one-predictor models.
pub fn check_columns(data: Data<'_>) -> Result<(), &'static str> {
    if data.cols() == COLUMNS {
        Ok(())
    } else {
        Err("it takes one predictor, and its data are three columns, t, y and the weights 1/σ")
    }
}
