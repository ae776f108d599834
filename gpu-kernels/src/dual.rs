//! [`Dual`]: a [`Real`] that carries `N` directional derivatives with its value, so that one
//! evaluation of a term on duals gives the term's exact partial derivatives in `N` of its
//! variables (forward-mode automatic differentiation, in vector form). The exact-gradient
//! kernels seed the variables of a window `N` at a time (see `kernel::exact`).
//!
//! Every rule is the textbook derivative of the `f64` function it wraps, evaluated with the same
//! code as the value (this crate's `exp`, `libm` for the rest), so the CPU and the PTX agree.
//!
//! A dual's numbers are `f64` (one point), or [`Lanes`] of several terms side by side, which
//! the CPU's exact gradient of separable and disjoint banded windows uses: the same rules,
//! lane by lane, so each lane holds the bits the `f64` dual would.

use crate::lanes::Lanes;
use crate::real::Real;
use core::ops::{Add, Div, Mul, Neg, Sub};

/// What a [`Dual`]'s value and derivatives are made of: `f64`, or [`Lanes`] of several points.
pub trait DualScalar: Real + PartialEq {
    /// Whether a number is one point, so that [`Real::with_lanes`] may build a dual from one
    /// value (lanes of several points would need one per point).
    const ONE_POINT: bool;
    /// The derivative of `|x|`: the sign, 0 at 0 (as JAX and PyTorch take it).
    fn abs_slope(self) -> Self;
}

impl DualScalar for f64 {
    const ONE_POINT: bool = true;
    #[inline(always)]
    fn abs_slope(self) -> Self {
        if self > 0.0 {
            1.0
        } else if self < 0.0 {
            -1.0
        } else {
            0.0
        }
    }
}

impl<const L: usize> DualScalar for Lanes<L> {
    const ONE_POINT: bool = false;
    #[inline(always)]
    fn abs_slope(self) -> Self {
        let mut slope = self.0;
        for s in slope.iter_mut() {
            *s = s.abs_slope();
        }
        Lanes(slope)
    }
}

/// A value and its derivatives along `N` directions, in numbers `S` (see [`DualScalar`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Dual<const N: usize, S = f64> {
    /// The value.
    pub value: S,
    /// The derivative along each of the `N` seeded directions.
    pub derivatives: [S; N],
}

/// `f` on every derivative lane. The loops here run over borrowed lanes: `array::map` and
/// zips that take an array by value came out as scalar code with the lanes spilled to the
/// stack, where these vectorize (lsq-expsin's exact gradient at p = 16 and 10⁶ points went
/// from 17.1 to 13.0 ms on the CPU).
#[inline(always)]
fn each<S: Copy, const N: usize>(mut lanes: [S; N], f: impl Fn(S) -> S) -> [S; N] {
    for d in lanes.iter_mut() {
        *d = f(*d);
    }
    lanes
}

/// `f` on every pair of lanes of `a` and `b`, as [`each`].
#[inline(always)]
fn each_pair<S: Copy, const N: usize>(mut a: [S; N], b: &[S; N], f: impl Fn(S, S) -> S) -> [S; N] {
    for (a, &b) in a.iter_mut().zip(b.iter()) {
        *a = f(*a, b);
    }
    a
}

/// The product rule, `d(a·b) = da·b + a·db`, on every lane.
#[inline(always)]
fn product_lanes<S: DualScalar, const N: usize>(a: &Dual<N, S>, b: &Dual<N, S>) -> [S; N] {
    each_pair(a.derivatives, &b.derivatives, |da, db| {
        da * b.value + a.value * db
    })
}

/// The quotient rule on every lane, given `q = a / b`: `d(a/b) = (da − q·db) / b`.
#[inline(always)]
fn quotient_lanes<S: DualScalar, const N: usize>(a: &Dual<N, S>, b: &Dual<N, S>, q: S) -> [S; N] {
    each_pair(a.derivatives, &b.derivatives, |da, db| {
        (da - q * db) / b.value
    })
}

impl<const N: usize> Dual<N> {
    /// A constant: no derivative.
    #[inline(always)]
    pub const fn constant(value: f64) -> Self {
        Dual {
            value,
            derivatives: [0.0; N],
        }
    }

    /// The variable along direction `lane`: derivative 1 there, 0 elsewhere.
    #[inline(always)]
    pub fn variable(value: f64, lane: usize) -> Self {
        let mut derivatives = [0.0; N];
        derivatives[lane] = 1.0;
        Dual { value, derivatives }
    }
}

impl<const N: usize, S: DualScalar> Dual<N, S> {
    /// `value` with no derivative.
    #[inline(always)]
    pub fn constant_of(value: S) -> Self {
        Dual {
            value,
            derivatives: [S::from_f64(0.0); N],
        }
    }

    /// `f(self)` with `f(value)` given and `f'(value)` given: the chain rule.
    #[inline(always)]
    fn chain(self, value: S, slope: S) -> Self {
        Dual {
            value,
            derivatives: each(self.derivatives, |d| slope * d),
        }
    }
}

impl<const N: usize, S: DualScalar> Add for Dual<N, S> {
    type Output = Self;
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        Dual {
            value: self.value + rhs.value,
            derivatives: each_pair(self.derivatives, &rhs.derivatives, |d, r| d + r),
        }
    }
}

impl<const N: usize, S: DualScalar> Sub for Dual<N, S> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, rhs: Self) -> Self {
        Dual {
            value: self.value - rhs.value,
            derivatives: each_pair(self.derivatives, &rhs.derivatives, |d, r| d - r),
        }
    }
}

impl<const N: usize, S: DualScalar> Mul for Dual<N, S> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        Dual {
            value: self.value * rhs.value,
            derivatives: product_lanes(&self, &rhs),
        }
    }
}

impl<const N: usize, S: DualScalar> Div for Dual<N, S> {
    type Output = Self;
    #[inline(always)]
    fn div(self, rhs: Self) -> Self {
        let value = self.value / rhs.value;
        Dual {
            value,
            derivatives: quotient_lanes(&self, &rhs, value),
        }
    }
}

impl<const N: usize, S: DualScalar> Neg for Dual<N, S> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Dual {
            value: -self.value,
            derivatives: each(self.derivatives, |d| -d),
        }
    }
}

impl<const N: usize, S: DualScalar> Add<f64> for Dual<N, S> {
    type Output = Self;
    #[inline(always)]
    fn add(self, rhs: f64) -> Self {
        Dual {
            value: self.value + rhs,
            ..self
        }
    }
}

impl<const N: usize, S: DualScalar> Sub<f64> for Dual<N, S> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, rhs: f64) -> Self {
        Dual {
            value: self.value - rhs,
            ..self
        }
    }
}

impl<const N: usize, S: DualScalar> Mul<f64> for Dual<N, S> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, rhs: f64) -> Self {
        Dual {
            value: self.value * rhs,
            derivatives: each(self.derivatives, |d| d * rhs),
        }
    }
}

impl<const N: usize, S: DualScalar> Div<f64> for Dual<N, S> {
    type Output = Self;
    #[inline(always)]
    fn div(self, rhs: f64) -> Self {
        Dual {
            value: self.value / rhs,
            derivatives: each(self.derivatives, |d| d / rhs),
        }
    }
}

impl<const N: usize, S: DualScalar> Real for Dual<N, S> {
    #[inline(always)]
    fn from_f64(value: f64) -> Self {
        Dual::constant_of(S::from_f64(value))
    }
    #[inline(always)]
    fn with_lanes(value: f64, lane: impl Fn(usize) -> f64) -> Option<Self> {
        if !S::ONE_POINT {
            return None;
        }
        // A loop rather than `core::array::from_fn`, which the compiler may leave out of line
        // (then every lane is a call: lsq-expsin's exact gradient took 1.6× as long).
        let mut derivatives = [S::from_f64(0.0); N];
        for (l, d) in derivatives.iter_mut().enumerate() {
            *d = S::from_f64(lane(l));
        }
        Some(Dual {
            value: S::from_f64(value),
            derivatives,
        })
    }
    /// The value of the first point (see [`Lanes`]' `value`).
    #[inline(always)]
    fn value(self) -> f64 {
        self.value.value()
    }
    #[inline(always)]
    fn exp(self) -> Self {
        let e = self.value.exp();
        self.chain(e, e)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        self.chain(self.value.ln(), S::from_f64(1.0) / self.value)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        self.chain(self.value.sin(), self.value.cos())
    }
    #[inline(always)]
    fn cos(self) -> Self {
        self.chain(self.value.cos(), -self.value.sin())
    }
    #[inline(always)]
    fn tan(self) -> Self {
        let t = self.value.tan();
        self.chain(t, t * t + 1.0)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        self.chain(
            self.value.atan(),
            S::from_f64(1.0) / (self.value * self.value + 1.0),
        )
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        // d atan2(y, x) = (x·dy − y·dx) / (x² + y²)
        let (y, xv) = (self.value, x.value);
        let r2 = xv * xv + y * y;
        Dual {
            value: y.atan2(xv),
            derivatives: each_pair(self.derivatives, &x.derivatives, |d, dx| {
                (xv * d - y * dx) / r2
            }),
        }
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        let t = self.value.tanh();
        self.chain(t, -(t * t) + 1.0)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        let s = self.value.sqrt();
        self.chain(s, S::from_f64(0.5) / s)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self.chain(self.value.abs(), self.value.abs_slope())
    }
    #[inline(always)]
    fn powf(self, p: f64) -> Self {
        let value = self.value.powf(p);
        self.chain(value, self.value.powf(p - 1.0) * p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::real::Num;

    /// `f` on a dual against a central difference of `f` on f64, at `x`.
    fn check(f: impl Fn(Num<Dual<1>>) -> Num<Dual<1>>, g: impl Fn(f64) -> f64, x: f64) {
        let dual = f(Num(Dual::variable(x, 0))).0;
        let h = 1e-6 * x.abs().max(1.0);
        let numeric = (g(x + h) - g(x - h)) / (2.0 * h);
        assert_eq!(dual.value.to_bits(), g(x).to_bits(), "value at {x}");
        let scale = numeric.abs().max(1.0);
        assert!(
            (dual.derivatives[0] - numeric).abs() <= 1e-7 * scale,
            "derivative at {x}: {} vs {numeric}",
            dual.derivatives[0]
        );
    }

    #[test]
    fn every_function_has_its_derivative() {
        for x in [0.3, 1.7, -0.8] {
            check(|v| v.exp(), <f64 as Real>::exp, x);
            check(|v| v.sin(), <f64 as Real>::sin, x);
            check(|v| v.cos(), <f64 as Real>::cos, x);
            check(|v| v.tan(), <f64 as Real>::tan, x);
            check(|v| v.atan(), <f64 as Real>::atan, x);
            check(|v| v.tanh(), <f64 as Real>::tanh, x);
            check(|v| v.abs(), <f64 as Real>::abs, x);
            check(
                |v| (2.0 - v) / (v * v + 1.0),
                |v| (2.0 - v) / (v * v + 1.0),
                x,
            );
            check(
                |v| v.atan2(Num::constant(0.4) - v),
                |v| Real::atan2(v, 0.4 - v),
                x,
            );
        }
        for x in [0.3, 1.7] {
            check(|v| v.ln(), <f64 as Real>::ln, x);
            check(|v| v.sqrt(), <f64 as Real>::sqrt, x);
            check(|v| v.powf(2.5), |v| Real::powf(v, 2.5), x);
        }
    }

    #[test]
    fn lanes_are_independent_directions() {
        // f(a, b) = a²·b: ∂/∂a = 2ab, ∂/∂b = a².
        let (a, b) = (
            Num(Dual::<2>::variable(1.5, 0)),
            Num(Dual::<2>::variable(-2.0, 1)),
        );
        let f = (a * a * b).0;
        assert_eq!(f.value, -4.5);
        assert_eq!(f.derivatives, [2.0 * 1.5 * -2.0, 1.5 * 1.5]);
    }
}
