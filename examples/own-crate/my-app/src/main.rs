//! Fits a robust line to 200 000 noisy points, one in fifty an outlier, on the GPU when there is
//! one (`--features cuda`) and on every CPU core otherwise, and checks the answer.

use cudamin::solver::minimize;
use cudamin::{
    Backend, BackendChoice, Gradient, LaunchOverride, Method, Options, TermObjective, TermProblem,
};
use my_kernels::RobustLine;
use std::ops::ControlFlow;
use std::process::ExitCode;

/// `pub const PTX: Result<&str, &str>`: my-kernels as PTX, or why it was not built.
mod kernels {
    include!(concat!(env!("OUT_DIR"), "/my_kernels.rs"));
}

/// The line the data are drawn around: `a`, `b`.
const TRUE_LINE: [f64; 2] = [1.5, 0.5];

fn main() -> ExitCode {
    match fit() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn fit() -> Result<(), Box<dyn std::error::Error>> {
    // The GPU if the PTX was built and a device answers, else the CPU; `why` says which.
    let choice = BackendChoice::Auto;
    let (backend, why) = Backend::select(choice, kernels::PTX, LaunchOverride::default())?;
    println!("backend  {} ({why})", backend.name());

    let points = 200_000;
    let problem = TermProblem::<RobustLine>::with_data(2, line_data(points), points)?;
    // Exact derivatives of RobustLine's own `eval`; `FiniteDifference::Central` would difference it.
    let mut objective = TermObjective::new(backend.load(problem)?, Gradient::Exact);
    let (x0, options) = ([0.0, 0.0], Options::default());
    // The observer sees every iteration and may stop the solve; this one lets it run.
    let result = minimize(&mut objective, &x0, Method::Bfgs, &options, &mut |_| {
        ControlFlow::Continue(())
    })?;

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

/// `t` uniform on [0, 10); `y` on the line plus uniform noise of ±0.1, and every fiftieth point
/// 5 to 15 above or below it. Column-major, as `TermProblem` takes data: all `t`, then all `y`.
fn line_data(points: usize) -> Vec<f64> {
    // xorshift64: a few lines, fixed seed, the same data every run.
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
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
