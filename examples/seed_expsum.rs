//! The seeds' first workflow: minimize `Σ xᵢ² + e^{xᵢ}` with BFGS. In Python it was a CuPy
//! objective handed to scipy, which differenced it `n + 1` times per gradient:
//!
//! ```python
//! f = lambda x: float(cp.sum(cp.asarray(x) ** 2 + cp.exp(cp.asarray(x))))
//! res = scipy.optimize.minimize(f, np.zeros(n), method="BFGS")
//! ```
//!
//! Here the objective is cudamin's built-in `SeedExpSum` term (`gpu-kernels/src/terms/
//! seed_expsum.rs`, one line of math), on the GPU when one answers and on every CPU core
//! otherwise, with exact gradients. Every coordinate of the minimizer solves `2x + eˣ = 0`.
//!
//! `cargo run --release --example seed_expsum [n]`

use cudamin::kernels::terms::SeedExpSum;
use cudamin::minimize;
use cudamin::{BackendChoice, Gradient, Method, Options, TermObjective, TermProblem};
use std::process::ExitCode;

mod common;

/// The root of `2x + eˣ = 0`, `−W(1/2)` (Lambert W), to double precision.
const X_STAR: f64 = -0.351_733_711_249_195_8;

fn main() -> ExitCode {
    common::report(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = common::size_argument(100_000)?;
    let (backend, why) = cudamin::backend(BackendChoice::Auto)?;
    println!("backend   {} ({why})", backend.name());
    let problem = TermProblem::<SeedExpSum>::new(n)?;
    let mut objective = TermObjective::new(backend.load(problem)?, Gradient::Exact);
    let x0 = vec![0.0; n];
    let result = minimize(&mut objective, &x0, Method::Bfgs, &Options::default())?;
    let off = result
        .x
        .iter()
        .fold(0.0, |worst: f64, x| worst.max((x - X_STAR).abs()));
    println!("status    {}: {}", result.status.code(), result.message);
    println!(
        "n         {n}, nit {}, nfev {}, njev {}",
        result.nit, result.nfev, result.njev
    );
    println!("f         {:.12e}", result.fun);
    println!("max |x − x*| {off:.2e}");
    // gtol 1e-5 bounds |2x + eˣ| per coordinate, so x is within about 1e-5 / 2.7 of x*.
    if !result.success || off > 1e-5 {
        return Err(format!("not at the minimizer: max |x − x*| = {off:.2e}").into());
    }
    Ok(())
}
