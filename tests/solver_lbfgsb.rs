//! L-BFGS-B against scipy's `minimize(method='L-BFGS-B')` on bounded problems: the same
//! minimum (f to 1e-8 relative), the same active set and the same status, with scipy's numbers
//! written in (`python tests/scipy/lbfgsb_cases.py` prints them); and bad bounds refused.

mod solver_common;

use cudamin::{Bounds, Method, OptimizeResult, Options, SolveError, Status};
use cudamin::{EvalError, Objective};
use solver_common::*;

/// `Σ (i+1)·(x_i − c_i)² + ½·Σ x_i·x_{i+1}`, `c_i = ±2` alternating: the script's `quadratic`.
struct Coupled {
    n: usize,
}

impl Coupled {
    fn target(i: usize) -> f64 {
        if i % 2 == 0 { 2.0 } else { -2.0 }
    }
}

impl Objective for Coupled {
    fn dim(&self) -> usize {
        self.n
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        let squares: f64 = (x.iter().enumerate())
            .map(|(i, &v)| (i + 1) as f64 * (v - Coupled::target(i)).powi(2))
            .sum();
        let coupling: f64 = x.windows(2).map(|w| w[0] * w[1]).sum();
        Ok(squares + 0.5 * coupling)
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        for (i, gi) in g.iter_mut().enumerate() {
            *gi = 2.0 * (i + 1) as f64 * (x[i] - Coupled::target(i));
            if i + 1 < self.n {
                *gi += 0.5 * x[i + 1];
            }
            if i > 0 {
                *gi += 0.5 * x[i - 1];
            }
        }
        Ok(())
    }
}

const INF: f64 = f64::INFINITY;

/// One case: name, objective, `x0`, `(lower, upper)` per variable, and scipy's status, `fun`,
/// `nit`, `nfev`, active set (−1 at lower, 1 at upper) and `x`.
type Case = (
    &'static str,
    fn(usize) -> Box<dyn Objective>,
    Vec<f64>,
    Vec<(f64, f64)>,
    (i32, f64, usize, usize, Vec<i32>, Vec<f64>),
);

fn rosenbrock(n: usize) -> Box<dyn Objective> {
    Box::new(Rosenbrock { n })
}

fn coupled(n: usize) -> Box<dyn Objective> {
    Box::new(Coupled { n })
}

fn cases() -> Vec<Case> {
    vec![
        (
            "rosenbrock-3",
            rosenbrock,
            vec![-1.2, 1.0, 0.5],
            vec![(-2.0, 0.5), (0.0, 2.0), (0.3, 1.0)],
            (
                0,
                3.2140491255956922,
                15,
                20,
                vec![0, 0, -1],
                vec![-0.7277890861231313, 0.5415471031670639, 0.3],
            ),
        ),
        (
            "rosenbrock-2-upper",
            rosenbrock,
            vec![-1.2, 1.0],
            vec![(-INF, 0.5), (-INF, INF)],
            (0, 0.25, 20, 29, vec![1, 0], vec![0.5, 0.25]),
        ),
        (
            "rosenbrock-10-box",
            rosenbrock,
            [-1.2, 1.0].repeat(5),
            vec![(-2.0, 0.8); 10],
            (
                0,
                6.001016394619248,
                32,
                37,
                vec![1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
                vec![
                    0.8,
                    0.6658865880101927,
                    0.46033390104293054,
                    0.22443321059769206,
                    0.06099758214731676,
                    0.01386216229832779,
                    0.010297230010178064,
                    0.010205982231827199,
                    0.010004108065493051,
                    0.00010038034410834559,
                ],
            ),
        ),
        (
            "rosenbrock-4-unbounded",
            rosenbrock,
            [-1.2, 1.0].repeat(2),
            vec![(-INF, INF); 4],
            (0, 8.082815028395363e-12, 39, 45, vec![0; 4], vec![1.0; 4]),
        ),
        (
            "rosenbrock-2-outside",
            rosenbrock,
            vec![3.0, -3.0],
            vec![(-1.0, 2.0), (0.0, 1.0)],
            (0, 5.013719199605852e-15, 32, 46, vec![0, 0], vec![1.0, 1.0]),
        ),
        (
            "quadratic-8",
            coupled,
            vec![0.0; 8],
            [
                vec![(-1.0, 1.0); 4],
                vec![(-INF, 1.5), (0.0, INF), (-3.0, 3.0), (1.0, 1.0)],
            ]
            .concat(),
            (
                0,
                105.99107142857143,
                4,
                5,
                vec![1, -1, 1, -1, 1, -1, 0, -1],
                vec![1.0, -1.0, 1.0, -1.0, 1.5, 0.0, 1.9642857142857142, 1.0],
            ),
        ),
    ]
}

fn bounds_of(pairs: &[(f64, f64)]) -> Bounds {
    Bounds {
        lower: pairs.iter().map(|p| p.0).collect(),
        upper: pairs.iter().map(|p| p.1).collect(),
    }
}

/// The same minimum as scipy's L-BFGS-B: `fun` to 1e-8 relative (absolute below 1e-10, where
/// the residual minimum is rounding), the same active set and status; `x` to 1e-5 where `f`
/// is not flat; and scipy's iteration and evaluation counts.
#[test]
fn bounded_minima_match_scipys() {
    for (name, make, x0, pairs, (status, fun, nit, nfev, active, x)) in cases() {
        let mut objective = make(x0.len());
        let options = Options {
            bounds: Some(bounds_of(&pairs)),
            ..Options::default()
        };
        let result = solve(objective.as_mut(), &x0, Method::LbfgsB, &options).unwrap();
        println!(
            "{name}: status {} nit {} nfev {} f {:e}; scipy: status {status} nit {nit} nfev {nfev} f {fun:e}",
            result.status.code(),
            result.nit,
            result.nfev,
            result.fun
        );
        assert_eq!(result.status.code(), status, "{name}: {}", result.message);
        // The same iteration, step for step: scipy's counts exactly.
        assert_eq!((result.nit, result.nfev), (nit, nfev), "{name}");
        assert!(
            (result.fun - fun).abs() <= 1e-8 * fun.abs() || (result.fun - fun).abs() <= 1e-10,
            "{name}: f {} vs scipy's {fun}",
            result.fun
        );
        let got_active: Vec<i32> = (result.x.iter().zip(&pairs))
            .map(|(&v, &(lower, upper))| {
                if v == lower {
                    -1
                } else if v == upper {
                    1
                } else {
                    0
                }
            })
            .collect();
        assert_eq!(got_active, active, "{name}: {:?}", result.x);
        for (got, want) in result.x.iter().zip(&x) {
            assert!(
                (got - want).abs() <= 1e-4,
                "{name}: x {:?} vs {x:?}",
                result.x
            );
        }
    }
}

/// scipy's stopping rules: `maxiter` and `maxfun` end in status 1 with L-BFGS-B's messages.
#[test]
fn limits_end_with_scipys_status_and_message() {
    let bounds = bounds_of(&[(-2.0, 0.5), (0.0, 2.0), (0.3, 1.0)]);
    let x0 = [-1.2, 1.0, 0.5];
    let run = |options: Options| {
        let options = Options {
            bounds: Some(bounds.clone()),
            ..options
        };
        solve(&mut Rosenbrock { n: 3 }, &x0, Method::LbfgsB, &options).unwrap()
    };
    let by_iterations = run(Options {
        maxiter: Some(3),
        ..Options::default()
    });
    assert_eq!(by_iterations.status, Status::IterationLimit);
    assert_eq!(by_iterations.nit, 3);
    assert_eq!(
        by_iterations.message,
        "STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT"
    );
    let by_evaluations = run(Options {
        maxfun: Some(5),
        ..Options::default()
    });
    assert_eq!(by_evaluations.status, Status::EvaluationLimit);
    assert!(by_evaluations.nfev > 5);
    assert_eq!(by_evaluations.status.code(), 1);
}

/// scipy's `maxls` bounds each line search's evaluations: with 1, 2 and 3 on Rosenbrock in 10
/// variables, unbounded and in `[-2, 0.8]`, the status, `nit` and `nfev` are scipy's, and so is
/// `f`. Where a search fails (status 2, "ABNORMAL: "), `fun` is `f(x)` at the last iterate (the
/// `x` scipy returns too; scipy's `fun` is its rejected trial's). `maxls = 0` is refused.
#[test]
fn maxls_bounds_each_search_as_scipys() {
    let x0 = [-1.2, 1.0, -1.2, 1.0, 0.5, -0.5, 1.5, 2.0, -1.0, 0.3];
    // `python tests/scipy/lbfgsb_cases.py` (scipy 1.17.1): (maxls, boxed, status, f(x), nit, nfev).
    let scipy = [
        (1, false, 2, 9.322795493632768, 14, 17),
        (2, false, 0, 8.695338860643225e-11, 71, 85),
        (3, false, 0, 8.695338860643225e-11, 71, 85),
        (1, true, 2, 845.8000000000002, 0, 2),
        (2, true, 2, 9.287070727476404, 12, 19),
        (3, true, 0, 6.001016394633647, 37, 46),
    ];
    for (maxls, boxed, status, fun, nit, nfev) in scipy {
        let options = Options {
            maxls,
            bounds: boxed.then(|| bounds_of(&[(-2.0, 0.8); 10])),
            ..Options::default()
        };
        let mut objective = Rosenbrock { n: 10 };
        let r = solve(&mut objective, &x0, Method::LbfgsB, &options).unwrap();
        let case = format!("maxls {maxls}, boxed {boxed}: {r:?}");
        assert_eq!(
            (r.status.code(), r.nit, r.nfev),
            (status, nit, nfev),
            "{case}"
        );
        assert!((r.fun - fun).abs() <= 1e-8 * fun.abs().max(1.0), "{case}");
        assert_eq!(r.fun, objective.value(&r.x).unwrap(), "{case}");
        if status == 2 {
            assert_eq!(r.message, "ABNORMAL: ");
        }
    }
    let refused = Options {
        maxls: 0,
        ..Options::default()
    };
    let error = solve(&mut Rosenbrock { n: 10 }, &x0, Method::LbfgsB, &refused).unwrap_err();
    assert!(
        matches!(error, SolveError::InvalidOption { name: "maxls", .. }),
        "{error}"
    );
}

/// Bad bounds are one-line errors naming the variable; the other methods refuse bounds.
#[test]
fn bad_bounds_are_refused() {
    let solve_with = |lower: Vec<f64>, upper: Vec<f64>, method| {
        let options = Options {
            bounds: Some(Bounds { lower, upper }),
            ..Options::default()
        };
        solve(&mut Rosenbrock { n: 2 }, &[0.0, 0.0], method, &options).unwrap_err()
    };
    let message = |e: SolveError| e.to_string();
    let crossed = message(solve_with(vec![0.0, 2.0], vec![1.0, 1.0], Method::LbfgsB));
    assert_eq!(crossed, "invalid bounds [2, 1] for x[1]: lower > upper");
    let nan = message(solve_with(
        vec![f64::NAN, 0.0],
        vec![1.0, 1.0],
        Method::LbfgsB,
    ));
    assert!(nan.contains("x[0]") && nan.contains("NaN"), "{nan}");
    let short = message(solve_with(vec![0.0], vec![1.0, 1.0], Method::LbfgsB));
    assert!(short.contains("lower bounds of 1 entries"), "{short}");
    let bfgs = message(solve_with(vec![0.0, 0.0], vec![1.0, 1.0], Method::Bfgs));
    assert_eq!(
        bfgs,
        "invalid option method = bfgs: takes no bounds; lbfgsb (L-BFGS-B) does"
    );
}

/// A bounded MGH run and scipy's answer (see [`MGH_BOUNDED`]).
type BoundedRun = (&'static str, usize, f64, f64, i32, f64, &'static [i32]);

/// `python tests/scipy/mgh_lbfgsb.py` (scipy 1.17.1): each MGH least-squares run of
/// tests/mgh.rs with variable 0 bounded above and the last variable below, both past the
/// unbounded minimum, and scipy's L-BFGS-B there: `(name, n, upper bound of x₀, lower bound of
/// xₙ₋₁, status, f, active set)`. Left out: mgh-18 (Biggs EXP6), whose bounded run ends with
/// no bound active, by the `ftol` test in a flat valley after 44 iterations, where the last bits
/// of the gradient (scipy's complex step against exact duals here) move the stopping point:
/// f = 5.7461e-3 there, 5.7469e-3 here.
const MGH_BOUNDED: &[BoundedRun] = &[
    (
        "mgh-1",
        2,
        0.7999990508143493,
        1.1999978229962962,
        0,
        4.381720869297615,
        &[0, -1],
    ),
    (
        "mgh-2",
        2,
        10.171498508479154,
        -0.7071250732469665,
        0,
        79.20093032433832,
        &[1, -1],
    ),
    (
        "mgh-3",
        2,
        -0.09990999669132124,
        1.2000000029759064,
        0,
        1439808.0832222237,
        &[1, -1],
    ),
    (
        "mgh-4",
        2,
        899999.900000036,
        0.10000219999997646,
        0,
        18100014599.970936,
        &[1, -1],
    ),
    (
        "mgh-5",
        2,
        2.599999945425583,
        0.6499999750134232,
        0,
        1.4545100040613783,
        &[1, -1],
    ),
    (
        "mgh-7",
        3,
        0.7999998122206828,
        0.10000002314019603,
        0,
        0.9904231473414126,
        &[1, 0, 0],
    ),
    (
        "mgh-8",
        3,
        -0.02583015572861469,
        2.6780355461843257,
        0,
        0.06464322382877728,
        &[1, 0, 0],
    ),
    (
        "mgh-9",
        3,
        0.2590681359807271,
        0.1,
        0,
        0.05363413207241648,
        &[1, 0, -1],
    ),
    (
        "mgh-12",
        3,
        0.8000009819572598,
        1.1999985147375125,
        0,
        0.008451889661200697,
        &[0, 0, -1],
    ),
    (
        "mgh-13",
        4,
        -0.09954445026441176,
        0.10620533959345368,
        0,
        0.019413673495674834,
        &[1, 0, 0, -1],
    ),
    (
        "mgh-14",
        4,
        -1.169865167860856,
        1.1365128983910626,
        0,
        11.28928344663948,
        &[1, 0, 0, -1],
    ),
    (
        "mgh-16",
        4,
        -12.85386594696753,
        0.360493141879292,
        0,
        87988.61537388989,
        &[1, 0, 0, -1],
    ),
    (
        "mgh-20",
        6,
        -0.1172980869969515,
        1.1922846831290856,
        0,
        0.023481705986284445,
        &[1, 0, 0, 0, 0, 0],
    ),
    (
        "mgh-20",
        9,
        -0.10035484751439364,
        0.32555308222097246,
        0,
        0.010074239029609387,
        &[1, 0, 0, 0, 0, 0, 0, 0, -1],
    ),
    (
        "mgh-23",
        4,
        -0.017805982801730777,
        0.5016534209332733,
        0,
        3.668709287824053e-05,
        &[1, 0, 0, -1],
    ),
    (
        "mgh-23",
        10,
        -0.07702104990703657,
        0.3802919534536032,
        0,
        7.996324806255465e-05,
        &[1, 0, 0, 0, 0, 0, 0, 0, 0, -1],
    ),
    (
        "mgh-24",
        4,
        0.07999984629189202,
        0.8202582542944581,
        0,
        0.014411173242458584,
        &[1, 0, 0, 0],
    ),
    (
        "mgh-25",
        10,
        0.7999999999999944,
        1.1999999999999207,
        0,
        0.09136842264348784,
        &[1, 0, 0, 0, 0, 0, 0, 0, 0, -1],
    ),
    (
        "mgh-26",
        10,
        -0.05035413542163745,
        0.20059199887594648,
        0,
        0.0062575730486808,
        &[1, 0, 0, 0, 0, 0, 0, 0, 0, -1],
    ),
    (
        "mgh-30",
        10,
        -0.7277954386437934,
        -0.27477250960451816,
        0,
        0.8903915830271366,
        &[1, 0, 0, 0, 0, 0, 0, 0, 0, -1],
    ),
    (
        "mgh-31",
        10,
        -0.5711328657609147,
        -0.42782253717755747,
        0,
        1.5488254763989797,
        &[1, 0, 0, 0, 0, 0, 0, 0, 0, -1],
    ),
    (
        "mgh-35",
        8,
        -0.061162568646255654,
        1.1525320283454237,
        0,
        1106.1636448638933,
        &[1, 0, 0, 0, 0, 0, 0, -1],
    ),
];

/// The built-in MGH problem `name` at `n` variables (its default without), with exact gradients
/// of its own terms on the CPU, and its start.
fn mgh(name: &str, n: Option<usize>) -> (Box<dyn Objective>, Vec<f64>) {
    use cudamin::{Backend, Gradient, TermObjective, problems};
    let instance = (problems::find(name).unwrap())
        .instantiate(&Backend::Cpu, n, None)
        .unwrap();
    let objective = TermObjective::new(instance.evaluator.into_sum(), Gradient::Exact);
    (Box::new(objective), instance.x0)
}

/// The bounded MGH runs, through the built-in problems (exact gradients of their own terms, on
/// the CPU): scipy's minimum (f to 1e-8 relative), active set and status.
#[test]
fn bounded_mgh_minima_match_scipys() {
    let mut failures = Vec::new();
    for &(name, n, upper0, lower_last, status, fun, active) in MGH_BOUNDED {
        let (mut objective, x0) = mgh(name, Some(n));
        let mut bounds = Bounds::unbounded(n);
        bounds.upper[0] = upper0;
        bounds.lower[n - 1] = lower_last;
        let options = Options {
            bounds: Some(bounds.clone()),
            ..Options::default()
        };
        let result = solve(&mut *objective, &x0, Method::LbfgsB, &options).unwrap();
        let same_f = (result.fun - fun).abs() <= 1e-8 * fun.abs();
        let mask = bounds.active_mask(&result.x, None);
        println!(
            "{name} n={n}: status {} f {:e} nit {} {mask:?}; scipy: status {status} f {fun:e} {active:?}",
            result.status.code(),
            result.fun,
            result.nit
        );
        if !(same_f && mask == active && result.status.code() == status) {
            failures.push(name);
        }
    }
    assert!(failures.is_empty(), "differ from scipy: {failures:?}");
}

/// Where the line search's interval collapses at its best step it asks for that step again; the
/// ray is there already, so no evaluation is made or counted, as in scipy, whose cached objective
/// answers it (one more of each before): mgh-23 and mgh-24 in `[0, 0.5]⁴`, scipy 1.17.1's
/// counts and minima (scipy run on cudamin's own values of `f` and `∇f`).
#[test]
fn a_collapsed_search_does_not_evaluate_its_best_step_again() {
    let scipy = [
        ("mgh-23", 4, 16, 2.2499775184455877e-05),
        ("mgh-24", 30, 61, 9.378910639066355e-06),
    ];
    for (name, nit, nfev, fun) in scipy {
        let (mut objective, x0) = mgh(name, Some(4));
        let options = Options {
            bounds: Some(bounds_of(&[(0.0, 0.5); 4])),
            ..Options::default()
        };
        let result = solve(&mut *objective, &x0, Method::LbfgsB, &options).unwrap();
        let counts = (result.status.code(), result.nit, result.nfev, result.njev);
        assert_eq!(counts, (0, nit, nfev, nfev), "{name}");
        assert!(
            (result.fun - fun).abs() <= 1e-12 * fun,
            "{name}: f {}",
            result.fun
        );
    }
}

/// A run of scipy's L-BFGS-B on an MGH problem: `(name, n, status, f, nit, nfev)`.
type ScipyRun = (&'static str, usize, i32, f64, usize, usize);

/// scipy's L-BFGS-B on the MGH least-squares runs without bounds: `(name, n, status, f, nit,
/// nfev)`, from `python tests/scipy/mgh_lbfgsb.py --unbounded` (scipy 1.17.1).
const MGH_UNBOUNDED: &[ScipyRun] = &[
    ("mgh-1", 2, 0, 2.8076498882208515e-12, 36, 44),
    ("mgh-2", 2, 0, 48.98425367926397, 19, 20),
    ("mgh-3", 2, 0, 0.13518817305353772, 2, 4),
    ("mgh-4", 2, 0, 2.061537090936833e-15, 13, 25),
    ("mgh-5", 2, 0, 1.9483850571556675e-15, 15, 16),
    ("mgh-7", 3, 0, 1.9078166519878347e-11, 28, 32),
    ("mgh-8", 3, 0, 0.008214877313679068, 23, 24),
    ("mgh-9", 3, 0, 1.1767214719693117e-08, 2, 4),
    ("mgh-12", 3, 0, 7.759693863398258e-13, 30, 38),
    ("mgh-13", 4, 0, 2.3904035735079482e-08, 27, 30),
    ("mgh-14", 4, 0, 7.876954987901346, 17, 20),
    ("mgh-16", 4, 0, 85822.2016296517, 18, 19),
    ("mgh-18", 6, 0, 0.005655649930279139, 37, 42),
    ("mgh-20", 6, 0, 0.0022876700555061183, 51, 55),
    ("mgh-20", 9, 0, 3.839121640634841e-05, 59, 66),
    ("mgh-23", 4, 0, 2.4241662319424135e-05, 14, 15),
    ("mgh-23", 10, 0, 7.446644216739099e-05, 19, 20),
    ("mgh-24", 4, 0, 9.733558536471859e-06, 14, 18),
    ("mgh-25", 10, 0, 7.664527442144333e-24, 19, 20),
    ("mgh-26", 10, 0, 2.7950921046988808e-05, 23, 29),
    ("mgh-30", 10, 0, 1.3103366141648347e-10, 16, 18),
    ("mgh-31", 10, 0, 2.124639335944841e-11, 11, 12),
    ("mgh-35", 8, 0, 0.0035168737261804216, 21, 27),
];

/// Without bounds, through the built-in problems (exact gradients of their own terms, on the
/// CPU): scipy's minimum (f to 1e-8 relative, or within 1e-10 where the minimum is 0 and each
/// stops at its own rounding), status, and scipy's iteration and evaluation counts (equal on
/// all 23 although scipy's gradient is a complex-step one, whose last bits differ). Brown's
/// badly scaled function (mgh-4) is the case that once failed: the step by
/// Sherman–Morrison–Woodbury on an inverted middle matrix stopped at f = 1.9·10¹¹ after 65
/// iterations.
#[test]
fn unbounded_mgh_minima_match_scipys() {
    let mut failures = Vec::new();
    for run in MGH_UNBOUNDED {
        let (name, n) = (run.0, run.1);
        let (mut objective, x0) = mgh(name, Some(n));
        let result = solve(&mut *objective, &x0, Method::LbfgsB, &Options::default()).unwrap();
        if !ends_as_scipy(run, &result, 0) {
            failures.push(format!("{name} n={n}"));
        }
    }
    assert!(failures.is_empty(), "differ from scipy: {failures:?}");
}

/// Prints `result` beside scipy's `run` and says whether it ends as scipy's does: the same
/// status, `f` to 1e-8 relative (or within 1e-10, where the minimum is 0 and each stops at its
/// own rounding), and `nit` within `nit_slack` of scipy's, `nfev` equal too where that is 0.
fn ends_as_scipy(run: &ScipyRun, result: &OptimizeResult, nit_slack: usize) -> bool {
    let &(name, n, status, fun, nit, nfev) = run;
    println!(
        "{name} n={n}: status {} f {:e} nit {} nfev {}; scipy: status {status} f {fun:e} nit {nit} nfev {nfev}",
        result.status.code(),
        result.fun,
        result.nit,
        result.nfev
    );
    let same_f = (result.fun - fun).abs() <= 1e-8 * fun.abs() + 1e-10;
    let same_counts =
        result.nit.abs_diff(nit) <= nit_slack && (nit_slack > 0 || result.nfev == nfev);
    same_f && same_counts && result.status.code() == status
}

/// scipy's L-BFGS-B on the MGH runs in a box around both `x0` and the unbounded answer `x*`
/// that binds neither: `(name, n, status, f, nit, nfev)`, from
/// `python tests/scipy/mgh_lbfgsb.py --loose` (scipy 1.17.1).
const MGH_LOOSE: &[ScipyRun] = &[
    ("mgh-1", 2, 0, 6.258785499192093e-17, 36, 50),
    ("mgh-2", 2, 0, 48.98425367924125, 14, 16),
    ("mgh-3", 2, 0, 0.13518085584712336, 3, 5),
    ("mgh-4", 2, 0, 3.2282595397358315e-17, 12, 16),
    ("mgh-5", 2, 0, 8.007452815026029e-14, 15, 19),
    ("mgh-7", 3, 0, 7.06324762704793e-14, 21, 25),
    ("mgh-8", 3, 0, 0.008214877306599219, 21, 25),
    ("mgh-9", 3, 0, 1.1456320779307213e-08, 2, 6),
    ("mgh-12", 3, 0, 1.7526161682897504e-14, 23, 26),
    ("mgh-13", 4, 0, 1.1999899647173229e-09, 32, 35),
    ("mgh-14", 4, 0, 1.2955244855908596e-11, 26, 29),
    ("mgh-16", 4, 0, 85822.20162635864, 22, 25),
    ("mgh-18", 6, 0, 0.005655649926026068, 40, 48),
    ("mgh-20", 6, 0, 0.0022876700556669657, 47, 52),
    ("mgh-20", 9, 0, 3.881198157293556e-05, 61, 69),
    ("mgh-23", 4, 0, 6.014218663470983e-05, 6, 11),
    ("mgh-23", 10, 0, 0.0001316123625991036, 9, 13),
    ("mgh-24", 4, 0, 1.3408552037954948e-05, 10, 16),
    ("mgh-25", 10, 0, 1.8719720039391758e-14, 23, 26),
    ("mgh-26", 10, 0, 2.79506543850711e-05, 25, 28),
    ("mgh-30", 10, 0, 0.8789736217415112, 42, 59),
    ("mgh-31", 10, 0, 2.6802199249240695, 42, 51),
    ("mgh-35", 8, 0, 0.0035168737371834673, 21, 29),
];

/// In those boxes the bounded step (Cauchy point, subspace step) runs at every iteration where
/// without bounds it is skipped, and takes other paths, to other minima on some runs (mgh-30,
/// mgh-31): each run ends with scipy's status and `f` (to 1e-8 relative, or within 1e-10 where
/// the minimum is 0, and where mgh-20 at n = 9 stops in its flat valley, 8·10⁻¹¹ from scipy's
/// f = 3.88·10⁻⁵ after the same 61 iterations), and iterations within one of scipy's (equal
/// but for mgh-4, 11 against 12). The box is scipy's, from this project's own unbounded
/// answer (the same as scipy's to the last digits, `unbounded_mgh_minima_match_scipys`).
#[test]
fn loose_boxes_keep_scipys_minima() {
    let mut failures = Vec::new();
    for run in MGH_LOOSE {
        let (name, n) = (run.0, run.1);
        let (mut objective, x0) = mgh(name, Some(n));
        let free = solve(&mut *objective, &x0, Method::LbfgsB, &Options::default()).unwrap();
        let margin = |i: usize| x0[i].abs() + free.x[i].abs() + 1.0;
        let bounds = Bounds {
            lower: (0..n).map(|i| x0[i].min(free.x[i]) - margin(i)).collect(),
            upper: (0..n).map(|i| x0[i].max(free.x[i]) + margin(i)).collect(),
        };
        let options = Options {
            bounds: Some(bounds),
            ..Options::default()
        };
        let result = solve(&mut *objective, &x0, Method::LbfgsB, &options).unwrap();
        if !ends_as_scipy(run, &result, 1) {
            failures.push(format!("{name} n={n}"));
        }
    }
    assert!(failures.is_empty(), "differ from scipy: {failures:?}");
}

/// Brown's badly scaled function (mgh-4: minimum 0 at (10⁶, 2·10⁻⁶), from (1, 1)) within boxes
/// that do not bind at the answer, so that the bounded step (Cauchy point, subspace step) runs
/// throughout: it reaches the minimum (in the first box the projected gradient ends it, `x₁`
/// within `gtol` of its lower bound 0). scipy's L-BFGS-B: in [0, 2·10⁶] × [0, 10] f = 5.28·10⁻⁹
/// after 7 iterations, in [−10⁷, 10⁷] × [−10³, 10³] f = 3.83·10⁻¹⁷ after 12. With the middle
/// matrix inverted by Gauss–Jordan and `I − M·WᵀZ·ZᵀW/θ` formed from it, these ended with
/// status 0 at f = 4.7·10⁻³ and f = 4.4·10⁸.
#[test]
fn a_badly_scaled_problem_in_a_loose_box_reaches_its_minimum() {
    for (lower, upper) in [([0.0, 0.0], [2e6, 10.0]), ([-1e7, -1e3], [1e7, 1e3])] {
        let (mut objective, x0) = mgh("mgh-4", None);
        let options = Options {
            bounds: Some(Bounds {
                lower: lower.to_vec(),
                upper: upper.to_vec(),
            }),
            ..Options::default()
        };
        let result = solve(&mut *objective, &x0, Method::LbfgsB, &options).unwrap();
        println!("{lower:?}..{upper:?}: {result:?}");
        assert!(result.success, "{}", result.message);
        assert!(result.fun <= 1e-8, "f = {:e}", result.fun);
        assert!(
            (result.x[0] / 1e6 - 1.0).abs() <= 1e-6,
            "x = {:?}",
            result.x
        );
        assert!(
            (result.x[1] / 2e-6 - 1.0).abs() <= 1e-3,
            "x = {:?}",
            result.x
        );
    }
}

/// Finite-difference gradients stay in the box, by scipy's rule: `(1 − x)^{5/2} − 2x` is NaN
/// past x = 1, where the answer sits (every partial is −2.5·(1 − x)^{3/2} − 2 < 0). At the
/// bound a forward step turns back and a central stencil becomes one-sided, so both solve to
/// the exact gradient's answer, partials −2 to their truncation error; once the solve is over
/// the objective steps as it was given again, past the bound (a NaN there).
#[test]
fn finite_differences_stay_in_the_box() {
    use cudamin::kernels::prelude::*;
    use cudamin::{Backend, Gradient, TermObjective, TermProblem};

    struct RootWall;
    impl Term for RootWall {
        const WINDOW: Window = Window::Separable;
        type Local<'a> = ();
        fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}
        fn eval<R: Real>(x: Vars<'_, R>, _local: &()) -> Num<R> {
            (1.0 - x[0]).powf(2.5) - 2.0 * x[0]
        }
    }
    cudamin::kernels::register_term!(RootWall, root_wall);

    let n = 1000;
    let bounds = Bounds {
        lower: vec![f64::NEG_INFINITY; n],
        upper: vec![1.0; n],
    };
    let options = Options {
        bounds: Some(bounds),
        ..Options::default()
    };
    // Forward: −2 − h^{3/2} (h = √ε); one-sided central: within 0.9·h^{3/2} (h = ∛ε).
    for (gradient, allowed) in [
        (Gradient::Exact, 0.0),
        (Gradient::Forward, 1e-11),
        (Gradient::Central, 2e-8),
    ] {
        let problem = TermProblem::<RootWall>::new(n).unwrap();
        let mut objective = TermObjective::new(Backend::Cpu.load(problem).unwrap(), gradient);
        let result = solve(&mut objective, &vec![0.0; n], Method::LbfgsB, &options).unwrap();
        assert!(result.success, "{gradient:?}: {}", result.message);
        assert!(result.x.iter().all(|&v| v == 1.0), "{gradient:?}");
        assert_eq!(result.fun, -2.0 * n as f64, "{gradient:?}");
        let worst = result
            .jac
            .iter()
            .map(|g| (g + 2.0).abs())
            .fold(0.0, f64::max);
        assert!(worst <= allowed, "{gradient:?}: partials {worst:e} from −2");
        if gradient == Gradient::Forward {
            let mut g = vec![0.0; n];
            objective.gradient(&result.x, &mut g).unwrap();
            assert!(g.iter().all(|v| v.is_nan()), "the box outlived the solve");
        }
    }
}

/// L-BFGS-B measures its gradient's error on the projected gradient, as its `gtol` test reads
/// it: a disagreement in a partial that both gradients push against an active bound is no
/// error (success, estimate 0), one in a free variable's partial is (scipy's status 2 when it
/// is above gtol). [`Claimed`] under `x₀ ≤ 1` ends at `(1, 2)`, `x₀` on its bound.
#[test]
fn the_gradient_error_is_that_of_the_projected_gradient() {
    let options = Options {
        bounds: Some(Bounds {
            lower: vec![f64::NEG_INFINITY; 2],
            upper: vec![1.0, f64::INFINITY],
        }),
        ..Options::default()
    };
    for (offset, estimate, status) in [
        ([-3.0, 0.0], 0.0, Status::ProjectedGradient),
        ([0.0, 1e-3], 1e-3, Status::PrecisionLoss),
        // The reference pulls x₀ off its bound: the projected partials are 0 and 1.
        ([3.0, 0.0], 1.0, Status::PrecisionLoss),
    ] {
        let mut objective = Claimed {
            offset: offset.to_vec(),
        };
        let result = solve(&mut objective, &[0.0, 0.0], Method::LbfgsB, &options).unwrap();
        assert!(
            result.x[0] == 1.0 && (result.x[1] - 2.0).abs() < 1e-8,
            "{:?}",
            result.x
        );
        let reported = result.jac_error.unwrap().estimate;
        assert!(
            (reported - estimate).abs() <= 1e-9,
            "offset {offset:?}: estimate {reported}"
        );
        assert_eq!(result.status, status, "offset {offset:?}");
        assert_eq!(result.success, status == Status::ProjectedGradient);
    }
}

/// `hess_inv_pairs` are the last pairs L-BFGS-B's last direction came from, with and without
/// a bound that binds (`x₀ ≤ 0.8`), whichever way the solve ends: converged, at `maxiter`, at
/// `maxfun`, or stopped by the observer.
#[test]
fn hess_inv_pairs_are_the_last_directions_pairs() {
    for bounds in [
        None,
        Some(bounds_of(&[(-2.0, 0.8), (f64::NEG_INFINITY, 2.0)])),
    ] {
        for memory in [3, 50] {
            let options = Options {
                memory,
                bounds: bounds.clone(),
                ..Options::default()
            };
            let ends = [
                (options.clone(), None, Status::ProjectedGradient),
                (
                    Options {
                        maxiter: Some(7),
                        ..options.clone()
                    },
                    None,
                    Status::IterationLimit,
                ),
                (
                    Options {
                        maxfun: Some(9),
                        ..options.clone()
                    },
                    None,
                    Status::EvaluationLimit,
                ),
                (options, Some(5), Status::Stopped),
            ];
            for (options, stop_after, status) in ends {
                assert_eq!(
                    check_hess_inv_pairs(Method::LbfgsB, options, stop_after),
                    status
                );
            }
        }
    }
}

/// `Σ (x_i − 1)²` whose gradient is NaN in its last entry once `x₀ > 0.5`: a model whose
/// derivative breaks partway.
struct BreakingGradient;

impl Objective for BreakingGradient {
    fn dim(&self) -> usize {
        3
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        Ok(x.iter().map(|v| (v - 1.0).powi(2)).sum())
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        for (g, v) in g.iter_mut().zip(x) {
            *g = 2.0 * (v - 1.0);
        }
        if x[0] > 0.5 {
            g[2] = f64::NAN;
        }
        Ok(())
    }
}

/// A NaN gradient entry ends a bounded solve in status 3, never in a success, wherever the
/// variable sits in its box: `‖g‖∞`, which keeps a NaN, is tested before the projected
/// gradient's norm. At `x = 1` every other entry is 0, so a test that dropped the NaN would
/// call the start converged.
#[test]
fn a_nan_gradient_entry_ends_a_bounded_solve_in_status_3() {
    for (lower, upper) in [(-5.0, 5.0), (1.0, 5.0), (-5.0, 1.0)] {
        let options = Options {
            bounds: Some(Bounds {
                lower: vec![lower; 3],
                upper: vec![upper; 3],
            }),
            ..Options::default()
        };
        let box_ = format!("box [{lower}, {upper}]");
        let at_start = solve(&mut BreakingGradient, &[1.0; 3], Method::LbfgsB, &options).unwrap();
        assert_eq!(at_start.status.code(), 3, "{box_}: {}", at_start.message);
        // Met along the way, in a trial point: never a success either.
        let x0 = [0.0f64; 3].map(|v| v.clamp(lower, upper));
        let later = solve(&mut BreakingGradient, &x0, Method::LbfgsB, &options).unwrap();
        assert_ne!(
            later.status.code(),
            0,
            "{box_} from {x0:?}: {}",
            later.message
        );
    }
}
