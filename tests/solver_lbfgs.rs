//! L-BFGS, up to n = 10⁶.

mod solver_common;

use cudamin::{Method, Options, Status};
use solver_common::*;

#[test]
fn separable_million_converges_to_the_known_minimum() {
    let n = 1_000_000;
    let mut objective = SeparableExp { n };
    let x0 = objective.x0();
    let result = solve(&mut objective, &x0, Method::Lbfgs, &Options::default()).unwrap();
    assert_eq!(result.status, Status::Success);
    assert_eq!((result.nit, result.nfev, result.njev), (7, 11, 11));
    assert_at_separable_minimum(&result, n);
    assert!(result.hess_inv.is_none());
}

#[test]
fn extended_rosenbrock_million_converges() {
    let n = 1_000_000;
    let mut objective = ExtendedRosenbrock { n };
    let x0 = objective.x0();
    let result = solve(&mut objective, &x0, Method::Lbfgs, &Options::default()).unwrap();
    assert_eq!(result.status, Status::Success);
    assert_eq!((result.nit, result.nfev), (36, 49));
    assert!(inf_norm(&result.jac) <= 1e-5);
    // 5·10⁵ identical pairs (L-BFGS keeps separable structure exactly), each at about 10⁻¹⁶.
    assert!(result.fun < 1e-10, "{}", result.fun);
    assert!(result.x.iter().all(|&x| (x - 1.0).abs() < 1e-6));
    assert!(result.x.chunks_exact(2).all(|pair| pair == &result.x[..2]));
}

#[test]
fn rosenbrock_2d_converges_with_any_memory() {
    // (memory, iterations measured). Without the `ftol` rule, which with one pair ends the run
    // at f ≈ 3·10⁻¹⁰, x within 2·10⁻⁵ of the minimum: this test is of `gtol`'s accuracy.
    for (memory, nit) in [(1, 41), (3, 38), (10, 36), (100, 36)] {
        let options = Options {
            memory,
            ftol: 0.0,
            return_hess_inv: true,
            ..Options::default()
        };
        let result = solve_rosenbrock2(Method::Lbfgs, &options).unwrap();
        assert_eq!(result.status, Status::Success, "memory {memory}");
        assert_eq!(result.nit, nit, "memory {memory}");
        assert!(
            result.x.iter().all(|&x| (x - 1.0).abs() < 1e-6),
            "memory {memory}: {:?}",
            result.x
        );
        assert!(
            result.hess_inv.is_none(),
            "L-BFGS has no dense matrix to return"
        );
    }
}

#[test]
fn a_wide_quadratic_converges_with_little_memory() {
    let n = 50;
    let mut quadratic = Quadratic::random(n, 100.0, 7);
    // Without the `ftol` rule, which would end the run near f* = 0 before `gtol` does.
    let options = Options {
        memory: 5,
        ftol: 0.0,
        ..Options::default()
    };
    let result = solve(&mut quadratic, &vec![0.0; n], Method::Lbfgs, &options).unwrap();
    assert_eq!(result.status, Status::Success);
    let error = result
        .x
        .iter()
        .zip(&quadratic.minimizer)
        .map(|(x, m)| (x - m).abs());
    assert!(error.fold(0.0, f64::max) <= (n as f64).sqrt() * options.gtol);
}

/// The Poisson regression's maximum-likelihood estimate lies near the parameters that
/// generated its counts (10⁵ rows: standard errors about 0.003), and L-BFGS, which ends there by
/// L-BFGS-B's `ftol` rule (f ≈ 7·10⁴ keeps ‖∇f‖∞ above gtol), agrees with BFGS, which ends by
/// `gtol`, to far below them.
#[test]
fn the_poisson_regression_recovers_its_generating_parameters() {
    use cudamin::problems::{self, poisson_theta_true};
    use cudamin::{Backend, Gradient, TermObjective};
    let solve = |method| {
        let problem = problems::find("poisson-regression").unwrap();
        let instance = problem
            .instantiate(&Backend::Cpu, Some(33), Some(100_000))
            .unwrap();
        let mut objective = TermObjective::new(instance.evaluator.into_sum(), Gradient::Exact);
        solve(&mut objective, &instance.x0, method, &Options::default()).unwrap()
    };
    let (bfgs, lbfgs) = (solve(Method::Bfgs), solve(Method::Lbfgs));
    assert_eq!(bfgs.status, Status::Success);
    assert_eq!(lbfgs.status, Status::RelativeReduction);
    for (j, (&truth, (b, l))) in poisson_theta_true(33)
        .iter()
        .zip(bfgs.x.iter().zip(&lbfgs.x))
        .enumerate()
    {
        assert!(
            (b - truth).abs() < 0.02,
            "θ{j} = {b}, generated with {truth}"
        );
        assert!((b - l).abs() < 1e-3, "θ{j}: BFGS {b}, L-BFGS {l}");
    }
}

/// `hess_inv_pairs` are the last pairs L-BFGS's last direction came from, whichever way the
/// solve ends: converged, at `maxiter` (the one exit where the last step's pair waits in the
/// method for a next direction; after one step, no pair), or stopped by the observer.
#[test]
fn hess_inv_pairs_are_the_last_directions_pairs() {
    for memory in [3, 50] {
        let options = Options {
            memory,
            ..Options::default()
        };
        let limited = Options {
            maxiter: Some(7),
            ..options.clone()
        };
        let one_step = Options {
            maxiter: Some(1),
            ..options.clone()
        };
        let statuses = [
            check_hess_inv_pairs(Method::Lbfgs, options.clone(), None),
            check_hess_inv_pairs(Method::Lbfgs, limited, None),
            check_hess_inv_pairs(Method::Lbfgs, one_step, None),
            check_hess_inv_pairs(Method::Lbfgs, options, Some(5)),
        ];
        let expected = [
            Status::Success,
            Status::MaxIter,
            Status::MaxIter,
            Status::Stopped,
        ];
        assert_eq!(statuses, expected);
    }
}
