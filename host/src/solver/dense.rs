//! The dense `n×n` inverse Hessian: products, the BFGS update, and the check of a user's
//! initial matrix. Everything is `O(n²)` (except the Cholesky check, `O(n³)` once) and
//! rayon-parallel over rows from [`PARALLEL_MIN_DIM`] on.

use crate::linalg::vector::dot;
use crate::linalg::{PARALLEL_MIN_DIM, cholesky};
use ndarray::{Array2, ArrayView1, ArrayViewMut1, Zip};

/// How far from symmetric a user's `hess_inv0` may be, relative to its largest entry.
const SYMMETRY_RTOL: f64 = 1e-10;

/// `out ← H·v`.
pub(super) fn matvec(h: &Array2<f64>, v: &[f64], out: &mut [f64]) {
    let v = ArrayView1::from(v);
    let row_times_v = |row: ArrayView1<'_, f64>, out: &mut f64| *out = row.dot(&v);
    let zip = Zip::from(h.rows()).and(ArrayViewMut1::from(out));
    if h.nrows() < PARALLEL_MIN_DIM {
        zip.for_each(row_times_v);
    } else {
        zip.par_for_each(row_times_v);
    }
}

/// The BFGS update `H ← (I − ρ s yᵀ) H (I − ρ y sᵀ) + ρ s sᵀ`, in `O(n²)`: with `u = H·y` and `H`
/// symmetric it is `H − ρ(u sᵀ + s uᵀ) + (ρ + ρ²·yᵀu) s sᵀ`. `hy` is scratch space for `u`.
pub(super) fn bfgs_update(h: &mut Array2<f64>, s: &[f64], y: &[f64], rho: f64, hy: &mut [f64]) {
    matvec(h, y, hy);
    let ss_coefficient = rho + rho * rho * dot(y, hy);
    let (s, u) = (ArrayView1::from(s), ArrayView1::from(&*hy));
    // Row i gains (c·sᵢ − ρ·uᵢ)·sᵀ − ρ·sᵢ·uᵀ.
    let update_row = |mut row: ArrayViewMut1<'_, f64>, &s_i: &f64, &u_i: &f64| {
        let (a, b) = (ss_coefficient * s_i - rho * u_i, -rho * s_i);
        Zip::from(&mut row)
            .and(&s)
            .and(&u)
            .for_each(|h, &s_j, &u_j| *h += a * s_j + b * u_j);
    };
    let zip = Zip::from(h.rows_mut()).and(&s).and(&u);
    if s.len() < PARALLEL_MIN_DIM {
        zip.for_each(update_row);
    } else {
        zip.par_for_each(update_row);
    }
}

/// Checks that `h` (`n×n`) is finite, symmetric to [`SYMMETRY_RTOL`] and positive definite, and
/// returns its symmetric part `(h + hᵀ)/2`: then the dense and the implicit representations start
/// from exactly the same matrix. The error says what is wrong.
pub(super) fn symmetric_positive_definite(h: &Array2<f64>) -> Result<Array2<f64>, String> {
    if let Some(((i, j), v)) = h.indexed_iter().find(|(_, v)| !v.is_finite()) {
        return Err(format!("entry ({i}, {j}) is {v}"));
    }
    let largest = h.iter().fold(0.0, |m: f64, v| m.max(v.abs()));
    let tolerance = SYMMETRY_RTOL * largest;
    let asymmetric = h
        .indexed_iter()
        .find(|&((i, j), &v)| (v - h[[j, i]]).abs() > tolerance);
    if let Some(((i, j), v)) = asymmetric {
        let w = h[[j, i]];
        return Err(format!(
            "not symmetric: entry ({i}, {j}) is {v}, entry ({j}, {i}) is {w}"
        ));
    }
    let symmetric = Array2::from_shape_fn(h.dim(), |(i, j)| 0.5 * (h[[i, j]] + h[[j, i]]));
    cholesky(symmetric.view())?;
    Ok(symmetric)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn bfgs_update_matches_the_product_form() {
        let h = array![[2.0, 0.5, 0.1], [0.5, 1.0, -0.2], [0.1, -0.2, 3.0]];
        let (s, y) = ([0.3, -0.1, 0.7], [0.5, 0.2, 1.1]);
        let rho = 1.0 / dot(&s, &y);
        let eye = Array2::<f64>::eye(3);
        let sv = ArrayView1::from(&s[..])
            .into_shape_with_order((3, 1))
            .unwrap();
        let yv = ArrayView1::from(&y[..])
            .into_shape_with_order((3, 1))
            .unwrap();
        let a1 = &eye - rho * sv.dot(&yv.t());
        let a2 = &eye - rho * yv.dot(&sv.t());
        let expected = a1.dot(&h).dot(&a2) + rho * sv.dot(&sv.t());

        let mut updated = h.clone();
        bfgs_update(&mut updated, &s, &y, rho, &mut [0.0; 3]);
        for (a, b) in updated.iter().zip(&expected) {
            assert!((a - b).abs() < 1e-14, "{updated} vs {expected}");
        }
    }

    #[test]
    fn spd_check_accepts_spd_and_symmetrizes() {
        let h = array![[4.0, 1.0 + 1e-12], [1.0, 3.0]];
        let sym = symmetric_positive_definite(&h).unwrap();
        assert_eq!(sym[[0, 1]], sym[[1, 0]]);
    }

    #[test]
    fn spd_check_names_the_defect() {
        let indefinite = array![[1.0, 2.0], [2.0, 1.0]];
        assert!(
            symmetric_positive_definite(&indefinite)
                .unwrap_err()
                .contains("pivot 1")
        );
        let asymmetric = array![[1.0, 0.5], [0.4, 1.0]];
        assert!(
            symmetric_positive_definite(&asymmetric)
                .unwrap_err()
                .contains("not symmetric")
        );
        let nan = array![[1.0, f64::NAN], [f64::NAN, 1.0]];
        assert!(
            symmetric_positive_definite(&nan)
                .unwrap_err()
                .contains("NaN")
        );
    }
}
