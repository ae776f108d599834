//! `exp-decay`: `m(θ, t) = Σ_{i<K} a_i·e^{−b_i t}`, a sum of `K` exponentials, with
//! `θ = (a₀, b₀, a₁, b₁, …)`: `p = 2K` parameters.

use super::{check_columns, residual};
use crate::{Data, Num, Real, Row, Term, Vars, Window};

/// The `exp-decay` model's residual term: a sum of `K` exponentials (see the module doc).
pub struct ExpDecay;

impl Term for ExpDecay {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n % 2 != 0 {
            return Err("exp-decay has 2 parameters per exponential (a_i, b_i): p must be even");
        }
        check_columns(data)
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(theta: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        let t = row.get(0);
        let mut model = Num::constant(0.0);
        for i in (0..theta.len()).step_by(2) {
            model += theta[i] * (-theta[i + 1] * t).exp();
        }
        residual(row, model)
    }
}

crate::register_residuals!(ExpDecay, fit_exp_decay);
crate::batch_kernel!(FIT_EXP_DECAY_BATCH = fit_exp_decay_batch(ExpDecay));
crate::batch_kernel!(
    FIT_EXP_DECAY_POISSON_BATCH = fit_exp_decay_poisson_batch(crate::PoissonDeviance<ExpDecay>)
);
