//! Strong Wolfe line search along a ray `x + α·p`, as scipy's `_line_search_wolfe12`:
//! Moré–Thuente ([`more_thuente`]) first and, when it fails, a bracketing and zoom search
//! ([`zoom`]) from the same initial step.
//!
//! A trial point where the objective is not finite (value or gradient) never enters either
//! search's state: it is treated as lying beyond the usable region, and the step shrinks toward
//! the best finite point.

mod more_thuente;
mod wolfe;
mod zoom;

use crate::space::VectorSpace;
use more_thuente::Limits;
use wolfe::Wolfe;
pub(super) use wolfe::{Accepted, Line};

use super::workspace::Workspace;
use crate::objective::EvalError;

/// A workspace's objective with its evaluation counts, scipy's `nfev` and `njev`.
pub(super) struct Counted<'w, W: Workspace> {
    pub workspace: &'w mut W,
    pub nfev: usize,
    pub njev: usize,
}

impl<'w, W: Workspace> Counted<'w, W> {
    pub fn new(workspace: &'w mut W) -> Self {
        Self {
            workspace,
            nfev: 0,
            njev: 0,
        }
    }

    pub fn value(&mut self, x: &W::Vector) -> Result<f64, EvalError> {
        self.nfev += 1;
        self.workspace.value(x)
    }

    pub fn gradient(&mut self, x: &W::Vector, g: &mut W::Vector) -> Result<(), EvalError> {
        self.njev += 1;
        self.workspace.gradient(x, g)
    }

    /// One evaluation of both, counted as scipy counts them: one of each.
    pub fn value_and_gradient(
        &mut self,
        x: &W::Vector,
        g: &mut W::Vector,
    ) -> Result<f64, EvalError> {
        self.nfev += 1;
        self.njev += 1;
        self.workspace.value_and_gradient(x, g)
    }

    /// A trial along `d`: the value, the gradient into `g` and its slope along `d`, counted as
    /// one value and one gradient.
    pub fn value_and_slope(
        &mut self,
        x: &W::Vector,
        g: &mut W::Vector,
        d: &W::Vector,
    ) -> Result<(f64, f64), EvalError> {
        self.nfev += 1;
        self.njev += 1;
        self.workspace.value_and_slope(x, g, d)
    }
}

/// A trial a ray's `point` and `gradient` already hold, evaluated before the search (the trial
/// sweep, `solver::trial_sweep`): its step, `φ(step)` and `φ'(step)`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Evaluated {
    pub step: f64,
    pub value: f64,
    pub slope: f64,
}

/// The trial a ray's `point` and `gradient` hold from before the search, if any, and whether
/// they still hold it. It stands for the search's first evaluation where the search asks for
/// that step (the ray counts it then, as the evaluation it stands for); any other evaluation
/// lets it go. A search that refuses to start (no descent) leaves it uncounted: the solve ends
/// there, as it would without it.
#[derive(Debug, Default)]
pub(super) struct PreEvaluated {
    evaluated: Option<Evaluated>,
    held: bool,
}

impl PreEvaluated {
    pub fn new(evaluated: Option<Evaluated>) -> Self {
        Self {
            evaluated,
            held: false,
        }
    }

    /// `(φ(step), φ'(step))` where the trial is at `step`; else `None`, and the trial is let go
    /// (the ray is to evaluate there).
    pub fn take(&mut self, step: f64) -> Option<(f64, f64)> {
        let known = self.evaluated.take().filter(|known| known.step == step);
        self.held = known.is_some();
        known.map(|known| (known.value, known.slope))
    }

    /// The ray evaluates elsewhere: the trial is let go.
    pub fn release(&mut self) {
        *self = Self::default();
    }

    /// Whether the ray's `point` and `gradient` are the trial's.
    pub fn holds(&self) -> bool {
        self.held
    }
}

/// The [`Line`] along `x + α·p` in a workspace. It keeps the last trial point and the gradient
/// there, so that the solver takes both over without evaluating again.
pub(super) struct Ray<'r, 'w, W: Workspace> {
    pub objective: &'r mut Counted<'w, W>,
    pub origin: &'r W::Vector,
    pub direction: &'r W::Vector,
    /// `x + α·p` for the last `α` passed to [`Line::value`].
    pub point: &'r mut W::Vector,
    /// `∇f(point)`, once [`Line::slope`] has been called there.
    pub gradient: &'r mut W::Vector,
    /// The trial `point` and `gradient` hold from before the search, if any.
    pub pre_evaluated: PreEvaluated,
}

impl<W: Workspace> Line for Ray<'_, '_, W> {
    fn value(&mut self, step: f64) -> Result<f64, EvalError> {
        self.pre_evaluated.release();
        let workspace = &mut *self.objective.workspace;
        workspace
            .space_mut()
            .ray_point(self.origin, step, self.direction, self.point)?;
        self.objective.value(self.point)
    }

    fn slope(&mut self) -> Result<f64, EvalError> {
        self.objective.gradient(self.point, self.gradient)?;
        self.objective
            .workspace
            .space_mut()
            .dot(self.gradient, self.direction)
    }

    fn value_and_slope(&mut self, step: f64) -> Result<(f64, f64), EvalError> {
        if let Some(known) = self.pre_evaluated.take(step) {
            self.objective.nfev += 1;
            self.objective.njev += 1;
            return Ok(known);
        }
        let workspace = &mut *self.objective.workspace;
        workspace
            .space_mut()
            .ray_point(self.origin, step, self.direction, self.point)?;
        (self.objective).value_and_slope(self.point, self.gradient, self.direction)
    }
}

/// scipy's first trial step: `min(1, 1.01·2·(f − f_previous)/φ'(0))`, the step to the minimum
/// of the quadratic that decreases by as much as the last iteration did (with some margin), or 1
/// when that is negative or undefined. Also 1 where the last iteration left `f` unchanged, which
/// scipy takes as a step of 0 and so ends in precision loss: `f` was then level to rounding
/// (the step passed on its slopes, [`wolfe::Wolfe::decrease_by_slope`]), and says nothing of
/// the step's length.
pub(super) fn initial_step(value: f64, previous_value: f64, slope0: f64) -> f64 {
    if slope0 == 0.0 {
        return 1.0;
    }
    let step = (1.01 * 2.0 * (value - previous_value) / slope0).min(1.0);
    if step > 0.0 { step } else { 1.0 }
}

/// L-BFGS-B's search (`lnsrlb`): Moré–Thuente from `initial` with `c1 = 10⁻³`, `c2 = 0.9` and
/// `xtol = 0.1`, no step past `step_max` (where the ray leaves the box), and the step where a
/// warning stops it taken; no fallback. `Ok(None)`: no step, or `maxls` evaluations without one.
pub(super) fn search_in_box(
    ray: &mut dyn Line,
    value0: f64,
    slope0: f64,
    initial: f64,
    step_max: f64,
    maxls: usize,
) -> Result<Option<Accepted>, EvalError> {
    if !(value0.is_finite() && slope0 < 0.0 && initial > 0.0) {
        return Ok(None);
    }
    let wolfe = Wolfe {
        c1: 1e-3,
        c2: 0.9,
        value0,
        slope0,
    };
    more_thuente::search_within(ray, &wolfe, initial, Limits::in_box(step_max, maxls))
}

/// Searches the ray for a step satisfying the strong Wolfe conditions with constants `c1`,
/// `c2` (or, where `f` is level to rounding, their slope form), starting from `initial`.
/// `Ok(None)`: no acceptable step was found (including when `φ(0)` is not finite, `p` is not a
/// descent direction, or `initial` is not positive).
pub(super) fn search(
    ray: &mut dyn Line,
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
    use crate::objective::Objective;
    use crate::solver::workspace::HostWorkspace;

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

    type Search = fn(&mut dyn Line, &Wolfe, f64) -> Result<Option<Accepted>, EvalError>;

    /// The Wolfe conditions of the tests' ray: `φ(0) = 9`, `φ'(0) = −6`.
    const WOLFE: Wolfe = Wolfe {
        c1: 1e-4,
        c2: 0.9,
        value0: 9.0,
        slope0: -6.0,
    };

    /// Runs `body` on the ray from 0 along +1 of [`NanBeyondFour`]; returns what it returns, the
    /// point and gradient the ray holds afterwards, and the evaluation counts.
    fn on_ray<R>(body: impl FnOnce(&mut dyn Line) -> R) -> (R, f64, f64, usize, usize) {
        on_ray_of(&mut NanBeyondFour, body)
    }

    /// [`on_ray`] of `objective`.
    fn on_ray_of<R>(
        objective: &mut dyn Objective,
        body: impl FnOnce(&mut dyn Line) -> R,
    ) -> (R, f64, f64, usize, usize) {
        let (mut point, mut gradient) = (vec![0.0], vec![0.0]);
        let mut workspace = HostWorkspace::new(objective);
        let mut counted = Counted::new(&mut workspace);
        let mut ray = Ray {
            objective: &mut counted,
            origin: &vec![0.0],
            direction: &vec![1.0],
            point: &mut point,
            gradient: &mut gradient,
            pre_evaluated: PreEvaluated::default(),
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

    /// `10⁶ + rise` away from 0, with the slope of `10⁻¹³·(x − 1)²`: a minimum at 1 whose
    /// decrease, 10⁻¹³, lies far below the value's ulp (1.2e-10), as at the end of a solve over
    /// many terms.
    struct LevelToRounding {
        rise: f64,
    }

    impl Objective for LevelToRounding {
        fn dim(&self) -> usize {
            1
        }

        fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
            Ok(if x[0] == 0.0 { 1e6 } else { 1e6 + self.rise })
        }

        fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
            g[0] = 2e-13 * (x[0] - 1.0);
            Ok(())
        }
    }

    #[test]
    fn a_step_level_to_rounding_passes_on_its_slopes() {
        let (c1, c2) = (1e-4, 0.9);
        let one_ulp = 1e6 * f64::EPSILON / 2.0;
        let mut level = LevelToRounding { rise: one_ulp };
        let (accepted, _, gradient, nfev, _) =
            on_ray_of(&mut level, |ray| search(ray, 1e6, -2e-13, 1.0, c1, c2));
        let accepted = accepted.unwrap().expect("the minimum, on its slopes");
        assert_eq!(
            (accepted.step, accepted.value, gradient),
            (1.0, 1e6 + one_ulp, 0.0)
        );
        assert_eq!(nfev, 1);
        // A rise beyond rounding is a rise, whatever the slopes say: not that step.
        let mut risen = LevelToRounding { rise: 1e-6 };
        let (risen, ..) = on_ray_of(&mut risen, |ray| search(ray, 1e6, -2e-13, 1.0, c1, c2));
        assert!(risen.unwrap().is_none_or(|a| a.step != 1.0));
        let wolfe = Wolfe {
            c1,
            c2,
            value0: 1e6,
            slope0: -2e-13,
        };
        // Armijo's test on the value alone refuses the level step; the slopes pass it.
        assert!(!wolfe.sufficient_decrease(1.0, 1e6 + one_ulp));
        assert!(wolfe.decrease_by_slope(1e6 + one_ulp, 0.0));
        // Unless they show no decrease: as steep upward at the step as downward at 0.
        assert!(!wolfe.decrease_by_slope(1e6 + one_ulp, 2e-13));
        assert!(!wolfe.decrease_by_slope(1e6 + 1e-6, 0.0));
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
        assert_eq!(initial_step(10.0, 10.0, -4.0), 1.0, "f level: no estimate");
    }
}
