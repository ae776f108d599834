//! Levenberg–Marquardt for a least-squares objective: MINPACK's loop (`gpu_kernels::lm`, the
//! same source a GPU thread runs for each small fit of a batch) over the objective's passes.
//! One pass over the residuals folds their rows into `R` and `Qᵀr` (`J = Q·R`, [`Factor`]) on
//! either backend; the loop runs on the `n × n` triangle. `J`'s condition number is not
//! squared.

use super::checks::{check_start, finite_jacobian, gradient};
use super::options::LmOptions;
use super::result::LeastSquaresResult;
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
    let trial = (objective.factors_trials()).then(|| TrialFactor {
        point: Vec::with_capacity(n),
        factor: Factor::new(n),
        sum_of_squares: f64::NAN,
        fresh: false,
    });
    let mut passes = ObjectivePasses {
        objective,
        loss: options.robust_loss(),
        factor: Factor::new(n),
        trial,
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
/// caller's observer after each iteration.
struct ObjectivePasses<'o, 'b> {
    objective: &'o mut dyn LeastSquaresObjective,
    loss: RobustLoss,
    factor: Factor,
    /// Where the objective factors its trials
    /// ([`factors_trials`](LeastSquaresObjective::factors_trials)), the last trial's factor.
    trial: Option<TrialFactor>,
    observer: &'b mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
}

/// The factor pass at the last trial point: its sum of squares was the trial's, and the loop's
/// next factor takes it without a pass where it asks at that very point (the step accepted).
struct TrialFactor {
    point: Vec<f64>,
    factor: Factor,
    sum_of_squares: f64,
    /// Whether it is the last trial's and not yet taken.
    fresh: bool,
}

impl TrialFactor {
    /// Whether it is the factor at `x`, bit for bit, not yet taken.
    fn is_at(&self, x: &[f64]) -> bool {
        self.fresh && (self.point.iter().zip(x)).all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl Passes for ObjectivePasses<'_, '_> {
    type Error = SolveError;

    fn factor(&mut self, x: &[f64], at: FactorAt) -> Result<f64, SolveError> {
        let sum_of_squares = match &mut self.trial {
            // The accepted trial's factor: the pass already made.
            Some(trial) if trial.is_at(x) => {
                trial.fresh = false;
                std::mem::swap(&mut self.factor, &mut trial.factor);
                trial.sum_of_squares
            }
            _ => self.objective.factor(x, self.loss, &mut self.factor)?,
        };
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

    /// The value pass; or where the objective factors its trials, the factor pass, whose
    /// factor is kept for the step that may accept `x`. Its `R` is checked only if taken: a
    /// rejected trial's Jacobian is never used.
    fn sum_of_squares(&mut self, x: &[f64]) -> Result<f64, SolveError> {
        let Some(trial) = &mut self.trial else {
            return Ok(self.objective.sum_of_squares(x, self.loss)?);
        };
        trial.fresh = false;
        trial.sum_of_squares = self.objective.factor(x, self.loss, &mut trial.factor)?;
        trial.point.clear();
        trial.point.extend_from_slice(x);
        trial.fresh = true;
        Ok(trial.sum_of_squares)
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
