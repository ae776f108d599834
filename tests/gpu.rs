//! The cuda backend (`--features cuda`). On a machine without a device these check that the
//! failure is clean and that `auto` falls back to the CPU; the GPU-vs-CPU comparisons print
//! "skipped: no CUDA device" and return, unless `CUDAMIN_REQUIRE_GPU=1`, which makes a missing
//! device a failure. With a GPU, run them with `cargo test --features cuda --test gpu`.
#![cfg(feature = "cuda")]

mod common;

use common::relative_error;
use cudamin::kernels::raw::examples::{DOT_SHARED, SQUARE_PLUS_TWO_X_PLUS_ONE};
use cudamin::launcher::abi::LaunchConfig;
use cudamin::solver::minimize;
use cudamin::{
    Backend, BackendChoice, BackendError, FiniteDifference, Method, Options, RawArg, TermObjective,
    problems,
};
use std::io::Write;
use std::ops::ControlFlow;

fn require_gpu() -> bool {
    std::env::var_os("CUDAMIN_REQUIRE_GPU").is_some_and(|v| v == "1")
}

/// The GPU backend, or `None` after printing the skip line (outside the test harness's capture).
fn gpu_or_skip(test: &str) -> Option<Backend> {
    match cudamin::backend(BackendChoice::Cuda) {
        Ok((backend, _)) => Some(backend),
        Err(err) => {
            assert!(!require_gpu(), "CUDAMIN_REQUIRE_GPU=1, but: {err}");
            let _ = writeln!(std::io::stderr(), "{test}: skipped: no CUDA device ({err})");
            None
        }
    }
}

/// Sizes small enough for a quick test yet past one block of threads.
const SIZES: &[(&str, Option<usize>, Option<usize>)] = &[
    ("seed-expsum", Some(5_000), None),
    ("ext-rosenbrock", Some(2_000), None),
    ("rosenbrock", Some(1_001), None),
    ("ext-powell", Some(1_000), None),
    ("lsq-expsin", Some(8), Some(20_000)),
    ("quadratic", Some(40), None),
];

#[test]
fn missing_device_is_a_typed_error_and_auto_falls_back() {
    match cudamin::backend(BackendChoice::Cuda) {
        Ok(_) => {
            let _ = writeln!(
                std::io::stderr(),
                "a CUDA device is present: nothing to fall back from"
            );
        }
        Err(err) => {
            assert!(!require_gpu(), "CUDAMIN_REQUIRE_GPU=1, but: {err}");
            assert!(
                matches!(err, BackendError::NoDevice(_) | BackendError::PtxMissing(_)),
                "{err:?}"
            );
            let (backend, why) = cudamin::backend(BackendChoice::Auto).unwrap();
            assert_eq!(backend.name(), "cpu");
            assert!(
                why.contains(&err.to_string()),
                "the fallback reason `{why}` should name `{err}`"
            );
        }
    }
}

#[test]
fn gpu_values_and_gradients_match_the_cpu() {
    let Some(gpu) = gpu_or_skip("gpu_values_and_gradients_match_the_cpu") else {
        return;
    };
    for &(name, n, points) in SIZES {
        let problem = problems::find(name).unwrap();
        let mut on_gpu = problem.instantiate(&gpu, n, points).unwrap();
        let mut on_cpu = problem.instantiate(&Backend::Cpu, n, points).unwrap();
        let x = on_cpu.x0.clone();
        let (f_gpu, f_cpu) = (
            on_gpu.evaluator.value(&x).unwrap(),
            on_cpu.evaluator.value(&x).unwrap(),
        );
        // Same term code and libm on both sides; only the summation order differs.
        assert!(
            (f_gpu - f_cpu).abs() <= 1e-10 * f_cpu.abs().max(1.0),
            "{name}: f {f_gpu} vs {f_cpu}"
        );
        for fd in [FiniteDifference::Forward, FiniteDifference::Central] {
            let mut g_gpu = vec![0.0; x.len()];
            let mut g_cpu = vec![0.0; x.len()];
            on_gpu.evaluator.gradient(&x, fd, &mut g_gpu).unwrap();
            on_cpu.evaluator.gradient(&x, fd, &mut g_cpu).unwrap();
            let error = relative_error(&g_gpu, &g_cpu);
            assert!(
                error <= 1e-10,
                "{name} {fd:?}: gradients differ by {error:e} relative to max(‖g‖∞, 1)"
            );
        }
    }
}

#[test]
fn gpu_solves_match_the_cpu() {
    let Some(gpu) = gpu_or_skip("gpu_solves_match_the_cpu") else {
        return;
    };
    for &(name, n, points) in SIZES {
        let problem = problems::find(name).unwrap();
        let mut results = Vec::new();
        for backend in [&gpu, &Backend::Cpu] {
            let instance = problem.instantiate(backend, n, points).unwrap();
            let mut objective = TermObjective::new(instance.evaluator, FiniteDifference::Central);
            let options = Options::default();
            let result = minimize(
                &mut objective,
                &instance.x0,
                Method::Lbfgs,
                &options,
                &mut |_| ControlFlow::Continue(()),
            )
            .unwrap();
            results.push(result);
        }
        let (g, c) = (&results[0], &results[1]);
        // Rounding differences may change the path slightly, not where it ends.
        assert_eq!(g.status, c.status, "{name}");
        assert!(
            (g.fun - c.fun).abs() <= 1e-6 * c.fun.abs().max(1.0),
            "{name}: {} vs {}",
            g.fun,
            c.fun
        );
    }
}

#[test]
fn raw_kernels_run_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("raw_kernels_run_on_the_gpu") else {
        return;
    };
    let x: Vec<f64> = (0..100_000).map(|i| (i as f64).sqrt() * 0.01).collect();
    let mut out = vec![0.0; x.len()];
    let config = LaunchConfig {
        blocks: 64,
        threads: 256,
    };
    gpu.launch_raw(
        &SQUARE_PLUS_TWO_X_PLUS_ONE,
        config,
        &mut [RawArg::In(&x), RawArg::Out(&mut out)],
    )
    .unwrap();
    let expected: Vec<f64> = x.iter().map(|v| v * v + 2.0 * v + 1.0).collect();
    assert_eq!(out, expected);

    let mut dot = [0.0];
    gpu.launch_raw(
        &DOT_SHARED,
        config,
        &mut [RawArg::In(&x), RawArg::In(&x), RawArg::Out(&mut dot)],
    )
    .unwrap();
    let exact: f64 = x.iter().map(|v| v * v).sum();
    assert!(
        (dot[0] - exact).abs() <= 1e-12 * exact,
        "{} vs {exact}",
        dot[0]
    );
}
