//! The trust-region-reflective method (bounded least squares) against scipy's
//! `least_squares(method='trf', bounds=…)`: the same minimum, status, active set and counts on
//! bounded MGH runs, with scipy's numbers written in (`python tests/scipy/mgh_trf.py` prints
//! them); and the inputs least squares refuses.

use cudamin::problems::Instance;
use cudamin::problems::fit::{FitData, find_model};
use cudamin::{Backend, Gradient, TermObjective, problems};
use cudamin::{Bounds, LmOptions, LmStatus, LsqMethod, SolveError, XScale};

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

/// One run of `python tests/scipy/trf_unbounded.py`: the problem or model, `n`, the `x_scale`
/// ("1", "jac", or "array": [`fit_scale`]), then scipy's status, nfev, njev and cost.
type UnboundedRun = (&'static str, usize, &'static str, i32, usize, usize, f64);

/// `python tests/scipy/trf_unbounded.py` (numpy 2.4.6, scipy 1.17.1): the MGH runs.
#[rustfmt::skip]
const MGH_TRF_UNBOUNDED: &[UnboundedRun] = &[
    ("mgh-1", 2, "1", 1, 25, 18, 0.0),
    ("mgh-1", 2, "jac", 1, 13, 11, 0.0),
    ("mgh-2", 2, "1", 2, 24, 19, 24.492126955944578),
    ("mgh-2", 2, "jac", 2, 19, 11, 24.49212684182613),
    ("mgh-3", 2, "1", 1, 43, 40, 1.4497845953523128e-27),
    ("mgh-3", 2, "jac", 1, 19, 18, 0.0),
    ("mgh-4", 2, "1", 1, 23, 23, 0.0),
    ("mgh-4", 2, "jac", 1, 23, 23, 0.0),
    ("mgh-5", 2, "1", 1, 7, 7, 2.2495201675537355e-23),
    ("mgh-5", 2, "jac", 1, 9, 8, 3.6332017861789333e-23),
    ("mgh-7", 3, "1", 1, 13, 11, 5.956931590447907e-29),
    ("mgh-7", 3, "jac", 1, 13, 11, 6.226481808115955e-25),
    ("mgh-8", 3, "1", 1, 6, 6, 0.004107438653290614),
    ("mgh-8", 3, "jac", 1, 6, 6, 0.0041074386532906175),
    ("mgh-9", 3, "1", 1, 3, 3, 5.6396638480938904e-09),
    ("mgh-9", 3, "jac", 1, 3, 3, 5.6396638480938904e-09),
    ("mgh-12", 3, "1", 1, 6, 6, 5.679307374697903e-20),
    ("mgh-12", 3, "jac", 1, 6, 6, 5.679307374697903e-20),
    ("mgh-13", 4, "1", 1, 13, 13, 2.85993451143435e-13),
    ("mgh-13", 4, "jac", 1, 13, 13, 2.8599345114343795e-13),
    ("mgh-14", 4, "1", 1, 76, 68, 3.03815957110962e-24),
    ("mgh-14", 4, "jac", 1, 67, 63, 4.125724600046249e-26),
    ("mgh-16", 4, "1", 2, 26, 17, 42911.10098583358),
    ("mgh-16", 4, "jac", 2, 284, 282, 42911.1053564915),
    ("mgh-18", 6, "1", 1, 65, 54, 1.8488927466117464e-31),
    ("mgh-18", 6, "jac", 1, 45, 34, 2.617723980411131e-30),
    ("mgh-20", 6, "1", 2, 8, 8, 0.0011438350267863003),
    ("mgh-20", 6, "jac", 2, 11, 11, 0.001143835026822568),
    ("mgh-20", 9, "1", 1, 6, 6, 6.998800690517886e-07),
    ("mgh-20", 9, "jac", 1, 10, 10, 6.998800690497012e-07),
    ("mgh-23", 4, "1", 1, 14, 10, 1.1249887523079264e-05),
    ("mgh-23", 4, "jac", 1, 20, 13, 1.1249887518303264e-05),
    ("mgh-23", 10, "1", 1, 39, 28, 3.543825733617634e-05),
    ("mgh-23", 10, "jac", 2, 72, 63, 3.5438259088997335e-05),
    ("mgh-24", 4, "1", 1, 33, 21, 4.688146504780983e-06),
    ("mgh-24", 4, "jac", 2, 35, 25, 4.688146505453463e-06),
    ("mgh-25", 10, "1", 1, 11, 11, 0.0),
    ("mgh-25", 10, "jac", 1, 11, 11, 0.0),
    ("mgh-26", 10, "1", 2, 27, 17, 1.3975280613200495e-05),
    ("mgh-26", 10, "jac", 2, 29, 19, 1.3975280613740731e-05),
    ("mgh-30", 10, "1", 1, 5, 5, 5.642614514323043e-19),
    ("mgh-30", 10, "jac", 1, 5, 5, 5.642616158202427e-19),
    ("mgh-31", 10, "1", 1, 7, 7, 3.6400075948918758e-31),
    ("mgh-31", 10, "jac", 1, 7, 7, 3.6400075948918758e-31),
    ("mgh-35", 8, "1", 2, 34, 20, 0.00175843686338704),
    ("mgh-35", 8, "jac", 2, 40, 23, 0.0017584368657052618),
];

/// The same script's fits of the four fit models.
#[rustfmt::skip]
const FITS_TRF_UNBOUNDED: &[UnboundedRun] = &[
    ("expsin", 5, "1", 2, 5, 5, 39.965205209973846),
    ("expsin", 5, "jac", 2, 5, 5, 39.965205209973846),
    ("expsin", 5, "array", 2, 5, 5, 39.965205209973846),
    ("exp-decay", 4, "1", 1, 28, 20, 0.029981482254651585),
    ("exp-decay", 4, "jac", 1, 17, 15, 0.029981482254651616),
    ("exp-decay", 4, "array", 2, 23, 19, 0.029981482254651724),
    ("gauss-peaks", 7, "1", 2, 23, 11, 1.365591986639209),
    ("gauss-peaks", 7, "jac", 2, 32, 24, 1.1280712138099314),
    ("gauss-peaks", 7, "array", 2, 77, 69, 1.0482512555872852),
    ("poly", 4, "1", 1, 3, 3, 0.02996919025300083),
    ("poly", 4, "jac", 1, 3, 3, 0.029969190253000863),
];

/// A cost below which a minimum counts as a zero residual.
const ZERO_RESIDUAL_COST: f64 = 1e-18;

/// The script's per-parameter `x_scale`: 1, 2, 0.5, 4, 0.25, …
fn fit_scale(n: usize) -> Vec<f64> {
    (0..n as i32)
        .map(|k| 2f64.powi(if k % 2 == 1 { k } else { -k }))
        .collect()
}

/// trf without bounds, asked for by name as scipy's users name it, with `x_scale`.
fn trf(scale: &str, n: usize) -> LmOptions {
    LmOptions {
        method: Some(LsqMethod::Trf),
        x_scale: match scale {
            "1" => None,
            "jac" => Some(XScale::Jac),
            _ => Some(XScale::Fixed(fit_scale(n))),
        },
        ..LmOptions::default()
    }
}

/// Whether `result` ends as scipy's run did: the same status, no bound active, the cost to
/// 1e-10 relative, and nfev and njev within 1 (the SVDs are not LAPACK's: the last bits of a
/// step may differ). Where the minimum is a zero residual, both costs below 1e-18: there the
/// last steps chase rounding error, which decides the last digits and the counts (mgh-18: 67
/// evaluations to 5.7e-20 here, 65 to 1.8e-31 in scipy).
fn ends_as_scipys(result: &cudamin::LeastSquaresResult, run: &UnboundedRun) -> bool {
    let &(name, n, scale, status, nfev, njev, cost) = run;
    println!(
        "{name} n={n} x_scale {scale}: status {} nfev {} njev {} cost {:e}; scipy: {status} {nfev} {njev} {cost:e}",
        result.status.code(),
        result.nfev,
        result.njev,
        result.cost
    );
    let near = |ours: usize, theirs: usize| ours.abs_diff(theirs) <= 1;
    let same_end = if cost < ZERO_RESIDUAL_COST {
        result.cost < ZERO_RESIDUAL_COST
    } else {
        (result.cost - cost).abs() <= 1e-10 * cost
            && near(result.nfev, nfev)
            && near(result.njev, njev)
    };
    same_end && result.status.code() == status && result.active_mask == Some(vec![0; n])
}

/// scipy's `least_squares(method='trf')` without bounds, with x_scale 1 and 'jac', on the 23
/// MGH least-squares runs: the same status, cost and counts ([`ends_as_scipys`]).
#[test]
fn unbounded_mgh_runs_match_scipys_trf() {
    assert_each_ends_as_scipys(MGH_TRF_UNBOUNDED, |name, n| {
        (problems::find(name).unwrap())
            .instantiate(&Backend::Cpu, Some(n), None)
            .unwrap()
    });
}

/// Solves each of `runs`, `load`ed by name and size, by trf with its scaling; fails naming
/// every run that does not end as scipy's.
fn assert_each_ends_as_scipys(runs: &[UnboundedRun], load: impl Fn(&str, usize) -> Instance) {
    let mut failures = Vec::new();
    for run @ &(name, n, scale, ..) in runs {
        let instance = load(name, n);
        let residuals = instance.evaluator.into_least_squares().unwrap();
        let mut objective = TermObjective::new(residuals, Gradient::Exact);
        let options = trf(scale, n);
        let result = cudamin::least_squares(&mut objective, &instance.x0, &options).unwrap();
        if !ends_as_scipys(&result, run) {
            failures.push(format!("{name} n={n} x_scale {scale}"));
        }
    }
    assert!(failures.is_empty(), "differ from scipy: {failures:?}");
}

/// The data of each fit in `FITS_TRF_UNBOUNDED` and its start (the script's `fits`): 300
/// points `x = 10·i/299` with the noise `0.02·sin(37x + 0.3i)`, or the robust fits' data.
fn fit_case(model: &str) -> (FitData, Vec<f64>) {
    let (p0, y): (Vec<f64>, fn(f64) -> f64) = match model {
        "exp-decay" => (vec![1.0, 1.0, 1.0, 0.1], |x| {
            2.0 * (-0.3 * x).exp() + 0.03 * x
        }),
        "gauss-peaks" => (vec![0.0, 1.0, 3.5, 1.0, 0.5, 8.0, 1.0], |x| {
            let bump = |a: f64, mu: f64, s: f64| a * (-(x - mu).powi(2) / (2.0 * s * s)).exp();
            0.1 + bump(1.0, 4.0, 0.5) + bump(0.3, 6.5, 0.8) - bump(0.05, 8.5, 0.3)
        }),
        "poly" => (vec![1.0; 4], |x| {
            1.0 - 0.5 * x + 0.1 * x * x - 0.005 * x * x * x
        }),
        _ => return (outlier_data(), vec![1.8, 0.6, 0.4, -0.2, 0.1]),
    };
    let x: Vec<f64> = (0..300).map(|i| 10.0 * i as f64 / 299.0).collect();
    let y = (x.iter().enumerate())
        .map(|(i, &x)| y(x) + 0.02 * (37.0 * x + 0.3 * i as f64).sin())
        .collect();
    (FitData { x, y, sigma: None }, p0)
}

/// tests/scipy/robust_fits.py's data: expsin with 5 % gross outliers.
fn outlier_data() -> FitData {
    let t: Vec<f64> = (0..400).map(|i| 8.0 * i as f64 / 399.0).collect();
    let y = (t.iter().enumerate())
        .map(|(i, &t)| {
            let model = 2.0 * (-0.7 * t).exp() + 0.5 * (2.0 * t).sin() - 0.3 * (3.0 * t).sin()
                + 0.2 * (4.0 * t).sin();
            let outlier = match (i % 20 == 7, (i / 20) % 2 == 0) {
                (false, _) => 0.0,
                (true, true) => 2.0,
                (true, false) => -2.0,
            };
            model + 0.02 * (37.0 * t + 0.3 * i as f64).sin() + outlier
        })
        .collect();
    FitData {
        x: t,
        y,
        sigma: None,
    }
}

/// The four fit models without bounds, with x_scale 1, 'jac' and one scale per parameter,
/// against scipy's trf ([`ends_as_scipys`]).
#[test]
fn unbounded_fits_match_scipys_trf() {
    assert_each_ends_as_scipys(FITS_TRF_UNBOUNDED, |model, n| {
        let (data, p0) = fit_case(model);
        (find_model(model).unwrap())
            .instantiate(&Backend::Cpu, Some(n), &data, Some(p0))
            .unwrap()
    });
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

/// scipy's refusals of a method that cannot take the problem, and of a bad `x_scale`, as named
/// errors before any evaluation.
#[test]
fn a_method_or_scale_that_cannot_run_is_refused() {
    let (mut objective, x0) = helical_valley();
    let lm = |options: LmOptions| LmOptions {
        method: Some(LsqMethod::Lm),
        ..options
    };
    let cases = [
        (
            lm(bounded([-10.0; 3], [10.0; 3])),
            "only works without bounds",
        ),
        (
            lm(LmOptions {
                loss: cudamin::Loss::Huber,
                ..LmOptions::default()
            }),
            "linear loss",
        ),
        (
            lm(LmOptions {
                x_scale: Some(XScale::Fixed(vec![1.0; 3])),
                ..LmOptions::default()
            }),
            "a fixed scale needs trf",
        ),
        (trf_scaled(vec![1.0; 2]), "one value per variable"),
        (trf_scaled(vec![1.0, 0.0, 1.0]), "positive and finite"),
        (trf_scaled(vec![1.0, f64::NAN, 1.0]), "positive and finite"),
    ];
    for (options, expected) in cases {
        let error = cudamin::least_squares(&mut objective, &x0, &options).unwrap_err();
        assert!(
            matches!(error, SolveError::InvalidOption { .. })
                && error.to_string().contains(expected),
            "{error}"
        );
    }
}

fn trf_scaled(scale: Vec<f64>) -> LmOptions {
    LmOptions {
        method: Some(LsqMethod::Trf),
        x_scale: Some(XScale::Fixed(scale)),
        ..LmOptions::default()
    }
}
