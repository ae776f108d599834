//! Many small fits at once: one model fitted to each of `F` data sets of `M` points, each from
//! its own start, as a loop of `curve_fit` calls would, on every CPU core, one fit per task.
//! A fit that fails (NaN in its data, a singular Jacobian) fails alone, with its own status.

use super::fit::{Columns, FitError, Model};
use cudamin_host::{Backend, Gradient, LmOptions, TermObjective, least_squares};
use rayon::prelude::*;

/// The data of `F` fits of `M` points each.
#[derive(Clone, Copy, Debug)]
pub struct Batch<'a> {
    /// The predictors, one column each: `M` values that every fit shares, or `F·M`, fit `f`'s
    /// points at `f·M..(f + 1)·M`.
    pub x: &'a [&'a [f64]],
    /// The observations, `F·M`, fit by fit.
    pub y: &'a [f64],
    /// One `σ > 0` per observation, `F·M`; `None` weighs every point 1.
    pub sigma: Option<&'a [f64]>,
    /// The points of each fit, `M`.
    pub points: usize,
    /// The starts: `p` values for every fit, or `F·p`, fit by fit.
    pub p0: &'a [f64],
}

/// What each fit of a batch gave, fit by fit, as `curve_fit` reports it.
#[derive(Clone, Debug, Default)]
pub struct BatchResult {
    /// The parameters, `F·p`.
    pub popt: Vec<f64>,
    /// Each fit's covariance, `F·p·p`: `curve_fit`'s rule, `inf` where it cannot be estimated.
    pub pcov: Vec<f64>,
    /// Each fit's status: scipy's `least_squares` codes, above 0 a success; −1 where the fit
    /// could not run (its data or start), with the reason in `message`.
    pub status: Vec<i32>,
    /// Each fit's message.
    pub message: Vec<String>,
    /// Each fit's residual evaluations.
    pub nfev: Vec<usize>,
    /// Each fit's `½ Σ r²` at its parameters, scipy's `cost` (`χ²/2` with `σ`).
    pub cost: Vec<f64>,
}

/// One fit's outcome, before the batch gathers them.
struct Outcome {
    popt: Vec<f64>,
    pcov: Vec<f64>,
    status: i32,
    message: String,
    nfev: usize,
    cost: f64,
}

/// Fits `model` with `p` parameters to each data set of `batch` by Levenberg–Marquardt (trf
/// with bounds or a loss, as `options` say), exact Jacobians, on every CPU core; the
/// covariance as `curve_fit`'s, scaled by the reduced χ² unless `absolute_sigma`. A shape that
/// does not fit together is refused before any fit runs.
pub fn fit_batch(
    model: &Model,
    p: usize,
    batch: Batch<'_>,
    options: &LmOptions,
    absolute_sigma: bool,
) -> Result<BatchResult, FitError> {
    let m = batch.points;
    if m == 0 || batch.y.len() % m != 0 {
        return Err(FitError::Lengths {
            x: m,
            y: batch.y.len(),
            sigma: None,
        });
    }
    let fits = batch.y.len() / m;
    let shared = batch.x.first().is_some_and(|x| x.len() == m);
    let per_fit = |len: usize| len == m * fits || (shared && len == m);
    if let Some(bad) = batch.x.iter().find(|x| !per_fit(x.len())) {
        return Err(FitError::Lengths {
            x: bad.len(),
            y: batch.y.len(),
            sigma: None,
        });
    }
    if let Some(sigma) = batch.sigma.filter(|s| s.len() != batch.y.len()) {
        return Err(FitError::Lengths {
            x: m * fits,
            y: batch.y.len(),
            sigma: Some(sigma.len()),
        });
    }
    let one_start = batch.p0.len() == p;
    if !one_start && batch.p0.len() != p * fits {
        return Err(FitError::StartLength {
            got: batch.p0.len(),
            params: p,
        });
    }
    // A parameter count the model does not take is the caller's error, not one fit's.
    let outcomes = (0..fits)
        .into_par_iter()
        .map(|f| {
            let rows = f * m..(f + 1) * m;
            let x: Vec<&[f64]> = (batch.x.iter())
                .map(|x| if x.len() == m { x } else { &x[rows.clone()] })
                .collect();
            let columns = Columns {
                x: &x,
                y: &batch.y[rows.clone()],
                sigma: batch.sigma.map(|s| &s[rows.clone()]),
            };
            let p0 = if one_start {
                batch.p0
            } else {
                &batch.p0[f * p..(f + 1) * p]
            };
            fit_one(model, p, columns, p0, options, absolute_sigma)
        })
        .collect::<Result<Vec<Outcome>, FitError>>()?;
    let mut result = BatchResult::default();
    for outcome in outcomes {
        result.popt.extend(outcome.popt);
        result.pcov.extend(outcome.pcov);
        result.status.push(outcome.status);
        result.message.push(outcome.message);
        result.nfev.push(outcome.nfev);
        result.cost.push(outcome.cost);
    }
    Ok(result)
}

/// One fit of the batch, on this thread: its failure is its outcome, never the batch's, but
/// for a parameter count the model refuses ([`FitError::Params`]), which every fit shares.
fn fit_one(
    model: &Model,
    p: usize,
    columns: Columns<'_>,
    p0: &[f64],
    options: &LmOptions,
    absolute_sigma: bool,
) -> Result<Outcome, FitError> {
    let failed = |message: String| Outcome {
        popt: vec![f64::NAN; p],
        pcov: vec![f64::INFINITY; p * p],
        status: -1,
        message,
        nfev: 0,
        cost: f64::NAN,
    };
    let held = options
        .fixed
        .as_ref()
        .map_or(0, |mask| mask.iter().filter(|&&h| h).count());
    let points = columns.y.len();
    let instance = model.instantiate_columns(
        &Backend::Cpu,
        Some(p),
        columns,
        Some(p0.to_vec()),
        (points, held),
    );
    let (residuals, x0) = match instance.map(|i| (i.evaluator.into_least_squares(), i.x0)) {
        Ok((Some(residuals), x0)) => (residuals, x0),
        Ok((None, _)) => return Ok(failed(format!("{} is not a sum of squares", model.name))),
        Err(error @ FitError::Params { .. }) => return Err(error),
        Err(error) => return Ok(failed(error.to_string())),
    };
    let mut objective = TermObjective::new(residuals, Gradient::Exact);
    Ok(match least_squares(&mut objective, &x0, options) {
        Ok(r) => Outcome {
            pcov: (r.covariance(absolute_sigma))
                .map_or_else(|| vec![f64::INFINITY; p * p], |c| c.matrix),
            status: r.status.code(),
            message: r.message.clone(),
            nfev: r.nfev,
            cost: r.cost,
            popt: r.x,
        },
        Err(error) => failed(error.to_string()),
    })
}
