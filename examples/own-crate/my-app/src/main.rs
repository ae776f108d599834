//! Two fits of your own models, each checked:
//! - a robust line through 200 000 noisy points, one in fifty an outlier, minimized by BFGS on
//!   the GPU when there is one (`--features cuda`) and on every CPU core otherwise;
//! - the same line from 40 points with a prior on its slope beside them: an objective of two
//!   terms, your data term plus cudamin's `L2Penalty`, on the same backend;
//! - enzyme rates (Michaelis–Menten) by Levenberg–Marquardt, with standard errors as
//!   `scipy.optimize.curve_fit` reports them.

use cudamin::kernels::{L2Penalty, SumOfSquares};
use cudamin::{
    Backend, Gradient, LmOptions, Method, Options, TermObjective, TermProblem, least_squares,
    minimize,
};
use my_kernels::{MichaelisMenten, RobustLine};
use std::process::ExitCode;

// `PTX: Result<&str, &str>`: my-kernels as PTX (built by build.rs), or why it was not built.
cudamin::include_ptx!("my_kernels");

/// The line the data are drawn around: `a`, `b`.
const TRUE_LINE: [f64; 2] = [1.5, 0.5];

/// The rate curve the enzyme data are drawn around: `V`, `K`.
const TRUE_RATES: [f64; 2] = [2.5, 1.2];

fn main() -> ExitCode {
    match fit_line()
        .and_then(|()| fit_line_with_prior())
        .and_then(|()| fit_rates())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn fit_line() -> Result<(), Box<dyn std::error::Error>> {
    // The GPU if the PTX was built and a device answers, else the CPU; `why` says which.
    let (backend, why) = Backend::auto(PTX)?;
    println!("backend  {} ({why})", backend.name());

    let points = 200_000;
    let problem = TermProblem::<RobustLine>::with_data(2, line_data(points), points)?;
    // Exact derivatives of RobustLine's own `eval`; `Gradient::Central` would difference it.
    let mut objective = TermObjective::new(backend.load(problem)?, Gradient::Exact);
    let (x0, options) = ([0.0, 0.0], Options::default());
    let result = minimize(&mut objective, &x0, Method::Bfgs, &options)?;

    println!("status   {}: {}", result.status.code(), result.message);
    println!(
        "a, b     {:.6}, {:.6} (drawn around {}, {})",
        result.x[0], result.x[1], TRUE_LINE[0], TRUE_LINE[1]
    );
    println!(
        "nit      {}, nfev {}, njev {}",
        result.nit, result.nfev, result.njev
    );
    let off = (result.x[0] - TRUE_LINE[0])
        .abs()
        .max((result.x[1] - TRUE_LINE[1]).abs());
    if !result.success || off > 0.01 {
        return Err(format!("the fit is {off:.2e} off the drawn line").into());
    }
    Ok(())
}

/// The slope's prior: `b ~ N(0.5, 0.05²)`; the intercept has none.
const SLOPE_PRIOR: (f64, f64) = (0.5, 0.05);

fn fit_line_with_prior() -> Result<(), Box<dyn std::error::Error>> {
    let (backend, _) = Backend::auto(PTX)?;
    let points = 40;
    let data = TermProblem::<RobustLine>::with_data(2, line_data(points), points)?;
    // ½·w·(x − c)² per parameter: columns w (0 for a, 1/σ² for b), then c.
    let (mean, sigma) = SLOPE_PRIOR;
    let prior = TermProblem::<L2Penalty>::with_data(2, vec![0.0, sigma.powi(-2), 0.0, mean], 2)?;
    // One objective of both terms: each keeps its own window and data.
    let mut objective = TermObjective::new(backend.load_sum(data.plus(prior)?)?, Gradient::Exact);
    let result = minimize(
        &mut objective,
        &[0.0, 0.0],
        Method::Bfgs,
        &Options::default(),
    )?;

    println!("status   {}: {}", result.status.code(), result.message);
    println!(
        "a, b     {:.6}, {:.6} (40 points and a prior b ~ N({mean}, {sigma}²))",
        result.x[0], result.x[1]
    );
    let off = (result.x[0] - TRUE_LINE[0])
        .abs()
        .max((result.x[1] - TRUE_LINE[1]).abs());
    if !result.success || off > 0.2 {
        return Err(format!("the fit with a prior is {off:.2e} off the drawn line").into());
    }
    Ok(())
}

fn fit_rates() -> Result<(), Box<dyn std::error::Error>> {
    let points = 5_000;
    let problem =
        TermProblem::<SumOfSquares<MichaelisMenten>>::with_data(2, rate_data(points), points)?;
    // Levenberg–Marquardt reads the residual rows folded into J's triangle, a pass that runs on
    // the CPU.
    let evaluator = Backend::Cpu.load_least_squares(problem)?;
    let mut objective = TermObjective::new(evaluator, Gradient::Exact);
    let result = least_squares(&mut objective, &[1.0, 1.0], &LmOptions::default())?;
    // curve_fit's pcov: (JᵀJ)⁻¹ = R⁻¹R⁻ᵀ, scaled by the reduced χ².
    let stderr = result
        .covariance(false)
        .ok_or("the covariance cannot be estimated")?
        .standard_errors();
    println!("status   {}: {}", result.status.code(), result.message);
    println!(
        "V, K     {:.5} ± {:.5}, {:.5} ± {:.5} (drawn around {}, {})",
        result.x[0], stderr[0], result.x[1], stderr[1], TRUE_RATES[0], TRUE_RATES[1]
    );
    // The noise is uniform, ±0.05: the fit lands within a few standard errors of the truth.
    let within = (0..2).all(|i| (result.x[i] - TRUE_RATES[i]).abs() <= 5.0 * stderr[i]);
    if !result.success || !within {
        return Err("the rate fit is not within 5 standard errors of the drawn curve".into());
    }
    Ok(())
}

/// A fixed-seed uniform generator on [0, 1) (xorshift64): the same data every run.
fn uniforms(mut state: u64) -> impl FnMut() -> f64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Substrate `s` uniform on [0.1, 10), rates on the curve plus uniform noise of ±0.05, as
/// columns `s`, `v` and the weights `w`.
fn rate_data(points: usize) -> Vec<f64> {
    let mut uniform = uniforms(0x9e37_79b9_7f4a_7c15);
    let [v_max, k] = TRUE_RATES;
    // Every point weighs 1: the third column, w = 1/σ, is all ones.
    let mut columns = vec![1.0; 3 * points];
    for j in 0..points {
        let s = 0.1 + 9.9 * uniform();
        columns[j] = s;
        columns[points + j] = v_max * s / (k + s) + 0.1 * (uniform() - 0.5);
    }
    columns
}

/// `t` uniform on [0, 10); `y` on the line plus uniform noise of ±0.1, and every fiftieth point
/// 5 to 15 above or below it. Column-major, as `TermProblem` takes data: all `t`, then all `y`.
fn line_data(points: usize) -> Vec<f64> {
    let mut uniform = uniforms(0x2545_f491_4f6c_dd1d);
    let mut columns = vec![0.0; 2 * points];
    for j in 0..points {
        let t = 10.0 * uniform();
        let noise = 0.2 * (uniform() - 0.5);
        let outlier = if j % 50 == 0 {
            let size = 5.0 + 10.0 * uniform();
            if uniform() < 0.5 { size } else { -size }
        } else {
            0.0
        };
        columns[j] = t;
        columns[points + j] = TRUE_LINE[0] + TRUE_LINE[1] * t + noise + outlier;
    }
    columns
}
