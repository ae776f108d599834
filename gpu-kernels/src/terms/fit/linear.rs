//! `linear`: `m(θ, x) = θ0 + Σ_{j=1}^{k} θj·x_j`, a straight line through `k` predictors
//! (multiple linear regression). It takes `p = k + 1` parameters, and its data are `k` predictor
//! columns, then `y` and `w`.

use crate::{Data, Num, Real, Row, Term, Vars, Window};

/// The `linear` model's residual term: an intercept and one slope per predictor (see the
/// module doc).
pub struct Linear;

impl Term for Linear {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n >= 1 && data.cols() == n + 1 {
            Ok(())
        } else {
            Err("it takes p = k + 1 parameters for k predictors, an intercept and one slope each")
        }
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(theta: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        let predictors = theta.len() - 1;
        let mut model = theta[0];
        for j in 0..predictors {
            model += theta[j + 1] * row.get(j);
        }
        (row.get(predictors) - model) * row.get(predictors + 1)
    }
}

crate::register_residuals!(Linear, fit_linear);
crate::batch_kernel!(FIT_LINEAR_BATCH = fit_linear_batch(Linear));
