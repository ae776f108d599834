//! The trust-region-reflective method (bounded least squares) against scipy's
//! `least_squares(method='trf', bounds=…)`: the same minimum, status, active set and counts on
//! bounded MGH runs, with scipy's numbers written in (`python tests/scipy/mgh_trf.py` prints
//! them); and the inputs least squares refuses.

use cudamin::{Backend, Gradient, TermObjective, problems};
use cudamin::{Bounds, LmOptions, LmStatus, SolveError};

/// Per run: the problem, `n`, the upper bound of `x₀` and the lower bound of `x_{n−1}` (the
/// others unbounded), then scipy's status, nfev, njev, cost and `active_mask`.
type BoundedRun = (
    &'static str,
    usize,
    f64,
    f64,
    i32,
    usize,
    usize,
    f64,
    &'static [i32],
);

/// `python tests/scipy/mgh_trf.py` (numpy 2.4.6, scipy 1.17.1).
#[rustfmt::skip]
const MGH_TRF: &[BoundedRun] = &[
    ("mgh-1", 2, 0.7999990508143493, 1.1999978229962962, 2, 8, 8, 2.1908604346488074, &[0, -1]),
    ("mgh-2", 2, 10.171498508479154, -0.7071250732469665, 1, 8, 8, 39.600465162169165, &[1, -1]),
    ("mgh-3", 2, -0.09990999669132124, 1.2000000029759064, 1, 2, 2, 719904.0416111124, &[1, -1]),
    ("mgh-4", 2, 899999.900000036, 0.10000219999997646, 4, 19, 19, 9050007299.98548, &[1, -1]),
    ("mgh-5", 2, 2.599999945425583, 0.6499999750134232, 1, 8, 8, 0.7272550020306952, &[1, -1]),
    ("mgh-7", 3, 0.7999998122206828, 0.10000002314019603, 2, 15, 15, 0.4952115736942681, &[1, 0, 0]),
    ("mgh-8", 3, -0.02583015572861469, 2.6780355461843257, 2, 9, 8, 0.03232161191440744, &[1, 0, 0]),
    ("mgh-9", 3, 0.2590681359807271, 0.1, 2, 9, 8, 0.02681706599747552, &[1, 0, -1]),
    ("mgh-12", 3, 0.8000009819572598, 1.1999985147375125, 2, 19, 15, 0.00422594483080544, &[0, 0, -1]),
    ("mgh-13", 4, -0.09954445026441176, 0.10620533959345368, 2, 12, 12, 0.009706836747518746, &[1, 0, 0, -1]),
    ("mgh-14", 4, -1.169865167860856, 1.1365128983910626, 1, 12, 12, 5.644641723319746, &[1, 0, 0, -1]),
    ("mgh-16", 4, -12.85386594696753, 0.360493141879292, 2, 84, 78, 43994.31703383987, &[1, 0, 0, 0]),
    ("mgh-18", 6, 1.4402724288121684, 1.3794571767716812, 1, 33, 23, 8.734785632576094e-29, &[0, 0, 0, 0, 0, 0]),
    ("mgh-20", 6, -0.1172980869969515, 1.1922846831290856, 1, 10, 10, 0.011722228655816923, &[1, 0, 0, 0, 0, -1]),
    ("mgh-20", 9, -0.10035484751439364, 0.32555308222097246, 1, 9, 9, 0.005035637193585219, &[1, 0, 0, 0, 0, 0, 0, 0, 0]),
    ("mgh-23", 4, -0.017805982801730777, 0.5016534209332733, 2, 69, 51, 1.834297160095842e-05, &[1, 0, 0, -1]),
    ("mgh-23", 10, -0.07702104990703657, 0.3802919534536032, 1, 81, 67, 3.9297046157502794e-05, &[1, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    ("mgh-24", 4, 0.07999984629189202, 0.8202582542944581, 2, 20, 11, 0.007204748211128751, &[1, 0, 0, -1]),
    ("mgh-25", 10, 0.7999999999999944, 1.1999999999999207, 1, 14, 14, 0.04568421132174363, &[1, 0, 0, 0, 0, 0, 0, 0, 0, -1]),
    ("mgh-26", 10, -0.05035413542163745, 0.20059199887594648, 2, 11, 9, 0.003128786523353973, &[1, 0, 0, 0, 0, 0, 0, 0, 0, -1]),
    ("mgh-30", 10, -0.7277954386437934, -0.27477250960451816, 4, 8, 8, 0.44519579138952287, &[1, 0, 0, 0, 0, 0, 0, 0, 0, -1]),
    ("mgh-31", 10, -0.5711328657609147, -0.42782253717755747, 1, 10, 10, 0.7744127381480249, &[1, 0, 0, 0, 0, 0, 0, 0, 0, -1]),
    ("mgh-35", 8, -0.061162568646255654, 1.1525320283454237, 2, 35, 24, 550.7445996408663, &[1, 0, 0, 0, 0, 0, 0, -1])
];

/// scipy's `least_squares(fun, clip(x0), jac=J, bounds=…, method='trf')` on each bounded run
/// (exact Jacobian rows of the built-in problems' own terms, on the CPU): the cost to 1e-8
/// relative (1e-20 absolute, where the minimum is a zero residual), the same active set and
/// status, and nfev and njev within 1 of scipy's (the SVDs are not LAPACK's, so the last bits of
/// a step may differ).
#[test]
fn bounded_mgh_runs_match_scipys_trf() {
    let mut failures = Vec::new();
    for &(name, n, upper0, lower_last, status, nfev, njev, cost, active) in MGH_TRF {
        let instance = (problems::find(name).unwrap())
            .instantiate(&Backend::Cpu, Some(n), None)
            .unwrap();
        let residuals = instance.evaluator.into_least_squares().unwrap();
        let mut objective = TermObjective::new(residuals, Gradient::Exact);
        let mut bounds = Bounds::unbounded(n);
        bounds.upper[0] = upper0;
        bounds.lower[n - 1] = lower_last;
        let x0: Vec<f64> = (instance.x0.iter().enumerate())
            .map(|(i, &v)| bounds.clip(i, v))
            .collect();
        let options = LmOptions {
            bounds: Some(bounds),
            ..LmOptions::default()
        };
        let result = cudamin::least_squares(&mut objective, &x0, &options).unwrap();
        let mask = result.active_mask.clone().unwrap();
        println!(
            "{name} n={n}: status {} nfev {} njev {} cost {:e} {mask:?}; scipy: {status} {nfev} {njev} {cost:e} {active:?}",
            result.status.code(),
            result.nfev,
            result.njev,
            result.cost
        );
        let same_cost = (result.cost - cost).abs() <= 1e-8 * cost + 1e-20;
        let near = |ours: usize, theirs: usize| ours.abs_diff(theirs) <= 1;
        if !(same_cost
            && mask == active
            && result.status.code() == status
            && near(result.nfev, nfev)
            && near(result.njev, njev))
        {
            failures.push(format!("{name} n={n}"));
        }
    }
    assert!(failures.is_empty(), "differ from scipy: {failures:?}");
}

/// Bounds users write to mean "none" (±10²⁰⁰, ±10³⁰⁰) scale the trust-region steps' matrix by
/// their square roots: Bard's function (mgh-8) in such boxes ends as scipy's `trf` does (cost
/// 0.0041074386532906, 6 evaluations, 6 Jacobians, status 2, every bound inactive, for
/// ±10¹⁵⁰, ±10²⁰⁰ and ±10³⁰⁰ alike). From ±10¹⁵⁴ up the SVD's rotations overflowed and the
/// solve stopped at `x0` with status 3, "success".
#[test]
fn bounds_that_mean_none_solve_as_scipy_does() {
    for bound in [1e150, 1e200, 1e300] {
        let instance = (problems::find("mgh-8").unwrap())
            .instantiate(&Backend::Cpu, None, None)
            .unwrap();
        let residuals = instance.evaluator.into_least_squares().unwrap();
        let mut objective = TermObjective::new(residuals, Gradient::Exact);
        let options = bounded([-bound; 3], [bound; 3]);
        let result = cudamin::least_squares(&mut objective, &instance.x0, &options).unwrap();
        let cost = 0.004107438653290616;
        assert!(
            (result.cost - cost).abs() <= 1e-12 * cost,
            "±{bound:e}: cost {}",
            result.cost
        );
        assert_eq!(
            (result.nfev, result.njev, result.status.code()),
            (6, 6, 2),
            "±{bound:e}"
        );
        assert_eq!(result.active_mask, Some(vec![0; 3]), "±{bound:e}");
    }
}

/// mgh-7 (the helical valley, 3 variables) as a least-squares objective, and its start.
fn helical_valley() -> (TermObjective<dyn cudamin::LeastSquaresEvaluator>, Vec<f64>) {
    let instance = (problems::find("mgh-7").unwrap())
        .instantiate(&Backend::Cpu, Some(3), None)
        .unwrap();
    let residuals = instance.evaluator.into_least_squares().unwrap();
    (TermObjective::new(residuals, Gradient::Exact), instance.x0)
}

fn bounded(lower: [f64; 3], upper: [f64; 3]) -> LmOptions {
    LmOptions {
        bounds: Some(Bounds {
            lower: lower.to_vec(),
            upper: upper.to_vec(),
        }),
        ..LmOptions::default()
    }
}

/// What least squares refuses, as scipy's `least_squares` does, each a one-line error naming
/// the variable: equal bounds on a free variable, a start outside the box; and what every
/// bounded method refuses (NaN, lower > upper, the wrong length).
#[test]
fn bad_bounds_for_least_squares_are_named_errors() {
    let (mut objective, x0) = helical_valley(); // x0 = (−1, 0, 0)
    let inf = f64::INFINITY;
    let cases: [(LmOptions, &str); 6] = [
        (
            bounded([-inf, 0.0, -inf], [inf, 0.0, inf]),
            "invalid bounds [0, 0] for x[1]: least squares needs lower < upper (hold the variable with fixed)",
        ),
        (
            bounded([-inf, -inf, 0.5], [inf, inf, 1.0]),
            "x0[2] = 0 lies outside its bounds [0.5, 1]",
        ),
        (
            bounded([f64::NAN, -inf, -inf], [inf; 3]),
            "invalid bounds [NaN, inf] for x[0]: a bound is NaN",
        ),
        (
            bounded([-inf, 2.0, -inf], [inf, 1.0, inf]),
            "invalid bounds [2, 1] for x[1]: lower > upper",
        ),
        (
            LmOptions {
                bounds: Some(Bounds::unbounded(2)),
                ..LmOptions::default()
            },
            "invalid option bounds = lower bounds of 2 entries: need one per variable",
        ),
        (
            // A `fixed` of the wrong length beside bounds (the bounds' checks read it).
            LmOptions {
                fixed: Some(vec![true]),
                ..bounded([-inf, 0.0, -inf], [inf, 0.0, inf])
            },
            "invalid option fixed = 1 entries for 3 variables: need one per variable",
        ),
    ];
    for (options, message) in cases {
        let error = cudamin::least_squares(&mut objective, &x0, &options).unwrap_err();
        assert!(matches!(
            error,
            SolveError::InvalidBounds { .. }
                | SolveError::InfeasibleX0 { .. }
                | SolveError::InvalidOption { .. }
        ));
        assert_eq!(error.to_string(), message);
    }
}

/// scipy's tolerance rule: trf takes a tolerance of 0 (scipy's `None`) as that test off while
/// another is on; MINPACK's lm needs every one at least machine epsilon.
#[test]
fn trf_takes_a_tolerance_off_and_lm_does_not() {
    let (mut objective, x0) = helical_valley();
    let inf = f64::INFINITY;
    let on = bounded([-inf; 3], [0.5, inf, inf]);
    let off = LmOptions {
        ftol: 0.0,
        ..on.clone()
    };
    let stopped = cudamin::least_squares(&mut objective, &x0, &on).unwrap();
    let result = cudamin::least_squares(&mut objective, &x0, &off).unwrap();
    assert!(result.success, "{}", result.message);
    assert!(!matches!(
        result.status,
        LmStatus::Ftol | LmStatus::FtolXtol
    ));
    // The test was what ended the default run, and the run without it goes on.
    assert!(
        matches!(stopped.status, LmStatus::Ftol | LmStatus::FtolXtol),
        "{:?}",
        stopped.status
    );
    assert!(result.nfev > stopped.nfev);
    let all_off = LmOptions {
        xtol: 0.0,
        gtol: 0.0,
        ..off
    };
    let lm_off = LmOptions {
        ftol: 0.0,
        ..LmOptions::default()
    };
    for (options, message) in [
        (
            all_off,
            "invalid option (ftol, xtol, gtol) = (0, 0, 0): one of them must be at least machine epsilon (2.2e-16)",
        ),
        (
            lm_off,
            "invalid option ftol = 0: must be finite and at least machine epsilon (2.2e-16) for lm (trf takes 0: that test off)",
        ),
    ] {
        let error = cudamin::least_squares(&mut objective, &x0, &options).unwrap_err();
        assert_eq!(error.to_string(), message);
    }
}

/// Bounds with a fixed variable: the fixed one may have equal bounds (they are not used), the
/// solve is the bounded one in the others, and the active set covers every variable, 0 at the
/// fixed one. The bound on `x₂` sits below where the fit with `x₀` fixed and no bounds ends,
/// so the bounded solve ends on it.
#[test]
fn a_fixed_variable_and_bounds_on_the_others() {
    let (mut objective, x0) = helical_valley();
    let free = LmOptions {
        fixed: Some(vec![true, false, false]),
        ..LmOptions::default()
    };
    let unbounded = cudamin::least_squares(&mut objective, &x0, &free).unwrap();
    assert!(unbounded.success && unbounded.active_mask.is_none());
    let cap = unbounded.x[2] - 0.1 * (unbounded.x[2].abs() + 1.0);
    assert!(cap > x0[2], "the start {x0:?} is within the bound {cap}");
    let inf = f64::INFINITY;
    let options = LmOptions {
        fixed: free.fixed.clone(),
        ..bounded([-1.0, -inf, -inf], [-1.0, inf, cap])
    };
    let result = cudamin::least_squares(&mut objective, &x0, &options).unwrap();
    assert!(result.success, "{}", result.message);
    assert_eq!(result.x[0], -1.0);
    assert_eq!(result.active_mask.as_deref(), Some(&[0, 0, 1][..]));
    assert!(
        (result.x[2] - cap).abs() <= 1e-8 * cap.abs(),
        "{:?}",
        result.x
    );
    assert!(result.cost > unbounded.cost);
}

/// A bounded fit whose residual is NaN past its bound, with finite-difference rows: trf's
/// iterates stay strictly inside the box, but end within a forward step of the bound (4.6e-9),
/// where an unconfined step crosses it and the rows at the answer, so its `Jᵀr`, are NaN. By
/// scipy's rule the rows step inward, and every scheme ends at the exact rows' answer, the first
/// variable on its bound, with their `Jᵀr`.
#[test]
fn finite_difference_rows_stay_in_the_box() {
    use cudamin::kernels::LeastSquares;
    use cudamin::kernels::Residuals;
    use cudamin::kernels::prelude::*;
    use cudamin::{LmOptions, TermProblem};

    /// `r₀ = 3 − 2x₀ + (1 − x₀)^{5/2}` (falling in x₀, 1 at x₀ = 1, NaN past it) and
    /// `r₁ = x₁ − ½`.
    struct Wall;
    impl Residuals for Wall {
        fn count(_n: usize) -> usize {
            2
        }
        fn check(n: usize) -> Result<(), &'static str> {
            cudamin::kernels::exactly(n, 2)
        }
        fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
            match i {
                0 => 3.0 - 2.0 * x[0] + (1.0 - x[0]).powf(2.5),
                _ => x[1] - 0.5,
            }
        }
    }
    cudamin::kernels::register_residuals!(by_index Wall, wall);

    let options = LmOptions {
        bounds: Some(Bounds {
            lower: vec![f64::NEG_INFINITY; 2],
            upper: vec![1.0, f64::INFINITY],
        }),
        ..LmOptions::default()
    };
    let mut answers = Vec::new();
    for gradient in Gradient::ALL {
        let problem = TermProblem::<LeastSquares<Wall>>::new(2).unwrap();
        let residuals = Backend::Cpu.load_least_squares(problem).unwrap();
        let mut objective = TermObjective::new(residuals, gradient);
        let result = cudamin::least_squares(&mut objective, &[0.0, 0.0], &options).unwrap();
        assert!(result.success, "{gradient:?}: {}", result.message);
        assert_eq!(
            result.active_mask.as_deref(),
            Some(&[1, 0][..]),
            "{gradient:?}"
        );
        assert!(
            (result.cost - 0.5).abs() <= 1e-7,
            "{gradient:?}: cost {}",
            result.cost
        );
        // Jᵀr at the answer: ∂r₀/∂x₀ = −2 there, r₀ = 1.
        assert!(
            (result.grad[0] + 2.0).abs() <= 1e-6 && result.grad[1].abs() <= 1e-8,
            "{gradient:?}: Jᵀr = {:?}",
            result.grad
        );
        answers.push(result.x);
    }
    for x in &answers[1..] {
        assert!(
            (x[0] - answers[0][0]).abs() <= 1e-7 && (x[1] - 0.5).abs() <= 1e-8,
            "{x:?} vs the exact rows' {:?}",
            answers[0]
        );
    }
}

/// A point with finite residuals and a NaN Jacobian row: `r₀ = x₀ − 2 + ½·√(x₁²)`, `r₁ = x₁`,
/// whose exact derivative in `x₁` is 0/0 at `x₁ = 0`. From `(0, 1)` the first Gauss–Newton step
/// lands on `(2, 0)` exactly (Levenberg–Marquardt's first step is undamped there), and `(0, 0)`
/// is a start on the kink. Both methods refuse such a point by name rather than test a NaN
/// gradient (trf once passed a NaN `Jᵀr` as converged: `f64::max` skips a NaN).
#[test]
fn a_jacobian_that_breaks_down_is_a_named_error() {
    use cudamin::kernels::LeastSquares;
    use cudamin::kernels::Residuals;
    use cudamin::kernels::prelude::*;
    use cudamin::{LmOptions, TermProblem};

    struct Kink;
    impl Residuals for Kink {
        fn count(_n: usize) -> usize {
            2
        }
        fn check(n: usize) -> Result<(), &'static str> {
            cudamin::kernels::exactly(n, 2)
        }
        fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
            match i {
                0 => x[0] - 2.0 + 0.5 * (x[1] * x[1]).sqrt(),
                _ => x[1] + 0.0,
            }
        }
    }
    cudamin::kernels::register_residuals!(by_index Kink, kink);

    let bounded = LmOptions {
        bounds: Some(Bounds {
            lower: vec![-10.0; 2],
            upper: vec![10.0; 2],
        }),
        ..LmOptions::default()
    };
    let lm = LmOptions::default();
    for (method, options, x0, at) in [
        ("lm", &lm, [0.0, 1.0], 1),
        ("lm", &lm, [0.0, 0.0], 0),
        ("trf", &bounded, [0.0, 0.0], 0),
    ] {
        let problem = TermProblem::<LeastSquares<Kink>>::new(2).unwrap();
        let residuals = Backend::Cpu.load_least_squares(problem).unwrap();
        let mut objective = TermObjective::new(residuals, Gradient::Exact);
        match cudamin::least_squares(&mut objective, &x0, options) {
            Err(SolveError::NonFiniteJacobian { nit }) if nit == at => {}
            other => panic!("{method} from {x0:?}: {other:?}"),
        }
    }
}
