//! The inverse-Hessian approximation a limited-memory solve reports: the curvature pairs its
//! last direction came from, as scipy's L-BFGS-B returns them (`LbfgsInvHessProduct`).

use super::dense::bfgs_update;
use crate::linalg::try_zeros;
use crate::linalg::vector::dot;
use ndarray::{Array2, ArrayView1};

/// L-BFGS's and L-BFGS-B's `hess_inv`: the pairs `(sᵢ, yᵢ)` held when the last direction was
/// formed (a solve's last step adds none, as in scipy, which tests convergence before its
/// update), oldest first, and the operator they define: `H₀ = I` updated by each pair in turn,
/// `H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ` with `ρ = 1/sᵀy` — scipy's
/// `LbfgsInvHessProduct(s, y)`, which starts from the identity too (the solver's own
/// directions scale `H₀` by `sᵀy/yᵀy`).
///
/// scipy hands its workspace's rows over in storage order, which after more than `maxcor`
/// updates is a rotation of the pairs' order; here they are always oldest first, the order the
/// updates were made in.
///
/// With fixed variables ([`Options::fixed`](super::Options::fixed)) the pairs are zero in the
/// fixed variables' columns and `H` is zero in their rows and columns (they do not vary).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CorrectionPairs {
    /// `sᵢ = xᵢ₊₁ − xᵢ`, one row per pair (`k × n`, `k ≤` [`Options::memory`](super::Options::memory)).
    pub s: Array2<f64>,
    /// `yᵢ = gᵢ₊₁ − gᵢ`, the rows matching `s`'s.
    pub y: Array2<f64>,
    /// The variables held fixed (ascending); empty where none was.
    pub fixed: Vec<usize>,
}

impl CorrectionPairs {
    /// `k` pairs over `n` variables from `pairs`, oldest first, each row copied in as it comes
    /// (so that a memory handing its vectors over one by one holds about one more vector at a
    /// time, not a second copy of all of them).
    pub(super) fn from_pairs<E>(
        n: usize,
        k: usize,
        pairs: impl Iterator<Item = Result<(Vec<f64>, Vec<f64>), E>>,
    ) -> Result<Self, E> {
        let (mut s, mut y) = (Array2::zeros((k, n)), Array2::zeros((k, n)));
        for (i, pair) in pairs.enumerate() {
            let (s_i, y_i) = pair?;
            s.row_mut(i).assign(&ArrayView1::from(&s_i));
            y.row_mut(i).assign(&ArrayView1::from(&y_i));
        }
        Ok(CorrectionPairs {
            s,
            y,
            fixed: Vec::new(),
        })
    }

    /// The variables' count, `n`.
    pub fn dim(&self) -> usize {
        self.s.ncols()
    }

    /// `H·v`, by the two-loop recursion (Nocedal & Wright, Algorithm 7.4): `O(k·n)`, no `n × n`
    /// matrix. `v` has [`dim`](Self::dim) entries.
    pub fn dot(&self, v: &[f64]) -> Vec<f64> {
        assert_eq!(v.len(), self.dim(), "H·v: v has {} entries", v.len());
        let mut q = v.to_vec();
        // H₀ is the identity on the free variables, zero on the fixed ones.
        for &i in &self.fixed {
            q[i] = 0.0;
        }
        let rho: Vec<f64> = (self.s.rows().into_iter().zip(self.y.rows()))
            .map(|(s, y)| 1.0 / s.dot(&y))
            .collect();
        let mut alpha = vec![0.0; rho.len()];
        for i in (0..rho.len()).rev() {
            let (s, y) = (self.s.row(i), self.y.row(i));
            alpha[i] = rho[i] * dot(s.as_slice().unwrap(), &q);
            q.iter_mut().zip(y).for_each(|(q, y)| *q -= alpha[i] * y);
        }
        for (i, (&rho, &alpha)) in rho.iter().zip(&alpha).enumerate() {
            let (s, y) = (self.s.row(i), self.y.row(i));
            let beta = rho * dot(y.as_slice().unwrap(), &q);
            q.iter_mut()
                .zip(s)
                .for_each(|(q, s)| *q += (alpha - beta) * s);
        }
        q
    }

    /// `H` as an `n × n` matrix (scipy's `todense()`), in `O(k·n²)` from the updates themselves;
    /// `None` where its `n²` values cannot be allocated.
    pub fn to_dense(&self) -> Option<Array2<f64>> {
        let n = self.dim();
        let mut h = Array2::from_shape_vec((n, n), try_zeros(n.checked_mul(n)?)?).ok()?;
        h.diag_mut().fill(1.0);
        for &i in &self.fixed {
            h[[i, i]] = 0.0;
        }
        let mut scratch = vec![0.0; n];
        for (s, y) in self.s.rows().into_iter().zip(self.y.rows()) {
            let rho = 1.0 / s.dot(&y);
            bfgs_update(
                &mut h,
                s.as_slice().unwrap(),
                y.as_slice().unwrap(),
                rho,
                &mut scratch,
            );
        }
        Some(h)
    }

    /// The pairs over the free variables `free` of `n`, as pairs over all `n`, the others fixed.
    pub(super) fn expanded(&self, n: usize, free: &[usize]) -> Self {
        let k = self.s.nrows();
        let (mut s, mut y) = (Array2::zeros((k, n)), Array2::zeros((k, n)));
        for (a, &i) in free.iter().enumerate() {
            s.column_mut(i).assign(&self.s.column(a));
            y.column_mut(i).assign(&self.y.column(a));
        }
        let mut is_free = vec![false; n];
        free.iter().for_each(|&i| is_free[i] = true);
        CorrectionPairs {
            s,
            y,
            fixed: (0..n).filter(|&i| !is_free[i]).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn pairs() -> CorrectionPairs {
        CorrectionPairs {
            s: array![[0.5, -0.2, 0.1, 0.3], [-0.1, 0.4, 0.2, 0.0]],
            y: array![[1.0, 0.1, 0.3, 0.4], [0.2, 0.5, 0.6, -0.1]],
            fixed: Vec::new(),
        }
    }

    /// The two-loop product is the matrix of the updates, column by column; the matrix
    /// satisfies the secant condition of the newest pair, `H·y = s`.
    #[test]
    fn the_product_is_the_matrix_of_the_updates() {
        let pairs = pairs();
        let h = pairs.to_dense().unwrap();
        for j in 0..4 {
            let mut e = vec![0.0; 4];
            e[j] = 1.0;
            let column = pairs.dot(&e);
            for i in 0..4 {
                assert!((column[i] - h[[i, j]]).abs() <= 1e-14, "({i}, {j})");
            }
        }
        let newest_y = pairs.y.row(1).to_vec();
        let hy = pairs.dot(&newest_y);
        for (a, b) in hy.iter().zip(pairs.s.row(1)) {
            assert!((a - b).abs() <= 1e-14);
        }
    }

    /// One pair by hand: `H = (I − ρ s yᵀ)(I − ρ y sᵀ) + ρ s sᵀ` with `s = (1, 0)`, `y = (2, 1)`,
    /// `ρ = 1/2`: `I − ρ y sᵀ = [[0, 0], [−1/2, 1]]`, so `H = [[1/4, −1/2], [−1/2, 1]] + [[1/2, 0],
    /// [0, 0]] = [[3/4, −1/2], [−1/2, 1]]`.
    #[test]
    fn one_pair_by_hand() {
        let pairs = CorrectionPairs {
            s: array![[1.0, 0.0]],
            y: array![[2.0, 1.0]],
            fixed: Vec::new(),
        };
        assert_eq!(pairs.to_dense().unwrap(), array![[0.75, -0.5], [-0.5, 1.0]]);
        assert_eq!(pairs.dot(&[1.0, 2.0]), vec![-0.25, 1.5]);
    }

    /// Expanded over fixed variables, `H` is the free variables' in their rows and columns and
    /// zero in the fixed ones', as an operator and as a matrix.
    #[test]
    fn fixed_variables_have_zero_rows_and_columns() {
        let free = pairs();
        let whole = free.expanded(6, &[0, 2, 3, 5]);
        assert_eq!(whole.fixed, vec![1, 4]);
        let (h_free, h) = (free.to_dense().unwrap(), whole.to_dense().unwrap());
        let at = [0, 2, 3, 5];
        for i in 0..6 {
            for j in 0..6 {
                let expected = match (
                    at.iter().position(|&a| a == i),
                    at.iter().position(|&a| a == j),
                ) {
                    (Some(a), Some(b)) => h_free[[a, b]],
                    _ => 0.0,
                };
                assert!((h[[i, j]] - expected).abs() <= 1e-15, "({i}, {j})");
            }
        }
        let v = [1.0, 2.0, -1.0, 0.5, 3.0, 0.25];
        let hv = whole.dot(&v);
        for i in 0..6 {
            let row: f64 = (0..6).map(|j| h[[i, j]] * v[j]).sum();
            assert!((hv[i] - row).abs() <= 1e-14, "{i}");
        }
    }
}
