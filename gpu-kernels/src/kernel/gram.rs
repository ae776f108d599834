//! Least squares reduced by the Gram matrix, the GPU's fast way to a triangle: a block sums
//! the products of its residual rows `[J | r]` into `G = [J r]ᵀ[J r]`, a second kernel adds
//! the blocks' `G` in block order, and the host takes the sum's Cholesky factor. The factor's
//! first `n` rows are `R` and `Qᵀr` of the triangle ([`super::triangle`]), up to the signs of
//! their rows.
//!
//! A block's work per row is one multiply-add per entry of `G`, against about four for the
//! reflections of a fold. The price is `G`'s condition number, the square of `J`'s. So the
//! host takes the Cholesky factor only where every column of `J` keeps a fair part of its
//! length outside the span of the columns before it ([`GRAM_PIVOT_MIN`]); elsewhere it folds
//! the rows by reflections, as MINPACK factors `J` itself.
//!
//! `G` is packed as the upper triangle of `(n + 1) × (n + 1)`, row after row: entry `(a, b)`,
//! `a ≤ b ≤ n`, where column `n` is `r`. [`gram_len`] values per block.

use super::triangle::{packed_len, packed_row, triangle_len};

/// How a GPU block reduces its residual rows: folded by reflections into its triangle, or
/// summed into its Gram matrix. The host asks by a flag in the least-squares kernels' `loss`
/// argument ([`Reduction::with_loss`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// Householder reflections: `R` and `Qᵀr`, [`triangle_len`] values per block.
    Fold,
    /// Products summed: `[J r]ᵀ[J r]`, [`gram_len`] values per block.
    Gram,
}

/// The bit of the least-squares kernels' `loss` argument that asks for [`Reduction::Gram`];
/// the bits below it are the loss's index.
const GRAM_FLAG: usize = 1 << 8;

impl Reduction {
    /// The values a block writes over `n` variables.
    pub const fn len(self, n: usize) -> usize {
        match self {
            Reduction::Fold => triangle_len(n),
            Reduction::Gram => gram_len(n),
        }
    }

    /// The kernels' `loss` argument: the loss's `index` and this reduction.
    pub const fn with_loss(self, index: usize) -> usize {
        match self {
            Reduction::Fold => index,
            Reduction::Gram => index | GRAM_FLAG,
        }
    }

    /// The loss's index and the reduction that [`with_loss`](Self::with_loss) made `argument`
    /// of.
    #[inline(always)]
    pub const fn split(argument: usize) -> (usize, Reduction) {
        let reduction = if argument & GRAM_FLAG != 0 {
            Reduction::Gram
        } else {
            Reduction::Fold
        };
        (argument & !GRAM_FLAG, reduction)
    }
}

/// The packed Gram matrix of `[J r]` over `n` variables: `(n + 1)(n + 2)/2` values.
pub const fn gram_len(n: usize) -> usize {
    packed_len(n + 1)
}

/// The least part of a column's squared length that must lie outside the span of the columns
/// before it (its Cholesky pivot over its diagonal entry of `G`). A smaller pivot would lose
/// more than six of the factor's digits to `G`'s squared condition number.
pub const GRAM_PIVOT_MIN: f64 = 1e-6;

/// The packed triangle ([`triangle_len`]`(n)` values: `R`, then `Qᵀr`) from the packed Gram
/// matrix `gram` of `[J r]` over `n` variables, by Cholesky; `false`, with `triangle` part
/// written, where a pivot is not finite or under [`GRAM_PIVOT_MIN`] of its diagonal entry
/// (a column of zeros, one nearly in the span of the others, or entries that are not finite).
/// Then the rows must be folded instead.
pub fn gram_triangle(gram: &[f64], n: usize, triangle: &mut [f64]) -> bool {
    let g = |a: usize, b: usize| gram[packed_row(a, n + 1) + b - a];
    let (r, qtr) = triangle.split_at_mut(packed_len(n));
    // Row j of the factor, column c (≤ n), from rows 0..j already made.
    let at = |r: &[f64], qtr: &[f64], k: usize, c: usize| {
        if c < n {
            r[packed_row(k, n) + c - k]
        } else {
            qtr[k]
        }
    };
    for j in 0..n {
        let diagonal = g(j, j);
        let mut pivot = diagonal;
        for k in 0..j {
            let rkj = at(r, qtr, k, j);
            pivot -= rkj * rkj;
        }
        if !(pivot.is_finite() && pivot > GRAM_PIVOT_MIN * diagonal) {
            return false;
        }
        let rjj = crate::math::sqrt(pivot);
        r[packed_row(j, n)] = rjj;
        for c in j + 1..=n {
            let mut entry = g(j, c);
            for k in 0..j {
                entry -= at(r, qtr, k, j) * at(r, qtr, k, c);
            }
            let value = entry / rjj;
            if c < n {
                r[packed_row(j, n) + c - j] = value;
            } else {
                qtr[j] = value;
            }
        }
    }
    qtr.iter().all(|v| v.is_finite())
}

/// Whether Cholesky of `RᵀR`, which is `JᵀJ`, would find every pivot above `margin` times
/// [`GRAM_PIVOT_MIN`] of its diagonal entry, for `R` of the packed `triangle` over `n`
/// variables: each `R_jj²` against its column's squared length, the test [`gram_triangle`]
/// makes, up to rounding. With `margin` above 1, `false` also where the Gram sums of a nearby
/// point may be refused.
pub fn pivots_clear(triangle: &[f64], n: usize, margin: f64) -> bool {
    let r = &triangle[..packed_len(n)];
    (0..n).all(|j| {
        let column: f64 = (0..=j)
            .map(|k| {
                let entry = r[packed_row(k, n) + j - k];
                entry * entry
            })
            .sum();
        let diagonal = r[packed_row(j, n)];
        let pivot = diagonal * diagonal;
        pivot.is_finite() && pivot > margin * GRAM_PIVOT_MIN * column
    })
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::kernel::triangle::{fold_scratch_len, fold_triangle};
    use std::vec;
    use std::vec::Vec;

    /// The packed Gram matrix of `rows` (each `n + 1` values: `J`'s row, then `r`).
    fn gram_of(rows: &[Vec<f64>], n: usize) -> Vec<f64> {
        let mut gram = vec![0.0; gram_len(n)];
        for row in rows {
            for a in 0..=n {
                for b in a..=n {
                    gram[packed_row(a, n + 1) + b - a] += row[a] * row[b];
                }
            }
        }
        gram
    }

    /// The triangle of `rows` by reflections: each row folded into a zero triangle.
    fn folded(rows: &[Vec<f64>], n: usize) -> Vec<f64> {
        let mut triangle = vec![0.0; triangle_len(n)];
        let mut scratch = vec![0.0; fold_scratch_len(n)];
        for row in rows {
            // A row is the triangle of itself with zero rows below.
            let mut other = vec![0.0; triangle_len(n)];
            other[..n].copy_from_slice(&row[..n]);
            other[packed_len(n)] = row[n];
            let (r, qtr) = triangle.split_at_mut(packed_len(n));
            let (o, oq) = other.split_at(packed_len(n));
            fold_triangle(r, qtr, o, oq, &mut scratch);
        }
        triangle
    }

    /// Each row of a triangle made to start with a positive diagonal: Cholesky's sign.
    fn signed(mut triangle: Vec<f64>, n: usize) -> Vec<f64> {
        for j in 0..n {
            if triangle[packed_row(j, n)] < 0.0 {
                for value in &mut triangle[packed_row(j, n)..packed_row(j, n) + n - j] {
                    *value = -*value;
                }
                triangle[packed_len(n) + j] = -triangle[packed_len(n) + j];
            }
        }
        triangle
    }

    /// A well-conditioned fit's rows: the Cholesky triangle is the reflections', row signs
    /// aside, to rounding.
    #[test]
    fn the_cholesky_triangle_is_the_folds() {
        let n = 3;
        let rows: Vec<Vec<f64>> = (0..40)
            .map(|i| {
                let t = f64::from(i) / 8.0;
                vec![
                    1.0,
                    t,
                    crate::math::sin(2.0 * t),
                    0.5 - t * t + crate::math::cos(3.0 * t),
                ]
            })
            .collect();
        let mut triangle = vec![f64::NAN; triangle_len(n)];
        assert!(gram_triangle(&gram_of(&rows, n), n, &mut triangle));
        // The folded triangle predicts it, with room to spare.
        assert!(pivots_clear(&folded(&rows, n), n, 1e3));
        let reference = signed(folded(&rows, n), n);
        for (got, want) in triangle.iter().zip(&reference) {
            assert!(
                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                "{got} vs {want}"
            );
        }
    }

    /// Columns nearly dependent, a zero column, or a NaN: refused, so the rows are folded.
    #[test]
    fn ill_conditioned_or_broken_columns_are_refused() {
        let n = 2;
        let triangle = &mut vec![0.0; triangle_len(n)];
        let near: Vec<Vec<f64>> = (0..10)
            .map(|i| {
                let t = f64::from(i);
                vec![t, t * (1.0 + 1e-5), 1.0]
            })
            .collect();
        assert!(!gram_triangle(&gram_of(&near, n), n, triangle));
        assert!(!pivots_clear(&folded(&near, n), n, 1.0));
        let zero: Vec<Vec<f64>> = (0..10).map(|i| vec![f64::from(i), 0.0, 1.0]).collect();
        assert!(!gram_triangle(&gram_of(&zero, n), n, triangle));
        assert!(!pivots_clear(&folded(&zero, n), n, 1.0));
        let mut broken = gram_of(&zero, n);
        broken[1] = f64::NAN;
        assert!(!gram_triangle(&broken, n, triangle));
        // Neither flag nor index is lost on the way through the kernels' argument.
        for reduction in [Reduction::Fold, Reduction::Gram] {
            assert_eq!(Reduction::split(reduction.with_loss(3)), (3, reduction));
        }
    }
}
