//! The CPU executor: runs the kernels' per-thread work (`gpu_kernels::kernel`) over rayon.
//!
//! Work is split into chunks whose size depends only on the problem, never on the number of
//! threads, and chunk results are combined in chunk order. So `f` and `∇f` are the same bits
//! for any `RAYON_NUM_THREADS`, and from run to run.
//!
//! One job per file, each using only the ones before it: `plan.rs` (chunk sizes, the hand-off
//! to rayon), `schemes.rs` (each gradient scheme's chunk work), `evaluator.rs` (the passes of
//! a term problem), `least_squares.rs` (the normal equations of a sum of squares), and
//! `raw.rs` (raw grid kernels).

/// `$pass`, written once and compiled in one copy for each way `$data`'s table is stored
/// ([`Data::data_type`](gpu_kernels::Data::data_type)), chosen once: the reads inside each
/// copy then never test the type. For a pass's loop over many terms, its work inlined.
macro_rules! per_data_type {
    ($data:expr, $pass:expr) => {
        match $data.data_type() {
            gpu_kernels::DataType::F64 => $pass,
            gpu_kernels::DataType::F32 => $pass,
        }
    };
}
use per_data_type;

mod evaluator;
mod least_squares;
mod plan;
mod raw;
mod schemes;

pub use evaluator::CpuEvaluator;
pub use least_squares::{CpuLeastSquares, CpuResiduals};
pub use plan::{rank_rows, row_block, threads};
pub use raw::{launch_batch, launch_raw};
