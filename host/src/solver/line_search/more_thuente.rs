//! The Moré–Thuente line search: MINPACK-2's `dcsrch` and `dcstep` (J. J. Moré and
//! D. J. Thuente, "Line search algorithms with guaranteed sufficient decrease", ACM TOMS 20(3),
//! 1994), with scipy's `line_search_wolfe1` settings. A warning of `dcsrch` counts as failure,
//! as in scipy. One departure from scipy: a step whose value is level with `φ(0)` to rounding
//! is accepted on its slopes ([`Wolfe::decrease_by_slope`]), where scipy's search fails.
//!
//! The search keeps an interval of uncertainty between `best` (the step with the least
//! `ψ(α) = φ(α) − φ(0) − α·c1·φ'(0)` so far) and `other`, and picks trial steps by safeguarded
//! cubic, quadratic and secant interpolation, extrapolating until a minimizer is bracketed.

use super::wolfe::{Accepted, Line, Sample, Wolfe};
use crate::objective::EvalError;

const STEP_MIN: f64 = 1e-100;

/// What a search may do besides the Wolfe conditions.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// The relative width at which the interval of uncertainty counts as collapsed.
    xtol: f64,
    /// The largest step.
    step_max: f64,
    /// Whether the step at which a `dcsrch` warning stops the search is taken (L-BFGS-B takes
    /// it; scipy's `line_search_wolfe1` counts a warning as failure).
    accept_warnings: bool,
    /// Whether a step whose value is level with `φ(0)` to rounding may pass on its slope
    /// ([`Wolfe::decrease_by_slope`]): not scipy's, which rejects it and ends in precision loss
    /// on such objectives; L-BFGS-B, which takes warning steps, keeps scipy's exact test.
    decrease_by_slope: bool,
    /// The most trial steps evaluated.
    max_trials: usize,
}

impl Limits {
    /// scipy's `line_search_wolfe1`, for BFGS and L-BFGS, and the decrease told by the slopes
    /// where `φ` is level to rounding.
    pub(super) const WOLFE1: Limits = Limits {
        xtol: 1e-14,
        step_max: 1e100,
        accept_warnings: false,
        decrease_by_slope: true,
        max_trials: WOLFE1_MAX_TRIALS,
    };

    /// L-BFGS-B's `lnsrlb`: steps up to `step_max`, `xtol = 0.1`, warnings accepted, at most
    /// `maxls` trial steps (scipy's option).
    pub(super) fn in_box(step_max: f64, maxls: usize) -> Limits {
        Limits {
            xtol: 0.1,
            step_max,
            accept_warnings: true,
            decrease_by_slope: false,
            max_trials: maxls,
        }
    }
}
/// BFGS's and L-BFGS's trial steps. scipy's `line_search_wolfe1` allows 100; a search that has
/// not succeeded after 20 (L-BFGS-B's default `maxls`) is bisecting through rounding noise (near
/// a minimum of a biased finite-difference gradient, every trial costs a gradient evaluation and
/// none can succeed), so it stops there.
const WOLFE1_MAX_TRIALS: usize = 20;
/// While no minimizer is bracketed, the next step lies between these multiples of the last
/// move past the current trial step.
const EXTRAPOLATE_MIN: f64 = 1.1;
const EXTRAPOLATE_MAX: f64 = 4.0;
/// Bisect when the interval did not shrink below this fraction over two trials.
const SHRINK_MIN: f64 = 0.66;

/// Runs the search from `initial` as scipy's `line_search_wolfe1` does; `Ok(None)` when it
/// fails.
pub(super) fn search(
    ray: &mut dyn Line,
    wolfe: &Wolfe,
    initial: f64,
) -> Result<Option<Accepted>, EvalError> {
    search_within(ray, wolfe, initial, Limits::WOLFE1)
}

/// Runs the search from `initial` within `limits`; `Ok(None)` when it fails.
pub(super) fn search_within(
    ray: &mut dyn Line,
    wolfe: &Wolfe,
    initial: f64,
    limits: Limits,
) -> Result<Option<Accepted>, EvalError> {
    if !(STEP_MIN..=limits.step_max).contains(&initial) {
        return Ok(None);
    }
    let mut state = State::new(wolfe, initial, limits);
    let mut step = initial;
    // Where the ray's point is: the last trial's step, value and slope. A search that asks for
    // it again (its best step, when the interval collapsed there) takes them without another
    // evaluation, as scipy's cached objective does, which neither makes nor counts one.
    let mut last: Option<Sample> = None;
    for _ in 0..limits.max_trials {
        // Every trial needs both (a value that is not finite makes the step retreat, and then
        // the slope goes unused, a rare waste).
        let (value, slope) = match last {
            Some(at) if at.step == step => (at.value, at.slope),
            _ => ray.value_and_slope(step)?,
        };
        last = Some(Sample { step, value, slope });
        if !(value.is_finite() && slope.is_finite()) {
            step = state.retreat(step);
            continue;
        }
        match state.next(Sample { step, value, slope }) {
            Verdict::Converged => return Ok(Some(Accepted { step, value })),
            Verdict::Stuck if limits.accept_warnings => return Ok(Some(Accepted { step, value })),
            Verdict::Try(next) if next.is_finite() => step = next,
            Verdict::Try(_) | Verdict::Stuck => return Ok(None),
        }
    }
    Ok(None)
}

enum Verdict {
    /// The trial step satisfies the strong Wolfe conditions.
    Converged,
    /// No progress is possible (one of `dcsrch`'s warnings).
    Stuck,
    /// Evaluate this step next.
    Try(f64),
}

/// `dcsrch`'s state between trials.
struct State {
    wolfe: Wolfe,
    limits: Limits,
    best: Sample,
    other: Sample,
    bracketed: bool,
    /// Stage 2 starts once a step had `ψ ≤ 0` and `φ' ≥ 0`; before, steps are chosen on `ψ`.
    stage_two: bool,
    /// Where the next trial step may lie: the interval once bracketed, else the extrapolation
    /// range.
    lower: f64,
    upper: f64,
    /// The interval's width after the last trial and the one before: when two trials did not
    /// shrink it enough, the next one bisects.
    width: f64,
    width_before: f64,
    /// The least step found not finite: trial steps stay below it.
    unusable_from: f64,
}

impl State {
    fn new(wolfe: &Wolfe, initial: f64, limits: Limits) -> Self {
        let origin = Sample {
            step: 0.0,
            value: wolfe.value0,
            slope: wolfe.slope0,
        };
        let width = limits.step_max - STEP_MIN;
        Self {
            wolfe: *wolfe,
            limits,
            best: origin,
            other: origin,
            bracketed: false,
            stage_two: false,
            lower: 0.0,
            upper: initial + EXTRAPOLATE_MAX * initial,
            width,
            width_before: 2.0 * width,
            unusable_from: f64::INFINITY,
        }
    }

    /// The trial at `step` was not finite: the next trial is halfway back to the best step, and
    /// no later trial goes to `step` or beyond.
    fn retreat(&mut self, step: f64) -> f64 {
        self.unusable_from = self.unusable_from.min(step);
        let retreat = self.best.step + 0.5 * (step - self.best.step);
        self.set_trial_range(retreat);
        retreat
    }

    /// One `dcsrch` iteration: tests the evaluated `trial` and, unless it is the answer or no
    /// progress is possible, updates the interval and returns the next trial step.
    fn next(&mut self, trial: Sample) -> Verdict {
        let step = trial.step;
        let rate = self.wolfe.decrease_rate();
        let sufficient = trial.value <= self.wolfe.value0 + step * rate;
        if !self.stage_two && sufficient && trial.slope >= 0.0 {
            self.stage_two = true;
        }
        let decreased = sufficient
            || (self.limits.decrease_by_slope
                && self.wolfe.decrease_by_slope(trial.value, trial.slope));
        if decreased && self.wolfe.curvature(trial.slope) {
            return Verdict::Converged;
        }
        if self.is_stuck(trial, sufficient) {
            return Verdict::Stuck;
        }

        let mut next = if !self.stage_two && trial.value <= self.best.value && !sufficient {
            // A lower value, but not a sufficient decrease: interpolate ψ instead of φ, since
            // ψ's minimizers satisfy the sufficient decrease and φ's need not.
            let on_psi = |s: Sample| Sample {
                value: s.value - s.step * rate,
                slope: s.slope - rate,
                ..s
            };
            let on_phi = |s: Sample| Sample {
                value: s.value + s.step * rate,
                slope: s.slope + rate,
                ..s
            };
            let (mut best, mut other) = (on_psi(self.best), on_psi(self.other));
            let next = self.interpolate(&mut best, &mut other, on_psi(trial));
            (self.best, self.other) = (on_phi(best), on_phi(other));
            next
        } else {
            let (mut best, mut other) = (self.best, self.other);
            let next = self.interpolate(&mut best, &mut other, trial);
            (self.best, self.other) = (best, other);
            next
        };

        if self.bracketed {
            let width = (self.other.step - self.best.step).abs();
            if width >= SHRINK_MIN * self.width_before {
                next = self.best.step + 0.5 * (self.other.step - self.best.step);
            }
            self.width_before = self.width;
            self.width = width;
        }
        if next >= self.unusable_from {
            next = self.best.step + 0.5 * (self.unusable_from - self.best.step);
        }
        self.set_trial_range(next);
        next = next.clamp(STEP_MIN, self.limits.step_max);
        if self.bracketed && (self.outside_trial_range(next) || self.collapsed()) {
            // No further progress: the best step again (no evaluation where the ray is there
            // already), which then reports stuck.
            next = self.best.step;
        }
        Verdict::Try(next)
    }

    /// `dcsrch`'s warnings: rounding errors prevent progress, the interval collapsed, or the
    /// step is pinned at a bound.
    fn is_stuck(&self, trial: Sample, sufficient: bool) -> bool {
        let rate = self.wolfe.decrease_rate();
        (self.bracketed && (self.outside_trial_range(trial.step) || self.collapsed()))
            || (trial.step == self.limits.step_max && sufficient && trial.slope <= rate)
            || (trial.step == STEP_MIN && (!sufficient || trial.slope >= rate))
    }

    fn outside_trial_range(&self, step: f64) -> bool {
        step <= self.lower || step >= self.upper
    }

    fn collapsed(&self) -> bool {
        self.upper - self.lower <= self.limits.xtol * self.upper
    }

    /// The range the trial after `next` may come from: the interval once bracketed, else an
    /// extrapolation beyond `next`.
    fn set_trial_range(&mut self, next: f64) {
        (self.lower, self.upper) = if self.bracketed {
            let (a, b) = (self.best.step, self.other.step);
            (a.min(b), a.max(b))
        } else {
            let reach = next - self.best.step;
            (
                next + EXTRAPOLATE_MIN * reach,
                next + EXTRAPOLATE_MAX * reach,
            )
        };
    }

    fn interpolate(&mut self, best: &mut Sample, other: &mut Sample, trial: Sample) -> f64 {
        let range = (self.lower, self.upper);
        safeguarded_step(best, other, trial, &mut self.bracketed, range)
    }
}

/// `dcstep`: the next trial step from the interval ends `best` and `other` and the new `trial`,
/// then the interval updated with `trial`. `range` bounds extrapolation while nothing is
/// bracketed.
fn safeguarded_step(
    best: &mut Sample,
    other: &mut Sample,
    trial: Sample,
    bracketed: &mut bool,
    (lower, upper): (f64, f64),
) -> f64 {
    let (x, t) = (*best, trial);
    let slopes_of_opposite_sign =
        (t.slope < 0.0 && x.slope > 0.0) || (t.slope > 0.0 && x.slope < 0.0);
    let secant = || t.step + t.slope / (t.slope - x.slope) * (x.step - t.step);

    let next = if t.value > x.value {
        // A higher value: a minimizer lies between. Prefer the cubic step when it stays nearer
        // to the best step than the quadratic one, else go halfway between them.
        *bracketed = true;
        let cubic = cubic_fit(x, t).step(x, t);
        let quadratic_fraction =
            x.slope / ((x.value - t.value) / (t.step - x.step) + x.slope) / 2.0;
        let quadratic = x.step + quadratic_fraction * (t.step - x.step);
        if (cubic - x.step).abs() < (quadratic - x.step).abs() {
            cubic
        } else {
            cubic + (quadratic - cubic) / 2.0
        }
    } else if slopes_of_opposite_sign {
        // Lower value, slope changed sign: a minimizer lies between. Take the larger step.
        *bracketed = true;
        let cubic = cubic_fit(t, x).step(t, x);
        let secant = secant();
        if (cubic - t.step).abs() > (secant - t.step).abs() {
            cubic
        } else {
            secant
        }
    } else if t.slope.abs() < x.slope.abs() {
        // Lower value, same slope sign, slope flattening. The cubic step counts only if the
        // cubic has its minimizer beyond the trial; else go as far as allowed.
        let fit = cubic_fit(t, x);
        let cubic = if fit.fraction < 0.0 && fit.gamma != 0.0 {
            fit.step(t, x)
        } else if t.step > x.step {
            upper
        } else {
            lower
        };
        let secant = secant();
        let (cubic_reach, secant_reach) = ((cubic - t.step).abs(), (secant - t.step).abs());
        if *bracketed {
            // Take the nearer step, but no more than 0.66 of the way to the interval's end.
            let next = if cubic_reach < secant_reach {
                cubic
            } else {
                secant
            };
            let limit = t.step + 0.66 * (other.step - t.step);
            if t.step > x.step {
                next.min(limit)
            } else {
                next.max(limit)
            }
        } else {
            let next = if cubic_reach > secant_reach {
                cubic
            } else {
                secant
            };
            // Not `clamp`, which panics when rounding leaves lower > upper.
            next.max(lower).min(upper)
        }
    } else if *bracketed {
        // Lower value, same slope sign, slope not flattening, inside a bracket: the cubic
        // between the trial and the far end.
        cubic_fit(t, *other).step(t, *other)
    } else if t.step > x.step {
        upper
    } else {
        lower
    };

    if t.value > x.value {
        *other = t;
    } else {
        if slopes_of_opposite_sign {
            *other = x;
        }
        *best = t;
    }
    next
}

/// The cubic interpolating `a` and `b` (values and slopes), seen from `a`: its minimizer is at
/// `a + fraction·(b − a)`. `gamma = 0` when the cubic has no minimizer in that direction.
struct CubicFit {
    fraction: f64,
    gamma: f64,
}

impl CubicFit {
    fn step(&self, a: Sample, b: Sample) -> f64 {
        a.step + self.fraction * (b.step - a.step)
    }
}

fn cubic_fit(a: Sample, b: Sample) -> CubicFit {
    let theta = 3.0 * (a.value - b.value) / (b.step - a.step) + a.slope + b.slope;
    // Scaled by the largest magnitude so that the squares cannot overflow.
    let scale = theta.abs().max(a.slope.abs()).max(b.slope.abs());
    let discriminant = (theta / scale).powi(2) - (a.slope / scale) * (b.slope / scale);
    let mut gamma = scale * discriminant.max(0.0).sqrt();
    if b.step < a.step {
        gamma = -gamma;
    }
    let p = (gamma - a.slope) + theta;
    let q = ((gamma - a.slope) + gamma) + b.slope;
    CubicFit {
        fraction: p / q,
        gamma,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(step: f64, value: f64, slope: f64) -> Sample {
        Sample { step, value, slope }
    }

    #[test]
    fn cubic_fit_finds_the_minimizer_of_a_cubic() {
        // φ(α) = α³ − 3α has its minimizer at α = 1.
        let phi = |a: f64| sample(a, a * a * a - 3.0 * a, 3.0 * a * a - 3.0);
        let (a, b) = (phi(0.0), phi(2.0));
        assert!((cubic_fit(a, b).step(a, b) - 1.0).abs() < 1e-14);
        assert!((cubic_fit(b, a).step(b, a) - 1.0).abs() < 1e-14);
    }

    #[test]
    fn a_higher_value_brackets_the_minimizer() {
        // φ(α) = (α − 1)²: from 0 (slope −2), a trial at 3 is higher.
        let mut best = sample(0.0, 1.0, -2.0);
        let mut other = best;
        let mut bracketed = false;
        let next = safeguarded_step(
            &mut best,
            &mut other,
            sample(3.0, 4.0, 4.0),
            &mut bracketed,
            (0.0, 15.0),
        );
        assert!(bracketed);
        assert!((next - 1.0).abs() < 1e-12, "{next}");
        assert_eq!((best.step, other.step), (0.0, 3.0));
    }

    #[test]
    fn a_lower_descending_trial_extrapolates_within_the_range() {
        // φ(α) = (α − 10)²: trial at 1 is lower and still descending.
        let mut best = sample(0.0, 100.0, -20.0);
        let mut other = best;
        let mut bracketed = false;
        let range = (2.1, 5.0);
        let next = safeguarded_step(
            &mut best,
            &mut other,
            sample(1.0, 81.0, -18.0),
            &mut bracketed,
            range,
        );
        assert!(!bracketed);
        assert_eq!(next, 5.0);
        assert_eq!(best.step, 1.0);
    }
}
