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

/// Where a variable is perturbed, and the spacing of those points (the divisor).
#[derive(Clone, Copy, Debug)]
pub struct Steps {
    /// The upper point, `x + h`.
    pub plus: f64,
    /// The lower point: `x − h` for central differences, `x` itself for forward ones.
    pub minus: f64,
    /// `plus − minus` as computed in f64 (the step actually taken), the divisor.
    pub spacing: f64,
}

/// A difference scheme: how one term's contribution to `g_i` is formed.
pub trait FdScheme {
    /// What a term computes once before its perturbations: `φ_k(x)` for forward differences.
    fn base<T: Term>(x: &[f64], local: &T::Local<'_>) -> f64;

    /// `φ_k(x)`, for a value taken in the same pass as the gradient: the base itself for
    /// forward differences, one more evaluation for central ones.
    fn value<T: Term>(x: &[f64], local: &T::Local<'_>, base: f64) -> f64;

    /// The points a variable whose value is `xi` is evaluated at.
    fn steps(xi: f64) -> Steps;

    /// The term's difference in window variable `j` (not yet divided by the spacing).
    fn difference<T: Term>(
        x: &[f64],
        j: usize,
        local: &T::Local<'_>,
        base: f64,
        steps: Steps,
    ) -> f64;

    /// The term's differences in window variables `first .. first + LANES` (fewer at the end
    /// of the window) in one call of `eval` on [`Lanes`], lane `l` perturbing variable
    /// `first + l`. `lanes` holds the window, splatted, and is left as it was found.
    fn differences_in_lanes<T: Term>(
        lanes: &mut [Lanes],
        first: usize,
        local: &T::Local<'_>,
        base: f64,
    ) -> [f64; LANES];
}

/// `eval` with lane `l` of window variable `first + l` moved to `point(steps)` of its value;
/// puts the lanes back afterwards.
#[inline(always)]
fn eval_perturbed_lanes<T: Term, S: FdScheme>(
    lanes: &mut [Lanes],
    first: usize,
    local: &T::Local<'_>,
    point: impl Fn(Steps) -> f64,
) -> Lanes {
    let count = LANES.min(lanes.len() - first);
    let mut saved = [0.0; LANES];
    for (l, kept) in saved.iter_mut().enumerate().take(count) {
        let lane = &mut lanes[first + l].0[l];
        *kept = *lane;
        *lane = point(S::steps(*lane));
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
    fn steps(xi: f64) -> Steps {
        let plus = xi + raw_step(xi, SQRT_EPS);
        Steps {
            plus,
            minus: xi,
            spacing: plus - xi,
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
        T::eval(Vars::with(x, j, steps.plus), local).0 - base
    }

    #[inline(always)]
    fn differences_in_lanes<T: Term>(
        lanes: &mut [Lanes],
        first: usize,
        local: &T::Local<'_>,
        base: f64,
    ) -> [f64; LANES] {
        eval_perturbed_lanes::<T, Self>(lanes, first, local, |s| s.plus)
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
    fn steps(xi: f64) -> Steps {
        let h = raw_step(xi, CBRT_EPS);
        let (plus, minus) = (xi + h, xi - h);
        Steps {
            plus,
            minus,
            spacing: plus - minus,
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
        at(steps.plus) - at(steps.minus)
    }

    #[inline(always)]
    fn differences_in_lanes<T: Term>(
        lanes: &mut [Lanes],
        first: usize,
        local: &T::Local<'_>,
        _base: f64,
    ) -> [f64; LANES] {
        let plus = eval_perturbed_lanes::<T, Self>(lanes, first, local, |s| s.plus);
        let minus = eval_perturbed_lanes::<T, Self>(lanes, first, local, |s| s.minus);
        (plus - minus).0
    }
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
        // At |x| > 1 the step scales with x; the representable spacing is exact.
        let x = 1.0e6 + 0.1;
        let h = Forward::steps(x).spacing;
        assert_eq!((x + h) - x, h);
        assert!((h / (SQRT_EPS * x) - 1.0).abs() < 1e-6);
        // sign(0) = +1; negative x steps away from zero, as in scipy.
        assert!(Forward::steps(0.0).spacing > 0.0);
        assert!(Forward::steps(-3.0).spacing < 0.0);
        let central = Central::steps(2.0);
        assert_eq!(central.spacing, central.plus - central.minus);
        assert!((central.spacing / (4.0 * CBRT_EPS) - 1.0).abs() < 1e-9);
    }
}
