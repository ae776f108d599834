//! `gauss-2d`: `m(θ, x, y) = a·exp(−((x − x₀)² + (y − y₀)²) / (2σ²)) + b`, a symmetric 2-D
//! Gaussian on a constant background, with Gpufit's parameter order `θ = (a, x₀, y₀, σ, b)`; and
//! `gauss-2d-elliptic`, `a·exp(−(x − x₀)²/(2σx²) − (y − y₀)²/(2σy²)) + b`, with
//! `θ = (a, x₀, y₀, σx, σy, b)`, Gpufit's elliptic spot. Their data are two predictor columns,
//! `x` and `y`, then the observations and the weights `w`.

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
        residual(theta, row, [3, 3, 4])
    }
}

crate::register_residuals!(Gauss2d, fit_gauss_2d);
crate::batch_kernel!(FIT_GAUSS_2D_BATCH = fit_gauss_2d_batch(Gauss2d));
crate::batch_kernel!(
    FIT_GAUSS_2D_POISSON_BATCH = fit_gauss_2d_poisson_batch(crate::PoissonDeviance<Gauss2d>)
);

/// The `gauss-2d-elliptic` model's residual term: a 2-D Gaussian spot with a width along each
/// axis (see the module doc).
pub struct Gauss2dElliptic;

impl Term for Gauss2dElliptic {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n == 6 && data.cols() == 4 {
            Ok(())
        } else {
            Err("it takes p = 6 (a, x0, y0, sx, sy, b) and two predictors, x and y")
        }
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(theta: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        residual(theta, row, [3, 4, 5])
    }
}

crate::register_residuals!(Gauss2dElliptic, fit_gauss_2d_elliptic);
crate::batch_kernel!(FIT_GAUSS_2D_ELLIPTIC_BATCH = fit_gauss_2d_elliptic_batch(Gauss2dElliptic));
crate::batch_kernel!(
    FIT_GAUSS_2D_ELLIPTIC_POISSON_BATCH =
        fit_gauss_2d_elliptic_poisson_batch(crate::PoissonDeviance<Gauss2dElliptic>)
);

/// A spot's weighted residual `w·(y − a·exp(−zx²/2 − zy²/2) − b)` at `row`, with
/// `zx = (x − x₀)/θ[sx]` and `zy = (y − y₀)/θ[sy]`: `a`, `x₀`, `y₀` are `θ[0..3]`, and
/// `[sx, sy, b]` say where the widths and the offset are.
#[inline(always)]
fn residual<R: Real>(theta: Vars<'_, R>, row: &Row<'_>, [sx, sy, b]: [usize; 3]) -> Num<R> {
    let zx = (row.get(0) - theta[1]) / theta[sx];
    let zy = (row.get(1) - theta[2]) / theta[sy];
    let spot = ((zx * zx + zy * zy) * -0.5).exp();
    (row.get(2) - theta[b].add_product(theta[0], spot)) * row.get(3)
}
