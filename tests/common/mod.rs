//! Measures shared by the integration tests.
#![allow(dead_code)] // each test crate uses a different subset

pub mod cli;

/// The simulator, or with `CUDAMIN_REQUIRE_GPU=1` (feature `cuda`) a device: where the tests of
/// arrays and data kept on a device run.
pub fn device_backend() -> cudamin::Backend {
    let on_device = std::env::var_os("CUDAMIN_REQUIRE_GPU").is_some_and(|v| v == "1");
    let choice = if on_device {
        cudamin::BackendChoice::Cuda
    } else {
        cudamin::BackendChoice::Simulated
    };
    cudamin::backend(choice).unwrap().0
}

/// `max(‖v‖∞, 1)`: what gradient errors are measured relative to.
pub fn gradient_scale(v: &[f64]) -> f64 {
    v.iter().fold(1.0_f64, |m, x| m.max(x.abs()))
}

/// `max_i |g_i − exact_i| / max(‖exact‖∞, 1)`.
pub fn relative_error(g: &[f64], exact: &[f64]) -> f64 {
    g.iter()
        .zip(exact)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
        / gradient_scale(exact)
}

/// Fit model `model` set up on `backend` with `data`'s points and the fewest predictors it
/// takes: `data` itself for one; for two (gauss-2d), the points on a 2-D grid over `[0, 8]²`
/// and `y` a spot on it (height 3 at (4, 4), width 2, on 0.5) plus 1 % of `data.y`, so that the
/// fit has one clear minimum.
pub fn fit_instance(
    model: &cudamin::problems::fit::Model,
    backend: &cudamin::Backend,
    data: &cudamin::problems::fit::FitData,
) -> cudamin::problems::Instance {
    use cudamin::problems::fit::Columns;
    let points = data.y.len();
    let one = Columns {
        x: &[&data.x],
        y: &data.y,
        sigma: data.sigma.as_deref(),
        data_type: cudamin::DataType::F64,
    };
    let first = match model.instantiate_columns(backend, None, one, None, (points, 0)) {
        Ok(instance) => return instance,
        Err(refused) => refused.to_string(),
    };
    let side = (points as f64).sqrt().ceil() as usize;
    let (u, v): (Vec<f64>, Vec<f64>) = (0..points)
        .map(|i| ((i % side) as f64, (i / side) as f64))
        .map(|(a, b)| (8.0 * a / side as f64, 8.0 * b / side as f64))
        .unzip();
    let y: Vec<f64> = (u.iter().zip(&v).zip(&data.y))
        .map(|((a, b), y)| {
            let r2 = (a - 4.0).powi(2) + (b - 4.0).powi(2);
            3.0 * (-r2 / 8.0).exp() + 0.5 + 0.01 * y
        })
        .collect();
    let two = Columns {
        x: &[&u, &v],
        y: &y,
        sigma: data.sigma.as_deref(),
        data_type: cudamin::DataType::F64,
    };
    (model.instantiate_columns(backend, None, two, None, (points, 0))).unwrap_or_else(|e| {
        panic!(
            "{} takes neither one predictor ({first}) nor two: {e}",
            model.name
        )
    })
}
