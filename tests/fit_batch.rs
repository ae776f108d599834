//! Many small fits at once (`fit_batch`): each fit's answer is the one it gets alone, known
//! parameters come back from noiseless spots, and a bad fit fails alone.

use cudamin::plumbing::gpu::simulated_entries;
use cudamin::problems::fit::{FitError, find_model};
use cudamin::problems::fit_batch::{Batch, BatchResult, Precision, fit_batch_on};
use cudamin::{Backend, BackendChoice, LmOptions};

/// A 5 × 5 grid of pixel centres: the predictors `x`, `y` shared by every fit.
fn grid() -> (Vec<f64>, Vec<f64>) {
    (0..25)
        .map(|i| (f64::from(i % 5), f64::from(i / 5)))
        .unzip()
}

/// `a·exp(−((x − x0)² + (y − y0)²)/(2s²)) + b` at the grid, for `θ = (a, x0, y0, s, b)`.
fn spot(theta: &[f64], (x, y): &(Vec<f64>, Vec<f64>)) -> Vec<f64> {
    let [a, x0, y0, s, b] = theta.try_into().unwrap();
    (x.iter().zip(y))
        .map(|(x, y)| a * (-((x - x0).powi(2) + (y - y0).powi(2)) / (2.0 * s * s)).exp() + b)
        .collect()
}

/// Spot `f`'s parameters: each differs from the others.
fn truth(f: usize) -> [f64; 5] {
    let t = f as f64;
    [
        300.0 + 7.0 * t,
        1.8 + 0.013 * t,
        2.3 - 0.011 * t,
        0.9 + 0.004 * t,
        10.0 + 0.1 * t,
    ]
}

fn run(y: &[f64], p0: &[f64], grid: &(Vec<f64>, Vec<f64>)) -> Result<BatchResult, FitError> {
    run_on(&Backend::Cpu, Precision::F64, y, p0, grid)
}

/// [`run`] on `backend`, in `precision`.
fn run_on(
    backend: &Backend,
    precision: Precision,
    y: &[f64],
    p0: &[f64],
    grid: &(Vec<f64>, Vec<f64>),
) -> Result<BatchResult, FitError> {
    let model = find_model("gauss-2d").unwrap();
    let x = [&grid.0[..], &grid.1[..]];
    let batch = Batch {
        x: &x,
        y,
        sigma: None,
        points: 25,
        p0,
        precision,
    };
    fit_batch_on(backend, model, 5, batch, &LmOptions::default(), false)
}

/// 200 spots with a deterministic ±3 % ripple on each pixel in place of noise, and their
/// starts, each 0–4 % off its truth: `(y, p0)`.
fn rippled_spots(grid: &(Vec<f64>, Vec<f64>), fits: usize) -> (Vec<f64>, Vec<f64>) {
    let y = (0..fits)
        .flat_map(|f| spot(&truth(f), grid))
        .enumerate()
        .map(|(i, v)| v * (1.0 + 0.03 * ((i as f64) * 0.7).sin()))
        .collect();
    let p0 = (0..fits)
        .flat_map(|f| truth(f).map(|v| v * (1.0 + 0.04 * ((f % 5) as f64 - 2.0) / 2.0)))
        .collect();
    (y, p0)
}

/// Noiseless spots give their parameters back, each from its own start, and a batch gives
/// each fit what it gets alone, to the bit.
#[test]
fn each_fit_of_a_batch_is_the_fit_alone() {
    let grid = grid();
    let fits = 40;
    let y: Vec<f64> = (0..fits).flat_map(|f| spot(&truth(f), &grid)).collect();
    let p0: Vec<f64> = (0..fits)
        .flat_map(|f| truth(f).map(|v| v * (1.0 + 0.05 * ((f % 3) as f64 - 1.0))))
        .collect();
    let all = run(&y, &p0, &grid).unwrap();
    for f in 0..fits {
        assert!(all.status[f] > 0, "fit {f}: {}", all.message[f]);
        for (j, want) in truth(f).iter().enumerate() {
            let got = all.popt[f * 5 + j];
            assert!(
                (got - want).abs() <= 1e-8 * want.abs(),
                "fit {f}: θ{j} {got} vs {want}"
            );
        }
        let alone = run(&y[f * 25..(f + 1) * 25], &p0[f * 5..(f + 1) * 5], &grid).unwrap();
        let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&alone.popt),
            bits(&all.popt[f * 5..(f + 1) * 5]),
            "fit {f}"
        );
        assert_eq!(alone.nfev[0], all.nfev[f]);
    }
}

/// A fit whose data hold a NaN fails alone, with status −1 and the reason; the others are
/// untouched. Shapes that do not fit together are refused before any fit.
#[test]
fn a_bad_fit_fails_alone_and_bad_shapes_are_refused() {
    let grid = grid();
    let mut y: Vec<f64> = (0..3).flat_map(|f| spot(&truth(f), &grid)).collect();
    y[25 + 7] = f64::NAN;
    let p0 = truth(0);
    let r = run(&y, &p0, &grid).unwrap();
    assert_eq!(r.status[1], -1);
    assert!(r.message[1].contains("NaN"), "{}", r.message[1]);
    assert!(r.popt[5..10].iter().all(|v| v.is_nan()));
    assert!(r.status[0] > 0 && r.status[2] > 0, "{:?}", r.message);
    let error = run(&y[..30], &p0, &grid).unwrap_err();
    assert!(matches!(error, FitError::Lengths { .. }), "{error}");
    let error = run(&y, &p0[..4], &grid).unwrap_err();
    assert!(
        matches!(error, FitError::StartLength { got: 4, params: 5 }),
        "{error}"
    );
}

/// The batch kernel on the simulator (the PTX a GPU runs, one fit per thread) gives the CPU's
/// answers: 200 noisy spots, each from its own start.
#[test]
fn the_simulator_gives_the_cpus_answers() {
    let grid = grid();
    let fits = 200;
    let (y, p0) = rippled_spots(&grid, fits);
    let cpu = run(&y, &p0, &grid).unwrap();
    let (sim, _) = cudamin::backend(BackendChoice::Simulated).unwrap();
    let on_sim = run_on(&sim, Precision::F64, &y, &p0, &grid).unwrap();
    assert!(simulated_entries().contains("fit_gauss_2d_batch"));
    let same = (0..fits * 5)
        .filter(|&i| cpu.popt[i] == on_sim.popt[i])
        .count();
    eprintln!(
        "simulator: {same} of {} parameters equal to the bit",
        fits * 5
    );
    for f in 0..fits {
        assert!(cpu.status[f] > 0, "fit {f}: {}", cpu.message[f]);
        assert_eq!(cpu.status[f], on_sim.status[f], "fit {f}");
        let close = |a: &[f64], b: &[f64], tol: f64| {
            let scale = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            a.iter().zip(b).all(|(a, b)| (a - b).abs() <= tol * scale)
        };
        let range = f * 5..(f + 1) * 5;
        assert!(
            close(&cpu.popt[range.clone()], &on_sim.popt[range], 1e-9),
            "fit {f}"
        );
        let range = f * 25..(f + 1) * 25;
        assert!(
            close(&cpu.pcov[range.clone()], &on_sim.pcov[range], 1e-7),
            "fit {f}"
        );
    }
}

/// In single precision every fit gives its double-precision answer to well within its standard
/// error, and the simulator (the PTX a GPU runs, in `f32`) gives the CPU's bits. A fit the
/// batch kernel cannot take is refused in single precision, never run in double unasked.
#[test]
fn single_precision_gives_the_double_answers() {
    let grid = grid();
    let fits = 200;
    let (y, p0) = rippled_spots(&grid, fits);
    let double = run(&y, &p0, &grid).unwrap();
    let cpu = run_on(&Backend::Cpu, Precision::F32, &y, &p0, &grid).unwrap();
    let (sim, _) = cudamin::backend(BackendChoice::Simulated).unwrap();
    let on_sim = run_on(&sim, Precision::F32, &y, &p0, &grid).unwrap();
    let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&cpu.popt), bits(&on_sim.popt));
    assert_eq!(bits(&cpu.pcov), bits(&on_sim.pcov));
    assert_eq!(cpu.status, on_sim.status);
    assert_eq!(cpu.nfev, on_sim.nfev);
    let (mut relative, mut in_errors, mut pcov_off) = (0.0f64, 0.0f64, 0.0f64);
    for f in 0..fits {
        assert!(cpu.status[f] > 0, "fit {f}: {}", cpu.message[f]);
        let pcov = &double.pcov[f * 25..(f + 1) * 25];
        for j in 0..5 {
            let (got, want) = (cpu.popt[f * 5 + j], double.popt[f * 5 + j]);
            relative = relative.max((got - want).abs() / want.abs());
            in_errors = in_errors.max((got - want).abs() / pcov[j * 6].sqrt());
        }
        // The covariance over its diagonal's scale, as the f64 tests compare it.
        let scale = (0..5).map(|i| pcov[i * 6].abs()).fold(0.0, f64::max);
        for (got, want) in cpu.pcov[f * 25..(f + 1) * 25].iter().zip(pcov) {
            pcov_off = pcov_off.max((got - want).abs() / scale);
        }
    }
    eprintln!(
        "single precision: popt within {relative:.2e} relative, {in_errors:.2e} standard \
         errors; pcov within {pcov_off:.2e}"
    );
    assert!(relative <= 2e-3 && in_errors <= 1e-2 && pcov_off <= 1e-2);
    let held = LmOptions {
        fixed: Some(vec![false, false, false, true, false]),
        ..LmOptions::default()
    };
    let model = find_model("gauss-2d").unwrap();
    let x = [&grid.0[..], &grid.1[..]];
    let batch = Batch {
        x: &x,
        y: &y,
        sigma: None,
        points: 25,
        p0: &p0,
        precision: Precision::F32,
    };
    let error = fit_batch_on(&Backend::Cpu, model, 5, batch, &held, false).unwrap_err();
    assert!(matches!(error, FitError::SinglePrecision { .. }), "{error}");
}
