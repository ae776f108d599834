//! The inverse-Hessian approximation a limited-memory solve reports: the curvature pairs its
//! last direction came from, as scipy's L-BFGS-B returns them (`LbfgsInvHessProduct`).

use super::dense::bfgs_update;
use super::two_loop::{PairList, two_loop};
use crate::backend::DeviceArray;
use crate::error::BackendError;
use crate::linalg::try_zeros;
use crate::linalg::vector::dot;
use crate::objective::{EvalError, Held};
use crate::space::HostVectors;
use ndarray::Array2;

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
#[derive(Clone, Debug, PartialEq)]
pub struct CorrectionPairs {
    s: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
    n: usize,
    fixed: Vec<usize>,
}

impl CorrectionPairs {
    /// The pairs `(s, y)` over `n` variables, oldest first.
    pub(super) fn new(n: usize, s: Vec<Vec<f64>>, y: Vec<Vec<f64>>) -> Self {
        debug_assert!(s.len() == y.len() && s.iter().chain(&y).all(|v| v.len() == n));
        CorrectionPairs {
            s,
            y,
            n,
            fixed: Vec::new(),
        }
    }

    /// `sᵢ = xᵢ₊₁ − xᵢ`, oldest first (`k ≤` [`Options::memory`](super::Options::memory) of
    /// them, [`dim`](Self::dim) entries each).
    pub fn s(&self) -> &[Vec<f64>] {
        &self.s
    }

    /// `yᵢ = gᵢ₊₁ − gᵢ`, matching [`s`](Self::s).
    pub fn y(&self) -> &[Vec<f64>] {
        &self.y
    }

    /// The variables held fixed, ascending; empty where none was.
    pub fn fixed(&self) -> &[usize] {
        &self.fixed
    }

    /// `(s, y, fixed)`, for a caller that keeps the vectors (the Python package's arrays).
    pub fn into_parts(self) -> (Vec<Vec<f64>>, Vec<Vec<f64>>, Vec<usize>) {
        (self.s, self.y, self.fixed)
    }

    /// The variables' count, `n`.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// `ρᵢ = 1/sᵢᵀyᵢ`, oldest first.
    fn rho(&self) -> Vec<f64> {
        (self.s.iter().zip(&self.y))
            .map(|(s, y)| 1.0 / dot(s, y))
            .collect()
    }

    /// `H·v`, by the two-loop recursion (Nocedal & Wright, Algorithm 7.4): `O(k·n)`, no `n × n`
    /// matrix. A `v` whose length is not [`dim`](Self::dim) is refused.
    pub fn dot(&self, v: &[f64]) -> Result<Vec<f64>, EvalError> {
        if v.len() != self.n {
            return Err(EvalError::WrongLength {
                expected: self.n,
                got: v.len(),
            });
        }
        let mut q = v.to_vec();
        // H₀ is the identity on the free variables, zero on the fixed ones, where the pairs are
        // zero too: zeroed first, `v`'s fixed entries take no part (not even an infinite one).
        self.fixed.iter().for_each(|&i| q[i] = 0.0);
        let pairs = WithRho {
            pairs: self,
            rho: self.rho(),
        };
        two_loop(
            &mut HostVectors::new(self.n),
            &pairs,
            &mut q,
            &mut Vec::new(),
            |_, _| Ok(()),
        )?;
        Ok(q)
    }

    /// `H` as an `n × n` matrix (scipy's `todense()`), in `O(k·n²)` from the updates themselves;
    /// `None` where its `n²` values cannot be allocated.
    pub fn to_dense(&self) -> Option<Array2<f64>> {
        let n = self.n;
        let mut h = Array2::from_shape_vec((n, n), try_zeros(n.checked_mul(n)?)?).ok()?;
        h.diag_mut().fill(1.0);
        for &i in &self.fixed {
            h[[i, i]] = 0.0;
        }
        let mut scratch = vec![0.0; n];
        for ((s, y), rho) in self.s.iter().zip(&self.y).zip(self.rho()) {
            bfgs_update(&mut h, s, y, rho, &mut scratch);
        }
        Some(h)
    }

    /// The pairs over the free variables of `held`, as pairs over all its variables, the
    /// others fixed.
    pub(super) fn expanded(self, held: &Held) -> Result<Self, EvalError> {
        let whole = |part: Vec<Vec<f64>>| -> Result<Vec<Vec<f64>>, EvalError> {
            (part.into_iter())
                .map(|v| held.expand_with(&v, 0.0))
                .collect()
        };
        Ok(CorrectionPairs {
            s: whole(self.s)?,
            y: whole(self.y)?,
            n: held.whole_dim(),
            fixed: held.fixed(),
        })
    }
}

/// The pairs of a solve whose vectors lived on a GPU backend's device, left there
/// ([`OptimizeResult::hess_inv_pairs_on_device`](super::OptimizeResult::hess_inv_pairs_on_device)):
/// nothing crosses to the host until [`to_host`](Self::to_host) copies them. Oldest first, as
/// [`CorrectionPairs`]; no variable is fixed (a solve with fixed variables copies its pairs to
/// the host, over every variable).
#[derive(Clone, Debug)]
pub struct DevicePairs {
    s: Vec<DeviceArray>,
    y: Vec<DeviceArray>,
    n: usize,
}

impl DevicePairs {
    pub(super) fn new(n: usize, s: Vec<DeviceArray>, y: Vec<DeviceArray>) -> Self {
        debug_assert!(s.len() == y.len() && s.iter().chain(&y).all(|v| v.len() == n));
        DevicePairs { s, y, n }
    }

    /// `sᵢ`, oldest first, on the device.
    pub fn s(&self) -> &[DeviceArray] {
        &self.s
    }

    /// `yᵢ`, matching [`s`](Self::s).
    pub fn y(&self) -> &[DeviceArray] {
        &self.y
    }

    /// The variables' count, `n`.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// `(s, y)`, for a caller that keeps the arrays (the Python package's).
    pub fn into_parts(self) -> (Vec<DeviceArray>, Vec<DeviceArray>) {
        (self.s, self.y)
    }

    /// The pairs in host memory: one copy of each vector.
    pub fn to_host(&self) -> Result<CorrectionPairs, BackendError> {
        let host = |vectors: &[DeviceArray]| -> Result<Vec<Vec<f64>>, BackendError> {
            vectors.iter().map(DeviceArray::to_host).collect()
        };
        Ok(CorrectionPairs::new(self.n, host(&self.s)?, host(&self.y)?))
    }
}

/// A result's `(hess_inv_pairs, hess_inv_pairs_on_device)`: one of the two, or neither
/// ([`Workspace::result_pairs`](super::workspace::Workspace::result_pairs)).
pub(super) type ResultPairs = (Option<CorrectionPairs>, Option<DevicePairs>);

/// The pairs with their `ρ`s, as the two-loop recursion reads them.
struct WithRho<'p> {
    pairs: &'p CorrectionPairs,
    rho: Vec<f64>,
}

impl PairList<Vec<f64>> for WithRho<'_> {
    fn count(&self) -> usize {
        self.rho.len()
    }

    fn pair(&self, i: usize) -> (&Vec<f64>, &Vec<f64>, f64) {
        (&self.pairs.s[i], &self.pairs.y[i], self.rho[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn pairs() -> CorrectionPairs {
        CorrectionPairs::new(
            4,
            vec![vec![0.5, -0.2, 0.1, 0.3], vec![-0.1, 0.4, 0.2, 0.0]],
            vec![vec![1.0, 0.1, 0.3, 0.4], vec![0.2, 0.5, 0.6, -0.1]],
        )
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
            let column = pairs.dot(&e).unwrap();
            for i in 0..4 {
                assert!((column[i] - h[[i, j]]).abs() <= 1e-14, "({i}, {j})");
            }
        }
        let hy = pairs.dot(&pairs.y[1]).unwrap();
        for (a, b) in hy.iter().zip(&pairs.s[1]) {
            assert!((a - b).abs() <= 1e-14);
        }
    }

    /// One pair by hand: `H = (I − ρ s yᵀ)(I − ρ y sᵀ) + ρ s sᵀ` with `s = (1, 0)`, `y = (2, 1)`,
    /// `ρ = 1/2`: `I − ρ y sᵀ = [[0, 0], [−1/2, 1]]`, so `H = [[1/4, −1/2], [−1/2, 1]] + [[1/2, 0],
    /// [0, 0]] = [[3/4, −1/2], [−1/2, 1]]`.
    #[test]
    fn one_pair_by_hand() {
        let pairs = CorrectionPairs::new(2, vec![vec![1.0, 0.0]], vec![vec![2.0, 1.0]]);
        assert_eq!(pairs.to_dense().unwrap(), array![[0.75, -0.5], [-0.5, 1.0]]);
        assert_eq!(pairs.dot(&[1.0, 2.0]).unwrap(), vec![-0.25, 1.5]);
        assert!(matches!(
            pairs.dot(&[1.0]),
            Err(EvalError::WrongLength {
                expected: 2,
                got: 1
            })
        ));
    }

    /// Expanded over fixed variables, `H` is the free variables' in their rows and columns and
    /// zero in the fixed ones', as an operator and as a matrix.
    #[test]
    fn fixed_variables_have_zero_rows_and_columns() {
        let free = pairs();
        let held = Held::new(&[0.0; 6], &[false, true, false, false, true, false]).unwrap();
        let whole = free.clone().expanded(&held).unwrap();
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
        let hv = whole.dot(&v).unwrap();
        for i in 0..6 {
            let row: f64 = (0..6).map(|j| h[[i, j]] * v[j]).sum();
            assert!((hv[i] - row).abs() <= 1e-14, "{i}");
        }
    }
}
