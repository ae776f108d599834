//! `cudamin fit --model linear --x x1 --x x2`: a model of several predictors from a data file,
//! against scipy's `curve_fit` with `xdata` of shape `(2, M)`; and the one-line errors for
//! predictors a model does not take.

mod common;

use common::cli::{f64_of, json, one_line_error};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `curve_fit(linear, x, y, p0=ones(3))` on [`linear_csv`]'s data, without and with `sigma`:
/// `(popt, pcov)`, as printed by `python tests/scipy/linear_fit.py` (numpy 2.4.6, scipy 1.17.1).
type Reference = ([f64; 3], [[f64; 3]; 3]);
const SCIPY_UNWEIGHTED: Reference = (
    [1.5039514392284337, 1.9980986572065478, -0.7490566076722797],
    [
        [
            1.2627931221651724e-4,
            -4.7934131303015544e-5,
            -4.585089489542819e-7,
        ],
        [
            -4.7934131303015544e-5,
            2.458923753893411e-5,
            -1.4672054533539564e-7,
        ],
        [
            -4.585089489542819e-7,
            -1.4672054533539564e-7,
            7.341282425726657e-6,
        ],
    ],
);
const SCIPY_SIGMA: Reference = (
    [1.504436862883631, 1.997807696884029, -0.7485714350070332],
    [
        [
            9.45439577866071e-5,
            -3.976256957873807e-5,
            -1.4046487752238785e-6,
        ],
        [
            -3.976256957873807e-5,
            2.5461117212181173e-5,
            3.777396614367766e-7,
        ],
        [
            -1.4046487752238785e-6,
            3.777396614367766e-7,
            7.123505940894229e-6,
        ],
    ],
);

/// The script's data as CSV: 40 points, `x1 = i/10`, `x2 = 3·cos(0.7·i)`,
/// `y = 1.5 + 2·x1 − 0.75·x2 + 0.05·sin(1.3·i)`, `s = 0.5 + 0.01·i`.
fn linear_csv() -> PathBuf {
    let mut csv = String::from("x1,x2,y,s\n");
    for i in 0..40 {
        let i = f64::from(i);
        let (x1, x2) = (i / 10.0, 3.0 * (0.7 * i).cos());
        let y = 1.5 + 2.0 * x1 - 0.75 * x2 + 0.05 * (1.3 * i).sin();
        csv += &format!("{x1:e},{x2:e},{y:e},{:e}\n", 0.5 + 0.01 * i);
    }
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("linear.csv");
    std::fs::write(&path, csv).unwrap();
    path
}

/// The fit's parameters are scipy's to 1e-8 and its covariance to 1e-6, relative.
fn assert_matches(label: &str, v: &Value, (popt, pcov): &Reference) {
    assert_eq!(
        v["status"].as_i64().map(|s| s > 0),
        Some(true),
        "{label}: {v}"
    );
    assert_eq!(v["params"].as_u64(), Some(3), "{label}: {v}");
    for i in 0..3 {
        let x = v["x"][i].as_f64().unwrap();
        assert!(
            (x - popt[i]).abs() <= 1e-8 * popt[i].abs(),
            "{label}: x[{i}] {x} vs {popt:?}"
        );
        for j in 0..3 {
            let c = v["pcov"][i][j].as_f64().unwrap();
            let scale = (pcov[i][i] * pcov[j][j]).sqrt();
            assert!(
                (c - pcov[i][j]).abs() <= 1e-6 * scale,
                "{label}: pcov[{i}][{j}] {c} vs {}",
                pcov[i][j]
            );
        }
    }
}

/// Two predictors by name, each `--x` one column, give scipy's popt and pcov, on the CPU and on
/// the simulator, without and with sigma; the parameter count follows the predictors.
#[test]
fn cli_fit_takes_several_predictors() {
    let csv = linear_csv();
    let data = csv.to_str().unwrap();
    let fit = |backend: &str, sigma: &[&str]| {
        let args = ["fit", data, "--model", "linear", "--x", "x1", "--x", "x2"];
        json(&[&args[..], sigma, &["--backend", backend, "--json"]].concat())
    };
    for backend in ["cpu", "sim"] {
        let v = fit(backend, &[]);
        assert_matches(backend, &v, &SCIPY_UNWEIGHTED);
        assert_eq!(v["columns"]["x"], serde_json::json!(["x1", "x2"]), "{v}");
        assert_eq!(v["dof"].as_u64(), Some(37));
        let v = fit(backend, &["--sigma", "s"]);
        assert_matches(&format!("{backend} with sigma"), &v, &SCIPY_SIGMA);
    }
    // One predictor: a straight line, two parameters.
    let v = json(&["fit", data, "--model", "linear", "--x", "x1", "--json"]);
    assert_eq!(v["params"].as_u64(), Some(2), "{v}");
    assert!(
        f64_of(&v, "rss") > 1.0,
        "x2's part is left in the residuals: {v}"
    );
}

/// Predictors a model does not take are one-line errors that say what it takes.
#[test]
fn predictors_a_model_does_not_take_are_refused() {
    let csv = linear_csv();
    let data = csv.to_str().unwrap();
    let two = ["--x", "x1", "--x", "x2"];
    let refused = |args: &[&str]| one_line_error(&[&["fit", data][..], args].concat());
    let error = refused(&[&["--model", "poly"][..], &two].concat());
    assert!(
        error.contains("poly with 3 parameters: it takes one predictor"),
        "{error}"
    );
    let error = refused(&[&["--model", "linear", "--params", "4"][..], &two].concat());
    assert!(
        error.contains("linear with 4 parameters: it takes p = k + 1"),
        "{error}"
    );
    let error = refused(&[&["--model", "linear", "--plot", "fit.svg"][..], &two].concat());
    assert!(
        error.contains("--plot draws y against one predictor"),
        "{error}"
    );
    let error = refused(&["--model", "linear", "--x", "x1", "--x", "nope"]);
    assert!(error.contains("nope"), "{error}");
}
