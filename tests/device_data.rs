//! A fit whose data lie on the GPU backend's device (`Model::instantiate_device`): its table is
//! made there from the caller's arrays, checked there, and read there by every pass. It gives
//! the bits of the same fit from host memory and moves only scalars besides the solve's own.
//! On the PTX simulator, as CI runs it; with `CUDAMIN_REQUIRE_GPU=1` (feature `cuda`) on a
//! device.

mod common;

use common::device_backend;
use cudamin::problems::fit::{Columns, DeviceColumns, FitError, find_model};
use cudamin::problems::{Instance, LoadError};
use cudamin::{
    Backend, DataType, DeviceArray, Gradient, LeastSquaresResult, LmOptions, ProblemError,
    TermObjective, Traffic,
};

const POINTS: usize = 600;

/// Two decaying exponentials (exp-decay, p = 4) at `POINTS` points with a deterministic wobble,
/// and a σ per point: `(x, y, σ)`.
fn data() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let x: Vec<f64> = (0..POINTS).map(|i| i as f64 * 0.01).collect();
    let y = (x.iter().enumerate())
        .map(|(i, &t)| 3.0 * (-1.5 * t).exp() + 0.5 * (-0.2 * t).exp() + 1e-3 * (i as f64).sin())
        .collect();
    let sigma = (0..POINTS).map(|i| 0.5 + 0.001 * i as f64).collect();
    (x, y, sigma)
}

/// Levenberg–Marquardt from `[1, 1, 0.1, 0.1]` with scipy's defaults on a loaded fit.
fn solve(instance: Result<Instance, FitError>) -> LeastSquaresResult {
    let residuals = instance.unwrap().evaluator.into_least_squares().unwrap();
    let mut objective = TermObjective::new(residuals, Gradient::Exact);
    cudamin::least_squares(&mut objective, &[1.0, 1.0, 0.1, 0.1], &LmOptions::default()).unwrap()
}

/// The traffic of `work` on `backend`'s device.
fn counted<R>(backend: &Backend, work: impl FnOnce() -> R) -> (R, Traffic) {
    let before = backend.traffic().unwrap();
    let result = work();
    (result, backend.traffic().unwrap() - before)
}

fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

/// The fit from arrays on the device is the fit from host memory, bit for bit, and its table
/// is made and checked there: besides the solve's scalars, nothing crosses to the device, and
/// no more comes back than the host fit brings.
#[test]
fn a_fit_from_device_columns_gives_the_host_fits_bits_and_moves_only_scalars() {
    let backend = device_backend();
    let model = find_model("exp-decay").unwrap();
    let (x, y, sigma) = data();
    for weighted in [false, true] {
        let columns = Columns {
            x: &[&x],
            y: &y,
            sigma: weighted.then_some(&sigma[..]),
            data_type: DataType::F64,
        };
        let (host, host_traffic) = counted(&backend, || {
            solve(model.instantiate_columns(&backend, Some(4), columns, None, (POINTS, 0)))
        });
        let on_device = [
            backend.to_device(&x).unwrap(),
            backend.to_device(&y).unwrap(),
            backend.to_device(&sigma).unwrap(),
        ];
        let device_columns = DeviceColumns {
            x: &on_device[..1],
            y: &on_device[1],
            sigma: weighted.then_some(&on_device[2]),
        };
        let (device, device_traffic) = counted(&backend, || {
            solve(model.instantiate_device(&backend, Some(4), device_columns, None, (POINTS, 0)))
        });
        assert!(host.success, "{}", host.message);
        assert_eq!(bits(&device.x), bits(&host.x), "weighted: {weighted}");
        assert_eq!(device.cost.to_bits(), host.cost.to_bits());
        assert_eq!((device.nfev, device.njev), (host.nfev, host.njev));
        // The host fit uploads its table of three columns; the device fit none of it.
        let table = 3 * POINTS as u64;
        assert!(host_traffic.words_to_device >= table, "{host_traffic:?}");
        assert!(
            device_traffic.words_to_device + table <= host_traffic.words_to_device,
            "host {host_traffic:?}, device {device_traffic:?}"
        );
        // Checking the table (and σ) on the device brings back a word or two.
        assert!(
            device_traffic.words_to_host <= host_traffic.words_to_host + 4,
            "host {host_traffic:?}, device {device_traffic:?}"
        );
    }
}

/// A value that is not finite is found on the device and named by its column and row, as on
/// the host; a σ that is not positive by its index.
#[test]
fn refused_device_data_are_named_as_host_data_are() {
    let backend = device_backend();
    let model = find_model("exp-decay").unwrap();
    let (x, mut y, mut sigma) = data();
    y[17] = f64::NAN;
    let device = |values: &[f64]| backend.to_device(values).unwrap();
    let (dx, dy, ds) = (device(&x), device(&y), device(&data().2));
    let load = |y: &DeviceArray, sigma: Option<&DeviceArray>| {
        let columns = DeviceColumns {
            x: std::slice::from_ref(&dx),
            y,
            sigma,
        };
        model
            .instantiate_device(&backend, Some(4), columns, None, (POINTS, 0))
            .err()
            .expect("refused")
    };
    let error = load(&dy, Some(&ds));
    assert!(
        matches!(
            error,
            FitError::Load(LoadError::Problem(ProblemError::NonFiniteData {
                column: 1,
                row: 17,
                ..
            }))
        ),
        "{error}"
    );
    sigma[42] = -1.0;
    let error = load(&device(&data().1), Some(&device(&sigma)));
    assert!(
        matches!(error, FitError::Sigma { index: 42, value } if value == -1.0),
        "{error}"
    );
    // An infinite x is column 0's.
    let mut wide = x.clone();
    wide[3] = f64::INFINITY;
    let columns = DeviceColumns {
        x: &[device(&wide)],
        y: &device(&data().1),
        sigma: None,
    };
    let error = model
        .instantiate_device(&backend, Some(4), columns, None, (POINTS, 0))
        .err()
        .expect("refused");
    assert_eq!(
        error.to_string(),
        "exp-decay data: column 0, row 3 is inf; data must be finite"
    );
}

/// Columns of different lengths are refused before anything runs, as host columns are; so is
/// f32 storage of data that lie on the device.
#[test]
fn device_columns_of_other_lengths_are_refused() {
    let backend = device_backend();
    let model = find_model("exp-decay").unwrap();
    let (x, y, _) = data();
    let columns = DeviceColumns {
        x: &[backend.to_device(&x[1..]).unwrap()],
        y: &backend.to_device(&y).unwrap(),
        sigma: None,
    };
    let error = model
        .instantiate_device(&backend, Some(4), columns, None, (POINTS, 0))
        .err()
        .expect("refused");
    assert!(matches!(error, FitError::Lengths { .. }), "{error}");
}

/// The CPU has no device: a fit from device columns is refused there with a typed error.
#[test]
fn the_cpu_makes_no_device_table() {
    let error = Backend::Cpu.device_weights(None, 3).unwrap_err();
    assert!(error.to_string().contains("CPU"), "{error}");
    assert!(Backend::Cpu.device_columns(&[]).is_err());
}
