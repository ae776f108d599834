//! What cudamin's command line, its Python module, its tests and its benches use beyond the API
//! at the crate root. Writing a term, loading a problem and solving it need none of this. It may
//! change in any release.
//!
//! - [`cpu`], [`gpu`] and [`mpi`]: the backends' own modules: the CPU executor's threads and
//!   row blocks, the GPU's launch lists ([`gpu::abi`]), PTX signatures ([`gpu::ptx`]), device
//!   vectors and the simulator, and the MPI job.
//! - The pieces of the evaluator contract that only a backend or a sharded evaluation needs:
//!   partial results and how they are shared among processes.
//! - [`objective`]: the vector spaces a solver keeps its vectors in, and the view of an
//!   objective with some variables held.
//! - Memory and small dense linear algebra the built-in problems use.

pub use crate::backend::{
    Layout, NormalPass, Partials, Pass, PieceEvaluator, Share, SumEvaluator, WithResiduals,
    checked_against, cpu, gpu, mpi,
};
pub use crate::linalg::{available_memory, cholesky_into, inf_norm, solve_lower, try_zeros};
pub use crate::shown::Shown;

/// The vector spaces a solver keeps its vectors in, on the host or a device, with L-BFGS-B's
/// passes over a box; and an objective seen through the variables a solve leaves free.
pub mod objective {
    pub use crate::objective::{
        BoxSpace, BoxVectors, Breakpoint, DeviceVector, DeviceVectors, FixedObjective, Held,
        HostVectors, OnDevice, PairSums, StepEnd, VectorSpace, free_factor,
    };
}
