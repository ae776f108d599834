//! What cudamin's command line, its Python module, its tests and its benches use beyond the API
//! at the crate root. Writing a term, loading a problem and solving it need none of this. It may
//! change in any release.
//!
//! - [`cpu`], [`gpu`] and [`mpi`]: the backends' own modules: the CPU executor's threads and
//!   row blocks, the GPU's launch lists ([`gpu::abi`]), PTX signatures ([`gpu::ptx`]), device
//!   vectors and the simulator, and the MPI job.
//! - The pieces of the evaluator contract that only a backend or a sharded evaluation needs:
//!   partial results and how they are shared among processes.
//! - [`space`]: the vector spaces a solver keeps its vectors in.
//! - [`objective`]: an objective on a device, and the view of one with some variables held.
//! - Memory and small dense linear algebra the built-in problems use.

pub use crate::backend::{
    Layout, NormalPass, Partials, Pass, PieceEvaluator, Share, SumEvaluator, WithResiduals,
    checked_against, cpu, gpu, mpi,
};
pub use crate::linalg::{MemoryLimit, MemoryRoom, available_memory, memory_room};
pub use crate::linalg::{cholesky_into, inf_norm, solve_lower, try_zeros};
pub use crate::shown::Shown;

/// The vector spaces a solver keeps its vectors in, host memory or a device, with L-BFGS-B's
/// passes over a box. The GPU's device vectors are [`gpu::DeviceVectors`].
pub mod space {
    pub use crate::space::{
        BoxSpace, BoxVectors, Breakpoint, HostVectors, PairSums, StepEnd, VectorSpace,
    };
}

/// An objective on a device, and an objective seen through the variables a solve leaves free.
pub mod objective {
    pub use crate::objective::{FixedObjective, Held, OnDevice, free_factor};
}
