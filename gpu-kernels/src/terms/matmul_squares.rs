//! `f(A) = Σ_{i,j} ((A·B)_{ij})²` over the entries of `A` (`m × 16`, row-major in `x`), for a
//! fixed `B` (`16 × p`, the data): the seeds' torch objective `((A @ B) ** 2).sum()`. One term
//! per row of `A`: `φ_i = Σ_j (A_i · B_{:,j})²`, a banded window of the row's 16 entries. The
//! minimum is 0 at `A = 0`, and `∇f = 2·(A·B)·Bᵀ`.

use crate::{Data, Num, Real, Term, Vars, Window};

/// The inner dimension: the columns of `A`, the rows of `B`.
pub const INNER: usize = 16;

/// `Σ ((A·B)_{ij})²` over `A`, one term per row of `A` (see the module doc).
pub struct MatmulSquares;

impl Term for MatmulSquares {
    const WINDOW: Window = Window::Banded {
        stride: INNER,
        width: INNER,
    };
    /// `B`, whose column `j` is the data's column `j`.
    type Local<'a> = Data<'a>;

    fn check(_n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if data.rows() == INNER && data.cols() >= 1 {
            Ok(())
        } else {
            Err("matmul-squares data is B, with 16 rows and at least one column")
        }
    }

    #[inline(always)]
    fn prepare(_i: usize, _n: usize, data: Data<'_>) -> Data<'_> {
        data
    }

    fn eval<R: Real>(row: Vars<'_, R>, b: &Data<'_>) -> Num<R> {
        let mut sum = Num::constant(0.0);
        for j in 0..b.cols() {
            sum += row.dot_col(0, b.col(j)).sq();
        }
        sum
    }
}

crate::register_term!(MatmulSquares, matmul_squares);
