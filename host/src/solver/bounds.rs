//! Box bounds, `lower ≤ x ≤ upper` (scipy's `bounds`): their checks, and the questions the
//! bounded methods ask of them, L-BFGS-B's (breakpoints, the projected gradient, the longest
//! step) and the trust-region-reflective method's (Coleman–Li scaling, the step to the first
//! bound, strict feasibility, scipy's `active_mask`).

use super::result::{SolveError, invalid_option};
use crate::backend::StepBounds;
use crate::linalg::vector;
use crate::objective::{EvalError, Held};
use gpu_kernels::bounds;

/// Box bounds `lower[i] ≤ x[i] ≤ upper[i]`, `±∞` where a side has none: scipy's `bounds`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    /// Lower bounds (`-∞`: none).
    pub lower: Vec<f64>,
    /// Upper bounds (`+∞`: none).
    pub upper: Vec<f64>,
}

impl Bounds {
    /// The box as the backends keep it for their finite-difference points.
    pub fn step_bounds(&self) -> StepBounds {
        StepBounds::new(&self.lower, &self.upper)
    }

    /// `solve(objective)` with the objective's finite-difference points kept in this box
    /// (scipy's rule) by `confine` (its `confine_steps`), and the box lifted after, however the
    /// solve ends; the solve's own error, where it failed, comes before the lifting's.
    pub(super) fn confining<O: ?Sized, T>(
        &self,
        objective: &mut O,
        confine: impl Fn(&mut O, &StepBounds) -> Result<(), EvalError>,
        solve: impl FnOnce(&mut O) -> Result<T, SolveError>,
    ) -> Result<T, SolveError> {
        confine(objective, &self.step_bounds())?;
        let result = solve(objective);
        let lifted = confine(objective, &StepBounds::default());
        let result = result?;
        lifted?;
        Ok(result)
    }

    /// No bounds on `n` variables.
    pub fn unbounded(n: usize) -> Self {
        Bounds {
            lower: vec![f64::NEG_INFINITY; n],
            upper: vec![f64::INFINITY; n],
        }
    }

    /// Refuses bounds of the wrong length, NaN, `lower > upper`, and a side that excludes
    /// every number (`lower = +∞`, `upper = −∞`), naming the variable.
    pub fn check(&self, n: usize) -> Result<(), SolveError> {
        for (side, len) in [("lower", self.lower.len()), ("upper", self.upper.len())] {
            if len != n {
                let value = format!("{side} bounds of {len} entries");
                return Err(invalid_option("bounds", value, "need one per variable"));
            }
        }
        for (index, (&lower, &upper)) in self.lower.iter().zip(&self.upper).enumerate() {
            let reason = if lower.is_nan() || upper.is_nan() {
                "a bound is NaN"
            } else if lower > upper {
                "lower > upper"
            } else if lower == f64::INFINITY || upper == f64::NEG_INFINITY {
                "no finite x lies within"
            } else {
                continue;
            };
            return Err(SolveError::InvalidBounds {
                index,
                lower,
                upper,
                reason,
            });
        }
        Ok(())
    }

    /// Which bound each entry of `x` is at: −1 its lower, 1 its upper, 0 neither (a variable
    /// with equal bounds counts as at its lower); scipy's `active_mask`. A variable `fixed`
    /// holds is 0 wherever it is held, as trf reports it: no bound had a part in its value.
    pub fn active_mask(&self, x: &[f64], fixed: Option<&[bool]>) -> Vec<i32> {
        (x.iter().enumerate())
            .map(|(i, &v)| {
                if is_held(fixed, i) {
                    0
                } else {
                    gpu_kernels::bounds::active(self.lower[i], self.upper[i], v) as i32
                }
            })
            .collect()
    }

    /// `‖x − P(x − g)‖∞`, the projected gradient's norm, which L-BFGS-B's `gtol` test reads
    /// (NaN if `g` has a NaN).
    pub fn projected_gradient_norm(&self, x: &[f64], g: &[f64]) -> f64 {
        crate::space::projected_gradient_norm(&self.lower, &self.upper, x, g)
    }

    /// `curve_fit`'s start where bounds are given and no `p0`: the middle of a finite box
    /// (`midpoint`: `0.5·(lower + upper)` overflows near ±f64::MAX), 1 inside a one-sided
    /// bound, 1 where a variable has none.
    pub fn curve_fit_start(&self) -> Vec<f64> {
        (self.lower.iter().zip(&self.upper))
            .map(
                |(&lower, &upper)| match (lower.is_finite(), upper.is_finite()) {
                    (true, true) => lower.midpoint(upper),
                    (true, false) => lower + 1.0,
                    (false, true) => upper - 1.0,
                    (false, false) => 1.0,
                },
            )
            .collect()
    }

    /// These bounds on the free variables of `held`.
    pub(super) fn of_free(&self, held: &Held) -> Bounds {
        Bounds {
            lower: held.gather(&self.lower),
            upper: held.gather(&self.upper),
        }
    }

    /// That every variable `fixed` holds lies within its bounds: L-BFGS-B moves a start into
    /// the box, but a held variable stays where it is, so a box it is outside of is refused
    /// (as least squares refuses any start outside). Checked after [`check`](Bounds::check).
    pub(super) fn check_held(&self, x0: &[f64], fixed: Option<&[bool]>) -> Result<(), SolveError> {
        let Some(fixed) = fixed else {
            return Ok(());
        };
        let mut held = (0..x0.len()).filter(|&i| is_held(Some(fixed), i));
        held.try_for_each(|index| self.contains(index, x0[index], true))
    }

    /// That `value` lies within variable `index`'s bounds, else [`SolveError::InfeasibleX0`]
    /// (`held`: the variable is held there).
    fn contains(&self, index: usize, value: f64, held: bool) -> Result<(), SolveError> {
        let (lower, upper) = (self.lower[index], self.upper[index]);
        if (lower..=upper).contains(&value) {
            Ok(())
        } else {
            Err(SolveError::InfeasibleX0 {
                index,
                value,
                lower,
                upper,
                held,
            })
        }
    }

    /// [`check`](Bounds::check), and what scipy's `least_squares` adds: each free variable's
    /// lower bound strictly below its upper (a variable to pin is [`fixed`]), and `x0` within
    /// the box (it is refused, not moved, as scipy refuses it).
    ///
    /// [`fixed`]: super::LmOptions::fixed
    pub(super) fn check_for_least_squares(
        &self,
        x0: &[f64],
        fixed: Option<&[bool]>,
    ) -> Result<(), SolveError> {
        self.check(x0.len())?;
        for (index, &value) in x0.iter().enumerate() {
            let (lower, upper) = (self.lower[index], self.upper[index]);
            let held = is_held(fixed, index);
            if lower == upper && !held {
                let reason = "least squares needs lower < upper (hold the variable with fixed)";
                return Err(SolveError::InvalidBounds {
                    index,
                    lower,
                    upper,
                    reason,
                });
            }
            self.contains(index, value, held)?;
        }
        Ok(())
    }

    /// Coleman and Li's scaling at `x` for the gradient `g`: `v_i` the distance to the bound
    /// that `−g_i` points to (1 where that side is unbounded or `g_i = 0`), and `dv_i` the
    /// derivative of `v_i` (−1, 1, or 0 where `v_i` is 1).
    pub(super) fn coleman_li(&self, x: &[f64], g: &[f64]) -> (Vec<f64>, Vec<f64>) {
        (0..x.len())
            .map(|i| {
                if g[i] > 0.0 && self.lower[i].is_finite() {
                    (x[i] - self.lower[i], 1.0)
                } else if g[i] < 0.0 && self.upper[i].is_finite() {
                    (self.upper[i] - x[i], -1.0)
                } else {
                    (1.0, 0.0)
                }
            })
            .unzip()
    }

    /// How far along `s` from `x` the first bound is met (`∞`: never), and which variables
    /// meet a bound there.
    pub(super) fn step_to_bound(&self, x: &[f64], s: &[f64]) -> (f64, Vec<bool>) {
        let steps: Vec<f64> = (0..x.len())
            .map(|i| {
                if s[i] == 0.0 {
                    f64::INFINITY
                } else {
                    ((self.lower[i] - x[i]) / s[i]).max((self.upper[i] - x[i]) / s[i])
                }
            })
            .collect();
        let first = steps.iter().copied().fold(f64::INFINITY, f64::min);
        let hits = steps
            .iter()
            .map(|&t| t == first && first.is_finite())
            .collect();
        (first, hits)
    }

    /// Whether every entry of `x` lies within its bounds (on a bound counts).
    pub(super) fn contain(&self, x: &[f64]) -> bool {
        (x.iter().enumerate()).all(|(i, &v)| self.lower[i] <= v && v <= self.upper[i])
    }

    /// scipy's `active_mask` for a method that stays inside the box: −1 where `x_i` is within
    /// `rtol·max(1, |bound|)` of its lower bound (and no nearer its upper), 1 likewise for the
    /// upper, 0 elsewhere.
    pub(super) fn active_within(&self, x: &[f64], rtol: f64) -> Vec<i32> {
        (x.iter().enumerate())
            .map(|(i, &v)| {
                let (lower, upper) = (self.lower[i], self.upper[i]);
                let (to_lower, to_upper) = (v - lower, upper - v);
                let near = |bound: f64| rtol * bound.abs().max(1.0);
                if upper.is_finite() && to_upper <= to_lower.min(near(upper)) {
                    1
                } else if lower.is_finite() && to_lower <= to_upper.min(near(lower)) {
                    -1
                } else {
                    0
                }
            })
            .collect()
    }

    /// `x` moved strictly inside the box: an entry [`active_within`](Bounds::active_within)
    /// `rstep` of a bound goes to `rstep·max(1, |bound|)` inside it (the next number inside,
    /// when `rstep` is 0), and to the middle where that overshoots the other side.
    pub(super) fn strictly_feasible(&self, x: &[f64], rstep: f64) -> Vec<f64> {
        let active = if rstep == 0.0 {
            (x.iter().enumerate())
                .map(|(i, &v)| match (v >= self.upper[i], v <= self.lower[i]) {
                    (true, _) => 1,
                    (false, true) => -1,
                    (false, false) => 0,
                })
                .collect()
        } else {
            self.active_within(x, rstep)
        };
        (x.iter().enumerate())
            .map(|(i, &v)| {
                let (lower, upper) = (self.lower[i], self.upper[i]);
                let inside = match (active[i], rstep == 0.0) {
                    (0, _) => v,
                    (-1, true) => next_up(lower),
                    (_, true) => -next_up(-upper),
                    (-1, false) => lower + rstep * lower.abs().max(1.0),
                    (_, false) => upper - rstep * upper.abs().max(1.0),
                };
                if inside < lower || inside > upper {
                    lower.midpoint(upper)
                } else {
                    inside
                }
            })
            .collect()
    }

    /// `v` moved into variable `i`'s bounds.
    pub fn clip(&self, i: usize, v: f64) -> f64 {
        bounds::clip(self.lower[i], self.upper[i], v)
    }

    /// Whether any variable has a finite bound.
    pub(super) fn any(&self) -> bool {
        self.any_free(None)
    }

    /// Whether any variable not held by `fixed` has a finite bound.
    pub(super) fn any_free(&self, fixed: Option<&[bool]>) -> bool {
        (0..self.lower.len())
            .any(|i| !is_held(fixed, i) && (self.lower[i].is_finite() || self.upper[i].is_finite()))
    }

    /// Whether every variable has both bounds finite.
    pub(super) fn boxed(&self) -> bool {
        self.lower.iter().chain(&self.upper).all(|b| b.is_finite())
    }

    /// `‖P(x − g) − P(x − r)‖∞`: how far the projected gradient of `g` is from that of a
    /// reference `r`. A variable on a bound that both push it against counts 0, as it does in
    /// the `gtol` test. NaN where `r` has a NaN (`g` is finite when this is asked).
    pub(super) fn projected_gradient_difference(&self, x: &[f64], g: &[f64], r: &[f64]) -> f64 {
        if vector::first_non_finite(r).is_some() {
            return f64::NAN;
        }
        vector::max_indexed(x.len(), |i| {
            (self.projected(i, x[i], g[i]) - self.projected(i, x[i], r[i])).abs()
        })
    }

    /// Entry `i` of the projected gradient `x − P(x − g)` (sign aside).
    fn projected(&self, i: usize, x: f64, g: f64) -> f64 {
        bounds::projected(self.lower[i], self.upper[i], x, g)
    }
}

/// Whether `fixed` holds variable `i` (a mask too short for `i` holds nothing there; its length
/// is refused where the solve starts, by `options::held`).
fn is_held(fixed: Option<&[bool]>, i: usize) -> bool {
    fixed.is_some_and(|fixed| fixed.get(i) == Some(&true))
}

/// The least number above `v` (`f64::next_up`, which is newer than this crate's MSRV).
fn next_up(v: f64) -> f64 {
    if v.is_nan() || v == f64::INFINITY {
        return v;
    }
    if v == 0.0 {
        return f64::from_bits(1);
    }
    let bits = v.to_bits();
    f64::from_bits(if v > 0.0 { bits + 1 } else { bits - 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default start is the middle of a finite box even where `lower + upper` overflows (a
    /// box near ±f64::MAX), and 1 inside a one-sided bound.
    #[test]
    fn curve_fits_start_is_the_boxs_middle_without_overflow() {
        let bounds = Bounds {
            lower: vec![1e308, -f64::MAX, 0.0, 2.0, f64::NEG_INFINITY],
            upper: vec![1.7e308, f64::MAX, 1.0, f64::INFINITY, f64::INFINITY],
        };
        assert_eq!(bounds.curve_fit_start(), [1.35e308, 0.0, 0.5, 3.0, 1.0]);
    }

    fn unit_box() -> Bounds {
        Bounds {
            lower: vec![0.0, f64::NEG_INFINITY, -1.0],
            upper: vec![1.0, 2.0, f64::INFINITY],
        }
    }

    #[test]
    fn next_up_is_the_next_number() {
        assert_eq!(next_up(1.0), 1.0 + f64::EPSILON);
        assert_eq!(next_up(0.0), f64::from_bits(1));
        assert_eq!(-next_up(-1.0), 1.0 - f64::EPSILON / 2.0);
    }

    /// Within `rtol·max(1, |bound|)` of a bound is active; the nearer side wins.
    #[test]
    fn the_active_set_within_a_tolerance() {
        let b = unit_box();
        assert_eq!(
            b.active_within(&[1e-11, 2.0 - 1e-11, -1.0], 1e-10),
            [-1, 1, -1]
        );
        assert_eq!(b.active_within(&[0.5, 1.0, 5.0], 1e-10), [0, 0, 0]);
    }

    /// Points on or near a bound move `rstep·max(1, |bound|)` inside (the next number inside
    /// with `rstep = 0`); points inside stay.
    #[test]
    fn strictly_feasible_points_move_off_the_bounds() {
        let b = unit_box();
        assert_eq!(
            b.strictly_feasible(&[0.0, 2.0, 0.3], 1e-10),
            [1e-10, 2.0 - 2e-10, 0.3]
        );
        let next = b.strictly_feasible(&[1.0, -5.0, -1.0], 0.0);
        assert_eq!(
            next,
            [1.0 - f64::EPSILON / 2.0, -5.0, -1.0 + f64::EPSILON / 2.0]
        );
    }

    /// From (0.5, 0, 0) along (1, 1, −1): x₀ meets its upper bound at 0.5, before x₁ (2) and
    /// x₂ (1).
    #[test]
    fn the_first_bound_along_a_step() {
        let (t, hits) = unit_box().step_to_bound(&[0.5, 0.0, 0.0], &[1.0, 1.0, -1.0]);
        assert_eq!((t, hits), (0.5, vec![true, false, false]));
        let (t, _) = unit_box().step_to_bound(&[0.5, 0.0, 0.0], &[0.0, -1.0, 1.0]);
        assert_eq!(t, f64::INFINITY);
    }
}
