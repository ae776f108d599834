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

/// The columns of a batch of small fits as the user holds them, from which
/// [`Backend::launch_batch`](crate::Backend::launch_batch) makes every fit's table where its
/// batch kernel runs (`gpu_kernels::lm::batch::batch_table`): on a GPU only these cross.
#[derive(Clone, Copy, Debug)]
pub struct BatchColumns<'a> {
    /// The predictors' columns end to end: each a value per point (`N`), or the `M` values that
    /// every fit, each of `M` points, shares.
    pub x: &'a [f64],
    /// The number of predictor columns in `x`.
    pub predictors: usize,
    /// The observations, `N`, fit after fit.
    pub y: &'a [f64],
    /// One `σ` per observation, `N`; empty weighs every point 1.
    pub sigma: &'a [f64],
    /// `F + 1` whole numbers as `f64`, rising from 0 to `N`: fit `f` has the points
    /// `offsets[f] .. offsets[f + 1]`.
    pub offsets: &'a [f64],
}

impl<'a> BatchColumns<'a> {
    /// Where [`table_inputs`](Self::table_inputs) puts the offsets, which the batch kernel
    /// reads too.
    pub(crate) const OFFSETS: usize = 3;

    /// The tables' kernel's inputs, each named for errors, in the order of its parameters
    /// (`batch_table(x, y, sigma, offsets, table, predictors)`): the one place on the host that
    /// writes it.
    pub(crate) fn table_inputs(&self) -> [(&'static str, &'a [f64]); 4] {
        [
            ("a batch's predictors", self.x),
            ("a batch's observations", self.y),
            ("a batch's σ", self.sigma),
            ("a batch's offsets", self.offsets),
        ]
    }

    /// The values of every fit's table together: the predictors, `y` and the weights, a row
    /// per point.
    pub fn table_len(&self) -> usize {
        (self.predictors + 2) * self.y.len()
    }

    /// One thread per fit for the tables' kernel, in blocks of 256.
    pub(crate) fn table_config(&self) -> LaunchConfig {
        let (fits, threads) = (self.offsets.len().saturating_sub(1), 256);
        LaunchConfig {
            blocks: u32::try_from(fits.div_ceil(threads).max(1)).unwrap_or(u32::MAX),
            threads: threads as u32,
        }
    }
}
