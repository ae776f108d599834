//! Fits: data files in, Levenberg–Marquardt, and what `curve_fit` reports, against scipy's own
//! numbers on the same file and against the parameters that generated noiseless data; and the
//! one-line errors for bad files.

mod common;

use common::cli::{cudamin, f64_of, json, json_in, one_line_error};
use cudamin::data::read_columns;
use cudamin::problems::fit::{FitData, find_model};
use cudamin::{Backend, Gradient, Loss, TermObjective};
use cudamin::{Bounds, LmOptions};
use ndarray_npy::{NpzWriter, WriteNpyExt};
use std::io::Write;
use std::path::{Path, PathBuf};

const EXPSIN_CSV: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/expsin.csv");

/// `scipy.optimize.curve_fit(expsin, x, y, p0=ones(5), ...)` on tests/data/expsin.csv, as
/// printed by `python tests/data/fit_expsin.py` (scipy 1.17.1, numpy 2.4.6):
/// `(popt, sqrt(diag(pcov)))` unweighted, with `sigma`, and with `absolute_sigma=True`.
const SCIPY_UNWEIGHTED: ([f64; 5], [f64; 5]) = (
    [
        1.966783309791,
        0.685790123637,
        0.499198509399,
        -0.331011959651,
        0.244440918171,
    ],
    [
        0.020418181821,
        0.009615289578,
        0.00609883491,
        0.005898875523,
        0.00594331133,
    ],
);
const SCIPY_SIGMA: ([f64; 5], [f64; 5]) = (
    [
        1.981796229241,
        0.69107742688,
        0.498808568175,
        -0.334118793795,
        0.23984402876,
    ],
    [
        0.018072136818,
        0.008728608053,
        0.005574462179,
        0.00541512206,
        0.005489496853,
    ],
);
const SCIPY_ABSOLUTE_SIGMA_PERR: [f64; 5] = [
    0.017075463628,
    0.008247227809,
    0.00526703218,
    0.005116479623,
    0.005186752667,
];

/// Fits `model` with `params` parameters to `data` from `p0` on the CPU: the result and its
/// covariance.
fn fit(
    model: &str,
    params: usize,
    data: &FitData,
    p0: Option<Vec<f64>>,
    jacobian: Gradient,
    absolute_sigma: bool,
) -> (cudamin::LeastSquaresResult, Vec<f64>) {
    let result = least_squares_fit(model, params, data, p0, jacobian);
    assert!(result.success, "{model}: {}", result.message);
    let covariance = result.covariance(absolute_sigma).expect("covariance");
    (result, covariance.matrix)
}

/// Levenberg–Marquardt with scipy's defaults on `model` with `params` parameters, on the CPU.
fn least_squares_fit(
    model: &str,
    params: usize,
    data: &FitData,
    p0: Option<Vec<f64>>,
    jacobian: Gradient,
) -> cudamin::LeastSquaresResult {
    least_squares_fit_with(model, params, data, p0, jacobian, &LmOptions::default())
}

/// [`least_squares_fit`] with `options`.
fn least_squares_fit_with(
    model: &str,
    params: usize,
    data: &FitData,
    p0: Option<Vec<f64>>,
    jacobian: Gradient,
    options: &LmOptions,
) -> cudamin::LeastSquaresResult {
    let instance = find_model(model)
        .unwrap()
        .instantiate(&Backend::Cpu, Some(params), data, p0)
        .unwrap();
    let residuals = instance.evaluator.into_least_squares().unwrap();
    let mut objective = TermObjective::new(residuals, jacobian);
    cudamin::least_squares(&mut objective, &instance.x0, options).unwrap()
}

fn expsin_data(weighted: bool) -> FitData {
    let names: &[&str] = if weighted {
        &["x", "y", "sigma"]
    } else {
        &["x", "y"]
    };
    let mut columns = read_columns(Path::new(EXPSIN_CSV), names)
        .unwrap()
        .into_iter();
    FitData {
        x: columns.next().unwrap(),
        y: columns.next().unwrap(),
        sigma: columns.next(),
    }
}

/// Parameters within 1e-4 standard errors of scipy's; standard errors within 1e-4 relative.
/// The second is looser because the two are not computed at the same point: `curve_fit`
/// (through `leastsq`) inverts MINPACK's last Jacobian, taken one step before the solution,
/// while cudamin evaluates `JᵀJ` at the solution itself (the standard errors differ by 1e-5
/// relative here).
fn assert_matches_scipy(label: &str, x: &[f64], covariance: &[f64], popt: &[f64], perr: &[f64]) {
    let n = x.len();
    for i in 0..n {
        let stderr = covariance[i * n + i].sqrt();
        assert!(
            (x[i] - popt[i]).abs() <= 1e-4 * perr[i],
            "{label}: θ{i} = {} vs scipy {} (stderr {})",
            x[i],
            popt[i],
            perr[i]
        );
        assert!(
            (stderr - perr[i]).abs() <= 1e-4 * perr[i],
            "{label}: stderr θ{i} = {stderr} vs scipy {}",
            perr[i]
        );
    }
}

#[test]
fn expsin_fit_matches_curve_fit() {
    for jacobian in [Gradient::Exact, Gradient::Central] {
        let (result, covariance) = fit("expsin", 5, &expsin_data(false), None, jacobian, false);
        let (popt, perr) = SCIPY_UNWEIGHTED;
        assert_matches_scipy("unweighted", &result.x, &covariance, &popt, &perr);
        let (result, covariance) = fit("expsin", 5, &expsin_data(true), None, jacobian, false);
        let (popt, perr) = SCIPY_SIGMA;
        assert_matches_scipy("sigma", &result.x, &covariance, &popt, &perr);
        let (result, covariance) = fit("expsin", 5, &expsin_data(true), None, jacobian, true);
        assert_matches_scipy(
            "absolute_sigma",
            &result.x,
            &covariance,
            &popt,
            &SCIPY_ABSOLUTE_SIGMA_PERR,
        );
    }
}

/// Noiseless data from known parameters: each model recovers them (to the fit's precision),
/// from a start curve_fit's default of ones would not always reach for the peaked models.
#[test]
fn every_model_recovers_the_parameters_of_noiseless_data() {
    let x: Vec<f64> = (0..300).map(|i| 0.02 * i as f64).collect();
    /// A model's name, the parameters that generate the data, a start, and `m(θ, x)`.
    type Case = (
        &'static str,
        Vec<f64>,
        Option<Vec<f64>>,
        fn(&[f64], f64) -> f64,
    );
    let cases: [Case; 4] = [
        ("poly", vec![1.0, -2.0, 0.5, 0.125], None, |t, x| {
            t[0] + t[1] * x + t[2] * x * x + t[3] * x * x * x
        }),
        (
            "exp-decay",
            vec![3.0, 2.0, 1.0, 0.25],
            Some(vec![2.0, 1.5, 1.5, 0.1]),
            |t, x| t[0] * (-t[1] * x).exp() + t[2] * (-t[3] * x).exp(),
        ),
        (
            "gauss-peaks",
            vec![0.5, 2.0, 1.5, 0.3, 1.0, 4.0, 0.5],
            Some(vec![0.4, 1.5, 1.4, 0.4, 1.2, 3.8, 0.6]),
            |t, x| {
                let peak = |a: f64, mu: f64, s: f64| a * (-0.5 * ((x - mu) / s).powi(2)).exp();
                t[0] + peak(t[1], t[2], t[3]) + peak(t[4], t[5], t[6])
            },
        ),
        ("expsin", vec![2.0, 0.7, 0.5, -0.25], None, |t, x| {
            t[0] * (-t[1] * x).exp() + t[2] * (2.0 * x).sin() + t[3] * (3.0 * x).sin()
        }),
    ];
    for (model, truth, p0, m) in cases {
        let data = FitData {
            y: x.iter().map(|&x| m(&truth, x)).collect(),
            x: x.clone(),
            sigma: None,
        };
        for jacobian in [Gradient::Exact, Gradient::Forward] {
            let (result, _) = fit(model, truth.len(), &data, p0.clone(), jacobian, true);
            for (i, (got, want)) in result.x.iter().zip(&truth).enumerate() {
                assert!(
                    (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                    "{model} ({}): θ{i} = {got}, generated with {want}",
                    jacobian.name()
                );
            }
        }
    }
}

/// The normal equations a fit's pass accumulates (`Σ r²`, `JᵀJ`, `Jᵀr` of the weighted
/// residuals `r = w·(y − m)`) are those of the Jacobian derived by hand, for models whose rows
/// take one evaluation on 4 lanes (poly, p = 4), one on 16 (gauss-peaks, p = 7) and two
/// (p = 19), over a number of points that leaves partial blocks of eight rows and of chunks.
#[test]
fn normal_equations_are_those_of_the_hand_derived_jacobian() {
    let points = 10_003;
    let x: Vec<f64> = (0..points)
        .map(|i| -1.0 + 6.0 * i as f64 / points as f64)
        .collect();
    let y: Vec<f64> = x.iter().map(|&x| (1.3 * x).sin() + 0.2 * x).collect();
    let sigma: Vec<f64> = (0..points).map(|i| 0.5 + (i % 7) as f64 * 0.1).collect();
    /// A model, its parameters, and `(m, ∂m/∂θ)` at one point.
    type Case = (&'static str, Vec<f64>, fn(&[f64], f64) -> (f64, Vec<f64>));
    let poly: Case = ("poly", vec![0.3, -0.2, 0.1, 0.05], |t, x| {
        let powers: Vec<f64> = (0..t.len()).map(|k| x.powi(k as i32)).collect();
        let m = t.iter().zip(&powers).map(|(a, b)| a * b).sum();
        (m, powers)
    });
    let peaks = |t: &[f64], x: f64| {
        let mut m = t[0];
        let mut d = vec![1.0];
        for peak in t[1..].chunks(3) {
            let (a, mu, s) = (peak[0], peak[1], peak[2]);
            let u = (x - mu) / s;
            let e = (-0.5 * u * u).exp();
            m += a * e;
            d.extend([e, a * e * u / s, a * e * u * u / s]);
        }
        (m, d)
    };
    let two_peaks: Case = (
        "gauss-peaks",
        vec![0.1, 1.0, 0.5, 0.7, 0.8, 2.5, 1.1],
        peaks,
    );
    let six_peaks: Case = (
        "gauss-peaks",
        (0..19)
            .map(|i| [0.1, 0.9, 0.4, 0.6][i % 4] + 0.3 * (i / 4) as f64)
            .collect(),
        peaks,
    );
    for (model, theta, m) in [poly, two_peaks, six_peaks] {
        let p = theta.len();
        let data = FitData {
            x: x.clone(),
            y: y.clone(),
            sigma: Some(sigma.clone()),
        };
        let mut instance = find_model(model)
            .unwrap()
            .instantiate(&Backend::Cpu, Some(p), &data, None)
            .unwrap();
        let (mut f, mut jtj, mut jtr) = (0.0, vec![0.0; p * p], vec![0.0; p]);
        for ((&x, &y), &s) in x.iter().zip(&y).zip(&sigma) {
            let (value, dm) = m(&theta, x);
            let r = (y - value) / s;
            let row: Vec<f64> = dm.iter().map(|d| -d / s).collect();
            f += r * r;
            for i in 0..p {
                jtr[i] += row[i] * r;
                for j in 0..p {
                    jtj[i * p + j] += row[i] * row[j];
                }
            }
        }
        for (jacobian, tolerance) in [(Gradient::Exact, 1e-12), (Gradient::Central, 1e-8)] {
            let (mut got_jtj, mut got_jtr) = (vec![0.0; p * p], vec![0.0; p]);
            let got_f = instance
                .evaluator
                .least_squares()
                .unwrap()
                .normal_equations(&theta, jacobian, &mut got_jtj, &mut got_jtr)
                .unwrap();
            let scale = |v: &[f64]| v.iter().fold(0.0, |m: f64, x| m.max(x.abs()));
            let off = |a: &[f64], b: &[f64]| {
                a.iter()
                    .zip(b)
                    .fold(0.0, |m: f64, (a, b)| m.max((a - b).abs()))
                    / scale(b)
            };
            let what = format!("{model} p = {p} ({})", jacobian.name());
            assert!((got_f - f).abs() <= 1e-13 * f, "{what}: Σr² {got_f} vs {f}");
            assert!(
                off(&got_jtj, &jtj) <= tolerance,
                "{what}: JᵀJ off by {:e}",
                off(&got_jtj, &jtj)
            );
            assert!(
                off(&got_jtr, &jtr) <= tolerance,
                "{what}: Jᵀr off by {:e}",
                off(&got_jtr, &jtr)
            );
        }
    }
}

/// Polynomials in `x ∈ [0, 10]` make a Jacobian whose columns, scaled, grow nearly dependent
/// with the degree. Against scipy's `least_squares(method='lm')` (MINPACK, QR of `J`) on the
/// same 5000 points from ones, with the analytic Jacobian (scipy 1.17.1, `x =
/// 10·arange(5000)/4999`): Σr² 24.909922279392696 (8 parameters), 24.188172373922487 (10),
/// 23.3894, 23.2938 and 22.6668 (11, 12, 16). The normal equations stopped at 23.48, 23.53
/// and 9.8e11 for the last three, status −3; on `J`'s triangle every one is a success at
/// scipy's minimum, with a covariance.
#[test]
fn polynomial_fits_reach_minpacks_minimum() {
    let data = polynomial_data();
    for (params, scipy, digits) in [
        (8, 24.909922279392696, 1e-9),
        (10, 24.188172373922487, 1e-9),
        (11, 23.3894, 1e-5),
        (12, 23.2938, 1e-5),
        (16, 22.6668, 1e-5),
    ] {
        let result = least_squares_fit("poly", params, &data, None, Gradient::Exact);
        let rss = 2.0 * result.cost;
        assert!(
            result.success
                && (rss - scipy).abs() <= digits * scipy
                && result.covariance(false).is_some(),
            "poly p = {params}: status {} ({}), Σr² {rss}, scipy's {scipy}",
            result.status.code(),
            result.message
        );
    }
}

/// `sin x + 0.1·cos 7x` at `x = 10·arange(5000)/4999`.
fn polynomial_data() -> FitData {
    let x: Vec<f64> = (0..5000).map(|i| 10.0 * i as f64 / 4999.0).collect();
    FitData {
        y: x.iter().map(|&x| x.sin() + 0.1 * (7.0 * x).cos()).collect(),
        x,
        sigma: None,
    }
}

/// A parameter held fixed: the cubic fit with θ₃ held at 0 is the quadratic fit (the reduced
/// model, solved on its own): the same parameters, steps and standard errors (dof m − 3), and
/// θ₃'s row and column of pcov zero. The CLI's `--fix 3=0` reports the same.
#[test]
fn a_fixed_parameter_gives_the_fit_of_the_others() {
    let data = polynomial_data();
    let reduced = least_squares_fit("poly", 3, &data, None, Gradient::Exact);
    let options = LmOptions {
        fixed: Some(vec![false, false, false, true]),
        ..LmOptions::default()
    };
    let start = Some(vec![1.0, 1.0, 1.0, 0.0]);
    let held = least_squares_fit_with("poly", 4, &data, start, Gradient::Exact, &options);
    assert!(reduced.success && held.success, "{}", held.message);
    assert_eq!(held.x[3], 0.0);
    for i in 0..3 {
        let scale = reduced.x[i].abs().max(1.0);
        assert!(
            (held.x[i] - reduced.x[i]).abs() <= 1e-10 * scale,
            "{:?}",
            held.x
        );
    }
    assert_eq!((held.nfev, held.njev), (reduced.nfev, reduced.njev));
    let (of_held, of_reduced) = (
        held.covariance(false).unwrap(),
        reduced.covariance(false).unwrap(),
    );
    assert_eq!(of_held.rank, 3);
    for a in 0..4 {
        for b in 0..4 {
            let h = of_held.matrix[a * 4 + b];
            if a == 3 || b == 3 {
                assert_eq!(h, 0.0);
            } else {
                let r = of_reduced.matrix[a * 3 + b];
                assert!(
                    (h - r).abs() <= 1e-8 * r.abs(),
                    "pcov[{a}][{b}]: {h} vs {r}"
                );
            }
        }
    }
    let mut csv = String::from("x,y\n");
    for (x, y) in data.x.iter().zip(&data.y) {
        csv.push_str(&format!("{x:e},{y:e}\n"));
    }
    let path = file("cubic.csv", csv.as_bytes());
    let path = path.to_str().unwrap();
    let cubic = json(&[
        "fit", path, "--model", "poly", "--params", "4", "--fix", "3=0", "--json",
    ]);
    let quadratic = json(&["fit", path, "--model", "poly", "--params", "3", "--json"]);
    assert_eq!(cubic["fixed"].as_array().map(Vec::len), Some(1));
    assert_eq!(cubic["fixed"][0].as_u64(), Some(3));
    assert_eq!(cubic["dof"], quadratic["dof"]);
    for i in 0..3 {
        let number = |v: &serde_json::Value, field: &str| v[field][i].as_f64().unwrap();
        let (c, q) = (number(&cubic, "x"), number(&quadratic, "x"));
        assert!(
            (c - q).abs() <= 1e-8 * q.abs().max(1.0),
            "x[{i}]: {c} vs {q}"
        );
        let (c, q) = (number(&cubic, "stderr"), number(&quadratic, "stderr"));
        assert!((c - q).abs() <= 1e-6 * q, "stderr[{i}]: {c} vs {q}");
    }
    assert_eq!(cubic["stderr"][3], 0.0);
    let bad = one_line_error(&[
        "fit", path, "--model", "poly", "--params", "3", "--fix", "5=1",
    ]);
    assert!(bad.contains("--fix 5=1: there are 3 variables"), "{bad}");
}

/// A model that names its parameters (exp-decay's a0, b0, a1, b1) is given them by name: `--fix
/// b1=0.2` holds the same parameter as `--fix 3=0.2`, to the bit, and the report carries the
/// names (`--json`'s `names`, the text's rows and bounds). A model without names takes the
/// labels its report shows (`θ1`). A name the model lacks, a name where the variables have
/// none, a value held outside the model's natural bounds (the error says whose bounds they
/// are), or a parameter count the data cannot determine (before anything is sized by it) is a
/// one-line error.
#[test]
fn a_parameter_is_fixed_by_its_name() {
    let mut csv = String::from("x,y\n");
    for i in 0..200 {
        let x = 4.0 * i as f64 / 199.0;
        let y = 2.5 * (-1.3 * x).exp() + 0.5 * (-0.2 * x).exp() + 1e-3 * (37.0 * x).sin();
        csv.push_str(&format!("{x:e},{y:e}\n"));
    }
    let path = file("two-exponentials.csv", csv.as_bytes());
    let path = path.to_str().unwrap();
    let args = |fix| {
        let run = [
            "fit",
            path,
            "--model",
            "exp-decay",
            "--params",
            "4",
            "--p0",
            "1,1,1,0.1",
        ];
        [&run[..], &["--fix", fix]].concat()
    };
    let fit = |fix| json(&[&args(fix)[..], &["--json"]].concat());
    let (by_name, by_index) = (fit("b1=0.2"), fit("3=0.2"));
    assert_eq!(by_name["x"], by_index["x"]);
    assert_eq!(by_name["stderr"], by_index["stderr"]);
    assert_eq!(by_name["fixed"][0].as_u64(), Some(3));
    assert_eq!(by_name["x"][3].as_f64(), Some(0.2));
    let names: Vec<&str> = (by_name["names"].as_array().unwrap().iter())
        .map(|name| name.as_str().unwrap())
        .collect();
    assert_eq!(names, ["a0", "b0", "a1", "b1"]);
    let out = cudamin(&args("b1=0.2"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("natural ones: b0 ≥ 0, b1 ≥ 0"), "{text}");
    let held_row = (text.lines()).find(|line| line.trim_start().starts_with("b1 "));
    assert!(
        held_row.is_some_and(|row| row.ends_with(" 2.000000000000e-1 ± 0.000e0")),
        "{text}"
    );
    let poly = |fix: &str| {
        let args = [
            "fit", path, "--model", "poly", "--params", "3", "--fix", fix,
        ];
        json(&[&args[..], &["--json"]].concat())
    };
    assert_eq!(poly("θ1=0.5")["x"], poly("1=0.5")["x"]);
    // Each refused with its one-line reason: (model, --fix values, the reason).
    for (model, fixes, reason) in [
        (
            "exp-decay",
            &["mu0=1"][..],
            "no parameter is called `mu0`; they are a0, b0, a1, b1",
        ),
        ("poly", &["c=1"], "have no names: give a 0-based index"),
        ("poly", &["θ4=1"], "there are 4 variables, 0 to 3"),
        // Labels as reports print them: no sign, no leading zero.
        ("poly", &["θ01=1"], "have no names: give a 0-based index"),
        // A held value outside the model's natural bounds, which the user did not give.
        (
            "exp-decay",
            &["b0=-0.1"],
            "x0[1] = -0.1 lies outside its bounds [0, inf], where fixed holds it (the model's \
             natural bounds; --no-natural-bounds fits without them)",
        ),
        (
            "exp-decay",
            &["b1=0.2", "3=0.2"],
            "variable 3 is given twice",
        ),
    ] {
        let mut args = vec!["fit", path, "--model", model, "--params", "4"];
        for fix in fixes {
            args.extend(["--fix", fix]);
        }
        let refused = one_line_error(&args);
        assert!(refused.contains(reason), "{refused}");
    }
    for params in ["18446744073709551615", "1000000000000"] {
        let args = ["fit", path, "--model", "poly", "--params", params];
        for method in ["lm", "bfgs"] {
            let refused = one_line_error(&[&args[..], &["--method", method]].concat());
            assert!(
                refused.contains("data points cannot determine"),
                "{refused}"
            );
        }
    }
}

/// Three everyday ill-conditioned fits against `curve_fit(method='lm')` with the analytic
/// Jacobian, as printed by `python tests/scipy/ill_conditioned_fits.py` (scipy 1.17.1, numpy
/// 2.4.6): an 11-parameter polynomial (above), two exponentials with close rates (1 and 1.25)
/// and two overlapping Gaussians (centres 4 and 5, widths 0.8), each from the script's start.
/// Both solvers run with `ftol = xtol = 1e-15`, so that both stop at the minimum itself rather
/// than somewhere within a tolerance of it; then the parameters and the standard errors
/// (`√diag(pcov)`, scaled by the reduced χ²) agree to 1e-6 relative.
#[test]
fn ill_conditioned_fits_match_curve_fit() {
    let exponentials = {
        let t: Vec<f64> = (0..2000).map(|i| 5.0 * i as f64 / 1999.0).collect();
        let y = t
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                (-t).exp() + 0.8 * (-1.25 * t).exp() + 2e-3 * (37.0 * t + 0.3 * i as f64).sin()
            })
            .collect();
        FitData {
            x: t,
            y,
            sigma: None,
        }
    };
    let peaks = {
        let t: Vec<f64> = (0..2000).map(|i| 10.0 * i as f64 / 1999.0).collect();
        let gauss = |t: f64, a: f64, mu: f64, s: f64| a * (-(t - mu).powi(2) / (2.0 * s * s)).exp();
        let y = t
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                0.1 + gauss(t, 1.0, 4.0, 0.8)
                    + gauss(t, 0.7, 5.0, 0.8)
                    + 1e-2 * (37.0 * t + 0.3 * i as f64).sin()
            })
            .collect();
        FitData {
            x: t,
            y,
            sigma: None,
        }
    };
    // (model, data, p0, scipy's popt, scipy's perr)
    type Case<'a> = (&'a str, FitData, Vec<f64>, &'a [f64], &'a [f64]);
    let cases: [Case; 3] = [
        (
            "poly",
            polynomial_data(),
            vec![1.0; 11],
            &[
                0.12504963309669814,
                0.0114289432873273,
                2.183677140854658,
                -2.383014062124073,
                1.247613656349299,
                -0.41820520670581574,
                0.09250592227540934,
                -0.0130668409625116,
                0.0011216192702376178,
                -5.3170685731988093e-05,
                1.0679660588586664e-06,
            ],
            &[
                0.010587911991472692,
                0.07345876484038881,
                0.1666143508702394,
                0.175343778780854,
                0.10151901369270176,
                0.035269797158585414,
                0.007661366719379363,
                0.0010481090569864405,
                8.768865690748653e-05,
                4.096140340763568e-06,
                8.18202987107674e-08,
            ],
        ),
        (
            "exp-decay",
            exponentials,
            vec![1.2, 0.9, 0.6, 1.5],
            &[
                1.06202214595023,
                1.006321432279535,
                0.7381005820726675,
                1.2625168973687055,
            ],
            &[
                0.1669530882116074,
                0.017176160747832736,
                0.16684231779275047,
                0.03434746194614394,
            ],
        ),
        (
            "gauss-peaks",
            peaks,
            vec![0.0, 0.8, 3.7, 1.0, 0.8, 5.3, 0.7],
            &[
                0.10003854950579277,
                1.000063719000869,
                3.9999458236196017,
                0.7999108013011562,
                0.700054744730419,
                5.000084808975371,
                0.7998708037420879,
            ],
            &[
                0.00023658766195918022,
                0.04279313301668465,
                0.02478056478358333,
                0.006021533754256128,
                0.042797896971652594,
                0.03539162816827792,
                0.008599083394687367,
            ],
        ),
    ];
    let tight = LmOptions {
        ftol: 1e-15,
        xtol: 1e-15,
        ..LmOptions::default()
    };
    for (model, data, p0, popt, perr) in cases {
        let result =
            least_squares_fit_with(model, p0.len(), &data, Some(p0), Gradient::Exact, &tight);
        assert!(result.success, "{model}: {}", result.message);
        let errors = result
            .covariance(false)
            .expect("covariance")
            .standard_errors();
        for j in 0..popt.len() {
            let (x, e) = (result.x[j], errors[j]);
            assert!(
                (x - popt[j]).abs() <= 1e-6 * popt[j].abs()
                    && (e - perr[j]).abs() <= 1e-6 * perr[j],
                "{model} θ{j}: {x} ± {e}, scipy's {} ± {}",
                popt[j],
                perr[j]
            );
        }
    }
}

/// A linear model with two equal columns: `poly` with 3 parameters on points at `t = 0` and
/// `t = 1` only, where `t² = t`. The minimum is not unique (only `θ₁ + θ₂` is fixed by the
/// data): MINPACK reports success at it, and so must this; the covariance has rank 2, names
/// `θ₁` and `θ₂` as not identifiable, and for `θ₀`, which the data do fix (the mean at
/// `t = 0`), gives the variance of that mean, `s²/50` with `s² = Σr²/(m − 3)`.
#[test]
fn a_fit_whose_minimum_is_not_unique_succeeds_and_names_what_is_not_identified() {
    let t: Vec<f64> = (0..100).map(|i| (i % 2) as f64).collect();
    let y: Vec<f64> = (0..100)
        .map(|i| 1.0 + 2.0 * t[i] + 0.1 * (i as f64).sin())
        .collect();
    let mean = |parity: usize| (parity..100).step_by(2).map(|i| y[i]).sum::<f64>() / 50.0;
    let (mean0, mean1) = (mean(0), mean(1));
    let rss: f64 = (0..100)
        .map(|i| (y[i] - if i % 2 == 0 { mean0 } else { mean1 }).powi(2))
        .sum();
    let data = FitData {
        x: t,
        y,
        sigma: None,
    };
    let result = least_squares_fit("poly", 3, &data, None, Gradient::Exact);
    assert!(
        result.success,
        "status {}: {}",
        result.status.code(),
        result.message
    );
    assert!(
        (2.0 * result.cost - rss).abs() <= 1e-12 * rss,
        "Σr² {} vs {rss}",
        2.0 * result.cost
    );
    let x = &result.x;
    assert!((x[0] - mean0).abs() <= 1e-10 && (x[1] + x[2] - (mean1 - mean0)).abs() <= 1e-10);
    let pcov = result
        .covariance(false)
        .expect("the pseudo-inverse's covariance");
    assert_eq!((pcov.rank, pcov.not_identifiable.clone()), (2, vec![1, 2]));
    let variance_of_mean0 = rss / 97.0 / 50.0;
    assert!(
        (pcov.matrix[0] - variance_of_mean0).abs() <= 1e-10 * variance_of_mean0,
        "pcov₀₀ {} vs {variance_of_mean0}",
        pcov.matrix[0]
    );
}

/// The robust fits' data: expsin with θ = (2, 0.7, 0.5, −0.3, 0.2) at 400 points, a small
/// noise, and every 20th point moved by ±2 (tests/scipy/robust_fits.py).
fn outlier_data() -> FitData {
    let t: Vec<f64> = (0..400).map(|i| 8.0 * i as f64 / 399.0).collect();
    let y = t
        .iter()
        .enumerate()
        .map(|(i, &t)| {
            let model = 2.0 * (-0.7 * t).exp() + 0.5 * (2.0 * t).sin() - 0.3 * (3.0 * t).sin()
                + 0.2 * (4.0 * t).sin();
            let noise = 0.02 * (37.0 * t + 0.3 * i as f64).sin();
            let outlier = match (i % 20 == 7, (i / 20) % 2 == 0) {
                (false, _) => 0.0,
                (true, true) => 2.0,
                (true, false) => -2.0,
            };
            model + noise + outlier
        })
        .collect();
    FitData {
        x: t,
        y,
        sigma: None,
    }
}

/// Robust losses within bounds, against scipy's `least_squares(method='trf', loss=…,
/// f_scale=0.1, bounds=…)` with its default tolerances (`python tests/scipy/robust_fits.py`,
/// its second part): `θ1 ≤ 0.69` and `θ4 ≤ 0.19` cut off the robust optimum, so both end on
/// their bounds. The same status, nfev, njev and active set; the cost to 1e-10 and the free
/// parameters to 1e-6.
#[test]
fn robust_bounded_fits_match_scipys_trf() {
    let data = outlier_data();
    type Case = (&'static str, [f64; 5], f64, i32, usize, usize, [i32; 5]);
    #[rustfmt::skip]
    let scipy: [Case; 5] = [
        ("linear", [2.017350949250309, 0.6899999999999998, 0.49721712352941777, -0.29537156814268045, 0.189999999991011], 40.00902505385285, 1, 10, 10, [0, 1, 0, 0, 1]),
        ("soft_l1", [1.989726533444666, 0.6899999999999998, 0.5001792891388992, -0.2978258789068637, 0.18999999999999997], 3.8543702859166484, 1, 9, 9, [0, 1, 0, 0, 1]),
        ("huber", [1.9896418955714033, 0.6899999999999998, 0.5002020005864839, -0.2978487515799978, 0.18999999999999997], 3.9500969004523205, 1, 9, 9, [0, 1, 0, 0, 1]),
        ("cauchy", [1.9882437427607091, 0.6899999999999998, 0.5003247489423035, -0.2979494336750766, 0.18999999999999997], 0.6494959704720635, 1, 9, 9, [0, 1, 0, 0, 1]),
        ("arctan", [1.9881311368459336, 0.6899999999998971, 0.5003582474664329, -0.29798205089157165, 0.18999999999999467], 0.20836066649244184, 1, 7, 7, [0, 1, 0, 0, 1]),
    ];
    let inf = f64::INFINITY;
    for (name, popt, cost, status, nfev, njev, active) in scipy {
        let options = LmOptions {
            loss: Loss::from_name(name).unwrap(),
            f_scale: 0.1,
            bounds: Some(Bounds {
                lower: vec![-inf; 5],
                upper: vec![inf, 0.69, inf, inf, 0.19],
            }),
            ..LmOptions::default()
        };
        let r = robust_fit(&data, &options);
        assert_eq!(
            (r.status.code(), r.nfev, r.njev, r.active_mask.as_deref()),
            (status, nfev, njev, Some(&active[..])),
            "{name}"
        );
        assert!(
            (r.cost - cost).abs() <= 1e-10 * cost,
            "{name}: cost {} vs scipy's {cost}",
            r.cost
        );
        for (j, (&x, &theirs)) in r.x.iter().zip(&popt).enumerate() {
            let tolerance = if active[j] == 0 {
                1e-6 * theirs.abs()
            } else {
                1e-9
            };
            assert!(
                (x - theirs).abs() <= tolerance,
                "{name} θ{j}: {x} vs scipy's {theirs}"
            );
        }
    }
}

/// Robust losses without bounds, every option at its default, against scipy's
/// `least_squares(method='trf', loss=…, f_scale=0.1)` (`python tests/scipy/robust_fits.py`,
/// its third part): a robust loss runs cudamin's trf too, so the same status, nfev and njev,
/// the cost to 1e-10 and the parameters to 1e-6. (Before, Levenberg–Marquardt took the rescaled
/// rows and stopped early at default tolerances: on Rosenbrock under huber, f_scale 0.5, at
/// cost 0.93 with status 4, where the minimum is 0.)
#[test]
fn robust_fits_at_default_tolerances_match_scipys_trf() {
    let data = outlier_data();
    type Case = (&'static str, [f64; 5], f64, i32, usize, usize);
    #[rustfmt::skip]
    let scipy: [Case; 4] = [
        ("soft_l1", [2.00404429063565, 0.7014330084615434, 0.49969673390121255, -0.2998692230839124, 0.19941043741974154], 3.840896522978116, 2, 7, 6),
        ("huber", [2.0039446776789647, 0.7013946546570698, 0.49970451725433435, -0.2998730700701673, 0.19942482964607638], 3.9361800390615773, 2, 8, 6),
        ("cauchy", [2.0005232299916647, 0.7001908633200324, 0.4999843671342887, -0.29994838399588164, 0.1998690254296101], 0.6366504209344999, 2, 9, 7),
        ("arctan", [2.000331673224108, 0.7001170697380854, 0.49999889021452054, -0.29995490478587683, 0.19989652088372512], 0.1947127311812569, 1, 10, 8),
    ];
    for (name, popt, cost, status, nfev, njev) in scipy {
        let options = LmOptions {
            loss: Loss::from_name(name).unwrap(),
            f_scale: 0.1,
            ..LmOptions::default()
        };
        let r = robust_fit(&data, &options);
        assert_eq!(
            (r.status.code(), r.nfev, r.njev),
            (status, nfev, njev),
            "{name}"
        );
        assert_scipys_minimum(name, &r, &popt, cost);
    }
}

/// The robust fits' expsin from their start.
fn robust_fit(data: &FitData, options: &LmOptions) -> cudamin::LeastSquaresResult {
    let p0 = vec![1.8, 0.6, 0.4, -0.2, 0.1];
    least_squares_fit_with("expsin", 5, data, Some(p0), Gradient::Exact, options)
}

/// `r` ends at scipy's minimum: the cost to 1e-10 and the parameters to 1e-6, relative.
fn assert_scipys_minimum(name: &str, r: &cudamin::LeastSquaresResult, popt: &[f64], cost: f64) {
    assert!(
        (r.cost - cost).abs() <= 1e-10 * cost,
        "{name}: cost {} vs scipy's {cost}",
        r.cost
    );
    for (j, (&x, &theirs)) in r.x.iter().zip(popt).enumerate() {
        assert!(
            (x - theirs).abs() <= 1e-6 * theirs.abs(),
            "{name} θ{j}: {x} vs scipy's {theirs}"
        );
    }
}

/// Robust losses on data with 5 % gross outliers (every 20th point moved by ±2), against
/// scipy's `least_squares(fun, p0, jac, method='trf', loss=…, f_scale=0.1)` (`trf`, the only
/// method where scipy takes a loss), as printed by `python tests/scipy/robust_fits.py` (scipy
/// 1.17.1). Both run with ftol = xtol = gtol = 1e-15, so that both stop at the minimum of the
/// same robust cost; the parameters agree to 1e-6 relative, the costs to 1e-10.
#[test]
fn robust_fits_match_scipys() {
    let data = outlier_data();
    let scipy: [(&str, [f64; 5], f64); 5] = [
        (
            "linear",
            [
                2.071084404171528,
                0.7252578020288163,
                0.49427358696865004,
                -0.298555023926124,
                0.19089692001327918,
            ],
            39.96520520997169,
        ),
        (
            "soft_l1",
            [
                2.004044295454696,
                0.7014330116196136,
                0.49969673362721134,
                -0.2998692233275743,
                0.19941043718204304,
            ],
            3.840896522978115,
        ),
        (
            "huber",
            [
                2.003944677679032,
                0.7013946546698743,
                0.4997045172543555,
                -0.2998730700701608,
                0.1994248296460788,
            ],
            3.9361800390615764,
        ),
        (
            "cauchy",
            [
                2.0005232299916647,
                0.7001908633200326,
                0.4999843671342887,
                -0.29994838399588164,
                0.1998690254296101,
            ],
            0.6366504209344999,
        ),
        (
            "arctan",
            [
                2.000331673224108,
                0.7001170697380854,
                0.49999889021452054,
                -0.29995490478587683,
                0.19989652088372512,
            ],
            0.1947127311812569,
        ),
    ];
    for (name, popt, cost) in scipy {
        let options = LmOptions {
            ftol: 1e-15,
            xtol: 1e-15,
            gtol: 1e-15,
            loss: Loss::from_name(name).unwrap(),
            f_scale: 0.1,
            ..LmOptions::default()
        };
        let result = robust_fit(&data, &options);
        assert!(result.success, "{name}: {}", result.message);
        assert_scipys_minimum(name, &result, &popt, cost);
    }
}

/// Data on which the unbounded fit goes unphysical, and `curve_fit(…, bounds=…)`'s answer on
/// them, as printed by `python tests/scipy/bounded_fits.py` (scipy 1.17.1, exact Jacobians;
/// the script says how the data are made and why each unbounded fit fails): per case the
/// model, its data `y(x, i)`, p0, the bounds, and scipy's popt, `√diag(pcov)` and active set.
struct BoundedCase {
    model: &'static str,
    y: fn(f64) -> f64,
    p0: &'static [f64],
    lower: &'static [f64],
    upper: &'static [f64],
    popt: &'static [f64],
    perr: &'static [f64],
    active: &'static [i32],
}

fn bump(x: f64, a: f64, mu: f64, s: f64) -> f64 {
    a * (-(x - mu).powi(2) / (2.0 * s * s)).exp()
}

const INF: f64 = f64::INFINITY;

const BOUNDED_CASES: [BoundedCase; 2] = [
    BoundedCase {
        model: "exp-decay",
        y: |x| 2.0 * (-0.3 * x).exp() + 0.03 * x,
        p0: &[1.0, 1.0, 1.0, 0.1],
        lower: &[0.0; 4],
        upper: &[INF; 4],
        popt: &[
            1.6907926953912185,
            0.36412329415475264,
            0.3313522131328237,
            1.597007881852867e-23,
        ],
        perr: &[
            0.026038966910114373,
            0.007363882031251493,
            0.028290804670821724,
            0.008098211131900613,
        ],
        active: &[0, 0, 0, -1],
    },
    BoundedCase {
        model: "gauss-peaks",
        y: |x| 0.1 + bump(x, 1.0, 4.0, 0.5) + bump(x, 0.3, 6.5, 0.8) - bump(x, 0.05, 8.5, 0.3),
        p0: &[0.0, 1.0, 3.5, 1.0, 0.5, 8.0, 1.0],
        lower: &[-INF, 0.0, 0.0, 0.05, 0.0, 0.0, 0.05],
        upper: &[INF, INF, 10.0, 5.0, INF, 10.0, 5.0],
        popt: &[
            0.09433742808660354,
            1.004175251787346,
            4.000977917763777,
            0.5049430619176557,
            0.310564467709637,
            6.490707023535154,
            0.7753456113363169,
        ],
        perr: &[
            0.001553811024126519,
            0.004345718632743713,
            0.002584755464975841,
            0.0027214698362098256,
            0.003660200727459929,
            0.0101551124539743,
            0.011593056984931807,
        ],
        active: &[0; 7],
    },
];

/// Bounded fits where the unbounded one goes unphysical (a growing exponential; a peak turned
/// into a dip): the same active set as scipy's, the free parameters and every standard error
/// to 1e-6 relative, and a parameter at its bound within 1e-12 of it. The covariance is
/// `curve_fit`'s: `J`'s at the solution, bounds or not.
#[test]
fn bounded_fits_match_curve_fit() {
    for case in &BOUNDED_CASES {
        let x: Vec<f64> = (0..300).map(|i| 10.0 * i as f64 / 299.0).collect();
        let y = (x.iter().enumerate())
            .map(|(i, &x)| (case.y)(x) + 0.02 * (37.0 * x + 0.3 * i as f64).sin())
            .collect();
        let data = FitData { x, y, sigma: None };
        let p = case.p0.len();
        let free = least_squares_fit(
            case.model,
            p,
            &data,
            Some(case.p0.to_vec()),
            Gradient::Exact,
        );
        let unphysical = (0..p).any(|j| free.x[j] < case.lower[j]);
        assert!(
            unphysical,
            "{}: the unbounded fit {:?} is physical",
            case.model, free.x
        );
        let options = LmOptions {
            bounds: Some(Bounds {
                lower: case.lower.to_vec(),
                upper: case.upper.to_vec(),
            }),
            ..LmOptions::default()
        };
        let p0 = Some(case.p0.to_vec());
        let result = least_squares_fit_with(case.model, p, &data, p0, Gradient::Exact, &options);
        assert!(result.success, "{}: {}", case.model, result.message);
        assert_eq!(
            result.active_mask.as_deref(),
            Some(case.active),
            "{}",
            case.model
        );
        let covariance = result.covariance(false).expect("covariance").matrix;
        for j in 0..p {
            let (x, theirs) = (result.x[j], case.popt[j]);
            if case.active[j] == 0 {
                assert!(
                    (x - theirs).abs() <= 1e-6 * theirs.abs(),
                    "{} θ{j}: {x} vs scipy's {theirs}",
                    case.model
                );
            } else {
                let bound = if case.active[j] < 0 {
                    case.lower[j]
                } else {
                    case.upper[j]
                };
                assert!(
                    (x - bound).abs() <= 1e-12,
                    "{} θ{j}: {x} at {bound}",
                    case.model
                );
            }
            let stderr = covariance[j * p + j].sqrt();
            assert!(
                (stderr - case.perr[j]).abs() <= 1e-6 * case.perr[j],
                "{} σ{j}: {stderr} vs scipy's {}",
                case.model,
                case.perr[j]
            );
        }
    }
}

/// `fit --lower` runs what `curve_fit(…, bounds=…)` runs (trf), and says so: on the exp-decay
/// case of [`BOUNDED_CASES`], written to CSV, scipy's parameters and active set. Without
/// `--lower`, the model's natural bounds do the same; `--no-natural-bounds` fits without.
#[test]
fn cli_fit_with_bounds_is_curve_fits_trf() {
    let case = &BOUNDED_CASES[0];
    let mut csv = String::from("x,y\n");
    for i in 0..300 {
        let x = 10.0 * i as f64 / 299.0;
        let y = (case.y)(x) + 0.02 * (37.0 * x + 0.3 * i as f64).sin();
        csv += &format!("{x:?},{y:?}\n");
    }
    let path = file("bounded-exp-decay.csv", csv.as_bytes());
    let v = json(&[
        "fit",
        path.to_str().unwrap(),
        "--model",
        case.model,
        "--params",
        "4",
        "--p0",
        "1,1,1,0.1",
        "--lower",
        "0",
        "--json",
    ]);
    assert_eq!(v["method"], "trf", "{v}");
    assert_eq!(v["success"], true, "{v}");
    assert_eq!(v["active_mask"], serde_json::json!(case.active), "{v}");
    for j in 0..3 {
        let x = v["x"][j].as_f64().unwrap();
        let theirs = case.popt[j];
        assert!((x - theirs).abs() <= 1e-6 * theirs, "θ{j}: {x} vs {theirs}");
    }
    assert_eq!(v["bounds"], "given", "{v}");
    // Without p0, curve_fit's start inside the bounds: 1 above each lower bound of 0.
    let path = path.to_str().unwrap();
    let fit = |extra: &[&str]| {
        let args = [
            "fit", path, "--model", case.model, "--params", "4", "--json",
        ];
        json(&[&args[..], extra].concat())
    };
    let v = fit(&["--lower", "0"]);
    assert_eq!(
        (&v["method"], &v["success"]),
        (&"trf".into(), &true.into()),
        "{v}"
    );
    // Without bounds, the model's natural ones (rates ≥ 0) keep the fit physical; without
    // those, the second rate goes negative, as curve_fit's does.
    let v = fit(&["--p0", "1,1,1,0.1"]);
    assert_eq!(
        (&v["method"], &v["bounds"]),
        (&"trf".into(), &"model".into()),
        "{v}"
    );
    assert_eq!(v["active_mask"], serde_json::json!(case.active), "{v}");
    let v = fit(&["--p0", "1,1,1,0.1", "--no-natural-bounds"]);
    assert_eq!(v["method"], "lm", "{v}");
    assert!(
        v.get("bounds").is_none() && v["x"][3].as_f64().unwrap() < 0.0,
        "{v}"
    );
}

/// The CLI's fit reports what the library computes, from CSV and from .npz alike.
#[test]
fn cli_fit_reports_curve_fits_numbers() {
    let v = json(&[
        "fit", EXPSIN_CSV, "--model", "expsin", "--params", "5", "--sigma", "sigma", "--json",
    ]);
    assert_eq!(v["status"].as_i64(), Some(2), "{v}");
    assert_eq!(v["points"].as_u64(), Some(400));
    assert_eq!(v["dof"].as_u64(), Some(395));
    let (popt, perr) = SCIPY_SIGMA;
    for i in 0..5 {
        let x = v["x"][i].as_f64().unwrap();
        let stderr = v["stderr"][i].as_f64().unwrap();
        assert!((x - popt[i]).abs() <= 1e-4 * perr[i], "{v}");
        assert!((stderr - perr[i]).abs() <= 1e-4 * perr[i], "{v}");
    }
    let rss = f64_of(&v, "rss");
    assert!((f64_of(&v, "reduced_chi2") - rss / 395.0).abs() <= 1e-12 * rss);
}

/// `fit --loss … --f-scale …` is the library's robust fit, and says which loss it used; the
/// loss is refused where it means nothing (BFGS) and a scale that is not positive is refused.
#[test]
fn cli_fit_takes_a_robust_loss() {
    let v = json(&[
        "fit",
        EXPSIN_CSV,
        "--model",
        "expsin",
        "--params",
        "5",
        "--loss",
        "cauchy",
        "--f-scale",
        "0.1",
        "--json",
    ]);
    let options = LmOptions {
        loss: Loss::Cauchy,
        f_scale: 0.1,
        ..LmOptions::default()
    };
    let library = least_squares_fit_with(
        "expsin",
        5,
        &expsin_data(false),
        None,
        Gradient::Exact,
        &options,
    );
    assert_eq!(
        (v["loss"].as_str(), v["f_scale"].as_f64()),
        (Some("cauchy"), Some(0.1))
    );
    for (j, &x) in library.x.iter().enumerate() {
        assert_eq!(v["x"][j].as_f64(), Some(x), "{v}");
    }
    assert_eq!(f64_of(&v, "rss"), 2.0 * library.cost);
    let bfgs = one_line_error(&[
        "fit", EXPSIN_CSV, "--model", "expsin", "--method", "bfgs", "--loss", "huber",
    ]);
    assert!(
        bfgs.contains("--loss applies to --method lm and trf only"),
        "{bfgs}"
    );
    let scale = one_line_error(&["fit", EXPSIN_CSV, "--model", "expsin", "--f-scale", "0"]);
    assert!(scale.contains("must be positive"), "{scale}");
}

/// A fit's triangles fold in chunk order, whatever the threads: 5000 rows (5 chunks of 1024) fit
/// with exact and with central-difference rows, and under a robust loss, give the same bits on
/// one thread and on two (the ranks' side is tests/mpi.rs).
#[test]
fn fits_are_bit_identical_for_any_thread_count() {
    let mut csv = String::from("x,y\n");
    for i in 0..5000 {
        let t = 8.0 * i as f64 / 4999.0;
        let y = 2.0 * (-0.7 * t).exp() + 0.3 * (2.0 * t).sin() + 0.01 * (37.0 * t).sin();
        csv += &format!("{t},{y}\n");
    }
    let path = file("expsin-5000-threads.csv", csv.as_bytes());
    let path = path.to_str().unwrap();
    for extra in [
        &[][..],
        &["--grad", "central"],
        &["--loss", "soft_l1", "--f-scale", "0.01"],
    ] {
        let run = |threads: &str| {
            let mut args = vec!["fit", path, "--model", "expsin", "--params", "6", "--json"];
            args.extend(extra);
            let v = json_in(&[("RAYON_NUM_THREADS", threads)], &args);
            let bits = |field: &str| -> Vec<u64> {
                let values = v[field].as_array().expect(field);
                values
                    .iter()
                    .map(|x| x.as_f64().unwrap().to_bits())
                    .collect()
            };
            (
                bits("x"),
                bits("stderr"),
                f64_of(&v, "rss").to_bits(),
                v["nfev"].clone(),
            )
        };
        assert_eq!(run("1"), run("2"), "{extra:?}");
    }
}

/// A file in the test's temporary folder with `contents`.
fn file(name: &str, contents: &[u8]) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// A fit whose data fix only a combination of its free parameters says so, counting `J`'s
/// rank against the free parameters alone: one x for all points fixes only `θ0 + θ1·x`, and
/// `θ2` is held.
#[test]
fn rank_is_counted_against_the_free_parameters() {
    let path = file("one-x.csv", b"x,y\n1,2\n1,3\n1,4\n1,3\n");
    let output = cudamin(&[
        "fit",
        path.to_str().unwrap(),
        "--model",
        "poly",
        "--fix",
        "2=0",
    ]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("not identified θ0, θ1: J has rank 1 of 2 free parameters"),
        "{text}"
    );
}

/// Data so small that the residuals' squares underflow (a sum of 0, or a subnormal one with few
/// digits) are refused at the start, by `lm` and by `trf` (with a box), where the fit used to end
/// there as converged with `p0` unchanged; scipy's MINPACK, with its scaled norm, fits them.
#[test]
fn residuals_whose_squares_underflow_are_refused() {
    let cases = [
        (
            "tiny-0.csv",
            "x,y\n0,2.5e-170\n1,1e-170\n2,4e-171\n3,1e-171\n",
            "sum is 0e0",
        ),
        (
            "tiny-subnormal.csv",
            "x,y\n0,2.5e-160\n1,1e-160\n2,4e-161\n3,1e-161\n",
            "sum is ",
        ),
    ];
    for (name, contents, sum) in cases {
        let path = file(name, contents.as_bytes());
        let path = path.to_str().unwrap();
        for bounds in [&[][..], &["--lower", "-1"][..]] {
            let mut args = vec!["fit", path, "--model", "poly", "--p0", "0,0,0"];
            args.extend(bounds);
            let error = one_line_error(&args);
            assert!(
                error.contains("so small that their squares underflow"),
                "{name}: {error}"
            );
            assert!(error.contains(sum), "{name}: {error}");
        }
    }
}

#[test]
fn bad_files_are_one_line_errors_naming_the_place() {
    let fit_error = |path: &Path, extra: &[&str]| {
        let path = path.to_str().unwrap();
        let mut args = vec!["fit", path, "--model", "poly"];
        args.extend(extra);
        let error = one_line_error(&args);
        assert!(error.contains(path), "the error names the file: {error}");
        error
    };
    let cases: [(&str, &str, &[&str], &[&str]); 15] = [
        (
            "malformed.csv",
            "x,y\n1,2\n2,abc\n",
            &[],
            &["line 3", "column `y`", "`abc`"],
        ),
        (
            "nan.csv",
            "x,y\n1,2\n2,nan\n",
            &[],
            &["line 3", "column `y`", "NaN"],
        ),
        (
            "inf.csv",
            "x,y\n1,inf\n",
            &[],
            &["line 2", "column `y`", "inf"],
        ),
        ("missing.csv", "t,y\n1,2\n", &[], &["no column `x`", "t, y"]),
        ("empty.csv", "", &[], &["no data rows"]),
        (
            "unnamed.csv",
            ",\n1,2\n",
            &[],
            &["header line names no column"],
        ),
        (
            "half-named.csv",
            "x,\n1,2\n",
            &[],
            &["no column `y`", "has: x, (unnamed)"],
        ),
        ("header-only.csv", "x,y\n", &[], &["no data rows"]),
        (
            "ragged.csv",
            "x,y\n1,2\n3\n",
            &[],
            &["line 3", "1 fields", "header has 2"],
        ),
        (
            "duplicate.csv",
            "x,y,y\n1,2,30\n2,3,1\n3,4,7\n",
            &[],
            &["names column `y` 2 times"],
        ),
        (
            "commented-ragged.csv",
            "# x,y\n1,2\n2,3,4\n",
            &[],
            &["line 3", "3 fields", "header has 2"],
        ),
        (
            "few.csv",
            "x,y\n1,2\n2,3\n",
            &["--params", "3"],
            &["2 data points cannot determine 3"],
        ),
        (
            "few-free.csv",
            "x,y\n1,2\n2,3\n",
            &["--params", "4", "--fix", "0=1"],
            &["2 data points cannot determine 3 free parameters (1 of 4 held)"],
        ),
        (
            "sigma.csv",
            "x,y,s\n1,2,1\n2,3,0\n3,4,1\n",
            &["--sigma", "s"],
            &["sigma at index 1 is 0"],
        ),
        (
            "tiny-sigma.csv",
            "x,y,s\n1,2,1\n2,3,-1e-300\n3,4,1\n",
            &["--sigma", "s"],
            &["sigma at index 1 is -1e-300;"],
        ),
    ];
    for (name, contents, extra, expected) in cases {
        let error = fit_error(&file(name, contents.as_bytes()), extra);
        for part in expected {
            assert!(error.contains(part), "{name}: `{part}` not in: {error}");
        }
    }
    let error = fit_error(&file("data.txt", b"x,y\n1,2\n"), &[]);
    assert!(error.contains("unknown file type"), "{error}");
    let error = fit_error(Path::new("/nonexistent/data.csv"), &[]);
    // The operating system's reason, once: it is the message, not also a cause under it.
    assert_eq!(error.matches("No such file").count(), 1, "{error}");
    let error = fit_error(&file("not-a-zip.npz", b"x,y\n"), &[]);
    assert!(error.contains("not readable numpy data"), "{error}");
    let npz = |name: &str, y: ndarray::Array1<f64>| {
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
        let mut archive = NpzWriter::new(std::fs::File::create(&path).unwrap());
        archive
            .add_array("x", &ndarray::arr1(&[0.0, 1.0, 2.0]))
            .unwrap();
        archive.add_array("y", &y).unwrap();
        archive.finish().unwrap();
        path
    };
    let error = fit_error(&npz("nan.npz", ndarray::arr1(&[1.0, f64::NAN, 2.0])), &[]);
    assert!(error.contains("index 1, column `y`: NaN"), "{error}");
    let error = fit_error(&npz("short.npz", ndarray::arr1(&[1.0, 2.0])), &[]);
    assert!(
        error.contains("column `y` has 2 rows, column `x` has 3"),
        "{error}"
    );
    // A header that claims 2⁵⁹ values in a 128-byte file (corrupt, or crafted): refused before
    // anything is allocated for it, in a .npy and inside an .npz.
    let huge = npy_bytes("(576460752303423488,)");
    let claim = "header claims shape [576460752303423488]: more than the 24 bytes of data";
    let error = fit_error(&file("huge.npy", &huge), &["--x", "0", "--y", "0"]);
    assert!(error.contains(claim), "{error}");
    assert!(!error.contains("npz archive"), "{error}");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("huge.npz");
    let mut archive = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in [("x.npy", npy_bytes("(3,)")), ("y.npy", huge)] {
        archive.start_file(name, stored).unwrap();
        archive.write_all(&bytes).unwrap();
    }
    archive.finish().unwrap();
    let error = fit_error(&path, &[]);
    assert!(
        error.contains("array `y`") && error.contains(claim),
        "{error}"
    );
    // An array of no columns says so, rather than listing nothing.
    let mut no_columns = npy_bytes("(3, 0)");
    no_columns.truncate(no_columns.len() - 24);
    let error = fit_error(&file("no-columns.npy", &no_columns), &[]);
    assert!(
        error.contains("no column `x`; the file has: none"),
        "{error}"
    );
    // Finite residuals whose squares overflow are not called non-finite.
    let huge_y = file("huge-y.csv", b"x,y\n0,1e160\n1,2e160\n2,3e160\n");
    let huge_y = huge_y.to_str().unwrap();
    let error = one_line_error(&["fit", huge_y, "--model", "poly", "--params", "2"]);
    assert!(error.contains("squares sum past f64::MAX"), "{error}");
}

/// A version-1.0 `.npy` of float64 with `shape` (a Python tuple), as numpy writes its header,
/// and zeros for 3 values whatever the shape says.
fn npy_bytes(shape: &str) -> Vec<u8> {
    let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    // The magic, version and length take 10 bytes; numpy pads the whole to 64 with a newline.
    let padded = (10 + header.len() + 1).next_multiple_of(64) - 10;
    header = format!("{header:<width$}\n", width = padded - 1);
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend([0u8; 24]);
    bytes
}

/// numpy's `savetxt(…, header="x,y")` writes its header as a comment, `# x,y`: read as the
/// column names, as `genfromtxt(names=True)` reads them, and a comment line among the rows is
/// skipped, as `loadtxt` skips it.
#[test]
fn a_commented_header_names_the_columns() {
    let path = file("savetxt.csv", b"# x,y\n1,2\n2,4\n# a comment\n3,6.5\n");
    assert_eq!(
        read_columns(&path, &["y", "x"]).unwrap(),
        vec![vec![2.0, 4.0, 6.5], vec![1.0, 2.0, 3.0]]
    );
    let plain = file("plain.csv", b"x,y\n1,2\n# a comment\n2,4\n");
    assert_eq!(
        read_columns(&plain, &["x", "y"]).unwrap(),
        vec![vec![1.0, 2.0], vec![2.0, 4.0]]
    );
}

/// numpy's files give the same fit as the CSV: an `.npz` of float64 columns, and an `.npy` whose
/// columns are named by index, with `x` stored as int64 (read as f64).
#[test]
fn npz_and_npy_read_as_the_csv_does() {
    let FitData { x, y, sigma } = expsin_data(true);
    let sigma = sigma.unwrap();
    let npz = Path::new(env!("CARGO_TARGET_TMPDIR")).join("expsin.npz");
    let mut archive = NpzWriter::new(std::fs::File::create(&npz).unwrap());
    for (name, column) in [("x", &x), ("y", &y), ("sigma", &sigma)] {
        archive.add_array(name, &ndarray::arr1(column)).unwrap();
    }
    archive.finish().unwrap();
    let from_npz = read_columns(&npz, &["x", "y", "sigma"]).unwrap();
    assert_eq!(from_npz, vec![x.clone(), y.clone(), sigma]);
    let npy = Path::new(env!("CARGO_TARGET_TMPDIR")).join("table.npy");
    let whole: Vec<i64> = (0..5).collect();
    let table = ndarray::Array2::from_shape_fn(
        (5, 2),
        |(r, c)| {
            if c == 0 { whole[r] as f64 } else { y[r] }
        },
    );
    table
        .write_npy(std::fs::File::create(&npy).unwrap())
        .unwrap();
    assert_eq!(
        read_columns(&npy, &["1", "0"]).unwrap(),
        vec![y[..5].to_vec(), vec![0.0, 1.0, 2.0, 3.0, 4.0]]
    );
    let ints = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ints.npy");
    ndarray::arr1(&whole)
        .write_npy(std::fs::File::create(&ints).unwrap())
        .unwrap();
    assert_eq!(
        read_columns(&ints, &["0"]).unwrap(),
        vec![vec![0.0, 1.0, 2.0, 3.0, 4.0]]
    );
}

/// The text of every `<text>` element, and how many elements of each kind the SVG at `path` has.
fn svg_contents(path: &Path) -> (Vec<String>, usize, usize) {
    let svg = std::fs::read_to_string(path).unwrap();
    let document = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("not XML: {e}"));
    assert_eq!(document.root_element().tag_name().name(), "svg");
    let named = |name: &'static str| {
        document
            .descendants()
            .filter(move |n| n.tag_name().name() == name)
    };
    let texts = named("text")
        .filter_map(|n| n.text())
        .map(|t| t.trim().to_owned())
        .collect();
    // A drawn line: a polyline of more than two points (legend samples have two).
    let lines = named("polyline")
        .filter(|n| {
            n.attribute("points")
                .is_some_and(|p| p.split_whitespace().count() > 2)
        })
        .count();
    (texts, lines, named("circle").count())
}

/// `--plot` writes an SVG that parses, with both convergence curves and their legend, and for a
/// fit the data, model and residual panels.
#[test]
fn plots_are_svgs_with_the_curves_they_name() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let solve_svg = dir.join("solve.svg");
    json(&[
        "solve",
        "rosenbrock",
        "--n",
        "10",
        "--json",
        "--plot",
        solve_svg.to_str().unwrap(),
    ]);
    let (texts, lines, _) = svg_contents(&solve_svg);
    for label in ["f − f_final", "‖∇f‖∞", "iteration"] {
        assert!(
            texts.iter().any(|t| t == label),
            "no `{label}` in {texts:?}"
        );
    }
    assert!(lines >= 2, "{lines} curves");

    let fit_svg = dir.join("fit.svg");
    json(&[
        "fit",
        EXPSIN_CSV,
        "--model",
        "expsin",
        "--params",
        "5",
        "--json",
        "--plot",
        fit_svg.to_str().unwrap(),
    ]);
    let (texts, lines, circles) = svg_contents(&fit_svg);
    for label in ["data and model", "residuals y − model", "model", "data"] {
        assert!(
            texts.iter().any(|t| t == label),
            "no `{label}` in {texts:?}"
        );
    }
    assert!(
        lines >= 3,
        "{lines} curves: two convergence curves and the model"
    );
    assert!(
        circles >= 800,
        "{circles} points: 400 data points and their residuals"
    );
}

/// A user's data term that reads a column its data lack (and whose `check` let that pass):
/// the row reads NaN, so f(x0) is NaN and BFGS ends with scipy's status 3 instead of a panic.
#[test]
fn a_term_reading_past_its_data_ends_in_status_3() {
    use cudamin::kernels::prelude::*;
    use cudamin::{Method, Options, TermProblem};

    struct ThirdColumn;
    impl Term for ThirdColumn {
        const WINDOW: Window = Window::Dense;
        type Local<'a> = Row<'a>;
        fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
            data.row(k)
        }
        fn eval<R: Real>(x: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
            (x[0] * row.get(2) - row.get(1)).sq()
        }
    }
    cudamin::kernels::register_term!(ThirdColumn, third_column);

    // Two columns of three rows: x and y.
    let columns = vec![1.0, 2.0, 3.0, 2.0, 4.0, 6.0];
    let problem = || TermProblem::<ThirdColumn>::with_data(1, columns.clone(), 3).unwrap();
    for gradient in [Gradient::Exact, Gradient::Central] {
        let mut objective = TermObjective::new(Backend::Cpu.load(problem()).unwrap(), gradient);
        let result =
            cudamin::minimize(&mut objective, &[1.0], Method::Bfgs, &Options::default()).unwrap();
        assert_eq!(result.status.code(), 3, "{gradient:?}: {}", result.message);
        assert!(result.fun.is_nan() && !result.success);
    }
}

/// A user's term with a bug that panics (here an explicit panic, past x = 2): every kind of
/// pass returns the panic's message as an error, which the solve returns, instead of the panic
/// unwinding through the caller; and the evaluator still works afterwards.
#[test]
fn a_panicking_term_is_an_error_not_a_panic() {
    use cudamin::kernels::prelude::*;
    use cudamin::{Method, Options, TermProblem};

    struct PanicsPastTwo;
    impl Term for PanicsPastTwo {
        const WINDOW: Window = Window::Separable;
        type Local<'a> = ();
        fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}
        fn eval<R: Real>(x: Vars<'_, R>, _local: &()) -> Num<R> {
            assert!(x[0].value() <= 2.0, "the term's own check failed");
            (x[0] - 3.0).sq()
        }
    }
    cudamin::kernels::register_term!(PanicsPastTwo, panics_past_two);

    let is_the_panic = |error: &dyn std::fmt::Display| {
        let text = error.to_string();
        assert!(
            text.contains("a term panicked: the term's own check failed"),
            "{text}"
        );
    };
    for gradient in [Gradient::Exact, Gradient::Forward] {
        let problem = TermProblem::<PanicsPastTwo>::new(1000).unwrap();
        let mut evaluator = Backend::Cpu.load(problem).unwrap();
        let (mut g, far) = (vec![0.0; 1000], vec![2.5; 1000]);
        is_the_panic(&evaluator.value(&far).unwrap_err());
        is_the_panic(&evaluator.gradient(&far, gradient, &mut g).unwrap_err());
        is_the_panic(
            &evaluator
                .value_and_gradient(&far, gradient, &mut g)
                .unwrap_err(),
        );
        // The pool and the evaluator are intact: below 2 the term is fine.
        assert_eq!(evaluator.value(&vec![1.0; 1000]).unwrap(), 4000.0);

        // The solve's first step from 0 (along +∇f's opposite, towards 3) goes past 2.
        let mut objective = TermObjective::new(evaluator, gradient);
        let error = cudamin::minimize(
            &mut objective,
            &vec![0.0; 1000],
            Method::Bfgs,
            &Options::default(),
        )
        .unwrap_err();
        is_the_panic(&error);
    }
}
