//! [`PoissonDeviance`]: a fit model's residual term turned into Poisson deviance residuals, so
//! that least squares over them is the model's maximum-likelihood fit to counts (Gpufit's MLE
//! estimator).

use crate::{Data, Num, Real, Term, Vars, Window};
use core::marker::PhantomData;

/// The residual term of a fit model `T` (in the fit layout: predictors, `y`, `w`, its residual
/// `w·(y − m)`) as Poisson deviance residuals: `sign(y − m)·√(2·(m − y − y·ln(m/y)))`, and
/// `−√(2m)` where `y = 0`. Their sum of squares is the Poisson deviance, so Levenberg–Marquardt
/// over them finds the maximum-likelihood `θ` for counts `y` with means `m(θ)`; `JᵀJ` at the
/// end estimates the Fisher information. The weights must be 1; a model value `m ≤ 0` where
/// `y > 0`, or a count `y < 0`, gives NaN.
pub struct PoissonDeviance<T>(PhantomData<T>);

impl<T: Term> Term for PoissonDeviance<T> {
    const WINDOW: Window = T::WINDOW;
    const DIFFERENTIATION: crate::Differentiation = T::DIFFERENTIATION;
    type Local<'a> = (T::Local<'a>, f64);

    #[inline(always)]
    fn terms(n: usize, data: Data<'_>) -> usize {
        T::terms(n, data)
    }

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        T::check(n, data)
    }

    #[inline(always)]
    fn prepare<'a>(k: usize, n: usize, data: Data<'a>) -> Self::Local<'a> {
        let y = match data.cols().checked_sub(2) {
            Some(c) => data.row(k).get(c),
            None => f64::NAN,
        };
        (T::prepare(k, n, data), y)
    }

    #[inline(always)]
    fn eval<R: Real>(x: Vars<'_, R>, (local, y): &Self::Local<'_>) -> Num<R> {
        deviance_residual(T::eval(x, local), *y)
    }
}

/// The deviance residual of count `y` whose least-squares residual is `r = y − m`. Written as
/// `r·√(q(v)/y)` with `v = (m − y)/y` and `q(v) = 2(v − ln(1 + v))/v²`, smooth through `m = y`
/// (where `√` of the deviance has no derivative); `q` by its series near `v = 0`, where the
/// difference would lose its digits.
#[inline(always)]
fn deviance_residual<R: Real>(r: Num<R>, y: f64) -> Num<R> {
    if y == 0.0 {
        return -((-r) * 2.0).sqrt();
    }
    let v = -r / y;
    let q = if v.value().abs() < 0.0625 {
        let mut q = Num::constant(0.0);
        for k in (0..SERIES.len()).rev() {
            q = q * v + SERIES[k];
        }
        q
    } else {
        (v - v.ln_1p()) * 2.0 / (v * v)
    };
    r * (q / y).sqrt()
}

/// The coefficients of `q(v) = 2·Σ (−v)^k/(k + 2)`, that of `v^k` at `k`: at `|v| < 1/16` the
/// first term left out, `k = 15`, is at most `2⁻⁵⁹/17`, about 1e-19. Made when the crate is compiled, so that the device divides
/// nothing for them, in f32 fits as in f64.
const SERIES: [f64; 15] = {
    let mut c = [0.0; 15];
    let mut k = 0;
    while k < c.len() {
        let sign = if k % 2 == 0 { 2.0 } else { -2.0 };
        c[k] = sign / (k + 2) as f64;
        k += 1;
    }
    c
};
