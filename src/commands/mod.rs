//! One module per subcommand.

mod cost;
pub mod eval;
pub mod fit;
pub mod fit_batch;
pub mod info;
pub mod job;
pub mod list;
mod method;
mod parse;
mod plot;
mod progress;
pub mod solve;

use crate::{BackendArg, DataTypeArg};
use cudamin::problems::{self, Instance};
use cudamin::{Backend, LaunchOverride};
use std::io::Write;

/// Which built-in problem, how big, and where (shared by `solve` and `eval`).
#[derive(clap::Args, Clone, Debug)]
pub struct ProblemArgs {
    /// A built-in problem (see `cudamin list`).
    pub problem: String,
    /// Number of variables (default: the problem's).
    #[arg(long, allow_negative_numbers = true, value_parser = parse::count)]
    pub n: Option<usize>,
    /// Number of data points, for data problems.
    #[arg(long, allow_negative_numbers = true, value_parser = parse::count)]
    pub points: Option<usize>,
    /// How a data problem's points are stored: f32 halves the bytes each pass reads; the
    /// arithmetic stays f64.
    #[arg(long, value_enum, default_value_t)]
    pub data_dtype: DataTypeArg,
    /// Where the terms run.
    #[arg(long, value_enum, default_value_t)]
    pub backend: BackendArg,
    /// GPU threads per block (1 to 1024), instead of the occupancy API's choice.
    #[arg(long, allow_negative_numbers = true, value_parser = parse::launch_size)]
    pub threads: Option<u32>,
    /// GPU blocks per grid, instead of the resident-block count.
    #[arg(long, allow_negative_numbers = true, value_parser = parse::launch_size)]
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
        let instance = problem.instantiate_as(&backend, self.n, self.points, self.data_dtype.0)?;
        Ok(Setup {
            instance,
            backend,
            backend_reason,
        })
    }
}

/// Standard output for a command's report (rank 0's only, in an MPI job). A write that fails
/// is an error that names stdout, which `main` turns into the usual quiet exit (a closed pipe)
/// or a one-line message (a full disk), never a panic as `println!` would.
pub fn stdout() -> Stdout {
    Stdout(job::prints().then(|| std::io::stdout().lock()))
}

/// Standard output, or nothing on the ranks of an MPI job but rank 0.
pub struct Stdout(Option<std::io::StdoutLock<'static>>);

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.0 {
            Some(out) => out.write(buf).map_err(writing_stdout),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.0 {
            Some(out) => out.flush().map_err(writing_stdout),
            None => Ok(()),
        }
    }
}

fn writing_stdout(err: std::io::Error) -> std::io::Error {
    std::io::Error::new(err.kind(), format!("writing to stdout: {err}"))
}

/// Prints one JSON object on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut out = stdout();
    writeln!(out, "{}", serde_json::to_string(value)?)?;
    out.flush()?;
    Ok(())
}
