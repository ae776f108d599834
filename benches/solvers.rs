//! Whole solves, as `cudamin solve` runs them, on the CPU backend:
//! - BFGS on seed-expsum, n = 10⁴, forward differences (scipy's BFGS needs minutes here: its
//!   O(n³) update costs ~21 s an iteration);
//! - BFGS on chained Rosenbrock (`scipy.optimize.rosen`), n = 1000, forward differences: ~4860
//!   iterations to the local minimum f ≈ 3.98662 that scipy also reaches, so the inverse
//!   Hessian passes from the implicit form to the dense O(n²) one;
//! - L-BFGS on extended Rosenbrock, n = 10⁶.
//!
//! `cargo bench --bench solvers`

use criterion::{Criterion, criterion_group, criterion_main};
use cudamin::minimize;
use cudamin::{Backend, Gradient, Method, Options, TermObjective, problems};
use std::time::Duration;

fn solve(name: &str, n: usize, method: Method, fd: Gradient) -> f64 {
    let instance = problems::find(name)
        .unwrap()
        .instantiate(&Backend::Cpu, Some(n), None)
        .unwrap();
    let mut objective = TermObjective::new(instance.evaluator.into_sum(), fd);
    let result = minimize(&mut objective, &instance.x0, method, &Options::default()).unwrap();
    assert!(result.success, "{name}: {}", result.message);
    result.fun
}

fn solvers(c: &mut Criterion) {
    let mut group = c.benchmark_group("solve");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("bfgs/seed-expsum/n=1e4/forward", |b| {
        b.iter(|| solve("seed-expsum", 10_000, Method::Bfgs, Gradient::Forward))
    });
    group.bench_function("bfgs/rosenbrock/n=1000/forward", |b| {
        b.iter(|| solve("rosenbrock", 1_000, Method::Bfgs, Gradient::Forward))
    });
    group.bench_function("lbfgs/ext-rosenbrock/n=1e6/forward", |b| {
        b.iter(|| {
            solve(
                "ext-rosenbrock",
                1_000_000,
                Method::Lbfgs,
                Gradient::Forward,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, solvers);
criterion_main!(benches);
