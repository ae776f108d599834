//! The parameters' covariance at a least-squares solution, from the triangle `R` of `J = Q·R`,
//! as `curve_fit` reports it: `JᵀJ` is never formed.

use crate::backend::Factor;
use crate::linalg::svd::svd;
use crate::objective::free_factor;

/// `curve_fit`'s `pcov`, with what the factor says about identifiability.
#[derive(Clone, Debug, PartialEq)]
pub struct Covariance {
    /// `pcov`, `n × n` row-major.
    pub matrix: Vec<f64>,
    /// The rank of `J`: its singular values above `ε·max(m, n)·σ_max` (scipy's tolerance).
    pub rank: usize,
    /// The parameters with a component in `J`'s null space (more than `√ε` in a unit null
    /// vector): the fit determines some combination of them only, and their rows and
    /// columns of `matrix` are those of the pseudo-inverse. Empty when `J` has full rank.
    pub not_identifiable: Vec<usize>,
}

impl Covariance {
    /// The standard errors, `√diag(pcov)`.
    pub fn standard_errors(&self) -> Vec<f64> {
        let n = self.matrix.len().isqrt();
        (0..n).map(|j| self.matrix[j * n + j].sqrt()).collect()
    }

    /// This covariance of the parameters `free` of `n`, placed among all `n`: `free[a]` takes
    /// row and column `a`, and the others, held, rows and columns of zeros.
    pub fn spread(self, free: &[usize], n: usize) -> Covariance {
        let mut matrix = vec![0.0; n * n];
        spread_in(&self.matrix, free, &mut matrix);
        Covariance {
            matrix,
            rank: self.rank,
            not_identifiable: self.not_identifiable.iter().map(|&a| free[a]).collect(),
        }
    }
}

/// `matrix`, the covariance of the parameters `free` (`k × k`), placed among all `n` in `out`
/// (`n × n`): `free[a]` takes row and column `a`, and the held ones rows and columns of zeros.
pub fn spread_in(matrix: &[f64], free: &[usize], out: &mut [f64]) {
    let (k, n) = (free.len(), out.len().isqrt());
    out.fill(0.0);
    for (a, &i) in free.iter().enumerate() {
        for (b, &j) in free.iter().enumerate() {
            out[i * n + j] = matrix[a * k + b];
        }
    }
}

/// [`covariance`] where the variables `fixed` says were held: that of the free parameters
/// alone (the triangle of `J`'s free columns, from `factor` over all of them), with zero rows
/// and columns for the fixed ones; `Σr²/(m − k)`, `k` the free parameters, is the scale, and
/// `not_identifiable` names parameters by their place among all of them.
pub fn covariance_of_free(
    factor: &Factor,
    fixed: &[bool],
    sum_of_squares: f64,
    residuals: usize,
    absolute_sigma: bool,
) -> Option<Covariance> {
    let n = factor.qtr.len();
    let free: Vec<usize> = (0..n).filter(|&i| !fixed[i]).collect();
    if free.len() == n {
        return covariance(factor, sum_of_squares, residuals, absolute_sigma);
    }
    let free_only = free_factor(factor, &free);
    let of_free = covariance(&free_only, sum_of_squares, residuals, absolute_sigma)?;
    Some(of_free.spread(&free, n))
}

/// The parameters' covariance at a solution from its [`Factor`], as `curve_fit`'s `pcov`:
/// `(JᵀJ)⁻¹ = R⁻¹R⁻ᵀ` when the residuals are weighted by their true standard deviations
/// (`absolute_sigma`); otherwise that times the reduced χ², `Σr² / (m − n)`, which takes the
/// residuals' scatter as the measure of their uncertainty.
///
/// Where `J` is rank-deficient (a singular value at most `ε·max(m, n)·σ_max`, scipy's
/// tolerance), the Moore–Penrose pseudo-inverse `V·Σ⁻²·Vᵀ` over the singular values above it,
/// as `curve_fit` takes it with bounds (`method='trf'`), and the parameters in the null space
/// are named. `None` where no estimate exists: `m ≤ n` without `absolute_sigma` (`curve_fit`
/// fills `pcov` with `inf` then), or an `R` with a non-finite entry.
///
/// ```
/// use cudamin_host::{Factor, covariance};
///
/// // R = diag(2, 1) (JᵀJ = diag(4, 1)), Σr² = 6 over 5 residuals: reduced χ² = 6 / (5 − 2) = 2.
/// let mut factor = Factor::new(2);
/// factor.r = vec![2.0, 0.0, 0.0, 1.0];
/// assert_eq!(covariance(&factor, 6.0, 5, true).unwrap().matrix, [0.25, 0.0, 0.0, 1.0]);
/// assert_eq!(covariance(&factor, 6.0, 5, false).unwrap().matrix, [0.5, 0.0, 0.0, 2.0]);
/// // Two proportional columns: rank 1, neither parameter identifiable on its own.
/// factor.r = vec![1.0, 2.0, 0.0, 0.0];
/// let pcov = covariance(&factor, 6.0, 5, true).unwrap();
/// assert_eq!((pcov.rank, pcov.not_identifiable), (1, vec![0, 1]));
/// ```
pub fn covariance(
    factor: &Factor,
    sum_of_squares: f64,
    residuals: usize,
    absolute_sigma: bool,
) -> Option<Covariance> {
    let n = factor.qtr.len();
    let (mut inverse, mut matrix) = (vec![0.0; n * n], vec![0.0; n * n]);
    let fit = (sum_of_squares, residuals, absolute_sigma);
    let (rank, not_identifiable) = covariance_in(&factor.r, fit, &mut inverse, &mut matrix)?;
    Some(Covariance {
        matrix,
        rank,
        not_identifiable,
    })
}

/// [`covariance`] of the `n × n` triangle `r` (`n² = r.len()`) for `(Σr², residuals,
/// absolute_sigma)`, into `matrix`, with `inverse` (`n × n`) as scratch: the rank and the
/// parameters not identifiable. It allocates only where `J` may be rank-deficient, so a batch
/// of small fits takes it with buffers on the stack.
pub fn covariance_in(
    r: &[f64],
    (sum_of_squares, residuals, absolute_sigma): (f64, usize, bool),
    inverse: &mut [f64],
    matrix: &mut [f64],
) -> Option<(usize, Vec<usize>)> {
    let n = r.len().isqrt();
    let scale = if absolute_sigma {
        1.0
    } else if residuals > n {
        sum_of_squares / (residuals - n) as f64
    } else {
        return None;
    };
    if r.iter().any(|v| !v.is_finite()) {
        return None;
    }
    triangle_inverse(r, n, inverse);
    let cut = |largest: f64| f64::EPSILON * residuals.max(n) as f64 * largest;
    // σ_min ≥ 1/‖R⁻¹‖_F and σ_max ≤ ‖R‖_F: past this test every singular value is above
    // the cut, and the SVD is not needed to say so.
    let clearly_full = 1.0 / frobenius(inverse) > cut(frobenius(r));
    let (rank, not_identifiable) = match clearly_full {
        true => {
            inverse_product(inverse, n, scale, matrix);
            (n, Vec::new())
        }
        false => by_singular_values(r, n, inverse, scale, cut, matrix),
    };
    matrix
        .iter()
        .all(|v| v.is_finite())
        .then_some((rank, not_identifiable))
}

/// `R⁻¹` by columns (back substitution) into `inverse`; non-finite where `R` is singular.
fn triangle_inverse(r: &[f64], n: usize, inverse: &mut [f64]) {
    inverse.fill(0.0);
    for j in 0..n {
        for i in (0..=j).rev() {
            let identity = if i == j { 1.0 } else { 0.0 };
            let sum: f64 = (i + 1..=j).map(|k| r[i * n + k] * inverse[k * n + j]).sum();
            inverse[i * n + j] = (identity - sum) / r[i * n + i];
        }
    }
}

/// `‖m‖_F`; NaN or ∞ where an entry is.
fn frobenius(m: &[f64]) -> f64 {
    m.iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// `scale · R⁻¹R⁻ᵀ` into `matrix`: what scipy's `leastsq` computes.
fn inverse_product(inverse: &[f64], n: usize, scale: f64, matrix: &mut [f64]) {
    for a in 0..n {
        for b in 0..n {
            let row_a = &inverse[a * n..(a + 1) * n];
            let row_b = &inverse[b * n..(b + 1) * n];
            matrix[a * n + b] = scale * row_a.iter().zip(row_b).map(|(x, y)| x * y).sum::<f64>();
        }
    }
}

/// The rank and the parameters not identifiable from `R`'s singular values, the covariance
/// into `matrix`, those at or below `cut(σ_max)` dropped, as `curve_fit` drops them.
fn by_singular_values(
    r: &[f64],
    n: usize,
    inverse: &[f64],
    scale: f64,
    cut: impl Fn(f64) -> f64,
    matrix: &mut [f64],
) -> (usize, Vec<usize>) {
    let decomposition = svd(r, n, n);
    let largest = decomposition.values.iter().fold(0.0f64, |m, &s| m.max(s));
    let tolerance = cut(largest);
    let kept: Vec<bool> = (decomposition.values.iter())
        .map(|&s| s > tolerance)
        .collect();
    let rank = kept.iter().filter(|&&k| k).count();
    if rank == n {
        inverse_product(inverse, n, scale, matrix);
        return (n, Vec::new());
    }
    let v = &decomposition.v;
    matrix.fill(0.0);
    for (j, (&s, &keep)) in decomposition.values.iter().zip(&kept).enumerate() {
        if keep {
            for a in 0..n {
                for b in 0..n {
                    matrix[a * n + b] += scale * v[a * n + j] * v[b * n + j] / (s * s);
                }
            }
        }
    }
    let not_identifiable = (0..n)
        .filter(|&a| (0..n).any(|j| !kept[j] && v[a * n + j].abs() > f64::EPSILON.sqrt()))
        .collect();
    (rank, not_identifiable)
}
