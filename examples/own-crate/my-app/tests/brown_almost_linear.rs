//! Brown's almost-linear function, residuals by index without data, solved by
//! Levenberg–Marquardt on the CPU from its standard start: it ends at a known minimum,
//! `Σr² = 0` at `x = (α, …, α, α^(1−n))`.

use cudamin::kernels::LeastSquares;
use cudamin::{Backend, Gradient, LmOptions, TermObjective, TermProblem, least_squares};
use my_kernels::BrownAlmostLinear;

#[test]
fn levenberg_marquardt_finds_a_zero_of_browns_almost_linear_function() {
    let n = 10;
    let problem = TermProblem::<LeastSquares<BrownAlmostLinear>>::new(n).unwrap();
    let residuals = Backend::Cpu.load_least_squares(problem).unwrap();
    let mut objective = TermObjective::new(residuals, Gradient::Exact);
    let x0 = vec![0.5; n];
    let result = least_squares(&mut objective, &x0, &LmOptions::default()).unwrap();
    assert!(result.success, "{}", result.message);
    // cost is ½Σr², scipy least_squares' convention.
    assert!(
        result.cost <= 1e-20,
        "cost {:e} at {:?}",
        result.cost,
        result.x
    );
    let alpha = result.x[0];
    for (j, &x) in result.x.iter().enumerate() {
        let expected = if j + 1 < n {
            alpha
        } else {
            alpha.powi(1 - n as i32)
        };
        assert!((x - expected).abs() <= 1e-8, "x = {:?}", result.x);
    }
    let root = n as f64 * alpha.powi(n as i32) - (n + 1) as f64 * alpha.powi(n as i32 - 1) + 1.0;
    assert!(root.abs() <= 1e-8, "α = {alpha} is no root: {root:e}");
}
