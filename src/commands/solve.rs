//! `cudamin solve PROBLEM`: minimize a built-in problem and report scipy's result fields.

use super::{ProblemArgs, inf_norm, print_json};
use crate::{GradArg, MethodArg};
use cudamin::solver::{Iterate, minimize};
use cudamin::{Gradient, Method, Options, TermObjective};
use std::io::Write;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

#[derive(clap::Args, Clone, Debug)]
pub struct SolveArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
    #[arg(long, value_enum, default_value_t)]
    pub method: MethodArg,
    /// How the gradient is computed: exact (default), or forward / central differences.
    #[arg(long, value_enum, default_value_t)]
    pub grad: GradArg,
    /// Stop when ‖∇f‖∞ <= gtol (scipy's default 1e-5).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::tolerance)]
    pub gtol: Option<f64>,
    /// Iteration limit (default 200·n, as scipy).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::count)]
    pub maxiter: Option<usize>,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
}

impl SolveArgs {
    fn options(&self) -> Options {
        let defaults = Options::default();
        Options {
            gtol: self.gtol.unwrap_or(defaults.gtol),
            maxiter: self.maxiter,
            ..defaults
        }
    }
}

#[derive(serde::Serialize)]
struct SolveReport<'a> {
    problem: &'a str,
    n: usize,
    method: &'static str,
    grad: &'static str,
    backend: &'static str,
    backend_reason: &'a str,
    fun: f64,
    grad_inf_norm: f64,
    /// For finite differences: the estimated ‖∇f error‖∞ at x, and what it was measured against.
    jac_error: Option<JacErrorReport>,
    nit: usize,
    nfev: usize,
    njev: usize,
    status: i32,
    success: bool,
    message: &'a str,
    elapsed_s: f64,
    x: &'a [f64],
}

#[derive(serde::Serialize)]
struct JacErrorReport {
    estimate: f64,
    reference: &'static str,
}

pub fn run(args: &SolveArgs) -> anyhow::Result<()> {
    let mut out = super::stdout();
    let options = args.options();
    let setup = args.problem.setup()?;
    let method = Method::from(args.method);
    let fd = Gradient::from(args.grad);
    let mut objective = TermObjective::new(setup.instance.evaluator, fd);
    let mut progress = Progress::new();
    let start = Instant::now();
    let result = minimize(
        &mut objective,
        &setup.instance.x0,
        method,
        &options,
        &mut |it| {
            progress.show(it);
            ControlFlow::Continue(())
        },
    )?;
    let elapsed_s = start.elapsed().as_secs_f64();

    let report = SolveReport {
        problem: &args.problem.problem,
        n: setup.instance.x0.len(),
        method: method.name(),
        grad: fd.name(),
        backend: setup.backend.name(),
        backend_reason: &setup.backend_reason,
        fun: result.fun,
        grad_inf_norm: inf_norm(&result.jac),
        jac_error: result.jac_error.map(|e| JacErrorReport {
            estimate: e.estimate,
            reference: e.reference.name(),
        }),
        nit: result.nit,
        nfev: result.nfev,
        njev: result.njev,
        status: result.status.code(),
        success: result.success,
        message: &result.message,
        elapsed_s,
        x: &result.x,
    };
    if args.json {
        return print_json(&report);
    }
    let r = &report;
    writeln!(out, "problem        {} (n = {})", r.problem, r.n)?;
    writeln!(out, "backend        {} ({})", r.backend, r.backend_reason)?;
    writeln!(out, "method         {}, {} gradient", r.method, r.grad)?;
    writeln!(out, "status         {}: {}", r.status, r.message)?;
    writeln!(out, "fun            {:.12e}", r.fun)?;
    if let Some(f_star) = setup.instance.f_star {
        writeln!(out, "known minimum  {f_star:.12e}")?;
    }
    writeln!(out, "‖∇f‖∞          {:.3e}", r.grad_inf_norm)?;
    if let Some(e) = &r.jac_error {
        writeln!(
            out,
            "‖∇f error‖∞    {:.3e} (estimated against the {} gradient; gtol {:.1e})",
            e.estimate, e.reference, options.gtol
        )?;
    }
    writeln!(out, "nit nfev njev  {} {} {}", r.nit, r.nfev, r.njev)?;
    writeln!(out, "elapsed        {:.3} s", r.elapsed_s)?;
    writeln!(out, "x              {}", preview(r.x))?;
    Ok(())
}

/// The first and last few entries of `x`.
fn preview(x: &[f64]) -> String {
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|e| format!("{e:.6}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if x.len() <= 6 {
        format!("[{}]", fmt(x))
    } else {
        format!("[{}, ..., {}]", fmt(&x[..3]), fmt(&x[x.len() - 3..]))
    }
}

/// A progress line on stderr, at most once a second.
struct Progress {
    last: Option<Instant>,
}

impl Progress {
    fn new() -> Self {
        Progress { last: None }
    }

    fn show(&mut self, it: &Iterate<'_>) {
        if self
            .last
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
        {
            eprintln!(
                "nit {:>6}  f {:>22.15e}  ‖∇f‖ {:.3e}",
                it.nit, it.fun, it.grad_norm
            );
            self.last = Some(Instant::now());
        }
    }
}
