//! Many small fits at once: one model fitted to each of `F` data sets of `M` points (or of
//! their own counts, [`Points::Ragged`]), each from its own start, as a loop of `curve_fit`
//! calls would, but all at once: on every CPU core, or on the GPU in the model's batch kernel.
//! A fit that fails (NaN in its data, a singular Jacobian) fails alone, with its own status.
//! The fits run in `f64`, or in single precision where the batch asks ([`Precision`]); by
//! least squares, or for counts by Poisson maximum likelihood ([`Estimator`]).

use super::fit::{Columns, FitError, Model, check_determined};
use super::problem::LoadError;
use cudamin_host::{
    Backend, Factor, Gradient, LaunchConfig, LmOptions, LmStatus, RawArg, SolveError,
    TermObjective, covariance, least_squares,
};
use gpu_kernels::lm::batch::{BLOCK_THREADS, Failure, PARAMS_MAX, REPORT, out_stride};
use gpu_kernels::raw::RawKernel;
use gpu_kernels::{Data, DataType};
use rayon::prelude::*;
use std::ops::Range;

/// The data of `F` fits, their `N` points one fit after another.
#[derive(Clone, Copy, Debug)]
pub struct Batch<'a> {
    /// The predictors, one column each: a value per point (`N`), or with [`Points::Each`]`(M)`,
    /// `M` values that every fit shares.
    pub x: &'a [&'a [f64]],
    /// The observations, `N`, fit by fit.
    pub y: &'a [f64],
    /// One `σ > 0` per observation, `N`; `None` weighs every point 1.
    pub sigma: Option<&'a [f64]>,
    /// Which points each fit has.
    pub points: Points<'a>,
    /// The starts: `p` values for every fit, or `F·p`, fit by fit.
    pub p0: &'a [f64],
    /// The precision the fits compute in.
    pub precision: Precision,
    /// What the fits minimize.
    pub estimator: Estimator,
}

/// Which of a batch's points each fit has.
#[derive(Clone, Copy, Debug)]
pub enum Points<'a> {
    /// `M` each: fit `f`'s are `f·M .. (f + 1)·M`.
    Each(usize),
    /// As many as the offsets say: fit `f`'s are `offsets[f] .. offsets[f + 1]`, `F + 1`
    /// offsets rising from 0 to `N`.
    Ragged(&'a [usize]),
}

/// What each fit of a batch minimizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Estimator {
    /// Weighted least squares, `Σ ((y − m)/σ)²`: `curve_fit`'s.
    #[default]
    LeastSquares,
    /// Poisson maximum likelihood for counts `y ≥ 0` (Gpufit's MLE): the deviance
    /// `2·Σ (m − y − y·ln(m/y))`, by Levenberg–Marquardt over its residuals
    /// ([`gpu_kernels::PoissonDeviance`]). No `σ`: a count's variance is its mean, and `pcov` is
    /// the inverse of the Fisher information `JᵀJ` estimates, never rescaled. The models with a
    /// Poisson batch kernel take it (gauss-2d, gauss-2d-elliptic, exp-decay, lorentzian), with no
    /// bounds.
    Poisson,
}

/// The precision a batch's fits compute in: the data and the results are `f64` either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// Double: scipy's answers.
    #[default]
    F64,
    /// Single (`float32`, Gpufit's default): twice the speed of `f64` on a data-centre GPU,
    /// 32–64 times on a GeForce or a T4; each answer within a hundredth of its standard error
    /// of the `f64` one (tests/fit_batch.rs). Only fits that run on
    /// the model's batch kernel take it (see [`fit_batch_on`]); tolerances below `f32`'s
    /// epsilon are raised to it.
    F32,
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
    fit_batch_on(&Backend::Cpu, model, p, batch, options, absolute_sigma)
}

/// [`fit_batch`] on `backend`. A plain Levenberg–Marquardt fit (no bound, the linear loss) of
/// at most eight parameters, some perhaps held, runs whole in the model's batch kernel, every
/// fit at once. On a GPU a fit gets one thread, or a block of threads where it has
/// [`BLOCK_MIN_POINTS`] points or more; on the CPU, the same code runs one fit per rayon task.
/// Any other fit runs as `least_squares` runs it, on the CPU, one fit per task, and is refused
/// in single precision ([`FitError::SinglePrecision`]).
pub fn fit_batch_on(
    backend: &Backend,
    model: &Model,
    p: usize,
    batch: Batch<'_>,
    options: &LmOptions,
    absolute_sigma: bool,
) -> Result<BatchResult, FitError> {
    let total = batch.y.len();
    let (fits, each) = match batch.points {
        Points::Each(m) if m == 0 || total % m != 0 => {
            return Err(FitError::Lengths {
                x: m,
                y: total,
                sigma: None,
            });
        }
        Points::Each(m) => (total / m, Some(m)),
        Points::Ragged(offsets) => {
            let rising = offsets.windows(2).all(|w| w[0] <= w[1]);
            if !rising || offsets.first() != Some(&0) || offsets.last() != Some(&total) {
                return Err(FitError::Offsets { points: total });
            }
            (offsets.len() - 1, None)
        }
    };
    let shared = |len: usize| each == Some(len) && batch.x.first().is_some_and(|x| x.len() == len);
    if let Some(bad) = batch
        .x
        .iter()
        .find(|x| x.len() != total && !shared(x.len()))
    {
        return Err(FitError::Lengths {
            x: bad.len(),
            y: total,
            sigma: None,
        });
    }
    if let Some(sigma) = batch.sigma.filter(|s| s.len() != total) {
        return Err(FitError::Lengths {
            x: total,
            y: total,
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
    // Held parameters run on the kernel too: it fits the function of the free ones.
    let unheld = LmOptions {
        fixed: None,
        ..options.clone()
    };
    let valid = options.plain_lm(p).is_ok();
    let plain = p <= PARAMS_MAX && valid && unheld.plain_lm(p).unwrap_or(false);
    let poisson = batch.estimator == Estimator::Poisson;
    let refuse = |reason| FitError::Poisson {
        model: model.name,
        reason,
    };
    if poisson && batch.sigma.is_some() {
        return Err(refuse("take no sigma: a count's variance is its mean"));
    }
    if poisson && !plain {
        return Err(refuse(
            "run on the model's batch kernel: at most 8 parameters, no bounds, the linear loss",
        ));
    }
    let view = FitView {
        batch,
        fits,
        p,
        one_start,
        fixed: (options.fixed.clone()).unwrap_or_else(|| vec![false; p]),
    };
    let on_kernel = match plain {
        true => batched(backend, model, &view, options, absolute_sigma)?,
        false => None,
    };
    let outcomes = match (on_kernel, batch.precision) {
        (Some(outcomes), _) => outcomes,
        (None, _) if poisson => return Err(refuse("are not offered for this model")),
        (None, Precision::F64) => one_by_one(model, &view, options, absolute_sigma)?,
        (None, Precision::F32) => return Err(FitError::SinglePrecision { model: model.name }),
    };
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

/// A fit that could not run, for `reason`.
fn failed(p: usize, reason: String) -> Outcome {
    Outcome {
        popt: vec![f64::NAN; p],
        pcov: vec![f64::INFINITY; p * p],
        status: -1,
        message: reason,
        nfev: 0,
        cost: f64::NAN,
    }
}

/// A batch with its shape worked out: `fits` fits of `p` parameters.
struct FitView<'a> {
    batch: Batch<'a>,
    fits: usize,
    p: usize,
    one_start: bool,
    /// Which parameters every fit holds at its start, `p`.
    fixed: Vec<bool>,
}

impl FitView<'_> {
    /// Fit `f`'s points.
    fn range(&self, f: usize) -> Range<usize> {
        match self.batch.points {
            Points::Each(m) => f * m..(f + 1) * m,
            Points::Ragged(offsets) => offsets[f]..offsets[f + 1],
        }
    }

    /// Fit `f`'s columns.
    fn columns<'c>(&'c self, f: usize, x: &'c mut Vec<&'c [f64]>) -> Columns<'c> {
        let rows = self.range(f);
        let total = self.batch.y.len();
        let own = |x: &&'c [f64]| {
            if x.len() == total {
                &x[rows.clone()]
            } else {
                *x
            }
        };
        x.extend(self.batch.x.iter().map(own));
        Columns {
            x,
            y: &self.batch.y[rows.clone()],
            sigma: self.batch.sigma.map(|s| &s[rows]),
            data_type: DataType::F64,
        }
    }

    /// Fit `f`'s start.
    fn start(&self, f: usize) -> &[f64] {
        match self.one_start {
            true => self.batch.p0,
            false => &self.batch.p0[f * self.p..(f + 1) * self.p],
        }
    }
}

/// Every fit as `least_squares` runs it, one per task. A parameter count the model does not
/// take is the caller's error, not one fit's.
fn one_by_one(
    model: &Model,
    view: &FitView<'_>,
    options: &LmOptions,
    absolute_sigma: bool,
) -> Result<Vec<Outcome>, FitError> {
    (0..view.fits)
        .into_par_iter()
        .map(|f| {
            let mut x = Vec::new();
            let columns = view.columns(f, &mut x);
            fit_one(
                model,
                view.p,
                columns,
                view.start(f),
                options,
                absolute_sigma,
            )
        })
        .collect()
}

/// Every fit at once on the model's batch kernel, on `backend`; `None` where the model has
/// none. A fit whose data or start cannot run fails alone, before the launch.
fn batched(
    backend: &Backend,
    model: &Model,
    view: &FitView<'_>,
    options: &LmOptions,
    absolute_sigma: bool,
) -> Result<Option<Vec<Outcome>>, FitError> {
    let (p, fits) = (view.p, view.fits);
    let Some(largest) = (0..fits).max_by_key(|&f| view.range(f).len()) else {
        return Ok(Some(Vec::new()));
    };
    let cols = view.batch.x.len() + 2;
    let mut data = vec![0.0; cols * view.batch.y.len()];
    let poisson = view.batch.estimator == Estimator::Poisson;
    let mut tables = Vec::with_capacity(fits);
    let mut rest = &mut data[..];
    for f in 0..fits {
        let (own, tail) = rest.split_at_mut(cols * view.range(f).len());
        tables.push(own);
        rest = tail;
    }
    // Each fit's table in the fit layout (the predictors, y, w = 1/σ), and what stops it.
    let refusals: Vec<Option<String>> = (tables.into_par_iter().enumerate())
        .map(|(f, own)| {
            let mut x = Vec::new();
            let columns = view.columns(f, &mut x);
            let negative = (columns.y.iter().enumerate()).find(|(_, y)| poisson && **y < 0.0);
            match negative {
                Some((index, y)) => {
                    Some(format!("a poisson fit takes counts: y at {index} is {y}"))
                }
                None => pack(own, columns, view.start(f), &view.fixed),
            }
        })
        .collect();
    // The model's check, on the largest fit's table.
    let rows = view.range(largest);
    let table = Data::new(&data[cols * rows.start..cols * rows.end], rows.len());
    let Some(kernel) = model.batch_kernel(p, table, poisson)? else {
        return Ok(None);
    };
    let offsets: Vec<f64> = (0..fits)
        .map(|f| view.range(f).start as f64)
        .chain([view.batch.y.len() as f64])
        .collect();
    // A count's variance is its mean: the Fisher information's inverse is the covariance.
    let absolute_sigma = absolute_sigma || poisson;
    let starts: Vec<f64> = (0..fits).flat_map(|f| view.start(f).to_vec()).collect();
    let stride = out_stride(p);
    let mut out = vec![0.0; fits * stride];
    let single = view.batch.precision == Precision::F32;
    launch(
        backend,
        kernel,
        (&data, &offsets),
        &starts,
        &mut out,
        &view.fixed,
        options,
        single,
    )?;
    let outcomes = (out.par_chunks(stride).zip(refusals).enumerate())
        .map(|(f, (own, refusal))| match refusal {
            Some(reason) => failed(p, reason),
            None => outcome(own, view.range(f).len(), &view.fixed, absolute_sigma),
        })
        .collect();
    Ok(Some(outcomes))
}

/// Packs one fit's columns into `own` in the fit layout; the reason it cannot run, if any,
/// with the parameters `fixed` holds.
fn pack(own: &mut [f64], columns: Columns<'_>, start: &[f64], fixed: &[bool]) -> Option<String> {
    let (p, points) = (start.len(), columns.y.len());
    let held = fixed.iter().filter(|&&h| h).count();
    if let Err(error) = check_determined(points, p, held) {
        return Some(error.to_string());
    }
    let mut chunks = own.chunks_exact_mut(points);
    // The predictors first in the zip: it stops at their end without taking a chunk.
    for (x, to) in columns.x.iter().zip(chunks.by_ref()) {
        to.copy_from_slice(x);
    }
    chunks.next()?.copy_from_slice(columns.y);
    let weights = chunks.next()?;
    match columns.sigma {
        None => weights.fill(1.0),
        Some(sigma) => {
            for (index, (w, &value)) in weights.iter_mut().zip(sigma).enumerate() {
                if !(value > 0.0 && value.is_finite()) {
                    return Some(FitError::Sigma { index, value }.to_string());
                }
                *w = 1.0 / value;
            }
        }
    }
    let bad = start.iter().enumerate().find(|(_, v)| !v.is_finite());
    bad.map(|(index, &value)| SolveError::NonFiniteX0 { index, value }.to_string())
}

/// Launches `kernel` over every fit of `p = fixed.len()` parameters, those `fixed` marks held,
/// their tables in `data` as `offsets` say, in single precision where `single` says so. On the
/// CPU, one fit per task, as rayon splits them. On a GPU, one fit per thread in blocks of 64
/// (the loop's memory is per thread); or, where a fit has [`BLOCK_MIN_POINTS`] points or more,
/// one fit per block of [`BLOCK_THREADS`], on the kernel's block form.
#[allow(clippy::too_many_arguments)]
fn launch(
    backend: &Backend,
    kernel: &RawKernel,
    (data, offsets): (&[f64], &[f64]),
    starts: &[f64],
    out: &mut [f64],
    fixed: &[bool],
    options: &LmOptions,
    single: bool,
) -> Result<(), FitError> {
    let p = fixed.len();
    let fixed = (fixed.iter().enumerate()).fold(0u64, |bits, (j, &h)| bits | u64::from(h) << j);
    let fits = starts.len() / p;
    let most = (offsets.windows(2).map(|w| w[1] - w[0])).fold(0.0, f64::max);
    let on_gpu = !matches!(backend, Backend::Cpu);
    let (kernel, config) = match kernel.block {
        Some(block) if on_gpu && most >= BLOCK_MIN_POINTS as f64 => (block, per_block(fits)),
        _ => (kernel, per_thread(fits)),
    };
    let max_nfev = options.max_nfev.unwrap_or(p.saturating_mul(100));
    let mut args = [
        RawArg::In(data),
        RawArg::In(offsets),
        RawArg::In(starts),
        RawArg::Out(out),
        RawArg::U64(p as u64),
        RawArg::U64(fixed),
        RawArg::F64(options.ftol),
        RawArg::F64(options.xtol),
        RawArg::F64(options.gtol),
        RawArg::F64(options.factor),
        RawArg::U64(max_nfev as u64),
        RawArg::U64(u64::from(single)),
    ];
    (backend.launch_raw(kernel, config, &mut args)).map_err(LoadError::from)?;
    Ok(())
}

/// The fewest points of a batch's largest fit that make a GPU run one fit per block rather than
/// per thread: a block's 64 threads then take four rows each or more.
pub const BLOCK_MIN_POINTS: usize = 4 * BLOCK_THREADS;

/// A launch of one thread per fit, in blocks of 64.
fn per_thread(fits: usize) -> LaunchConfig {
    let threads = 64;
    LaunchConfig {
        blocks: u32::try_from(fits.div_ceil(threads)).unwrap_or(u32::MAX),
        threads: threads as u32,
    }
}

/// A launch of one block of [`BLOCK_THREADS`] per fit; past `u32::MAX` blocks, a block takes
/// several fits in turn.
fn per_block(fits: usize) -> LaunchConfig {
    LaunchConfig {
        blocks: u32::try_from(fits.max(1)).unwrap_or(u32::MAX),
        threads: BLOCK_THREADS as u32,
    }
}

/// One fit's outcome from what its thread wrote ([`out_stride`] values), the parameters
/// `fixed` marks held: its covariance is the free parameters', 0 in the held ones' rows and
/// columns.
fn outcome(own: &[f64], points: usize, fixed: &[bool], absolute_sigma: bool) -> Outcome {
    let p = fixed.len();
    let (x, rest) = own.split_at(p);
    let (report, r) = rest.split_at(REPORT);
    let code = report[0] as i32;
    let Some(&status) = LmStatus::ALL.iter().find(|s| s.code() == code) else {
        let failure = Failure::of_code(code).unwrap_or(Failure::Shape);
        return failed(p, failure_message(failure));
    };
    let sum_of_squares = report[4];
    // The kernel's `R` is the free parameters' triangle, `k × k`: their covariance, spread
    // among all `p`.
    let free: Vec<usize> = (0..p).filter(|&j| !fixed[j]).collect();
    let k = free.len();
    let mut factor = Factor::new(k);
    factor.r.copy_from_slice(&r[..k * k]);
    Outcome {
        popt: x.to_vec(),
        pcov: covariance(&factor, sum_of_squares, points, absolute_sigma)
            .map_or_else(|| vec![f64::INFINITY; p * p], |c| c.spread(&free, p).matrix),
        status: status.code(),
        message: status.message().to_owned(),
        nfev: report[1] as usize,
        cost: 0.5 * sum_of_squares,
    }
}

/// What a small fit's failure says, in `least_squares`' words.
fn failure_message(failure: Failure) -> String {
    match failure {
        Failure::Shape => format!(
            "more than {PARAMS_MAX} parameters, none free, or more free ones than its points"
        ),
        Failure::NonFiniteResiduals => SolveError::NonFiniteResiduals.to_string(),
        Failure::UnderflowingResiduals => {
            "the residuals' squares underflow at the start: rescale the data".to_owned()
        }
        Failure::NonFiniteJacobian { nit } => SolveError::NonFiniteJacobian { nit }.to_string(),
    }
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
    let failed = |message: String| failed(p, message);
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
