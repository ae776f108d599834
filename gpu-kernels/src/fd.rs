//! Finite-difference schemes, taken per term.
//!
//! `g_i = Σ_{k : i ∈ W(k)} [φ_k(x + h_i e_i) − φ_k(x)] / h_i` (forward), or the central form.
//! Differencing each term before summing avoids the cancellation of two large sums (a data fit
//! with f ≈ 10⁶ and g ≈ 10⁻⁵ is routine), and costs `K·w` term evaluations, not `n·K`.
//!
//! Steps follow scipy's relative rule (`approx_derivative` with `rel_step=None`):
//! `h = r · sign(x) · max(1, |x|)` with `r = √ε` (forward) or `∛ε` (central), `sign(0) = +1`,
//! and the divisor is the step actually taken, `(x + h) − x`. This differs from
//! `scipy.optimize.minimize(method="BFGS", jac=None)`, whose default is the absolute step
//! `√ε ≈ 1.49e-8`: a relative step keeps the truncation error proportionate when |x| ≫ 1.
//!
//! Within a box ([`StepBox`], what L-BFGS-B and trf set), no point leaves a variable's
//! interval, by scipy's rule (`_adjust_scheme_to_bounds`): a forward step that would cross a
//! bound is taken the other way, or, where the interval is narrower than the step, to its far
//! end; a central stencil that does not fit becomes the one-sided three-point one
//! `[−3φ(x) + 4φ(x + h) − φ(x + 2h)] / 2h`, toward the roomier side with `h` at most half the
//! room, or, where the shorter side still holds that `h`, a central one as wide as the shorter
//! side. A variable whose interval is a single point cannot move: its partial is 0.

use crate::lanes::{LANES, Lanes};
use crate::term::{Term, Vars};

/// √ε for f64.
pub const SQRT_EPS: f64 = 1.4901161193847656e-8;
/// ∛ε for f64.
pub const CBRT_EPS: f64 = 6.055454452393343e-6;

/// The raw relative step `r · sign(x) · max(1, |x|)`.
#[inline(always)]
fn raw_step(x: f64, relative: f64) -> f64 {
    let sign = if x >= 0.0 { 1.0 } else { -1.0 };
    relative * sign * if x.abs() > 1.0 { x.abs() } else { 1.0 }
}

/// The closed interval a variable's difference points must stay in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    /// The lowest point allowed (`−∞` for none).
    pub lower: f64,
    /// The highest point allowed (`+∞` for none).
    pub upper: f64,
}

/// The box the difference points of every variable stay in, `lower[i] ≤ point ≤ upper[i]`,
/// or none ([`StepBox::OPEN`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct StepBox<'a> {
    /// Each variable's lower end; empty for an open box.
    lower: &'a [f64],
    /// Each variable's upper end; empty for an open box.
    upper: &'a [f64],
}

impl<'a> StepBox<'a> {
    /// No box: steps as if unbounded.
    pub const OPEN: StepBox<'static> = StepBox {
        lower: &[],
        upper: &[],
    };

    /// The box `[lower[i], upper[i]]` per variable (both as long as `x`).
    #[inline(always)]
    pub fn new(lower: &'a [f64], upper: &'a [f64]) -> Self {
        StepBox { lower, upper }
    }

    /// Whether there is no box.
    #[inline(always)]
    pub fn is_open(self) -> bool {
        self.lower.is_empty()
    }

    /// Variable `i`'s interval; `None` without a box (the steps are then the unboxed ones,
    /// without the box's arithmetic, a test the compiler takes out of the loops).
    #[inline(always)]
    pub fn interval(self, i: usize) -> Option<Interval> {
        Some(Interval {
            lower: *self.lower.get(i)?,
            upper: *self.upper.get(i)?,
        })
    }
}

/// Where a variable is perturbed, the spacing of those points (the divisor), and the stencil.
#[derive(Clone, Copy, Debug)]
pub struct Steps {
    /// The nearer point, `x + h`.
    pub near: f64,
    /// The other point: `x` itself (forward differences), `x − h` (central), `x + 2h`
    /// (one-sided three-point).
    pub far: f64,
    /// The divisor, as computed in f64 (the step actually taken): `near − x` (forward),
    /// `near − far` (central), `far − x` (one-sided three-point); 1 where the variable cannot
    /// move (its difference is then 0).
    pub spacing: f64,
    /// Whether the central scheme takes the one-sided three-point stencil instead of the
    /// centred one. Always false for forward differences, which read `near` alone.
    pub one_sided: bool,
}

impl Steps {
    /// A variable held at one point by its interval: no step, a zero difference.
    #[inline(always)]
    fn held(x: f64) -> Steps {
        Steps {
            near: x,
            far: x,
            spacing: 1.0,
            one_sided: false,
        }
    }
}

/// scipy's one-sided step within `interval`: `h` if `x + h` stays inside, else `−h` if that
/// does, else to the far end of the roomier side.
#[inline(always)]
fn one_sided_step(x: f64, h: f64, interval: Interval) -> f64 {
    let (below, above) = (x - interval.lower, interval.upper - x);
    if h.abs() <= below.max(above) {
        let reached = x + h;
        if reached < interval.lower || reached > interval.upper {
            -h
        } else {
            h
        }
    } else if above >= below {
        above
    } else {
        -below
    }
}

/// A difference scheme: how one term's contribution to `g_i` is formed.
pub trait FdScheme {
    /// What a term computes once before its perturbations: `φ_k(x)` for forward differences.
    fn base<T: Term>(x: &[f64], local: &T::Local<'_>) -> f64;

    /// `φ_k(x)`, for a value taken in the same pass as the gradient: the base itself for
    /// forward differences, one more evaluation for central ones.
    fn value<T: Term>(x: &[f64], local: &T::Local<'_>, base: f64) -> f64;

    /// The points a variable whose value is `xi` is evaluated at, inside `interval` where
    /// there is one.
    fn steps(xi: f64, interval: Option<Interval>) -> Steps;

    /// The term's difference in window variable `j` (not yet divided by the spacing).
    fn difference<T: Term>(
        x: &[f64],
        j: usize,
        local: &T::Local<'_>,
        base: f64,
        steps: Steps,
    ) -> f64;

    /// The term's differences in window variables `first .. first + LANES` (fewer at the end
    /// of the window) in one call of `eval` on [`Lanes`] per point, lane `l` perturbing
    /// variable `first + l` within `bounds` (indexed as the window). `lanes` holds the window,
    /// splatted, and is left as it was found.
    fn differences_in_lanes<T: Term>(
        lanes: &mut [Lanes],
        first: usize,
        bounds: StepBox<'_>,
        local: &T::Local<'_>,
        base: f64,
    ) -> [f64; LANES];
}

/// `eval` with lane `l` of window variable `first + l` moved to `point` of its steps within
/// `bounds`; puts the lanes back afterwards.
#[inline(always)]
fn eval_perturbed_lanes<T: Term, S: FdScheme>(
    lanes: &mut [Lanes],
    first: usize,
    bounds: StepBox<'_>,
    local: &T::Local<'_>,
    point: impl Fn(Steps) -> f64,
) -> Lanes {
    let count = LANES.min(lanes.len() - first);
    let mut saved = [0.0; LANES];
    for (l, kept) in saved.iter_mut().enumerate().take(count) {
        let lane = &mut lanes[first + l].0[l];
        *kept = *lane;
        *lane = point(S::steps(*lane, bounds.interval(first + l)));
    }
    let value = T::eval(Vars::new(lanes), local).0;
    for (l, kept) in saved.iter().enumerate().take(count) {
        lanes[first + l].0[l] = *kept;
    }
    value
}

/// Forward differences: `[φ(x + h e_j) − φ(x)] / h`, `h ∝ √ε`.
#[derive(Clone, Copy, Debug)]
pub struct Forward;

/// Central differences: `[φ(x + h e_j) − φ(x − h e_j)] / 2h`, `h ∝ ∛ε`.
#[derive(Clone, Copy, Debug)]
pub struct Central;

impl FdScheme for Forward {
    #[inline(always)]
    fn base<T: Term>(x: &[f64], local: &T::Local<'_>) -> f64 {
        T::eval(Vars::new(x), local).0
    }

    #[inline(always)]
    fn value<T: Term>(_x: &[f64], _local: &T::Local<'_>, base: f64) -> f64 {
        base
    }

    #[inline(always)]
    fn steps(xi: f64, interval: Option<Interval>) -> Steps {
        let h = raw_step(xi, SQRT_EPS);
        let near = match interval {
            None => xi + h,
            Some(interval) if interval.lower == interval.upper => return Steps::held(xi),
            Some(interval) => xi + one_sided_step(xi, h, interval),
        };
        Steps {
            near,
            far: xi,
            spacing: near - xi,
            one_sided: false,
        }
    }

    #[inline(always)]
    fn difference<T: Term>(
        x: &[f64],
        j: usize,
        local: &T::Local<'_>,
        base: f64,
        steps: Steps,
    ) -> f64 {
        T::eval(Vars::with(x, j, steps.near), local).0 - base
    }

    #[inline(always)]
    fn differences_in_lanes<T: Term>(
        lanes: &mut [Lanes],
        first: usize,
        bounds: StepBox<'_>,
        local: &T::Local<'_>,
        base: f64,
    ) -> [f64; LANES] {
        eval_perturbed_lanes::<T, Self>(lanes, first, bounds, local, |s| s.near)
            .0
            .map(|v| v - base)
    }
}

impl FdScheme for Central {
    #[inline(always)]
    fn base<T: Term>(_x: &[f64], _local: &T::Local<'_>) -> f64 {
        0.0
    }

    #[inline(always)]
    fn value<T: Term>(x: &[f64], local: &T::Local<'_>, _base: f64) -> f64 {
        T::eval(Vars::new(x), local).0
    }

    #[inline(always)]
    fn steps(xi: f64, interval: Option<Interval>) -> Steps {
        let h = raw_step(xi, CBRT_EPS);
        let centred = |h: f64| {
            let (near, far) = (xi + h, xi - h);
            Steps {
                near,
                far,
                spacing: near - far,
                one_sided: false,
            }
        };
        let Some(interval) = interval else {
            return centred(h);
        };
        if interval.lower == interval.upper {
            return Steps::held(xi);
        }
        let (below, above) = (xi - interval.lower, interval.upper - xi);
        if below >= h.abs() && above >= h.abs() {
            return centred(h);
        }
        let toward_room = if above >= below {
            h.abs().min(0.5 * above)
        } else {
            -h.abs().min(0.5 * below)
        };
        let room = below.min(above);
        if toward_room.abs() <= room {
            return centred(room);
        }
        let far = xi + 2.0 * toward_room;
        Steps {
            near: xi + toward_room,
            far,
            spacing: far - xi,
            one_sided: true,
        }
    }

    #[inline(always)]
    fn difference<T: Term>(
        x: &[f64],
        j: usize,
        local: &T::Local<'_>,
        _base: f64,
        steps: Steps,
    ) -> f64 {
        let at = |point| T::eval(Vars::with(x, j, point), local).0;
        if steps.one_sided {
            one_sided_difference(
                T::eval(Vars::new(x), local).0,
                at(steps.near),
                at(steps.far),
            )
        } else {
            at(steps.near) - at(steps.far)
        }
    }

    #[inline(always)]
    fn differences_in_lanes<T: Term>(
        lanes: &mut [Lanes],
        first: usize,
        bounds: StepBox<'_>,
        local: &T::Local<'_>,
        _base: f64,
    ) -> [f64; LANES] {
        let near = eval_perturbed_lanes::<T, Self>(lanes, first, bounds, local, |s| s.near);
        let far = eval_perturbed_lanes::<T, Self>(lanes, first, bounds, local, |s| s.far);
        let mut differences = (near - far).0;
        if !bounds.is_open() {
            one_sided_lanes::<T>(lanes, first, bounds, local, (near, far), &mut differences);
        }
        differences
    }
}

/// Central differences in lanes within a box: the lanes whose stencil is one-sided get
/// `−3φ(x) + 4φ(x + h) − φ(x + 2h)` from the evaluations at `near` and `far`, with `φ(x)` taken
/// once for all of them. Kept out of line, so that the unboxed path stays as small as it was
/// (the compiler then still inlines the term's `eval` there).
#[inline(never)]
fn one_sided_lanes<T: Term>(
    lanes: &mut [Lanes],
    first: usize,
    bounds: StepBox<'_>,
    local: &T::Local<'_>,
    (near, far): (Lanes, Lanes),
    differences: &mut [f64; LANES],
) {
    let count = LANES.min(lanes.len() - first);
    let mut at_x = None;
    for (l, difference) in differences.iter_mut().enumerate().take(count) {
        let xl = lanes[first + l].0[l];
        if Central::steps(xl, bounds.interval(first + l)).one_sided {
            let at_x = *at_x.get_or_insert_with(|| T::eval(Vars::new(lanes), local).0.0[0]);
            *difference = one_sided_difference(at_x, near.0[l], far.0[l]);
        }
    }
}

/// The one-sided three-point stencil's numerator, `−3φ(x) + 4φ(x + h) − φ(x + 2h)`, in scipy's
/// order of operations.
#[inline(always)]
fn one_sided_difference(at_x: f64, near: f64, far: f64) -> f64 {
    -3.0 * at_x + 4.0 * near - far
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_steps_are_roots_of_epsilon() {
        assert_eq!(SQRT_EPS, libm::sqrt(f64::EPSILON));
        // scipy computes EPS**(1/3) with pow.
        assert_eq!(CBRT_EPS, libm::pow(f64::EPSILON, 1.0 / 3.0));
    }

    #[test]
    fn spacing_is_the_step_actually_taken() {
        let open = None;
        // At |x| > 1 the step scales with x; the representable spacing is exact.
        let x = 1.0e6 + 0.1;
        let h = Forward::steps(x, open).spacing;
        assert_eq!((x + h) - x, h);
        assert!((h / (SQRT_EPS * x) - 1.0).abs() < 1e-6);
        // sign(0) = +1; negative x steps away from zero, as in scipy.
        assert!(Forward::steps(0.0, open).spacing > 0.0);
        assert!(Forward::steps(-3.0, open).spacing < 0.0);
        let central = Central::steps(2.0, open);
        assert_eq!(central.spacing, central.near - central.far);
        assert!((central.spacing / (4.0 * CBRT_EPS) - 1.0).abs() < 1e-9);
    }

    fn within(lower: f64, upper: f64) -> Option<Interval> {
        Some(Interval { lower, upper })
    }

    /// The cases of scipy's `TestAdjustSchemeToBounds.test_with_bound` and
    /// `test_tight_bounds` (h = ±0.1 there), worked through the same rules with this module's
    /// steps: the step keeps its size where the box allows and turns or shrinks where not.
    #[test]
    fn forward_steps_turn_inward_at_a_bound() {
        // x = 1 at its upper bound: the forward step (+√ε) turns back.
        let at_upper = Forward::steps(1.0, within(-1.0, 1.0));
        assert_eq!(at_upper.near, 1.0 - SQRT_EPS);
        assert_eq!(at_upper.spacing, -SQRT_EPS);
        // Inside, far enough from both ends: unchanged.
        let inside = Forward::steps(0.5, within(-1.0, 1.0));
        assert_eq!(inside.near, 0.5 + SQRT_EPS);
        // A box narrower than the step: to the far end of the roomier side.
        let tight = Forward::steps(0.0, within(-1e-9, 4e-9));
        assert_eq!((tight.near, tight.spacing), (4e-9, 4e-9));
        let tight = Forward::steps(0.0, within(-4e-9, 1e-9));
        assert_eq!((tight.near, tight.spacing), (-4e-9, -4e-9));
        // Held at one point: no step, a zero difference over a spacing of 1.
        let held = Forward::steps(0.3, within(0.3, 0.3));
        assert_eq!((held.near, held.spacing), (0.3, 1.0));
    }

    #[test]
    fn central_steps_become_one_sided_or_narrower_at_a_bound() {
        let h = CBRT_EPS;
        // At the lower bound: one-sided three-point, toward the room above.
        let at_lower = Central::steps(0.0, within(0.0, 1.0));
        assert!(at_lower.one_sided);
        assert_eq!((at_lower.near, at_lower.far), (h, 2.0 * h));
        assert_eq!(at_lower.spacing, 2.0 * h);
        // At the upper bound: toward the room below.
        let at_upper = Central::steps(0.0, within(-1.0, 0.0));
        assert!(at_upper.one_sided);
        assert_eq!((at_upper.near, at_upper.far), (-h, -2.0 * h));
        // The room above holds no full step: at most half of it (x + 2h reaches the bound).
        let short = Central::steps(0.0, within(0.0, h));
        assert!(short.one_sided);
        assert_eq!((short.near, short.far), (0.5 * h, h));
        // Shorter side 0.9h, longer 1.2h: the one-sided step (0.6h) fits on both sides, so a
        // central stencil as wide as the shorter side.
        let narrow = Central::steps(0.0, within(-0.9 * h, 1.2 * h));
        assert!(!narrow.one_sided);
        assert_eq!((narrow.near, narrow.far), (0.9 * h, -0.9 * h));
        // Room on both sides: as without a box.
        let inside = Central::steps(0.5, within(0.0, 1.0));
        assert!(!inside.one_sided);
        assert_eq!(inside.spacing, Central::steps(0.5, None).spacing);
    }

    #[test]
    fn the_one_sided_stencil_is_second_order() {
        // φ = eˣ at 0 from the right: (−3 + 4e^h − e^{2h}) / 2h = 1 − (2/3)h² + …
        let steps = Central::steps(0.0, within(0.0, 1.0));
        let estimate =
            one_sided_difference(1.0, libm::exp(steps.near), libm::exp(steps.far)) / steps.spacing;
        assert!((estimate - 1.0).abs() < 1e-9, "{estimate}");
    }
}
