//! The gradients of every built-in objective, exact and by finite differences, against
//! hand-derived analytic gradients where they exist and against central differences everywhere
//! (the MGH set), at random points, on the CPU executor (which runs the kernels' code). Error is
//! measured relative to max(‖g‖∞, 1): exact within 1e-12, central within 1e-6, forward within
//! 1e-4.

mod common;

use common::relative_error;
use cudamin::kernels::terms::matmul_squares::INNER;
use cudamin::problems::fit::{FitData, MODELS};
use cudamin::problems::{
    self, MATMUL_COLUMNS, POISSON_LAMBDA, lsq_expsin_data, matmul_data, poisson_data,
    quadratic_data,
};
use cudamin::{Backend, Gradient, Objective, TermObjective};
use proptest::prelude::*;

const EXACT_TOL: f64 = 1e-12;
const CENTRAL_TOL: f64 = 1e-6;
const FORWARD_TOL: f64 = 1e-4;

/// Analytic gradient of a problem at `x`, given its size and data points.
type Analytic = fn(&[f64], usize) -> Vec<f64>;

fn seed_expsum(x: &[f64], _: usize) -> Vec<f64> {
    x.iter().map(|v| 2.0 * v + v.exp()).collect()
}

/// ∂/∂a and ∂/∂b of 100(b − a²)² + (1 − a)².
fn rosenbrock_pair(a: f64, b: f64) -> (f64, f64) {
    (
        -400.0 * a * (b - a * a) - 2.0 * (1.0 - a),
        200.0 * (b - a * a),
    )
}

fn ext_rosenbrock(x: &[f64], _: usize) -> Vec<f64> {
    x.chunks(2)
        .flat_map(|p| <[f64; 2]>::from(rosenbrock_pair(p[0], p[1])))
        .collect()
}

fn chained_rosenbrock(x: &[f64], _: usize) -> Vec<f64> {
    let mut g = vec![0.0; x.len()];
    for i in 0..x.len() - 1 {
        let (da, db) = rosenbrock_pair(x[i], x[i + 1]);
        g[i] += da;
        g[i + 1] += db;
    }
    g
}

/// (a + 10b)² + 5(c − d)² + (b − 2c)⁴ + 10(a − d)⁴ per block.
fn ext_powell(x: &[f64], _: usize) -> Vec<f64> {
    x.chunks(4)
        .flat_map(|q| {
            let (a, b, c, d) = (q[0], q[1], q[2], q[3]);
            let (u, v, w) = (a + 10.0 * b, b - 2.0 * c, a - d);
            [
                2.0 * u + 40.0 * w.powi(3),
                20.0 * u + 4.0 * v.powi(3),
                10.0 * (c - d) - 8.0 * v.powi(3),
                -10.0 * (c - d) - 40.0 * w.powi(3),
            ]
        })
        .collect()
}

/// Σ_j (y_j − m_j)² with m = θ0·e^{−θ1 t} + Σ θk sin(kt).
fn lsq_expsin(theta: &[f64], points: usize) -> Vec<f64> {
    let p = theta.len();
    let (data, rows) = lsq_expsin_data(p, points).unwrap();
    let (t, y) = data.split_at(rows);
    let mut g = vec![0.0; p];
    for (&t, &y) in t.iter().zip(y) {
        let decay = (-theta[1] * t).exp();
        let model = theta[0] * decay + (2..p).map(|k| theta[k] * (k as f64 * t).sin()).sum::<f64>();
        let r = y - model;
        g[0] += -2.0 * r * decay;
        g[1] += 2.0 * r * theta[0] * t * decay;
        for (k, gk) in g.iter_mut().enumerate().skip(2) {
            *gk += -2.0 * r * (k as f64 * t).sin();
        }
    }
    g
}

/// Σ_j (e^{η_j} − y_j)·(1, x_j), with η = θ0 + Σ_{k≥1} θk·x_jk, plus the penalty's λ·θk for
/// k ≥ 1: the penalized Poisson regression's.
fn poisson_regression(theta: &[f64], points: usize) -> Vec<f64> {
    let p = theta.len();
    let (data, rows) = poisson_data(p, points).unwrap();
    let feature = |k: usize, j: usize| data[k * rows + j];
    let mut g = vec![0.0; p];
    for j in 0..rows {
        let eta = theta[0] + (1..p).map(|k| theta[k] * feature(k, j)).sum::<f64>();
        let slope = eta.exp() - feature(0, j);
        g[0] += slope;
        for (k, gk) in g.iter_mut().enumerate().skip(1) {
            *gk += slope * feature(k, j);
        }
    }
    for (k, gk) in g.iter_mut().enumerate().skip(1) {
        *gk += POISSON_LAMBDA * theta[k];
    }
    g
}

/// Ax − b.
fn quadratic(x: &[f64], _: usize) -> Vec<f64> {
    let n = x.len();
    let data = quadratic_data(n).unwrap();
    (0..n)
        .map(|i| (0..n).map(|j| data[j * n + i] * x[j]).sum::<f64>() - data[n * n + i])
        .collect()
}

/// `2·(A·B)·Bᵀ`, with `A` by rows in `x` and `B` the problem's.
fn matmul_squares(x: &[f64], _: usize) -> Vec<f64> {
    let (b, _) = matmul_data(0);
    let mut g = vec![0.0; x.len()];
    for (row, g_row) in x.chunks(INNER).zip(g.chunks_mut(INNER)) {
        for column in b.chunks(INNER).take(MATMUL_COLUMNS) {
            let ab: f64 = row.iter().zip(column).map(|(a, b)| a * b).sum();
            for (g, b) in g_row.iter_mut().zip(column) {
                *g += 2.0 * ab * b;
            }
        }
    }
    g
}

/// The exact gradient against central differences at `x`, within their truncation error (1e-6
/// here) and rounding: a term's last-bit error over the step, `ε·Σ|φ_k|/h`, which is large where
/// `f` is (MGH 4 starts at f ≈ 1e12). `f` stands for `Σ|φ_k|`: every term checked is
/// nonnegative but `quadratic`'s, whose bound `f` still covers at the points tried.
fn exact_matches_central(
    name: &str,
    evaluator: &mut dyn cudamin::Evaluator,
    x: &[f64],
) -> Result<(), String> {
    let (mut exact, mut central) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    evaluator.gradient(x, Gradient::Exact, &mut exact).unwrap();
    let central_fd = Gradient::Central;
    evaluator.gradient(x, central_fd, &mut central).unwrap();
    let err = relative_error(&exact, &central);
    let f = evaluator.value(x).unwrap().abs();
    let x_max = x.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
    let step = cudamin::kernels::fd::CBRT_EPS * x_max;
    let rounding = 8.0 * f64::EPSILON * f / step / common::gradient_scale(&exact);
    if err <= 1e-6 + rounding {
        Ok(())
    } else {
        Err(format!(
            "{name}: exact vs central {err:.3e} (rounding bound {rounding:.1e})"
        ))
    }
}

fn check(name: &str, x: &[f64], points: Option<usize>, analytic: Analytic) {
    let instance = problems::find(name)
        .unwrap()
        .instantiate(&Backend::Cpu, Some(x.len()), points)
        .unwrap();
    let mut evaluator = instance.evaluator.into_sum();
    let exact = analytic(x, points.unwrap_or(0));
    // Every scheme of the table; one without a tolerance of its own gets forward's, the
    // loosest.
    for gradient in Gradient::ALL {
        let tol = match gradient {
            Gradient::Exact => EXACT_TOL,
            Gradient::Central => CENTRAL_TOL,
            _ => FORWARD_TOL,
        };
        let mut g = vec![f64::NAN; x.len()];
        evaluator.gradient(x, gradient, &mut g).unwrap();
        let err = relative_error(&g, &exact);
        assert!(
            err <= tol,
            "{name} {gradient:?}: relative error {err:.3e} > {tol:e} at x = {x:?}"
        );
    }
}

/// Points with `n = multiple · k` coordinates in [-2, 2], for k in `blocks`.
fn points(multiple: usize, blocks: std::ops::Range<usize>) -> impl Strategy<Value = Vec<f64>> {
    blocks.prop_flat_map(move |k| prop::collection::vec(-2.0..2.0_f64, multiple * k))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn seed_expsum_matches_analytic(x in points(1, 1..40)) {
        check("seed-expsum", &x, None, seed_expsum);
    }

    #[test]
    fn ext_rosenbrock_matches_analytic(x in points(2, 1..20)) {
        check("ext-rosenbrock", &x, None, ext_rosenbrock);
    }

    #[test]
    fn chained_rosenbrock_matches_analytic(x in points(1, 2..40)) {
        check("rosenbrock", &x, None, chained_rosenbrock);
    }

    #[test]
    fn ext_powell_matches_analytic(x in points(4, 1..10)) {
        check("ext-powell", &x, None, ext_powell);
    }

    /// Widths on both sides of the reverse-mode threshold (17 on the CPU).
    #[test]
    fn lsq_expsin_matches_analytic(theta in points(1, 2..40)) {
        check("lsq-expsin", &theta, Some(300), lsq_expsin);
    }

    #[test]
    fn poisson_regression_matches_analytic(theta in prop::collection::vec(-0.3..0.3_f64, 1..40)) {
        check("poisson-regression", &theta, Some(300), poisson_regression);
    }

    #[test]
    fn quadratic_matches_analytic(x in points(1, 1..30)) {
        check("quadratic", &x, None, quadratic);
    }

    #[test]
    fn matmul_squares_matches_analytic(x in points(INNER, 1..8)) {
        check("matmul-squares", &x, None, matmul_squares);
    }

    /// Every built-in problem, the MGH set included, at a random point near its x0: the exact
    /// gradient against central differences ([`exact_matches_central`]).
    #[test]
    fn exact_gradients_match_central_differences(shift in -0.3..0.3_f64, seed in 0u64..1000) {
        for problem in problems::all() {
            let points = problem.default_points.map(|_| 2_000);
            let mut instance = problem.instantiate(&Backend::Cpu, None, points).unwrap();
            // A point near x0, moved differently in each coordinate.
            let x: Vec<f64> = instance
                .x0
                .iter()
                .enumerate()
                .map(|(i, v)| v + shift * (1.0 + ((seed as usize + i) % 7) as f64 / 7.0))
                .collect();
            let checked = exact_matches_central(problem.name, instance.evaluator.as_sum(), &x);
            prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
        }
    }

    /// Every fit model, on 300 points of a smooth curve, at a random `θ` near all ones.
    #[test]
    fn fit_models_exact_gradients_match_central_differences(
        shift in -0.3..0.3_f64,
        seed in 0u64..1000,
    ) {
        let x: Vec<f64> = (0..300).map(|i| 0.03 * i as f64).collect();
        let y = x.iter().map(|x| 1.0 + x.sin()).collect();
        let data = FitData { x, y, sigma: None };
        for model in MODELS {
            let mut instance = common::fit_instance(model, &Backend::Cpu, &data);
            let theta: Vec<f64> = (0..model.default_params)
                .map(|i| 1.0 + shift * (1.0 + ((seed as usize + i) % 7) as f64 / 7.0))
                .collect();
            let checked = exact_matches_central(model.name, instance.evaluator.as_sum(), &theta);
            prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
        }
    }
}

/// `value_and_gradient` takes the value in the gradient's pass: the same gradient, bit for
/// bit, and the same value up to the order of its compensated sums, for every built-in problem
/// and every scheme.
#[test]
fn value_and_gradient_is_value_plus_gradient() {
    for problem in problems::all() {
        let points = problem.default_points.map(|_| 5_000);
        let mut instance = problem.instantiate(&Backend::Cpu, None, points).unwrap();
        let x: Vec<f64> = instance.x0.iter().map(|v| v + 0.1).collect();
        let f = instance.evaluator.as_sum().value(&x).unwrap();
        for fd in Gradient::ALL {
            let mut g = vec![0.0; x.len()];
            let mut g_fused = vec![0.0; x.len()];
            instance
                .evaluator
                .as_sum()
                .gradient(&x, fd, &mut g)
                .unwrap();
            let f_fused = instance
                .evaluator
                .as_sum()
                .value_and_gradient(&x, fd, &mut g_fused)
                .unwrap();
            assert_eq!(g, g_fused, "{} {fd:?}: gradients differ", problem.name);
            assert!(
                (f_fused - f).abs() <= 1e-14 * f.abs().max(1.0),
                "{} {fd:?}: f {f_fused} vs {f}",
                problem.name
            );
        }
    }
}

/// A finite-difference gradient's error estimate (what a solve reports as `jac_error`) is its
/// true error: against the hand-derived gradient of lsq-expsin, the estimate, measured against
/// the exact gradient, agrees to the exact gradient's rounding.
#[test]
fn a_finite_difference_error_estimate_is_its_true_error() {
    let (p, points) = (8, 20_000);
    let theta: Vec<f64> = (0..p).map(|k| 0.9 - 0.1 * k as f64).collect();
    let analytic = lsq_expsin(&theta, points);
    for scheme in Gradient::ALL.into_iter().filter(|&g| g != Gradient::Exact) {
        let instance = problems::find("lsq-expsin")
            .unwrap()
            .instantiate(&Backend::Cpu, Some(p), Some(points))
            .unwrap();
        let mut objective = TermObjective::new(instance.evaluator.into_sum(), scheme);
        let mut g = vec![0.0; p];
        objective.gradient(&theta, &mut g).unwrap();
        let mut reference = vec![0.0; p];
        let kind = objective.reference_gradient(&theta, &mut reference);
        assert_eq!(kind.unwrap(), Some(Gradient::Exact), "{scheme:?}");
        let distance = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
        };
        let (estimate, truth) = (distance(&g, &reference), distance(&g, &analytic));
        let scale = analytic.iter().fold(1.0, |m, v| v.abs().max(m));
        assert!(truth > 0.0, "{scheme:?}: no error to estimate");
        assert!(
            (estimate - truth).abs() <= 1e-11 * scale,
            "{scheme:?}: estimate {estimate:.3e}, true error {truth:.3e}"
        );
    }
    let instance = problems::find("lsq-expsin")
        .unwrap()
        .instantiate(&Backend::Cpu, Some(p), Some(points))
        .unwrap();
    let mut exact = TermObjective::new(instance.evaluator.into_sum(), Gradient::Exact);
    let mut reference = vec![0.0; p];
    assert_eq!(
        exact.reference_gradient(&theta, &mut reference).unwrap(),
        None
    );
}
