//! The built-in problems' data and known minima, through the public `cudamin::problems`.
//! The library has no unit-test build (Cargo.toml's `[lib] test = false`): these tests live
//! here instead.

use cudamin::Backend;
use cudamin::problems::random::SplitMix64;
use cudamin::problems::{self, lsq_expsin_theta_true, quadratic_data};

#[test]
fn theta_true_alternates() {
    assert_eq!(
        lsq_expsin_theta_true(5),
        vec![2.0, 0.7, 0.5, -1.0 / 3.0, 0.25]
    );
}

/// `quadratic`'s `f_star`, `−½·bᵀA⁻¹b` by Cholesky, against the same quantity by Gaussian
/// elimination with partial pivoting on its own data.
#[test]
fn quadratic_minimum_matches_elimination() {
    for n in [1, 2, 7] {
        let values = quadratic_data(n).unwrap();
        let mut a: Vec<Vec<f64>> = (0..n)
            .map(|i| values[i * n..(i + 1) * n].to_vec())
            .collect();
        let b = values[n * n..].to_vec();
        let mut z = b.clone();
        for k in 0..n {
            let pivot = (k..n).max_by(|&i, &j| a[i][k].abs().total_cmp(&a[j][k].abs()));
            let pivot = pivot.unwrap();
            a.swap(k, pivot);
            z.swap(k, pivot);
            let (above, below) = a.split_at_mut(k + 1);
            let pivot_row = &above[k];
            for (i, row) in (k + 1..n).zip(below) {
                let m = row[k] / pivot_row[k];
                for (entry, &p) in row[k..].iter_mut().zip(&pivot_row[k..]) {
                    *entry -= m * p;
                }
                z[i] -= m * z[k];
            }
        }
        for k in (0..n).rev() {
            let tail: f64 = (k + 1..n).map(|j| a[k][j] * z[j]).sum();
            z[k] = (z[k] - tail) / a[k][k];
        }
        let expected = -0.5 * b.iter().zip(&z).map(|(b, x)| b * x).sum::<f64>();
        let instance = problems::find("quadratic")
            .unwrap()
            .instantiate(&Backend::Cpu, Some(n), None)
            .unwrap();
        let f_star = instance.f_star.expect("quadratic has a known minimum");
        let error = (f_star - expected).abs() / expected.abs();
        assert!(error < 1e-13, "n = {n}: {f_star} against {expected}");
        if n == 1 {
            // A = [1] (no off-diagonal entries): f* = −b²/2 exactly.
            assert_eq!(f_star, -0.5 * b[0] * b[0]);
        }
    }
}

#[test]
fn normal_has_unit_moments() {
    let mut rng = SplitMix64::new(7);
    let n = 200_000;
    let samples: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let mean = samples.iter().sum::<f64>() / n as f64;
    let var = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n as f64;
    // Standard errors: 1/√n ≈ 0.0022 for the mean, √(2/n) ≈ 0.0032 for the variance.
    assert!(mean.abs() < 0.01, "mean {mean}");
    assert!((var - 1.0).abs() < 0.015, "variance {var}");
}

#[test]
fn uniform_is_in_unit_interval() {
    let mut rng = SplitMix64::new(1);
    assert!(
        (0..10_000)
            .map(|_| rng.uniform())
            .all(|u| (0.0..1.0).contains(&u))
    );
}

/// `fit-expsin` is `lsq-expsin`'s fit as residuals: on the same generated points, at the same
/// `θ`, the two sums agree to rounding (the one reads stored sines, the other makes them by
/// recurrence), and so do their exact gradients.
#[test]
fn fit_expsin_is_lsq_expsin_as_residuals() {
    let (n, points) = (16, 3_000);
    let theta: Vec<f64> = (0..n).map(|i| 0.5 + 0.1 * (i % 5) as f64).collect();
    let f_and_g = |name: &str| {
        let problem = problems::find(name).unwrap();
        let mut instance = problem
            .instantiate(&Backend::Cpu, Some(n), Some(points))
            .unwrap();
        let mut g = vec![0.0; n];
        let sum = instance.evaluator.as_sum();
        let f = sum
            .value_and_gradient(&theta, cudamin::Gradient::Exact, &mut g)
            .unwrap();
        (f, g)
    };
    let (f_lsq, g_lsq) = f_and_g("lsq-expsin");
    let (f_fit, g_fit) = f_and_g("fit-expsin");
    assert!((f_fit - f_lsq).abs() <= 1e-12 * f_lsq, "{f_fit} vs {f_lsq}");
    let scale = g_lsq.iter().fold(0.0_f64, |m, g| m.max(g.abs()));
    for (a, b) in g_fit.iter().zip(&g_lsq) {
        assert!((a - b).abs() <= 1e-10 * scale, "{g_fit:?} vs {g_lsq:?}");
    }
}
