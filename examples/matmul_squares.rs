//! The seeds' torch objective, `((A @ B) ** 2).sum()` over the entries of `A`, whose gradient
//! came from autograd and went to scipy with `jac=True`:
//!
//! ```python
//! B = torch.randn(16, 32, device="cuda") / 4
//! def f_and_grad(a):
//!     A = torch.tensor(a.reshape(m, 16), device="cuda", requires_grad=True)
//!     loss = ((A @ B) ** 2).sum()
//!     loss.backward()
//!     return loss.item(), A.grad.cpu().numpy().ravel()
//! res = scipy.optimize.minimize(f_and_grad, a0, jac=True, method="L-BFGS-B")
//! ```
//!
//! Here it is the built-in `matmul-squares` (`gpu-kernels/src/terms/matmul_squares.rs`): one
//! term per row of `A`, `Σ_j (A_i · B_{:,j})²`, whose exact gradient comes from the term itself.
//! The example checks that gradient at the start against `2·(A·B)·Bᵀ` computed here with plain
//! loops, then minimizes with L-BFGS down to `f ≤ 1e-10·f(A0)` (the minimum is 0, at `A = 0`).
//!
//! `cargo run --release --example matmul_squares [rows of A]`

use cudamin::kernels::terms::matmul_squares::INNER;
use cudamin::minimize;
use cudamin::problems::{self, MATMUL_COLUMNS};
use cudamin::{BackendChoice, Gradient, Method, Objective, Options, TermObjective};
use std::process::ExitCode;

mod common;

fn main() -> ExitCode {
    common::report(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let rows = common::size_argument(20_000)?;
    let n = rows * INNER;
    let (backend, why) = cudamin::backend(BackendChoice::Auto)?;
    println!("backend   {} ({why})", backend.name());
    let instance = problems::find("matmul-squares")?.instantiate(&backend, Some(n), None)?;
    let a0 = instance.x0;
    let mut objective = TermObjective::new(instance.evaluator.into_sum(), Gradient::Exact);

    let (b, _) = problems::matmul_data(0);
    let (f_expected, g_expected) = value_and_gradient(&a0, &b);
    let mut g = vec![0.0; n];
    let f0 = objective.value_and_gradient(&a0, &mut g)?;
    let g_error = g
        .iter()
        .zip(&g_expected)
        .fold(0.0, |worst: f64, (g, e)| worst.max((g - e).abs()));
    let g_scale = g_expected.iter().fold(1.0, |m: f64, e| m.max(e.abs()));
    println!("f(A0)     {f0:.12e} (loops here: {f_expected:.12e})");
    println!("∇f(A0)    max |kernel − 2(AB)Bᵀ| = {g_error:.2e} (of max |∇f| {g_scale:.2e})");
    if (f0 - f_expected).abs() > 1e-12 * f_expected || g_error > 1e-12 * g_scale {
        return Err("the kernels' value or gradient disagrees with the loops".into());
    }

    let options = Options {
        gtol: 1e-10,
        ..Options::default()
    };
    let result = minimize(&mut objective, &a0, Method::Lbfgs, &options)?;
    println!("status    {}: {}", result.status.code(), result.message);
    println!(
        "A         {rows} × {INNER}; nit {}, nfev {}, njev {}",
        result.nit, result.nfev, result.njev
    );
    println!(
        "f         {:.3e} (f(A0) · {:.1e})",
        result.fun,
        result.fun / f0
    );
    if !result.success || result.fun > 1e-10 * f0 {
        return Err(format!("f = {:.3e} did not fall to 1e-10·f(A0)", result.fun).into());
    }
    Ok(())
}

/// `Σ ((A·B)_ij)²` and `2·(A·B)·Bᵀ`, with `A` by rows (`a`) and `B` by columns (`b`).
fn value_and_gradient(a: &[f64], b: &[f64]) -> (f64, Vec<f64>) {
    let mut f = 0.0;
    let mut g = vec![0.0; a.len()];
    for (row, g_row) in a.chunks(INNER).zip(g.chunks_mut(INNER)) {
        for column in b.chunks(INNER).take(MATMUL_COLUMNS) {
            let ab: f64 = row.iter().zip(column).map(|(a, b)| a * b).sum();
            f += ab * ab;
            for (g, b) in g_row.iter_mut().zip(column) {
                *g += 2.0 * ab * b;
            }
        }
    }
    (f, g)
}
