//! Test objectives with analytic gradients, shared by the `solver_*` tests.
#![allow(dead_code)] // each test crate uses a different subset

pub use cudamin::problems::random::SplitMix64;
use cudamin::{EvalError, Objective};
use cudamin::{
    Method, OptimizeResult, Options, SolveError, Status, minimize, minimize_with_observer,
};
use std::ops::ControlFlow;

/// Minimizes `objective` by `method` (the tests' shorthand for [`minimize`]).
pub fn solve(
    objective: &mut dyn Objective,
    x0: &[f64],
    method: Method,
    options: &Options,
) -> Result<OptimizeResult, SolveError> {
    minimize(objective, x0, method, options)
}

/// `method` on 2-variable Rosenbrock from scipy's standard start (−1.2, 1).
pub fn solve_rosenbrock2(method: Method, options: &Options) -> Result<OptimizeResult, SolveError> {
    solve(&mut Rosenbrock { n: 2 }, &[-1.2, 1.0], method, options)
}

/// A limited-memory solve's `hess_inv_pairs` (2-variable Rosenbrock from (−1.2, 1), `options`
/// with `return_hess_inv` set, stopped by the observer after iteration `stop_after` where
/// given) are the pairs its last direction came from, as scipy's L-BFGS-B reports them,
/// however the solve ended: the steps between the observed iterates and the gradient changes
/// between them (recomputed here), all but the last step's, the last `options.memory` of them,
/// oldest first; and their `H` meets the newest pair's secant condition, `H·y = s`. Returns
/// the solve's status.
pub fn check_hess_inv_pairs(method: Method, options: Options, stop_after: Option<usize>) -> Status {
    let x0 = [-1.2, 1.0];
    let options = Options {
        return_hess_inv: true,
        ..options
    };
    let mut rosenbrock = Rosenbrock { n: 2 };
    let mut iterates = vec![x0.to_vec()];
    let result = minimize_with_observer(&mut rosenbrock, &x0, method, &options, &mut |it| {
        iterates.push(it.x().unwrap().into_owned());
        if stop_after == Some(it.nit) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .unwrap();
    let case = format!("{method:?}, memory {}, {:?}", options.memory, result.status);
    assert_eq!(iterates.len(), result.nit + 1, "{case}");
    let pairs = result.hess_inv_pairs.expect("pairs, as asked");
    let mut gradient = |x: &[f64]| {
        let mut g = vec![0.0; 2];
        rosenbrock.gradient(x, &mut g).unwrap();
        g
    };
    // Steps 0 … nit − 2 made pairs; the last `memory` of them are kept.
    let made = result.nit.saturating_sub(1);
    let first = made.saturating_sub(options.memory);
    assert_eq!(pairs.s().len(), made - first, "{case}");
    assert_eq!(pairs.y().len(), pairs.s().len());
    assert!(pairs.s().iter().chain(pairs.y()).all(|v| v.len() == 2));
    for (row, i) in (first..made).enumerate() {
        let (x, x_next) = (&iterates[i], &iterates[i + 1]);
        let (g, g_next) = (gradient(x), gradient(x_next));
        for j in 0..2 {
            let s = x_next[j] - x[j];
            assert!(
                (pairs.s()[row][j] - s).abs() <= 1e-14 * x_next[j].abs().max(1.0),
                "{case}: s of step {i}: {} vs {s}",
                pairs.s()[row][j]
            );
            assert_eq!(pairs.y()[row][j], g_next[j] - g[j], "{case}: y of step {i}");
        }
    }
    if let Some(newest) = pairs.s().len().checked_sub(1) {
        let hy = pairs.dot(&pairs.y()[newest]).unwrap();
        for (a, b) in hy.iter().zip(&pairs.s()[newest]) {
            assert!(
                (a - b).abs() <= 1e-10 * b.abs().max(1e-8),
                "{case}: H·y {a} vs s {b}"
            );
        }
    }
    assert!(pairs.fixed().is_empty());
    result.status
}

/// Asserts that `result` is the minimum of [`SeparableExp`] in `n` variables.
pub fn assert_at_separable_minimum(result: &OptimizeResult, n: usize) {
    assert!(
        close(result.fun, n as f64 * SeparableExp::F_STAR, 1e-9),
        "{}",
        result.fun
    );
    assert!(
        result
            .x
            .iter()
            .all(|&x| (x - SeparableExp::X_STAR).abs() < 1e-5)
    );
}

pub fn inf_norm(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m: f64, x| m.max(x.abs()))
}

/// `|a − b| ≤ rtol·max(|a|, |b|, 1)`.
pub fn close(a: f64, b: f64, rtol: f64) -> bool {
    (a - b).abs() <= rtol * a.abs().max(b.abs()).max(1.0)
}

/// scipy's `rosen`: `Σᵢ 100(xᵢ₊₁ − xᵢ²)² + (1 − xᵢ)²`, minimum 0 at ones.
pub struct Rosenbrock {
    pub n: usize,
}

impl Objective for Rosenbrock {
    fn dim(&self) -> usize {
        self.n
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        Ok(x.windows(2)
            .map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2))
            .sum())
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        g.fill(0.0);
        for i in 0..x.len().saturating_sub(1) {
            let (a, b) = (x[i], x[i + 1]);
            let t = b - a * a;
            g[i] += -400.0 * a * t - 2.0 * (1.0 - a);
            g[i + 1] += 200.0 * t;
        }
        Ok(())
    }
}

/// Moré–Garbow–Hillstrom problem 21, the extended Rosenbrock function:
/// `Σₖ 100(x₂ₖ − x₂ₖ₋₁²)² + (1 − x₂ₖ₋₁)²` over independent pairs, minimum 0 at ones.
pub struct ExtendedRosenbrock {
    pub n: usize,
}

impl ExtendedRosenbrock {
    /// The standard start `(−1.2, 1, −1.2, 1, …)`.
    pub fn x0(&self) -> Vec<f64> {
        (0..self.n)
            .map(|i| if i % 2 == 0 { -1.2 } else { 1.0 })
            .collect()
    }
}

impl Objective for ExtendedRosenbrock {
    fn dim(&self) -> usize {
        self.n
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        Ok(x.chunks_exact(2)
            .map(|p| 100.0 * (p[1] - p[0] * p[0]).powi(2) + (1.0 - p[0]).powi(2))
            .sum())
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        for (p, g) in x.chunks_exact(2).zip(g.chunks_exact_mut(2)) {
            let t = p[1] - p[0] * p[0];
            g[0] = -400.0 * p[0] * t - 2.0 * (1.0 - p[0]);
            g[1] = 200.0 * t;
        }
        Ok(())
    }
}

/// `Σᵢ xᵢ² + e^{xᵢ}`: each coordinate solves `2x + eˣ = 0`.
pub struct SeparableExp {
    pub n: usize,
}

impl SeparableExp {
    pub const X_STAR: f64 = -0.351733711249196;
    /// The minimum per coordinate.
    pub const F_STAR: f64 = 0.827184026128;

    /// A start with coordinates spread over `[−1.5, 1.5]`, so that the problem does not collapse
    /// to one dimension.
    pub fn x0(&self) -> Vec<f64> {
        (0..self.n).map(|i| 0.5 * ((i % 7) as f64 - 3.0)).collect()
    }
}

impl Objective for SeparableExp {
    fn dim(&self) -> usize {
        self.n
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        Ok(x.iter().map(|x| x * x + x.exp()).sum())
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        for (g, x) in g.iter_mut().zip(x) {
            *g = 2.0 * x + x.exp();
        }
        Ok(())
    }
}

/// Uniform in `[−1, 1)` from the library's seeded generator.
pub fn symmetric(rng: &mut SplitMix64) -> f64 {
    2.0 * rng.uniform() - 1.0
}

/// `½xᵀAx − bᵀx` with `A` symmetric positive definite, built with a known minimizer.
pub struct Quadratic {
    pub n: usize,
    /// Row-major `n×n`.
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub minimizer: Vec<f64>,
}

impl Quadratic {
    /// `A = Q·diag(λ)·Qᵀ` with `λ` log-spaced over `[1, condition]` and `Q` a product of three
    /// random Householder reflections; `b = A·x*` for a random `x*`.
    pub fn random(n: usize, condition: f64, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            let fraction = if n > 1 {
                i as f64 / (n - 1) as f64
            } else {
                0.0
            };
            a[i * n + i] = condition.powf(fraction);
        }
        for _ in 0..3 {
            let v: Vec<f64> = (0..n).map(|_| symmetric(&mut rng)).collect();
            reflect_both_sides(&mut a, &v);
        }
        let minimizer: Vec<f64> = (0..n).map(|_| symmetric(&mut rng)).collect();
        let b = (0..n)
            .map(|i| (0..n).map(|j| a[i * n + j] * minimizer[j]).sum())
            .collect();
        Self { n, a, b, minimizer }
    }

    /// `A·x`.
    pub fn apply(&self, x: &[f64]) -> Vec<f64> {
        self.a
            .chunks_exact(self.n)
            .map(|row| row.iter().zip(x).map(|(a, x)| a * x).sum())
            .collect()
    }
}

/// `A ← P·A·P` with the reflection `P = I − 2vvᵀ/vᵀv` (`A` row-major), symmetrized after.
fn reflect_both_sides(a: &mut [f64], v: &[f64]) {
    let n = v.len();
    let vv: f64 = v.iter().map(|x| x * x).sum();
    // P·A = A − 2v(vᵀA)/vᵀv.
    let vt_a: Vec<f64> = (0..n)
        .map(|j| (0..n).map(|i| v[i] * a[i * n + j]).sum())
        .collect();
    for i in 0..n {
        for j in 0..n {
            a[i * n + j] -= 2.0 * v[i] * vt_a[j] / vv;
        }
    }
    // (P·A)·P = P·A − 2(P·A·v)vᵀ/vᵀv.
    let a_v: Vec<f64> = (0..n)
        .map(|i| (0..n).map(|j| a[i * n + j] * v[j]).sum())
        .collect();
    for i in 0..n {
        for j in 0..n {
            a[i * n + j] -= 2.0 * a_v[i] * v[j] / vv;
        }
    }
    for i in 0..n {
        for j in i + 1..n {
            let mean = 0.5 * (a[i * n + j] + a[j * n + i]);
            (a[i * n + j], a[j * n + i]) = (mean, mean);
        }
    }
}

impl Objective for Quadratic {
    fn dim(&self) -> usize {
        self.n
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        let ax = self.apply(x);
        Ok(x.iter()
            .zip(&ax)
            .zip(&self.b)
            .map(|((x, ax), b)| 0.5 * x * ax - b * x)
            .sum())
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        for ((g, ax), b) in g.iter_mut().zip(self.apply(x)).zip(&self.b) {
            *g = ax - b;
        }
        Ok(())
    }
}

/// `Σ (xᵢ − 2)²`, whose reference gradient (`Objective::reference_gradient`) is the true one
/// plus `offset`: a gradient whose claimed error the tests choose.
pub struct Claimed {
    pub offset: Vec<f64>,
}

impl Objective for Claimed {
    fn dim(&self) -> usize {
        self.offset.len()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        Ok(x.iter().map(|v| (v - 2.0).powi(2)).sum())
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        for (g, v) in g.iter_mut().zip(x) {
            *g = 2.0 * (v - 2.0);
        }
        Ok(())
    }

    fn reference_gradient(
        &mut self,
        x: &[f64],
        into: &mut [f64],
    ) -> Result<Option<cudamin::Gradient>, EvalError> {
        self.gradient(x, into)?;
        for (r, offset) in into.iter_mut().zip(&self.offset) {
            *r += offset;
        }
        Ok(Some(cudamin::Gradient::Exact))
    }
}
