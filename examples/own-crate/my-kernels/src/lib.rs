//! Your objective's terms. `no_std`, because the same source is compiled twice: for the CPU,
//! as the library `my-app` links, and to PTX, by `my-app`'s build script. Add a term as one more
//! file like `robust_line.rs` (a term of a sum), `michaelis_menten.rs` (a residual of a sum of
//! squares, one per data point) or `brown_almost_linear.rs` (residuals given by index, without
//! data), and one more `mod` line here.
#![no_std]
#![forbid(unsafe_code)]

pub mod brown_almost_linear;
pub mod michaelis_menten;
pub mod robust_line;
pub mod two_predictors;

pub use brown_almost_linear::BrownAlmostLinear;
pub use michaelis_menten::MichaelisMenten;
pub use robust_line::RobustLine;
pub use two_predictors::TwoPredictors;
