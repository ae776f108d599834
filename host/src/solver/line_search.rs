//! Strong Wolfe line search along a ray `x + α·p`, as scipy's `_line_search_wolfe12`:
//! Moré–Thuente ([`more_thuente`]) first and, when it fails, a bracketing and zoom search
//! ([`zoom`]) from the same initial step.
//!
//! A trial point where the objective is not finite (value or gradient) never enters either
//! search's state: it is treated as lying beyond the usable region, and the step shrinks toward
//! the best finite point.

mod more_thuente;
mod zoom;

use super::vector::{dot, fill_with};
use crate::objective::{EvalError, Objective};

/// An objective with its evaluation counts, scipy's `nfev` and `njev`.
pub(super) struct CountedObjective<'a> {
    objective: &'a mut dyn Objective,
    pub nfev: usize,
    pub njev: usize,
}

impl<'a> CountedObjective<'a> {
    pub fn new(objective: &'a mut dyn Objective) -> Self {
        Self {
            objective,
            nfev: 0,
            njev: 0,
        }
    }

    pub fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        self.nfev += 1;
        self.objective.value(x)
    }

    pub fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        self.njev += 1;
        self.objective.gradient(x, g)
    }
}

/// `φ(α) = f(x + α·p)` and `φ'(α) = ∇f(x + α·p)ᵀp`. It keeps the last trial point and the
/// gradient there, so that the solver takes both over without evaluating again.
pub(super) struct Ray<'r, 'o> {
    pub objective: &'r mut CountedObjective<'o>,
    pub origin: &'r [f64],
    pub direction: &'r [f64],
    /// `x + α·p` for the last `α` passed to [`Ray::value`].
    pub point: &'r mut [f64],
    /// `∇f(point)`, once [`Ray::slope`] has been called there.
    pub gradient: &'r mut [f64],
}

impl Ray<'_, '_> {
    /// `φ(step)`; moves the trial point to `x + step·p`.
    fn value(&mut self, step: f64) -> Result<f64, EvalError> {
        fill_with(self.point, self.origin, self.direction, |x, p| x + step * p);
        self.objective.value(self.point)
    }

    /// `φ'` at the trial point of the last [`Ray::value`] call.
    fn slope(&mut self) -> Result<f64, EvalError> {
        self.objective.gradient(self.point, self.gradient)?;
        Ok(dot(self.gradient, self.direction))
    }
}

/// A step with `φ` and `φ'` there.
#[derive(Clone, Copy, Debug)]
struct Sample {
    step: f64,
    value: f64,
    slope: f64,
}

/// The strong Wolfe conditions on `φ`, with `φ(0) = value0` and `φ'(0) = slope0 < 0`.
#[derive(Clone, Copy, Debug)]
struct Wolfe {
    c1: f64,
    c2: f64,
    value0: f64,
    slope0: f64,
}

impl Wolfe {
    /// The least decrease a step must achieve, per unit step: `c1·φ'(0)`.
    fn decrease_rate(&self) -> f64 {
        self.c1 * self.slope0
    }

    /// Armijo: `φ(α) ≤ φ(0) + α·c1·φ'(0)`. False for a non-finite `value`.
    fn sufficient_decrease(&self, step: f64, value: f64) -> bool {
        value <= self.value0 + step * self.decrease_rate() && value.is_finite()
    }

    /// `|φ'(α)| ≤ c2·|φ'(0)|`.
    fn curvature(&self, slope: f64) -> bool {
        slope.abs() <= -self.c2 * self.slope0
    }
}

/// An accepted step. The ray's `point` and `gradient` hold `x + step·p` and the gradient there.
#[derive(Clone, Copy, Debug)]
pub(super) struct Accepted {
    pub step: f64,
    pub value: f64,
}

/// scipy's first trial step: `min(1, 1.01·2·(f − f_previous)/φ'(0))`, the step to the minimum
/// of the quadratic that decreases by as much as the last iteration did (with some margin), or 1
/// when that is negative or undefined.
pub(super) fn initial_step(value: f64, previous_value: f64, slope0: f64) -> f64 {
    if slope0 == 0.0 {
        return 1.0;
    }
    let step = (1.01 * 2.0 * (value - previous_value) / slope0).min(1.0);
    if step < 0.0 { 1.0 } else { step }
}

/// Searches the ray for a step satisfying the strong Wolfe conditions with constants `c1`,
/// `c2`, starting from `initial`. `Ok(None)`: no acceptable step was found (including when
/// `φ(0)` is not finite, `p` is not a descent direction, or `initial` is 0, which means the last
/// iteration did not change `f`: scipy then reports precision loss too).
pub(super) fn search(
    ray: &mut Ray<'_, '_>,
    value0: f64,
    slope0: f64,
    initial: f64,
    c1: f64,
    c2: f64,
) -> Result<Option<Accepted>, EvalError> {
    let descent = slope0 < 0.0 && slope0.is_finite();
    if !(value0.is_finite() && descent && initial > 0.0) {
        return Ok(None);
    }
    let wolfe = Wolfe {
        c1,
        c2,
        value0,
        slope0,
    };
    match more_thuente::search(ray, &wolfe, initial)? {
        Some(accepted) => Ok(Some(accepted)),
        None => zoom::search(ray, &wolfe, initial),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(x − 3)²` in one variable, NaN beyond `x > 4`.
    struct NanBeyondFour;

    impl Objective for NanBeyondFour {
        fn dim(&self) -> usize {
            1
        }

        fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
            Ok(if x[0] > 4.0 {
                f64::NAN
            } else {
                (x[0] - 3.0).powi(2)
            })
        }

        fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
            g[0] = if x[0] > 4.0 {
                f64::NAN
            } else {
                2.0 * (x[0] - 3.0)
            };
            Ok(())
        }
    }

    type Search = fn(&mut Ray<'_, '_>, &Wolfe, f64) -> Result<Option<Accepted>, EvalError>;

    /// The Wolfe conditions of the tests' ray: `φ(0) = 9`, `φ'(0) = −6`.
    const WOLFE: Wolfe = Wolfe {
        c1: 1e-4,
        c2: 0.9,
        value0: 9.0,
        slope0: -6.0,
    };

    /// Runs `body` on the ray from 0 along +1 of [`NanBeyondFour`]; returns what it returns, the
    /// point and gradient the ray holds afterwards, and the evaluation counts.
    fn on_ray<R>(body: impl FnOnce(&mut Ray<'_, '_>) -> R) -> (R, f64, f64, usize, usize) {
        let (mut objective, mut point, mut gradient) = (NanBeyondFour, [0.0], [0.0]);
        let mut counted = CountedObjective::new(&mut objective);
        let mut ray = Ray {
            objective: &mut counted,
            origin: &[0.0],
            direction: &[1.0],
            point: &mut point,
            gradient: &mut gradient,
        };
        let result = body(&mut ray);
        (result, point[0], gradient[0], counted.nfev, counted.njev)
    }

    /// Runs `search` from `initial` under [`WOLFE`].
    fn run(search: Search, initial: f64) -> (Option<Accepted>, f64, f64, usize, usize) {
        on_ray(|ray| search(ray, &WOLFE, initial).unwrap())
    }

    #[test]
    fn both_searches_retreat_from_non_finite_points_to_a_wolfe_step() {
        for search in [more_thuente::search as Search, zoom::search] {
            let (accepted, point, gradient, nfev, njev) = run(search, 10.0);
            let accepted = accepted.expect("a step");
            assert!(accepted.step <= 4.0);
            assert!(WOLFE.sufficient_decrease(accepted.step, accepted.value));
            assert!(WOLFE.curvature(gradient));
            // The ray holds the accepted point and its gradient.
            assert_eq!(point, accepted.step);
            assert_eq!(gradient, 2.0 * (accepted.step - 3.0));
            assert!(nfev >= 2 && njev >= 1 && njev <= nfev);
        }
    }

    #[test]
    fn more_thuente_takes_a_good_first_step_at_once() {
        let (accepted, _, _, nfev, njev) = run(more_thuente::search, 2.5);
        assert_eq!(accepted.map(|a| a.step), Some(2.5));
        assert_eq!((nfev, njev), (1, 1));
    }

    #[test]
    fn search_refuses_what_it_cannot_decrease() {
        let (c1, c2) = (1e-4, 0.9);
        let ((), _, _, nfev, _) = on_ray(|ray| {
            for (value0, slope0, initial) in [
                (9.0, 6.0, 1.0),
                (9.0, 0.0, 1.0),
                (f64::INFINITY, -6.0, 1.0),
                (9.0, -6.0, 0.0),
            ] {
                assert!(
                    search(ray, value0, slope0, initial, c1, c2)
                        .unwrap()
                        .is_none()
                );
            }
        });
        assert_eq!(nfev, 0, "refused before evaluating");
    }

    #[test]
    fn the_initial_step_follows_scipy() {
        assert_eq!(initial_step(10.0, 10.0 + 2.0, -4.0), 1.0);
        assert!((initial_step(10.0, 10.5, -4.0) - 0.2525).abs() < 1e-15);
        assert_eq!(
            initial_step(10.0, 9.0, -4.0),
            1.0,
            "f rose: negative estimate"
        );
        assert_eq!(initial_step(10.0, 10.0, 0.0), 1.0);
        assert_eq!(initial_step(10.0, 10.0, -4.0), 0.0, "f stalled");
    }
}
