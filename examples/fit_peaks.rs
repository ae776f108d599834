//! The seeds' data fits: a model's parameters against a large dataset, with `curve_fit`:
//!
//! ```python
//! d = np.load("peaks.npz")
//! popt, pcov = scipy.optimize.curve_fit(two_peaks, d["x"], d["y"], p0=p0, sigma=d["s"])
//! perr = np.sqrt(np.diag(pcov))
//! ```
//!
//! Here the same file is read by `cudamin::data` and fitted with the built-in `gauss-peaks`
//! model (a baseline and two Gaussians, 7 parameters) by Levenberg–Marquardt, which reads the
//! data once per Jacobian and never stores the `points × 7` Jacobian. The example writes the
//! file first (a million noisy points, as numpy would have saved them), then checks that every
//! parameter lands within 5 standard errors of the values that generated the data.
//! `cudamin fit peaks.npz --model gauss-peaks --params 7 --sigma s --p0 ...` does the same.
//!
//! `cargo run --release --example fit_peaks [points]`

use cudamin::data::read_columns;
use cudamin::problems::fit::{FitData, find_model};
use cudamin::problems::random::SplitMix64;
use cudamin::{BackendChoice, Gradient, TermObjective};
use cudamin::{LmOptions, least_squares};
use ndarray_npy::NpzWriter;
use std::path::Path;
use std::process::ExitCode;

mod common;

/// Baseline, then (height, center, width) of each peak.
const TRUTH: [f64; 7] = [0.5, 2.0, 3.0, 0.4, 1.2, 6.0, 0.9];
/// Where the fit starts: near the peaks, as a user reads them off a plot.
const P0: [f64; 7] = [0.3, 1.5, 2.8, 0.6, 1.0, 6.5, 0.7];

fn main() -> ExitCode {
    common::report(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let points = common::size_argument(1_000_000)?;
    let path = std::env::temp_dir().join("cudamin-example-peaks.npz");
    write_peaks(&path, points)?;
    let mut columns = read_columns(&path, &["x", "y", "s"])?.into_iter();
    let (x, y, s) = (columns.next(), columns.next(), columns.next());
    let data = FitData {
        x: x.ok_or("no x")?,
        y: y.ok_or("no y")?,
        sigma: s,
    };
    std::fs::remove_file(&path)?;

    let (backend, why) = cudamin::backend(BackendChoice::Auto)?;
    println!("backend   {} ({why})", backend.name());
    let model = find_model("gauss-peaks")?;
    let instance = model.instantiate(&backend, Some(7), &data, Some(P0.to_vec()))?;
    let residuals = instance.evaluator.into_least_squares();
    let residuals = residuals.expect("a fit model is a sum of squares");
    let mut objective = TermObjective::new(residuals, Gradient::Exact);
    let result = least_squares(&mut objective, &instance.x0, &LmOptions::default())?;
    // σ are the true noise levels here: curve_fit's absolute_sigma=True.
    let stderrs = result
        .covariance(true)
        .ok_or("the covariance cannot be estimated")?
        .standard_errors();
    println!("status    {}: {}", result.status.code(), result.message);
    println!(
        "points    {points}; nit {}, nfev {}, njev {}; χ²/dof {:.4}",
        result.nit,
        result.nfev,
        result.njev,
        2.0 * result.cost / (points - 7) as f64
    );
    let mut worst: f64 = 0.0;
    for (i, (value, truth)) in result.x.iter().zip(TRUTH).enumerate() {
        let stderr = stderrs[i];
        let name = model.parameter_name(i);
        println!("{name:<9} {value:>12.6} ± {stderr:.2e} (generated with {truth})");
        worst = worst.max((value - truth).abs() / stderr);
    }
    if !result.success || worst > 5.0 {
        return Err(format!("a parameter is {worst:.1} standard errors from the truth").into());
    }
    Ok(())
}

/// `points` samples of the two peaks on [0, 10) with Gaussian noise of 0.05 to 0.15, saved as
/// `np.savez(path, x=x, y=y, s=s)` would.
fn write_peaks(path: &Path, points: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = SplitMix64::new(7);
    let [c, a0, m0, s0, a1, m1, s1] = TRUTH;
    let peak = |x: f64, a: f64, m: f64, s: f64| a * (-0.5 * ((x - m) / s).powi(2)).exp();
    let x: Vec<f64> = (0..points)
        .map(|i| 10.0 * i as f64 / points as f64)
        .collect();
    let s: Vec<f64> = (0..points).map(|_| 0.05 + 0.1 * rng.uniform()).collect();
    let y: Vec<f64> = x
        .iter()
        .zip(&s)
        .map(|(&x, s)| c + peak(x, a0, m0, s0) + peak(x, a1, m1, s1) + s * rng.normal())
        .collect();
    let mut archive = NpzWriter::new(std::fs::File::create(path)?);
    for (name, column) in [("x", x), ("y", y), ("s", s)] {
        archive.add_array(name, &ndarray::Array1::from(column))?;
    }
    archive.finish()?;
    Ok(())
}
