//! The cuda backend (`--features cuda`). On a machine without a device the one test that runs
//! checks that the failure is clean and that `auto` falls back to the CPU; the tests that need
//! a GPU are `#[ignore = "needs a GPU"]`, so a run without one reports them ignored, not "ok".
//! With a GPU: `CUDAMIN_REQUIRE_GPU=1 cargo test --release --features cuda --test gpu --
//! --include-ignored --test-threads=1 --nocapture` (the tables go to stderr; the variable makes
//! the fallback test fail if no device answers).
#![cfg(feature = "cuda")]

mod common;

use common::relative_error;
use cudamin::LaunchConfig;
use cudamin::backend::LeastSquaresEvaluator;
use cudamin::kernels::Window;
use cudamin::kernels::raw::examples::{DOT_SHARED, SQUARE_PLUS_TWO_X_PLUS_ONE};
use cudamin::problems::{self, Instance};
use cudamin::solver::{minimize, minimize_with_observer};
use cudamin::{
    Backend, BackendChoice, BackendError, EvalError, Gradient, LaunchOverride, Method, Objective,
    Options, RawArg, TermObjective,
};
use std::io::Write;
use std::ops::ControlFlow;

fn require_gpu() -> bool {
    std::env::var_os("CUDAMIN_REQUIRE_GPU").is_some_and(|v| v == "1")
}

/// Writes a line to stderr, outside the test harness's capture.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The GPU backend with `launch`. The tests that call it are `#[ignore = "needs a GPU"]`: run
/// on a machine with a device (`cargo test --features cuda --test gpu -- --include-ignored`, as
/// benches/gpu_check.sh does), they fail, never pass, when none answers.
fn gpu_with(launch: LaunchOverride) -> Backend {
    match cudamin::backend_with_launch(BackendChoice::Cuda, launch) {
        Ok((backend, _)) => backend,
        Err(err) => panic!("this test needs a CUDA device: {err}"),
    }
}

fn gpu() -> Backend {
    gpu_with(LaunchOverride::default())
}

/// Sizes past one block of threads, for the problems whose default is small; every other
/// built-in problem runs at its default size.
const SIZES: &[(&str, Option<usize>, Option<usize>)] = &[
    ("seed-expsum", Some(100_000), None),
    ("ext-rosenbrock", Some(20_000), None),
    ("rosenbrock", Some(10_001), None),
    ("ext-powell", Some(10_000), None),
    ("lsq-expsin", Some(16), Some(200_000)),
    ("quadratic", Some(300), None),
];

fn size_of(name: &str) -> (Option<usize>, Option<usize>) {
    SIZES
        .iter()
        .find(|(n, ..)| *n == name)
        .map_or((None, None), |&(_, n, points)| (n, points))
}

/// How one problem's GPU value and gradients compare with the CPU's at `x0`.
struct Agreement {
    value: f64,
    forward: f64,
    /// What two correct forward-difference gradients may differ by (see [`compare`]).
    forward_bound: f64,
    central: f64,
    exact: f64,
    /// Every gradient has the same bits on both backends.
    identical: bool,
}

/// Compares the GPU and CPU evaluators of one problem at its `x0`.
///
/// Both backends run the same term code, but a dense term's CPU gradient evaluates four
/// perturbations per call ([`Lanes`](cudamin::kernels::Lanes)), whose dot products round in
/// another order than the GPU's. A term value that differs in its last bit moves a forward
/// difference by `ε·|φ_k|/h` with `h ≈ √ε`, so two correct forward gradients may differ by up
/// to about `4·ε·Σ_k|φ_k| / h` (`Σ_k|φ_k| = f` for the nonnegative built-in terms; the one
/// built-in with signed terms, `quadratic`, evaluates identically on both). Central
/// differences divide by `h ≈ ∛ε` and are held to 1e-10.
fn compare(gpu: &mut Instance, cpu: &mut Instance) -> Agreement {
    let x = cpu.x0.clone();
    let f_gpu = gpu.evaluator.as_sum().value(&x).unwrap();
    let f_cpu = cpu.evaluator.as_sum().value(&x).unwrap();
    let mut gradients = |fd: Gradient| {
        let mut g_gpu = vec![0.0; x.len()];
        let mut g_cpu = vec![0.0; x.len()];
        gpu.evaluator.as_sum().gradient(&x, fd, &mut g_gpu).unwrap();
        cpu.evaluator.as_sum().gradient(&x, fd, &mut g_cpu).unwrap();
        let same = g_gpu
            .iter()
            .zip(&g_cpu)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        (
            relative_error(&g_gpu, &g_cpu),
            same,
            common::gradient_scale(&g_cpu),
        )
    };
    let (forward, forward_same, scale) = gradients(Gradient::Forward);
    let (central, central_same, _) = gradients(Gradient::Central);
    let (exact, exact_same, _) = gradients(Gradient::Exact);
    // The fused pass: its gradient is the gradient kernels', its value the value's to rounding.
    let schemes = [Gradient::Exact, Gradient::Forward, Gradient::Central];
    for fd in schemes {
        let (mut g, mut g_fused) = (vec![0.0; x.len()], vec![0.0; x.len()]);
        gpu.evaluator.as_sum().gradient(&x, fd, &mut g).unwrap();
        let f_fused = gpu
            .evaluator
            .as_sum()
            .value_and_gradient(&x, fd, &mut g_fused)
            .unwrap();
        assert_eq!(g, g_fused, "{fd:?}: the fused gradient differs");
        assert!(
            (f_fused - f_gpu).abs() <= 1e-12 * f_gpu.abs().max(1.0),
            "{fd:?}: fused f"
        );
    }
    let h = cudamin::kernels::fd::SQRT_EPS;
    Agreement {
        value: (f_gpu - f_cpu).abs() / f_cpu.abs().max(f64::MIN_POSITIVE),
        forward,
        forward_bound: (4.0 * f64::EPSILON * f_cpu.abs() / h / scale).max(1e-10),
        central,
        exact,
        identical: forward_same && central_same && exact_same,
    }
}

#[test]
fn missing_device_is_a_typed_error_and_auto_falls_back() {
    match cudamin::backend(BackendChoice::Cuda) {
        Ok(_) => say("a CUDA device is present: nothing to fall back from"),
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

/// Every built-in problem: the value to 1e-12 relative, exact and central gradients to 1e-10,
/// forward gradients within [`compare`]'s bound, and banded (or separable) gradients bit for
/// bit.
#[test]
#[ignore = "needs a GPU"]
fn every_builtin_problem_matches_the_cpu() {
    let gpu = gpu();
    say(
        "problem              n   points | f rel. diff | forward rel. (bound)   | central rel. | same bits",
    );
    let mut failures = Vec::new();
    for problem in problems::all() {
        let (n, points) = size_of(problem.name);
        let mut on_gpu = problem.instantiate(&gpu, n, points).unwrap();
        let mut on_cpu = problem.instantiate(&Backend::Cpu, n, points).unwrap();
        let a = compare(&mut on_gpu, &mut on_cpu);
        let banded = on_cpu.window != Window::Dense;
        say(&format!(
            "{:<14} {:>7} {:>8} | {:>11.1e} | {:>9.1e} ({:>8.1e}) | {:>12.1e} | {:>10.1e} | {}{}",
            problem.name,
            on_cpu.x0.len(),
            points.map_or(String::new(), |p| p.to_string()),
            a.value,
            a.forward,
            a.forward_bound,
            a.central,
            a.exact,
            if a.identical { "yes" } else { "no" },
            if banded { " (banded)" } else { "" },
        ));
        if a.value > 1e-12
            || a.forward > a.forward_bound
            || a.central > 1e-10
            || a.exact > 1e-10
            || (banded && !a.identical)
        {
            failures.push(problem.name);
        }
    }
    assert!(failures.is_empty(), "GPU and CPU disagree on {failures:?}");
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_solves_match_the_cpu() {
    let gpu = gpu();
    for &(name, n, points) in SIZES {
        let problem = problems::find(name).unwrap();
        let mut results = Vec::new();
        for backend in [&gpu, &Backend::Cpu] {
            let instance = problem.instantiate(backend, n, points).unwrap();
            let mut objective =
                TermObjective::new(instance.evaluator.into_sum(), Gradient::Central);
            let result = minimize(
                &mut objective,
                &instance.x0,
                Method::Lbfgs,
                &Options::default(),
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

/// Any block size and grid size gives the same value (to rounding: the block sums change) and
/// gradient as the CPU, or, where a kernel's registers do not allow the block, a clear error.
#[test]
#[ignore = "needs a GPU"]
fn launch_sizes_change_nothing_but_rounding() {
    const PROBLEMS: &[(&str, Option<usize>, Option<usize>)] = &[
        ("seed-expsum", Some(100_000), None),
        ("rosenbrock", Some(5_001), None),
        ("lsq-expsin", Some(16), Some(20_000)),
        ("mgh-16", None, None),
    ];
    let _ = gpu();
    say("problem        threads blocks | f rel. diff | central rel.");
    for threads in [1, 32, 96, 100, 1024] {
        for blocks in [1, 7, 10_000] {
            let launch = LaunchOverride {
                threads: Some(threads),
                blocks: Some(blocks),
            };
            let gpu = gpu_with(launch);
            for &(name, n, points) in PROBLEMS {
                let problem = problems::find(name).unwrap();
                let mut on_gpu = match problem.instantiate(&gpu, n, points) {
                    Ok(instance) => instance,
                    Err(err) => {
                        // Only a block larger than the kernel allows may be refused.
                        let text = err.to_string();
                        assert!(
                            threads > 256 && text.contains("registers per thread"),
                            "{name} with {threads}×{blocks}: {text}"
                        );
                        say(&format!(
                            "{name:<14} {threads:>7} {blocks:>6} | refused: {text}"
                        ));
                        continue;
                    }
                };
                let mut on_cpu = problem.instantiate(&Backend::Cpu, n, points).unwrap();
                let a = compare(&mut on_gpu, &mut on_cpu);
                say(&format!(
                    "{name:<14} {threads:>7} {blocks:>6} | {:>11.1e} | {:>12.1e}",
                    a.value, a.central
                ));
                assert!(
                    a.value <= 1e-12 && a.central <= 1e-10,
                    "{name} with {threads}×{blocks}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU"]
fn raw_kernels_run_on_the_gpu_with_any_block_size() {
    let gpu = gpu();
    let x: Vec<f64> = (0..100_000).map(|i| (i as f64).sqrt() * 0.01).collect();
    let expected: Vec<f64> = x.iter().map(|v| v * v + 2.0 * v + 1.0).collect();
    let exact: f64 = x.iter().map(|v| v * v).sum();
    for (blocks, threads) in [(64, 256), (7, 100), (1, 1), (3, 33), (2, 1000), (1, 1024)] {
        let config = LaunchConfig { blocks, threads };
        let mut out = vec![0.0; x.len()];
        gpu.launch_raw(
            &SQUARE_PLUS_TWO_X_PLUS_ONE,
            config,
            &mut [RawArg::In(&x), RawArg::Out(&mut out)],
        )
        .unwrap();
        assert_eq!(out, expected, "{config:?}");

        let mut dot = [0.0];
        gpu.launch_raw(
            &DOT_SHARED,
            config,
            &mut [RawArg::In(&x), RawArg::In(&x), RawArg::Out(&mut dot)],
        )
        .unwrap();
        assert!(
            (dot[0] - exact).abs() <= 1e-12 * exact,
            "{config:?}: {} vs {exact}",
            dot[0]
        );
    }
}

/// An evaluator may outlive its backend and be dropped on another thread: its buffers are
/// freed in its own context, and the device stays usable.
#[test]
#[ignore = "needs a GPU"]
fn evaluators_drop_cleanly_on_other_threads() {
    let gpu = gpu();
    let problem = problems::find("lsq-expsin").unwrap();
    let mut instance = problem.instantiate(&gpu, Some(8), Some(10_000)).unwrap();
    let f = instance.evaluator.as_sum().value(&instance.x0).unwrap();
    drop(gpu); // the evaluator now holds the launcher's last reference
    std::thread::spawn(move || drop(instance)).join().unwrap();

    let again_gpu = self::gpu();
    let mut again = problem
        .instantiate(&again_gpu, Some(8), Some(10_000))
        .unwrap();
    assert_eq!(again.evaluator.as_sum().value(&again.x0).unwrap(), f);
}

/// PTX the driver cannot compile is refused with the JIT compiler's own log.
#[test]
#[ignore = "needs a GPU"]
fn rejected_ptx_shows_the_jit_log() {
    let _ = gpu();
    const BROKEN: &str = ".version 7.0\n.target sm_70\n.address_size 64\n\
                          .visible .entry broken()\n{\n\tnot_an_instruction;\n\tret;\n}\n";
    let err = Backend::select(BackendChoice::Cuda, Ok(BROKEN), LaunchOverride::default())
        .err()
        .expect("the driver should refuse this PTX");
    let text = err.to_string();
    say(&format!("rejected PTX: {text}"));
    assert!(matches!(err, BackendError::PtxRejected(_)), "{err:?}");
    assert!(text.contains("JIT log"), "{text}");
}

/// Hides a term objective's GPU evaluator from the solver, which then keeps its vectors in
/// host memory and sends `x` over for every evaluation.
struct HostVectors(TermObjective);

impl Objective for HostVectors {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        self.0.value(x)
    }
    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        self.0.gradient(x, g)
    }
}

/// L-BFGS, and BFGS past its dense limit, keep a GPU term objective's vectors on the device.
/// A solve ends where the same solve with host vectors ends (the dot products round
/// differently, so the paths may part at rounding level), and the observer's `x` is the
/// device's iterate.
#[test]
#[ignore = "needs a GPU"]
fn device_vectors_match_host_vectors() {
    let gpu = gpu();
    say("problem        method       n   points | device s  nit | host s    nit | f rel. diff");
    for (name, method, n, points) in [
        ("seed-expsum", Method::Lbfgs, Some(1_000_000), None),
        ("seed-expsum", Method::Bfgs, Some(1_000_000), None),
        ("ext-rosenbrock", Method::Lbfgs, Some(100_000), None),
        ("ext-rosenbrock", Method::Bfgs, Some(100_000), None),
        ("rosenbrock", Method::Lbfgs, Some(1_000), None),
        ("lsq-expsin", Method::Lbfgs, Some(16), Some(100_000)),
    ] {
        let problem = problems::find(name).unwrap();
        let solve = |objective: &mut dyn Objective, x0: &[f64]| {
            let mut last_x = Vec::new();
            let start = std::time::Instant::now();
            let result =
                minimize_with_observer(objective, x0, method, &Options::default(), &mut |it| {
                    last_x = it.x().unwrap().into_owned();
                    ControlFlow::Continue(())
                })
                .unwrap();
            (result, last_x, start.elapsed().as_secs_f64())
        };
        let on_device = problem.instantiate(&gpu, n, points).unwrap();
        let mut device = TermObjective::new(on_device.evaluator.into_sum(), Gradient::Central);
        let (d, d_last_x, d_s) = solve(&mut device, &on_device.x0);
        let on_host = problem.instantiate(&gpu, n, points).unwrap();
        let mut host = HostVectors(TermObjective::new(
            on_host.evaluator.into_sum(),
            Gradient::Central,
        ));
        let (h, _, h_s) = solve(&mut host, &on_host.x0);
        let f_diff = (d.fun - h.fun).abs() / h.fun.abs().max(1.0);
        say(&format!(
            "{name:<14} {:<6} {:>7} {:>8} | {d_s:>8.4} {:>4} | {h_s:>8.4} {:>4} | {f_diff:.1e}",
            method.name(),
            on_host.x0.len(),
            points.map_or(String::new(), |p| p.to_string()),
            d.nit,
            h.nit
        ));
        let case = format!("{name} {}", method.name());
        assert_eq!(d.status, h.status, "{case}");
        assert!(f_diff <= 1e-8, "{case}: {} vs {}", d.fun, h.fun);
        assert_eq!(
            d_last_x, d.x,
            "{case}: the observer's last x is the result's"
        );
    }
}

/// The GPU's normal equations (`_normal_` kernels, then the block-ordered sum) against the
/// CPU's, for every MGH sum of squares and a 100 000-point fit, each scheme: the same row code
/// on both sides, so they differ only by the order of the sums (a few ε of the summed
/// magnitudes). Then Levenberg–Marquardt on the GPU fits the same parameters as on the CPU.
#[test]
#[ignore = "needs a GPU"]
fn normal_equations_agree_with_the_cpu() {
    use cudamin::problems::fit::{FitData, find_model};
    use cudamin::solver::{LmOptions, least_squares};
    let gpu = gpu();
    let points = 100_000;
    let x: Vec<f64> = (0..points)
        .map(|i| 8.0 * i as f64 / points as f64)
        .collect();
    let data = FitData {
        y: x.iter()
            .map(|&x| 2.0 * (-0.7 * x).exp() + 0.5 * (2.0 * x).sin())
            .collect(),
        x,
        sigma: None,
    };
    let fit = |backend: &Backend| {
        let model = find_model("expsin").unwrap();
        model.instantiate(backend, Some(6), &data, None).unwrap()
    };
    let mut pairs: Vec<(String, Instance, Instance)> =
        vec![("expsin fit".into(), fit(&gpu), fit(&Backend::Cpu))];
    for problem in problems::all().filter(|p| p.name.starts_with("mgh-")) {
        let on = |b: &Backend| problem.instantiate(b, None, None).unwrap();
        let (mut g, c) = (on(&gpu), on(&Backend::Cpu));
        if g.evaluator.least_squares().is_some() {
            g.x0 = c.x0.clone();
            pairs.push((problem.name.to_owned(), g, c));
        }
    }
    for (name, mut gpu_instance, mut cpu_instance) in pairs {
        let n = cpu_instance.x0.len();
        let x0 = cpu_instance.x0.clone();
        for scheme in [Gradient::Exact, Gradient::Forward, Gradient::Central] {
            let normal = |instance: &mut Instance| {
                let (mut jtj, mut jtr) = (vec![0.0; n * n], vec![0.0; n]);
                let residuals = instance.evaluator.least_squares().unwrap();
                let f = residuals
                    .normal_equations(&x0, scheme, &mut jtj, &mut jtr)
                    .unwrap();
                (f, jtj, jtr)
            };
            let (f_gpu, jtj_gpu, jtr_gpu) = normal(&mut gpu_instance);
            let (f_cpu, jtj_cpu, jtr_cpu) = normal(&mut cpu_instance);
            let scale = |v: &[f64]| v.iter().fold(1.0, |m: f64, x| m.max(x.abs()));
            let close = |a: &[f64], b: &[f64]| {
                let bound = 1e-10 * scale(b);
                a.iter().zip(b).all(|(a, b)| (a - b).abs() <= bound)
            };
            assert!(
                (f_gpu - f_cpu).abs() <= 1e-12 * f_cpu.abs().max(1.0)
                    && close(&jtj_gpu, &jtj_cpu)
                    && close(&jtr_gpu, &jtr_cpu),
                "{name} ({}): GPU Σr² {f_gpu:e}, JᵀJ {jtj_gpu:?}, Jᵀr {jtr_gpu:?}; CPU {f_cpu:e}, {jtj_cpu:?}, {jtr_cpu:?}",
                scheme.name()
            );
        }
        let residuals = |instance: Instance| instance.evaluator.into_least_squares().unwrap();
        let mut on_gpu = TermObjective::new(residuals(gpu_instance), Gradient::Exact);
        let mut on_cpu = TermObjective::new(residuals(cpu_instance), Gradient::Exact);
        let solve = |objective: &mut TermObjective<dyn LeastSquaresEvaluator>| {
            least_squares(objective, &x0, &LmOptions::default()).unwrap()
        };
        let (r_gpu, r_cpu) = (solve(&mut on_gpu), solve(&mut on_cpu));
        say(&format!(
            "{name}: LM on the GPU: status {}, nfev {}, cost {:e}; on the CPU: status {}, nfev {}, cost {:e}",
            r_gpu.status.code(),
            r_gpu.nfev,
            r_gpu.cost,
            r_cpu.status.code(),
            r_cpu.nfev,
            r_cpu.cost
        ));
        assert_eq!(r_gpu.status, r_cpu.status, "{name}");
    }
}
