//! `cudamin solve PROBLEM`: minimize a built-in problem and report scipy's result fields.

use super::job::Job;
use super::method::MethodArgs;
use super::{ProblemArgs, Setup, print_json};
use crate::MethodArg;
use cudamin::Traffic;
use cudamin::plumbing::Share;
use cudamin::problems::Solvable;
use std::io::Write;
use std::time::Instant;

#[derive(clap::Args, Clone, Debug)]
pub struct SolveArgs {
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// bfgs, lbfgs, lbfgsb (L-BFGS-B, which takes --lower/--upper), or lm (Levenberg–Marquardt,
    /// for the sums of squares: the mgh-* problems; trf with bounds).
    #[arg(long, value_enum, default_value_t)]
    pub method: MethodArg,
    #[command(flatten)]
    pub options: MethodArgs,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
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
    /// With bounds: −1 at the lower bound, 1 at the upper, 0 neither (scipy's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    active_mask: Option<&'a [i32]>,
    /// With --fix: the variables held.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixed: Vec<usize>,
    /// On a GPU: what the device was asked during the solve.
    #[serde(skip_serializing_if = "Option::is_none")]
    device_traffic: Option<TrafficReport>,
}

/// A solve's [`Traffic`]: each wait (a copy back, after all earlier work) and each write costs a
/// round trip whatever `n`, a launch an enqueue; the bytes cross the host link.
#[derive(serde::Serialize)]
struct TrafficReport {
    launches: u64,
    waits: u64,
    writes: u64,
    allocations: u64,
    bytes_to_device: u64,
    bytes_to_host: u64,
    modules_loaded: u64,
}

impl From<Traffic> for TrafficReport {
    fn from(t: Traffic) -> Self {
        let bytes = |words: u64| words * size_of::<f64>() as u64;
        TrafficReport {
            launches: t.launches,
            waits: t.waits,
            writes: t.writes,
            allocations: t.allocations,
            bytes_to_device: bytes(t.words_to_device),
            bytes_to_host: bytes(t.words_to_host),
            modules_loaded: t.modules_loaded,
        }
    }
}

#[derive(serde::Serialize)]
struct JacErrorReport {
    estimate: f64,
    reference: &'static str,
}

/// Solves the problem; in an MPI job, every rank holds it whole and evaluates its share of
/// the terms.
pub fn run(args: &SolveArgs, job: &Job) -> anyhow::Result<()> {
    let mut out = super::stdout();
    let setup = job.agree(args.problem.setup())?;
    let fd = args.options.grad.0;
    let Setup {
        instance,
        backend,
        mut backend_reason,
    } = setup;
    job.check_same_backend(backend.name())?;
    if job.ranks() > 1 && backend.device_summary().is_some() {
        // Every rank holds the whole problem; the GPU evaluates it whole (Share::evaluates_whole).
        backend_reason.push_str("; the GPU takes no term shares: rank 0 evaluates the problem");
    }
    let evaluator = job.evaluator(instance.evaluator, Share::Whole)?;
    let mut objective = Solvable::new(evaluator, fd);
    let before = backend.traffic();
    let start = Instant::now();
    let result = args
        .options
        .run(args.method, &mut objective, &instance.x0, args.json)?;
    let elapsed_s = start.elapsed().as_secs_f64();
    let device_traffic = (backend.traffic().zip(before)).map(|(now, before)| (now - before).into());

    let report = SolveReport {
        problem: &args.problem.problem,
        n: instance.x0.len(),
        method: result.method,
        grad: fd.name(),
        backend: backend.name(),
        backend_reason: &backend_reason,
        fun: result.fun,
        grad_inf_norm: result.grad_inf_norm,
        jac_error: result.jac_error.map(|e| JacErrorReport {
            estimate: e.estimate,
            reference: e.reference.name(),
        }),
        nit: result.nit,
        nfev: result.nfev,
        njev: result.njev,
        status: result.status,
        success: result.success,
        message: &result.message,
        elapsed_s,
        x: &result.x,
        active_mask: result.active_mask.as_deref(),
        fixed: fixed_indices(result.fixed.as_deref()),
        device_traffic,
    };
    if let Some(path) = args.options.plot.as_ref().filter(|_| super::job::prints()) {
        let title = format!("{} (n = {}), {}", report.problem, report.n, report.method);
        super::plot::write(path, &title, &result.history, result.fun, None)?;
    }
    if args.json {
        return print_json(&report);
    }
    let r = &report;
    writeln!(out, "problem        {} (n = {})", r.problem, r.n)?;
    writeln!(out, "backend        {} ({})", r.backend, r.backend_reason)?;
    writeln!(out, "method         {}, {} gradient", r.method, r.grad)?;
    writeln!(out, "status         {}: {}", r.status, r.message)?;
    writeln!(out, "fun            {:.12e}", r.fun)?;
    if let Some(f_star) = instance.f_star {
        writeln!(out, "known minimum  {f_star:.12e}")?;
    }
    // Which gradient's norm (`Outcome::grad_inf_norm`).
    let norm = match (r.method, r.active_mask.is_some()) {
        ("trf", _) => "‖v·∇f‖∞",
        (_, true) => "‖proj ∇f‖∞",
        _ => "‖∇f‖∞",
    };
    writeln!(out, "{norm:<15}{:.3e}", r.grad_inf_norm)?;
    if let Some(e) = &r.jac_error {
        writeln!(
            out,
            "‖∇f error‖∞    {:.3e} (estimated against the {} gradient; gtol {:.1e})",
            e.estimate,
            e.reference,
            args.options
                .gtol
                .unwrap_or(cudamin::Options::default().gtol)
        )?;
    }
    writeln!(out, "nit nfev njev  {} {} {}", r.nit, r.nfev, r.njev)?;
    writeln!(out, "elapsed        {:.3} s", r.elapsed_s)?;
    if let Some(t) = &r.device_traffic {
        let mb = |bytes: u64| bytes as f64 / 1e6;
        writeln!(
            out,
            "device         {} launches, {} waits, {} writes, {} allocations, {:.1} MB to the \
             device, {:.1} MB back",
            t.launches,
            t.waits,
            t.writes,
            t.allocations,
            mb(t.bytes_to_device),
            mb(t.bytes_to_host)
        )?;
    }
    writeln!(out, "x              {}", preview(r.x))?;
    if let Some(mask) = r.active_mask {
        writeln!(
            out,
            "active bounds  {}",
            active_summary(mask, |i| format!("x{i}"))
        )?;
    }
    Ok(())
}

/// The indices `fixed` holds.
pub fn fixed_indices(fixed: Option<&[bool]>) -> Vec<usize> {
    let fixed = fixed.unwrap_or_default();
    (0..fixed.len()).filter(|&i| fixed[i]).collect()
}

/// How many variables end at a bound, and the first few of them (`x3 lower`, each as `name`
/// calls variable `i`).
pub fn active_summary(mask: &[i32], name: impl Fn(usize) -> String) -> String {
    let active: Vec<String> = (mask.iter().enumerate())
        .filter(|&(_, &m)| m != 0)
        .map(|(i, &m)| format!("{} {}", name(i), if m < 0 { "lower" } else { "upper" }))
        .collect();
    let shown = active
        .iter()
        .take(8)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    match active.len() {
        0 => "none".to_owned(),
        k if k <= 8 => format!("{k}: {shown}"),
        k => format!("{k}: {shown}, …"),
    }
}

/// The first and last few entries of `x`.
pub fn preview(x: &[f64]) -> String {
    let fmt = |v: &[f64]| {
        v.iter()
            .map(|&e| {
                // Fixed-point writes every digit: 1e200 would be 201 of them.
                if e == 0.0 || !e.is_finite() || (1e-4..1e9).contains(&e.abs()) {
                    format!("{e:.6}")
                } else {
                    format!("{e:.6e}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if x.len() <= 6 {
        format!("[{}]", fmt(x))
    } else {
        format!("[{}, ..., {}]", fmt(&x[..3]), fmt(&x[x.len() - 3..]))
    }
}
