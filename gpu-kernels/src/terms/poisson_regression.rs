//! Poisson regression with a log link, as a generalized linear model's negative
//! log-likelihood: one term per data row, `e^η − y·η` with `η = θ₀ + Σ_{j≥1} θⱼ·xⱼ` (the constant
//! `ln y!` left out). Data columns: the count `y`, then the features `x₁ … x_{p−1}`, so that
//! column `j ≥ 1` is the weight of parameter `j` and the model reads them in place.
//!
//! A wide window under a nonlinearity: every row reads all `p` parameters, so forward mode
//! would take `⌈p/16⌉` evaluations of the row per gradient on the CPU; reverse mode records the
//! linear predictor, its intercept included (`dot_row_plus`), as one step and takes the
//! gradient in about two. `e^η − y·η` is written as
//! `add_product` with the constant `−y`: one step on the tape where the product and the
//! difference were two, with the same bits (`e + (−y)·η` rounds as `e − y·η`).

use crate::{Data, Num, Real, Row, Term, Vars, Window};

/// The `poisson-regression` term (see the module doc).
pub struct PoissonRegression;

impl Term for PoissonRegression {
    const WINDOW: Window = Window::Dense;
    /// The row: `y`, then the features.
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n < 1 {
            Err("poisson-regression needs n >= 1 parameters (an intercept, then one per feature)")
        } else if data.cols() != n {
            Err("poisson-regression data must have n columns: the count y, then n - 1 features")
        } else {
            Ok(())
        }
    }

    #[inline(always)]
    fn prepare(j: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(j)
    }

    #[inline(always)]
    fn eval<R: Real>(theta: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        let eta = theta.dot_row_plus(1, *row, theta[0]);
        eta.exp().add_product(Num::constant(-row.get(0)), eta)
    }
}

crate::register_term!(PoissonRegression, poisson_regression);
