//! my-kernels' PTX executed, without a GPU, on cudamin's PTX simulator (`--backend sim`):
//! every entry runs, through the paths a solve takes, and agrees with the CPU running the same
//! Rust source. The simulator checks each launch as compute-sanitizer would (out-of-bounds
//! accesses, races, divergent barriers), so a kernel bug fails here with its thread and address.

use cudamin::kernels::{L2Penalty, LeastSquares, SumOfSquares};
use cudamin::plumbing::gpu::{DeviceVectors, ptx, simulated_entries};
use cudamin::plumbing::objective::{FixedObjective, Held};
use cudamin::plumbing::space::{BoxSpace, BoxVectors, Breakpoint, HostVectors, VectorSpace};
use cudamin::problems::fit::Model;
use cudamin::problems::fit_batch::{
    BLOCK_MIN_POINTS, Batch, BatchResult, Estimator, Points, Precision, fit_batch_on,
};
use cudamin::{
    Backend, BackendChoice, Evaluation, Evaluator, Gradient, LaunchOverride, LeastSquaresEvaluator,
    LmOptions, Loss, RobustLoss, TermObjective, TermProblem, least_squares,
};
use my_kernels::michaelis_menten::MICHAELIS_MENTEN_BATCH;
use my_kernels::{BrownAlmostLinear, MichaelisMenten, RobustLine, TwoPredictors};

cudamin::include_ptx!("my_kernels");

/// A residual problem loaded on a backend.
type LoadedResiduals = Box<dyn LeastSquaresEvaluator>;

/// The simulator with my-kernels loaded, or `None` after saying why the test is skipped.
fn simulator() -> Option<Backend> {
    if let Err(why) = PTX {
        let required = std::env::var_os("CUDAMIN_REQUIRE_PTX").is_some_and(|v| v == "1");
        assert!(!required, "no PTX: {why}");
        eprintln!("skipped: no PTX ({why})");
        return None;
    }
    let choice = BackendChoice::Simulated;
    Some(
        Backend::select(choice, PTX, LaunchOverride::default())
            .unwrap()
            .0,
    )
}

/// `points` rows of `t` and `y` around `y = 1.5 + 0.5 t`, every seventh far off.
fn line(points: usize) -> Vec<f64> {
    let t: Vec<f64> = (0..points)
        .map(|j| 10.0 * j as f64 / points as f64)
        .collect();
    let y = t.iter().enumerate().map(|(j, t)| {
        let off = if j % 7 == 0 {
            6.0
        } else {
            0.1 * (j as f64).sin()
        };
        1.5 + 0.5 * t + off
    });
    t.iter().copied().chain(y).collect()
}

/// Substrate values `s` and rates `v` for `(V, K) = (2.5, 1.2)`, slightly perturbed.
fn rates(points: usize) -> Vec<f64> {
    let s: Vec<f64> = (0..points)
        .map(|j| 0.1 + 9.9 * j as f64 / points as f64)
        .collect();
    let v = s
        .iter()
        .enumerate()
        .map(|(j, s)| 2.5 * s / (1.2 + s) + 0.01 * (j as f64).cos());
    // s, v and the weights w = 1/σ, all 1.
    s.iter()
        .copied()
        .chain(v)
        .chain(vec![1.0; points])
        .collect()
}

/// Two predictors `x₁`, `x₂` and `y ≈ 2 − 1.5·x₁·e^{−0.4·x₂}`, slightly perturbed, with the
/// weights w = 1.
fn surface(points: usize) -> Vec<f64> {
    let x1: Vec<f64> = (0..points).map(|j| (j % 25) as f64 / 5.0).collect();
    let x2: Vec<f64> = (0..points).map(|j| (j / 25) as f64 / 7.0).collect();
    let y = (x1.iter().zip(&x2).enumerate())
        .map(|(j, (a, b))| 2.0 - 1.5 * a * (-0.4 * b).exp() + 0.01 * (j as f64).sin());
    x1.iter()
        .chain(&x2)
        .copied()
        .chain(y)
        .chain(vec![1.0; points])
        .collect()
}

/// A residual problem loaded by `load` on the simulator and on the CPU: the normal equations
/// of each scheme at `at`, the gradient of its sum of squares (BFGS's), its value and costs,
/// and Levenberg–Marquardt from `at`, least squares and with a robust loss, agree.
fn residuals_agree(sim: &Backend, at: &[f64], load: impl Fn(&Backend) -> LoadedResiduals) {
    let (mut on_sim, mut on_cpu) = (load(sim), load(&Backend::Cpu));
    let n = at.len();
    for scheme in Gradient::ALL {
        let normal = |residuals: &mut dyn LeastSquaresEvaluator| {
            let (mut jtj, mut jtr) = (vec![0.0; n * n], vec![0.0; n]);
            let f = (residuals.normal_equations(at, scheme, &mut jtj, &mut jtr)).unwrap();
            [&[f][..], &jtj, &jtr].concat()
        };
        let (sim_normal, cpu_normal) = (normal(on_sim.as_mut()), normal(on_cpu.as_mut()));
        assert!(
            close(&sim_normal, &cpu_normal, 1e-10),
            "{scheme:?}: {sim_normal:?} vs {cpu_normal:?}"
        );
        gradients_agree(on_sim.as_mut(), on_cpu.as_mut(), at, scheme);
    }
    // The sum of squares (the `_value` kernel) and each loss's cost (the `_cost` kernel) at
    // `at`: a GPU's small fits take their trials' sums from the factor pass, so the fits below
    // need not run these.
    let (f_sim, f_cpu) = (on_sim.value(at).unwrap(), on_cpu.value(at).unwrap());
    assert!(close(&[f_sim], &[f_cpu], 1e-12), "{f_sim} vs {f_cpu}");
    for loss in [Loss::Linear, Loss::SoftL1] {
        let loss = RobustLoss { loss, f_scale: 1.0 };
        let cost = |residuals: &mut dyn LeastSquaresEvaluator| {
            residuals.evaluate(at, Evaluation::Cost { loss }).unwrap()
        };
        let (c_sim, c_cpu) = (cost(on_sim.as_mut()), cost(on_cpu.as_mut()));
        assert!(
            close(&[c_sim], &[c_cpu], 1e-12),
            "{loss:?}: {c_sim} vs {c_cpu}"
        );
    }
    let mut sim_objective = TermObjective::new(on_sim, Gradient::Exact);
    let mut cpu_objective = TermObjective::new(on_cpu, Gradient::Exact);
    for loss in [Loss::Linear, Loss::SoftL1] {
        let options = LmOptions {
            loss,
            ..LmOptions::default()
        };
        let sim_fit = least_squares(&mut sim_objective, at, &options).unwrap();
        let cpu_fit = least_squares(&mut cpu_objective, at, &options).unwrap();
        assert_eq!(sim_fit.status, cpu_fit.status, "{loss:?}");
        // The two backends round the sums differently; the fit moves that rounding into x
        // amplified by J's condition number, which R's diagonal bounds from below.
        let conditioned = 1e3 * f64::EPSILON * diagonal_ratio(&cpu_fit.factor.r, n);
        let tolerance = conditioned.clamp(1e-10, 1e-6);
        assert!(
            close(&sim_fit.x, &cpu_fit.x, tolerance),
            "{loss:?}: {:?} vs {:?}",
            sim_fit.x,
            cpu_fit.x
        );
    }
}

/// The gradients of `scheme` at `at` on the simulator and on the CPU agree: to rounding, but
/// for forward differences, which divide the values' rounding by h ≈ 1.5e-8.
fn gradients_agree(
    on_sim: &mut dyn Evaluator,
    on_cpu: &mut dyn Evaluator,
    at: &[f64],
    scheme: Gradient,
) {
    let (mut g_sim, mut g_cpu) = (vec![0.0; at.len()], vec![0.0; at.len()]);
    on_sim.gradient(at, scheme, &mut g_sim).unwrap();
    on_cpu.gradient(at, scheme, &mut g_cpu).unwrap();
    let tolerance = if scheme == Gradient::Forward {
        1e-6
    } else {
        1e-10
    };
    assert!(
        close(&g_sim, &g_cpu, tolerance),
        "{scheme:?}: {g_sim:?} vs {g_cpu:?}"
    );
}

/// `max |R_ii| / min |R_ii|` of the `n × n` triangle `r` (row-major): a lower bound on the
/// condition number of `R`, hence of `J = Q·R`.
fn diagonal_ratio(r: &[f64], n: usize) -> f64 {
    let diagonal = (0..n).map(|i| r[i * n + i].abs());
    let (low, high) = diagonal.fold((f64::INFINITY, 0.0f64), |(l, h), d| (l.min(d), h.max(d)));
    high / low
}

fn close(a: &[f64], b: &[f64], tolerance: f64) -> bool {
    let scale = b.iter().fold(1.0, |m: f64, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .all(|(a, b)| (a - b).abs() <= tolerance * scale)
}

/// Michaelis–Menten as a model of many small fits, on its batch kernel.
static RATES: Model = Model::of::<MichaelisMenten>("michaelis-menten", "V·s/(K + s)", "p = 2", 2)
    .batched(&MICHAELIS_MENTEN_BATCH);

/// `fits` rate curves of `points` shared substrate values each, `(V, K)` different in every fit
/// and the rates slightly perturbed: `(s, v, p0)`, each start 20 % off.
fn rate_curves(fits: usize, points: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let s: Vec<f64> = (0..points)
        .map(|j| 0.2 + 9.6 * j as f64 / points as f64)
        .collect();
    let truth = |f: usize| [1.0 + 0.05 * f as f64, 0.5 + 0.03 * f as f64];
    let mut v = Vec::with_capacity(fits * s.len());
    for f in 0..fits {
        let [v_max, k] = truth(f);
        let wobble = |j: usize| 0.01 * ((f * s.len() + j) as f64).sin();
        v.extend((s.iter().enumerate()).map(|(j, s)| v_max * s / (k + s) + wobble(j)));
    }
    let p0 = (0..fits).flat_map(|f| truth(f).map(|t| 1.2 * t)).collect();
    (s, v, p0)
}

/// Tolerances of 1e-12: two fits of the same data, which round differently on their way,
/// then stop close to each other.
fn tight() -> LmOptions {
    LmOptions {
        ftol: 1e-12,
        xtol: 1e-12,
        gtol: 1e-12,
        ..LmOptions::default()
    }
}

/// Many fits at once on the batch kernel, on `backend`.
fn batch_on(
    backend: &Backend,
    precision: Precision,
    s: &[f64],
    v: &[f64],
    p0: &[f64],
) -> BatchResult {
    let batch = Batch {
        x: &[s],
        y: v,
        sigma: None,
        points: Points::Each(s.len()),
        p0,
        precision,
        estimator: Estimator::LeastSquares,
    };
    fit_batch_on(backend, &RATES, 2, batch, &tight(), false).unwrap()
}

/// The batch kernel gives each fit what `least_squares` gives it alone, on the CPU; the
/// simulator gives the CPU's bits, in `f64` and `f32`: both fold a fit's rows in one order.
fn batch_fits_agree(sim: &Backend) {
    let fits = 40;
    let (s, v, p0) = rate_curves(fits, 12);
    let cpu = batch_on(&Backend::Cpu, Precision::F64, &s, &v, &p0);
    let on_sim = batch_on(sim, Precision::F64, &s, &v, &p0);
    let m = s.len();
    for f in 0..fits {
        let columns = [&s[..], &v[f * m..(f + 1) * m], &[1.0; 12][..]].concat();
        let problem =
            TermProblem::<SumOfSquares<MichaelisMenten>>::with_data(2, columns, m).unwrap();
        let loaded = Backend::Cpu.load_least_squares(problem).unwrap();
        let mut objective = TermObjective::new(loaded, Gradient::Exact);
        let alone = least_squares(&mut objective, &p0[2 * f..2 * f + 2], &tight());
        let alone = alone.unwrap();
        let covariance = alone.covariance(false).unwrap().matrix;
        let (popt, pcov) = (&cpu.popt[2 * f..2 * f + 2], &cpu.pcov[4 * f..4 * f + 4]);
        assert!(cpu.status[f] > 0, "fit {f}: {}", cpu.message[f]);
        assert!(
            close(popt, &alone.x, 1e-7),
            "fit {f}: {popt:?} vs {:?}",
            alone.x
        );
        assert!(
            close(pcov, &covariance, 1e-6),
            "fit {f}: {pcov:?} vs {covariance:?}"
        );
    }
    let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&cpu.popt), bits(&on_sim.popt));
    assert_eq!(cpu.status, on_sim.status);
    let cpu = batch_on(&Backend::Cpu, Precision::F32, &s, &v, &p0);
    let on_sim = batch_on(sim, Precision::F32, &s, &v, &p0);
    assert_eq!(bits(&cpu.popt), bits(&on_sim.popt));
    assert_eq!(cpu.status, on_sim.status);
    // Fits of many points run one per block on a GPU, the kernel's block form.
    let (s, v, p0) = rate_curves(2, BLOCK_MIN_POINTS);
    let cpu = batch_on(&Backend::Cpu, Precision::F64, &s, &v, &p0);
    let on_sim = batch_on(sim, Precision::F64, &s, &v, &p0);
    assert!(on_sim.status.iter().all(|&s| s > 0), "{:?}", on_sim.message);
    let (a, b) = (&on_sim.popt, &cpu.popt);
    assert!(close(a, b, 1e-7), "{a:?} vs {b:?}");
}

#[test]
fn every_kernel_of_my_crate_runs_on_the_simulator_as_on_the_cpu() {
    let Some(sim) = simulator() else {
        return;
    };
    batch_fits_agree(&sim);
    // RobustLine: the value and each gradient scheme, plain and fused.
    let points = 700;
    let load = |backend: &Backend| {
        let problem = TermProblem::<RobustLine>::with_data(2, line(points), points).unwrap();
        backend.load(problem).unwrap()
    };
    let (mut on_sim, mut on_cpu) = (load(&sim), load(&Backend::Cpu));
    let ab = [1.0, 0.3];
    let (f_sim, f_cpu) = (on_sim.value(&ab).unwrap(), on_cpu.value(&ab).unwrap());
    assert!(close(&[f_sim], &[f_cpu], 1e-12), "f {f_sim} vs {f_cpu}");
    for scheme in Gradient::ALL {
        gradients_agree(on_sim.as_mut(), on_cpu.as_mut(), &ab, scheme);
        let mut g_sim = [0.0; 2];
        let f = on_sim.value_and_gradient(&ab, scheme, &mut g_sim).unwrap();
        assert!(close(&[f], &[f_cpu], 1e-12), "fused {scheme:?}: f {f}");
    }

    // The same data kept row after row on the device, as torch keeps an (M, 2) tensor: each
    // column gathered there and laid into a table, which the terms read where it lies, with the
    // host table's bits.
    let table = line(points);
    let rows: Vec<f64> = (0..points)
        .flat_map(|k| [table[k], table[points + k]])
        .collect();
    let rows = sim.to_device(&rows).unwrap();
    let columns = [0, 1].map(|c| sim.device_strided(&rows, (c, 2), points).unwrap());
    let on_device = sim.device_columns(&[&columns[0], &columns[1]]);
    let problem = TermProblem::<RobustLine>::with_columns(2, on_device.unwrap(), points);
    let mut from_device = sim.load(problem.unwrap()).unwrap();
    assert_eq!(from_device.value(&ab).unwrap(), f_sim);

    // A fit's weights formed there: 1/σ, NaN where σ is not positive, ones without σ.
    let sigma = sim.to_device(&[2.0, 0.0, 4.0]).unwrap();
    let w = sim
        .device_weights(Some(&sigma), 3)
        .unwrap()
        .to_host()
        .unwrap();
    assert_eq!((w[0], w[1].is_nan(), w[2]), (0.5, true, 0.25));
    let ones = sim.device_weights(None, 2).unwrap().to_host().unwrap();
    assert_eq!(ones, [1.0; 2]);

    // RobustLine with cudamin's L2Penalty beside it: an objective of two terms, whose
    // penalty's entries every kernel crate ships.
    let load = |backend: &Backend| {
        let data = TermProblem::<RobustLine>::with_data(2, line(points), points).unwrap();
        let prior = TermProblem::<L2Penalty>::with_data(2, vec![0.0, 400.0, 0.0, 0.5], 2);
        backend
            .load_sum(data.plus(prior.unwrap()).unwrap())
            .unwrap()
    };
    let (mut on_sim, mut on_cpu) = (load(&sim), load(&Backend::Cpu));
    let (f_sim, f_cpu) = (on_sim.value(&ab).unwrap(), on_cpu.value(&ab).unwrap());
    assert!(
        close(&[f_sim], &[f_cpu], 1e-12),
        "sum: f {f_sim} vs {f_cpu}"
    );
    for scheme in Gradient::ALL {
        gradients_agree(on_sim.as_mut(), on_cpu.as_mut(), &ab, scheme);
        let mut g_sim = [0.0; 2];
        let f = on_sim.value_and_gradient(&ab, scheme, &mut g_sim).unwrap();
        assert!(close(&[f], &[f_cpu], 1e-12), "sum, fused {scheme:?}: f {f}");
    }

    // The residual terms: MichaelisMenten (a data row each) and BrownAlmostLinear (by index,
    // no data).
    residuals_agree(&sim, &[1.7, 0.6], |backend| {
        let problem =
            TermProblem::<SumOfSquares<MichaelisMenten>>::with_data(2, rates(points), points);
        backend.load_least_squares(problem.unwrap()).unwrap()
    });
    residuals_agree(&sim, &[1.0, 1.5, 0.3], |backend| {
        let problem =
            TermProblem::<SumOfSquares<TwoPredictors>>::with_data(3, surface(points), points);
        backend.load_least_squares(problem.unwrap()).unwrap()
    });
    // MichaelisMenten at V = 0, where K's column of J vanishes: `JᵀJ` refuses Cholesky, so the
    // blocks fold their rows into triangles and the triangles into one on the device.
    let load = |backend: &Backend| {
        let problem =
            TermProblem::<SumOfSquares<MichaelisMenten>>::with_data(2, rates(points), points);
        backend.load_least_squares(problem.unwrap()).unwrap()
    };
    let (mut on_sim, mut on_cpu) = (load(&sim), load(&Backend::Cpu));
    let normal = |residuals: &mut dyn LeastSquaresEvaluator| {
        let (mut jtj, mut jtr) = (vec![0.0; 4], vec![0.0; 2]);
        let f = residuals.normal_equations(&[0.0, 0.6], Gradient::Exact, &mut jtj, &mut jtr);
        [&[f.unwrap()][..], &jtj, &jtr].concat()
    };
    let (sim_normal, cpu_normal) = (normal(on_sim.as_mut()), normal(on_cpu.as_mut()));
    assert!(
        close(&sim_normal, &cpu_normal, 1e-10),
        "V = 0: {sim_normal:?} vs {cpu_normal:?}"
    );
    residuals_agree(&sim, &[0.5; 5], |backend| {
        let problem = TermProblem::<LeastSquares<BrownAlmostLinear>>::new(5).unwrap();
        backend.load_least_squares(problem).unwrap()
    });

    // The solver's vector kernels, which cudamin ships in every kernel crate's PTX.
    let problem = TermProblem::<RobustLine>::with_data(2, line(points), points).unwrap();
    let mut objective = TermObjective::new(sim.load(problem).unwrap(), Gradient::Exact);
    let mut space = cudamin::OnBackend::device(&mut objective)
        .unwrap()
        .unwrap()
        .vectors()
        .unwrap();
    let (a, mut b) = (space.upload(&[3.0, -4.0]).unwrap(), space.zeros().unwrap());
    let mut c = space.zeros().unwrap();
    space.ray_point(&a, 0.5, &a, &mut c).unwrap(); // c = 1.5 a
    space.axpy(2.0, &a, &mut b).unwrap(); // b = 2 a
    space.scale(0.5, &mut b).unwrap(); // b = a
    space.difference(&c, &mut b).unwrap(); // b = c − b = 0.5 a
    assert_eq!(space.dot(&b, &a).unwrap(), 12.5);
    assert_eq!(space.norm(&c, f64::INFINITY).unwrap(), 6.0);
    // L-BFGS's passes over many vectors: products, a combination, the end of a step.
    let mut products = [0.0; 2];
    space.dots(&[&a, &b], &[&a], &mut products).unwrap();
    assert_eq!(products, [25.0, 12.5]);
    let combined = space.combine_dot(&[(1.0, &a), (2.0, &b)], &mut c, &a); // c = 2 a
    assert_eq!(combined.unwrap(), 50.0);
    let end = space.finish_step(0.5, &mut c, &a, &mut b, 2.0).unwrap(); // s = a, y = 0.5 a
    assert_eq!(
        [end.sy, end.yy, end.step_norm, end.gradient_norm],
        [12.5, 6.25, 5.0, 5.0]
    );
    // L-BFGS-B's passes within a box, 0 ≤ x ≤ 2: at x = (1, 2) with g = (−1, −4) the path
    // −g moves x₀ up to its bound at t = 1; x₁ is on its bound already.
    let up = |space: &mut DeviceVectors, v: &[f64]| space.upload(v).unwrap();
    let bounds = BoxVectors {
        lower: up(&mut space, &[0.0, 0.0]),
        upper: up(&mut space, &[2.0, 2.0]),
    };
    let (x, g) = (up(&mut space, &[1.0, 2.0]), up(&mut space, &[-1.0, -4.0]));
    let (mut times, mut path) = (space.zeros().unwrap(), space.zeros().unwrap());
    let norm = (space.steepest_path(Some(&bounds), &x, &g, &mut times, &mut path)).unwrap();
    assert_eq!(
        (norm, space.download(&path).unwrap().to_vec()),
        (1.0, vec![1.0, 0.0])
    );
    let (earliest, count) = space.earliest_breakpoints(&times, None, 64).unwrap();
    assert_eq!((earliest[0].0, earliest[0].1, count), (1.0, 0, 1));
    let mut row = [0.0; 2];
    space.gather(&[&x, &g], &[0], &mut row).unwrap();
    assert_eq!(row, [1.0, -1.0]);
    let mut cauchy = space.zeros().unwrap();
    space.path_point(&x, 0.5, &path, &mut cauchy).unwrap(); // (1.5, 2)
    space.scatter(&mut cauchy, &[(1, 1.0)]).unwrap(); // (1.5, 1)
    let mut free = space.new_mask().unwrap();
    assert_eq!(
        space.free_variables(&bounds, &cauchy, &mut free).unwrap(),
        2
    );
    let (gram, with_u) = (space.masked_gram(&[(1.0, &x)], &free, true, &[(1.0, &g)])).unwrap();
    assert_eq!((gram, with_u), (vec![5.0], vec![-9.0]));
    // The step g from the Cauchy point, projected: (0.5, 0); the line toward it from x.
    let mut step = space.zeros().unwrap();
    let (mut target, mut direction) = (space.zeros().unwrap(), space.zeros().unwrap());
    let terms = [(1.0, &g)];
    let aimed = space.projected_step(
        &terms,
        &bounds,
        &free,
        &cauchy,
        &x,
        &g,
        &mut step,
        &mut target,
        &mut direction,
    );
    assert_eq!(aimed.unwrap(), (8.5, 1.0)); // d = (−0.5, −2): gᵀd = 0.5 + 8; x₁ meets 0 at 1
    space
        .truncated_step(&bounds, &free, &cauchy, &step, &mut target)
        .unwrap();
    // Cut where x₁ meets its bound, a quarter of the step: (1.5 − 0.25, 0).
    assert_eq!(space.download(&target).unwrap().to_vec(), [1.25, 0.0]);
    let (slope, room) = space.aim(None, &x, &g, &target, &mut direction).unwrap();
    assert_eq!((slope, room), (7.75, f64::INFINITY)); // d = (0.25, −2), no box
    let mut point = space.zeros().unwrap();
    space
        .clipped_ray_point(&bounds, &x, 2.0, &direction, &mut point)
        .unwrap();
    assert_eq!(space.download(&point).unwrap().to_vec(), [1.5, 0.0]); // (1.5, −2) clipped
    let (mut s, mut y) = (space.zeros().unwrap(), space.zeros().unwrap());
    let pair = space
        .new_pair(0.5, &direction, &x, &g, &mut s, &mut y)
        .unwrap();
    // s = (0.125, −1), y = x − g = (2, 6).
    assert_eq!([pair.sy, pair.gs, pair.g_new_max], [-5.75, 3.875, 2.0]);

    // The Cauchy walk's later breakpoints sorted on the device, past one tile of the sort so
    // that a step between tiles runs too, and a solution's active mask: over 1 100 variables of
    // cudamin's L2Penalty, against the host's. Times 0 to 12, many alike; 0 is no breakpoint.
    let n = 1_100;
    let weights: Vec<f64> = (0..2 * n).map(|i| if i < n { 1.0 } else { 0.0 }).collect();
    let problem = TermProblem::<L2Penalty>::with_data(n, weights, n).unwrap();
    let mut wide = TermObjective::new(sim.load(problem).unwrap(), Gradient::Exact);
    let mut space = cudamin::OnBackend::device(&mut wide)
        .unwrap()
        .unwrap()
        .vectors()
        .unwrap();
    let mut host = HostVectors::new(n);
    let times: Vec<f64> = (0..n).map(|i| ((i * 7) % 13) as f64).collect();
    let on_device = space.upload(&times).unwrap();
    let (mut d_later, mut h_later) = (Default::default(), Default::default());
    let after = Breakpoint(3.0, 500);
    space.order_later(&on_device, after, &mut d_later).unwrap();
    host.order_later(&times, after, &mut h_later).unwrap();
    let (mut d_rows, mut h_rows, mut met) = (Vec::new(), Vec::new(), 0);
    loop {
        let d = (space.next_later(&mut d_later, &[&on_device], 400, &mut d_rows)).unwrap();
        let h = (host.next_later(&mut h_later, &[&times], 400, &mut h_rows)).unwrap();
        assert_eq!((&d, &d_rows), (&h, &h_rows));
        if d.is_empty() {
            break;
        }
        met += d.len();
    }
    assert_eq!(
        met,
        (0..n).filter(|&i| Breakpoint(times[i], i) > after).count()
    );
    let bounds = BoxVectors {
        lower: space.upload(&vec![0.0; n]).unwrap(),
        upper: space.upload(&vec![12.0; n]).unwrap(),
    };
    let mut mask = space.zeros().unwrap();
    space.active_mask(&bounds, &on_device, &mut mask).unwrap();
    let expected: Vec<f64> = (times.iter())
        .map(|&t| f64::from(i8::from(t == 12.0) - i8::from(t == 0.0)))
        .collect();
    assert_eq!(space.download(&mask).unwrap().to_vec(), expected);

    // A variable held fixed (the intercept, at 2): the free one placed into the whole point and
    // its partial gathered out, on the device, as the host writes and reads them.
    let held = Held::new(&[1.0, 2.0], &[false, true]).unwrap();
    let inner: &mut dyn cudamin::Objective = &mut objective;
    let mut fixed = FixedObjective::new(inner, held);
    let mut g_host = [0.0];
    let f_host = cudamin::Objective::value_and_gradient(&mut fixed, &[0.7], &mut g_host).unwrap();
    let mut on_device = cudamin::OnBackend::device(&mut fixed).unwrap().unwrap();
    let mut free = on_device.vectors().unwrap();
    let (x, mut g) = (free.upload(&[0.7]).unwrap(), free.zeros().unwrap());
    assert_eq!(on_device.value_and_gradient(&x, &mut g).unwrap(), f_host);
    assert_eq!(free.download(&g).unwrap().to_vec(), g_host);

    let shipped = ptx::entries(PTX.unwrap()).unwrap();
    let executed = simulated_entries();
    let missed: Vec<_> = (shipped.iter())
        .filter(|entry| !executed.contains(&entry.name))
        .map(|entry| &entry.name)
        .collect();
    println!(
        "simulated entries: executed {} of {}",
        shipped.len() - missed.len(),
        shipped.len()
    );
    // A term added to my-kernels ships new entries: give it a check above (`residuals_agree`
    // for a residual term) so its PTX runs here too.
    assert!(
        missed.is_empty(),
        "never executed: {missed:?}; check each new term above, as the others are"
    );
}
