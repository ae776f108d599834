//! The sizes of a kernel launch: the launcher's choice ([`LaunchConfig`]) and the user's
//! ([`LaunchOverride`]), and the arguments of a raw kernel's launch ([`RawArg`]).

use crate::error::BackendError;
use gpu_kernels::raw::Arg;

/// Grid and block of one launch (one-dimensional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per grid.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
}

/// Launch sizes the user imposes on the term kernels instead of the occupancy API's choice.
/// The one-block kernel that sums partials keeps its single block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchOverride {
    /// Threads per block, 1 to 1024 (CUDA's limit; a kernel using many registers allows fewer,
    /// which the launcher checks per kernel). Whole warps (multiples of 32) waste no lanes.
    pub threads: Option<u32>,
    /// Blocks per grid, at least 1 (the kernels loop grid-stride over any amount of work).
    pub blocks: Option<u32>,
}

impl LaunchOverride {
    /// Refuses sizes no kernel can launch with: threads outside 1 to 1024, or 0 blocks.
    /// Whether a given kernel's registers allow the threads is checked at its launch.
    pub fn check(&self) -> Result<(), BackendError> {
        let invalid = |why: String| Err(BackendError::InvalidLaunch(why));
        if let Some(t) = self.threads
            && !(1..=1024).contains(&t)
        {
            return invalid(format!("{t} threads per block; need 1 to 1024"));
        }
        if self.blocks == Some(0) {
            return invalid("0 blocks; need at least 1".to_owned());
        }
        Ok(())
    }
}

/// An argument of a raw kernel launch (see `gpu_kernels::raw`): an input slice (`In`), an
/// output buffer whose contents go to the kernel and come back (`Out`), or a scalar.
pub type RawArg<'a> = Arg<&'a [f64], &'a mut [f64], f64, u64>;
