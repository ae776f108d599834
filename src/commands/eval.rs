//! `cudamin eval PROBLEM`: one value and one gradient at x0, with the median time of each and
//! of the pass that takes both at once (the one the line searches call), so users can profile
//! their kernels.

use super::{ProblemArgs, print_json};
use crate::GradArg;
use std::io::Write;
use std::time::Instant;

#[derive(clap::Args, Clone, Debug)]
pub struct EvalArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// How the gradient is computed: exact (default), or forward / central differences.
    #[arg(long, value_enum, default_value_t)]
    pub grad: GradArg,
    /// Timed evaluations of each kind (after one untimed warm-up), 1 to 10⁶; the median is
    /// reported.
    #[arg(long, default_value_t = 5, allow_negative_numbers = true, value_parser = super::parse::repeat)]
    pub repeat: usize,
    /// Count what each pass's kernels cost on the simulator (`--backend sim`) and model their
    /// time on an H100 at 10⁷ points, instead of timing them.
    #[arg(long)]
    pub cost: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct EvalReport<'a> {
    problem: &'a str,
    n: usize,
    backend: &'static str,
    fun: f64,
    grad_inf_norm: f64,
    value_s: f64,
    grad_s: f64,
    value_and_grad_s: f64,
    repeat: usize,
    /// On a GPU: seconds the driver spent loading the kernels these evaluations launched (their
    /// JIT compilation on a first run, the driver's compute cache after that).
    kernel_load_s: Option<f64>,
}

pub fn run(args: &EvalArgs) -> anyhow::Result<()> {
    let mut out = super::stdout();
    let setup = args.problem.setup()?;
    if args.cost {
        return super::cost::run(&args.problem.problem, setup, args.grad.0, args.json);
    }
    let mut evaluator = setup.instance.evaluator.into_sum();
    let x = setup.instance.x0;
    let fd = args.grad.0;
    let mut g = vec![0.0; x.len()];

    let fun = evaluator.value(&x)?;
    evaluator.gradient(&x, fd, &mut g)?;
    let value_s = median_seconds(args.repeat, || evaluator.value(&x).map(drop))?;
    let grad_s = median_seconds(args.repeat, || evaluator.gradient(&x, fd, &mut g))?;
    let value_and_grad_s = median_seconds(args.repeat, || {
        evaluator.value_and_gradient(&x, fd, &mut g).map(drop)
    })?;

    let report = EvalReport {
        problem: &args.problem.problem,
        n: x.len(),
        backend: setup.backend.name(),
        fun,
        grad_inf_norm: cudamin::plumbing::inf_norm(&g),
        value_s,
        grad_s,
        value_and_grad_s,
        repeat: args.repeat,
        kernel_load_s: setup.backend.module_load_seconds(),
    };
    if args.json {
        return print_json(&report);
    }
    writeln!(
        out,
        "problem   {} (n = {}) on {} ({})",
        report.problem, report.n, report.backend, setup.backend_reason
    )?;
    writeln!(out, "f(x0)     {:.12e}", report.fun)?;
    writeln!(
        out,
        "‖∇f‖∞     {:.6e} ({} gradient)",
        report.grad_inf_norm,
        fd.name()
    )?;
    writeln!(
        out,
        "value     {:.6} s (median of {})",
        report.value_s, report.repeat
    )?;
    writeln!(
        out,
        "gradient  {:.6} s ({:.2}× the value)",
        report.grad_s,
        report.grad_s / report.value_s
    )?;
    writeln!(
        out,
        "both      {:.6} s ({:.2}× the value; one pass, as the line searches take them)",
        report.value_and_grad_s,
        report.value_and_grad_s / report.value_s
    )?;
    if let Some(seconds) = report.kernel_load_s {
        writeln!(
            out,
            "kernels   loaded in {seconds:.3} s (a GPU compiles each on its first launch, or \
             reads it from the driver's cache)"
        )?;
    }
    Ok(())
}

/// The median wall time of `repeat` calls.
fn median_seconds<E>(repeat: usize, mut call: impl FnMut() -> Result<(), E>) -> Result<f64, E> {
    let mut times = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        let start = Instant::now();
        call()?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}
