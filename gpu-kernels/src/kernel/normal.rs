//! The Gauss–Newton normal equations of a sum of squares `f(x) = Σ_k r_k(x)²`, for
//! Levenberg–Marquardt: one pass over the residual terms accumulates `Σ r_k²`, `Jᵀr` and `JᵀJ`,
//! where row `k` of the Jacobian `J` is `∇r_k`. `J` itself (m × n, m the number of data points)
//! is never stored: each term's row lives only while its products are added, so the pass reads
//! the data once and keeps `n² + n` numbers per GPU block or CPU chunk.
//!
//! A row is exact (the residual evaluated on [`Dual`]s, as for exact gradients), or made of
//! finite differences of the residual, term by term.

use super::exact::{EXACT_DENSE_WIDTH_MAX_GPU, eval_seeded, fill_constants};
use super::{CompensatedSum, window};
use crate::dual::Dual;
use crate::fd::FdScheme;
use crate::term::{Data, Term, Window};
use core::marker::PhantomData;

/// Whether the normal-equations pass takes residual term `T` with `n` variables: on the GPU
/// (`gpu`), a dense window of at most 64 variables (each thread keeps its Jacobian row, and for
/// exact rows its window of duals, in local memory); on the CPU, any.
pub fn normal_supported<T: Term>(n: usize, gpu: bool) -> Result<(), &'static str> {
    if !gpu {
        return Ok(());
    }
    match T::WINDOW {
        Window::Dense if n <= EXACT_DENSE_WIDTH_MAX_GPU => Ok(()),
        Window::Dense => Err(
            "the GPU's normal-equations pass takes at most 64 variables; run Levenberg–Marquardt with --backend cpu",
        ),
        _ => Err(
            "the GPU's normal-equations pass takes dense windows only; run Levenberg–Marquardt with --backend cpu",
        ),
    }
}

/// One chunk's share of the normal equations of `n` variables: `JᵀJ` (row-major, `n × n`, upper
/// triangle only, until [`mirror_upper`]) and `Jᵀr`, each a plain running sum in term
/// order, and `Σ r_k²`, compensated.
pub struct NormalPartial<'a> {
    jtj: &'a mut [f64],
    jtr: &'a mut [f64],
    sum_of_squares: CompensatedSum,
}

impl<'a> NormalPartial<'a> {
    /// Zeroes `jtj` (`n²` entries) and `jtr` (`n`) and starts adding into them.
    #[inline(always)]
    pub fn new(jtj: &'a mut [f64], jtr: &'a mut [f64]) -> Self {
        jtj.fill(0.0);
        jtr.fill(0.0);
        NormalPartial {
            jtj,
            jtr,
            sum_of_squares: CompensatedSum::default(),
        }
    }

    /// Adds residual `r` whose gradient is `row` over the variables `offset .. offset + row.len()`
    /// (the term's window; the rest of its Jacobian row is zero).
    #[inline(always)]
    pub fn add(&mut self, r: f64, offset: usize, row: &[f64]) {
        let n = self.jtr.len();
        self.sum_of_squares.add(r * r);
        for (a, &ja) in row.iter().enumerate() {
            let i = offset + a;
            self.jtr[i] += ja * r;
            let line = &mut self.jtj[i * n + offset..i * n + offset + row.len()];
            for (entry, &jb) in line.iter_mut().zip(row).skip(a) {
                *entry += ja * jb;
            }
        }
    }

    /// `Σ r_k²` over the terms added.
    #[inline(always)]
    pub fn sum_of_squares(&self) -> f64 {
        self.sum_of_squares.value()
    }
}

/// How a Jacobian row is made: exactly, or by finite differences of the residual.
pub trait JacobianRow {
    /// Residual term `k`'s value at `x`, and its gradient over the term's window into `row`
    /// (the window's width).
    fn row<T: Term>(&mut self, k: usize, x: &[f64], data: Data<'_>, row: &mut [f64]) -> f64;
}

/// Exact rows: the residual on [`Dual`]s, `L` variables seeded per evaluation, in a window of
/// duals the caller provides (the term's width).
pub struct ExactRow<'w, const L: usize> {
    /// Scratch for the term's window as duals, one per window variable.
    pub window: &'w mut [Dual<L>],
}

impl<const L: usize> JacobianRow for ExactRow<'_, L> {
    #[inline(always)]
    fn row<T: Term>(&mut self, k: usize, x: &[f64], data: Data<'_>, row: &mut [f64]) -> f64 {
        let local = T::prepare(k, x.len(), data);
        fill_constants(self.window, window::<T>(x, k));
        let mut r = 0.0;
        for first in (0..row.len()).step_by(L) {
            let result = eval_seeded::<T, L>(&local, self.window, first);
            for (entry, d) in row[first..].iter_mut().zip(result.derivatives) {
                *entry = d;
            }
            r = result.value;
        }
        r
    }
}

/// Finite-difference rows with scheme `S`: the residual's difference in each variable of its
/// window, over the spacing, the residual's own evaluations alone.
pub struct DifferenceRow<S>(pub PhantomData<S>);

impl<S: FdScheme> JacobianRow for DifferenceRow<S> {
    #[inline(always)]
    fn row<T: Term>(&mut self, k: usize, x: &[f64], data: Data<'_>, row: &mut [f64]) -> f64 {
        let local = T::prepare(k, x.len(), data);
        let win = window::<T>(x, k);
        let base = S::base::<T>(win, &local);
        for (j, entry) in row.iter_mut().enumerate() {
            let steps = S::steps(win[j]);
            *entry = S::difference::<T>(win, j, &local, base, steps) / steps.spacing;
        }
        S::value::<T>(win, &local, base)
    }
}

/// Adds residual terms `terms` to `partial`, each row made by `rows` into `row` (the window's
/// width).
#[inline(always)]
pub fn normal_partial<T: Term, J: JacobianRow>(
    terms: impl Iterator<Item = usize>,
    x: &[f64],
    data: Data<'_>,
    rows: &mut J,
    partial: &mut NormalPartial<'_>,
    row: &mut [f64],
) {
    let n = x.len();
    for k in terms {
        let r = rows.row::<T>(k, x, data, row);
        partial.add(r, T::WINDOW.offset(k, n), row);
    }
}

/// Fills `jtj`'s lower triangle from its upper one, once the partials are summed.
pub fn mirror_upper(jtj: &mut [f64], n: usize) {
    for i in 0..n {
        for j in 0..i {
            jtj[i * n + j] = jtj[j * n + i];
        }
    }
}
