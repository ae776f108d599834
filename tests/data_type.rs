//! Data stored as f32 (`TermProblem::stored_as`, `--data-dtype f32`): every term reads the f64
//! each value widens to, so a problem stored as f32 gives, on each backend, the bits of the
//! same problem given the rounded values as f64; the device holds half the bytes.

mod common;

use common::cli::{json, one_line_error};
use cudamin::kernels::SumOfSquares;
use cudamin::kernels::terms::LsqExpSin;
use cudamin::kernels::terms::fit::ExpSin;
use cudamin::problems::{find, lsq_expsin_data};
use cudamin::{Backend, BackendChoice, DataType, Evaluation, Evaluator, Gradient};
use cudamin::{LmOptions, TermObjective, TermProblem};

/// The PTX simulator: the GPU's kernels, run here.
fn sim() -> Backend {
    cudamin::backend(BackendChoice::Simulated).unwrap().0
}

/// `values`, each rounded to the nearest f32 and widened back.
fn rounded(values: &[f64]) -> Vec<f64> {
    values.iter().map(|&v| f64::from(v as f32)).collect()
}

/// The value and exact gradient of `evaluator` at `x`, as bits.
fn value_and_gradient(evaluator: &mut dyn Evaluator, x: &[f64]) -> Vec<u64> {
    let mut g = vec![0.0; x.len()];
    let evaluation = Evaluation::Gradient {
        gradient: Gradient::Exact,
        g: &mut g,
        value: true,
    };
    let f = evaluator.evaluate(x, evaluation).unwrap();
    let value = evaluator.evaluate(x, Evaluation::Value).unwrap();
    assert_eq!(f.to_bits(), value.to_bits(), "one pass or two, one value");
    std::iter::once(f).chain(g).map(f64::to_bits).collect()
}

/// lsq-expsin reads each point's 16 columns in place (a strided row, dot products over it):
/// stored as f32 it gives the bits of the rounded table on the CPU and on the simulator, and
/// the two backends agree to rounding.
#[test]
fn a_dense_fit_stored_as_f32_is_the_rounded_table_on_each_backend() {
    let (n, points) = (16, 700);
    let (values, rows) = lsq_expsin_data(n, points).unwrap();
    let wide = TermProblem::<LsqExpSin>::with_data(n, rounded(&values), rows).unwrap();
    let narrow = TermProblem::<LsqExpSin>::with_data(n, values, rows)
        .unwrap()
        .stored_as(DataType::F32)
        .unwrap();
    assert_eq!(
        (wide.data_type(), narrow.data_type()),
        (DataType::F64, DataType::F32)
    );
    let x: Vec<f64> = (0..n).map(|j| 0.5 - 0.03 * j as f64).collect();
    let mut each = Vec::new();
    for backend in [Backend::Cpu, sim()] {
        let of_wide = value_and_gradient(backend.load(wide.clone()).unwrap().as_mut(), &x);
        let of_narrow = value_and_gradient(backend.load(narrow.clone()).unwrap().as_mut(), &x);
        assert_eq!(of_wide, of_narrow, "{}", backend.name());
        each.push(of_narrow);
    }
    for (cpu, gpu) in each[0].iter().zip(&each[1]) {
        let (cpu, gpu) = (f64::from_bits(*cpu), f64::from_bits(*gpu));
        assert!(
            (cpu - gpu).abs() <= 1e-12 * cpu.abs().max(1.0),
            "{cpu} vs {gpu}"
        );
    }
}

/// The simulator's device holds the table at four bytes a value: the f32 problem's upload is
/// half the f64 one's, to the word.
#[test]
fn the_device_holds_f32_data_at_half_the_bytes() {
    let (n, points) = (16, 301);
    let (values, rows) = lsq_expsin_data(n, points).unwrap();
    let problem = TermProblem::<LsqExpSin>::with_data(n, values, rows).unwrap();
    let upload = |problem: TermProblem<LsqExpSin>| {
        let backend = sim();
        let before = backend.traffic().unwrap();
        let _loaded = backend.load(problem).unwrap();
        (backend.traffic().unwrap() - before).words_to_device
    };
    let wide = upload(problem.clone());
    let narrow = upload(problem.stored_as(DataType::F32).unwrap());
    // n · points values: 8 bytes each, or two to a word (an odd count rounds up).
    assert_eq!(
        wide - narrow,
        (n * points - (n * points).div_ceil(2)) as u64
    );
}

/// Levenberg–Marquardt on data stored as f32 takes the steps it takes on the rounded table:
/// the same parameters, cost and evaluation count, to the bit, on the CPU and the simulator;
/// and the fit moves from the f64 data's by no more than the rounding of the data explains.
#[test]
fn least_squares_on_f32_data_is_the_fit_of_the_rounded_table() {
    let (p, points) = (6, 400);
    let (t, y): (Vec<f64>, Vec<f64>) = (0..points)
        .map(|j| {
            let t = 0.025 * j as f64;
            let y = 2.0 * (-0.7 * t).exp() + 0.4 * (2.0 * t).sin() - 0.3 * (3.0 * t).sin()
                + 0.2 * (4.0 * t).sin()
                - 0.1 * (5.0 * t).sin()
                + 0.01 * (17.0 * t).cos();
            (t, y)
        })
        .unzip();
    let weights: Vec<f64> = (0..points).map(|j| 1.0 / (1.0 + 0.1 * j as f64)).collect();
    let table = [t, y, weights].concat();
    let problem = |values: Vec<f64>| {
        TermProblem::<SumOfSquares<ExpSin>>::with_data(p, values, points).unwrap()
    };
    let narrow = problem(table.clone()).stored_as(DataType::F32).unwrap();
    let fit = |backend: &Backend, problem: TermProblem<SumOfSquares<ExpSin>>| {
        let residuals = backend.load_least_squares(problem).unwrap();
        let mut objective = TermObjective::new(residuals, Gradient::Exact);
        let result = cudamin::least_squares(&mut objective, &[1.0; 6], &LmOptions::default());
        let result = result.unwrap();
        assert!(result.success, "{}", result.message);
        result
    };
    let full = fit(&Backend::Cpu, problem(table.clone()));
    for backend in [Backend::Cpu, sim()] {
        let (a, b) = (
            fit(&backend, narrow.clone()),
            fit(&backend, problem(rounded(&table))),
        );
        let bits = |r: &cudamin::LeastSquaresResult| {
            let x: Vec<u64> = r.x.iter().map(|v| v.to_bits()).collect();
            (x, r.cost.to_bits(), r.nfev)
        };
        assert_eq!(bits(&a), bits(&b), "{}", backend.name());
        for (got, want) in a.x.iter().zip(&full.x) {
            assert!((got - want).abs() < 1e-5, "{got} vs {want}");
        }
    }
}

/// A value beyond f32's range is refused, named by its column and row.
#[test]
fn a_value_beyond_f32s_range_is_refused_by_its_place() {
    let mut values = vec![1.0; 30];
    values[17] = -4e38;
    let error = TermProblem::<SumOfSquares<ExpSin>>::with_data(3, values, 10)
        .unwrap()
        .stored_as(DataType::F32)
        .unwrap_err();
    let shown = error.to_string();
    assert!(
        shown.ends_with(
            "data: column 1, row 7 is -400000000000000000000000000000000000000, beyond f32's \
             range; store the data as f64"
        ),
        "{shown}"
    );
}

/// A built-in data problem takes the type; one without data points refuses it.
#[test]
fn built_in_problems_store_their_points_as_asked() {
    let lsq = find("lsq-expsin").unwrap();
    let instance = lsq
        .instantiate_as(&Backend::Cpu, Some(8), Some(100), DataType::F32)
        .unwrap();
    assert_eq!(instance.data_bytes, 8 * 100 * 4);
    let refused =
        find("quadratic")
            .unwrap()
            .instantiate_as(&Backend::Cpu, Some(4), None, DataType::F32);
    let shown = refused.err().map(|e| e.to_string());
    assert_eq!(
        shown.as_deref(),
        Some("quadratic has no data points to store as f32: drop --data-dtype")
    );
}

/// `--data-dtype f32` on the command line: `fit` gives the fit of the rounded file, `eval
/// --cost` counts four bytes a value, and a problem without points says why it refuses.
#[test]
fn the_command_line_stores_data_as_asked() {
    let dir = std::env::temp_dir().join(format!("cudamin-data-type-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rows: Vec<(f64, f64)> = (0..60)
        .map(|i| {
            let x = 0.1 * i as f64 + 1.0 / 3.0;
            (x, 2.5 * (-0.4 * x).exp() + 0.1 * (x * 7.0).sin())
        })
        .collect();
    let write = |name: &str, round: bool| {
        let path = dir.join(name);
        let keep = |v: f64| if round { f64::from(v as f32) } else { v };
        let lines: String = (rows.iter())
            .map(|&(x, y)| format!("{:e},{:e}\n", keep(x), keep(y)))
            .collect();
        std::fs::write(&path, format!("x,y\n{lines}")).unwrap();
        path
    };
    let (full, narrowed) = (write("full.csv", false), write("rounded.csv", true));
    let fit = |path: &std::path::Path, extra: &[&str]| {
        let mut args = vec!["fit", path.to_str().unwrap(), "--model", "exp-decay"];
        args.extend(extra);
        args.extend(["--backend", "cpu", "--json"]);
        json(&args)
    };
    let (a, b) = (fit(&full, &["--data-dtype", "f32"]), fit(&narrowed, &[]));
    assert_eq!(a["x"], b["x"], "the fit of the rounded file");
    assert_eq!(a["rss"], b["rss"]);
    let cost = json(&[
        "eval",
        "fit-expsin",
        "--n",
        "4",
        "--points",
        "64",
        "--backend",
        "sim",
        "--cost",
        "--json",
        "--data-dtype",
        "f32",
    ]);
    let passes = cost["cost"]["passes"].as_array().unwrap();
    assert!(!passes.is_empty());
    for pass in passes {
        assert_eq!(pass["data_bytes_per_point"], 12.0, "{pass}");
    }
    let refused = one_line_error(&["eval", "seed-expsum", "--data-dtype", "f32"]);
    assert!(
        refused.contains("seed-expsum has no data points to store as f32: drop --data-dtype"),
        "{refused}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
