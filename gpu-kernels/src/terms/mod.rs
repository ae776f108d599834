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
