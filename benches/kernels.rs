//! One value, one gradient (forward differences, and exact), and both from one pass
//! (`value_and_gradient`) of the large built-ins, on the CPU (and on the GPU with
//! `--features cuda` when a device answers). After the run it prints each problem's
//! gradient/value time ratio from criterion's medians next to its target (the per-term gradient
//! should cost a small multiple of a value, not n of them), and what the fused pass saves
//! against a value then a gradient.
//!
//! `cargo bench --bench kernels`

mod common;

use common::median_ns;
use criterion::{Criterion, criterion_group};
use cudamin::{Backend, BackendChoice, Gradient, problems};
use std::time::Duration;

/// (problem, n, points, target for forward-difference grad_s / value_s from the
/// kernel-authoring issue, target for exact grad_s / value_s from the exact-gradients issue).
const CASES: &[(&str, usize, Option<usize>, f64, f64)] = &[
    ("seed-expsum", 1_000_000, None, 3.0, 2.0),
    ("ext-rosenbrock", 1_000_000, None, 4.0, 2.0),
    ("lsq-expsin", 16, Some(1_000_000), 6.0, 3.0),
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
        for &(name, n, points, _, _) in CASES {
            let instance = problems::find(name)
                .unwrap()
                .instantiate(&backend, Some(n), points)
                .unwrap();
            let mut evaluator = instance.evaluator.into_sum();
            let x = instance.x0;
            let mut g = vec![0.0; x.len()];
            let mut group = c.benchmark_group(format!("{}/{name}", backend.name()));
            group
                .sample_size(10)
                .measurement_time(Duration::from_secs(4));
            group.bench_function("value", |b| b.iter(|| evaluator.value(&x).unwrap()));
            for (name, gradient) in [("forward", Gradient::Forward), ("exact", Gradient::Exact)] {
                group.bench_function(format!("gradient_{name}"), |b| {
                    b.iter(|| evaluator.gradient(&x, gradient, &mut g).unwrap())
                });
                group.bench_function(format!("value_and_gradient_{name}"), |b| {
                    b.iter(|| evaluator.value_and_gradient(&x, gradient, &mut g).unwrap())
                });
            }
            group.finish();
        }
    }
}

fn report_ratios() {
    println!("\ngradient / value (criterion medians):");
    for backend in ["cpu", "cuda"] {
        for &(name, n, points, forward_target, exact_target) in CASES {
            let group = format!("{backend}/{name}").replace('/', "_");
            let Some(value) = median_ns(&group, "value") else {
                continue;
            };
            let size = points.map_or(format!("n = {n}"), |p| format!("n = {n}, {p} points"));
            println!(
                "  {backend:<4} {name:<15} {size:<24} value {:>9.3} ms",
                value / 1e6
            );
            for (scheme, target) in [("forward", forward_target), ("exact", exact_target)] {
                let (Some(gradient), Some(fused)) = (
                    median_ns(&group, &format!("gradient_{scheme}")),
                    median_ns(&group, &format!("value_and_gradient_{scheme}")),
                ) else {
                    continue;
                };
                let ratio = gradient / value;
                let verdict = if ratio <= target { "meets" } else { "MISSES" };
                println!(
                    "       {scheme:<8} gradient {:>9.3} ms  ratio {ratio:>5.2}  {verdict} target <= {target}; \
                     value_and_gradient {:>9.3} ms = {:.2}× value + gradient",
                    gradient / 1e6,
                    fused / 1e6,
                    fused / (value + gradient)
                );
            }
        }
    }
}

criterion_group!(benches, evaluations);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios();
}
