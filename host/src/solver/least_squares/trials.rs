//! Trials taken from factor passes. Where the objective says a trial's factor pass costs about
//! what its value pass does ([`factors_trials`](LeastSquaresObjective::factors_trials): a GPU
//! waits as long for either), [`Trials`] answers each trial's sum of squares with a factor pass
//! and keeps the factor. The step that accepts the trial then asks for the factor at that very
//! point and takes the kept one, with no pass. Levenberg–Marquardt and trf both see the
//! objective through it; elsewhere it passes every call through.

use crate::backend::{Factor, RobustLoss, StepBounds};
use crate::objective::{EvalError, LeastSquaresObjective};

/// `objective` with the last trial's factor kept, where it factors its trials.
pub(super) struct Trials<'o> {
    objective: &'o mut dyn LeastSquaresObjective,
    /// The last trial's factor; `None` where trials take value passes.
    kept: Option<Kept>,
}

/// A trial's factor pass and where it was made.
struct Kept {
    point: Vec<f64>,
    loss: RobustLoss,
    factor: Factor,
    sum_of_squares: f64,
    /// Whether it is the last trial's and not yet taken.
    fresh: bool,
}

impl<'o> Trials<'o> {
    /// `objective`, with `n` variables.
    pub(super) fn new(objective: &'o mut dyn LeastSquaresObjective, n: usize) -> Self {
        let kept = objective.factors_trials().then(|| Kept {
            point: Vec::with_capacity(n),
            loss: RobustLoss::default(),
            factor: Factor::new(n),
            sum_of_squares: f64::NAN,
            fresh: false,
        });
        Self { objective, kept }
    }
}

impl Kept {
    /// Whether it is the factor at `x` under `loss`, bit for bit, not yet taken.
    fn is_at(&self, x: &[f64], loss: RobustLoss) -> bool {
        self.fresh
            && self.loss == loss
            && self.point.len() == x.len()
            && (self.point.iter().zip(x)).all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl LeastSquaresObjective for Trials<'_> {
    fn dim(&self) -> usize {
        self.objective.dim()
    }

    fn residuals(&self) -> usize {
        self.objective.residuals()
    }

    /// The value pass; or where trials are factored, the factor pass, whose factor is kept for
    /// the step that may accept `x`. Nothing checks its `R` unless that step takes it: a
    /// rejected trial's Jacobian is never used.
    fn sum_of_squares(&mut self, x: &[f64], loss: RobustLoss) -> Result<f64, EvalError> {
        let Some(kept) = &mut self.kept else {
            return self.objective.sum_of_squares(x, loss);
        };
        kept.fresh = false;
        kept.sum_of_squares = self.objective.factor(x, loss, &mut kept.factor)?;
        kept.point.clear();
        kept.point.extend_from_slice(x);
        kept.loss = loss;
        kept.fresh = true;
        Ok(kept.sum_of_squares)
    }

    /// The kept factor where it was made at `x` (the accepted trial), with no pass; else a
    /// factor pass.
    fn factor(
        &mut self,
        x: &[f64],
        loss: RobustLoss,
        factor: &mut Factor,
    ) -> Result<f64, EvalError> {
        match &mut self.kept {
            Some(kept) if kept.is_at(x, loss) => {
                kept.fresh = false;
                std::mem::swap(factor, &mut kept.factor);
                Ok(kept.sum_of_squares)
            }
            _ => self.objective.factor(x, loss, factor),
        }
    }

    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), EvalError> {
        self.objective.confine_steps(bounds)
    }

    fn factors_trials(&self) -> bool {
        self.kept.is_some()
    }
}
