//! The fallback search, as scipy's `line_search_wolfe2`: Nocedal & Wright's Algorithm 3.5
//! (double the step until a minimizer is bracketed) and Algorithm 3.6 (zoom into the bracket by
//! safeguarded cubic, then quadratic interpolation, else bisection).
//!
//! A point where the objective is not finite counts as having value `+∞`: it fails the
//! sufficient decrease, becomes the far end of the bracket, and the interpolants through it are
//! not finite, so the zoom bisects toward the last finite point.

use super::wolfe::{Accepted, Line, Sample, Wolfe};
use crate::objective::EvalError;

const STEP_MAX: f64 = 1e100;
/// Doublings of the step while bracketing, and trials while zooming.
const MAX_TRIALS: usize = 10;
/// An interpolated step must keep this fraction of the bracket from either end (cubic, then
/// quadratic); else the zoom falls back to the next rule.
const CUBIC_MARGIN: f64 = 0.2;
const QUADRATIC_MARGIN: f64 = 0.1;

/// Runs the search from `initial`; `Ok(None)` when it fails.
pub(super) fn search(
    ray: &mut dyn Line,
    wolfe: &Wolfe,
    initial: f64,
) -> Result<Option<Accepted>, EvalError> {
    let mut previous = Sample {
        step: 0.0,
        value: wolfe.value0,
        slope: wolfe.slope0,
    };
    let mut step = initial.min(STEP_MAX);
    for trial in 0..MAX_TRIALS {
        let value = finite_or_infinite(ray.value(step)?);
        if !wolfe.sufficient_decrease(step, value) || (trial > 0 && value >= previous.value) {
            return zoom(ray, wolfe, previous, Point { step, value });
        }
        let slope = ray.slope()?;
        if !slope.is_finite() {
            return zoom(
                ray,
                wolfe,
                previous,
                Point {
                    step,
                    value: f64::INFINITY,
                },
            );
        }
        if wolfe.curvature(slope) {
            return Ok(Some(Accepted { step, value }));
        }
        let current = Sample { step, value, slope };
        if slope >= 0.0 {
            return zoom(ray, wolfe, current, previous.point());
        }
        previous = current;
        step = (2.0 * step).min(STEP_MAX);
    }
    Ok(None)
}

/// A step with `φ` there (`+∞` where not finite).
#[derive(Clone, Copy, Debug)]
struct Point {
    step: f64,
    value: f64,
}

impl Sample {
    fn point(self) -> Point {
        Point {
            step: self.step,
            value: self.value,
        }
    }
}

fn finite_or_infinite(value: f64) -> f64 {
    if value.is_finite() {
        value
    } else {
        f64::INFINITY
    }
}

/// Algorithm 3.6: `low` has the least value so far, satisfies the sufficient decrease and has a
/// slope pointing toward `high`.
fn zoom(
    ray: &mut dyn Line,
    wolfe: &Wolfe,
    mut low: Sample,
    mut high: Point,
) -> Result<Option<Accepted>, EvalError> {
    // The end point replaced last, a third point for the cubic.
    let mut replaced = Point {
        step: 0.0,
        value: wolfe.value0,
    };
    for trial in 0..MAX_TRIALS {
        let step = zoom_step(trial > 0, &low, &high, &replaced);
        let value = finite_or_infinite(ray.value(step)?);
        if !wolfe.sufficient_decrease(step, value) || value >= low.value {
            (replaced, high) = (high, Point { step, value });
            continue;
        }
        let slope = ray.slope()?;
        if !slope.is_finite() {
            (replaced, high) = (
                high,
                Point {
                    step,
                    value: f64::INFINITY,
                },
            );
            continue;
        }
        if wolfe.curvature(slope) {
            return Ok(Some(Accepted { step, value }));
        }
        if slope * (high.step - low.step) >= 0.0 {
            (replaced, high) = (high, low.point());
        } else {
            replaced = low.point();
        }
        low = Sample { step, value, slope };
    }
    Ok(None)
}

/// The next zoom trial: the minimizer of the cubic through `low` (value and slope), `high` and
/// `replaced` (once there is a distinct third point), else of the quadratic through `low` and
/// `high`, each only when it keeps its margin from the bracket's ends; else the midpoint.
fn zoom_step(use_cubic: bool, low: &Sample, high: &Point, replaced: &Point) -> f64 {
    let (a, b) = (low.step.min(high.step), low.step.max(high.step));
    let width = b - a;
    let within_margin = |step: Option<f64>, margin: f64| {
        step.filter(|&s| s >= a + margin * width && s <= b - margin * width)
    };
    let cubic = || within_margin(cubic_minimizer(low, high, replaced), CUBIC_MARGIN);
    let quadratic = || within_margin(quadratic_minimizer(low, high), QUADRATIC_MARGIN);
    use_cubic
        .then(cubic)
        .flatten()
        .or_else(quadratic)
        .unwrap_or(low.step + 0.5 * (high.step - low.step))
}

/// The minimizer of the cubic `φ(a + t) = A t³ + B t² + φ'(a) t + φ(a)` through `a` (value and
/// slope), `b` and `c`, if it has a finite one.
fn cubic_minimizer(a: &Sample, b: &Point, c: &Point) -> Option<f64> {
    let (db, dc) = (b.step - a.step, c.step - a.step);
    // A and B solve [db³ db²; dc³ dc²]·[A; B] = [rb; rc], the remainders after the linear part.
    let rb = b.value - a.value - a.slope * db;
    let rc = c.value - a.value - a.slope * dc;
    let determinant = (db * dc).powi(2) * (db - dc);
    let cubic = (dc * dc * rb - db * db * rc) / determinant;
    let square = (db.powi(3) * rc - dc.powi(3) * rb) / determinant;
    let radical = square * square - 3.0 * cubic * a.slope;
    let minimizer = a.step + (-square + radical.sqrt()) / (3.0 * cubic);
    minimizer.is_finite().then_some(minimizer)
}

/// The minimizer of the quadratic through `a` (value and slope) and `b`, if finite.
fn quadratic_minimizer(a: &Sample, b: &Point) -> Option<f64> {
    let db = b.step - a.step;
    let curvature = (b.value - a.value - a.slope * db) / (db * db);
    let minimizer = a.step - a.slope / (2.0 * curvature);
    minimizer.is_finite().then_some(minimizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolants_recover_exact_polynomials() {
        // φ(α) = (α − 1)² + 0.5(α − 1)³ has a local minimizer at α = 1.
        let phi = |s: f64| (s - 1.0).powi(2) + 0.5 * (s - 1.0).powi(3);
        let low = Sample {
            step: 0.0,
            value: phi(0.0),
            slope: -2.0 + 1.5,
        };
        let (b, c) = (
            Point {
                step: 2.0,
                value: phi(2.0),
            },
            Point {
                step: 1.5,
                value: phi(1.5),
            },
        );
        assert!((cubic_minimizer(&low, &b, &c).unwrap() - 1.0).abs() < 1e-12);

        let quadratic = |s: f64| 3.0 * (s - 0.7).powi(2);
        let low = Sample {
            step: 0.0,
            value: quadratic(0.0),
            slope: -4.2,
        };
        let high = Point {
            step: 2.0,
            value: quadratic(2.0),
        };
        assert!((quadratic_minimizer(&low, &high).unwrap() - 0.7).abs() < 1e-14);
    }

    #[test]
    fn a_non_finite_end_makes_the_zoom_bisect() {
        let low = Sample {
            step: 1.0,
            value: 0.0,
            slope: -1.0,
        };
        let high = Point {
            step: 3.0,
            value: f64::INFINITY,
        };
        assert_eq!(zoom_step(true, &low, &high, &high), 2.0);
    }
}
