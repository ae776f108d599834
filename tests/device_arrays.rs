//! Arrays kept on a GPU backend's device: a solve that starts from one
//! (`minimize_from_device`) and leaves its solution there (`Options::keep_on_device`) moves only
//! scalars, and gives the bits of the same solve from host memory. On the PTX simulator, as CI
//! runs it; with `CUDAMIN_REQUIRE_GPU=1` (feature `cuda`) on a device.

mod common;

use common::device_backend;
use cudamin::problems::{self, Instance};
use cudamin::{
    Backend, BackendChoice, BackendError, Gradient, Method, OptimizeResult, Options, SolveError,
    TermObjective, Traffic, minimize_from_device, minimize_with_observer,
};
use std::ops::ControlFlow;

/// seed-expsum with `n` variables loaded on `backend`, as an exact-gradient objective.
fn seed_expsum(backend: &Backend, n: usize) -> (TermObjective, Vec<f64>) {
    let problem = problems::find("seed-expsum").unwrap();
    let Instance { evaluator, x0, .. } = problem.instantiate(backend, Some(n), None).unwrap();
    (
        TermObjective::new(evaluator.into_sum(), Gradient::Exact),
        x0,
    )
}

fn keep() -> Options {
    Options {
        keep_on_device: true,
        ..Options::default()
    }
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// The traffic of `solve` on `backend`'s device.
fn counted<R>(backend: &Backend, solve: impl FnOnce() -> R) -> (R, Traffic) {
    let before = backend.traffic().unwrap();
    let result = solve();
    (result, backend.traffic().unwrap() - before)
}

fn no_observer() -> impl FnMut(&cudamin::Iterate<'_>) -> ControlFlow<()> {
    |_| ControlFlow::Continue(())
}

/// L-BFGS from `x0` in host memory, with the default options.
fn host_lbfgs(objective: &mut TermObjective, x0: &[f64]) -> OptimizeResult {
    minimize_with_observer(
        objective,
        x0,
        Method::Lbfgs,
        &Options::default(),
        &mut no_observer(),
    )
    .unwrap()
}

/// L-BFGS at 40 000 variables keeps its vectors on the device: started from a device array and
/// kept there, the solve copies no vector either way (at most 1 KB of scalars and
/// tables in all), and its solution is the host start's, bit for bit.
#[test]
fn a_device_start_kept_on_the_device_moves_only_scalars() {
    let gpu = device_backend();
    let n = 40_000;
    let (mut objective, x0) = seed_expsum(&gpu, n);
    let from_host = host_lbfgs(&mut objective, &x0);
    assert!(from_host.success && from_host.on_device.is_none());

    let start = gpu.to_device(&x0).unwrap();
    assert_eq!(bits(&start.to_host().unwrap()), bits(&x0));
    let (kept, traffic) = counted(&gpu, || kept_lbfgs(&mut objective, &start));
    let words = traffic.words_to_device + traffic.words_to_host;
    eprintln!(
        "a device-resident L-BFGS solve, n = {n}: {traffic:?}, {} bytes",
        8 * words
    );
    assert!(8 * words <= 1024, "{traffic:?}");
    assert_eq!(
        (kept.nit, kept.nfev, kept.status),
        (from_host.nit, from_host.nfev, from_host.status)
    );
    assert!(kept.x.is_empty() && kept.jac.is_empty());
    let solution = kept.on_device.as_ref().unwrap();
    assert_eq!(bits(&solution.x.to_host().unwrap()), bits(&from_host.x));
    assert_eq!(bits(&solution.jac.to_host().unwrap()), bits(&from_host.jac));
    assert_eq!(kept.fun.to_bits(), from_host.fun.to_bits());
    // The start is read, never written.
    assert_eq!(bits(&start.to_host().unwrap()), bits(&x0));

    // A solution handed back to the host is the same.
    let plain = minimize_from_device(
        &mut objective,
        &start,
        Method::Lbfgs,
        &Options::default(),
        &mut no_observer(),
    )
    .unwrap();
    assert_same(&plain, &from_host);
}

/// A device-resident solve's passes read `x` and write `∇f` where the solver keeps them, and
/// sum the value in the same launch: each evaluation is one launch of the gradient kernel, no
/// vector is copied on the device after the start, and each trial waits once. On the
/// simulator, which counts each kernel's launches.
#[test]
fn device_passes_read_and_write_the_solvers_vectors_where_they_lie() {
    let sim = cudamin::backend(BackendChoice::Simulated).unwrap().0;
    let n = 40_000;
    let (mut objective, x0) = seed_expsum(&sim, n);
    let start = sim.to_device(&x0).unwrap();
    assert!(sim.count_kernels(true));
    let (kept, traffic) = counted(&sim, || kept_lbfgs(&mut objective, &start));
    let counts = sim.kernel_counts().unwrap();
    sim.count_kernels(false);
    let launches_of = |kernel: &str| counts.get(kernel).map_or(0, |c| c.launches);
    let kernels: u64 = counts.values().map(|c| c.launches).sum();
    assert!(kept.success && kept.njev > 2, "{kept:?}");
    assert_eq!(launches_of("seed_expsum_gradient_exact"), kept.njev as u64);
    assert_eq!(
        launches_of("seed_expsum_value"),
        (kept.nfev - kept.njev) as u64
    );
    // Every launch the traffic counts is a kernel but one: the copy of the start into the
    // solve's own `x`, which keeps the caller's array unwritten.
    assert_eq!(traffic.launches, kernels + 1, "{traffic:?}");
    // A line search's trial brings `f` and its slope back in one wait: 26 waits in this solve,
    // where a wait for each would make 33 (7 trials after the start).
    assert_eq!((kept.nit, kept.nfev), (5, 8));
    assert!(traffic.waits <= 26, "{traffic:?}");
}

/// L-BFGS's pairs stay on the device with its vectors: asked for (`return_hess_inv`), they
/// cost the solve no copy, and copied when wanted they are the CPU solve's pairs to rounding
/// (its sums add in another order), oldest first, the newest meeting the secant condition.
#[test]
fn a_device_solves_pairs_stay_there_until_copied() {
    let gpu = device_backend();
    let n = 40_000;
    let (mut objective, x0) = seed_expsum(&gpu, n);
    let options = Options {
        return_hess_inv: true,
        ..Options::default()
    };
    let lbfgs = |objective: &mut TermObjective| {
        minimize_with_observer(objective, &x0, Method::Lbfgs, &options, &mut no_observer()).unwrap()
    };
    let without = counted(&gpu, || host_lbfgs(&mut objective, &x0)).1;
    let (device, with) = counted(&gpu, || lbfgs(&mut objective));
    assert_eq!(with.words_to_host, without.words_to_host, "{with:?}");
    assert!(device.hess_inv_pairs.is_none());
    let kept = device.hess_inv_pairs_on_device.as_ref().unwrap();
    let before = gpu.traffic().unwrap();
    let pairs = kept.to_host().unwrap();
    let copied = gpu.traffic().unwrap() - before;
    assert_eq!(copied.words_to_host, (2 * pairs.s().len() * n) as u64);

    let (cpu, _) = cudamin::backend(BackendChoice::Cpu).unwrap();
    let reference = lbfgs(&mut seed_expsum(&cpu, n).0);
    let expected = reference.hess_inv_pairs.unwrap();
    assert_eq!(
        (device.nit, pairs.s().len()),
        (reference.nit, expected.s().len())
    );
    assert!(pairs.s().len() >= 2);
    for (got, want) in [(pairs.s(), expected.s()), (pairs.y(), expected.y())] {
        let (got, want) = (got.concat(), want.concat());
        let scale = want.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
        let apart = (got.iter().zip(&want)).fold(0.0_f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(apart <= 1e-12 * scale, "{apart:e} of {scale:e}");
    }
    let (s, y) = (pairs.s().last().unwrap(), pairs.y().last().unwrap());
    let hy = pairs.dot(y).unwrap();
    let apart = (hy.iter().zip(s)).fold(0.0_f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(apart <= 1e-12 * s.iter().fold(0.0_f64, |m, v| m.max(v.abs())));
}

/// L-BFGS from `start` on the device, its solution kept there.
fn kept_lbfgs(objective: &mut TermObjective, start: &cudamin::DeviceArray) -> OptimizeResult {
    minimize_from_device(objective, start, Method::Lbfgs, &keep(), &mut no_observer()).unwrap()
}

fn assert_same(a: &OptimizeResult, b: &OptimizeResult) {
    assert_eq!(bits(&a.x), bits(&b.x));
    assert_eq!(bits(&a.jac), bits(&b.jac));
    assert_eq!((a.nit, a.nfev, a.status), (b.nit, b.nfev, b.status));
}

/// A device start with a NaN or an infinity is refused, naming the entry, as a host start is.
#[test]
fn a_non_finite_device_start_names_its_entry() {
    let gpu = device_backend();
    let n = 1 << 15;
    let (mut objective, mut x0) = seed_expsum(&gpu, n);
    for (index, value) in [(12_345, f64::NAN), (n - 1, f64::NEG_INFINITY)] {
        let kept = x0[index];
        x0[index] = value;
        let start = gpu.to_device(&x0).unwrap();
        for method in [Method::Lbfgs, Method::Bfgs, Method::LbfgsB] {
            let error =
                minimize_from_device(&mut objective, &start, method, &keep(), &mut no_observer())
                    .unwrap_err();
            match error {
                SolveError::NonFiniteX0 { index: i, value: v } => {
                    assert_eq!(i, index);
                    assert_eq!(v.to_bits(), value.to_bits());
                }
                other => panic!("{method:?}: {other}"),
            }
        }
        x0[index] = kept;
    }
}

/// L-BFGS-B keeps its vectors on the device from a device start too: the start is clipped into
/// the box there (entries outside it here), and the solution, its gradient and its active mask
/// stay there. Each is the host start's to the bit, the mask [`Bounds::active_mask`]'s. Without
/// bounds it keeps no mask.
#[test]
fn a_bounded_device_start_is_clipped_and_kept_there() {
    let gpu = device_backend();
    let n = 40_000;
    let (mut objective, mut x0) = seed_expsum(&gpu, n);
    let upper: Vec<f64> = (0..n)
        .map(|i| if i % 3 == 0 { -0.4 } else { f64::INFINITY })
        .collect();
    let bounds = cudamin::Bounds {
        lower: vec![f64::NEG_INFINITY; n],
        upper,
    };
    for i in (0..n).step_by(1_000) {
        x0[i] = 0.5;
    }
    for bounds in [Some(bounds), None] {
        let options = Options {
            bounds: bounds.clone(),
            ..Options::default()
        };
        let from_host = minimize_with_observer(
            &mut objective,
            &x0,
            Method::LbfgsB,
            &options,
            &mut no_observer(),
        )
        .unwrap();
        let start = gpu.to_device(&x0).unwrap();
        let kept = Options {
            keep_on_device: true,
            ..options
        };
        let on_device = minimize_from_device(
            &mut objective,
            &start,
            Method::LbfgsB,
            &kept,
            &mut no_observer(),
        )
        .unwrap();
        assert!(on_device.x.is_empty() && on_device.jac.is_empty());
        assert_eq!(
            (on_device.nit, on_device.nfev, on_device.status),
            (from_host.nit, from_host.nfev, from_host.status)
        );
        assert_eq!(on_device.fun.to_bits(), from_host.fun.to_bits());
        let solution = on_device.on_device.as_ref().unwrap();
        assert_eq!(bits(&solution.x.to_host().unwrap()), bits(&from_host.x));
        assert_eq!(bits(&solution.jac.to_host().unwrap()), bits(&from_host.jac));
        let mask = solution.active_mask.as_ref().map(|m| m.to_host().unwrap());
        let expected = bounds.map(|b| b.active_mask(&from_host.x, None));
        let expected: Option<Vec<f64>> = expected.map(|m| m.iter().map(|&a| a.into()).collect());
        assert_eq!(mask, expected);
    }
}

/// The solves that keep their vectors on the host take a device start too: copied to the host
/// once, with the host start's bits. L-BFGS-B with bounds below the device's least size, and
/// BFGS below its dense limit; a start of the wrong length is refused as a host start is.
#[test]
fn host_vector_solves_take_a_device_start() {
    let gpu = device_backend();
    let n = 300;
    let (mut objective, x0) = seed_expsum(&gpu, n);
    let start = gpu.to_device(&x0).unwrap();
    let bounded = Options {
        bounds: Some(cudamin::Bounds {
            lower: vec![0.1; n],
            upper: vec![0.9; n],
        }),
        ..keep()
    };
    for (method, options) in [(Method::Bfgs, keep()), (Method::LbfgsB, bounded)] {
        let from_host =
            minimize_with_observer(&mut objective, &x0, method, &options, &mut no_observer())
                .unwrap();
        let from_device =
            minimize_from_device(&mut objective, &start, method, &options, &mut no_observer())
                .unwrap();
        assert!(from_device.on_device.is_none(), "{method:?}");
        assert_same(&from_device, &from_host);
    }
    let short = gpu.to_device(&x0[1..]).unwrap();
    let error = minimize_from_device(
        &mut objective,
        &short,
        Method::Lbfgs,
        &keep(),
        &mut no_observer(),
    )
    .unwrap_err();
    assert!(
        matches!(error, SolveError::WrongLength { expected, got } if expected == n && got == n - 1),
        "{error}"
    );
}

/// The CPU keeps no arrays on a device: asking is a typed error, as is reading device memory.
#[test]
fn the_cpu_has_no_device_arrays() {
    let (cpu, _) = cudamin::backend(BackendChoice::Cpu).unwrap();
    let error = cpu.to_device(&[1.0, 2.0]).unwrap_err();
    assert!(matches!(error, BackendError::NoDevice(_)), "{error}");
    let error = cpu.device_array_at(0x1_0000_0000, 2, false).unwrap_err();
    assert!(matches!(error, BackendError::NoDevice(_)), "{error}");
}

/// Another library's array, by its device address (as `__cuda_array_interface__` gives it):
/// read where it lies, with nothing uploaded, it starts the host start's solve, and dropping it
/// leaves the memory to its owner. Memory outside the device's allocations is refused.
#[test]
fn memory_at_a_device_address_starts_a_solve_where_it_lies() {
    let gpu = device_backend();
    let (mut objective, x0) = seed_expsum(&gpu, 40_000);
    let expected = host_lbfgs(&mut objective, &x0);
    let owner = gpu.to_device(&x0).unwrap();
    let (found, traffic) = counted(&gpu, || {
        gpu.device_array_at(owner.device_address(), x0.len(), true)
            .unwrap()
    });
    assert_eq!((found.len(), traffic.words_to_device), (x0.len(), 0));
    let result = kept_lbfgs(&mut objective, &found);
    assert_eq!(result.fun.to_bits(), expected.fun.to_bits());
    let x = result.on_device.as_ref().unwrap().x.to_host().unwrap();
    assert_eq!(bits(&x), bits(&expected.x));
    drop(found);
    assert_eq!(bits(&owner.to_host().unwrap()), bits(&x0));
    for (address, len) in [
        (owner.device_address() + 8, x0.len()),
        (owner.device_address(), x0.len() + 1),
        (0x10, 1),
    ] {
        let error = gpu.device_array_at(address, len, false).unwrap_err();
        assert!(matches!(error, BackendError::Foreign(_)), "{error}");
    }
}

/// A kept array's ∞-norm is taken on its device, the host's number (NaN where an entry is), and
/// one word comes back.
#[test]
fn a_kept_array_has_its_norm_taken_on_the_device() {
    let gpu = device_backend();
    let mut values: Vec<f64> = (0..50_000).map(|i| (i as f64 * 0.37).sin()).collect();
    values[31_337] = -4.25;
    let array = gpu.to_device(&values).unwrap();
    let (norm, traffic) = counted(&gpu, || array.max_abs().unwrap());
    assert_eq!(norm, 4.25);
    assert_eq!(
        (traffic.words_to_host, traffic.waits),
        (1, 1),
        "{traffic:?}"
    );
    values[7] = f64::NAN;
    assert!(gpu.to_device(&values).unwrap().max_abs().unwrap().is_nan());
    assert_eq!(gpu.to_device(&[]).unwrap().max_abs().unwrap(), 0.0);
}
