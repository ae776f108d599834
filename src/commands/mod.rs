//! One module per subcommand.

pub mod eval;
pub mod info;
pub mod list;
pub mod solve;

use crate::BackendArg;
use cudamin::problems::{self, Instance};
use cudamin::{Backend, LaunchOverride};

/// Which built-in problem, how big, and where (shared by `solve` and `eval`).
#[derive(clap::Args, Clone, Debug)]
pub struct ProblemArgs {
    /// A built-in problem (see `cudamin list`).
    pub problem: String,
    /// Number of variables (default: the problem's).
    #[arg(long)]
    pub n: Option<usize>,
    /// Number of data points, for data problems.
    #[arg(long)]
    pub points: Option<usize>,
    /// Where the terms run.
    #[arg(long, value_enum, default_value_t)]
    pub backend: BackendArg,
    /// GPU threads per block, instead of the occupancy API's choice (a multiple of 32).
    #[arg(long)]
    pub threads: Option<u32>,
    /// GPU blocks per grid, instead of the resident-block count.
    #[arg(long)]
    pub blocks: Option<u32>,
}

/// A problem set up on its backend.
pub struct Setup {
    pub instance: Instance,
    pub backend: Backend,
    pub backend_reason: String,
}

impl ProblemArgs {
    /// Chooses the backend, then builds and loads the problem (data generated and uploaded here).
    pub fn setup(&self) -> anyhow::Result<Setup> {
        let problem = problems::find(&self.problem)?;
        let launch = LaunchOverride {
            threads: self.threads,
            blocks: self.blocks,
        };
        let (backend, backend_reason) = cudamin::backend_with_launch(self.backend.into(), launch)?;
        let instance = problem.instantiate(&backend, self.n, self.points)?;
        Ok(Setup {
            instance,
            backend,
            backend_reason,
        })
    }
}

/// `‖v‖∞`, NaN if any entry is NaN.
pub fn inf_norm(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m: f64, x| {
        if x.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(x.abs())
        }
    })
}

/// Prints one JSON object on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(value)?);
    Ok(())
}
