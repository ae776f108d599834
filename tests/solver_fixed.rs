//! Variables held fixed (`Options::fixed`), in every `minimize` method.

mod solver_common;

use cudamin::{Bounds, Method, Options, SolveError};
use cudamin::{EvalError, Objective};
use solver_common::*;

/// Rosenbrock in 3 variables at `(x₀, x₁, 1)`: the function a solve with `x₂` held at 1 sees.
struct LastHeldAtOne;

impl Objective for LastHeldAtOne {
    fn dim(&self) -> usize {
        2
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        Rosenbrock { n: 3 }.value(&[x[0], x[1], 1.0])
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        let mut whole = [0.0; 3];
        Rosenbrock { n: 3 }.gradient(&[x[0], x[1], 1.0], &mut whole)?;
        g.copy_from_slice(&whole[..2]);
        Ok(())
    }
}

/// Each method with `x₂` held at 1 takes the steps it takes on the 2-variable function itself:
/// the same `x`, `nit`, `nfev` and `njev`; `x₂` stays 1 and its `jac` entry is 0. (From
/// `(−1.2, 1)` that function's nearest minimum is the local one near `(−0.994, 0.997)`.)
#[test]
fn a_held_variable_leaves_the_solve_of_the_others() {
    for method in [Method::Bfgs, Method::Lbfgs, Method::LbfgsB] {
        let options = Options {
            fixed: Some(vec![false, false, true]),
            return_hess_inv: true,
            ..Options::default()
        };
        let held = solve(
            &mut Rosenbrock { n: 3 },
            &[-1.2, 1.0, 1.0],
            method,
            &options,
        )
        .unwrap();
        let alone = Options {
            return_hess_inv: true,
            ..Options::default()
        };
        let reduced = solve(&mut LastHeldAtOne, &[-1.2, 1.0], method, &alone).unwrap();
        assert!(held.success, "{method:?}: {}", held.message);
        assert_eq!(held.x[..2], reduced.x[..], "{method:?}");
        assert_eq!(held.x[2], 1.0);
        assert_eq!(held.jac[2], 0.0);
        assert_eq!(
            (held.nit, held.nfev, held.njev),
            (reduced.nit, reduced.nfev, reduced.njev),
            "{method:?}"
        );
        if let Some(h) = held.hess_inv {
            assert!((0..3).all(|i| h[[i, 2]] == 0.0 && h[[2, i]] == 0.0));
        }
        // The limited-memory methods' pairs: the reduced solve's, with a zero column for x₂.
        if let Some(pairs) = held.hess_inv_pairs {
            let alone = reduced.hess_inv_pairs.unwrap();
            assert_eq!(pairs.fixed(), [2], "{method:?}");
            for (whole, free) in [(pairs.s(), alone.s()), (pairs.y(), alone.y())] {
                assert!(!free.is_empty(), "{method:?}");
                assert_eq!(whole.len(), free.len(), "{method:?}");
                for (whole, free) in whole.iter().zip(free) {
                    assert_eq!(whole[..], [free[0], free[1], 0.0], "{method:?}");
                }
            }
            assert_eq!(
                pairs.dot(&[0.3, -0.2, 5.0]).unwrap()[..2],
                alone.dot(&[0.3, -0.2]).unwrap()[..]
            );
            assert_eq!(pairs.dot(&[0.0, 0.0, 1.0]).unwrap(), vec![0.0; 3]);
            assert_eq!(pairs.to_dense().unwrap()[[2, 2]], 0.0);
        } else {
            assert_eq!(method, Method::Bfgs);
        }
    }
}

/// Bounds go with the free variables: L-BFGS-B with `x₂` held and `x₀ ≤ 0.5`, from
/// `(0.3, 0.5, 1)`, ends at the bound, as on the 2-variable function with that bound.
#[test]
fn bounds_apply_to_the_free_variables() {
    let bounds = |n: usize| Bounds {
        lower: vec![f64::NEG_INFINITY; n],
        upper: [vec![0.5], vec![f64::INFINITY; n - 1]].concat(),
    };
    let options = Options {
        fixed: Some(vec![false, false, true]),
        bounds: Some(bounds(3)),
        ..Options::default()
    };
    let held = solve(
        &mut Rosenbrock { n: 3 },
        &[0.3, 0.5, 1.0],
        Method::LbfgsB,
        &options,
    )
    .unwrap();
    let alone = Options {
        bounds: Some(bounds(2)),
        ..Options::default()
    };
    let reduced = solve(&mut LastHeldAtOne, &[0.3, 0.5], Method::LbfgsB, &alone).unwrap();
    assert_eq!(held.x[..2], reduced.x[..]);
    assert_eq!(held.x[0], 0.5);
    assert_eq!((held.nit, held.nfev), (reduced.nit, reduced.nfev));
}

/// A mask of the wrong length, or one that holds every variable, is refused.
#[test]
fn a_bad_mask_is_refused() {
    let refused = |fixed: Vec<bool>| {
        let options = Options {
            fixed: Some(fixed),
            ..Options::default()
        };
        let error = solve(
            &mut Rosenbrock { n: 2 },
            &[0.0, 0.0],
            Method::Bfgs,
            &options,
        );
        match error {
            Err(e @ SolveError::InvalidOption { .. }) => e.to_string(),
            other => panic!("{other:?}"),
        }
    };
    assert!(refused(vec![true]).contains("1 entries for 2 variables"));
    assert!(refused(vec![true, true]).contains("leaves nothing to solve"));
}

/// At `n = 10⁶` with one variable held, the limited-memory methods solve in `O(n)` memory: the
/// free variables' objective once also made the `n × n` factor a least-squares solve wants
/// (8 TB here), and the process ended in the allocator's abort.
#[test]
fn holding_a_variable_of_a_million_costs_no_square_matrix() {
    let n = 1_000_000;
    let mut fixed = vec![false; n];
    fixed[5] = true;
    for method in [Method::Lbfgs, Method::LbfgsB] {
        let options = Options {
            fixed: Some(fixed.clone()),
            ..Options::default()
        };
        let problem = &mut SeparableExp { n };
        let mut x0 = problem.x0();
        x0[5] = 1.0;
        let result = solve(problem, &x0, method, &options).unwrap();
        assert!(result.success, "{method:?}: {}", result.message);
        assert_eq!(result.x[5], 1.0);
        let free_worst = (result.x.iter().enumerate())
            .filter(|&(i, _)| i != 5)
            .map(|(_, x)| (x - SeparableExp::X_STAR).abs())
            .fold(0.0, f64::max);
        assert!(free_worst < 1e-5, "{method:?}: {free_worst}");
    }
}

/// BFGS's `hess_inv` is over every variable, held ones too (zero rows and columns): with a
/// million variables and ten free, asking for it is refused before the solve, as without held
/// variables, where the 8 TB matrix once ended the process in the allocator's abort.
#[test]
fn bfgs_hess_inv_over_a_million_variables_is_refused_with_most_held() {
    let n = 1_000_000;
    let options = Options {
        fixed: Some((0..n).map(|i| i >= 10).collect()),
        return_hess_inv: true,
        ..Options::default()
    };
    let problem = &mut SeparableExp { n };
    let x0 = problem.x0();
    match solve(problem, &x0, Method::Bfgs, &options) {
        Err(SolveError::InvalidOption { name, .. }) => assert_eq!(name, "return_hess_inv"),
        other => panic!("{other:?}"),
    }
    // Not asked, the ten free variables solve.
    let options = Options {
        return_hess_inv: false,
        ..options
    };
    let result = solve(problem, &x0, Method::Bfgs, &options).unwrap();
    assert!(result.success, "{}", result.message);
    assert!(result.hess_inv.is_none());
}
