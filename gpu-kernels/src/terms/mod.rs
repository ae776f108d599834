//! The built-in term functions, one file each. Each file is what a user writes for a new
//! objective: a [`Term`](crate::Term) implementation and one `register_term!` line (or, for
//! residuals, `register_residuals!`).

pub mod ext_powell;
pub mod fit;
pub mod lsq_expsin;
pub mod matmul_squares;
pub mod mgh;
pub mod poisson_regression;
pub mod quadratic;
pub mod rosenbrock;
pub mod seed_expsum;

pub use ext_powell::ExtPowell;
pub use lsq_expsin::LsqExpSin;
pub use matmul_squares::MatmulSquares;
pub use poisson_regression::PoissonRegression;
pub use quadratic::Quadratic;
pub use rosenbrock::{ChainedRosenbrock, ExtRosenbrock};
pub use seed_expsum::SeedExpSum;

/// Every raw kernel in this crate, for the host's launch-signature test: the examples, the
/// batch tables' kernel and the built-in fit models' batch kernels.
pub static RAW_KERNELS: &[&crate::raw::RawKernel] = &[
    &crate::raw::examples::SQUARE_PLUS_TWO_X_PLUS_ONE,
    &crate::raw::examples::DOT_SHARED,
    &crate::lm::batch::BATCH_TABLE,
    &fit::exp_decay::FIT_EXP_DECAY_BATCH,
    &fit::exp_decay::FIT_EXP_DECAY_POISSON_BATCH,
    &fit::expsin::FIT_EXPSIN_BATCH,
    &fit::gauss_2d::FIT_GAUSS_2D_BATCH,
    &fit::gauss_2d::FIT_GAUSS_2D_POISSON_BATCH,
    &fit::gauss_2d::FIT_GAUSS_2D_ELLIPTIC_BATCH,
    &fit::gauss_2d::FIT_GAUSS_2D_ELLIPTIC_POISSON_BATCH,
    &fit::gauss_peaks::FIT_GAUSS_PEAKS_BATCH,
    &fit::linear::FIT_LINEAR_BATCH,
    &fit::lorentzian::FIT_LORENTZIAN_BATCH,
    &fit::lorentzian::FIT_LORENTZIAN_POISSON_BATCH,
    &fit::poly::FIT_POLY_BATCH,
];
