//! One value and one forward-difference gradient evaluation of the large built-ins, on the CPU
//! (and on the GPU with `--features cuda` when a device answers). After the run it prints each
//! problem's gradient/value time ratio from criterion's medians next to its target:
//! the per-term gradient should cost a small multiple of a value, not n of them.
//!
//! `cargo bench --bench kernels`

use criterion::{Criterion, criterion_group};
use cudamin::{Backend, BackendChoice, FiniteDifference, problems};
use std::time::Duration;

/// (problem, n, points, target for grad_s / value_s) from the kernel-authoring issue.
const CASES: &[(&str, usize, Option<usize>, f64)] = &[
    ("seed-expsum", 1_000_000, None, 3.0),
    ("ext-rosenbrock", 1_000_000, None, 4.0),
    ("lsq-expsin", 16, Some(1_000_000), 6.0),
];

fn backends() -> Vec<Backend> {
    let mut found = vec![Backend::Cpu];
    match cudamin::backend(BackendChoice::Cuda) {
        Ok((gpu, _)) => found.push(gpu),
        Err(why) => eprintln!("GPU group skipped: {why}"),
    }
    found
}

fn evaluations(c: &mut Criterion) {
    for backend in backends() {
        for &(name, n, points, _) in CASES {
            let instance = problems::find(name)
                .unwrap()
                .instantiate(&backend, Some(n), points)
                .unwrap();
            let mut evaluator = instance.evaluator;
            let x = instance.x0;
            let mut g = vec![0.0; x.len()];
            let mut group = c.benchmark_group(format!("{}/{name}", backend.name()));
            group
                .sample_size(10)
                .measurement_time(Duration::from_secs(4));
            group.bench_function("value", |b| b.iter(|| evaluator.value(&x).unwrap()));
            group.bench_function("gradient_forward", |b| {
                b.iter(|| {
                    evaluator
                        .gradient(&x, FiniteDifference::Forward, &mut g)
                        .unwrap()
                })
            });
            group.finish();
        }
    }
}

/// criterion's median estimate for one benchmark, in nanoseconds.
fn median_ns(group: &str, function: &str) -> Option<f64> {
    let path = format!("target/criterion/{group}/{function}/new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let estimates: serde_json::Value = serde_json::from_str(&text).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}

fn report_ratios() {
    println!("\ngradient / value (forward differences, criterion medians):");
    for backend in ["cpu", "cuda"] {
        for &(name, n, points, target) in CASES {
            let group = format!("{backend}/{name}").replace('/', "_");
            let (Some(value), Some(gradient)) = (
                median_ns(&group, "value"),
                median_ns(&group, "gradient_forward"),
            ) else {
                continue;
            };
            let ratio = gradient / value;
            let verdict = if ratio <= target { "meets" } else { "MISSES" };
            let size = points.map_or(format!("n = {n}"), |p| format!("n = {n}, {p} points"));
            println!(
                "  {backend:<4} {name:<15} {size:<24} value {:>9.3} ms  gradient {:>9.3} ms  ratio {ratio:>5.2}  {verdict} target <= {target}",
                value / 1e6,
                gradient / 1e6
            );
        }
    }
}

criterion_group!(benches, evaluations);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios();
}
