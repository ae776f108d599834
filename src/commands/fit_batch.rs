//! `cudamin fit DATA --model MODEL --batch COLUMN`: the model fitted to each group of rows that
//! share a value of COLUMN, many small fits at once (Python's `curve_fit_batch`). One CSV line
//! per fit, or one JSON object.

use super::fit::FitArgs;
use super::job::Job;
use super::method::MethodArgs;
use super::parse::Numbers;
use super::print_json;
use crate::MethodArg;
use anyhow::{Context, anyhow, bail};
use cudamin::data::read_columns;
use cudamin::problems::fit::find_model;
use cudamin::problems::fit_batch::{Batch, BatchResult, Points, fit_batch_on};
use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;

/// What `--json` writes.
#[derive(serde::Serialize)]
struct BatchReport<'a> {
    data: String,
    model: &'a str,
    /// The column whose values group the rows.
    batch: &'a str,
    fits: usize,
    /// The rows fitted, every group's.
    rows: usize,
    params: usize,
    names: Vec<String>,
    estimator: &'static str,
    dtype: &'static str,
    backend: &'static str,
    backend_reason: &'a str,
    successes: usize,
    elapsed_s: f64,
    results: Vec<FitLine<'a>>,
}

/// One fit's line.
#[derive(serde::Serialize)]
struct FitLine<'a> {
    /// Its rows' value of the batch column.
    id: f64,
    /// Its rows.
    points: usize,
    status: i32,
    success: bool,
    message: &'a str,
    nfev: usize,
    /// scipy's `cost`: `½ Σ r²` (half the deviance for a Poisson fit).
    cost: f64,
    x: &'a [f64],
    /// `√diag(pcov)`; `null` where the covariance cannot be estimated.
    stderr: Vec<f64>,
}

/// The rows of each group of equal `ids`, the groups in the order of their first rows.
fn groups(ids: &[f64]) -> anyhow::Result<Vec<(f64, Vec<usize>)>> {
    let mut index = HashMap::new();
    let mut groups: Vec<(f64, Vec<usize>)> = Vec::new();
    for (row, &id) in ids.iter().enumerate() {
        if !id.is_finite() {
            bail!("row {row}: the batch column holds {id}; each row needs a finite id");
        }
        // `+ 0.0` makes −0 and 0 one id.
        let group = *index.entry((id + 0.0).to_bits()).or_insert_with(|| {
            groups.push((id, Vec::new()));
            groups.len() - 1
        });
        groups[group].1.push(row);
    }
    Ok(groups)
}

/// The points `M` of every group where all have `M` rows at the same predictors, bit for bit
/// (a pixel grid, say): the fits then share one copy of the predictors, which crosses to a GPU
/// once rather than once a fit. `x` holds the predictors group after group, as `offsets` say.
fn shared_predictors(x: &[Vec<f64>], offsets: &[usize]) -> Option<usize> {
    let m = *offsets.get(1)?;
    if m == 0 || offsets.windows(2).any(|w| w[1] - w[0] != m) {
        return None;
    }
    let same = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(a, b)| a.to_bits() == b.to_bits());
    (x.iter()
        .all(|c| c.chunks(m).all(|group| same(group, &c[..m]))))
    .then_some(m)
}

/// Fits the model to each group of rows, all at once.
pub fn run(args: &FitArgs, column: &str, job: &Job) -> anyhow::Result<()> {
    if job.ranks() > 1 {
        bail!("--batch fits in one process: run it without mpirun");
    }
    if args.options.plot.is_some() {
        bail!("--batch draws no plot: fit one group alone to plot it");
    }
    if !matches!(args.method, MethodArg::Lm | MethodArg::Trf) {
        bail!("--batch fits by Levenberg–Marquardt: --method lm, or trf");
    }
    let model = find_model(&args.model)?;
    let k = args.x.len();
    let p = args.params.unwrap_or_else(|| model.params_for(k));
    let mut names: Vec<&str> = args.x.iter().map(String::as_str).collect();
    names.push(&args.y);
    names.extend(args.sigma.as_deref());
    names.push(column);
    let shown = args.data.display();
    let mut columns = read_columns(&args.data, &names)?.into_iter();
    let x: Vec<Vec<f64>> = columns.by_ref().take(k).collect();
    let y = columns.next().context("the y column was not read")?;
    let sigma = args.sigma.as_ref().and_then(|_| columns.next());
    let ids = columns.next().context("the batch column was not read")?;
    let groups = groups(&ids).map_err(|e| anyhow!("{shown}: {e}"))?;
    let offsets: Vec<usize> = [0]
        .into_iter()
        .chain(groups.iter().scan(0, |end, (_, rows)| {
            *end += rows.len();
            Some(*end)
        }))
        .collect();
    let gather = |values: &[f64]| -> Vec<f64> {
        (groups.iter())
            .flat_map(|(_, rows)| rows.iter().map(|&r| values[r]))
            .collect()
    };
    let x: Vec<Vec<f64>> = x.iter().map(|c| gather(c)).collect();
    let shared = shared_predictors(&x, &offsets);
    let (x, points): (Vec<&[f64]>, _) = match &shared {
        Some(m) => (x.iter().map(|c| &c[..*m]).collect(), Points::Each(*m)),
        None => (
            x.iter().map(Vec::as_slice).collect(),
            Points::Ragged(&offsets),
        ),
    };
    let (y, sigma) = (gather(&y), sigma.map(|s| gather(&s)));
    let p0 = match &args.p0 {
        Some(Numbers(values)) => values.clone(),
        None => vec![1.0; p],
    };
    let names = (0..p).map(|j| model.parameter_name(j)).collect();
    let options = MethodArgs {
        variable_names: model.parameter_names(p),
        ..args.options.clone()
    };
    let (p0, fixed) = options.held_start(&p0)?;
    let lm = options.lm_options(args.method, fixed, p)?;
    let (backend, backend_reason) = cudamin::backend(args.backend.into())?;
    let batch = Batch {
        x: &x,
        y: &y,
        sigma: sigma.as_deref(),
        points,
        p0: &p0,
        precision: args.dtype.unwrap_or_default().into(),
        estimator: args.estimator.unwrap_or_default().into(),
    };
    let fit = |batch| {
        fit_batch_on(&backend, model, p, batch, &lm, args.absolute_sigma)
            .map_err(|e| anyhow!("{shown}: {e}"))
    };
    let dtype = args.dtype.unwrap_or_default().name();
    if args.cost {
        // The kernel's table: the predictors, y and the weights (1/σ, or ones).
        let data_bytes = (k + 2) * y.len() * size_of::<f64>();
        let sizes = (groups.len(), data_bytes);
        return super::cost::batch(&backend, (model.name, dtype), sizes, args.json, || {
            fit(batch).map(drop)
        });
    }
    let start = Instant::now();
    let result = fit(batch)?;
    let report = BatchReport {
        data: shown.to_string(),
        model: model.name,
        batch: column,
        fits: groups.len(),
        rows: y.len(),
        params: p,
        names,
        estimator: args.estimator.unwrap_or_default().name(),
        dtype,
        backend: backend.name(),
        backend_reason: &backend_reason,
        successes: result.status.iter().filter(|&&s| s > 0).count(),
        elapsed_s: start.elapsed().as_secs_f64(),
        results: lines(&groups, &result, p),
    };
    if args.json {
        return print_json(&report);
    }
    print_csv(&report)
}

/// Each fit's line, in the groups' order.
fn lines<'a>(groups: &[(f64, Vec<usize>)], result: &'a BatchResult, p: usize) -> Vec<FitLine<'a>> {
    (groups.iter().enumerate())
        .map(|(f, (id, rows))| FitLine {
            id: *id,
            points: rows.len(),
            status: result.status[f],
            success: result.status[f] > 0,
            message: &result.message[f],
            nfev: result.nfev[f],
            cost: result.cost[f],
            x: &result.popt[f * p..(f + 1) * p],
            stderr: (0..p)
                .map(|j| result.pcov[f * p * p + j * (p + 1)].sqrt())
                .collect(),
        })
        .collect()
}

/// The fits as CSV on stdout, a line each; what ran, on stderr.
fn print_csv(report: &BatchReport<'_>) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let errors = report.names.iter().map(|name| format!("{name}_stderr"));
    let header: Vec<String> = ["id", "points", "status", "nfev", "cost"]
        .into_iter()
        .map(str::to_owned)
        .chain(report.names.iter().cloned())
        .chain(errors)
        .collect();
    writeln!(out, "{}", header.join(","))?;
    for line in &report.results {
        let values = line.x.iter().chain(&line.stderr).map(f64::to_string);
        let head = [line.id, line.points as f64, f64::from(line.status)].map(|v| v.to_string());
        let head = head
            .into_iter()
            .chain([line.nfev.to_string(), line.cost.to_string()]);
        writeln!(out, "{}", head.chain(values).collect::<Vec<_>>().join(","))?;
    }
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "{} on {} groups of {} rows in all, by {} ({}, {}): {} succeeded in {:.3} s on {}",
        report.model,
        report.fits,
        report.rows,
        report.batch,
        report.estimator,
        report.dtype,
        report.successes,
        report.elapsed_s,
        report.backend
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::shared_predictors;

    /// Groups share their predictors only where every group has the same rows, in the same
    /// order, bit for bit.
    #[test]
    fn predictors_are_shared_only_where_every_group_has_the_same() {
        let grid = [0.0, 1.0, 2.0];
        let offsets = [0, 3, 6];
        let twice = |second: [f64; 3]| vec![[grid, second].concat()];
        assert_eq!(shared_predictors(&twice(grid), &offsets), Some(3));
        assert_eq!(shared_predictors(&twice([2.0, 1.0, 0.0]), &offsets), None);
        assert_eq!(shared_predictors(&twice([0.0, 1.0, 2.5]), &offsets), None);
        assert_eq!(shared_predictors(&twice([-0.0, 1.0, 2.0]), &offsets), None);
        assert_eq!(shared_predictors(&twice(grid), &[0, 2, 6]), None);
        assert_eq!(shared_predictors(&twice(grid), &[0]), None);
        // Two columns: the second differs in the second group.
        let x = vec![[grid, grid].concat(), vec![5.0, 5.0, 5.0, 5.0, 5.0, 6.0]];
        assert_eq!(shared_predictors(&x, &offsets), None);
    }
}
