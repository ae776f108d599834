//! The GPU backend, running the PTX cudamin ships. By default on the PTX simulator
//! (`--backend sim`), so every CI run executes every shipped entry and compares it with the
//! CPU; with `CUDAMIN_REQUIRE_GPU=1` (and feature `cuda`) on a real device, at sizes a
//! thousand times larger: `CUDAMIN_REQUIRE_GPU=1 cargo test --release --features cuda --test
//! gpu -- --include-ignored --test-threads=1 --nocapture` (benches/gpu_check.sh runs it; the
//! tables go to stderr). The few tests that only hardware can answer (the JIT's log) are
//! `#[ignore = "needs a GPU"]`.

mod common;

use common::relative_error;
use cudamin::Bounds;
use cudamin::kernels::Window;
use cudamin::kernels::fd::SQRT_EPS;
use cudamin::kernels::raw::RawKernel;
use cudamin::kernels::raw::examples::{DOT_SHARED, SQUARE_PLUS_TWO_X_PLUS_ONE};
use cudamin::plumbing::gpu::{DeviceVector, DeviceVectors};
use cudamin::plumbing::gpu::{ptx, simulated_entries};
use cudamin::plumbing::objective::{FixedObjective, Held};
use cudamin::plumbing::space::{BoxSpace, BoxVectors, Breakpoint, VectorSpace};
use cudamin::problems::fit::{FitData, MODELS, Model};
use cudamin::problems::fit_batch::{
    BLOCK_MIN_POINTS, Batch, Estimator, Points, Precision, fit_batch_on,
};
use cudamin::problems::{self, Instance, Problem};
use cudamin::{
    Backend, BackendChoice, BackendError, EvalError, Gradient, LaunchConfig, LaunchOverride,
    Method, Objective, OnBackend, OptimizeResult, Options, RawArg, TermObjective, Traffic,
};
use cudamin::{LeastSquaresEvaluator, StepBounds};
use cudamin::{
    LeastSquaresObjective, LeastSquaresResult, LmOptions, least_squares, minimize,
    minimize_with_observer,
};
use std::io::Write;
use std::ops::ControlFlow;

/// Whether the tests run on a real device (`CUDAMIN_REQUIRE_GPU=1`) instead of the simulator.
fn require_gpu() -> bool {
    std::env::var_os("CUDAMIN_REQUIRE_GPU").is_some_and(|v| v == "1")
}

/// Writes a line to stderr, outside the test harness's capture.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The GPU backend with `launch`: the simulator, or with `CUDAMIN_REQUIRE_GPU=1` a device
/// (and the test fails, never passes, when none answers).
fn gpu_with(launch: LaunchOverride) -> Backend {
    let choice = if require_gpu() {
        BackendChoice::Cuda
    } else {
        BackendChoice::Simulated
    };
    match cudamin::backend_with_launch(choice, launch) {
        Ok((backend, _)) => backend,
        Err(err) => panic!("no {choice:?} backend: {err}"),
    }
}

fn gpu() -> Backend {
    gpu_with(LaunchOverride::default())
}

/// `on_gpu` on a device, `simulated` on the simulator, which interprets every instruction of
/// every thread and so takes problems a thousand times smaller in the same time.
fn sized<T>(on_gpu: T, simulated: T) -> T {
    if require_gpu() { on_gpu } else { simulated }
}

/// Sizes past one block of threads, for the problems whose default is small or, on the
/// simulator, large: (problem, n and points on a GPU, n and points on the simulator). Every
/// other built-in problem runs at its default size. quadratic's window is dense: at n = 300
/// its exact kernels refuse it (the window limit is 64), at 64 they take it.
type Size = (Option<usize>, Option<usize>);
const SIZES: &[(&str, Size, Size)] = &[
    ("seed-expsum", (Some(100_000), None), (Some(3_000), None)),
    ("ext-rosenbrock", (Some(20_000), None), (Some(2_000), None)),
    ("rosenbrock", (Some(10_001), None), (Some(1_001), None)),
    ("ext-powell", (Some(10_000), None), (Some(1_000), None)),
    (
        "lsq-expsin",
        (Some(16), Some(200_000)),
        (Some(16), Some(1_000)),
    ),
    (
        "fit-expsin",
        (Some(16), Some(200_000)),
        (Some(16), Some(1_000)),
    ),
    (
        "poisson-regression",
        (Some(33), Some(200_000)),
        (Some(33), Some(1_000)),
    ),
    ("matmul-squares", (None, None), (Some(16 * 40), None)),
    ("quadratic", (Some(300), None), (Some(64), None)),
];

fn size_of(name: &str) -> Size {
    SIZES
        .iter()
        .find(|(n, ..)| *n == name)
        .map_or((None, None), |&(_, on_gpu, simulated)| {
            sized(on_gpu, simulated)
        })
}

/// How one problem's GPU value and gradients compare with the CPU's at `x0`.
struct Agreement {
    value: f64,
    forward: f64,
    /// What two correct forward-difference gradients may differ by (see [`compare`]).
    forward_bound: f64,
    central: f64,
    /// `None` where the GPU's exact kernels refuse the problem (a dense window wider than
    /// their limit): that refusal is checked, not compared.
    exact: Option<f64>,
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
        match gpu.evaluator.as_sum().gradient(&x, fd, &mut g_gpu) {
            Err(BackendError::ExactUnsupported(why)) if fd == Gradient::Exact => {
                assert!(why.contains("64"), "the refusal names the limit: {why}");
                return None;
            }
            other => other.unwrap(),
        }
        cpu.evaluator.as_sum().gradient(&x, fd, &mut g_cpu).unwrap();
        let same = g_gpu
            .iter()
            .zip(&g_cpu)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        Some((
            relative_error(&g_gpu, &g_cpu),
            same,
            common::gradient_scale(&g_cpu),
        ))
    };
    let (forward, forward_same, scale) = gradients(Gradient::Forward).unwrap();
    let (central, central_same, _) = gradients(Gradient::Central).unwrap();
    let exact = gradients(Gradient::Exact);
    let exact_same = exact.is_none_or(|(_, same, _)| same);
    // The fused pass: its gradient is the gradient kernels', its value the value's to rounding.
    for fd in Gradient::ALL {
        if fd == Gradient::Exact && exact.is_none() {
            continue;
        }
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
        exact: exact.map(|(error, ..)| error),
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
                matches!(
                    err,
                    BackendError::NoDevice(_)
                        | BackendError::PtxMissing(_)
                        | BackendError::CudaNotCompiled
                ),
                "{err:?}"
            );
            let (backend, why) = cudamin::backend(BackendChoice::Auto).unwrap();
            assert_eq!(backend.name(), "cpu", "auto never picks the simulator");
            assert!(
                why.contains(&err.to_string()),
                "the fallback reason `{why}` should name `{err}`"
            );
        }
    }
}

/// Every built-in problem: the value to 1e-12 relative, exact and central gradients to 1e-10,
/// forward gradients within [`compare`]'s bound, and banded (or separable) gradients bit for
/// bit; a dense window past the exact kernels' limit is refused with the limit named (issue
/// 25's first bug: this test unwrapped that refusal and stopped at `quadratic`).
#[test]
fn every_builtin_problem_matches_the_cpu() {
    let gpu = gpu();
    say(
        "problem              n   points | f rel. diff | forward rel. (bound)   | central rel. | exact rel. | same bits",
    );
    let mut failures = Vec::new();
    for problem in problems::all() {
        let (n, points) = size_of(problem.name);
        let mut on_gpu = problem.instantiate(&gpu, n, points).unwrap();
        let mut on_cpu = problem.instantiate(&Backend::Cpu, n, points).unwrap();
        let a = compare(&mut on_gpu, &mut on_cpu);
        let banded = on_cpu.window != Window::Dense;
        say(&format!(
            "{:<14} {:>7} {:>8} | {:>11.1e} | {:>9.1e} ({:>8.1e}) | {:>12.1e} | {:>10} | {}{}",
            problem.name,
            on_cpu.x0.len(),
            points.map_or(String::new(), |p| p.to_string()),
            a.value,
            a.forward,
            a.forward_bound,
            a.central,
            a.exact.map_or("refused".to_owned(), |e| format!("{e:.1e}")),
            if a.identical { "yes" } else { "no" },
            if banded { " (banded)" } else { "" },
        ));
        if a.value > 1e-12
            || a.forward > a.forward_bound
            || a.central > 1e-10
            || a.exact.is_some_and(|e| e > 1e-10)
            || (banded && !a.identical)
        {
            failures.push(problem.name);
        }
    }
    assert!(failures.is_empty(), "GPU and CPU disagree on {failures:?}");
}

/// Issue 25's first bug, on any backend: one variable past the exact kernels' dense window
/// limit, the exact gradient is refused with the limit named, and the other schemes still
/// agree with the CPU.
#[test]
fn a_dense_window_past_the_exact_limit_is_refused_and_the_rest_compared() {
    let gpu = gpu();
    let problem = problems::find("quadratic").unwrap();
    let mut on_gpu = problem.instantiate(&gpu, Some(65), None).unwrap();
    let mut on_cpu = problem.instantiate(&Backend::Cpu, Some(65), None).unwrap();
    let a = compare(&mut on_gpu, &mut on_cpu);
    assert_eq!(
        a.exact, None,
        "the exact kernels take at most 64 dense variables"
    );
    assert!(a.value <= 1e-12 && a.central <= 1e-10 && a.forward <= a.forward_bound);
}

#[test]
fn gpu_solves_match_the_cpu() {
    let gpu = gpu();
    for &(name, ..) in SIZES {
        let (n, points) = size_of(name);
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

/// Any block size and grid size gives the same value (to rounding: the block sums change),
/// gradient and normal equations as the CPU, or, where a kernel's registers do not allow the
/// block, a clear error.
#[test]
fn launch_sizes_change_nothing_but_rounding() {
    let problems: &[(&str, Size)] = &[
        (
            "seed-expsum",
            sized((Some(100_000), None), (Some(1_000), None)),
        ),
        ("rosenbrock", sized((Some(5_001), None), (Some(201), None))),
        (
            "lsq-expsin",
            sized((Some(16), Some(20_000)), (Some(16), Some(300))),
        ),
        ("mgh-16", (None, None)),
    ];
    let many_blocks = sized(10_000, 40);
    say("problem        threads blocks | f rel. diff | central rel. | JᵀJ rel.");
    for threads in [1, 31, 32, 33, 100, 1024] {
        for blocks in [1, 7, many_blocks] {
            let launch = LaunchOverride {
                threads: Some(threads),
                blocks: Some(blocks),
            };
            let gpu = gpu_with(launch);
            for &(name, (n, points)) in problems {
                let problem = problems::find(name).unwrap();
                // Only a block larger than a kernel allows may be refused, when the instance
                // loads or when a pass asks for that kernel.
                let refused = |text: String| {
                    assert!(
                        threads > 256 && text.contains("registers per thread"),
                        "{name} with {threads}×{blocks}: {text}"
                    );
                    say(&format!(
                        "{name:<14} {threads:>7} {blocks:>6} | refused: {text}"
                    ));
                };
                let mut on_gpu = match problem.instantiate(&gpu, n, points) {
                    Ok(instance) => instance,
                    Err(err) => {
                        refused(err.to_string());
                        continue;
                    }
                };
                if let Some(text) = launch_refusal(&mut on_gpu) {
                    refused(text);
                    continue;
                }
                let mut on_cpu = problem.instantiate(&Backend::Cpu, n, points).unwrap();
                let a = compare(&mut on_gpu, &mut on_cpu);
                let normal = normal_agreement(&mut on_gpu, &mut on_cpu, Gradient::Exact);
                say(&format!(
                    "{name:<14} {threads:>7} {blocks:>6} | {:>11.1e} | {:>12.1e} | {}",
                    a.value,
                    a.central,
                    normal.map_or("-".to_owned(), |e| format!("{e:.1e}"))
                ));
                assert!(
                    a.value <= 1e-12 && a.central <= 1e-10 && normal.is_none_or(|e| e <= 1e-10),
                    "{name} with {threads}×{blocks}"
                );
            }
        }
    }
}

/// The first [`BackendError::InvalidLaunch`] of the passes [`compare`] and
/// [`normal_agreement`] run on `instance` (every gradient scheme, the exact normal
/// equations); any other error fails the test.
fn launch_refusal(instance: &mut Instance) -> Option<String> {
    let x = instance.x0.clone();
    let refusal = |result: Result<f64, BackendError>| match result {
        Err(BackendError::InvalidLaunch(text)) => Some(text),
        other => other.map(|_| None).unwrap(),
    };
    let mut g = vec![0.0; x.len()];
    let sum = instance.evaluator.as_sum();
    for scheme in Gradient::ALL {
        if let Some(text) = refusal(sum.gradient(&x, scheme, &mut g).map(|()| 0.0)) {
            return Some(text);
        }
    }
    let residuals = instance.evaluator.least_squares()?;
    let (mut jtj, mut jtr) = (vec![0.0; x.len() * x.len()], vec![0.0; x.len()]);
    refusal(residuals.normal_equations(&x, Gradient::Exact, &mut jtj, &mut jtr))
}

/// The largest relative difference of the GPU's normal equations (`f`, `JᵀJ`, `Jᵀr`) from
/// the CPU's at the CPU instance's `x0`, or `None` for a problem without residuals.
fn normal_agreement(gpu: &mut Instance, cpu: &mut Instance, scheme: Gradient) -> Option<f64> {
    let n = cpu.x0.len();
    let x0 = cpu.x0.clone();
    let normal = |instance: &mut Instance| {
        let residuals = instance.evaluator.least_squares()?;
        let (mut jtj, mut jtr) = (vec![0.0; n * n], vec![0.0; n]);
        let f = residuals
            .normal_equations(&x0, scheme, &mut jtj, &mut jtr)
            .unwrap();
        Some((f, jtj, jtr))
    };
    let (f_gpu, jtj_gpu, jtr_gpu) = normal(gpu)?;
    let (f_cpu, jtj_cpu, jtr_cpu) = normal(cpu)?;
    let value = (f_gpu - f_cpu).abs() / f_cpu.abs().max(1.0);
    Some(
        value
            .max(relative_error(&jtj_gpu, &jtj_cpu))
            .max(relative_error(&jtr_gpu, &jtr_cpu)),
    )
}

#[test]
fn raw_kernels_run_on_the_gpu_with_any_block_size() {
    let gpu = gpu();
    let x: Vec<f64> = (0..sized(100_000, 5_000))
        .map(|i| (i as f64).sqrt() * 0.01)
        .collect();
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
fn evaluators_drop_cleanly_on_other_threads() {
    let gpu = gpu();
    let points = Some(sized(10_000, 1_000));
    let problem = problems::find("lsq-expsin").unwrap();
    let mut instance = problem.instantiate(&gpu, Some(8), points).unwrap();
    let f = instance.evaluator.as_sum().value(&instance.x0).unwrap();
    drop(gpu); // the evaluator now holds the launcher's last reference
    std::thread::spawn(move || drop(instance)).join().unwrap();

    let again_gpu = self::gpu();
    let mut again = problem.instantiate(&again_gpu, Some(8), points).unwrap();
    assert_eq!(again.evaluator.as_sum().value(&again.x0).unwrap(), f);
}

/// PTX that cannot be loaded is refused with the loader's reason: on a device, at the
/// kernel's first launch (a device compiles each kernel then), with the JIT compiler's own
/// log; on the simulator, which parses the whole PTX, when it opens, with the line and text.
#[test]
fn rejected_ptx_says_why() {
    const BROKEN: &str = ".version 7.0\n.target sm_70\n.address_size 64\n\
                          .visible .entry broken()\n{\n\tnot_an_instruction;\n\tret;\n}\n";
    const BROKEN_KERNEL: RawKernel = RawKernel {
        name: "broken",
        params: &[],
        cpu: None,
        block: None,
    };
    let choice = sized(BackendChoice::Cuda, BackendChoice::Simulated);
    let one_thread = LaunchConfig {
        blocks: 1,
        threads: 1,
    };
    let err = match Backend::select(choice, Ok(BROKEN), LaunchOverride::default()) {
        Ok((backend, _)) => backend
            .launch_raw(&BROKEN_KERNEL, one_thread, &mut [])
            .err(),
        Err(err) => Some(err),
    }
    .expect("the loader should refuse this PTX");
    let text = err.to_string();
    say(&format!("rejected PTX: {text}"));
    assert!(matches!(err, BackendError::PtxRejected(_)), "{err:?}");
    let names_why = sized("JIT log", "not_an_instruction");
    assert!(text.contains(names_why), "{text}");
}

/// Hides a term objective's GPU evaluator from the solver, which then keeps its vectors in
/// host memory and sends `x` over for every evaluation; all else is the objective's (its
/// reference gradient, its box for finite differences).
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
    fn value_and_gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<f64, EvalError> {
        self.0.value_and_gradient(x, g)
    }
    fn reference_gradient(
        &mut self,
        x: &[f64],
        into: &mut [f64],
    ) -> Result<Option<Gradient>, EvalError> {
        self.0.reference_gradient(x, into)
    }
    fn on_backend(&mut self) -> Option<&mut dyn OnBackend> {
        Some(self)
    }
}

/// No device and no pieces: only the box.
impl OnBackend for HostVectors {
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), EvalError> {
        self.0.confine_steps(bounds)
    }
}

/// L-BFGS, and BFGS past its dense limit, keep a GPU term objective's vectors on the device
/// (from 2¹⁵ variables). A solve ends where the same solve with host vectors ends (the dot
/// products round differently, so the paths may part at rounding level), and the observer's
/// `x` is the device's iterate. With 64 variables held fixed, L-BFGS keeps them there too (the
/// whole point and gradient on the device, `FixedObjective::device`).
#[test]
fn device_vectors_match_host_vectors() {
    let gpu = gpu();
    let device_min = 1 << 15;
    let cases = [
        (
            "seed-expsum",
            Method::Lbfgs,
            sized(1_000_000, device_min),
            None,
            false,
        ),
        (
            "seed-expsum",
            Method::Lbfgs,
            sized(1_000_000, device_min) + 64,
            None,
            true,
        ),
        (
            "seed-expsum",
            Method::Bfgs,
            sized(1_000_000, device_min),
            None,
            false,
        ),
        (
            "ext-rosenbrock",
            Method::Lbfgs,
            sized(100_000, device_min),
            None,
            false,
        ),
        (
            "ext-rosenbrock",
            Method::Bfgs,
            sized(100_000, 0),
            None,
            false,
        ),
        ("rosenbrock", Method::Lbfgs, sized(1_000, 0), None, false),
        (
            "lsq-expsin",
            Method::Lbfgs,
            sized(16, 0),
            Some(100_000),
            false,
        ),
    ];
    say(
        "problem        method       n   points | device s  nit | host s    nit | f rel. diff \
         | round trips, words an iteration (most)",
    );
    for (name, method, n, points, hold) in cases.into_iter().filter(|case| case.2 > 0) {
        let problem = problems::find(name).unwrap();
        let case = format!("{name} {}{}", method.name(), if hold { " fix" } else { "" });
        // L-BFGS copies its pairs over at the end (BFGS's dense matrix is refused at this n).
        // Held: 64 variables fixed, spread over the vector, the other 2¹⁵ (or 10⁶) free on the
        // device with the whole point and gradient there (`FixedObjective::device`).
        let options = Options {
            return_hess_inv: method == Method::Lbfgs,
            fixed: hold.then(|| (0..n).map(|i| i % (n / 64) == 1).collect()),
            ..Options::default()
        };
        let (on_device, host_solve) = solve_on_device_and_host(
            &gpu,
            problem,
            (n, points),
            Gradient::Central,
            method,
            &options,
        );
        let (d, d_s, h, h_s) = (
            &on_device.result,
            on_device.seconds,
            &host_solve.result,
            host_solve.seconds,
        );
        let f_diff = (d.fun - h.fun).abs() / h.fun.abs().max(1.0);
        // Below 2¹⁵ free variables the vectors stay on the host (no traffic but the
        // evaluations').
        let held = (options.fixed.iter().flatten()).filter(|&&f| f).count();
        assert_eq!(held, if hold { 64 } else { 0 }, "{case}");
        let on_device_vectors = d.x.len() - held >= device_min;
        let (trips, words) = if on_device_vectors {
            check_traffic(&case, on_device.result.x.len(), method, &on_device.traffic)
        } else {
            (0, 0)
        };
        say(&format!(
            "{name:<14} {:<6} {:>7} {:>8} | {d_s:>8.4} {:>4} | {h_s:>8.4} {:>4} | {f_diff:.1e} \
             | {trips}, {words}",
            method.name(),
            d.x.len(),
            points.map_or(String::new(), |p| p.to_string()),
            d.nit,
            h.nit
        ));
        assert_eq!(d.status, h.status, "{case}");
        // On host vectors every evaluation would move `x` over and `g` back; held on the
        // device, an iteration moves scalars and the line search's few words.
        if hold {
            assert!(
                (on_device.traffic.iter())
                    .any(|(t, _)| t.words_to_host + t.words_to_device < n as u64),
                "{case}: every iteration moved a vector's worth of words"
            );
        }
        assert!(f_diff <= 1e-8, "{case}: {} vs {}", d.fun, h.fun);
        // Central differences: the paths part at the differences' error (ext-rosenbrock's
        // steps by 6.4e-6 of the largest at 2¹⁵ on the simulator), as `f` may by 1e-8.
        if method == Method::Lbfgs {
            assert_eq!(
                d.nit, h.nit,
                "{case}: the pairs compared are of the same steps"
            );
            assert_pairs_match(&case, d, h, 1e-4);
        }
        assert_eq!(
            on_device.last_x, d.x,
            "{case}: the observer's last x is the result's"
        );
    }
}

/// An objective with variables held fixed evaluates on the device, through its free variables
/// (`FixedObjective::device`: the free values placed into the whole point, the free partials
/// gathered from the whole gradient), to the bits of its host evaluation, which writes and
/// reads them on the host: exact and central gradients, ext-rosenbrock at 1000 variables (its
/// coupled terms and a start that differs from variable to variable make any wrong index
/// change the numbers), every seventh held. A vector of the wrong length is refused.
fn held_evaluations_match_the_host(sim: &Backend) {
    let problem = problems::find("ext-rosenbrock").unwrap();
    for scheme in [Gradient::Exact, Gradient::Central] {
        let instance = problem.instantiate(sim, Some(1_000), None).unwrap();
        let n = instance.x0.len();
        let whole: Vec<f64> = (instance.x0.iter().enumerate())
            .map(|(i, v)| v + 0.3 * (i as f64 * 0.7).sin())
            .collect();
        let fixed: Vec<bool> = (0..n).map(|i| i % 7 == 3).collect();
        let held = Held::new(&whole, &fixed).unwrap();
        let x: Vec<f64> = (held.gather(&whole).iter().enumerate())
            .map(|(a, v)| v - 0.1 * (a as f64 * 0.3).cos())
            .collect();
        let mut term = TermObjective::new(instance.evaluator.into_sum(), scheme);
        let inner: &mut dyn Objective = &mut term;
        let mut objective = FixedObjective::new(inner, held);
        let k = x.len();
        let mut g_host = vec![0.0; k];
        let f_host = Objective::value_and_gradient(&mut objective, &x, &mut g_host).unwrap();
        let mut on_device = objective
            .device()
            .unwrap()
            .expect("the device, through the free variables");
        let mut space = on_device.vectors().unwrap();
        assert_eq!(VectorSpace::dim(&space), k);
        let dx = space.upload(&x).unwrap();
        let mut dg = space.zeros().unwrap();
        let f_device = on_device.value_and_gradient(&dx, &mut dg).unwrap();
        assert_eq!(f_device, f_host, "{scheme:?}");
        assert_eq!(on_device.value(&dx).unwrap(), f_host, "{scheme:?}");
        assert_eq!(
            space.download(&dg).unwrap().into_owned(),
            g_host,
            "{scheme:?}"
        );
        on_device.gradient(&dx, &mut dg).unwrap();
        assert_eq!(
            space.download(&dg).unwrap().into_owned(),
            g_host,
            "{scheme:?}"
        );
        let wrong = space.upload(&vec![0.0; k + 1]).unwrap();
        assert!(on_device.value(&wrong).is_err(), "{scheme:?}");
    }
}

/// Every breakpoint of `times` after `after`, in order, as `space` gives them `batch` at a time
/// once it has ordered them in `later`, with their rows of `rows`.
fn ordered_later<S: BoxSpace>(
    space: &mut S,
    times: &S::Vector,
    after: Breakpoint,
    rows: &[&S::Vector],
    batch: usize,
    later: &mut S::Later,
) -> (Vec<Breakpoint>, Vec<f64>) {
    space.order_later(times, after, later).unwrap();
    let (mut all, mut all_rows, mut batch_rows) = (Vec::new(), Vec::new(), Vec::new());
    loop {
        let next = space
            .next_later(later, rows, batch, &mut batch_rows)
            .unwrap();
        if next.is_empty() {
            return (all, all_rows);
        }
        assert!(next.len() <= batch && batch_rows.len() == next.len() * rows.len());
        all.extend(next);
        all_rows.extend_from_slice(&batch_rows);
    }
}

/// Every pass of a step within a box (`BoxSpace`) on device vectors against the host's on
/// the same values: the elementwise results, maxima, minima, counts, breakpoints and gathered
/// rows to the bit, the sums (slopes, products, the masked Gram) to 1e-12 of the sums of their
/// terms' sizes. `n` variables, some unbounded on one side or both; a step long enough to be
/// truncated. Runs each of the box passes' entries.
fn box_passes_match_the_host(device: &mut DeviceVectors, n: usize) {
    let mut host = cudamin::plumbing::space::HostVectors::new(n);
    let ramp = |f: &dyn Fn(usize) -> f64| -> Vec<f64> { (0..n).map(f).collect() };
    let lower = ramp(&|i| {
        if i % 7 == 0 {
            f64::NEG_INFINITY
        } else {
            -1.0 - (i % 5) as f64 * 0.1
        }
    });
    let upper = ramp(&|i| {
        if i % 11 == 0 {
            f64::INFINITY
        } else {
            1.0 + (i % 3) as f64 * 0.2
        }
    });
    let bounds = Bounds {
        lower: lower.clone(),
        upper: upper.clone(),
    };
    let x = ramp(&|i| bounds.clip(i, (i as f64 * 0.37).sin() * 1.5));
    let g = ramp(&|i| (i as f64 * 0.11).cos() * 2.0 - 0.3);
    let host_box = BoxVectors {
        lower: lower.clone(),
        upper: upper.clone(),
    };
    let up = |device: &mut DeviceVectors, v: &[f64]| VectorSpace::upload(device, v).unwrap();
    let device_box = BoxVectors {
        lower: up(device, &lower),
        upper: up(device, &upper),
    };
    let (dx, dg) = (up(device, &x), up(device, &g));
    fn down(device: &DeviceVectors, v: &DeviceVector) -> Vec<f64> {
        VectorSpace::download(device, v).unwrap().into_owned()
    }
    let close = |what: &str, a: f64, b: f64, size: f64| {
        assert!((a - b).abs() <= 1e-12 * size, "{what}: {a} vs {b}");
    };
    let size_of = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(a, b)| (a * b).abs()).sum::<f64>();

    // The path, its breakpoints and the projected gradient's norm, with and without a box.
    for with_box in [true, false] {
        let (hb, db) = if with_box {
            (Some(&host_box), Some(&device_box))
        } else {
            (None, None)
        };
        let (mut times, mut path) = (vec![0.0; n], vec![0.0; n]);
        let norm = host
            .steepest_path(hb, &x, &g, &mut times, &mut path)
            .unwrap();
        let (mut d_times, mut d_path) = (device.zeros().unwrap(), device.zeros().unwrap());
        let d_norm = device
            .steepest_path(db, &dx, &dg, &mut d_times, &mut d_path)
            .unwrap();
        assert_eq!(
            (down(device, &d_times), down(device, &d_path), d_norm),
            (times.clone(), path.clone(), norm)
        );
        assert_eq!(device.projected_gradient_norm(db, &dx, &dg).unwrap(), norm);
        let early = host.earliest_breakpoints(&times, None, 8).unwrap();
        assert_eq!(
            device.earliest_breakpoints(&d_times, None, 8).unwrap(),
            early
        );
        if let Some(&last) = early.0.last() {
            let mut later = Default::default();
            let on_host = ordered_later(&mut host, &times, last, &[&x, &g], 100, &mut later);
            let mut later = Default::default();
            let on_device = ordered_later(device, &d_times, last, &[&dx, &dg], 100, &mut later);
            assert_eq!(on_device, on_host);
        }
    }
    // A NaN in the gradient makes its projected norm NaN on both, with a box or without, and
    // the norm of the pair pass's new gradient: no convergence test passes on it.
    let mut g_nan = g.clone();
    g_nan[n / 2 + 1] = f64::NAN;
    let dg_nan = up(device, &g_nan);
    for (hb, db) in [(Some(&host_box), Some(&device_box)), (None, None)] {
        let (mut times, mut path) = (vec![0.0; n], vec![0.0; n]);
        let (mut d_times, mut d_path) = (device.zeros().unwrap(), device.zeros().unwrap());
        let norms = [
            (host.steepest_path(hb, &x, &g_nan, &mut times, &mut path)).unwrap(),
            (device.steepest_path(db, &dx, &dg_nan, &mut d_times, &mut d_path)).unwrap(),
            host.projected_gradient_norm(hb, &x, &g_nan).unwrap(),
            device.projected_gradient_norm(db, &dx, &dg_nan).unwrap(),
        ];
        assert!(
            norms.iter().all(|v| v.is_nan()),
            "box {}: {norms:?}",
            hb.is_some()
        );
    }

    // The earliest breakpoints, found from runs of the times: ties across runs (the lowest
    // indices first), the earliest crowded into the last run, one early breakpoint in each of
    // a few runs and in the reverse of their order, few, and none.
    let crafted: [(&str, Vec<f64>); 5] = [
        (
            "ties",
            ramp(&|i| if i % 3 == 0 { 0.5 } else { f64::INFINITY }),
        ),
        (
            "crowded",
            ramp(&|i| match n - i {
                left @ ..=100 => 1e-3 * left as f64,
                _ => 1.0 + (i % 13) as f64,
            }),
        ),
        (
            "spread",
            ramp(&|i| {
                if i % 97 == 0 {
                    1.0 + (n - i) as f64
                } else {
                    1e9
                }
            }),
        ),
        ("few", ramp(&|i| if i % 401 == 7 { 2.0 } else { 0.0 })),
        (
            "none",
            ramp(&|i| if i % 2 == 0 { 0.0 } else { f64::INFINITY }),
        ),
    ];
    for (what, times) in crafted {
        let d_times = up(device, &times);
        // Counts that leave runs out (at the simulator's n = 2000: 45 runs at count 1, 63 at
        // the others), up to the Cauchy walk's 64.
        for count in [1, 8, 24, 64] {
            assert_eq!(
                device.earliest_breakpoints(&d_times, None, count).unwrap(),
                host.earliest_breakpoints(&times, None, count).unwrap(),
                "{what}, the earliest {count}"
            );
        }
        // The next ones after the 24th earliest, as the Cauchy walk asks past the earliest
        // (ties at the 24th's time broken by index), and after a time no breakpoint has.
        let (early, _) = host.earliest_breakpoints(&times, None, 24).unwrap();
        let afters = early
            .last()
            .copied()
            .into_iter()
            .chain([Breakpoint(0.75, 5)]);
        for after in afters {
            for count in [1, 40, 256] {
                assert_eq!(
                    device
                        .earliest_breakpoints(&d_times, Some(after), count)
                        .unwrap(),
                    host.earliest_breakpoints(&times, Some(after), count)
                        .unwrap(),
                    "{what}, {count} after {after:?}"
                );
            }
        }
    }

    let (mut times, mut path) = (vec![0.0; n], vec![0.0; n]);
    host.steepest_path(Some(&host_box), &x, &g, &mut times, &mut path)
        .unwrap();
    let d_path = up(device, &path);

    // Rows, entries and a point of the path.
    let indices = [3, 0, n - 1, 17];
    let (mut h_rows, mut d_rows) = (vec![0.0; 16], vec![0.0; 16]);
    host.gather(&[&x, &g, &lower, &upper], &indices, &mut h_rows)
        .unwrap();
    let d_vectors = [&dx, &dg, &device_box.lower, &device_box.upper];
    device.gather(&d_vectors, &indices, &mut d_rows).unwrap();
    assert_eq!(d_rows, h_rows);
    let mut cauchy = vec![0.0; n];
    host.path_point(&x, 0.3, &path, &mut cauchy).unwrap();
    let mut d_cauchy = device.zeros().unwrap();
    device.path_point(&dx, 0.3, &d_path, &mut d_cauchy).unwrap();
    let entries = [(5, upper[5]), (n - 2, lower[n - 2]), (9, 0.25)];
    host.scatter(&mut cauchy, &entries).unwrap();
    device.scatter(&mut d_cauchy, &entries).unwrap();
    assert_eq!(down(device, &d_cauchy), cauchy);

    // The free variables, and the Gram matrix over them and over the others.
    let mut free = host.new_mask().unwrap();
    let mut d_free = device.new_mask().unwrap();
    let count = host.free_variables(&host_box, &cauchy, &mut free).unwrap();
    assert_eq!(
        device
            .free_variables(&device_box, &d_cauchy, &mut d_free)
            .unwrap(),
        count
    );
    let flags: Vec<f64> = free.iter().map(|&f| if f { 1.0 } else { 0.0 }).collect();
    assert_eq!(down(device, &d_free), flags);
    assert!(0 < count && count < n, "{count} of {n} free");
    // Nine columns: the masked passes sweep eight at a time.
    let extra: Vec<Vec<f64>> = (0..6)
        .map(|j| ramp(&|i| ((i * (j + 3)) as f64 * 0.013).sin() * (j + 1) as f64))
        .collect();
    let d_extra: Vec<DeviceVector> = extra.iter().map(|v| up(device, v)).collect();
    let scales = [1.0, 2.0, 1.0, 1.0, 2.0, 2.0, 1.0, 0.5, 3.0];
    let host_vectors = [&x, &g, &path].into_iter().chain(&extra);
    let columns: Vec<(f64, &Vec<f64>)> = scales.into_iter().zip(host_vectors).collect();
    let device_vectors = [&dx, &dg, &d_path].into_iter().chain(&d_extra);
    let d_columns: Vec<(f64, &DeviceVector)> = scales.into_iter().zip(device_vectors).collect();
    let width = columns.len();
    for keep in [true, false] {
        let u = [(1.0, &g), (2.0, &cauchy), (-2.0, &x)];
        let (gram, with_u) = host.masked_gram(&columns, &free, keep, &u).unwrap();
        let d_u = [(1.0, &dg), (2.0, &d_cauchy), (-2.0, &dx)];
        let (d_gram, d_with_u) = device.masked_gram(&d_columns, &d_free, keep, &d_u).unwrap();
        let scale = 9.0 * 36.0 * n as f64;
        for (a, b) in gram
            .iter()
            .chain(&with_u)
            .zip(d_gram.iter().chain(&d_with_u))
        {
            close("masked Gram", *b, *a, scale);
        }
        for a in 0..width {
            for b in 0..width {
                assert_eq!(
                    d_gram[a * width + b].to_bits(),
                    d_gram[b * width + a].to_bits()
                );
            }
        }
    }
    // Without `u`: its products are zeros, the Gram matrix the same.
    let (d_gram, d_with_u) = device.masked_gram(&d_columns, &d_free, true, &[]).unwrap();
    let (gram, _) = host.masked_gram(&columns, &free, true, &[]).unwrap();
    assert_eq!(d_with_u, vec![0.0; width]);
    for (a, b) in gram.iter().zip(&d_gram) {
        close("masked Gram without u", *b, *a, 9.0 * 36.0 * n as f64);
    }

    // The subspace step, its projection and the line toward it; then cut at the first bound.
    let terms = [(-4.0, &g), (0.5, &x)];
    let d_terms = [(-4.0, &dg), (0.5, &dx)];
    let (mut step, mut target, mut direction) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let (slope, room) = host
        .projected_step(
            &terms,
            &host_box,
            &free,
            &cauchy,
            &x,
            &g,
            &mut step,
            &mut target,
            &mut direction,
        )
        .unwrap();
    let mut d_step = device.zeros().unwrap();
    let (mut d_target, mut d_direction) = (device.zeros().unwrap(), device.zeros().unwrap());
    let (d_slope, d_room) = device
        .projected_step(
            &d_terms,
            &device_box,
            &d_free,
            &d_cauchy,
            &dx,
            &dg,
            &mut d_step,
            &mut d_target,
            &mut d_direction,
        )
        .unwrap();
    assert_eq!(down(device, &d_step), step);
    assert_eq!(down(device, &d_target), target);
    assert_eq!(down(device, &d_direction), direction);
    assert_eq!(d_room, room);
    close("projected slope", d_slope, slope, size_of(&g, &direction));
    host.truncated_step(&host_box, &free, &cauchy, &step, &mut target)
        .unwrap();
    device
        .truncated_step(&device_box, &d_free, &d_cauchy, &d_step, &mut d_target)
        .unwrap();
    assert_eq!(down(device, &d_target), target);
    // Cut: one free variable on the bound its step met, short of where the step went.
    let on_bound = (0..n).filter(|&i| {
        free[i]
            && target[i] != cauchy[i] + step[i]
            && (target[i] == lower[i] || target[i] == upper[i])
    });
    assert_eq!(on_bound.count(), 1, "the step is cut at its first bound");
    for with_box in [true, false] {
        let (hb, db) = if with_box {
            (Some(&host_box), Some(&device_box))
        } else {
            (None, None)
        };
        let (slope, room) = host.aim(hb, &x, &g, &target, &mut direction).unwrap();
        let (d_slope, d_room) = device
            .aim(db, &dx, &dg, &d_target, &mut d_direction)
            .unwrap();
        assert_eq!(
            (down(device, &d_direction), d_room),
            (direction.clone(), room)
        );
        close("aimed slope", d_slope, slope, size_of(&g, &direction));
    }

    // The line's points within the box, and the new pair.
    let mut point = vec![0.0; n];
    let mut d_point = device.zeros().unwrap();
    host.clipped_ray_point(&host_box, &x, 0.7, &direction, &mut point)
        .unwrap();
    device
        .clipped_ray_point(&device_box, &dx, 0.7, &d_direction, &mut d_point)
        .unwrap();
    assert_eq!(down(device, &d_point), point);
    // Which bound each clipped point is at: some at each, the rest inside.
    let mut mask = vec![0.0; n];
    host.active_mask(&host_box, &point, &mut mask).unwrap();
    let mut d_mask = device.zeros().unwrap();
    device
        .active_mask(&device_box, &d_point, &mut d_mask)
        .unwrap();
    assert_eq!(down(device, &d_mask), mask);
    let expected = bounds.active_mask(&point, None);
    assert_eq!(
        mask,
        expected.iter().map(|&a| f64::from(a)).collect::<Vec<_>>()
    );
    assert!([-1.0, 0.0, 1.0].iter().all(|a| mask.contains(a)));
    let g_new = ramp(&|i| (i as f64 * 0.23).sin() - 0.1);
    let d_g_new = up(device, &g_new);
    let (mut s, mut y) = (vec![0.0; n], vec![0.0; n]);
    let sums = host
        .new_pair(0.7, &direction, &g_new, &g, &mut s, &mut y)
        .unwrap();
    let (mut d_s, mut d_y) = (device.zeros().unwrap(), device.zeros().unwrap());
    let d_sums = device
        .new_pair(0.7, &d_direction, &d_g_new, &dg, &mut d_s, &mut d_y)
        .unwrap();
    assert_eq!(
        (down(device, &d_s), down(device, &d_y)),
        (s.clone(), y.clone())
    );
    assert_eq!(d_sums.g_new_max, sums.g_new_max);
    for (what, a, b, size) in [
        ("sᵀy", d_sums.sy, sums.sy, size_of(&s, &y)),
        ("yᵀy", d_sums.yy, sums.yy, size_of(&y, &y)),
        ("sᵀs", d_sums.ss, sums.ss, size_of(&s, &s)),
        ("gᵀs", d_sums.gs, sums.gs, size_of(&g, &s)),
        ("g₊ᵀg₊", d_sums.gg, sums.gg, size_of(&g_new, &g_new)),
    ] {
        close(what, a, b, size);
    }
    // A NaN in the new gradient: its norm is NaN on both.
    let mut g_nan = g_new.clone();
    g_nan[n / 2 + 1] = f64::NAN;
    let d_g_nan = up(device, &g_nan);
    let sums = (host.new_pair(0.7, &direction, &g_nan, &g, &mut s, &mut y)).unwrap();
    let d_sums = (device.new_pair(0.7, &d_direction, &d_g_nan, &dg, &mut d_s, &mut d_y)).unwrap();
    assert!(sums.g_new_max.is_nan() && d_sums.g_new_max.is_nan());
}

/// The box passes on device vectors against the host's (see [`box_passes_match_the_host`]).
#[test]
fn box_passes_match_host_vectors() {
    let gpu = gpu();
    let n = sized(1_000_000, 2_000);
    let problem = problems::find("seed-expsum").unwrap();
    let instance = problem.instantiate(&gpu, Some(n), None).unwrap();
    let mut objective = TermObjective::new(instance.evaluator.into_sum(), Gradient::Exact);
    let mut space = objective.device().unwrap().unwrap().vectors().unwrap();
    box_passes_match_the_host(&mut space, n);
}

/// A scatter of more entries than one launch writes (a Cauchy path past every breakpoint) lands
/// every entry, as the host's does: the launches split it, each with a small table.
#[test]
fn a_scatter_of_every_variable_matches_the_host() {
    let gpu = gpu();
    let n = 80_000;
    let problem = problems::find("seed-expsum").unwrap();
    let instance = problem.instantiate(&gpu, Some(n), None).unwrap();
    let mut objective = TermObjective::new(instance.evaluator.into_sum(), Gradient::Exact);
    let mut device = objective.device().unwrap().unwrap().vectors().unwrap();
    let mut host = cudamin::plumbing::space::HostVectors::new(n);
    let start: Vec<f64> = (0..n).map(|i| (i as f64 * 0.3).sin()).collect();
    // Every variable but every seventh, from the last back.
    let entries: Vec<(usize, f64)> = ((0..n).rev())
        .filter(|i| i % 7 != 0)
        .map(|i| (i, 0.5 * i as f64))
        .collect();
    assert!(entries.len() > 1 << 16);
    let mut on_host = start.clone();
    host.scatter(&mut on_host, &entries).unwrap();
    let mut on_device = device.upload(&start).unwrap();
    device.scatter(&mut on_device, &entries).unwrap();
    assert_eq!(device.download(&on_device).unwrap().into_owned(), on_host);
}

/// The earliest breakpoints picked from runs of the times, and all of them after one put in
/// order on the device, are the host's whatever the launch: a warp per run with 1, 33 or 100
/// threads per block (warps of fewer than 32 lanes), on one block or three; ties (the same
/// time at every fifth variable) in index order; the order's storage used again.
#[test]
fn earliest_breakpoints_match_the_host_at_any_block_size() {
    let n = sized(100_000, 2_000);
    let times: Vec<f64> = (0..n)
        .map(|i| match (i % 97, i % 5) {
            (0, _) => 1.0 + (n - i) as f64,
            (_, 0) => 1e9,
            _ => 0.0,
        })
        .collect();
    let mut host = cudamin::plumbing::space::HostVectors::new(n);
    let problem = problems::find("seed-expsum").unwrap();
    for threads in [1, 33, 100] {
        for blocks in [1, 3] {
            let launch = LaunchOverride {
                threads: Some(threads),
                blocks: Some(blocks),
            };
            let instance = problem
                .instantiate(&gpu_with(launch), Some(n), None)
                .unwrap();
            let mut objective = TermObjective::new(instance.evaluator.into_sum(), Gradient::Exact);
            let mut space = objective.device().unwrap().unwrap().vectors().unwrap();
            let on_device = VectorSpace::upload(&mut space, &times).unwrap();
            for count in [1, 24, 64] {
                assert_eq!(
                    space.earliest_breakpoints(&on_device, None, count).unwrap(),
                    host.earliest_breakpoints(&times, None, count).unwrap(),
                    "{threads} threads × {blocks} blocks, the earliest {count}"
                );
            }
            let (early, _) = host.earliest_breakpoints(&times, None, 30).unwrap();
            let (mut on_host, mut on_gpu) = (Default::default(), Default::default());
            for after in [early[29], Breakpoint(0.0, 0), early[3]] {
                let rest = ordered_later(&mut host, &times, after, &[&times], 333, &mut on_host);
                let rows = [&on_device];
                let d_rest = ordered_later(&mut space, &on_device, after, &rows, 333, &mut on_gpu);
                assert_eq!(rest.1, rest.0.iter().map(|b| b.0).collect::<Vec<_>>());
                assert_eq!(
                    d_rest, rest,
                    "{threads} threads × {blocks} blocks, after {after:?}"
                );
            }
        }
    }
}

/// The pairs of a device solve, left on the device (copied to the host, over every variable,
/// where some are fixed) and copied here, are those of the same solve on host vectors to `rtol`
/// of the largest `s` (and of the largest `y`): the sums that weigh each direction round
/// differently (ext-rosenbrock's part by 2.1e-10 at 2¹⁵ on the simulator, 33 iterations in,
/// both kinds on one scale).
fn assert_pairs_match(case: &str, device: &OptimizeResult, host: &OptimizeResult, rtol: f64) {
    let kept = device.hess_inv_pairs_on_device.as_ref();
    assert!(kept.is_some() != device.hess_inv_pairs.is_some(), "{case}");
    let copied = kept.map(|pairs| pairs.to_host().unwrap());
    let on_device = copied.as_ref().or(device.hess_inv_pairs.as_ref()).unwrap();
    let on_host = host.hess_inv_pairs.as_ref().unwrap();
    assert!(host.hess_inv_pairs_on_device.is_none(), "{case}");
    assert_eq!(on_device.s().len(), on_host.s().len(), "{case}");
    for (kind, d, h) in [
        ("s", on_device.s(), on_host.s()),
        ("y", on_device.y(), on_host.y()),
    ] {
        let (d, h) = (d.concat(), h.concat());
        assert_eq!(d.len(), h.len(), "{case}");
        let scale = h.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        let apart = (d.iter().zip(&h)).fold(0.0_f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(
            apart <= rtol * scale,
            "{case}: the pairs' {kind} {apart:e} apart, of {scale:e}"
        );
    }
}

/// A solve watched from its observer.
struct ObservedSolve {
    result: OptimizeResult,
    /// The observer's last `x`.
    last_x: Vec<f64>,
    /// Whether the observer was handed a copy (a device iterate) rather than the solver's own
    /// host vector.
    copied: bool,
    /// Each iteration's device traffic and evaluations (see [`TrafficCounter`]).
    traffic: Vec<(Traffic, usize)>,
    seconds: f64,
}

/// `problem` at `size` (variables, data points) solved on `gpu`'s device vectors, then on host
/// vectors (the same evaluator behind [`HostVectors`]).
fn solve_on_device_and_host(
    gpu: &Backend,
    problem: &Problem,
    (n, points): (usize, Option<usize>),
    gradient: Gradient,
    method: Method,
    options: &Options,
) -> (ObservedSolve, ObservedSolve) {
    let on_device = problem.instantiate(gpu, Some(n), points).unwrap();
    let mut device = TermObjective::new(on_device.evaluator.into_sum(), gradient);
    let device_solve = observed_solve(&mut device, &on_device.x0, method, options, Some(gpu));
    let on_host = problem.instantiate(gpu, Some(n), points).unwrap();
    let mut host = HostVectors(TermObjective::new(on_host.evaluator.into_sum(), gradient));
    let host_solve = observed_solve(&mut host, &on_host.x0, method, options, None);
    (device_solve, host_solve)
}

/// Solves by `method`, counting each iteration's traffic on `counted` (the backend solved on;
/// none for host vectors), less the observer's own copy of `x`.
fn observed_solve(
    objective: &mut dyn Objective,
    x0: &[f64],
    method: Method,
    options: &Options,
    counted: Option<&Backend>,
) -> ObservedSolve {
    let mut last_x = Vec::new();
    let mut copied = false;
    let start = std::time::Instant::now();
    let mut counter = TrafficCounter::new(counted);
    let result = minimize_with_observer(objective, x0, method, options, &mut |it| {
        counter.iteration_done(it.nfev);
        let x = it.x().unwrap();
        copied = matches!(x, std::borrow::Cow::Owned(_));
        last_x = x.into_owned();
        counter.skip_observer();
        ControlFlow::Continue(())
    })
    .unwrap();
    ObservedSolve {
        result,
        last_x,
        copied,
        traffic: counter.per_iteration,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// Each iteration's device traffic in a solve, counted from the observer: what the device was
/// asked between one iteration's report and the next, less the observer's own copy of `x`.
struct TrafficCounter<'a> {
    backend: Option<&'a Backend>,
    counted: Traffic,
    nfev: usize,
    /// Each iteration's traffic and evaluations.
    per_iteration: Vec<(Traffic, usize)>,
}

impl<'a> TrafficCounter<'a> {
    /// Counts on `backend`'s device (the one solved on); nothing without one.
    fn new(backend: Option<&'a Backend>) -> Self {
        let mut counter = Self {
            backend,
            counted: Traffic::default(),
            nfev: 0,
            per_iteration: Vec::new(),
        };
        counter.counted = counter.now();
        counter
    }

    fn now(&self) -> Traffic {
        self.backend.and_then(Backend::traffic).unwrap_or_default()
    }

    /// An iteration ended, after `nfev` evaluations in all.
    fn iteration_done(&mut self, nfev: usize) {
        let traffic = self.now() - self.counted;
        self.per_iteration.push((traffic, nfev - self.nfev));
        self.nfev = nfev;
    }

    /// The observer's own traffic is not the solve's.
    fn skip_observer(&mut self) {
        self.counted = self.now();
    }
}

/// Round trips (waits for a copy to the host, and copies to the device, which a CUDA device
/// waits for too) an iteration on device vectors may make besides those of its evaluations and
/// of the Cauchy walk's full batches. At 2¹⁵ variables on the simulator L-BFGS makes 5–7,
/// L-BFGS-B 6 without a box and 20–39 with one (the passes' sums and tables, the earliest
/// breakpoints, the walk's first batches). A walk fetching the breakpoints past the earliest
/// 64 one at a time made thousands (an H200 run of 2026-11-28, 20× slower than the CPU).
const ROUND_TRIPS_AN_ITERATION: u64 = 48;
/// Round trips an evaluation adds: its value, and its slope along the line.
const ROUND_TRIPS_AN_EVALUATION: u64 = 2;

/// Checks one device solve's traffic (`n` variables, by `method`), iteration by iteration:
/// round trips that do not grow with `n` but for two per 2¹⁶ variables (the Cauchy walk
/// gathers the rows of breakpoints in batches of at most 2¹⁶, a table over and the rows back
/// each) and, for BFGS, whose implicit form walks its pairs one by one, two per pair: at most
/// [`ROUND_TRIPS_AN_ITERATION`] and [`ROUND_TRIPS_AN_EVALUATION`] for each evaluation besides;
/// and at most four launches per round trip. Allocations (and their frees, which CUDA waits
/// for too) are not budgeted: a solve's memory fills over its first iterations, by how many
/// depends on the data. Returns the most round trips and words (copied either way) of any
/// iteration, for the table.
fn check_traffic(
    case: &str,
    n: usize,
    method: Method,
    per_iteration: &[(Traffic, usize)],
) -> (u64, u64) {
    let (mut most_trips, mut most_words) = (0, 0);
    for (i, (t, evaluations)) in per_iteration.iter().enumerate() {
        let pair_trips = if method == Method::Bfgs { 2 * i } else { 0 };
        let allowed = ROUND_TRIPS_AN_ITERATION
            + ROUND_TRIPS_AN_EVALUATION * *evaluations as u64
            + 2 * (n >> 16) as u64
            + pair_trips as u64;
        let trips = t.waits + t.writes;
        let at = format!("{case}, iteration {i} ({evaluations} evaluations): {t:?}");
        assert!(trips <= allowed, "{at}: more than {allowed} round trips");
        assert!(
            t.launches <= 4 * allowed,
            "{at}: more than {} launches",
            4 * allowed
        );
        most_trips = most_trips.max(trips);
        most_words = most_words.max(t.words_to_host + t.words_to_device);
    }
    (most_trips, most_words)
}

/// L-BFGS-B keeps a GPU term objective's vectors on the device from 2¹⁵ variables, bounded or
/// not: each solve ends where the same solve with host vectors ends (same status, iterations
/// and evaluations, the same active set, `f` to 1e-12), and the observer's `x` is the device's.
#[test]
fn device_lbfgsb_matches_host_vectors() {
    let gpu = gpu();
    // 64 more than 2¹⁵: held, 64 variables leave the device's least.
    let n = sized(1_000_000, (1 << 15) + 64);
    // seed-expsum (minimum near −0.35) with a third of the variables bounded above it, and a box
    // that binds nowhere; the first with 64 variables fixed too (`Options::fixed`: the whole
    // point and gradient on the device as well); ext-rosenbrock below 0.9.
    let third = Bounds {
        lower: (0..n)
            .map(|i| if i % 3 == 0 { -0.2 } else { -2.0 })
            .collect(),
        upper: vec![1.0; n],
    };
    let loose = Bounds {
        lower: vec![-5.0; n],
        upper: vec![f64::INFINITY; n],
    };
    let below = Bounds {
        lower: vec![f64::NEG_INFINITY; n],
        upper: vec![0.9; n],
    };
    let every = n / 64;
    let held: Vec<bool> = (0..n).map(|i| i % every == 1).collect();
    let cases = [
        ("seed-expsum", Some(third.clone()), 10, None),
        ("seed-expsum", Some(third), 10, Some(held)),
        ("seed-expsum", Some(loose), 10, None),
        ("seed-expsum", None, 10, None),
        ("ext-rosenbrock", Some(below), 3, None),
    ];
    say(
        "problem          n | device s  nit | host s    nit | f rel. diff | active \
         | round trips, words an iteration (most)",
    );
    for (problem_name, bounds, memory, fixed) in cases {
        let problem = problems::find(problem_name).unwrap();
        let name = if fixed.is_some() {
            "seed-expsum fix"
        } else {
            problem_name
        };
        let options = Options {
            bounds,
            memory,
            return_hess_inv: true,
            fixed,
            ..Options::default()
        };
        let method = Method::LbfgsB;
        let (on_device, host_solve) =
            solve_on_device_and_host(&gpu, problem, (n, None), Gradient::Exact, method, &options);
        let (trips, words) = check_traffic(name, n, method, &on_device.traffic);
        let (d, d_s, h, h_s) = (
            &on_device.result,
            on_device.seconds,
            &host_solve.result,
            host_solve.seconds,
        );
        let f_diff = (d.fun - h.fun).abs() / h.fun.abs().max(1.0);
        // The observer is handed a copy of a device iterate, and a host one's own vector (held
        // variables: a whole point either way). On host vectors every evaluation would move
        // `x` over and `g` back, 2n words; on the device's, iterations past the Cauchy walk's
        // first batches move scalars, tables and a few rows.
        if d.nit > 0 && options.fixed.is_none() {
            assert!(
                on_device.copied && !host_solve.copied,
                "{name}: the device's vectors on the device"
            );
        }
        assert!(
            (on_device.traffic.iter()).any(|(t, _)| t.words_to_host + t.words_to_device < n as u64),
            "{name}: every iteration moved a vector's worth of words"
        );
        let active = |x: &[f64]| {
            let bounds = options
                .bounds
                .clone()
                .unwrap_or_else(|| Bounds::unbounded(n));
            bounds.active_mask(x, None)
        };
        say(&format!(
            "{name:<14} {n:>7} | {d_s:>8.4} {:>4} | {h_s:>8.4} {:>4} | {f_diff:.1e} | {:>6} \
             | {trips}, {words}",
            d.nit,
            h.nit,
            active(&d.x).iter().filter(|&&a| a != 0).count()
        ));
        assert_eq!(
            (d.status, d.nit, d.nfev),
            (h.status, h.nit, h.nfev),
            "{name}"
        );
        assert!(d.success, "{name}: {}", d.message);
        assert!(f_diff <= 1e-12, "{name}: {} vs {}", d.fun, h.fun);
        assert_eq!(active(&d.x), active(&h.x), "{name}");
        assert_pairs_match(name, d, h, 1e-8);
        if d.nit > 0 {
            assert_eq!(
                on_device.last_x, d.x,
                "{name}: the observer's last x is the result's"
            );
        }
    }
}

/// The passes over many device vectors (L-BFGS's products, its direction, the end of a step)
/// give the bits of the one-vector operations they replace: every product, the combination
/// and the step's vectors and sums, for 1 to 21 vectors (the sweep of 8 and its tails).
#[test]
fn fused_vector_passes_keep_the_one_vector_bits() {
    let gpu = gpu();
    let n = sized(1_000_000, 3_000);
    let problem = problems::find("seed-expsum").unwrap();
    let instance = problem.instantiate(&gpu, Some(n), None).unwrap();
    let mut objective = TermObjective::new(instance.evaluator.into_sum(), Gradient::Exact);
    let mut space = objective.device().unwrap().unwrap().vectors().unwrap();
    let host: Vec<Vec<f64>> = (0..22)
        .map(|j| {
            let phase = 0.1 + 0.37 * j as f64;
            (0..n)
                .map(|i| (i as f64 * phase).sin() * (1.0 + j as f64))
                .collect()
        })
        .collect();
    let vectors: Vec<_> = host.iter().map(|v| space.upload(v).unwrap()).collect();
    let with = &vectors[21];
    for count in [1, 2, 8, 9, 16, 21] {
        let some: Vec<_> = vectors[..count].iter().collect();
        let mut fused = vec![0.0; count];
        space.dots(&some, &[with], &mut fused).unwrap();
        let one_by_one: Vec<f64> = some.iter().map(|v| space.dot(v, with).unwrap()).collect();
        assert_eq!(bits(&fused), bits(&one_by_one), "{count} products");
    }
    for count in [1, 3, 21] {
        let terms: Vec<(f64, _)> = (0..count)
            .map(|j| (0.5 - 0.25 * j as f64, &vectors[j]))
            .collect();
        let mut fused = space.zeros().unwrap();
        let fused_dot = space.combine_dot(&terms, &mut fused, with).unwrap();
        let mut by_axpy = space.zeros().unwrap();
        space.copy(terms[0].1, &mut by_axpy).unwrap();
        space.scale(terms[0].0, &mut by_axpy).unwrap();
        for &(c, v) in &terms[1..] {
            space.axpy(c, v, &mut by_axpy).unwrap();
        }
        let by_axpy_dot = space.dot(with, &by_axpy).unwrap();
        assert_eq!(fused_dot.to_bits(), by_axpy_dot.to_bits(), "{count} terms");
        assert_eq!(
            bits(&space.download(&fused).unwrap()),
            bits(&space.download(&by_axpy).unwrap()),
            "{count} terms"
        );
    }
    for ord in [f64::INFINITY, 2.0] {
        let (mut p, mut g) = (
            space.upload(&host[0]).unwrap(),
            space.upload(&host[1]).unwrap(),
        );
        let end = space.finish_step(0.75, &mut p, with, &mut g, ord).unwrap();
        let (mut p1, mut g1) = (
            space.upload(&host[0]).unwrap(),
            space.upload(&host[1]).unwrap(),
        );
        space.scale(0.75, &mut p1).unwrap();
        space.difference(with, &mut g1).unwrap();
        let by_passes = [
            space.dot(&p1, &g1).unwrap(),
            space.dot(&g1, &g1).unwrap(),
            space.norm(with, ord).unwrap(),
            space.norm(&p1, 2.0).unwrap(),
        ];
        let fused = [end.sy, end.yy, end.gradient_norm, end.step_norm];
        assert_eq!(bits(&fused), bits(&by_passes), "step end, ord {ord}");
        assert_eq!(
            bits(&space.download(&p).unwrap()),
            bits(&space.download(&p1).unwrap())
        );
        assert_eq!(
            bits(&space.download(&g).unwrap()),
            bits(&space.download(&g1).unwrap())
        );
    }
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// Data on `8·i/points` for the fit models: two decaying exponentials and a sine, positive.
fn fit_data(points: usize) -> FitData {
    let x: Vec<f64> = (0..points)
        .map(|i| 8.0 * i as f64 / points as f64)
        .collect();
    FitData {
        y: x.iter()
            .map(|&x| 2.0 * (-0.7 * x).exp() + (-0.2 * x).exp() + 0.5 * (2.0 * x).sin())
            .collect(),
        x,
        sigma: None,
    }
}

/// Prints how a least-squares solve ended on each backend.
fn say_solves(name: &str, on_gpu: &LeastSquaresResult, on_cpu: &LeastSquaresResult) {
    let line = |r: &LeastSquaresResult| {
        format!(
            "status {}, nfev {}, cost {:e}",
            r.status.code(),
            r.nfev,
            r.cost
        )
    };
    say(&format!(
        "{name}: on the GPU: {}; on the CPU: {}",
        line(on_gpu),
        line(on_cpu)
    ));
}

/// Robust fits on the GPU: each loss rescales the rows in the GPU's triangle pass and sums
/// the costs in its `_cost` kernel, and Levenberg–Marquardt ends where it ends on the CPU
/// (the same parameters to 1e-8, the same status), on data with outliers, every loss of the
/// table and every Jacobian scheme's factor alike at the start.
#[test]
fn robust_fits_on_the_gpu_match_the_cpu() {
    let mut data = fit_data(sized(100_000, 400));
    for (i, y) in data.y.iter_mut().enumerate() {
        // Every 23rd point an outlier, by far.
        if i % 23 == 5 {
            *y += 3.0 + (i % 7) as f64;
        }
    }
    let model = MODELS.iter().find(|m| m.name == "expsin").unwrap();
    let on = |backend: &Backend| {
        let instance = model.instantiate(backend, Some(5), &data, None).unwrap();
        let x0 = instance.x0.clone();
        (instance.evaluator.into_least_squares().unwrap(), x0)
    };
    for loss in cudamin::Loss::ALL {
        let options = LmOptions {
            loss,
            f_scale: 0.5,
            ..LmOptions::default()
        };
        let robust = cudamin::RobustLoss { loss, f_scale: 0.5 };
        let ((mut gpu, x0), (mut cpu, _)) = (on(&gpu()), on(&Backend::Cpu));
        for scheme in Gradient::ALL {
            let n = x0.len();
            let (mut on_gpu, mut on_cpu) = (cudamin::Factor::new(n), cudamin::Factor::new(n));
            let cost_gpu = gpu.factor(&x0, scheme, robust, &mut on_gpu).unwrap();
            let cost_cpu = cpu.factor(&x0, scheme, robust, &mut on_cpu).unwrap();
            assert!(
                (cost_gpu - cost_cpu).abs() <= 1e-12 * cost_cpu,
                "{loss:?} {scheme:?}: cost {cost_gpu} vs {cost_cpu}"
            );
            let normal = |factor: &cudamin::Factor| {
                let (mut jtj, mut jtr) = (vec![0.0; n * n], vec![0.0; n]);
                factor.normal_equations_into(&mut jtj, &mut jtr);
                (jtj, jtr)
            };
            let ((jtj_gpu, jtr_gpu), (jtj_cpu, jtr_cpu)) = (normal(&on_gpu), normal(&on_cpu));
            let error = relative_error(&jtj_gpu, &jtj_cpu).max(relative_error(&jtr_gpu, &jtr_cpu));
            // Past Huber's corner ρ' + 2ρ''z cancels to zero, rounded either way, and
            // `max(·, ε)` then sets the outliers' row scales: 1.8e-9 apart here with exact
            // rows; the other losses agree to 1e-10.
            assert!(
                error <= 1e-8,
                "{loss:?} {scheme:?}: RᵀR and Rᵀ(Qᵀr) {error:e} apart"
            );
        }
        let fit = |residuals| {
            let mut objective = TermObjective::new(residuals, Gradient::Exact);
            least_squares(&mut objective, &x0, &options).unwrap()
        };
        let (r_gpu, r_cpu) = (fit(gpu), fit(cpu));
        say_solves(&format!("{loss:?}"), &r_gpu, &r_cpu);
        assert!(
            r_cpu.success && r_gpu.success,
            "{loss:?}: {r_gpu:?} vs {r_cpu:?}"
        );
        assert!(
            relative_error(&r_gpu.x, &r_cpu.x) <= 1e-8,
            "{loss:?}: {:?} vs {:?}",
            r_gpu.x,
            r_cpu.x
        );
    }
}

/// Rows whose last Jacobian columns are all zero over a group of them (exp-decay's second
/// component, `1.5·e^{−5x}`, underflows past x ≈ 150) skip those columns' reflections, and the
/// triangle pass still folds them race-free (the simulator's race check stopped it before a
/// barrier closed the fold): every scheme's `RᵀR` and `Rᵀ(Qᵀr)` those of the CPU.
#[test]
fn a_fold_whose_last_columns_are_zero_is_race_free() {
    let x: Vec<f64> = (0..400).map(f64::from).collect();
    let y = x.iter().map(|&x| 3.0 * (-0.01 * x).exp() + 0.1).collect();
    let data = FitData { x, y, sigma: None };
    let model = MODELS.iter().find(|m| m.name == "exp-decay").unwrap();
    let p0 = [3.0, 0.01, 1.5, 5.0];
    let normal_equations = |backend: &Backend, scheme: Gradient| {
        let instance = model.instantiate(backend, Some(4), &data, None).unwrap();
        let mut residuals = instance.evaluator.into_least_squares().unwrap();
        let mut factor = cudamin::Factor::new(4);
        let robust = cudamin::RobustLoss::default();
        residuals.factor(&p0, scheme, robust, &mut factor).unwrap();
        let (mut jtj, mut jtr) = (vec![0.0; 16], vec![0.0; 4]);
        factor.normal_equations_into(&mut jtj, &mut jtr);
        (jtj, jtr)
    };
    for scheme in Gradient::ALL {
        let (jtj_gpu, jtr_gpu) = normal_equations(&gpu(), scheme);
        let (jtj_cpu, jtr_cpu) = normal_equations(&Backend::Cpu, scheme);
        let error = relative_error(&jtj_gpu, &jtj_cpu).max(relative_error(&jtr_gpu, &jtr_cpu));
        assert!(error <= 1e-12, "{scheme:?}: {error:e} apart");
    }
}

/// Sines of huge arguments on the GPU are the CPU's: expsin's data from 10⁶ to 10³⁰⁰, where
/// the argument reduction takes its Payne–Hanek path, give the same value and exact gradient.
/// The model's sines are of `k·x`, so `θ_k`'s partial sums them alone: a wrong reduction
/// would move it by the sum's size.
#[test]
fn sines_of_huge_arguments_match_the_cpu() {
    let x: Vec<f64> = (0..300).map(|i| 1e6 * 10f64.powf(f64::from(i))).collect();
    let y = x.iter().map(|&x| 0.3 * (2.0 * x).sin()).collect();
    let data = FitData { x, y, sigma: None };
    let model = MODELS.iter().find(|m| m.name == "expsin").unwrap();
    let theta = [0.5, 1.0, 0.3, -0.2, 0.1];
    let evaluate = |backend: &Backend| {
        let instance = model.instantiate(backend, Some(5), &data, None).unwrap();
        let evaluator = instance.evaluator.into_sum();
        let mut objective = TermObjective::new(evaluator, Gradient::Exact);
        let mut g = vec![0.0; 5];
        let f = objective.value_and_gradient(&theta, &mut g).unwrap();
        [&[f][..], &g].concat()
    };
    let (on_gpu, on_cpu) = (evaluate(&gpu()), evaluate(&Backend::Cpu));
    let error = relative_error(&on_gpu, &on_cpu);
    assert!(error <= 1e-12, "{on_gpu:?} vs {on_cpu:?}: {error:e} apart");
    // e^(−x) is 0 at every point: f and the sines' partials are what remain.
    let sines = [on_cpu[0], on_cpu[3], on_cpu[4], on_cpu[5]];
    assert!(
        sines.iter().all(|v| v.is_finite() && v.abs() > 1.0),
        "{on_cpu:?}"
    );
}

/// A box for finite differences around `x`: every third variable at its upper bound, every
/// third at its lower bound, the rest in a gap whose upper side is shorter than a forward step
/// and both sides than a central one.
fn box_around(x: &[f64]) -> StepBounds {
    let inf = f64::INFINITY;
    let (lower, upper): (Vec<f64>, Vec<f64>) = (x.iter().enumerate())
        .map(|(i, &v)| match i % 3 {
            0 => (-inf, v),
            1 => (v, inf),
            _ => {
                let scale = v.abs().max(1.0);
                (v - 2e-8 * scale, v + 1e-8 * scale)
            }
        })
        .unzip();
    StepBounds::new(&lower, &upper)
}

/// Finite differences within a box, on the GPU as on the CPU: with variables at either bound
/// and in gaps narrower than a step, the banded kernels (seed-expsum's disjoint windows,
/// rosenbrock's overlapping ones), the dense kernels with their finishing stage (lsq-expsin)
/// and a residual term's triangle rows (expsin) give the CPU's results, which the box changed.
#[test]
fn boxed_differences_match_the_cpu() {
    let gpu = gpu();
    for name in ["seed-expsum", "rosenbrock", "lsq-expsin"] {
        let (n, points) = size_of(name);
        let problem = problems::find(name).unwrap();
        let mut on_gpu = problem.instantiate(&gpu, n, points).unwrap();
        let mut on_cpu = problem.instantiate(&Backend::Cpu, n, points).unwrap();
        let x = on_cpu.x0.clone();
        let bounds = box_around(&x);
        let f = on_cpu.evaluator.as_sum().value(&x).unwrap();
        for fd in [Gradient::Forward, Gradient::Central] {
            let gradient = |instance: &mut Instance, bounds: &StepBounds| {
                let evaluator = instance.evaluator.as_sum();
                evaluator.confine_steps(bounds).unwrap();
                let mut g = vec![0.0; x.len()];
                evaluator.gradient(&x, fd, &mut g).unwrap();
                g
            };
            let open = gradient(&mut on_cpu, &StepBounds::default());
            let (g_gpu, g_cpu) = (
                gradient(&mut on_gpu, &bounds),
                gradient(&mut on_cpu, &bounds),
            );
            // As `compare` allows: the blocks' and chunks' sums of differences round apart.
            let scale = common::gradient_scale(&g_cpu);
            let allowed = (4.0 * f64::EPSILON * f.abs() / SQRT_EPS / scale).max(1e-10);
            let error = relative_error(&g_gpu, &g_cpu);
            assert!(error <= allowed, "{name} {fd:?}: {error:e} > {allowed:e}");
            assert_ne!(g_cpu, open, "{name} {fd:?}: the box changed no step");
        }
    }
    let data = fit_data(sized(20_000, 400));
    let model = MODELS.iter().find(|m| m.name == "expsin").unwrap();
    let on = |backend: &Backend| {
        let instance = model.instantiate(backend, Some(5), &data, None).unwrap();
        (
            instance.evaluator.into_least_squares().unwrap(),
            instance.x0,
        )
    };
    let ((mut gpu, x0), (mut cpu, _)) = (on(&gpu), on(&Backend::Cpu));
    let n = x0.len();
    let bounds = box_around(&x0);
    for scheme in [Gradient::Forward, Gradient::Central] {
        let normal = |residuals: &mut Box<dyn LeastSquaresEvaluator>, bounds: &StepBounds| {
            residuals.confine_steps(bounds).unwrap();
            let mut factor = cudamin::Factor::new(n);
            let robust = cudamin::RobustLoss::default();
            residuals.factor(&x0, scheme, robust, &mut factor).unwrap();
            let (mut jtj, mut jtr) = (vec![0.0; n * n], vec![0.0; n]);
            factor.normal_equations_into(&mut jtj, &mut jtr);
            jtj.extend(jtr);
            jtj
        };
        let open = normal(&mut cpu, &StepBounds::default());
        let (on_gpu, on_cpu) = (normal(&mut gpu, &bounds), normal(&mut cpu, &bounds));
        let error = relative_error(&on_gpu, &on_cpu);
        assert!(error <= 1e-8, "{scheme:?}: RᵀR and Rᵀ(Qᵀr) {error:e} apart");
        assert!(
            relative_error(&on_cpu, &open) > 1e-10,
            "{scheme:?}: the box changed no row"
        );
    }
}

/// A bounded fit (trust-region reflective, on the GPU's triangle and cost kernels) ends as on
/// the CPU: the same status, evaluations and active set, the parameters to 1e-8. The bounds
/// cut off the unbounded answer in two parameters, so both end on a bound.
#[test]
fn bounded_fits_on_the_gpu_match_the_cpu() {
    let data = fit_data(sized(100_000, 400));
    let model = MODELS.iter().find(|m| m.name == "expsin").unwrap();
    let inf = f64::INFINITY;
    let options = LmOptions {
        bounds: Some(cudamin::Bounds {
            lower: vec![-inf, -inf, -inf, 0.1, -inf],
            upper: vec![inf, 0.3, inf, inf, inf],
        }),
        ..LmOptions::default()
    };
    // The fit, and where its trials are factored, the waits it took.
    let fit = |backend: &Backend| {
        let instance = model.instantiate(backend, Some(5), &data, None).unwrap();
        let residuals = instance.evaluator.into_least_squares().unwrap();
        let mut objective = TermObjective::new(residuals, Gradient::Exact);
        let x0 = vec![1.0, 0.2, 1.0, 0.5, 1.0];
        let before = backend.traffic();
        let result = least_squares(&mut objective, &x0, &options).unwrap();
        let waits = (backend.traffic().zip(before)).map(|(after, before)| (after - before).waits);
        (result, waits.filter(|_| objective.factors_trials()))
    };
    let ((on_gpu, waits), (on_cpu, _)) = (fit(&gpu()), fit(&Backend::Cpu));
    say_solves("bounded expsin", &on_gpu, &on_cpu);
    if let Some(waits) = waits {
        // trf factors each trial too: one pass and one wait a trial, its start's included.
        assert_eq!(
            waits as usize, on_gpu.nfev,
            "bounded expsin: one wait per pass"
        );
    }
    assert!(on_cpu.success, "{}", on_cpu.message);
    assert_eq!(on_cpu.active_mask.as_deref(), Some(&[0, 1, 0, -1, 0][..]));
    assert_eq!(
        (on_gpu.status, on_gpu.nfev, &on_gpu.active_mask),
        (on_cpu.status, on_cpu.nfev, &on_cpu.active_mask)
    );
    assert!(
        relative_error(&on_gpu.x, &on_cpu.x) <= 1e-8,
        "{:?} vs {:?}",
        on_gpu.x,
        on_cpu.x
    );
}

/// The GPU's normal equations (`RᵀR` and `Rᵀ(Qᵀr)` of its `_triangle_` kernels' blocks,
/// folded in block order) against the CPU's sums, for every MGH sum of squares and every fit
/// model, each scheme: the same row code on both sides, so they differ by rounding (a few ε
/// of the summed magnitudes). Then Levenberg–Marquardt on the GPU ends as on the CPU.
#[test]
fn normal_equations_agree_with_the_cpu() {
    let gpu = gpu();
    let data = fit_data(sized(100_000, 1_000));
    let mut pairs: Vec<(String, Instance, Instance)> = Vec::new();
    for model in MODELS {
        let on = |b: &Backend| common::fit_instance(model, b, &data);
        pairs.push((format!("{} fit", model.name), on(&gpu), on(&Backend::Cpu)));
    }
    for problem in problems::all().filter(|p| p.name.starts_with("mgh-")) {
        let on = |b: &Backend| problem.instantiate(b, None, None).unwrap();
        let (mut g, c) = (on(&gpu), on(&Backend::Cpu));
        if g.evaluator.least_squares().is_some() {
            g.x0 = c.x0.clone();
            pairs.push((problem.name.to_owned(), g, c));
        }
    }
    for (name, mut gpu_instance, mut cpu_instance) in pairs {
        for scheme in Gradient::ALL {
            let error = normal_agreement(&mut gpu_instance, &mut cpu_instance, scheme).unwrap();
            assert!(error <= 1e-10, "{name} ({}): {error:e}", scheme.name());
        }
        let x0 = cpu_instance.x0.clone();
        let residuals = |instance: Instance| instance.evaluator.into_least_squares().unwrap();
        let mut on_gpu = TermObjective::new(residuals(gpu_instance), Gradient::Exact);
        let mut on_cpu = TermObjective::new(residuals(cpu_instance), Gradient::Exact);
        let solve = |objective: &mut TermObjective<dyn LeastSquaresEvaluator>| {
            least_squares(objective, &x0, &LmOptions::default()).unwrap()
        };
        let before = gpu.traffic().unwrap();
        let r_gpu = solve(&mut on_gpu);
        let waits = (gpu.traffic().unwrap() - before).waits as usize;
        let r_cpu = solve(&mut on_cpu);
        say_solves(&name, &r_gpu, &r_cpu);
        if on_gpu.factors_trials() {
            // Each trial's sum comes from a factor pass, which an accepted step keeps: one
            // wait per pass, and a second where `JᵀJ` refuses Cholesky and the rows are folded.
            let nfev = r_gpu.nfev;
            assert!(
                nfev <= waits && waits <= 2 * nfev,
                "{name}: {waits} waits for {nfev} passes"
            );
            // expsin's columns are well apart; mgh-24's pivots stay near the refusal, so after
            // the first factor each pass folds its rows at once.
            if name == "expsin fit" || name == "mgh-24" {
                assert_eq!(waits, nfev, "{name}: one wait per pass");
            }
        }
        // Both fold the rows, in blocks on the GPU and in chunks on the CPU: the paths part at
        // rounding level, may end by different tests, and each ends where `ftol` (1e-8,
        // relative) stops it.
        assert_eq!(
            r_gpu.success, r_cpu.success,
            "{name}: {r_gpu:?} vs {r_cpu:?}"
        );
        assert!(
            (r_gpu.cost - r_cpu.cost).abs() <= 1e-6 * r_cpu.cost + 1e-20,
            "{name}: cost {} vs {}",
            r_gpu.cost,
            r_cpu.cost
        );
    }
}

/// An exp-decay fit at a point where its first amplitude is 0: the column of its rate in `J`
/// vanishes. The instances on `backend` and on the CPU, both at that point.
fn vanishing_column(backend: &Backend, points: usize) -> (Instance, Instance) {
    let model = MODELS.iter().find(|m| m.name == "exp-decay").unwrap();
    let data = fit_data(points);
    let mut cpu = common::fit_instance(model, &Backend::Cpu, &data);
    cpu.x0[0] = 0.0;
    let mut on = common::fit_instance(model, backend, &data);
    on.x0 = cpu.x0.clone();
    (on, cpu)
}

/// Where `JᵀJ` refuses Cholesky, the GPU folds each block's rows into a triangle and the blocks'
/// triangles into one on the device, a level of pair folds at a time, and only that triangle
/// comes back: the normal equations still agree with the CPU's. The first pass waits for the
/// refused Gram sums, then for the fold; the later ones fold at once, one wait each.
#[test]
fn a_vanishing_column_folds_the_blocks_triangles_on_the_device() {
    let gpu = gpu();
    let (mut on_gpu, mut on_cpu) = vanishing_column(&gpu, sized(100_000, 1_000));
    for (pass, scheme) in Gradient::ALL.into_iter().enumerate() {
        let before = gpu.traffic().unwrap();
        let error = normal_agreement(&mut on_gpu, &mut on_cpu, scheme).unwrap();
        let waits = (gpu.traffic().unwrap() - before).waits;
        assert!(error <= 1e-10, "{}: {error:e}", scheme.name());
        assert_eq!(waits, if pass == 0 { 2 } else { 1 }, "{}", scheme.name());
    }
}

/// Every entry of the embedded PTX executes on the simulator, each through the path that
/// ships it (a problem's evaluation, a fit's normal equations, a solver's device vectors, a
/// raw launch), with no fault; the line `simulated entries: executed E of T` says how many.
/// The comparisons with the CPU are the other tests'; this one makes sure none is missed.
#[test]
fn every_shipped_entry_executes_on_the_simulator() {
    let (sim, _) = cudamin::backend(BackendChoice::Simulated).unwrap();
    // Every built-in problem: the value, each gradient scheme, the fused pass; and the
    // normal equations of those with residuals.
    for problem in problems::all() {
        let (n, points) = SIZES
            .iter()
            .find(|(name, ..)| *name == problem.name)
            .map_or((None, None), |&(.., simulated)| simulated);
        let mut instance = problem.instantiate(&sim, n, points).unwrap();
        run_every_pass(problem.name, &mut instance);
    }
    let data = fit_data(300);
    for model in MODELS {
        let mut instance = common::fit_instance(model, &sim, &data);
        run_every_pass(model.name, &mut instance);
        // Two fits of 40 points, one per thread; one of 256, by a block.
        run_batch(model, &sim, &data, &instance.x0, (2, 40));
        run_batch(model, &sim, &data, &instance.x0, (1, BLOCK_MIN_POINTS));
    }
    // A fit whose `JᵀJ` refuses Cholesky: its blocks' triangles fold on the device.
    let (mut folded, _) = vanishing_column(&sim, 300);
    let n = folded.x0.len();
    let (mut jtj, mut jtr) = (vec![0.0; n * n], vec![0.0; n]);
    let residuals = folded.evaluator.least_squares().unwrap();
    (residuals.normal_equations(&folded.x0.clone(), Gradient::Exact, &mut jtj, &mut jtr)).unwrap();
    // A solver's vectors on the device: every vector operation, against the host's. Past one
    // tile of the breakpoint sort, so that a step between tiles runs too.
    let n = 1_100;
    let problem = problems::find("seed-expsum").unwrap();
    let instance = problem.instantiate(&sim, Some(n), None).unwrap();
    let mut objective = TermObjective::new(instance.evaluator.into_sum(), Gradient::Exact);
    let mut space = objective.device().unwrap().unwrap().vectors().unwrap();
    let a: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos() - 0.5).collect();
    let (da, mut db) = (space.upload(&a).unwrap(), space.upload(&b).unwrap());
    let mut out = space.zeros().unwrap();
    space.ray_point(&da, 0.25, &db, &mut out).unwrap();
    space.axpy(-2.0, &da, &mut db).unwrap();
    space.scale(3.0, &mut db).unwrap();
    space.difference(&da, &mut out).unwrap();
    let dot = space.dot(&out, &db).unwrap();
    let max_abs = space.norm(&db, f64::INFINITY).unwrap();
    // The passes over many vectors; their bits are `fused_vector_passes_keep_the_one_vector_bits`'
    // to check.
    let mut products = [0.0; 2];
    space.dots(&[&da, &db], &[&out], &mut products).unwrap();
    let mut combined = space.zeros().unwrap();
    space
        .combine_dot(&[(1.0, &da), (2.0, &db)], &mut combined, &out)
        .unwrap();
    let mut scratch = space.upload(&b).unwrap();
    (space.finish_step(0.5, &mut combined, &da, &mut scratch, 2.0)).unwrap();
    let on_host = |f: &dyn Fn(f64, f64) -> f64| -> Vec<f64> {
        a.iter().zip(&b).map(|(&a, &b)| f(a, b)).collect()
    };
    let out_host = on_host(&|a, b| a - (a + 0.25 * b));
    let db_host = on_host(&|a, b| 3.0 * (b - 2.0 * a));
    let dot_host: f64 = out_host.iter().zip(&db_host).map(|(x, y)| x * y).sum();
    assert_eq!(space.download(&db).unwrap().into_owned(), db_host);
    assert_eq!(space.download(&out).unwrap().into_owned(), out_host);
    assert!((dot - dot_host).abs() <= 1e-12 * dot_host.abs().max(1.0));
    assert_eq!(
        max_abs,
        db_host.iter().fold(0.0, |m: f64, v| m.max(v.abs()))
    );
    // The passes of a step within a box.
    box_passes_match_the_host(&mut space, n);
    // Variables held fixed: the free ones placed into the whole point, their partials gathered.
    held_evaluations_match_the_host(&sim);
    // The raw kernels' examples.
    let x = [0.5, -1.0, 2.0];
    let mut squares = [0.0; 3];
    let config = LaunchConfig {
        blocks: 1,
        threads: 32,
    };
    (sim.launch_raw(
        &SQUARE_PLUS_TWO_X_PLUS_ONE,
        config,
        &mut [RawArg::In(&x), RawArg::Out(&mut squares)],
    ))
    .unwrap();
    let mut dot = [0.0];
    (sim.launch_raw(
        &DOT_SHARED,
        config,
        &mut [RawArg::In(&x), RawArg::In(&x), RawArg::Out(&mut dot)],
    ))
    .unwrap();
    assert_eq!((squares, dot), ([2.25, 0.0, 9.0], [5.25]));
    // A fit's weights made on the device by the host's rule: 1/σ, NaN unless σ is positive
    // and finite.
    let sigma = [0.25, -1.0, f64::INFINITY, 3.0, f64::MIN_POSITIVE];
    let on_device = sim.to_device(&sigma).unwrap();
    let w = sim.device_weights(Some(&on_device), sigma.len()).unwrap();
    let rule = |s: f64| {
        if s > 0.0 && s.is_finite() {
            1.0 / s
        } else {
            f64::NAN
        }
    };
    let expected: Vec<f64> = sigma.into_iter().map(rule).collect();
    assert_eq!(
        format!("{:?}", w.to_host().unwrap()),
        format!("{expected:?}")
    );
    // A column of a row-major table gathered on the device; one reaching past it is refused.
    let rows = sim.to_device(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
    let column = sim.device_strided(&rows, (1, 2), 3).unwrap();
    assert_eq!(column.to_host().unwrap(), [2.0, 4.0, 6.0]);
    assert!(sim.device_strided(&rows, (1, 3), 2).is_ok());
    assert!(sim.device_strided(&rows, (1, 3), 3).is_err());

    let shipped: Vec<String> = ptx::entries(cudamin::PTX.unwrap())
        .unwrap()
        .into_iter()
        .map(|entry| entry.name)
        .collect();
    let executed = simulated_entries();
    let missed: Vec<&String> = shipped.iter().filter(|e| !executed.contains(*e)).collect();
    say(&format!(
        "simulated entries: executed {} of {}",
        shipped.len() - missed.len(),
        shipped.len()
    ));
    assert!(missed.is_empty(), "never executed: {missed:?}");
}

/// `fits` small fits of `model` at once on `backend`'s batch kernel, of `points` points each,
/// from `x0` (at most eight parameters: four for a model that takes more by default): on one
/// predictor, `data`'s, or where the model takes two, a spot on a grid. Each must end by one
/// of MINPACK's rules (status ≥ 0), not fail. Where the model has a Poisson kernel, it runs
/// too, on the data's magnitudes.
fn run_batch(
    model: &Model,
    backend: &Backend,
    data: &FitData,
    x0: &[f64],
    (fits, points): (usize, usize),
) {
    let p = if x0.len() <= 8 { x0.len() } else { 4 };
    let one = [&data.x[..fits * points]];
    let (u, v): (Vec<f64>, Vec<f64>) = (0..fits * points)
        .map(|i| (((i % 7) as f64), ((i / 7 % 6) as f64)))
        .unzip();
    let spot: Vec<f64> = (u.iter().zip(&v))
        .map(|(a, b)| 3.0 * (-((a - 3.0).powi(2) + (b - 2.5).powi(2)) / 4.0).exp() + 0.5)
        .collect();
    let two = [&u[..], &v[..]];
    let fit_by = |estimator: Estimator, x: &[&[f64]], y: &[f64]| {
        let batch = Batch {
            x,
            y,
            sigma: None,
            points: Points::Each(points),
            p0: &x0[..p],
            precision: Precision::F64,
            estimator,
        };
        fit_batch_on(backend, model, p, batch, &LmOptions::default(), false)
    };
    let fit = |x: &[&[f64]], y: &[f64]| fit_by(Estimator::LeastSquares, x, y);
    if model.takes_poisson() {
        let counts: Vec<f64> = data.y[..fits * points].iter().map(|y| y.abs()).collect();
        (fit_by(Estimator::Poisson, &one, &counts))
            .or_else(|_| fit_by(Estimator::Poisson, &two, &spot))
            .unwrap_or_else(|e| panic!("{} poisson batch: {e}", model.name));
    }
    let result = fit(&one, &data.y[..fits * points])
        .or_else(|_| fit(&two, &spot))
        .unwrap_or_else(|e| panic!("{} batch: {e}", model.name));
    assert!(
        result.status.iter().all(|&s| s >= 0),
        "{} batch: {:?}",
        model.name,
        result.message
    );
}

/// The value, every gradient scheme plain and fused, and where the instance has residuals
/// every scheme's triangle (through the normal equations) and the cost under a robust loss, at
/// its `x0`; each must run without a fault.
fn run_every_pass(name: &str, instance: &mut Instance) {
    let x = instance.x0.clone();
    let n = x.len();
    let sum = instance.evaluator.as_sum();
    sum.value(&x)
        .unwrap_or_else(|e| panic!("{name} value: {e}"));
    let mut g = vec![0.0; n];
    for scheme in Gradient::ALL {
        (sum.gradient(&x, scheme, &mut g)).unwrap_or_else(|e| panic!("{name} {scheme:?}: {e}"));
        (sum.value_and_gradient(&x, scheme, &mut g))
            .unwrap_or_else(|e| panic!("{name} fused {scheme:?}: {e}"));
    }
    if let Some(residuals) = instance.evaluator.least_squares() {
        let (mut jtj, mut jtr) = (vec![0.0; n * n], vec![0.0; n]);
        for scheme in Gradient::ALL {
            (residuals.normal_equations(&x, scheme, &mut jtj, &mut jtr))
                .unwrap_or_else(|e| panic!("{name} normal {scheme:?}: {e}"));
        }
        let loss = cudamin::RobustLoss {
            loss: cudamin::Loss::Cauchy,
            f_scale: 2.0,
        };
        (residuals.evaluate(&x, cudamin::Evaluation::Cost { loss }))
            .unwrap_or_else(|e| panic!("{name} cost: {e}"));
    }
}
