//! Levenberg–Marquardt for a least-squares objective: MINPACK's loop (`gpu_kernels::lm`, the
//! same source a GPU thread runs for each small fit of a batch) over the objective's passes.
//! One pass over the residuals folds their rows into `R` and `Qᵀr` (`J = Q·R`, [`Factor`]) on
//! either backend; the loop runs on the `n × n` triangle. `J`'s condition number is not
//! squared.

use super::checks::{check_start, finite_jacobian, gradient};
use super::options::LmOptions;
use super::result::LeastSquaresResult;
use super::trials::Trials;
use crate::backend::Factor;
use crate::backend::RobustLoss;
use crate::linalg::vector;
use crate::objective::LeastSquaresObjective;
use crate::solver::result::{Iterate, SolveError};
use gpu_kernels::lm::{FactorAt, Passes, Progress, Settings, solve, work_len};
use std::borrow::Cow;
use std::ops::ControlFlow;

/// MINPACK's Levenberg–Marquardt from `x0`, which the dispatch has checked: the right length,
/// finite, no variable held, no bound on a free one, a linear loss.
pub(super) fn least_squares(
    objective: &mut dyn LeastSquaresObjective,
    x0: &[f64],
    options: &LmOptions,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<LeastSquaresResult, SolveError> {
    let n = x0.len();
    let m = objective.residuals();
    if m < n {
        return Err(SolveError::Underdetermined {
            residuals: m,
            variables: n,
        });
    }
    let settings = Settings {
        ftol: options.ftol,
        xtol: options.xtol,
        gtol: options.gtol,
        factor: options.factor,
        max_nfev: options.max_nfev.unwrap_or(n.saturating_mul(100)),
    };
    let mut passes = ObjectivePasses {
        objective: Trials::new(objective, n),
        loss: options.robust_loss(),
        factor: Factor::new(n),
        observer,
    };
    let mut x = x0.to_vec();
    let mut memory = vec![0.0; work_len(n)];
    let mut ipvt = vec![0; n];
    let end = solve(&mut passes, &mut x, &settings, &mut memory, &mut ipvt)?;
    let counts = [end.nfev, end.njev, end.nit];
    Ok(LeastSquaresResult::at(
        x,
        passes.factor,
        0.5 * end.sum_of_squares,
        m,
        counts,
        end.stop,
    ))
}

/// The objective's passes as the loop asks for them, each factor checked as it comes, and the
/// caller's observer after each iteration. A trial's pass may be a factor pass, kept for the
/// step that accepts it ([`Trials`]).
struct ObjectivePasses<'o, 'b> {
    objective: Trials<'o>,
    loss: RobustLoss,
    factor: Factor,
    observer: &'b mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
}

impl Passes for ObjectivePasses<'_, '_> {
    type Error = SolveError;

    fn factor(&mut self, x: &[f64], at: FactorAt) -> Result<f64, SolveError> {
        let sum_of_squares = self.objective.factor(x, self.loss, &mut self.factor)?;
        match at {
            FactorAt::Start => {
                check_start(sum_of_squares, &self.factor)?;
                finite_jacobian(&self.factor, 0)?;
            }
            FactorAt::Iteration(nit) => finite_jacobian(&self.factor, nit)?,
            FactorAt::End => {}
        }
        Ok(sum_of_squares)
    }

    fn triangle(&self) -> (&[f64], &[f64]) {
        (&self.factor.r, &self.factor.qtr)
    }

    fn sum_of_squares(&mut self, x: &[f64]) -> Result<f64, SolveError> {
        Ok(self.objective.sum_of_squares(x, self.loss)?)
    }

    fn iterate(&mut self, progress: Progress<'_>) -> Result<ControlFlow<()>, SolveError> {
        let grad = gradient(&self.factor);
        let iterate = Iterate {
            nit: progress.nit,
            fun: progress.sum_of_squares,
            grad_norm: 2.0 * vector::norm(&grad, f64::INFINITY),
            nfev: progress.nfev,
            njev: progress.njev,
            x: &|| Ok(Cow::Borrowed(progress.x)),
        };
        Ok((self.observer)(&iterate))
    }
}
