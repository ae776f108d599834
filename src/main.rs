//! The `cudamin` command line. With no arguments it solves the embedded default,
//! `seed-expsum` with n = 10 000, on `--backend auto`.
//!
//! `--json` puts exactly one JSON object on stdout; progress and diagnostics go to stderr.
//! Bad input, an unknown problem or an unavailable backend that was asked for is a one-line
//! error on stderr and a non-zero exit code.

#![forbid(unsafe_code)]

mod commands;

use clap::builder::PossibleValue;
use clap::{Parser, Subcommand, ValueEnum};
use cudamin::problems::fit_batch::{Estimator, Precision};
use cudamin::{BackendChoice, DataType, Gradient, Loss, Method};
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "cudamin",
    version,
    about = "Minimize sums of terms with BFGS / L-BFGS on a GPU or all CPU cores"
)]
#[command(
    override_usage = "cudamin [COMMAND]",
    after_help = "With no command, cudamin runs `cudamin solve seed-expsum` (n = 10 000)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What `cudamin` with no arguments runs, parsed like any other command line: `seed-expsum` at
/// its default n = 10 000, every option at its default.
const DEFAULT_JOB: [&str; 3] = ["cudamin", "solve", "seed-expsum"];

#[derive(Subcommand)]
enum Command {
    /// Minimize a built-in problem.
    Solve(commands::solve::SolveArgs),
    /// Fit a model to a data file (CSV, .npy, .npz): Levenberg–Marquardt by default.
    Fit(commands::fit::FitArgs),
    /// Time one value and one gradient evaluation of a built-in problem.
    Eval(commands::eval::EvalArgs),
    /// List the built-in problems.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show the backends: the embedded PTX and whether a GPU answers.
    Info {
        #[arg(long)]
        json: bool,
    },
}

/// Where the problem runs (`--backend`).
#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum BackendArg {
    /// The GPU if the build has the `cuda` feature and a device answers; else the CPU.
    #[default]
    Auto,
    /// All CPU cores.
    Cpu,
    /// The GPU, or an error saying why it cannot be used.
    Cuda,
    /// The PTX simulator: the embedded PTX run on the CPU as a GPU would run it, with
    /// compute-sanitizer's checks. Exact and slow, for tests and debugging; auto never picks it.
    Sim,
}

impl From<BackendArg> for BackendChoice {
    fn from(arg: BackendArg) -> Self {
        match arg {
            BackendArg::Auto => BackendChoice::Auto,
            BackendArg::Cpu => BackendChoice::Cpu,
            BackendArg::Cuda => BackendChoice::Cuda,
            BackendArg::Sim => BackendChoice::Simulated,
        }
    }
}

/// A command-line value for one of the library's kind tables: `$arg` wraps `$kind` and
/// offers every row of `$kind::ALL` by its `name()`, with its `help()` as the value's help, so
/// that a row added to the table is a new value here without an edit.
macro_rules! table_arg {
    ($(#[$doc:meta])* $arg:ident($kind:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $arg(pub $kind);

        impl ValueEnum for $arg {
            fn value_variants<'a>() -> &'a [Self] {
                const ALL: [$arg; <$kind>::ALL.len()] = {
                    let mut all = [$arg(<$kind>::ALL[0]); <$kind>::ALL.len()];
                    let mut i = 0;
                    while i < all.len() {
                        all[i] = $arg(<$kind>::ALL[i]);
                        i += 1;
                    }
                    all
                };
                &ALL
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                Some(PossibleValue::new(self.0.name()).help(self.0.help()))
            }
        }
    };
}

table_arg! {
    /// How the gradient is computed (`--grad`): the library's scheme table, one value per row.
    GradArg(Gradient)
}

table_arg! {
    /// A robust loss (`--loss`): the library's table of losses, scipy's names.
    LossArg(Loss)
}

table_arg! {
    /// How a problem's data are stored on the backend (`--data-dtype`); read as f64 either way.
    DataTypeArg(DataType)
}

/// What each fit of `cudamin fit --batch` minimizes (`--estimator`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum EstimatorArg {
    /// Weighted least squares, as curve_fit.
    #[default]
    Lsq,
    /// Poisson maximum likelihood for counts (Gpufit's MLE).
    Poisson,
}

impl EstimatorArg {
    /// The estimator as the output names it.
    pub const fn name(self) -> &'static str {
        match self {
            EstimatorArg::Lsq => "lsq",
            EstimatorArg::Poisson => "poisson",
        }
    }
}

impl From<EstimatorArg> for Estimator {
    fn from(arg: EstimatorArg) -> Estimator {
        match arg {
            EstimatorArg::Lsq => Estimator::LeastSquares,
            EstimatorArg::Poisson => Estimator::Poisson,
        }
    }
}

/// The precision `cudamin fit --batch` computes in (`--dtype`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum DtypeArg {
    /// Double precision.
    #[default]
    F64,
    /// Single precision, Gpufit's default.
    F32,
}

impl DtypeArg {
    /// The precision as the output names it.
    pub const fn name(self) -> &'static str {
        match self {
            DtypeArg::F64 => "f64",
            DtypeArg::F32 => "f32",
        }
    }
}

impl From<DtypeArg> for Precision {
    fn from(arg: DtypeArg) -> Precision {
        match arg {
            DtypeArg::F64 => Precision::F64,
            DtypeArg::F32 => Precision::F32,
        }
    }
}

/// The solver (`--method`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum MethodArg {
    /// BFGS, scipy's `minimize(method='BFGS')`.
    #[default]
    Bfgs,
    /// L-BFGS, for large n.
    Lbfgs,
    /// L-BFGS-B: L-BFGS within box bounds (--lower, --upper), scipy's
    /// `minimize(method='L-BFGS-B')`.
    Lbfgsb,
    /// Levenberg–Marquardt for sums of squares, scipy's `least_squares(method='lm')`; with
    /// bounds or a robust loss, trf (as curve_fit).
    Lm,
    /// The trust-region-reflective method for sums of squares, with or without bounds, scipy's
    /// `least_squares(method='trf')`.
    Trf,
}

impl MethodArg {
    /// The method as the output names it: `"bfgs"`, `"lbfgs"`, `"lbfgsb"`, `"lm"` or `"trf"`.
    pub const fn name(self) -> &'static str {
        match (self.quasi_newton(), self) {
            (Some(method), _) => method.name(),
            (None, MethodArg::Trf) => "trf",
            (None, _) => "lm",
        }
    }

    /// The `minimize` method, for all but lm.
    pub const fn quasi_newton(self) -> Option<Method> {
        match self {
            MethodArg::Bfgs => Some(Method::Bfgs),
            MethodArg::Lbfgs => Some(Method::Lbfgs),
            MethodArg::Lbfgsb => Some(Method::LbfgsB),
            MethodArg::Lm | MethodArg::Trf => None,
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<OsString> = if std::env::args_os().len() > 1 {
        std::env::args_os().collect()
    } else {
        DEFAULT_JOB.map(OsString::from).to_vec()
    };
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) if !err.use_stderr() => {
            // --help and --version; a closed stdout has nothing to be told.
            let _ = write!(std::io::stdout(), "{err}");
            return ExitCode::SUCCESS;
        }
        Err(err) => {
            // A stderr that cannot be written (`2>/dev/full`) still gets the exit status.
            let _ = writeln!(std::io::stderr(), "{}", usage_error_line(&err.to_string()));
            return ExitCode::from(2);
        }
    };
    let job = commands::job::Job::join();
    let outcome = job.check_ranks_agree().and_then(|()| match cli.command {
        Command::Solve(args) => commands::solve::run(&args, &job),
        Command::Fit(args) => match &args.batch {
            Some(column) => commands::fit_batch::run(&args, column, &job),
            None => commands::fit::run(&args, &job),
        },
        Command::Eval(_) if job.ranks() > 1 => Err(anyhow::anyhow!(
            "eval times one process's evaluations; run it without mpirun"
        )),
        Command::Eval(args) => commands::eval::run(&args),
        Command::List { json } => commands::list::run(json),
        Command::Info { json } => commands::info::run(json),
    });
    let code = exit_code(outcome);
    job.finish();
    code
}

/// clap's rendering of a usage error as one line: its message with the lines that complete it
/// (the missing arguments, the possible values, a "did you mean" tip), without the usage and
/// help lines after them. The first line alone said "the following required arguments were
/// not provided:" and stopped.
fn usage_error_line(rendered: &str) -> String {
    let parts: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .take_while(|line| !line.starts_with("Usage:") && !line.starts_with("For more information"))
        .filter(|line| !line.is_empty())
        .collect();
    let mut line = String::new();
    for part in parts {
        let separator = if part.starts_with("tip:") { "; " } else { " " };
        if !line.is_empty() {
            line.push_str(separator);
        }
        line.push_str(part);
    }
    if line.is_empty() {
        line.push_str("error: invalid arguments");
    }
    line
}

/// The exit code of a command's outcome, after printing its error (rank 0 only, in an MPI job).
fn exit_code(outcome: anyhow::Result<()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if is_broken_pipe(&err) => {
            // The reader went away (`cudamin ... | head`): end quietly, with the status a
            // shell gives a process killed by SIGPIPE.
            ExitCode::from(141)
        }
        Err(_) if !commands::job::prints() => {
            // A rank of an MPI job but 0: rank 0 prints the error every rank agreed on.
            ExitCode::FAILURE
        }
        Err(err) => {
            // One line: the error and its causes.
            let causes: Vec<String> = err.chain().map(|c| c.to_string()).collect();
            let line = causes.join(": ").replace('\n', " ");
            let _ = writeln!(std::io::stderr(), "error: {line}");
            ExitCode::FAILURE
        }
    }
}

/// Whether `err` comes from writing to a stdout whose reader has closed it.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
