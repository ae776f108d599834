//! `cudamin fit DATA --batch COLUMN`: one fit per group of rows, the groups in the order of
//! their first rows and of any sizes; known spots come back from noiseless counts, on the CPU
//! and the simulator, by least squares and Poisson likelihood, in f64 and f32; what cannot run
//! is a one-line error.

mod common;

use common::cli::{cudamin, json, one_line_error};
use std::path::{Path, PathBuf};

/// Spot `id`'s parameters `(a, x0, y0, s, b)`.
fn truth(id: u32) -> [f64; 5] {
    let t = f64::from(id);
    [
        300.0 + 11.0 * t,
        1.9 + 0.05 * t,
        2.2 - 0.04 * t,
        0.95 + 0.01 * t,
        8.0 + 0.5 * t,
    ]
}

/// A CSV of the spots 7, 3 and 5 on 5 × 5 pixels, their rows interleaved (7, 3, 5, 7, …), and
/// `extra` more rows of spot 3 (a group of another size where `extra > 0`).
fn spots_csv(name: &str, extra: u32) -> PathBuf {
    let row = |id: u32, pixel: u32| {
        let (px, py) = (f64::from(pixel % 5), f64::from(pixel / 5 % 5));
        let [a, x0, y0, s, b] = truth(id);
        let m = a * (-((px - x0).powi(2) + (py - y0).powi(2)) / (2.0 * s * s)).exp() + b;
        format!("{id},{px},{py},{m:e}\n")
    };
    let mut csv = String::from("spot,px,py,counts\n");
    for pixel in 0..25 {
        for id in [7, 3, 5] {
            csv += &row(id, pixel);
        }
    }
    for pixel in 25..25 + extra {
        csv += &row(3, pixel);
    }
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, csv).unwrap();
    path
}

const SPOT: [&str; 10] = [
    "--model", "gauss-2d", "--x", "px", "--x", "py", "--y", "counts", "--batch", "spot",
];

/// Each group's fit gives its spot back, in the groups' order, by either estimator, in either
/// precision, on the CPU and the simulator; the CSV has a header and a line per group.
#[test]
fn each_group_is_fitted_alone() {
    let csv = spots_csv("spots.csv", 0);
    let data = csv.to_str().unwrap();
    let start = ["--p0", "320,2,2,1,9"];
    let runs: [(&[&str], f64); 4] = [
        (&["--backend", "cpu"], 1e-8),
        (&["--backend", "sim", "--estimator", "poisson"], 1e-8),
        (&["--backend", "sim", "--dtype", "f32"], 1e-4),
        (&["--estimator", "poisson", "--dtype", "f32"], 1e-4),
    ];
    for (extra, tolerance) in runs {
        let v = json(&[&["fit", data][..], &SPOT, &start, extra, &["--json"]].concat());
        assert_eq!(v["fits"].as_u64(), Some(3), "{v}");
        assert_eq!(v["rows"].as_u64(), Some(75), "{v}");
        assert_eq!(v["successes"].as_u64(), Some(3), "{extra:?}: {v}");
        for (line, id) in v["results"].as_array().unwrap().iter().zip([7, 3, 5]) {
            assert_eq!(line["id"].as_f64(), Some(f64::from(id)), "{v}");
            assert_eq!(line["points"].as_u64(), Some(25), "{v}");
            for (j, want) in truth(id).iter().enumerate() {
                let got = line["x"][j].as_f64().unwrap();
                assert!(
                    (got - want).abs() <= tolerance * want.abs(),
                    "{extra:?}: spot {id}, θ{j} {got} vs {want}"
                );
            }
        }
    }
    let out = cudamin(&[&["fit", data][..], &SPOT, &start].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "id,points,status,nfev,cost,a,x0,y0,s,b,a_stderr,x0_stderr,y0_stderr,s_stderr,b_stderr"
    );
    assert_eq!(lines.len(), 4, "{text}");
    let second: Vec<f64> = lines[2].split(',').map(|v| v.parse().unwrap()).collect();
    assert_eq!(second[..2], [3.0, 25.0]);
    assert!(
        (second[5] - truth(3)[0]).abs() <= 1e-8 * truth(3)[0],
        "{text}"
    );
    let summary = String::from_utf8(out.stderr).unwrap();
    assert!(summary.contains("3 succeeded"), "{summary}");
}

/// Groups of different sizes fit alone, each with its own points: spot 3 with 27 rows.
#[test]
fn groups_may_differ_in_size() {
    let csv = spots_csv("uneven.csv", 2);
    let data = csv.to_str().unwrap();
    let v = json(
        &[
            &["fit", data][..],
            &SPOT,
            &["--p0", "320,2,2,1,9", "--json"],
        ]
        .concat(),
    );
    let results = v["results"].as_array().unwrap();
    let points: Vec<u64> = results
        .iter()
        .map(|r| r["points"].as_u64().unwrap())
        .collect();
    assert_eq!(points, [25, 27, 25], "{v}");
    for (line, id) in results.iter().zip([7, 3, 5]) {
        for (j, want) in truth(id).iter().enumerate() {
            let got = line["x"][j].as_f64().unwrap();
            assert!(
                (got - want).abs() <= 1e-8 * want.abs(),
                "spot {id}: θ{j} {got}"
            );
        }
    }
}

/// A method other than Levenberg–Marquardt and a Poisson fit of weighted data are one-line
/// errors; `--estimator` needs `--batch`.
#[test]
fn bad_batches_are_one_line_errors() {
    let csv = spots_csv("even.csv", 0);
    let data = csv.to_str().unwrap();
    let error = one_line_error(&[&["fit", data][..], &SPOT, &["--method", "bfgs"]].concat());
    assert!(
        error.contains("--batch fits by Levenberg–Marquardt"),
        "{error}"
    );
    let error = one_line_error(
        &[
            &["fit", data][..],
            &SPOT,
            &["--sigma", "px", "--estimator", "poisson"],
        ]
        .concat(),
    );
    assert!(error.contains("poisson fits take no sigma"), "{error}");
    let out = cudamin(&["fit", data, "--model", "gauss-2d", "--estimator", "poisson"]);
    assert!(!out.status.success());
}

/// `--cost` counts the batch kernel on the simulator, per fit, and models its rate; single
/// precision moves fewer bytes of stack than double. Off the simulator, or for fits that run
/// one at a time on the CPU, it is a one-line error.
#[test]
fn batch_cost_counts_the_kernel_per_fit() {
    let csv = spots_csv("cost.csv", 0);
    let data = csv.to_str().unwrap();
    let cost = |dtype: &str| {
        let cost = ["--backend", "sim", "--cost", "--json", "--dtype", dtype];
        let v = json(&[&["fit", data][..], &SPOT, &["--p0", "320,2,2,1,9"], &cost].concat());
        assert_eq!(v["fits"].as_u64(), Some(3), "{v}");
        // The tables' kernel, then the batch kernel.
        assert_eq!(v["launches"].as_u64(), Some(2), "{v}");
        assert!(v["modelled_h100_fits_per_s"].as_f64().unwrap() > 0.0, "{v}");
        let names = (v["kernels"].as_array().unwrap().iter()).map(|k| k["kernel"].clone());
        assert!(names.eq(["batch_table", "fit_gauss_2d_batch"]), "{v}");
        // Up: px and py once (every spot has the same 25 pixels), the counts, the offsets and
        // the one start; back: the report, 5 + 5 + 15 values.
        let up = (2 * 25 + 3 * 25 + 4 + 5) as f64 / 3.0;
        assert_eq!(v["words_to_device_per_fit"].as_f64(), Some(up), "{v}");
        assert_eq!(v["words_to_host_per_fit"].as_f64(), Some(25.0), "{v}");
        let kernel = v["kernels"][1].clone();
        // A fit's table: 25 rows of px, py, counts and weights.
        assert_eq!(kernel["data_bytes_per_point"].as_f64(), Some(800.0), "{v}");
        kernel["local_bytes_per_point"].as_f64().unwrap()
    };
    let (double, single) = (cost("f64"), cost("f32"));
    assert!(0.0 < single && single < double, "{single} B, {double} B");
    let error = one_line_error(&[&["fit", data][..], &SPOT, &["--cost"]].concat());
    assert!(error.contains("--backend sim"), "{error}");
    let boxed = ["--backend", "sim", "--cost", "--upper", "1e4,5,5,3,100"];
    let error = one_line_error(&[&["fit", data][..], &SPOT, &boxed].concat());
    assert!(error.contains("one at a time on the CPU"), "{error}");
}
