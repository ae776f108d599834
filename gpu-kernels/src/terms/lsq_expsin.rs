//! A least-squares data fit: `y ≈ θ₀·e^{−θ₁t} + Σ_{k=2}^{p−1} θ_k·sin(k·t)`, one term per data
//! point, `(y_j − m(θ, t_j))²`. Data columns: `t`, `y`, then the sine basis `sin(k·t)` for
//! `k = 2 .. p−1`, so `p` columns in all.
//!
//! The sines do not depend on θ, so they are data, computed once when the problem is built
//! (as a numpy user would precompute them), not in every evaluation. Column `k` of the data is
//! the weight of parameter `k` for `k ≥ 2`, so the model reads them in place, as
//! `θ.dot_row_plus(2, row, θ₀·e^{−θ₁t})` (in reverse mode one step with the exponential
//! added). The gradient's `p + 1` evaluations of a point then cost one `exp` and a
//! dot product each (and on the CPU run four at a time, on [`Lanes`](crate::Lanes)).

use crate::{Data, Num, Real, Row, Term, Vars, Window};

/// The `lsq-expsin` data fit: one squared residual per data point, with the sine basis as data
/// (see the module doc).
pub struct LsqExpSin;

impl Term for LsqExpSin {
    const WINDOW: Window = Window::Dense;
    /// The point's row: `t`, `y`, then the basis.
    type Local<'a> = Row<'a>;
    const EVAL_IN_LANES: bool = true;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n < 2 {
            Err("lsq-expsin needs n >= 2 parameters")
        } else if data.cols() != n {
            Err("lsq-expsin data must have n columns: t, y and sin(k·t) for k = 2 .. n-1")
        } else {
            Ok(())
        }
    }

    #[inline(always)]
    fn prepare(j: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(j)
    }

    // Inlined into every pass: the compiler had left it out of line where several passes call
    // it.
    #[inline(always)]
    fn eval<R: Real>(theta: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        let (t, y) = (row.get(0), row.get(1));
        (theta.dot_row_plus(2, *row, theta[0] * (-theta[1] * t).exp()) - y).sq()
    }
}

crate::register_term!(LsqExpSin, lsq_expsin);
