//! The `cudamin` command line, run as a user runs it: the default job, the JSON contract of
//! DESIGN.md §4, the acceptance solves, and one-line errors (never a panic) for bad input.

use cudamin::problems::{lsq_expsin_data, lsq_expsin_theta_true};
mod common;

use common::cli::{cudamin, f64_of, json, json_in, one_line_error};
use serde_json::Value;
use std::process::Command;

fn xs(v: &Value) -> Vec<f64> {
    v["x"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_f64().unwrap())
        .collect()
}

#[test]
fn default_job_solves_seed_expsum() {
    let out = cudamin(&[]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("seed-expsum (n = 10000)"), "{stdout}");
    assert!(
        stdout.contains("0: Optimization terminated successfully."),
        "{stdout}"
    );
}

#[test]
fn seed_expsum_json_has_the_contract_fields_and_the_known_minimum() {
    let v = json(&["solve", "seed-expsum", "--n", "10000", "--json"]);
    for field in [
        "problem",
        "n",
        "method",
        "grad",
        "backend",
        "backend_reason",
        "fun",
        "grad_inf_norm",
        "nit",
        "nfev",
        "njev",
        "status",
        "success",
        "message",
        "elapsed_s",
        "x",
    ] {
        assert!(v.get(field).is_some(), "missing `{field}`");
    }
    // Each coordinate solves 2x + eˣ = 0: x = −W(½) = −0.351733711249, x² + eˣ = 0.827184026128.
    assert!(
        (f64_of(&v, "fun") - 8271.84026128).abs() < 0.01,
        "{}",
        v["fun"]
    );
    assert_eq!(v["status"], 0);
    assert_eq!(v["success"], true);
    assert!(f64_of(&v, "grad_inf_norm") <= 1e-5);
    let x = xs(&v);
    assert_eq!(x.len(), 10_000);
    assert!(x.iter().all(|xi| (xi + 0.351733711249).abs() < 1e-5));
}

/// A solve on a device reports what it asked of it (`device_traffic`); a CPU solve has no
/// such field. 2¹⁵ variables, where the vectors live on the device: `x0` goes over, the answer
/// and its gradient come back.
#[test]
fn a_device_solve_reports_its_traffic() {
    let n = 1usize << 15;
    let solve = |backend: &str| {
        let n = n.to_string();
        let args = ["solve", "seed-expsum", "--n", &n, "--method", "lbfgsb"];
        json(
            &[
                &args[..],
                &["--upper", "-0.4", "--backend", backend, "--json"],
            ]
            .concat(),
        )
    };
    let on_device = solve("sim");
    let traffic = &on_device["device_traffic"];
    let count = |field: &str| {
        traffic[field]
            .as_u64()
            .unwrap_or_else(|| panic!("{traffic}"))
    };
    let vector_bytes = (n * size_of::<f64>()) as u64;
    assert!(count("launches") > 0 && count("waits") > 0, "{traffic}");
    assert!(count("bytes_to_device") >= vector_bytes, "{traffic}");
    assert!(count("bytes_to_host") >= 2 * vector_bytes, "{traffic}");
    assert!(solve("cpu").get("device_traffic").is_none());
}

/// Without bounds, a solve on a device takes its gradient's norm there: only `x` comes back,
/// and the norm is the one the CPU reports for the same solve, to the iterates' rounding.
#[test]
fn an_unbounded_device_solve_brings_back_x_alone() {
    let n = 1usize << 15;
    let solve = |backend: &str| {
        let n = n.to_string();
        let args = ["solve", "seed-expsum", "--n", &n, "--method", "lbfgs"];
        json(&[&args[..], &["--backend", backend, "--json"]].concat())
    };
    let (on_device, on_cpu) = (solve("sim"), solve("cpu"));
    let traffic = &on_device["device_traffic"];
    let to_host = traffic["bytes_to_host"].as_u64().unwrap();
    let vector_bytes = (n * size_of::<f64>()) as u64;
    assert!(
        (vector_bytes..vector_bytes + 1024).contains(&to_host),
        "{traffic}"
    );
    assert_eq!(on_device["status"], 0);
    let (norm, cpu_norm) = (
        f64_of(&on_device, "grad_inf_norm"),
        f64_of(&on_cpu, "grad_inf_norm"),
    );
    assert!(norm > 0.0 && norm <= 1e-5 && (norm - cpu_norm).abs() <= 1e-2 * cpu_norm);
    let (x, cpu_x) = (xs(&on_device), xs(&on_cpu));
    assert_eq!(x.len(), n);
    assert!(x.iter().zip(&cpu_x).all(|(a, b)| (a - b).abs() <= 1e-9));
}

#[test]
fn maxiter_zero_returns_x0_with_status_1() {
    let v = json(&[
        "solve",
        "seed-expsum",
        "--n",
        "5",
        "--maxiter",
        "0",
        "--json",
    ]);
    assert_eq!(v["status"], 1);
    assert_eq!(v["success"], false);
    assert_eq!(xs(&v), vec![0.5; 5]);
}

#[test]
fn bad_input_is_a_one_line_error() {
    let cases: &[(&[&str], &str)] = &[
        (&["solve", "no-such-problem"], "unknown problem"),
        (&["solve", "seed-expsum", "--maxiter", "-1"], "maxiter"),
        (&["solve", "seed-expsum", "--gtol", "0"], "gtol"),
        (&["solve", "seed-expsum", "--gtol", "nan"], "gtol"),
        (&["solve", "seed-expsum", "--n", "0"], "n = 0"),
        (
            &["solve", "ext-rosenbrock", "--n", "7"],
            "n = 7 is not allowed for ext-rosenbrock: each term reads 2 variables and the next \
             starts 2 later, so n must be 2 + 2·k (n = 6 or 8 would do)",
        ),
        (&["solve", "ext-powell", "--n", "6"], "n = 6"),
        (
            &["solve", "mgh-20", "--n", "1"],
            "n = 1 is not allowed for mgh-20: Watson",
        ),
        (
            &["solve", "rosenbrock", "--plot", "converged.png"],
            "--plot converged.png: the plot is written as SVG; give a file name ending in .svg",
        ),
        (&["solve", "seed-expsum", "--points", "10"], "--points"),
        (&["solve", "lsq-expsin", "--points", "0"], "--points"),
        (&["solve", "lsq-expsin", "--n", "1"], "n >= 2"),
        (&["solve", "lsq-expsin", "--n", "0"], "n = 0"),
        (&["solve", "seed-expsum", "--n", "ten"], "--n"),
        // A robust loss squares f_scale: one whose square underflows is refused, not a fit
        // reported with rss 0.
        (
            &[
                "solve",
                "mgh-16",
                "--method",
                "lm",
                "--loss",
                "arctan",
                "--f-scale",
                "2.3e-308",
            ],
            "invalid option f_scale = 2.3e-308: must lie between about 1.5e-154 and 1.3e154",
        ),
        // A model's parameter rule in the fit's words, not its term's (`n = 3 … fit_exp_decay`).
        (
            &[
                "fit",
                concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/expsin.csv"),
                "--model",
                "exp-decay",
                "--params",
                "3",
            ],
            "exp-decay with 3 parameters: exp-decay has 2 parameters per exponential",
        ),
        // A tolerance past `{}`'s short form is shown as an exponent, not 300 digits.
        (
            &["solve", "mgh-16", "--method", "lm", "--xtol", "1e-300"],
            "invalid option xtol = 1e-300: must be finite",
        ),
        (&["solve", "seed-expsum", "--method", "newton"], "newton"),
        (&["eval", "seed-expsum", "--repeat", "0"], "--repeat"),
        (
            &["eval", "mgh-1", "--cost", "--backend", "cpu"],
            "--backend sim",
        ),
        (
            &["solve", "seed-expsum", "--n", "100000000000000"],
            "more memory",
        ),
        (
            &["solve", "seed-expsum", "--threads", "1025"],
            "need 1 to 1024",
        ),
        (&["solve", "seed-expsum", "--blocks", "0"], "at least 1"),
        (
            &["solve", "lsq-expsin", "--points", "18446744073709551615"],
            "more memory",
        ),
        // 8 TB of matrix: refused where the data are made, not aborted.
        (&["solve", "quadratic", "--n", "1000000"], "more memory"),
        // Counts and tolerances are refused when parsed, before anything is allocated.
        (
            &["eval", "mgh-1", "--repeat", "18446744073709551615"],
            "must be at most 1000000",
        ),
        (&["eval", "mgh-1", "--repeat", "4294967296"], "--repeat"),
        (&["solve", "seed-expsum", "--gtol", "inf"], "must be finite"),
        (
            &["solve", "seed-expsum", "--gtol", "1e-400"],
            "smallest normal double",
        ),
        (&["solve", "seed-expsum", "--threads", "-32"], "at least 0"),
        (
            &[
                "solve",
                "rosenbrock",
                "--n",
                "3",
                "--method",
                "lbfgsb",
                "--lower",
                "1",
                "--upper",
                "0",
            ],
            "invalid bounds [1, 0] for x[0]: lower > upper",
        ),
        (
            &[
                "solve",
                "rosenbrock",
                "--n",
                "3",
                "--method",
                "lbfgsb",
                "--lower",
                "1,2",
            ],
            "--lower has 2 values for 3 variables",
        ),
        (
            &[
                "solve",
                "rosenbrock",
                "--method",
                "lbfgsb",
                "--upper",
                "nan",
            ],
            "got NaN",
        ),
        (
            &["solve", "rosenbrock", "--lower", "0"],
            "--lower applies to --method lbfgsb, lm and trf only",
        ),
        (
            &["solve", "rosenbrock", "--maxcor", "5"],
            "--maxcor applies to --method lbfgs and lbfgsb only",
        ),
        (
            &["solve", "rosenbrock", "--method", "lbfgs", "--maxcor", "0"],
            "must be at least 1, got 0",
        ),
        (
            &["solve", "rosenbrock", "--method", "lbfgs", "--maxls", "3"],
            "--maxls applies to --method lbfgsb only",
        ),
        (
            &["solve", "rosenbrock", "--method", "lbfgsb", "--maxls", "0"],
            "must be at least 1, got 0",
        ),
        // mgh-21 is ext-rosenbrock's scalar term, not loaded with its residuals.
        (
            &["solve", "mgh-21", "--method", "lm"],
            "this objective is a scalar term: use --method bfgs, lbfgs or lbfgsb",
        ),
        (
            &["solve", "mgh-1", "--method", "lm", "--lower", "0"],
            "x0[0] = -1.2 lies outside its bounds [0, inf]",
        ),
        (
            &[
                "solve", "mgh-1", "--method", "lm", "--lower", "1", "--upper", "1",
            ],
            "invalid bounds [1, 1] for x[0]: least squares needs lower < upper",
        ),
        // Numbers far from 1 in exponent form, not hundreds of digits.
        (
            &[
                "solve",
                "mgh-1",
                "--method",
                "lm",
                "--lower=-1e308",
                "--upper=-1e307",
            ],
            "x0[0] = -1.2 lies outside its bounds [-1e308, -1e307]",
        ),
        // A held variable cannot be moved into the box, so it is refused there.
        (
            &[
                "solve",
                "rosenbrock",
                "--n",
                "4",
                "--method",
                "lbfgsb",
                "--upper",
                "2",
                "--fix",
                "0=5",
            ],
            "x0[0] = 5 lies outside its bounds [-inf, 2], where fixed holds it",
        ),
        // Usage errors keep the lines that say what is wrong.
        (
            &["solve"],
            "the following required arguments were not provided: <PROBLEM>",
        ),
        (
            &["solve", "seed-expsum", "--method", "foo"],
            "[possible values: bfgs, lbfgs, lbfgsb, lm, trf]",
        ),
        (
            &["solve", "seed-expsum", "--metod", "bfgs"],
            "tip: a similar argument exists: '--method'",
        ),
    ];
    for (args, expected) in cases {
        let line = one_line_error(args);
        assert!(
            line.contains(expected),
            "cudamin {args:?}: `{line}` should mention `{expected}`"
        );
    }
}

/// `cudamin solve rosenbrock --n 10 --method lbfgsb --json` with `extra`, as JSON.
fn rosenbrock_10_lbfgsb(extra: &[&str]) -> serde_json::Value {
    let args = [
        "solve",
        "rosenbrock",
        "--n",
        "10",
        "--method",
        "lbfgsb",
        "--json",
    ];
    json(&[&args[..], extra].concat())
}

/// `--maxcor` sets the pairs both limited-memory methods keep: scipy's L-BFGS-B with maxcor 2
/// and 3 (run on cudamin's own values of `f` and `∇f`, scipy 1.17.1) takes these iterations and
/// evaluations, and so does `--method lbfgsb`; L-BFGS's counts move with it too.
#[test]
fn maxcor_sets_the_pairs_kept() {
    // (problem, maxcor, scipy's nit, nfev and f)
    let scipy = [
        ("mgh-7", "2", 33, 40, 2.521424479857103e-10),
        ("mgh-7", "3", 28, 35, 1.6700686118741897e-14),
        ("mgh-35", "2", 23, 33, 0.00351687492533771),
        ("mgh-35", "3", 22, 30, 0.0035168741706264432),
    ];
    for (problem, maxcor, nit, nfev, fun) in scipy {
        let args = ["solve", problem, "--method", "lbfgsb", "--maxcor", maxcor];
        let v = json(&[&args[..], &["--json"]].concat());
        assert_eq!(
            (v["nit"].as_u64(), v["nfev"].as_u64()),
            (Some(nit), Some(nfev)),
            "{args:?}"
        );
        let f = f64_of(&v, "fun");
        assert!((f - fun).abs() <= 1e-8 * fun, "{args:?}: f {f}");
    }
    let lbfgs = |maxcor: &str| {
        let v = json(&[
            "solve", "mgh-7", "--method", "lbfgs", "--maxcor", maxcor, "--json",
        ]);
        v["nit"].as_u64()
    };
    assert_ne!(lbfgs("1"), lbfgs("10"));
}

/// `--maxls` is scipy's maxls: on the built-in Rosenbrock (n = 10, x0 = (−1.2, 1, …)) in
/// [−2, 0.8], one evaluation per search fails at the first search (status 2 after 2
/// evaluations, no iteration), as scipy's L-BFGS-B with maxls 1 does from there
/// (`python tests/scipy/lbfgsb_cases.py`, its `cli:` line).
#[test]
fn maxls_limits_each_line_search() {
    let v = rosenbrock_10_lbfgsb(&["--lower", "-2", "--upper", "0.8", "--maxls", "1"]);
    assert_eq!(
        (&v["status"], &v["nit"], &v["nfev"], &v["message"]),
        (&2.into(), &0.into(), &2.into(), &"ABNORMAL: ".into())
    );
}

/// `--method lbfgsb` with `--lower`/`--upper` on the built-in Rosenbrock (n = 10, x0 =
/// (−1.2, 1, …)) in [−2, 0.8]: scipy's L-BFGS-B (tests/scipy/lbfgsb_cases.py,
/// rosenbrock-10-box) ends at f = 6.001016394619248 after 32 iterations and 37 evaluations,
/// x₀ at its upper bound; `active_mask` says so. `grad_inf_norm` is the projected gradient's,
/// which L-BFGS-B's gtol test reads (∂f/∂x₀ itself is below −1 there). Held at that bound, x₀
/// is not active (as trf reports a held variable).
#[test]
fn lbfgsb_with_bounds_reports_scipys_minimum_and_the_active_set() {
    let v = rosenbrock_10_lbfgsb(&["--lower", "-2", "--upper", "0.8"]);
    assert_eq!(v["method"], "lbfgsb");
    assert_eq!(v["status"], 0);
    let fun = v["fun"].as_f64().unwrap();
    assert!((fun - 6.001016394619248).abs() <= 1e-12 * fun, "{fun}");
    assert_eq!(
        (v["nit"].as_u64(), v["nfev"].as_u64()),
        (Some(32), Some(37))
    );
    let mask: Vec<i64> = (v["active_mask"].as_array().unwrap().iter())
        .map(|m| m.as_i64().unwrap())
        .collect();
    assert_eq!(mask, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    // ∇f of Σ 100(xᵢ₊₁ − xᵢ²)² + (1 − xᵢ)², projected: x₀ is held by its bound.
    let x = xs(&v);
    let partial = |i: usize| {
        let mut g = 0.0;
        if i + 1 < x.len() {
            g += -400.0 * x[i] * (x[i + 1] - x[i] * x[i]) - 2.0 * (1.0 - x[i]);
        }
        if i > 0 {
            g += 200.0 * (x[i] - x[i - 1] * x[i - 1]);
        }
        g
    };
    assert!(partial(0) < -1.0, "{}", partial(0));
    let projected = (1..10).map(|i| partial(i).abs()).fold(0.0, f64::max);
    let norm = f64_of(&v, "grad_inf_norm");
    assert!(
        (norm - projected).abs() <= 1e-6 * projected,
        "{norm} {projected}"
    );
    let held = rosenbrock_10_lbfgsb(&["--lower", "-2", "--upper", "0.8", "--fix", "0=0.8"]);
    assert_eq!(held["status"], 0);
    assert!((f64_of(&held, "fun") - fun).abs() <= 1e-8 * fun);
    assert_eq!(held["active_mask"][0], 0);
    assert_eq!(held["fixed"], serde_json::json!([0]));
    let unbounded = json(&[
        "solve",
        "rosenbrock",
        "--n",
        "10",
        "--method",
        "lbfgs",
        "--json",
    ]);
    assert!(unbounded.get("active_mask").is_none());
}

/// Bounded ext-rosenbrock at n = 10⁵ (past the length where the vector passes go parallel),
/// x ≤ 0.9: scipy 1.17.1's L-BFGS-B with an analytic gradient (`benches/lbfgsb_peers.py --n
/// 100000`) takes 30 iterations and 45 evaluations to f = 500 with 50 000 variables at the
/// bound; so does cudamin's.
#[test]
fn lbfgsb_at_scale_reports_scipys_minimum_and_the_active_set() {
    let v = json(&[
        "solve",
        "ext-rosenbrock",
        "--n",
        "100000",
        "--method",
        "lbfgsb",
        "--upper",
        "0.9",
        "--json",
    ]);
    assert_eq!(v["status"], 0, "{}", v["message"]);
    assert_eq!(
        (v["nit"].as_u64(), v["nfev"].as_u64()),
        (Some(30), Some(45))
    );
    let fun = v["fun"].as_f64().unwrap();
    assert!((fun - 500.0).abs() <= 1e-8 * 500.0, "{fun}");
    let active = (v["active_mask"].as_array().unwrap().iter())
        .filter(|m| m.as_i64() != Some(0))
        .count();
    assert_eq!(active, 50_000);
}

/// A list or bound that starts with a minus sign is a value, not a flag: `--lower -inf` is no
/// lower bound (the same solve as none), `--lower -2,-2,…` the same as `--lower -2`, and
/// `--p0 -1,…` the same start as `--p0=-1,…`.
#[test]
fn values_that_start_with_a_minus_sign_are_values() {
    let same = |a: &serde_json::Value, b: &serde_json::Value| {
        assert_eq!(
            (&a["status"], &a["nit"], &a["fun"], &a["x"]),
            (&b["status"], &b["nit"], &b["fun"], &b["x"])
        );
    };
    same(
        &rosenbrock_10_lbfgsb(&["--lower", "-inf", "--upper", "0.8"]),
        &rosenbrock_10_lbfgsb(&["--upper", "0.8"]),
    );
    let twos = ["-2"; 10].join(",");
    same(
        &rosenbrock_10_lbfgsb(&["--lower", &twos, "--upper", "0.8"]),
        &rosenbrock_10_lbfgsb(&["--lower", "-2", "--upper", "0.8"]),
    );
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/expsin.csv");
    let fit = |p0: &[&str]| {
        let args = ["fit", data, "--model", "poly", "--params", "3", "--json"];
        json(&[&args[..], p0].concat())
    };
    let spaced = fit(&["--p0", "-1,0.5,-0.25"]);
    assert_eq!(spaced["success"], true, "{spaced}");
    same(&spaced, &fit(&["--p0=-1,0.5,-0.25"]));
}

#[test]
fn explicit_cuda_backend_without_a_device_is_a_one_line_error() {
    let line = one_line_error(&["solve", "seed-expsum", "--n", "10", "--backend", "cuda"]);
    if cfg!(feature = "cuda") {
        assert!(
            line.contains("no CUDA device") || line.contains("GPU kernels not built"),
            "{line}"
        );
    } else {
        assert!(line.contains("--features cuda"), "{line}");
    }
}

#[test]
fn auto_backend_reports_why_it_chose_the_cpu() {
    let v = json(&["solve", "seed-expsum", "--n", "10", "--json"]);
    assert_eq!(v["backend"], "cpu");
    let reason = v["backend_reason"].as_str().unwrap();
    let expected = if cfg!(feature = "cuda") {
        "no CUDA device"
    } else {
        "not compiled in"
    };
    assert!(reason.contains(expected), "{reason}");
}

#[test]
fn info_reports_the_embedded_ptx_and_no_gpu() {
    let v = json(&["info", "--json"]);
    assert_eq!(v["ptx_embedded"], true);
    assert_eq!(v["ptx_target"], "sm_70");
    let kernels: Vec<&str> = v["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    for kernel in [
        "seed_expsum_value",
        "seed_expsum_gradient_forward",
        "cudamin_sum_partial_rows",
    ] {
        assert!(
            kernels.contains(&kernel),
            "{kernel} missing from {kernels:?}"
        );
    }
    assert_eq!(v["cuda_feature"], cfg!(feature = "cuda"));
    assert_eq!(v["gpu"], false);
    assert!(!v["gpu_reason"].as_str().unwrap().is_empty());
}

#[test]
fn list_names_every_builtin() {
    let v = json(&["list", "--json"]);
    let names: Vec<&str> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for name in [
        "seed-expsum",
        "ext-rosenbrock",
        "rosenbrock",
        "ext-powell",
        "lsq-expsin",
        "fit-expsin",
        "quadratic",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    // Each size rule reads as one sentence: one default per count.
    let listed = cudamin(&["list"]);
    let text = String::from_utf8(listed.stdout).unwrap();
    let line = text.lines().find(|l| l.contains("data points")).unwrap();
    assert!(
        line.contains("n >= 2 parameters (default 16); data points: --points, default 100000"),
        "{line}"
    );
    assert!(
        text.lines().all(|l| l.matches("(default").count() <= 1),
        "{text}"
    );
}

#[test]
fn eval_reports_value_gradient_and_timings() {
    let v = json(&["eval", "rosenbrock", "--n", "10", "--repeat", "3", "--json"]);
    // scipy.optimize.rosen at (−1.2, 1, …) with n = 10 is 2057 (problems.md).
    assert_eq!(f64_of(&v, "fun"), 2057.0);
    for timing in ["value_s", "grad_s", "value_and_grad_s"] {
        assert!(f64_of(&v, timing) > 0.0, "{timing}");
    }
    assert_eq!(v["repeat"], 3);
}

/// The cost report counts each pass's kernels on the simulator. lsq-expsin's exact gradient
/// reads its data once and touches no local memory; a least-squares problem adds the factor
/// pass and an LM iteration's model.
#[test]
fn eval_cost_counts_each_pass_on_the_simulator() {
    let cost = |args: &[&str]| {
        let cost = ["eval", "--backend", "sim", "--cost", "--json"];
        json(&[&cost[..], args].concat())["cost"].clone()
    };
    let lsq = cost(&["lsq-expsin", "--points", "2048"]);
    let passes = lsq["passes"].as_array().unwrap();
    let kernel = |name: &str| {
        let found = passes.iter().find(|p| p["kernel"] == name);
        found.unwrap_or_else(|| panic!("{name} in {lsq}")).clone()
    };
    let gradient = kernel("lsq_expsin_gradient_exact");
    assert_eq!(gradient["pass"], "value_and_gradient");
    let data = f64_of(&gradient, "data_bytes_per_point");
    assert_eq!(data, 16.0 * 8.0, "16 columns of f64");
    assert!(
        f64_of(&gradient, "dram_bytes_per_point") <= 1.25 * data,
        "{gradient}"
    );
    for name in ["lsq_expsin_value", "lsq_expsin_gradient_exact"] {
        let k = kernel(name);
        assert_eq!(f64_of(&k, "local_bytes_per_point"), 0.0, "{k}");
        assert!(f64_of(&k, "instructions_per_point") > 0.0, "{k}");
        assert!(f64_of(&k, "modelled_h100_ms_at_1e7") > 0.0, "{k}");
    }
    assert!(lsq["modelled_h100_lm_iteration_ms_at_1e7"].is_null());
    let squares = cost(&["mgh-26"]);
    let factor = squares["passes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["pass"] == "factor" && p["kernel"] == "mgh26_triangle_exact");
    assert!(factor, "{squares}");
    assert!(f64_of(&squares, "modelled_h100_lm_iteration_ms_at_1e7") > 0.0);
}

#[test]
fn results_are_bit_identical_for_any_thread_count() {
    let run = |threads: &str| {
        let v = json_in(
            &[("RAYON_NUM_THREADS", threads)],
            &[
                "solve",
                "lsq-expsin",
                "--n",
                "6",
                "--points",
                "50000",
                "--grad",
                "central",
                "--json",
            ],
        );
        (
            v["fun"].as_f64().unwrap().to_bits(),
            xs(&v).iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            v["nit"].clone(),
        )
    };
    assert_eq!(run("1"), run("2"));
}

#[test]
fn ext_rosenbrock_1000_central_reaches_1e_8() {
    let v = json(&[
        "solve",
        "ext-rosenbrock",
        "--n",
        "1000",
        "--grad",
        "central",
        "--json",
    ]);
    assert_eq!(v["status"], 0);
    assert!(f64_of(&v, "fun") < 1e-8, "{}", v["fun"]);
}

#[test]
fn lbfgs_solves_a_million_variable_ext_rosenbrock() {
    let v = json(&[
        "solve",
        "ext-rosenbrock",
        "--n",
        "1000000",
        "--method",
        "lbfgs",
        "--json",
    ]);
    assert_eq!(v["status"], 0, "{}", v["message"]);
    // Stopping at ‖∇f‖∞ <= 1e-5 leaves each of the 5·10⁵ pairs within ~1e-10 of its minimum 0.
    assert!(f64_of(&v, "fun") / 1e6 < 1e-10, "{}", v["fun"]);
}

/// Σ (y − m(θ_true, t))²: the squared noise the data were generated with, computed here in
/// plain Rust from the data, independently of the kernels.
fn lsq_expsin_noise_floor(p: usize, points: usize) -> f64 {
    let theta = lsq_expsin_theta_true(p);
    let (data, rows) = lsq_expsin_data(p, points).unwrap();
    let (t, y) = data.split_at(rows);
    t.iter()
        .zip(y)
        .map(|(&t, &y)| {
            let model = theta[0] * (-theta[1] * t).exp()
                + (2..p).map(|k| theta[k] * (k as f64 * t).sin()).sum::<f64>();
            (y - model).powi(2)
        })
        .sum()
}

/// The fit of 16 parameters recovers θ: with the exact gradient at a million points, and with
/// central differences, 33 evaluations a gradient, at a hundred thousand.
#[test]
fn lsq_expsin_recovers_theta_at_scale() {
    let p = 16;
    for (grad, points) in [("exact", 1_000_000), ("central", 100_000)] {
        let v = json(&[
            "solve",
            "lsq-expsin",
            "--n",
            &p.to_string(),
            "--points",
            &points.to_string(),
            "--grad",
            grad,
            "--json",
        ]);
        // Status 2 is expected once the FD truncation error exceeds gtol at this data size.
        let status = v["status"].as_i64().unwrap();
        assert!(
            status == 0 || (grad == "central" && status == 2),
            "{grad}: status {status}: {}",
            v["message"]
        );
        let floor = lsq_expsin_noise_floor(p, points);
        assert!(
            f64_of(&v, "fun") <= floor,
            "{grad}: fun {} above f(θ_true) = {floor}",
            v["fun"]
        );
        let theta = xs(&v);
        for (k, (got, want)) in theta.iter().zip(lsq_expsin_theta_true(p)).enumerate() {
            assert!(
                (got - want).abs() < 1e-2,
                "{grad}: θ{k} = {got}, true {want}"
            );
        }
    }
}

/// A reader that goes away (`cudamin solve ... | head -c 100`) ends cudamin quietly, with the
/// status a shell gives SIGPIPE; a full disk is a one-line error naming stdout.
#[test]
fn a_closed_or_full_stdout_ends_cleanly() {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cudamin"))
        .args(["solve", "seed-expsum", "--n", "200000", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cudamin");
    let mut first = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The pipe's read end is dropped with the handle above.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("error"),
        "{stderr}"
    );

    let full = std::fs::File::create("/dev/full").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cudamin"))
        .args(["list"])
        .stdout(full)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("writing to stdout"), "{stderr}");

    // A stderr that cannot be written still gets the error's exit status (not a panic's 101).
    for (args, code) in [
        (&["solve", "no-such-problem"][..], 1),
        (&["--no-such-flag"], 2),
    ] {
        let full = std::fs::File::create("/dev/full").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_cudamin"))
            .args(args)
            .stderr(full)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}");
    }
}

/// Issue 9's false convergence: on lsq-expsin, forward differences reach ‖g‖∞ <= gtol on a
/// gradient whose own error (checked against the exact one) is far larger, so the solve is
/// not a success; the default exact gradient converges.
#[test]
fn a_noisy_finite_difference_gradient_is_not_reported_as_converged() {
    let solve = |grad: &str| {
        json(&[
            "solve",
            "lsq-expsin",
            "--points",
            "20000",
            "--grad",
            grad,
            "--json",
        ])
    };
    let forward = solve("forward");
    // The stopping test passed: only the error check stands between this and "success".
    assert!(f64_of(&forward, "grad_inf_norm") <= 1e-5);
    assert_eq!(forward["status"], 2, "{}", forward["message"]);
    assert_eq!(forward["success"], false);
    assert_eq!(
        forward["message"],
        "Desired error not necessarily achieved due to precision loss."
    );
    assert_eq!(forward["jac_error"]["reference"], "exact");
    let estimate = forward["jac_error"]["estimate"].as_f64().unwrap();
    assert!(estimate > 1e-5, "forward error estimate {estimate:e}");

    let exact = solve("exact");
    assert_eq!(exact["status"], 0, "{}", exact["message"]);
    assert_eq!(exact["grad"], "exact");
    assert!(exact["jac_error"].is_null());
    assert!(f64_of(&exact, "grad_inf_norm") <= 1e-5);
}

/// A negative number is a value, refused in the same words whether it follows its option or
/// is joined to it with `=`.
#[test]
fn negative_numbers_are_values_refused_alike() {
    for (option, value, expected) in [
        ("--n", "-5", "must be at least 0, got -5"),
        ("--points", "-1", "must be at least 0, got -1"),
        ("--gtol", "-1", "must be positive, got -1"),
        ("--maxiter", "-3", "must be at least 0, got -3"),
        ("--blocks", "-7", "must be at least 0, got -7"),
    ] {
        let apart = one_line_error(&["solve", "lsq-expsin", option, value]);
        let joined = one_line_error(&["solve", "lsq-expsin", &format!("{option}={value}")]);
        assert_eq!(apart, joined, "{option} {value}");
        assert!(
            apart.contains(expected) && apart.contains(option),
            "{apart}"
        );
    }
}

/// Under an address-space limit (`ulimit -v`), memory runs out cleanly: one line naming what
/// could not be allocated, exit status 1, never the allocator's abort. The limit is set by the
/// shell for the child alone.
#[test]
fn running_out_of_memory_is_a_one_line_error() {
    let limited = |kib: u32, args: &[&str]| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_cudamin"))
            .args(args)
            .output()
            .expect("run cudamin under sh")
    };
    for (args, expected) in [
        // BFGS beyond its dense limit keeps a pair of 2·10⁷ values per iteration, for the ~37
        // iterations this takes.
        (
            &["solve", "ext-rosenbrock", "--n", "10000000", "--json"][..],
            "keeps every curvature pair",
        ),
        // A and its Cholesky factor: 1.15 GB each, refused before either is made, naming
        // the limit.
        (
            &["eval", "quadratic", "--n", "12000"][..],
            "left under the address-space limit (ulimit -v)",
        ),
    ] {
        let out = limited(1_500_000, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        let last = stderr.trim_end().lines().last().unwrap_or("");
        assert!(
            last.starts_with("error: ") && last.contains(expected),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked") && !stderr.contains("memory allocation of"));
    }
    // The first user's case: 7 GB under a 4 GB limit. Filling A took 40 s before the
    // Cholesky factor's allocation failed; the footprint is now checked first. Refused at
    // once: 10 s is far below the 40 s of work and far above a slow machine's start.
    let start = std::time::Instant::now();
    let out = limited(4_000_000, &["eval", "quadratic", "--n", "21000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("7.058 GB needed") && stderr.contains("address-space limit"),
        "{stderr}"
    );
    assert!(start.elapsed().as_secs() < 10, "{:?}", start.elapsed());
    // Past the memory the machine has (here 16 TB for A and its factor), refused before
    // anything is allocated, with the estimate and the room left: Linux would have granted
    // the allocation and killed the process when it touched the pages.
    let error = one_line_error(&["solve", "quadratic", "--n", "1000000"]);
    assert!(
        error.contains("16000.088 GB needed") && error.contains("GB left under"),
        "{error}"
    );
}

/// `--method trf` runs scipy's trf without bounds, with `--x-scale`: mgh-8 (Bard) ends as
/// scipy's `least_squares(method='trf')` does (tests/scipy/trf_unbounded.py: status 1, 6
/// evaluations, cost 0.0041074386532906, `fun` twice that), with x_scale 1 and 'jac' alike.
/// `--x-scale` is trf's alone.
#[test]
fn method_trf_runs_without_bounds() {
    for scale in [&[][..], &["--x-scale", "jac"]] {
        let args = [&["solve", "mgh-8", "--method", "trf", "--json"][..], scale].concat();
        let v = json(&args);
        assert_eq!(v["method"], "trf", "{scale:?}");
        assert_eq!(
            (v["status"].as_i64(), v["nfev"].as_u64()),
            (Some(1), Some(6)),
            "{scale:?}"
        );
        let fun = f64_of(&v, "fun");
        assert!((fun - 2.0 * 0.004107438653290614).abs() < 1e-12, "{fun}");
    }
    let error = one_line_error(&["solve", "mgh-8", "--method", "lm", "--x-scale", "jac"]);
    assert!(
        error.contains("--x-scale applies to --method trf only"),
        "{error}"
    );
    let error = one_line_error(&["solve", "mgh-8", "--method", "trf", "--x-scale", "1,-2,1"]);
    assert!(error.contains("each scale must be positive"), "{error}");
}

mod fuzz {
    use super::cudamin;
    use proptest::prelude::*;

    /// Values for numeric options: small valid ones (so that runs stay short), zero, negatives,
    /// non-numbers, non-finite, underflowing and overflowing numbers.
    const VALUES: &[&str] = &[
        "-1",
        "0",
        "1",
        "2",
        "7",
        "64",
        "1e-3",
        "1e-400",
        "inf",
        "nan",
        "x",
        "18446744073709551616",
    ];
    const OPTIONS: &[&str] = &[
        "--n",
        "--points",
        "--gtol",
        "--maxiter",
        "--repeat",
        "--threads",
        "--blocks",
    ];
    const CHOICES: &[(&str, &[&str])] = &[
        ("--method", &["bfgs", "lbfgs", "newton"]),
        ("--grad", &["exact", "forward", "central", "none"]),
        ("--backend", &["auto", "cpu", "cuda", "tpu"]),
    ];

    fn arguments() -> impl Strategy<Value = Vec<String>> {
        let command = prop::sample::select(&["solve", "eval", "list", "info", "fit"][..]);
        let problem = prop::sample::select(
            &[
                "seed-expsum",
                "ext-rosenbrock",
                "mgh-1",
                "quadratic",
                "lsq-expsin",
                "nope",
            ][..],
        );
        let numeric = (
            prop::sample::select(OPTIONS),
            prop::sample::select(VALUES),
            any::<bool>(),
        )
            .prop_map(|(option, value, joined)| {
                if joined {
                    vec![format!("{option}={value}")]
                } else {
                    vec![option.to_owned(), value.to_owned()]
                }
            });
        let choice = prop::sample::select(CHOICES).prop_flat_map(|(option, values)| {
            prop::sample::select(values).prop_map(move |v| vec![option.to_owned(), v.to_owned()])
        });
        let flag = prop::sample::select(&["--json", "--help", "--bogus"][..])
            .prop_map(|f| vec![f.to_owned()]);
        let option = prop_oneof![4 => numeric, 2 => choice, 1 => flag];
        (command, problem, prop::collection::vec(option, 0..4)).prop_map(
            |(command, problem, options)| {
                let mut args = vec![command.to_owned(), problem.to_owned()];
                args.extend(options.into_iter().flatten());
                // lsq-expsin's default 10⁵ points would make a debug-build solve slow.
                if problem == "lsq-expsin" && !args.iter().any(|a| a.starts_with("--points")) {
                    args.extend(["--points".to_owned(), "200".to_owned()]);
                }
                args
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever the arguments: exit status 0, 1 or 2, never a panic, and a failure says
        /// why on exactly one line of stderr.
        #[test]
        fn any_arguments_end_in_a_status_and_at_most_one_error_line(args in arguments()) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = cudamin(&args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            prop_assert!(matches!(code, Some(0..=2)), "cudamin {:?}: status {:?}: {}", args, code, stderr);
            prop_assert!(!stderr.contains("panicked"), "cudamin {:?} panicked: {}", args, stderr);
            if code != Some(0) {
                prop_assert_eq!(stderr.lines().count(), 1, "cudamin {:?}: {}", args, stderr);
            }
        }
    }
}
