//! Many small fits at once (`fit_batch`): each fit's answer is the one it gets alone, known
//! parameters come back from noiseless spots, and a bad fit fails alone.

use cudamin::plumbing::gpu::simulated_entries;
use cudamin::problems::fit::{FitError, find_model};
use cudamin::problems::fit_batch::{
    Batch, BatchResult, Estimator, Points, Precision, fit_batch_on,
};
use cudamin::{Backend, BackendChoice, Bounds, LmOptions};

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
    let how = (precision, Estimator::LeastSquares, &LmOptions::default());
    run_as(backend, how, y, p0, grid)
}

/// [`run`] on `backend` by `estimator`.
fn run_by(
    backend: &Backend,
    estimator: Estimator,
    y: &[f64],
    p0: &[f64],
    grid: &(Vec<f64>, Vec<f64>),
) -> Result<BatchResult, FitError> {
    run_as(
        backend,
        (Precision::F64, estimator, &LmOptions::default()),
        y,
        p0,
        grid,
    )
}

/// [`run`] on `backend`, in `precision`, by `estimator`, with `options`.
fn run_as(
    backend: &Backend,
    (precision, estimator, options): (Precision, Estimator, &LmOptions),
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
        points: Points::Each(25),
        p0,
        precision,
        estimator,
    };
    fit_batch_on(backend, model, 5, batch, options, false)
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

/// Noiseless spots and their starts, each 0–5 % off its truth: `(y, p0)`.
fn noiseless_spots(grid: &(Vec<f64>, Vec<f64>), fits: usize) -> (Vec<f64>, Vec<f64>) {
    let y = (0..fits).flat_map(|f| spot(&truth(f), grid)).collect();
    let p0 = (0..fits)
        .flat_map(|f| truth(f).map(|v| v * (1.0 + 0.05 * ((f % 3) as f64 - 1.0))))
        .collect();
    (y, p0)
}

/// Noiseless spots give their parameters back, each from its own start, and a batch gives
/// each fit what it gets alone, to the bit.
#[test]
fn each_fit_of_a_batch_is_the_fit_alone() {
    let grid = grid();
    let fits = 40;
    let (y, p0) = noiseless_spots(&grid, fits);
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
    // No parameters, on the path of one fit per task (bounds): refused, not a panic.
    let x = [&grid.0[..], &grid.1[..]];
    let none = Batch {
        x: &x,
        y: &y,
        sigma: None,
        points: Points::Each(25),
        p0: &[],
        precision: Precision::F64,
        estimator: Estimator::LeastSquares,
    };
    let bounded = LmOptions {
        bounds: Some(spot_box()),
        ..LmOptions::default()
    };
    let model = find_model("gauss-2d").unwrap();
    let error = fit_batch_on(&Backend::Cpu, model, 0, none, &bounded, false).unwrap_err();
    assert!(
        matches!(error, FitError::Params { params: 0, .. }),
        "{error}"
    );
}

/// The batch kernel on the simulator (the PTX a GPU runs, one fit per thread) gives the CPU's
/// answers, to the bit: 200 noisy spots, each from its own start. The GPU evaluates a row in two
/// groups of lanes where the CPU takes one, and both fold the rows in one order. Only the
/// columns cross to the device, the grid shared by every fit once, and only the reports come
/// back.
#[test]
fn the_simulator_gives_the_cpus_answers() {
    let grid = grid();
    let fits = 200;
    let (y, p0) = rippled_spots(&grid, fits);
    let cpu = run(&y, &p0, &grid).unwrap();
    let (sim, _) = cudamin::backend(BackendChoice::Simulated).unwrap();
    let before = sim.traffic().unwrap();
    let on_sim = run_on(&sim, Precision::F64, &y, &p0, &grid).unwrap();
    let traffic = sim.traffic().unwrap() - before;
    assert!(simulated_entries().contains("fit_gauss_2d_batch"));
    // Up: the grid (2 × 25), y (25 a fit), the offsets (F + 1) and the starts (5 a fit); back:
    // each fit's parameters, report and triangle (5 + 5 + 15).
    let up = 2 * 25 + fits * 25 + fits + 1 + fits * 5;
    assert_eq!(traffic.words_to_device, up as u64);
    assert_eq!(traffic.words_to_host, (fits * 25) as u64);
    assert_eq!((traffic.launches, traffic.waits), (2, 1));
    for f in 0..fits {
        assert!(cpu.status[f] > 0, "fit {f}: {}", cpu.message[f]);
    }
    let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&cpu.popt), bits(&on_sim.popt));
    assert_eq!(bits(&cpu.pcov), bits(&on_sim.pcov));
    assert_eq!(bits(&cpu.cost), bits(&on_sim.cost));
    assert_eq!((&cpu.status, &cpu.nfev), (&on_sim.status, &on_sim.nfev));
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
        bounds: Some(spot_box()),
        ..LmOptions::default()
    };
    let model = find_model("gauss-2d").unwrap();
    let x = [&grid.0[..], &grid.1[..]];
    let batch = Batch {
        x: &x,
        y: &y,
        sigma: None,
        points: Points::Each(25),
        p0: &p0,
        precision: Precision::F32,
        estimator: Estimator::LeastSquares,
    };
    let error = fit_batch_on(&Backend::Cpu, model, 5, batch, &held, false).unwrap_err();
    assert!(matches!(error, FitError::SinglePrecision { .. }), "{error}");
}

/// `∂m/∂θ` of the spot at pixel `(x, y)`.
fn spot_gradient(theta: &[f64], x: f64, y: f64) -> [f64; 5] {
    let [a, x0, y0, s, _] = theta.try_into().unwrap();
    let (dx, dy) = (x - x0, y - y0);
    let e = (-(dx * dx + dy * dy) / (2.0 * s * s)).exp();
    let r2 = dx * dx + dy * dy;
    [
        e,
        a * e * dx / (s * s),
        a * e * dy / (s * s),
        a * e * r2 / (s * s * s),
        1.0,
    ]
}

/// Poisson maximum likelihood: noiseless spots give their parameters back (the deviance is 0
/// there); on rippled spots each answer zeroes the likelihood's gradient `Σ (1 − y/m)·∂m/∂θ`,
/// and the simulator gives the CPU's answers. A negative count fails its fit alone; `σ`, a
/// held parameter and a model without a Poisson kernel are refused.
#[test]
fn poisson_fits_find_the_likelihoods_maximum() {
    let grid = grid();
    let fits = 40;
    let (y, p0) = noiseless_spots(&grid, fits);
    let exact = run_by(&Backend::Cpu, Estimator::Poisson, &y, &p0, &grid).unwrap();
    for f in 0..fits {
        assert!(exact.status[f] > 0, "fit {f}: {}", exact.message[f]);
        for (j, want) in truth(f).iter().enumerate() {
            let got = exact.popt[f * 5 + j];
            assert!(
                (got - want).abs() <= 1e-8 * want.abs(),
                "fit {f}: θ{j} {got} vs {want}"
            );
        }
    }
    let fits = 200;
    let (y, p0) = rippled_spots(&grid, fits);
    let cpu = run_by(&Backend::Cpu, Estimator::Poisson, &y, &p0, &grid).unwrap();
    let (sim, _) = cudamin::backend(BackendChoice::Simulated).unwrap();
    let on_sim = run_by(&sim, Estimator::Poisson, &y, &p0, &grid).unwrap();
    assert!(simulated_entries().contains("fit_gauss_2d_poisson_batch"));
    let mut worst = 0.0f64;
    for f in 0..fits {
        assert!(cpu.status[f] > 0, "fit {f}: {}", cpu.message[f]);
        assert_eq!(cpu.status[f], on_sim.status[f], "fit {f}");
        let theta = &cpu.popt[f * 5..(f + 1) * 5];
        let model = spot(theta, &grid);
        let (mut gradient, mut scale) = ([0.0; 5], [0.0; 5]);
        for (i, (m, y)) in model.iter().zip(&y[f * 25..(f + 1) * 25]).enumerate() {
            let dm = spot_gradient(theta, grid.0[i], grid.1[i]);
            for j in 0..5 {
                gradient[j] += (1.0 - y / m) * dm[j];
                scale[j] += (y / m * dm[j]).abs();
            }
        }
        for j in 0..5 {
            worst = worst.max(gradient[j].abs() / scale[j]);
            let (a, b) = (theta[j], on_sim.popt[f * 5 + j]);
            assert!((a - b).abs() <= 1e-9 * a.abs(), "fit {f}: θ{j} {a} vs {b}");
        }
    }
    eprintln!("poisson: the likelihood's gradient within {worst:.2e} of its terms' scale");
    // At the default tolerances (1e-8): a step's relative gain below ftol ends the fit.
    assert!(worst <= 1e-7, "gradient {worst:.2e}");
    let mut negative = y.clone();
    negative[25 + 3] = -1.0;
    let r = run_by(&Backend::Cpu, Estimator::Poisson, &negative, &p0, &grid).unwrap();
    assert_eq!(r.status[1], -1);
    assert!(r.message[1].contains("counts"), "{}", r.message[1]);
    assert!(r.status[0] > 0 && r.status[2] > 0);
    let refused = |model: &str, p: usize, sigma: Option<&[f64]>, options: &LmOptions| {
        let x = [&grid.0[..], &grid.1[..]];
        let batch = Batch {
            x: &x,
            y: &y,
            sigma,
            points: Points::Each(25),
            p0: &p0[..p],
            precision: Precision::F64,
            estimator: Estimator::Poisson,
        };
        let model = find_model(model).unwrap();
        let error = fit_batch_on(&Backend::Cpu, model, p, batch, options, false).unwrap_err();
        assert!(matches!(error, FitError::Poisson { .. }), "{error}");
        error.to_string()
    };
    let plain = LmOptions::default();
    let sigma = vec![1.0; y.len()];
    assert!(refused("gauss-2d", 5, Some(&sigma), &plain).contains("sigma"));
    let bounded = LmOptions {
        bounds: Some(spot_box()),
        ..LmOptions::default()
    };
    assert!(refused("gauss-2d", 5, None, &bounded).contains("no bounds"));
    assert!(refused("linear", 3, None, &plain).contains("not offered"));
}

/// A `side × side` pixel grid.
fn square(side: u32) -> (Vec<f64>, Vec<f64>) {
    (0..side * side)
        .map(|i| (f64::from(i % side), f64::from(i / side)))
        .unzip()
}

/// Ragged fits, spots on grids of 5 × 5, 4 × 4 and 6 × 6 pixels in one batch: each gives what
/// it gives alone, to the bit, on the CPU and the simulator alike. Offsets that do not
/// rise from 0 to the points are refused.
#[test]
fn ragged_fits_are_each_the_fit_alone() {
    let sides = [5, 4, 6];
    let grids: Vec<_> = sides.iter().map(|&side| square(side)).collect();
    let (mut x, mut y, mut offsets) = ((Vec::new(), Vec::new()), Vec::new(), vec![0]);
    for (f, grid) in grids.iter().enumerate() {
        let rippled = spot(&truth(f), grid).into_iter().enumerate();
        y.extend(rippled.map(|(i, v)| v * (1.0 + 0.03 * (i as f64 * 0.7).sin())));
        x.0.extend(&grid.0);
        x.1.extend(&grid.1);
        offsets.push(y.len());
    }
    let p0: Vec<f64> = (0..3).flat_map(|f| truth(f).map(|v| v * 1.03)).collect();
    let model = find_model("gauss-2d").unwrap();
    let columns = [&x.0[..], &x.1[..]];
    let ragged = |backend: &Backend, offsets: &[usize]| {
        let batch = Batch {
            x: &columns,
            y: &y,
            sigma: None,
            points: Points::Ragged(offsets),
            p0: &p0,
            precision: Precision::F64,
            estimator: Estimator::LeastSquares,
        };
        fit_batch_on(backend, model, 5, batch, &LmOptions::default(), false)
    };
    let all = ragged(&Backend::Cpu, &offsets).unwrap();
    let (sim, _) = cudamin::backend(BackendChoice::Simulated).unwrap();
    let on_sim = ragged(&sim, &offsets).unwrap();
    for (f, grid) in grids.iter().enumerate() {
        let alone = Batch {
            x: &[&grid.0[..], &grid.1[..]],
            y: &y[offsets[f]..offsets[f + 1]],
            sigma: None,
            points: Points::Each(grid.0.len()),
            p0: &p0[f * 5..(f + 1) * 5],
            precision: Precision::F64,
            estimator: Estimator::LeastSquares,
        };
        let alone = fit_batch_on(&Backend::Cpu, model, 5, alone, &LmOptions::default(), false);
        let alone = alone.unwrap();
        assert!(all.status[f] > 0, "fit {f}: {}", all.message[f]);
        let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&alone.popt),
            bits(&all.popt[f * 5..(f + 1) * 5]),
            "fit {f}"
        );
        assert_eq!(
            bits(&alone.pcov),
            bits(&all.pcov[f * 25..(f + 1) * 25]),
            "fit {f}"
        );
    }
    assert_eq!(all.popt, on_sim.popt);
    for bad in [
        vec![0, 25, 16, 77],
        vec![1, 25, 41, 77],
        vec![0, 25, 41, 76],
    ] {
        let error = ragged(&Backend::Cpu, &bad).unwrap_err();
        assert!(matches!(error, FitError::Offsets { points: 77 }), "{error}");
    }
}

/// A box around every spot: widths and amplitudes positive, the rest free.
fn spot_box() -> Bounds {
    let inf = f64::INFINITY;
    Bounds {
        lower: vec![0.0, -inf, -inf, 0.0, -inf],
        upper: vec![inf; 5],
    }
}

/// Held parameters run on the batch kernel, which fits the function of the free ones: each
/// fit is the one `least_squares` makes alone with the same parameter held (the batch's
/// one-by-one path, taken here by an infinite box), its covariance 0 in the held rows and
/// columns. The simulator gives the CPU's bits; `f32` and Poisson fits hold parameters too.
#[test]
fn held_parameters_fit_the_others_on_the_kernel() {
    let grid = grid();
    let fits = 40;
    let (y, p0) = rippled_spots(&grid, fits);
    let held = LmOptions {
        fixed: Some(vec![false, false, false, true, false]),
        ftol: 1e-12,
        xtol: 1e-12,
        gtol: 1e-12,
        ..LmOptions::default()
    };
    let one_by_one = LmOptions {
        bounds: Some(Bounds {
            lower: vec![-f64::INFINITY; 5],
            upper: vec![f64::INFINITY; 5],
        }),
        ..held.clone()
    };
    let how = |precision, estimator, options| (precision, estimator, options);
    let lsq = |precision, options| how(precision, Estimator::LeastSquares, options);
    let cpu = Backend::Cpu;
    let kernel = run_as(&cpu, lsq(Precision::F64, &held), &y, &p0, &grid).unwrap();
    let alone = run_as(&cpu, lsq(Precision::F64, &one_by_one), &y, &p0, &grid).unwrap();
    let (sim, _) = cudamin::backend(BackendChoice::Simulated).unwrap();
    let on_sim = run_as(&sim, lsq(Precision::F64, &held), &y, &p0, &grid).unwrap();
    for f in 0..fits {
        let (x, pcov) = (&kernel.popt[f * 5..][..5], &kernel.pcov[f * 25..][..25]);
        assert!(kernel.status[f] > 0, "fit {f}: {}", kernel.message[f]);
        assert_eq!(x[3], p0[f * 5 + 3], "fit {f}: the held width moved");
        assert!(close(x, &alone.popt[f * 5..][..5], 1e-9), "fit {f}");
        assert!(close(pcov, &alone.pcov[f * 25..][..25], 1e-7), "fit {f}");
        assert!((0..5).all(|i| pcov[i * 5 + 3] == 0.0 && pcov[3 * 5 + i] == 0.0));
    }
    assert_eq!(on_sim.popt, kernel.popt);
    // In single precision, the same bits on both; by Poisson likelihood, the width still held.
    let single = run_as(&cpu, lsq(Precision::F32, &held), &y, &p0, &grid).unwrap();
    let on_sim = run_as(&sim, lsq(Precision::F32, &held), &y, &p0, &grid).unwrap();
    let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&single.popt), bits(&on_sim.popt));
    let poisson = how(Precision::F64, Estimator::Poisson, &held);
    let counts = run_as(&cpu, poisson, &y, &p0, &grid).unwrap();
    for f in 0..fits {
        assert!(single.status[f] > 0 && counts.status[f] > 0, "fit {f}");
        assert_eq!(single.popt[f * 5 + 3], f64::from(p0[f * 5 + 3] as f32));
        assert_eq!(counts.popt[f * 5 + 3], p0[f * 5 + 3]);
    }
}

/// Whether `a` is `b` within `tolerance` of `b`'s largest entry.
fn close(a: &[f64], b: &[f64], tolerance: f64) -> bool {
    let scale = b.iter().fold(0.0, |m: f64, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .all(|(a, b)| (a - b).abs() <= tolerance * scale)
}

/// Lorentzian lines of `points` points each on `[-2, 2]`, every fit its own line, with a
/// deterministic ripple: `(x, y, p0)`, each start 5 % off its line.
fn lines(fits: usize, points: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let x: Vec<f64> = (0..points)
        .map(|i| -2.0 + 4.0 * i as f64 / (points - 1) as f64)
        .collect();
    let truth = |f: usize| [3.0 + 0.1 * f as f64, 0.2 - 0.01 * f as f64, 0.4, 0.5];
    let mut y = Vec::new();
    for f in 0..fits {
        let [a, x0, g, b] = truth(f);
        let ripple = |i: usize| 0.02 * ((i * 7 + f * 3) as f64).sin();
        y.extend(
            (x.iter().enumerate())
                .map(|(i, x)| a * g * g / ((x - x0).powi(2) + g * g) + b + ripple(i)),
        );
    }
    let p0 = (0..fits).flat_map(|f| truth(f).map(|t| 1.05 * t)).collect();
    (x, y, p0)
}

/// Fits of many points run one per block on a GPU, the kernel's block form: a block's threads
/// fold their rows' triangles together and each runs the same loop. On the simulator it gives
/// the CPU's answers (one fit per task) to rounding, holds parameters, keeps a bad fit's
/// failure its own, and computes in `f32` too.
#[test]
fn fits_of_many_points_run_one_per_block() {
    let (fits, points) = (3, 300);
    let (x, mut y, p0) = lines(fits, points);
    y[points + 17] = f64::NAN;
    let model = find_model("lorentzian").unwrap();
    let run = |backend: &Backend, precision, options: &LmOptions| {
        let batch = Batch {
            x: &[&x],
            y: &y,
            sigma: None,
            points: Points::Each(points),
            p0: &p0,
            precision,
            estimator: Estimator::LeastSquares,
        };
        fit_batch_on(backend, model, 4, batch, options, false).unwrap()
    };
    let (sim, _) = cudamin::backend(BackendChoice::Simulated).unwrap();
    let held = LmOptions {
        fixed: Some(vec![false, false, true, false]),
        ..LmOptions::default()
    };
    for options in [LmOptions::default(), held] {
        let cpu = run(&Backend::Cpu, Precision::F64, &options);
        let on_sim = run(&sim, Precision::F64, &options);
        assert!(simulated_entries().contains("fit_lorentzian_batch_block"));
        assert_eq!(cpu.status[1], -1, "{}", cpu.message[1]);
        assert_eq!(on_sim.status[1], -1, "{}", on_sim.message[1]);
        for f in [0, 2] {
            assert!(on_sim.status[f] > 0, "fit {f}: {}", on_sim.message[f]);
            let (a, b) = (&on_sim.popt[f * 4..][..4], &cpu.popt[f * 4..][..4]);
            assert!(close(a, b, 1e-9), "fit {f}: {a:?} vs {b:?}");
            let (a, b) = (&on_sim.pcov[f * 16..][..16], &cpu.pcov[f * 16..][..16]);
            assert!(close(a, b, 1e-7), "fit {f}: {a:?} vs {b:?}");
        }
    }
    let cpu = run(&Backend::Cpu, Precision::F32, &LmOptions::default());
    let on_sim = run(&sim, Precision::F32, &LmOptions::default());
    for f in [0, 2] {
        assert!(on_sim.status[f] > 0, "fit {f}: {}", on_sim.message[f]);
        let (a, b) = (&on_sim.popt[f * 4..][..4], &cpu.popt[f * 4..][..4]);
        assert!(close(a, b, 1e-4), "fit {f}: {a:?} vs {b:?}");
    }
}
