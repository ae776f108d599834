//! A parameter fit to a large dataset with exact gradients: `y ≈ θ₀·e^{−θ₁t} + Σ_{k≥2} θₖ
//! sin(k·t)` by least squares, replacing the torch-autograd objective handed to scipy:
//!
//! ```python
//! def f(theta):
//!     th = torch.tensor(theta, requires_grad=True)
//!     r = y - (th[0] * torch.exp(-th[1] * t) + th[2:] @ basis)
//!     loss = (r ** 2).sum(); loss.backward()
//!     return loss.item(), th.grad.numpy()
//! res = scipy.optimize.minimize(f, theta0, jac=True, method="L-BFGS-B")
//! ```
//!
//! Here the model is cudamin's built-in `LsqExpSin` term, written once over `Real`: its exact
//! gradient comes from the same source evaluated on dual numbers, on the CPU or as PTX. The data
//! are generated around known parameters with noise 0.01, so the fit must land near them.
//!
//! `cargo run --release --example fit_exact [points]`

use cudamin::kernels::terms::LsqExpSin;
use cudamin::minimize;
use cudamin::problems::{lsq_expsin_data, lsq_expsin_theta_true};
use cudamin::{BackendChoice, Gradient, Method, Options, TermObjective, TermProblem};
use std::process::ExitCode;

mod common;

/// Parameters: θ₀, θ₁ and 14 sine amplitudes.
const P: usize = 16;

fn main() -> ExitCode {
    common::report(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let points: usize = common::size_argument(1_000_000)?;
    let (backend, why) = cudamin::backend(BackendChoice::Auto)?;
    println!("backend  {} ({why})", backend.name());
    let (columns, rows) = lsq_expsin_data(P, points)?;
    let problem = TermProblem::<LsqExpSin>::with_data(P, columns, rows)?;
    let mut objective = TermObjective::new(backend.load(problem)?, Gradient::Exact);
    let theta0 = vec![0.5; P];
    let result = minimize(&mut objective, &theta0, Method::Lbfgs, &Options::default())?;
    let truth = lsq_expsin_theta_true(P);
    let off = result
        .x
        .iter()
        .zip(&truth)
        .fold(0.0, |worst: f64, (x, t)| worst.max((x - t).abs()));
    println!("status   {}: {}", result.status.code(), result.message);
    println!(
        "points   {points}, nit {}, nfev {}, njev {}",
        result.nit, result.nfev, result.njev
    );
    println!(
        "θ₀, θ₁   {:.6}, {:.6} (data drawn around {}, {})",
        result.x[0], result.x[1], truth[0], truth[1]
    );
    println!("max |θ − θ_true| {off:.2e}");
    // With noise 0.01 on 10⁴ or more points, each parameter's standard error is below 1e-2.
    if !result.success || off > 0.05 {
        return Err(
            format!("the fit is {off:.2e} from the parameters the data were drawn around").into(),
        );
    }
    Ok(())
}
