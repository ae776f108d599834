//! A model of two predictors, `y ≈ b₁ − b₂·x₁·e^{−b₃·x₂}`: scipy's `curve_fit` with `xdata` of
//! shape `(2, M)`. A residual term on the fit layout with two predictor columns: a data row is
//! `x₁`, `x₂`, `y`, then the weight `w = 1/σ`.

use gpu_kernels::prelude::*;

pub struct TwoPredictors;

impl Term for TwoPredictors {
    /// Every point reads the three parameters.
    const WINDOW: Window = Window::Dense;
    /// A point's data row: `x₁`, `x₂`, `y`, `w`.
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n == 3 && data.cols() == 4 {
            Ok(())
        } else {
            Err(
                "TwoPredictors fits n = 3 parameters (b1, b2, b3) to two predictors x1, x2, then y and w = 1/σ",
            )
        }
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(b: Vars<'_, R>, point: &Row<'_>) -> Num<R> {
        let (x1, x2, y, w) = (point.get(0), point.get(1), point.get(2), point.get(3));
        w * (y - (b[0] - b[1] * x1 * (-b[2] * x2).exp()))
    }
}

register_residuals!(TwoPredictors, two_predictors);
