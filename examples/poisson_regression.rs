//! A generalized linear model, as scikit-learn's `PoissonRegressor` or statsmodels fit it: a
//! Poisson regression with a log link over 32 features and an intercept, with a ridge penalty
//! `½λ‖θ₁…θ₃₂‖²` (`λ = 1`, the intercept unpenalized), minimized by L-BFGS:
//!
//! ```python
//! f = lambda th: np.sum(np.exp(X @ th[1:] + th[0]) - y * (X @ th[1:] + th[0])) + 0.5 * lam * th[1:] @ th[1:]
//! scipy.optimize.minimize(f, np.zeros(33), jac=grad, method="L-BFGS-B")
//! ```
//!
//! The objective is two terms over the same 33 parameters: the built-in `poisson-regression`
//! data term (one per row) plus cudamin's `L2Penalty` (one per parameter), loaded as one sum
//! on the GPU when there is one, else on every CPU core; the data term's gradient is reverse
//! mode (33 variables under an `exp`). The example checks that the fit lands near the
//! parameters that generated the counts. With `--save FILE.npz` it also writes the data
//! (`y`, `X` as rows × 32, `lam`) for the peers' side-by-side run (benches/poisson_peers.py).
//!
//! `cargo run --release --example poisson_regression [points] [--save FILE.npz]`

use cudamin::kernels::L2Penalty;
use cudamin::kernels::terms::PoissonRegression;
use cudamin::problems::{POISSON_LAMBDA, poisson_data, poisson_penalty, poisson_theta_true};
use cudamin::{BackendChoice, Gradient, Method, Options, TermObjective, TermProblem, minimize};
use ndarray::{Array1, ArrayView2};
use ndarray_npy::NpzWriter;
use std::process::ExitCode;
use std::time::Instant;

mod common;

/// An intercept and 32 features.
const PARAMETERS: usize = 33;

fn main() -> ExitCode {
    common::report(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let points = common::size_argument(1_000_000)?;
    let args: Vec<String> = std::env::args().collect();
    let save = args
        .iter()
        .position(|a| a == "--save")
        .map(|i| args.get(i + 1));
    let (values, rows) = poisson_data(PARAMETERS, points)?;
    if let Some(path) = save {
        let path = path.ok_or("--save needs a file name")?;
        let mut archive = NpzWriter::new(std::fs::File::create(path)?);
        archive.add_array("y", &Array1::from(values[..rows].to_vec()))?;
        // The feature columns, stored column after column: as an array of 32 rows, transposed.
        let features = ArrayView2::from_shape((PARAMETERS - 1, rows), &values[rows..])?;
        archive.add_array("X", &features.t().as_standard_layout())?;
        archive.add_array("lam", &Array1::from(vec![POISSON_LAMBDA]))?;
        archive.finish()?;
        println!(
            "saved     {path} (y, X of {rows} × {}, lam)",
            PARAMETERS - 1
        );
    }

    let (backend, why) = cudamin::backend(BackendChoice::Auto)?;
    println!("backend   {} ({why})", backend.name());
    let data = TermProblem::<PoissonRegression>::with_data(PARAMETERS, values, rows)?;
    let penalty =
        TermProblem::<L2Penalty>::with_data(PARAMETERS, poisson_penalty(PARAMETERS), PARAMETERS)?;
    let evaluator = backend.load_sum(data.plus(penalty)?)?;
    let mut objective = TermObjective::new(evaluator, Gradient::Exact);
    let start = Instant::now();
    let x0 = vec![0.0; PARAMETERS];
    let result = minimize(&mut objective, &x0, Method::Lbfgs, &Options::default())?;
    let seconds = start.elapsed().as_secs_f64();
    println!("status    {}: {}", result.status.code(), result.message);
    println!(
        "rows      {rows}; nit {}, nfev {}, njev {}; {seconds:.3} s",
        result.nit, result.nfev, result.njev
    );
    let grad_inf_norm = result.jac.iter().fold(0.0, |m: f64, g| m.max(g.abs()));
    println!("f         {:.12e}, ‖∇f‖∞ {grad_inf_norm:.2e}", result.fun);
    let truth = poisson_theta_true(PARAMETERS);
    let worst = (result.x.iter().zip(&truth))
        .map(|(x, t)| (x - t).abs())
        .fold(0.0, f64::max);
    println!(
        "θ         |θ − θ_true|∞ = {worst:.4} (θ₀ = {:.6}, generated with 0.5)",
        result.x[0]
    );
    // Each θ's standard error is about 1/√(rows·E[e^η·x²]) ≈ 1.4/√rows; allow eight of them.
    let allowed = 8.0 * 1.4 / (rows as f64).sqrt();
    if !result.success || worst > allowed {
        return Err(
            format!("the fit is {worst:.4} off the generating θ (allowed {allowed:.4})").into(),
        );
    }
    Ok(())
}
