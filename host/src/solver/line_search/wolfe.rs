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

    /// The decrease a step makes, told by the slopes where `φ` cannot tell it (Hager & Zhang's
    /// approximate Wolfe condition, with `δ = c1`): `φ(α)` within `φ(0)`'s rounding
    /// ([`FLAT_ULPS`] units of `ε·|φ(0)|`) and `φ'(α) ≤ (2·c1 − 1)·φ'(0)`. For a `φ'` linear
    /// on `[0, α]` the second is Armijo's condition itself, since then
    /// `φ(α) − φ(0) = α·(φ'(0) + φ'(α))/2`.
    ///
    /// Why: near the minimum of a sum of many terms the decrease left is below one ulp of `f`
    /// (a Poisson regression over 10⁶ rows, `f ≈ 6.1·10⁵`: a step whose slope fell from
    /// −6.7e-13 to −1.2e-14 raised `f` by one ulp, 1.2e-10), so Armijo's test on `f` rejects every
    /// step and the solve ends in precision loss at a gradient the next step would cut. The
    /// slopes are exact gradients' dot products, accurate where `f`'s differences are not.
    pub(super) fn decrease_by_slope(&self, value: f64, slope: f64) -> bool {
        let rounding = FLAT_ULPS * f64::EPSILON * self.value0.abs();
        (value - self.value0).abs() <= rounding && slope <= (2.0 * self.c1 - 1.0) * self.slope0
    }
}

/// How many units of `ε·|φ(0)|` a value may lie from `φ(0)` and still count as level with it
/// in [`Wolfe::decrease_by_slope`]: a sum's last bits, not a rise of `f`. Level on both sides:
/// a value further below `φ(0)` is a decrease `φ` itself tells, which Armijo's test then judges
/// (one-sided, a step that lowered `f` by 20 times too little passed on its slopes and ended an
/// L-BFGS solve of chained Rosenbrock, n = 2·10⁴, m = 5, at f = 1.6·10⁴ with "success").
const FLAT_ULPS: f64 = 4.0;

/// An accepted step. The ray's `point` and `gradient` hold `x + step·p` and the gradient there.
#[derive(Clone, Copy, Debug)]
pub(in crate::solver) struct Accepted {
    pub step: f64,
    pub value: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value level with `φ(0)` to its rounding, on either side, leaves the decrease to the
    /// slopes; one further below is a decrease `φ` tells, and Armijo's test judges it: the step
    /// of an L-BFGS solve of chained Rosenbrock that lowered `f ≈ 1.6·10⁴` by 5.9e-6 where
    /// `c1·φ'(0)` asked for 1.2e-4, its slope falling from −1.199 to +0.860, is no decrease.
    #[test]
    fn only_a_level_value_leaves_the_decrease_to_the_slopes() {
        let wolfe = Wolfe {
            c1: 1e-4,
            c2: 0.9,
            value0: 16432.5,
            slope0: -1.199,
        };
        let ulp = f64::EPSILON * wolfe.value0;
        for level in [wolfe.value0 + 2.0 * ulp, wolfe.value0 - 2.0 * ulp] {
            assert!(wolfe.decrease_by_slope(level, 0.86));
        }
        let below = wolfe.value0 - 5.9e-6;
        assert!(!wolfe.sufficient_decrease(1.0, below));
        assert!(!wolfe.decrease_by_slope(below, 0.86));
    }
}
