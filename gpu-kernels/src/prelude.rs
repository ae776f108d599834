//! Everything a term file needs, in one line: `use gpu_kernels::prelude::*;`.
//!
//! ```
//! use gpu_kernels::prelude::*;
//!
//! /// Σ (2 − x_i)² + e^{x_i/2}: one term per variable.
//! pub struct Bowl;
//!
//! impl Term for Bowl {
//!     const WINDOW: Window = Window::Separable;
//!     type Local<'a> = ();
//!     fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}
//!     fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
//!         (2.0 - x[0]).sq() + (x[0] * 0.5).exp()
//!     }
//! }
//! register_term!(Bowl, bowl);
//! ```

// The crate root documents these; here they are only gathered.
pub use crate::raw::{Out, Thread};
#[doc(no_inline)]
pub use crate::{
    Data, Differentiation, L2Penalty, LeastSquares, Num, Real, ResidualTerm, Residuals, Row,
    SumOfSquares, Term, Vars, Window,
};
#[doc(no_inline)]
pub use crate::{batch_kernel, block_kernel, grid_kernel, register_residuals, register_term};
#[cfg(target_arch = "nvptx64")]
pub use crate::{raw::Block, shared_array};
