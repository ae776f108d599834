//! A straight line through noisy data with outliers, `y ≈ a + b·t`, fitted robustly: each
//! point's residual `r` costs `2(√(1 + r²) − 1)` (scipy's `loss='soft_l1'`), which grows like
//! `r²` for small residuals and like `|r|` for outliers, so a few wild points do not drag the line.

use gpu_kernels::prelude::*;

pub struct RobustLine;

impl Term for RobustLine {
    /// Every point reads both parameters.
    const WINDOW: Window = Window::Dense;
    /// A point's data row: `t`, then `y`.
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n == 2 && data.cols() == 2 {
            Ok(())
        } else {
            Err("RobustLine fits n = 2 parameters (a, b) to data columns t and y")
        }
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(ab: Vars<'_, R>, point: &Row<'_>) -> Num<R> {
        let (t, y) = (point.get(0), point.get(1));
        let r = y - (ab[0] + ab[1] * t);
        2.0 * ((1.0 + r.sq()).sqrt() - 1.0)
    }
}

register_term!(RobustLine, robust_line);
