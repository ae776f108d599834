//! The project's own problems (the MGH set lives in `mgh.rs`). Facts: ../shared/reference.

use super::problem::{
    LoadError, Problem, Size, load, load_least_squares, load_sum, repeating, zeros,
};
use super::random::SplitMix64;
use cudamin_host::TermProblem;
use cudamin_host::plumbing::{cholesky_into, solve_lower};
use gpu_kernels::terms::fit::ExpSin;
use gpu_kernels::terms::matmul_squares::INNER;
use gpu_kernels::terms::{
    ChainedRosenbrock, ExtPowell, ExtRosenbrock, LsqExpSin, MatmulSquares, PoissonRegression,
    Quadratic, SeedExpSum,
};
use gpu_kernels::{L2Penalty, SumOfSquares};
use ndarray::ArrayView2;

/// `x² + eˣ` at its minimum `x = −W(½)`: `W(½)·(W(½) + 2)`.
const SEED_EXPSUM_MIN_PER_VARIABLE: f64 = 0.827184026128;

/// Seed of `lsq-expsin`'s generated data.
pub const LSQ_EXPSIN_SEED: u64 = 20_261_122;
/// Seed of `poisson-regression`'s generated data.
pub const POISSON_SEED: u64 = 20_261_125;
/// Seed of `quadratic`'s matrix and vector.
pub const QUADRATIC_SEED: u64 = 1_981;
/// Seed of `matmul-squares`' `B` and starting `A`.
pub const MATMUL_SEED: u64 = 2_024;
/// The columns of `matmul-squares`' `B`.
pub const MATMUL_COLUMNS: usize = 32;

pub(super) static PROBLEMS: &[Problem] = &[
    Problem::new(
        "seed-expsum",
        "Σ x_i² + e^{x_i} (the seed articles' example)",
        |backend, Size { n, .. }| {
            let f_star = n as f64 * SEED_EXPSUM_MIN_PER_VARIABLE;
            load(
                backend,
                TermProblem::<SeedExpSum>::new(n)?,
                vec![0.5; n],
                Some(f_star),
            )
        },
    )
    .n("n >= 1", 10_000)
    .x0("0.5 everywhere")
    .f_star("n · 0.827184026128"),
    Problem::new(
        "ext-rosenbrock",
        "extended Rosenbrock (MGH 21), disjoint pairs",
        |backend, Size { n, .. }| {
            load(
                backend,
                TermProblem::<ExtRosenbrock>::new(n)?,
                repeating(&[-1.2, 1.0], n),
                Some(0.0),
            )
        },
    )
    .n("n even, >= 2", 1_000)
    .x0("(-1.2, 1, -1.2, 1, ...)")
    .f_star("0 at (1, ..., 1)"),
    Problem::new(
        "rosenbrock",
        "chained Rosenbrock, = scipy.optimize.rosen",
        |backend, Size { n, .. }| {
            load(
                backend,
                TermProblem::<ChainedRosenbrock>::new(n)?,
                repeating(&[-1.2, 1.0], n),
                Some(0.0),
            )
        },
    )
    .n("n >= 2", 100)
    .x0("(-1.2, 1, -1.2, 1, ...)")
    .f_star(
        "0 at (1, ..., 1); a local minimum near x_1 = -1 for 4 <= n <= 7, f ≈ 3.99 at n = 1000",
    ),
    Problem::new(
        "ext-powell",
        "extended Powell singular (MGH 22)",
        |backend, Size { n, .. }| {
            let problem = TermProblem::<ExtPowell>::new(n)?;
            load(
                backend,
                problem,
                repeating(&[3.0, -1.0, 0.0, 1.0], n),
                Some(0.0),
            )
        },
    )
    .n("n a multiple of 4", 1_000)
    .x0("(3, -1, 0, 1, 3, -1, 0, 1, ...)")
    .f_star("0 at the origin (singular Hessian)"),
    expsin_rules(Problem::new(
        "lsq-expsin",
        "least-squares fit y ≈ θ0·exp(-θ1·t) + Σ_{k=2}^{n-1} θk·sin(k·t)",
        |backend,
         Size {
             n,
             points,
             data_type,
         }| {
            let (values, rows) = lsq_expsin_data(n, points)?;
            load(
                backend,
                TermProblem::<LsqExpSin>::with_data(n, values, rows)?.stored_as(data_type)?,
                vec![0.5; n],
                None,
            )
        },
    ))
    .footprint(|n, points| points.checked_mul(n.max(2))),
    expsin_rules(Problem::new(
        "fit-expsin",
        "lsq-expsin's data as residuals of the expsin fit model, which LM also takes",
        |backend,
         Size {
             n,
             points,
             data_type,
         }| {
            let (values, rows) = fit_expsin_data(n, points)?;
            load_least_squares(
                backend,
                TermProblem::<SumOfSquares<ExpSin>>::with_data(n, values, rows)?
                    .stored_as(data_type)?,
                vec![0.5; n],
                None,
            )
        },
    ))
    .footprint(|_, points| points.checked_mul(3)),
    Problem::new(
        "matmul-squares",
        "Σ ((A·B)_ij)² over A (m × 16), B (16 × 32) fixed: torch's ((A @ B) ** 2).sum()",
        |backend, Size { n, .. }| {
            let (b, x0) = matmul_data(n);
            load(
                backend,
                TermProblem::<MatmulSquares>::with_data(n, b, INNER)?,
                x0,
                Some(0.0),
            )
        },
    )
    .n("n = 16·m, the entries of A by rows", 16_000)
    .x0("U(-1, 1) entries, fixed seed")
    .f_star("0 at A = 0"),
    Problem::new(
        "poisson-regression",
        "Poisson regression, log link, L2 penalty: Σ e^η − y·η + ½λ·Σ_{j≥1} θj², \
         η = θ0 + Σ_{j≥1} θj·x_j, λ = 1, generated counts",
        |backend,
         Size {
             n,
             points,
             data_type,
         }| {
            let (values, rows) = poisson_data(n, points)?;
            load_sum(
                backend,
                TermProblem::<PoissonRegression>::with_data(n, values, rows)?
                    .stored_as(data_type)?,
                TermProblem::<L2Penalty>::with_data(n, poisson_penalty(n), n)?,
                vec![0.0; n],
                None,
            )
        },
    )
    .n("n >= 1 parameters (an intercept and n - 1 features)", 33)
    .footprint(|n, points| points.checked_mul(n.max(1)))
    .points(100_000)
    .x0("0 everywhere")
    .f_star("data-dependent"),
    Problem::new(
        "quadratic",
        "dense SPD quadratic ½xᵀAx − bᵀx, A and b from a fixed seed",
        |backend, Size { n, .. }| {
            let values = quadratic_data(n)?;
            let f_star = quadratic_minimum(&values, n)?;
            load(
                backend,
                TermProblem::<Quadratic>::with_data(n, values, n)?,
                vec![0.0; n],
                f_star,
            )
        },
    )
    .n("n >= 1 (dense: the gradient costs O(n³))", 100)
    // A and b, and the Cholesky factor of A that gives the minimum.
    .footprint(|n, _| n.checked_mul(n.checked_mul(2)?.checked_add(1)?))
    .x0("0 everywhere")
    .f_star("-½·bᵀA⁻¹b (by Cholesky)"),
];

/// `θ_true` of the `lsq-expsin` data: `(2, 0.7, 1/2, −1/3, 1/4, …)`, i.e. `θ_k = (−1)^k / k`.
pub fn lsq_expsin_theta_true(p: usize) -> Vec<f64> {
    (0..p)
        .map(|k| match k {
            0 => 2.0,
            1 => 0.7,
            k => (if k % 2 == 0 { 1.0 } else { -1.0 }) / k as f64,
        })
        .collect()
}

/// The `lsq-expsin` data for `p` parameters and `points` points, column-major: `t`, `y`, then
/// `sin(k·t)` for `k = 2 .. p−1` (the model's basis, computed here once). `t ~ U(0, 10)` and
/// `y = m(θ_true, t) + 0.01·ε`, `ε ~ N(0, 1)`. Returns (values, rows), or `TooLarge` when the
/// values cannot be allocated.
pub fn lsq_expsin_data(p: usize, points: usize) -> Result<(Vec<f64>, usize), LoadError> {
    let mut values = zeros(points.checked_mul(p.max(2)), p, points)?;
    let (t_y, basis) = values.split_at_mut(2 * points);
    let (t, y) = t_y.split_at_mut(points);
    expsin_points(p, t, y, |k, j, sine| basis[(k - 2) * points + j] = sine);
    Ok((values, points))
}

/// `fit-expsin`'s data for `p` parameters: lsq-expsin's points as the fit models take them, in
/// three columns `t`, `y` and the weights (all 1).
pub fn fit_expsin_data(p: usize, points: usize) -> Result<(Vec<f64>, usize), LoadError> {
    let mut values = zeros(points.checked_mul(3), p, points)?;
    let (t_y, weights) = values.split_at_mut(2 * points);
    let (t, y) = t_y.split_at_mut(points);
    expsin_points(p, t, y, |_, _, _| {});
    weights.fill(1.0);
    Ok((values, points))
}

/// The generated points of the expsin problems, from their seed, into `t` and `y`;
/// `sine(k, j, sin(k·t_j))` receives each sine the model sums, for a caller that keeps them.
fn expsin_points(p: usize, t: &mut [f64], y: &mut [f64], mut sine: impl FnMut(usize, usize, f64)) {
    // The model always reads θ0 and θ1; a p below 2 gets its t and y columns, and the term's
    // check then refuses it with its own message.
    let theta = lsq_expsin_theta_true(p.max(2));
    let mut rng = SplitMix64::new(LSQ_EXPSIN_SEED);
    for (j, (tj, yj)) in t.iter_mut().zip(y.iter_mut()).enumerate() {
        *tj = 10.0 * rng.uniform();
        let mut model = theta[0] * (-theta[1] * *tj).exp();
        for (k, theta_k) in theta.iter().enumerate().skip(2) {
            let sin_kt = (k as f64 * *tj).sin();
            sine(k, j, sin_kt);
            model += theta_k * sin_kt;
        }
        *yj = model + 0.01 * rng.normal();
    }
}

/// The sizes, start and minimum of the two expsin problems.
const fn expsin_rules(problem: Problem) -> Problem {
    problem
        .n("n >= 2 parameters", 16)
        .points(100_000)
        .x0("0.5 everywhere")
        .f_star("data-dependent: about 1e-4·(points - n), the generated noise")
}

/// `poisson-regression`'s penalty weight `λ` on each feature's parameter.
pub const POISSON_LAMBDA: f64 = 1.0;

/// `poisson-regression`'s `L2Penalty` data for `n` parameters: weights `(0, λ, …, λ)` (the
/// intercept is not penalized), then centres 0.
pub fn poisson_penalty(n: usize) -> Vec<f64> {
    let weights = (0..n).map(|j| if j == 0 { 0.0 } else { POISSON_LAMBDA });
    weights.chain(std::iter::repeat_n(0.0, n)).collect()
}

/// `θ_true` of the `poisson-regression` data: intercept 0.5, then `(−1)^j·0.4/√(p−1)` for
/// feature `j`, so that `η` has about unit spread whatever `p`.
pub fn poisson_theta_true(p: usize) -> Vec<f64> {
    let scale = 0.4 / ((p.max(2) - 1) as f64).sqrt();
    (0..p)
        .map(|j| match j {
            0 => 0.5,
            j if j % 2 == 0 => scale,
            _ => -scale,
        })
        .collect()
}

/// The `poisson-regression` data for `p` parameters and `points` rows, column-major: the count
/// `y`, then features `x₁ … x_{p−1}` ~ N(0, 1), with `y ~ Poisson(e^η)` at
/// [`poisson_theta_true`] (Knuth's product of uniforms: `e^η` stays small). Returns (values,
/// rows), or `TooLarge` when the values cannot be allocated.
pub fn poisson_data(p: usize, points: usize) -> Result<(Vec<f64>, usize), LoadError> {
    let mut values = zeros(points.checked_mul(p.max(1)), p, points)?;
    let theta = poisson_theta_true(p.max(1));
    let mut rng = SplitMix64::new(POISSON_SEED);
    let (y, features) = values.split_at_mut(points);
    for (j, y) in y.iter_mut().enumerate() {
        let mut eta = theta[0];
        for (f, theta) in theta.iter().enumerate().skip(1) {
            let x = rng.normal();
            features[(f - 1) * points + j] = x;
            eta += theta * x;
        }
        // Knuth: the count of uniforms whose running product stays above e^(−mean).
        let (limit, mut product, mut count) = ((-eta.exp()).exp(), rng.uniform(), 0.0);
        while product > limit {
            product *= rng.uniform();
            count += 1.0;
        }
        *y = count;
    }
    Ok((values, points))
}

/// `matmul-squares`' `B` (`16 × 32`, column-major, entries `U(−1, 1)/4`) and its starting
/// `A` (`n` entries `U(−1, 1)`), from [`MATMUL_SEED`].
pub fn matmul_data(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut rng = SplitMix64::new(MATMUL_SEED);
    let mut uniform = move || 2.0 * rng.uniform() - 1.0;
    let b = (0..INNER * MATMUL_COLUMNS)
        .map(|_| 0.25 * uniform())
        .collect();
    (b, (0..n).map(|_| uniform()).collect())
}

/// `quadratic`'s data: the `n` columns of a symmetric, diagonally dominant (hence positive
/// definite) `A` with off-diagonal entries `U(−1, 1)` and diagonal `1 + Σ_j |A_ij|`, then `b` with
/// `N(0, 1)` entries. Column-major, `n` rows; `TooLarge` when it cannot be allocated.
pub fn quadratic_data(n: usize) -> Result<Vec<f64>, LoadError> {
    let mut values = zeros(n.checked_add(1).and_then(|c| c.checked_mul(n)), n, 0)?;
    let mut rng = SplitMix64::new(QUADRATIC_SEED);
    for i in 0..n {
        for j in i + 1..n {
            let a = 2.0 * rng.uniform() - 1.0;
            values[j * n + i] = a;
            values[i * n + j] = a;
        }
    }
    for i in 0..n {
        let off_diagonal: f64 = (0..n).map(|j| values[j * n + i].abs()).sum();
        values[i * n + i] = 1.0 + off_diagonal;
    }
    for b in &mut values[n * n..] {
        *b = rng.normal();
    }
    Ok(values)
}

/// `−½·bᵀA⁻¹b`, the minimum of `½xᵀAx − bᵀx`, via Cholesky `A = LLᵀ`: `bᵀA⁻¹b = ‖L⁻¹b‖²`.
/// `None` if `A` is not positive definite (it always is, by construction); `TooLarge` when the
/// factor, another `n²` values, cannot be allocated.
fn quadratic_minimum(values: &[f64], n: usize) -> Result<Option<f64>, LoadError> {
    // `A` is symmetric, so its column-major columns read as rows.
    let Ok(a) = ArrayView2::from_shape((n, n), &values[..n * n]) else {
        return Ok(None);
    };
    let mut l = zeros(n.checked_mul(n), n, 0)?; // by rows
    if cholesky_into(a, &mut l).is_err() {
        return Ok(None);
    }
    let mut z = values[n * n..].to_vec(); // z = L⁻¹b
    solve_lower(&l, &mut z);
    Ok(Some(-0.5 * z.iter().map(|v| v * v).sum::<f64>()))
}
