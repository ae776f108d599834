//! `gauss-2d`: `m(θ, x, y) = a·exp(−((x − x₀)² + (y − y₀)²) / (2σ²)) + b`, a symmetric 2-D
//! Gaussian on a constant background, with Gpufit's parameter order `θ = (a, x₀, y₀, σ, b)`. Its
//! data are two predictor columns, `x` and `y`, then the observations and the weights `w`.

use crate::{Data, Num, Real, Row, Term, Vars, Window};

/// The `gauss-2d` model's residual term: a symmetric 2-D Gaussian spot (see the module doc).
pub struct Gauss2d;

impl Term for Gauss2d {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n == 5 && data.cols() == 4 {
            Ok(())
        } else {
            Err("it takes p = 5 (a, x0, y0, s, b) and two predictors, x and y")
        }
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(theta: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        let zx = (row.get(0) - theta[1]) / theta[3];
        let zy = (row.get(1) - theta[2]) / theta[3];
        let spot = ((zx * zx + zy * zy) * -0.5).exp();
        (row.get(2) - theta[4].add_product(theta[0], spot)) * row.get(3)
    }
}

crate::register_residuals!(Gauss2d, fit_gauss_2d);
crate::batch_kernel!(FIT_GAUSS_2D_BATCH = fit_gauss_2d_batch(Gauss2d));
