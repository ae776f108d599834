//! The Moré–Garbow–Hillstrom test problems (ACM TOMS 7(1), 1981), as sums of squares
//! `F(x) = Σ_i f_i(x)²`: one file per problem, each a [`Residuals`](crate::Residuals)
//! implementation registered with [`register_residuals!`](crate::register_residuals)`(by_index
//! MghNN, mghNN)`, so that `LeastSquares<MghNN>` is its objective.
//!
//! The paper numbers residuals and variables from 1; here `residual(i, x)` takes `i` from 0 and
//! `x[0]` is the paper's `x₁`. MGH 21 and 22 are the built-in
//! [`ExtRosenbrock`](crate::terms::ExtRosenbrock) and [`ExtPowell`](crate::terms::ExtPowell).

pub mod mgh01_rosenbrock;
pub mod mgh02_freudenstein_roth;
pub mod mgh03_powell_badly_scaled;
pub mod mgh04_brown_badly_scaled;
pub mod mgh05_beale;
pub mod mgh07_helical_valley;
pub mod mgh08_bard;
pub mod mgh09_gaussian;
pub mod mgh12_box_3d;
pub mod mgh13_powell_singular;
pub mod mgh14_wood;
pub mod mgh16_brown_dennis;
pub mod mgh18_biggs_exp6;
pub mod mgh20_watson;
pub mod mgh23_penalty_1;
pub mod mgh24_penalty_2;
pub mod mgh25_variably_dimensioned;
pub mod mgh26_trigonometric;
pub mod mgh30_broyden_tridiagonal;
pub mod mgh31_broyden_banded;
pub mod mgh35_chebyquad;

pub use mgh01_rosenbrock::Mgh01;
pub use mgh02_freudenstein_roth::Mgh02;
pub use mgh03_powell_badly_scaled::Mgh03;
pub use mgh04_brown_badly_scaled::Mgh04;
pub use mgh05_beale::Mgh05;
pub use mgh07_helical_valley::Mgh07;
pub use mgh08_bard::Mgh08;
pub use mgh09_gaussian::Mgh09;
pub use mgh12_box_3d::Mgh12;
pub use mgh13_powell_singular::Mgh13;
pub use mgh14_wood::Mgh14;
pub use mgh16_brown_dennis::Mgh16;
pub use mgh18_biggs_exp6::Mgh18;
pub use mgh20_watson::Mgh20;
pub use mgh23_penalty_1::Mgh23;
pub use mgh24_penalty_2::Mgh24;
pub use mgh25_variably_dimensioned::Mgh25;
pub use mgh26_trigonometric::Mgh26;
pub use mgh30_broyden_tridiagonal::Mgh30;
pub use mgh31_broyden_banded::Mgh31;
pub use mgh35_chebyquad::Mgh35;

/// The paper's sample point `t_i = i / divisor` for the 0-based residual index `i` (the paper's
/// `i` is one more). Dividing, as the paper writes it, keeps `t` exact where `0.1·i` would not be.
#[inline(always)]
fn sample_point(i: usize, divisor: f64) -> f64 {
    (i + 1) as f64 / divisor
}
