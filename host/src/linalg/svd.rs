//! The singular value decomposition of a small matrix by one-sided Jacobi rotations: for the
//! covariance of a fit's `p × p` triangle, where each singular value comes out to high
//! relative accuracy, the small ones included (which decide a rank), and for the trust-region
//! steps of the bounded least-squares method (its `2p × p` augmented triangle).

/// `A = U·Σ·Vᵀ` of a `rows × n` matrix (`rows ≥ n`): the singular values (unsorted), `V`, and
/// `A·V = U·Σ`.
pub struct Svd {
    /// `σ_j`, column `j`'s.
    pub values: Vec<f64>,
    /// `V`, `n × n` row-major: column `j` is `σ_j`'s right singular vector.
    pub v: Vec<f64>,
    /// `A·V = U·Σ`, `rows × n` row-major: column `j` is `σ_j` times its left singular vector.
    pub u_sigma: Vec<f64>,
}

/// Sweeps after which a matrix that is not yet orthogonal to working precision is taken as it
/// is (Jacobi converges quadratically; a few sweeps suffice for `n ≤ 64`).
const MAX_SWEEPS: usize = 60;

/// Beyond `2^±SCALED_EXPONENT` in its largest entry a matrix is scaled by a power of two
/// first: the rotations' sums of squares and their products (`αβ`) would overflow from
/// about `2^256` (the bounded least-squares steps' matrix at bounds of ±10¹⁵⁴, where scipy's
/// LAPACK SVD scales) or lose the small entries below `2^−256`.
const SCALED_EXPONENT: i32 = 200;

/// The SVD of `a` (`rows × n`, row-major, `rows ≥ n`): rotates pairs of `a`'s columns until
/// every pair is orthogonal to working precision, accumulating the rotations in `V`; then
/// `σ_j` is column `j`'s norm. A matrix of entries far from 1 is scaled by a power of two,
/// exactly, and its `σ` and `A·V` scaled back.
pub fn svd(a: &[f64], rows: usize, n: usize) -> Svd {
    debug_assert!(rows >= n && a.len() == rows * n);
    let largest = a.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let exponent = if largest > 0.0 && largest.is_finite() {
        largest.log2().round() as i32
    } else {
        0
    };
    if exponent.abs() <= SCALED_EXPONENT {
        return svd_in_range(a, rows, n);
    }
    // `v·2^e` in two factors, each a normal number whatever `e` (down to the subnormals).
    let times_power = |v: f64, e: i32| v * 2f64.powi(e / 2) * 2f64.powi(e - e / 2);
    let scaled: Vec<f64> = a.iter().map(|&v| times_power(v, -exponent)).collect();
    let mut svd = svd_in_range(&scaled, rows, n);
    for value in svd.values.iter_mut().chain(&mut svd.u_sigma) {
        *value = times_power(*value, exponent);
    }
    svd
}

/// [`svd`] of a matrix whose entries' squares and their products stay in range.
fn svd_in_range(a: &[f64], rows: usize, n: usize) -> Svd {
    let mut a = a.to_vec();
    let mut v = vec![0.0; n * n];
    for j in 0..n {
        v[j * n + j] = 1.0;
    }
    let rotate = |m: &mut [f64], p: usize, q: usize, c: f64, s: f64| {
        for i in 0..m.len() / n {
            let (mp, mq) = (m[i * n + p], m[i * n + q]);
            m[i * n + p] = c * mp - s * mq;
            m[i * n + q] = s * mp + c * mq;
        }
    };
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for i in 0..rows {
                    let (ap, aq) = (a[i * n + p], a[i * n + q]);
                    alpha += ap * ap;
                    beta += aq * aq;
                    gamma += ap * aq;
                }
                if gamma == 0.0 || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                rotate(&mut a, p, q, c, s);
                rotate(&mut v, p, q, c, s);
            }
        }
        if !rotated {
            break;
        }
    }
    let values = (0..n)
        .map(|j| {
            (0..rows)
                .map(|i| a[i * n + j] * a[i * n + j])
                .sum::<f64>()
                .sqrt()
        })
        .collect();
    Svd {
        values,
        v,
        u_sigma: a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scaled by 10^±200 (its rotations' `αβ` out of range unscaled), a matrix keeps its `V`
    /// and its `σ` and `A·V` scale with it.
    #[test]
    fn far_from_one_a_matrix_scales_its_singular_values() {
        let a = [
            3.0, 1.0, 0.5, 1.0, 2.0, -1.0, 0.25, 4.0, 1.5, -2.0, 0.0, 1.0,
        ];
        let reference = svd(&a, 4, 3);
        for scale in [1e200, 1e-200, 1e300] {
            let scaled: Vec<f64> = a.iter().map(|v| v * scale).collect();
            let far = svd(&scaled, 4, 3);
            for (s, r) in far.values.iter().zip(&reference.values) {
                assert!((s / scale - r).abs() <= 1e-14 * r, "{scale}: {s} vs {r}");
            }
            for (v, r) in far.v.iter().zip(&reference.v) {
                assert!((v - r).abs() <= 1e-14, "{scale}: {v} vs {r}");
            }
            for (u, r) in far.u_sigma.iter().zip(&reference.u_sigma) {
                assert!((u / scale - r).abs() <= 1e-13, "{scale}: {u} vs {r}");
            }
        }
    }

    #[test]
    fn singular_values_of_a_known_matrix() {
        // [[3, 0], [4, 5]]: AᵀA = [[25, 20], [20, 25]], eigenvalues 45 and 5.
        let mut s = svd(&[3.0, 0.0, 4.0, 5.0], 2, 2).values;
        s.sort_by(f64::total_cmp);
        assert!((s[0] - 5f64.sqrt()).abs() < 1e-14 && (s[1] - 45f64.sqrt()).abs() < 1e-14);
    }

    #[test]
    fn a_tall_matrix_has_its_singular_values_and_u_sigma_is_a_times_v() {
        // [[1, 0], [0, 1], [1, 1]]: AᵀA = [[2, 1], [1, 2]], eigenvalues 3 and 1.
        let a = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
        let d = svd(&a, 3, 2);
        let mut s = d.values.clone();
        s.sort_by(f64::total_cmp);
        assert!((s[0] - 1.0).abs() < 1e-15 && (s[1] - 3f64.sqrt()).abs() < 1e-15);
        for i in 0..3 {
            for j in 0..2 {
                let av: f64 = (0..2).map(|k| a[i * 2 + k] * d.v[k * 2 + j]).sum();
                assert!((av - d.u_sigma[i * 2 + j]).abs() < 1e-15);
            }
        }
    }

    #[test]
    fn a_rank_one_matrix_has_a_zero_singular_value_and_its_null_vector() {
        // Columns proportional: (1, 2) and (2, 4).
        let d = svd(&[1.0, 2.0, 2.0, 4.0], 2, 2);
        let small = if d.values[0] < d.values[1] { 0 } else { 1 };
        assert!(d.values[small] < 1e-15 && (d.values[1 - small] - 5.0).abs() < 1e-14);
        let (v0, v1) = (d.v[small], d.v[2 + small]);
        // The null vector is ±(2, −1)/√5.
        assert!(
            (v0 * 1.0 + v1 * 2.0).abs() < 1e-15 && (v0.abs() - 2.0 / 5f64.sqrt()).abs() < 1e-14
        );
    }
}
