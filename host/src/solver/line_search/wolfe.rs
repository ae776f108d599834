//! The line search's vocabulary, shared by both searches: the function `φ` along the ray, its
//! samples, the strong Wolfe conditions, and an accepted step.

use crate::objective::EvalError;

/// `φ(α) = f(x + α·p)` and `φ'(α)`: all the two searches see of the objective.
pub(in crate::solver) trait Line {
    /// `φ(step)`; moves the trial point to `x + step·p`.
    fn value(&mut self, step: f64) -> Result<f64, EvalError>;
    /// `φ'` at the trial point of the last [`Line::value`] call.
    fn slope(&mut self) -> Result<f64, EvalError>;
    /// `φ(step)` and `φ'(step)` in one evaluation, when both are wanted.
    fn value_and_slope(&mut self, step: f64) -> Result<(f64, f64), EvalError>;
}

/// A step with `φ` and `φ'` there.
#[derive(Clone, Copy, Debug)]
pub(super) struct Sample {
    pub(super) step: f64,
    pub(super) value: f64,
    pub(super) slope: f64,
}

/// The strong Wolfe conditions on `φ`, with `φ(0) = value0` and `φ'(0) = slope0 < 0`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Wolfe {
    pub(super) c1: f64,
    pub(super) c2: f64,
    pub(super) value0: f64,
    pub(super) slope0: f64,
}

impl Wolfe {
    /// The least decrease a step must achieve, per unit step: `c1·φ'(0)`.
    pub(super) fn decrease_rate(&self) -> f64 {
        self.c1 * self.slope0
    }

    /// Armijo: `φ(α) ≤ φ(0) + α·c1·φ'(0)`. False for a non-finite `value`.
    pub(super) fn sufficient_decrease(&self, step: f64, value: f64) -> bool {
        value <= self.value0 + step * self.decrease_rate() && value.is_finite()
    }

    /// `|φ'(α)| ≤ c2·|φ'(0)|`.
    pub(super) fn curvature(&self, slope: f64) -> bool {
        slope.abs() <= -self.c2 * self.slope0
    }
}

/// An accepted step. The ray's `point` and `gradient` hold `x + step·p` and the gradient there.
#[derive(Clone, Copy, Debug)]
pub(in crate::solver) struct Accepted {
    pub step: f64,
    pub value: f64,
}
