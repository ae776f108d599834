//! Bad input gives a typed `SolveError`, before anything is evaluated, never a panic.

mod solver_common;

use cudamin::{Bounds, Method, Options, SolveError};
use ndarray::{Array2, array};
use proptest::prelude::*;
use solver_common::*;

const METHODS: [Method; 2] = [Method::Bfgs, Method::Lbfgs];

fn error_for(method: Method, x0: &[f64], options: &Options) -> SolveError {
    match solve(&mut Rosenbrock { n: 2 }, x0, method, options) {
        Ok(result) => panic!("{method:?} accepted the input: {:?}", result.status),
        Err(error) => error,
    }
}

/// The name of the option an `InvalidOption` error blames.
fn blamed_option(error: SolveError) -> &'static str {
    match error {
        SolveError::InvalidOption { name, .. } => name,
        other => panic!("expected InvalidOption, got {other:?}"),
    }
}

#[test]
fn x0_of_the_wrong_length() {
    for method in METHODS {
        let error = error_for(method, &[1.0, 2.0, 3.0], &Options::default());
        assert!(
            matches!(
                error,
                SolveError::WrongLength {
                    expected: 2,
                    got: 3
                }
            ),
            "{error:?}"
        );
    }
}

#[test]
fn non_finite_x0() {
    // L-BFGS-B too, in a box: a start is refused before it is clipped into it.
    let boxed = Options {
        bounds: Some(Bounds {
            lower: vec![-1.0; 2],
            upper: vec![1.0; 2],
        }),
        ..Options::default()
    };
    let cases = (METHODS.iter().map(|&method| (method, Options::default()))).chain([
        (Method::LbfgsB, Options::default()),
        (Method::LbfgsB, boxed),
    ]);
    for (method, options) in cases {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let error = error_for(method, &[0.0, bad], &options);
            let SolveError::NonFiniteX0 { index: 1, value } = error else {
                panic!("{method:?}: {error:?}")
            };
            assert_eq!(value.to_bits(), bad.to_bits());
        }
    }
}

#[test]
fn gtol_negative_or_nan() {
    // 0 is scipy's "no gradient test" (solver_stopping.rs): taken.
    for method in METHODS {
        for gtol in [-1e-5, f64::NAN, f64::NEG_INFINITY] {
            let options = Options {
                gtol,
                ..Options::default()
            };
            assert_eq!(
                blamed_option(error_for(method, &[0.0, 0.0], &options)),
                "gtol"
            );
        }
    }
}

#[test]
fn c1_c2_outside_0_c1_c2_1() {
    let pairs = [
        (0.0, 0.9),
        (-1e-4, 0.9),
        (0.5, 0.4),
        (0.5, 0.5),
        (1e-4, 1.0),
        (1e-4, 2.0),
        (f64::NAN, 0.9),
        (1e-4, f64::NAN),
    ];
    for method in METHODS {
        for (c1, c2) in pairs {
            let options = Options {
                c1,
                c2,
                ..Options::default()
            };
            assert_eq!(
                blamed_option(error_for(method, &[0.0, 0.0], &options)),
                "(c1, c2)"
            );
        }
    }
}

#[test]
fn norm_nan_zero_or_negative() {
    for method in METHODS {
        for norm in [f64::NAN, 0.0, -0.0, -2.0] {
            let options = Options {
                norm,
                ..Options::default()
            };
            assert_eq!(
                blamed_option(error_for(method, &[0.0, 0.0], &options)),
                "norm"
            );
        }
    }
}

#[test]
fn xrtol_negative_or_nan() {
    for method in METHODS {
        for xrtol in [-1e-8, f64::NAN, f64::NEG_INFINITY] {
            let options = Options {
                xrtol,
                ..Options::default()
            };
            assert_eq!(
                blamed_option(error_for(method, &[0.0, 0.0], &options)),
                "xrtol"
            );
        }
    }
}

#[test]
fn memory_0_for_lbfgs() {
    let options = Options {
        memory: 0,
        ..Options::default()
    };
    assert_eq!(
        blamed_option(error_for(Method::Lbfgs, &[0.0, 0.0], &options)),
        "memory"
    );
    // BFGS keeps no limited memory, so the option does not concern it.
    assert!(
        solve(
            &mut Rosenbrock { n: 2 },
            &[0.0, 0.0],
            Method::Bfgs,
            &options
        )
        .is_ok()
    );
}

#[test]
fn hess_inv0_of_the_wrong_shape() {
    for shape in [(3, 3), (2, 3), (1, 2)] {
        let options = Options {
            hess_inv0: Some(Array2::zeros(shape)),
            ..Options::default()
        };
        assert_eq!(
            blamed_option(error_for(Method::Bfgs, &[0.0, 0.0], &options)),
            "hess_inv0"
        );
    }
}

#[test]
fn hess_inv0_not_symmetric_positive_definite() {
    let cases = [
        (array![[1.0, 2.0], [2.0, 1.0]], "pivot 1"),
        (array![[-1.0, 0.0], [0.0, 1.0]], "pivot 0"),
        (array![[1.0, 0.0], [0.0, 0.0]], "pivot 1"),
        (array![[1.0, 0.1], [0.2, 1.0]], "not symmetric"),
        (array![[1.0, f64::NAN], [f64::NAN, 1.0]], "NaN"),
        (array![[f64::INFINITY, 0.0], [0.0, 1.0]], "inf"),
    ];
    for (matrix, defect) in cases {
        let options = Options {
            hess_inv0: Some(matrix.clone()),
            ..Options::default()
        };
        match error_for(Method::Bfgs, &[0.0, 0.0], &options) {
            SolveError::NotPositiveDefinite(why) => {
                assert!(why.contains(defect), "{matrix}: {why}")
            }
            other => panic!("{matrix}: {other:?}"),
        }
    }
}

#[test]
fn a_nearly_symmetric_hess_inv0_is_accepted() {
    let options = Options {
        hess_inv0: Some(array![[1.0, 0.1], [0.1 + 1e-15, 1.0]]),
        ..Options::default()
    };
    let result = solve_rosenbrock2(Method::Bfgs, &options).unwrap();
    assert!(result.success);
}

#[test]
fn return_hess_inv_beyond_the_memory_cap() {
    let n = 16_385;
    let options = Options {
        return_hess_inv: true,
        ..Options::default()
    };
    let result = solve(
        &mut SeparableExp { n },
        &vec![0.0; n],
        Method::Bfgs,
        &options,
    );
    let error = result.expect_err("refused");
    assert_eq!(blamed_option(error), "return_hess_inv");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Whatever the option values, the result is a solve or a typed error.
    #[test]
    fn arbitrary_options_never_panic(
        gtol in prop::num::f64::ANY,
        norm in prop::num::f64::ANY,
        c1 in prop::num::f64::ANY,
        c2 in prop::num::f64::ANY,
        xrtol in prop::num::f64::ANY,
        memory in 0usize..4,
        lbfgs in any::<bool>(),
    ) {
        let options = Options { gtol, norm, c1, c2, xrtol, memory, maxiter: Some(20), ..Options::default() };
        let method = if lbfgs { Method::Lbfgs } else { Method::Bfgs };
        match solve_rosenbrock2(method, &options) {
            Ok(result) => prop_assert!(result.nit <= 20),
            Err(error) => prop_assert!(matches!(error, SolveError::InvalidOption { .. }), "{error:?}"),
        }
    }
}
