//! Many small fits at once: one model fitted to each of `F` data sets of `M` points (or of
//! their own counts, [`Points::Ragged`]), each from its own start, as a loop of `curve_fit`
//! calls would, but all at once: on every CPU core, or on the GPU in the model's batch kernel.
//! A fit that fails (NaN in its data, a singular Jacobian) fails alone, with its own status.
//! The fits run in `f64`, or in single precision where the batch asks ([`Precision`]); by
//! least squares, or for counts by Poisson maximum likelihood ([`Estimator`]).

use super::fit::{Columns, FitError, Model};
use cudamin_host::{Backend, Gradient, LmOptions, TermObjective, least_squares};
use gpu_kernels::DataType;
use gpu_kernels::lm::batch::PARAMS_MAX;
use rayon::prelude::*;
use std::borrow::Cow;
use std::ops::Range;

mod kernel;
pub use kernel::BLOCK_MIN_POINTS;

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
    /// Each fit's message: its status's, or why it could not run.
    pub message: Vec<Cow<'static, str>>,
    /// Each fit's residual evaluations.
    pub nfev: Vec<usize>,
    /// Each fit's `½ Σ r²` at its parameters, scipy's `cost` (`χ²/2` with `σ`).
    pub cost: Vec<f64>,
}

impl BatchResult {
    /// Room for `fits` fits of `p` parameters.
    fn sized(fits: usize, p: usize) -> BatchResult {
        BatchResult {
            popt: vec![0.0; fits * p],
            pcov: vec![0.0; fits * p * p],
            status: vec![0; fits],
            message: vec![Cow::Borrowed(""); fits],
            nfev: vec![0; fits],
            cost: vec![0.0; fits],
        }
    }

    /// Each fit's place in the results, in order, in parallel.
    fn slots(&mut self, p: usize) -> impl IndexedParallelIterator<Item = Slot<'_>> {
        let values = self
            .popt
            .par_chunks_mut(p)
            .zip(self.pcov.par_chunks_mut(p * p));
        let counts = self.status.par_iter_mut().zip(self.message.par_iter_mut());
        let sums = self.nfev.par_iter_mut().zip(self.cost.par_iter_mut());
        (values.zip(counts).zip(sums)).map(|(((popt, pcov), (status, message)), (nfev, cost))| {
            Slot {
                popt,
                pcov,
                status,
                message,
                nfev,
                cost,
            }
        })
    }
}

/// One fit's place in a [`BatchResult`].
struct Slot<'a> {
    popt: &'a mut [f64],
    pcov: &'a mut [f64],
    status: &'a mut i32,
    message: &'a mut Cow<'static, str>,
    nfev: &'a mut usize,
    cost: &'a mut f64,
}

impl Slot<'_> {
    /// A fit that could not run, for `reason`.
    fn fail(self, reason: Cow<'static, str>) {
        self.popt.fill(f64::NAN);
        self.pcov.fill(f64::INFINITY);
        *self.status = -1;
        *self.message = reason;
        *self.nfev = 0;
        *self.cost = f64::NAN;
    }
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
    if p == 0 {
        return Err(FitError::Params {
            model: model.name,
            params: 0,
            reason: Cow::Borrowed("a fit has at least one parameter"),
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
    let mut result = BatchResult::sized(fits, p);
    let on_kernel = plain
        && kernel::batched(
            backend,
            model,
            &view,
            options,
            (absolute_sigma, &mut result),
        )?;
    match (on_kernel, batch.precision) {
        (true, _) => {}
        (false, _) if poisson => return Err(refuse("are not offered for this model")),
        (false, Precision::F64) => {
            one_by_one(model, &view, options, absolute_sigma, &mut result)?;
        }
        (false, Precision::F32) => return Err(FitError::SinglePrecision { model: model.name }),
    }
    Ok(result)
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

/// Every fit as `least_squares` runs it, one per task, into `result`. A parameter count the
/// model does not take is the caller's error, not one fit's.
fn one_by_one(
    model: &Model,
    view: &FitView<'_>,
    options: &LmOptions,
    absolute_sigma: bool,
    result: &mut BatchResult,
) -> Result<(), FitError> {
    result.slots(view.p).enumerate().try_for_each(|(f, slot)| {
        let mut x = Vec::new();
        let columns = view.columns(f, &mut x);
        let outcome = fit_one(
            model,
            view.p,
            columns,
            view.start(f),
            options,
            absolute_sigma,
        )?;
        slot.popt.copy_from_slice(&outcome.popt);
        slot.pcov.copy_from_slice(&outcome.pcov);
        *slot.status = outcome.status;
        *slot.message = Cow::Owned(outcome.message);
        *slot.nfev = outcome.nfev;
        *slot.cost = outcome.cost;
        Ok(())
    })
}

/// One fit's outcome on the CPU, one fit per task.
struct Outcome {
    popt: Vec<f64>,
    pcov: Vec<f64>,
    status: i32,
    message: String,
    nfev: usize,
    cost: f64,
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
