//! `cudamin fit DATA --model MODEL`: fit a built-in model to the columns of a data file, and
//! report what `curve_fit` would: the parameters, their standard errors and covariance, the
//! residual sum of squares and the reduced χ².

use super::job::Job;
use super::method::MethodArgs;
use super::parse::Numbers;
use super::plot::FitPanels;
use super::print_json;
use super::solve::{active_summary, fixed_indices};
use crate::{BackendArg, DataTypeArg, DtypeArg, EstimatorArg, MethodArg};
use anyhow::Context;
use cudamin::LaunchOverride;
use cudamin::data::{read_column_rows, read_columns};
use cudamin::plumbing::Share;
use cudamin::problems::Solvable;
use cudamin::problems::fit::{Columns, MODELS, Model, check_determined, find_model};
use cudamin::{Covariance, SolveError, covariance, covariance_of_free};
use cudamin::{EvalError, Factor, Loss, RobustLoss};
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args, Clone, Debug)]
#[command(after_help = models_help())]
pub struct FitArgs {
    /// The data: CSV with a header line, numpy .npz (one 1-D array per column), or .npy (a 2-D
    /// array, columns named 0, 1, ...).
    pub data: PathBuf,
    /// The model (listed below).
    #[arg(long)]
    pub model: String,
    /// Number of parameters (default: the model's).
    #[arg(long, allow_negative_numbers = true, value_parser = super::parse::count)]
    pub params: Option<usize>,
    /// The column of the independent variable. A model of k predictors (linear) takes k
    /// columns: --x a --x b.
    #[arg(long, default_value = "x")]
    pub x: Vec<String>,
    /// The column of the data to fit.
    #[arg(long, default_value = "y")]
    pub y: String,
    /// A column of y's standard deviations: the residuals are divided by them.
    #[arg(long)]
    pub sigma: Option<String>,
    /// Take sigma as the absolute uncertainty: the covariance is not rescaled by the reduced χ²
    /// (curve_fit's absolute_sigma=True).
    #[arg(long, requires = "sigma")]
    pub absolute_sigma: bool,
    /// Starting parameters, comma-separated (default, as curve_fit: all ones; with bounds, the
    /// middle of each finite box, 1 inside a one-sided bound).
    #[arg(long, allow_hyphen_values = true, value_parser = super::parse::numbers)]
    pub p0: Option<Numbers>,
    /// lm (Levenberg–Marquardt; with --lower/--upper, trust-region reflective, as curve_fit),
    /// bfgs, lbfgs or lbfgsb.
    #[arg(long, value_enum, default_value = "lm")]
    pub method: MethodArg,
    /// Fit without the model's natural bounds (exp-decay's rates ≥ 0, gauss-peaks' widths ≥ 0),
    /// which lm (then trf, as curve_fit with bounds) and lbfgsb apply where neither --lower nor
    /// --upper is given.
    #[arg(long)]
    pub no_natural_bounds: bool,
    #[command(flatten)]
    pub options: MethodArgs,
    /// Where the terms run.
    #[arg(long, value_enum, default_value_t)]
    pub backend: BackendArg,
    /// How the data are stored on the backend: f32 halves the bytes each pass reads; the
    /// arithmetic stays f64. (--batch takes --dtype instead.)
    #[arg(long, value_enum, default_value_t, conflicts_with = "batch")]
    pub data_dtype: DataTypeArg,
    /// Print one JSON object instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Fit the model to each group of rows that share a value of this column, many small fits
    /// at once (curve_fit_batch); one CSV line per fit. The fits start from --p0 (default
    /// ones), with no natural bounds.
    #[arg(long)]
    pub batch: Option<String>,
    /// With --batch: lsq (default) or poisson, maximum likelihood for counts.
    #[arg(long, value_enum, requires = "batch")]
    pub estimator: Option<EstimatorArg>,
    /// With --batch: f64 (default) or f32, single precision.
    #[arg(long, value_enum, requires = "batch")]
    pub dtype: Option<DtypeArg>,
    /// With --batch: count what the batch kernel costs on the simulator (`--backend sim`), per
    /// fit, and model its rate on an H100 at 10⁷ fits, instead of printing the fits.
    #[arg(long, requires = "batch")]
    pub cost: bool,
}

fn models_help() -> String {
    let mut help = String::from("Models (p = --params):\n");
    for m in MODELS {
        help += &format!(
            "  {:<12} {}; {}, default {}\n",
            m.name, m.formula, m.params_rule, m.default_params
        );
    }
    help
}

#[derive(serde::Serialize)]
struct FitReport<'a> {
    data: String,
    model: &'a str,
    params: usize,
    points: usize,
    columns: ColumnNames<'a>,
    method: &'static str,
    grad: &'static str,
    /// lm's robust loss (scipy's name) and its scale: `rss` is then `Σ C²ρ(r²/C²)`.
    loss: &'static str,
    f_scale: f64,
    backend: &'static str,
    backend_reason: &'a str,
    status: i32,
    success: bool,
    message: &'a str,
    /// The fitted parameters.
    x: &'a [f64],
    /// Their names, where the model names them (exp-decay's `a0`, `b0`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    names: Option<Vec<String>>,
    /// Their standard errors, `√diag(pcov)`; `null` where the covariance cannot be estimated.
    stderr: Option<Vec<f64>>,
    /// `curve_fit`'s `pcov`, by rows: where `J` is rank-deficient, the pseudo-inverse's.
    pcov: Option<Vec<Vec<f64>>>,
    /// `J`'s rank at the solution (scipy's tolerance), with the covariance.
    rank: Option<usize>,
    /// The parameters in `J`'s null space: the data fix only a combination of them.
    not_identifiable: Vec<usize>,
    absolute_sigma: bool,
    /// `Σ ((y − m)/σ)²`, the weighted residual sum of squares (χ² with sigma).
    rss: f64,
    /// `rss / (points − params)`.
    reduced_chi2: f64,
    dof: usize,
    grad_inf_norm: f64,
    nit: usize,
    nfev: usize,
    njev: usize,
    elapsed_s: f64,
    /// Where the bounds came from: `"given"` (--lower/--upper) or `"model"` (its natural
    /// bounds); absent without bounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    bounds: Option<&'static str>,
    /// With bounds: −1 at the lower bound, 1 at the upper, 0 neither (scipy's name).
    #[serde(skip_serializing_if = "Option::is_none")]
    active_mask: Option<Vec<i32>>,
    /// With --fix: the parameters held (their rows and columns of pcov are zero).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixed: Vec<usize>,
    /// Whether --p0 gave the start (else curve_fit's default).
    #[serde(skip)]
    p0_given: bool,
}

#[derive(serde::Serialize)]
struct ColumnNames<'a> {
    /// The predictors' columns, one or more.
    x: &'a [String],
    y: &'a str,
    sigma: Option<&'a str>,
}

/// The solver options of a fit of `model` with `p` parameters: the command line's, with the
/// model's natural bounds where the method takes bounds and none are given, and its names for
/// its parameters (for `--fix`).
fn fit_options(args: &FitArgs, model: &Model, p: usize) -> MethodArgs {
    let takes_bounds = matches!(
        args.method,
        MethodArg::Lm | MethodArg::Trf | MethodArg::Lbfgsb
    );
    let natural = (takes_bounds && !args.options.bounds_given() && !args.no_natural_bounds)
        .then(|| model.natural_bounds(p))
        .flatten();
    MethodArgs {
        default_bounds: natural,
        variable_names: model.parameter_names(p),
        ..args.options.clone()
    }
}

/// Fits the model; in an MPI job, each rank loads and evaluates only its rows of the data.
pub fn run(args: &FitArgs, job: &Job) -> anyhow::Result<()> {
    if args.options.plot.is_some() && job.ranks() > 1 {
        anyhow::bail!(
            "--plot draws every data point, and under MPI no rank holds them all: \
             plot from a run without mpirun"
        );
    }
    let model = find_model(&args.model)?;
    let k = args.x.len();
    let p = args.params.unwrap_or_else(|| model.params_for(k));
    // The parameters `--fix` holds (each at most once: the options refuse one given twice).
    let held = args.options.fix.len();
    if args.options.plot.is_some() && k > 1 {
        anyhow::bail!("--plot draws y against one predictor, and this fit has {k}");
    }
    let mut names: Vec<&str> = args.x.iter().map(String::as_str).collect();
    names.push(&args.y);
    names.extend(args.sigma.as_deref());
    let shown = args.data.display();
    // Every rank reads its rows and loads them; then all agree that all did.
    let loaded = (|| {
        let (columns, total) = if job.ranks() > 1 {
            let mut refused = None;
            let rows = read_column_rows(&args.data, &names, |total| {
                // The rows' share is sized by p: a p the data cannot determine is refused first.
                let share = (check_determined(total, p, held).map_err(anyhow::Error::from))
                    .and_then(|()| job.rows(p, total));
                share.unwrap_or_else(|e| {
                    refused = Some(e);
                    0..0
                })
            })?;
            if let Some(e) = refused {
                return Err(e.context(format!("{shown}")));
            }
            rows
        } else {
            // Alone: one pass over the file, every row kept.
            let columns = read_columns(&args.data, &names)?;
            let total = columns.first().map_or(0, Vec::len);
            (columns, total)
        };
        // read_column_rows returns one column per name asked for, in order.
        let mut columns = columns.into_iter();
        let x: Vec<Vec<f64>> = columns.by_ref().take(k).collect();
        let Some(y) = columns.next() else {
            anyhow::bail!("{shown}: the x and y columns were not read");
        };
        let sigma = columns.next();
        let xs: Vec<&[f64]> = x.iter().map(Vec::as_slice).collect();
        let borrowed = Columns {
            x: &xs,
            y: &y,
            sigma: sigma.as_deref(),
            data_type: args.data_dtype.0,
        };
        // What is sized by p (the natural bounds, the names) is made once the data are known to
        // determine p parameters: a p past them is refused here, not allocated.
        check_determined(total, p, held).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
        let options = fit_options(args, model, p);
        let (backend, backend_reason) =
            cudamin::backend_with_launch(args.backend.into(), LaunchOverride::default())?;
        let p0 = match args.p0.clone() {
            Some(Numbers(values)) => Some(values),
            None => options.bounded_start(p)?,
        };
        let instance = model
            .instantiate_columns(&backend, Some(p), borrowed, p0, (total, held))
            .map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
        // The plot's points: y against the one predictor.
        let data = (x.into_iter().next().unwrap_or_default(), y);
        Ok((instance, backend, backend_reason, data, total, options))
    })();
    let (instance, backend, backend_reason, data, m, options) = job.agree(loaded)?;
    let bounds_from = match (options.bounds_given(), &options.default_bounds) {
        (true, _) => Some("given"),
        (false, Some(_)) => Some("model"),
        (false, None) => None,
    };
    job.check_same_backend(backend.name())?;
    let evaluator = job.evaluator(instance.evaluator, Share::rows(m))?;
    let jacobian = args.options.grad.0;
    let mut objective = Solvable::new(evaluator, jacobian);
    let start = Instant::now();
    let result =
        (options.run(args.method, &mut objective, &instance.x0, args.json)).map_err(|e| {
            // A start (or a held value) outside bounds the user never gave: say whose they are.
            let outside = matches!(
                e.downcast_ref::<SolveError>(),
                Some(SolveError::InfeasibleX0 { .. })
            );
            if outside && bounds_from == Some("model") {
                anyhow::anyhow!(
                    "{e} (the model's natural bounds; --no-natural-bounds fits without them)"
                )
            } else {
                e
            }
        })?;
    let elapsed_s = start.elapsed().as_secs_f64();

    // J's triangle at the solution: LM's own, or one more pass after BFGS / L-BFGS. A backend
    // that does not make that pass (the GPU's takes dense windows of at most 64 variables) leaves
    // the covariance unestimated; a pass that fails is an error, not a missing covariance.
    let factor = match (result.factor.clone(), objective.least_squares()) {
        (Some(factor), _) => Some(factor),
        (None, Some(ls)) => {
            let mut factor = Factor::new(p);
            match ls.factor(&result.x, RobustLoss::default(), &mut factor) {
                Ok(_) => Some(factor),
                Err(EvalError::Backend(refused)) if refused.is_refusal() => None,
                Err(error) => {
                    return Err(error).context("J's triangle at the solution, for the covariance");
                }
            }
        }
        (None, None) => None,
    };
    let absolute_sigma = args.absolute_sigma;
    let pcov = factor.and_then(|factor| match &result.fixed {
        Some(fixed) => covariance_of_free(&factor, fixed, result.fun, m, absolute_sigma),
        None => covariance(&factor, result.fun, m, absolute_sigma),
    });
    let free = (result.fixed.as_ref()).map_or(p, |fixed| fixed.iter().filter(|&&f| !f).count());
    let dof = m - free;
    let report = FitReport {
        data: args.data.display().to_string(),
        model: model.name,
        params: p,
        points: m,
        columns: ColumnNames {
            x: &args.x,
            y: &args.y,
            sigma: args.sigma.as_deref(),
        },
        method: result.method,
        grad: jacobian.name(),
        loss: args.options.loss.map_or(Loss::Linear, |arg| arg.0).name(),
        f_scale: args.options.f_scale.unwrap_or(1.0),
        backend: backend.name(),
        backend_reason: &backend_reason,
        status: result.status,
        success: result.success,
        message: &result.message,
        x: &result.x,
        names: options.variable_names.clone(),
        stderr: pcov.as_ref().map(Covariance::standard_errors),
        pcov: pcov
            .as_ref()
            .map(|c| c.matrix.chunks(p).map(<[f64]>::to_vec).collect()),
        rank: pcov.as_ref().map(|c| c.rank),
        not_identifiable: pcov
            .as_ref()
            .map_or_else(Vec::new, |c| c.not_identifiable.clone()),
        absolute_sigma,
        rss: result.fun,
        reduced_chi2: if dof > 0 {
            result.fun / dof as f64
        } else {
            f64::NAN
        },
        dof,
        grad_inf_norm: result.grad_inf_norm,
        nit: result.nit,
        nfev: result.nfev,
        njev: result.njev,
        elapsed_s,
        bounds: bounds_from,
        active_mask: result.active_mask.clone(),
        fixed: fixed_indices(result.fixed.as_deref()),
        p0_given: args.p0.is_some(),
    };
    if let Some(path) = &args.options.plot {
        let drawn: Vec<usize> = super::plot::drawn(m).collect();
        let x: Vec<f64> = drawn.iter().map(|&i| data.0[i]).collect();
        let y: Vec<f64> = drawn.iter().map(|&i| data.1[i]).collect();
        let panels = FitPanels {
            model: &model.predict(&result.x, &[&x]),
            x: &x,
            y: &y,
        };
        let title = format!("{} fit of {}, {}", model.name, report.data, report.method);
        super::plot::write(path, &title, &result.history, result.fun, Some(panels))?;
    }
    if args.json {
        return print_json(&report);
    }
    let r = &report;
    let mut out = super::stdout();
    let sigma = r
        .columns
        .sigma
        .map_or(String::new(), |s| format!(", sigma = {s}"));
    writeln!(
        out,
        "data           {} ({} points; x = {}, y = {}{sigma})",
        r.data,
        r.points,
        r.columns.x.join(", "),
        r.columns.y
    )?;
    writeln!(
        out,
        "model          {} ({} parameters): {}",
        r.model, r.params, model.formula
    )?;
    writeln!(out, "backend        {} ({})", r.backend, r.backend_reason)?;
    writeln!(out, "method         {}, {} derivatives", r.method, r.grad)?;
    if r.loss != Loss::Linear.name() {
        writeln!(
            out,
            "loss           {}, f_scale {} (rss is Σ C²ρ(r²/C²); pcov from the rows rescaled for it)",
            r.loss, r.f_scale
        )?;
    }
    writeln!(out, "status         {}: {}", r.status, r.message)?;
    if r.bounds == Some("model") {
        writeln!(
            out,
            "bounds         the model's natural ones: {} (--no-natural-bounds fits without)",
            natural_summary(model, r.params)
        )?;
    }
    if let Some(mask) = &r.active_mask {
        // curve_fit's convention: pcov is J's at the solution, blind to the bounds.
        writeln!(
            out,
            "active bounds  {} (standard errors ignore the bounds, as curve_fit's)",
            active_summary(mask, |j| model.parameter_name(j))
        )?;
    }
    writeln!(out, "rss            {:.12e}", r.rss)?;
    writeln!(out, "reduced chi2   {:.6e} (dof {})", r.reduced_chi2, r.dof)?;
    writeln!(out, "nit nfev njev  {} {} {}", r.nit, r.nfev, r.njev)?;
    writeln!(out, "elapsed        {:.3} s", r.elapsed_s)?;
    let covariance_kind = if absolute_sigma {
        "absolute sigma"
    } else {
        "scaled by the reduced chi2"
    };
    writeln!(
        out,
        "parameters     value ± standard error ({covariance_kind})"
    )?;
    for (i, value) in r.x.iter().enumerate() {
        let name = model.parameter_name(i);
        match &r.stderr {
            Some(e) => writeln!(out, "  {name:<4} {value:>22.12e} ± {:.3e}", e[i])?,
            None => writeln!(out, "  {name:<4} {value:>22.12e}")?,
        }
    }
    if r.stderr.is_none() {
        writeln!(
            out,
            "covariance     not estimated: dof = 0, J's triangle is not finite, or the backend does not make it"
        )?;
    }
    if !r.not_identifiable.is_empty() {
        let names: Vec<String> = (r.not_identifiable.iter())
            .map(|&i| model.parameter_name(i))
            .collect();
        // J's columns are the free parameters'.
        let free = match r.params - r.fixed.len() {
            free if r.fixed.is_empty() => free.to_string(),
            free => format!("{free} free parameters"),
        };
        writeln!(
            out,
            "not identified {}: J has rank {} of {free}; the data fix only a combination of these (pcov is the pseudo-inverse's)",
            names.join(", "),
            r.rank.unwrap_or(0),
        )?;
        if !r.p0_given {
            writeln!(
                out,
                "               the start was curve_fit's default (no --p0); give --p0 (that \
                 default starts like components, such as two of exp-decay's rates or of \
                 gauss-peaks' centres, alike, and exact derivatives keep them so)"
            )?;
        }
    }
    Ok(())
}

/// The natural bounds of `model` with `p` parameters, as `b0 ≥ 0, b1 ≥ 0`.
fn natural_summary(model: &Model, p: usize) -> String {
    let Some(bounds) = model.natural_bounds(p) else {
        return String::new();
    };
    let named: Vec<String> = (bounds.lower.iter().enumerate())
        .filter(|(_, lower)| lower.is_finite())
        .map(|(j, lower)| format!("{} ≥ {lower}", model.parameter_name(j)))
        .collect();
    named.join(", ")
}
