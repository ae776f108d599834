//! `cudamin solve PROBLEM`: minimize a built-in problem and report scipy's result fields.

use super::{ProblemArgs, inf_norm, print_json};
use crate::{GradArg, MethodArg};
use cudamin::solver::{Iterate, minimize};
use cudamin::{Gradient, Method, Options, TermObjective};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{self, IsTerminal, Write};
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
    /// Show progress on stderr even when it is not a terminal, or with --json.
    #[arg(long)]
    pub progress: bool,
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
    let mut progress = Progress::new(args.progress, args.json);
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
    progress.finish();
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

/// Progress on stderr, for solves that last: from one second in, the iteration, f, ‖∇f‖, the
/// evaluations and the elapsed time. On a terminal an indicatif line redrawn in place;
/// elsewhere (with `--progress`), a plain line at most once a second, which logs can keep.
struct Progress {
    shown: Shown,
    start: Instant,
    last_line: Option<Instant>,
}

enum Shown {
    Off,
    Bar(ProgressBar),
    Lines,
}

impl Progress {
    /// `asked`: `--progress`; `json`: `--json`, which turns progress off unless asked.
    fn new(asked: bool, json: bool) -> Self {
        let terminal = io::stderr().is_terminal();
        let shown = if terminal && (asked || !json) {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
            if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
                bar.set_style(style);
            }
            Shown::Bar(bar)
        } else if asked {
            Shown::Lines
        } else {
            Shown::Off
        };
        Progress {
            shown,
            start: Instant::now(),
            last_line: None,
        }
    }

    fn show(&mut self, it: &Iterate<'_>) {
        let second = Duration::from_secs(1);
        if self.start.elapsed() < second {
            return;
        }
        let state = format!(
            "nit {}  f {:.9e}  ‖∇f‖ {:.3e}  nfev {}  njev {}",
            it.nit, it.fun, it.grad_norm, it.nfev, it.njev
        );
        match &self.shown {
            Shown::Off => {}
            Shown::Bar(bar) => {
                bar.set_message(state);
                bar.tick();
            }
            Shown::Lines => {
                if self.last_line.is_none_or(|t| t.elapsed() >= second) {
                    eprintln!("[{:.1} s] {state}", self.start.elapsed().as_secs_f64());
                    self.last_line = Some(Instant::now());
                }
            }
        }
    }

    /// Leaves the bar's last state on screen, when it showed one.
    fn finish(&self) {
        if let Shown::Bar(bar) = &self.shown
            && self.start.elapsed() >= Duration::from_secs(1)
        {
            bar.abandon();
        }
    }
}
