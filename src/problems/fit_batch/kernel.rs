//! A batch's fits on the model's batch kernel, every fit at once: the columns go to the backend
//! as the user holds them, each fit's table is made where the kernel runs, and each fit's
//! report is read into the results in place, in parallel. A fit whose data or start cannot run
//! is named before the launch; it runs anyway, and its reason replaces what it gave.

use super::{BatchResult, Estimator, FitView, Precision, Slot};
use crate::problems::fit::{FitError, Model, check_determined};
use crate::problems::problem::LoadError;
use cudamin_host::{
    Backend, BatchColumns, LaunchConfig, LmOptions, LmStatus, RawArg, SolveError, covariance_in,
    spread_in,
};
use gpu_kernels::Data;
use gpu_kernels::lm::batch::{BLOCK_THREADS, Failure, PARAMS_MAX, REPORT, out_stride};
use gpu_kernels::raw::RawKernel;
use rayon::prelude::*;
use std::borrow::Cow;

/// The fewest points of a batch's largest fit that make a GPU run one fit per block rather than
/// per thread: a block's 64 threads then take four rows each or more.
pub const BLOCK_MIN_POINTS: usize = 4 * BLOCK_THREADS;

/// Every fit of `view` on the model's batch kernel, on `backend`, into `result`; `false`
/// where the model has none.
pub(super) fn batched(
    backend: &Backend,
    model: &Model,
    view: &FitView<'_>,
    options: &LmOptions,
    (absolute_sigma, result): (bool, &mut BatchResult),
) -> Result<bool, FitError> {
    let (p, fits) = (view.p, view.fits);
    let Some(largest) = (0..fits).map(|f| view.range(f).len()).max() else {
        return Ok(true);
    };
    let k = view.batch.x.len();
    let poisson = view.batch.estimator == Estimator::Poisson;
    // The model's check, on the shape of the largest fit's table.
    let Some(kernel) = model.batch_kernel(p, Data::shape(largest, k + 2), poisson)? else {
        return Ok(false);
    };
    let held = view.fixed.iter().filter(|&&h| h).count();
    // The fits that cannot run, in order, with why: few or none, so kept apart from the rest.
    let refused: Vec<(usize, String)> = (0..fits)
        .into_par_iter()
        .filter_map(|f| Some(f).zip(refusal(view, f, held, poisson)))
        .collect();
    let offsets: Vec<f64> = (0..fits)
        .map(|f| view.range(f).start as f64)
        .chain([view.batch.y.len() as f64])
        .collect();
    let x = predictors(view);
    let columns = BatchColumns {
        x: &x,
        predictors: k,
        y: view.batch.y,
        sigma: view.batch.sigma.unwrap_or(&[]),
        offsets: &offsets,
    };
    let stride = out_stride(p);
    let mut out = vec![0.0; fits * stride];
    let single = view.batch.precision == Precision::F32;
    launch(
        backend,
        (kernel, largest),
        (columns, view.batch.p0, &mut out),
        &view.fixed,
        options,
        single,
    )?;
    // A count's variance is its mean: the Fisher information's inverse is the covariance.
    let absolute_sigma = absolute_sigma || poisson;
    let free = Free::of(&view.fixed);
    let reports = result.slots(p).zip(out.par_chunks(stride)).enumerate();
    reports.for_each(
        |(f, (slot, own))| match refused.binary_search_by_key(&f, |(g, _)| *g) {
            Ok(at) => slot.fail(Cow::Owned(refused[at].1.clone())),
            Err(_) => read(own, view.range(f).len(), &free, absolute_sigma, slot),
        },
    );
    Ok(true)
}

/// The batch's predictors end to end, as the tables' kernel reads them: as given where all
/// are shared or all a value per point; else each shared one repeated for every fit, so that
/// all are a value per point.
fn predictors(view: &FitView<'_>) -> Vec<f64> {
    let x = view.batch.x;
    let total = view.batch.y.len();
    if x.iter().all(|c| c.len() == x[0].len()) {
        return x.concat();
    }
    let whole = |c: &&[f64]| match c.len() == total {
        true => c.to_vec(),
        false => c.repeat(view.fits),
    };
    x.iter().flat_map(whole).collect()
}

/// Why fit `f` cannot run, if it cannot: negative counts, fewer points than free parameters,
/// a `σ` that is not positive and finite, a start that is not finite; `held` parameters
/// are fixed.
fn refusal(view: &FitView<'_>, f: usize, held: usize, poisson: bool) -> Option<String> {
    let rows = view.range(f);
    let y = &view.batch.y[rows.clone()];
    if poisson && let Some((index, y)) = y.iter().enumerate().find(|(_, y)| **y < 0.0) {
        return Some(format!("a poisson fit takes counts: y at {index} is {y}"));
    }
    if let Err(error) = check_determined(rows.len(), view.p, held) {
        return Some(error.to_string());
    }
    if let Some(sigma) = view.batch.sigma {
        let bad = (sigma[rows].iter().enumerate()).find(|(_, s)| !(**s > 0.0 && s.is_finite()));
        if let Some((index, &value)) = bad {
            return Some(FitError::Sigma { index, value }.to_string());
        }
    }
    let bad = view
        .start(f)
        .iter()
        .enumerate()
        .find(|(_, v)| !v.is_finite());
    bad.map(|(index, &value)| SolveError::NonFiniteX0 { index, value }.to_string())
}

/// Launches `kernel` over every fit of `p = fixed.len()` parameters, those `fixed` marks held,
/// `largest` the most points of any fit, their columns `columns`, from `starts` (`p` values
/// for every fit, or `F·p`) into `out`, in single precision where `single` says so. On the
/// CPU, one fit per task, as rayon splits them. On a GPU, one fit per thread in blocks of 64
/// (the loop's memory is per thread); or, where a fit has [`BLOCK_MIN_POINTS`] points or more,
/// one fit per block of [`BLOCK_THREADS`], on the kernel's block form.
fn launch(
    backend: &Backend,
    (kernel, largest): (&RawKernel, usize),
    (columns, starts, out): (BatchColumns<'_>, &[f64], &mut [f64]),
    fixed: &[bool],
    options: &LmOptions,
    single: bool,
) -> Result<(), FitError> {
    let p = fixed.len();
    let fixed = (fixed.iter().enumerate()).fold(0u64, |bits, (j, &h)| bits | u64::from(h) << j);
    let fits = columns.offsets.len().saturating_sub(1);
    let on_gpu = !matches!(backend, Backend::Cpu);
    let (kernel, config) = match kernel.block {
        Some(block) if on_gpu && largest >= BLOCK_MIN_POINTS => (block, per_block(fits)),
        _ => (kernel, per_thread(fits)),
    };
    let max_nfev = options.max_nfev.unwrap_or(p.saturating_mul(100));
    let mut args = [
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
    (backend.launch_batch(kernel, config, columns, &mut args)).map_err(LoadError::from)?;
    Ok(())
}

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

/// The free parameters of a batch's fits: the first `k` of `index`, of `p` in all.
struct Free {
    index: [usize; PARAMS_MAX],
    k: usize,
    p: usize,
}

impl Free {
    /// The parameters `fixed` does not hold.
    fn of(fixed: &[bool]) -> Self {
        let (mut index, mut k) = ([0; PARAMS_MAX], 0);
        for j in (0..fixed.len()).filter(|&j| !fixed[j]).take(PARAMS_MAX) {
            index[k] = j;
            k += 1;
        }
        Self {
            index,
            k,
            p: fixed.len(),
        }
    }
}

/// One fit's results from what its thread wrote ([`out_stride`] values), its parameters
/// `free` or held: its covariance is the free parameters', 0 in the held ones' rows and
/// columns.
fn read(own: &[f64], points: usize, free: &Free, absolute_sigma: bool, slot: Slot<'_>) {
    let (p, k, free) = (free.p, free.k, &free.index[..free.k]);
    let (x, rest) = own.split_at(p);
    let (report, r) = rest.split_at(REPORT);
    let code = report[0] as i32;
    let Some(&status) = LmStatus::ALL.iter().find(|s| s.code() == code) else {
        let failure = Failure::of_code(code).unwrap_or(Failure::Shape);
        return slot.fail(Cow::Owned(failure_message(failure)));
    };
    // A run evaluates its start at least: a report of no evaluations is one never written.
    if report[1] < 1.0 {
        return slot.fail(Cow::Borrowed("the batch kernel did not run this fit"));
    }
    let sum_of_squares = report[4];
    // The kernel's `R` is the free parameters' triangle, `k × k`: their covariance, spread
    // among all `p`, held rows and columns 0. On the stack: nothing allocated a fit.
    let mut triangle = [0.0; PARAMS_MAX * PARAMS_MAX];
    let mut packed = r.iter();
    for i in 0..k {
        for (entry, &value) in triangle[i * k + i..(i + 1) * k].iter_mut().zip(&mut packed) {
            *entry = value;
        }
    }
    let [mut inverse, mut matrix] = [[0.0; PARAMS_MAX * PARAMS_MAX]; 2];
    let fit = (sum_of_squares, points, absolute_sigma);
    let (inverse, matrix) = (&mut inverse[..k * k], &mut matrix[..k * k]);
    match covariance_in(&triangle[..k * k], fit, inverse, matrix) {
        Some(_) => spread_in(matrix, free, slot.pcov),
        None => slot.pcov.fill(f64::INFINITY),
    }
    slot.popt.copy_from_slice(x);
    *slot.status = status.code();
    *slot.message = Cow::Borrowed(status.message());
    *slot.nfev = report[1] as usize;
    *slot.cost = 0.5 * sum_of_squares;
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
