//! [`Dual`]: a [`Real`] that carries `N` directional derivatives with its value, so that one
//! evaluation of a term on duals gives the term's exact partial derivatives in `N` of its
//! variables (forward-mode automatic differentiation, in vector form). The exact-gradient
//! kernels seed the variables of a window `N` at a time (see `kernel::exact`).
//!
//! Every rule is the textbook derivative of the `f64` function it wraps, evaluated with the same
//! code as the value (this crate's `exp`, `libm` for the rest), so the CPU and the PTX agree.

use crate::real::Real;
use core::ops::{Add, Div, Mul, Neg, Sub};

/// A value and its derivatives along `N` directions.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct Dual<const N: usize> {
    /// The value.
    pub value: f64,
    /// The derivative along each of the `N` seeded directions.
    pub derivatives: [f64; N],
}

/// `f` on every derivative lane. The loops here run over borrowed lanes: `array::map` and
/// zips that take an array by value came out as scalar code with the lanes spilled to the
/// stack, where these vectorize (lsq-expsin's exact gradient at p = 16 and 10⁶ points went
/// from 17.1 to 13.0 ms on the CPU).
#[inline(always)]
fn each<const N: usize>(mut lanes: [f64; N], f: impl Fn(f64) -> f64) -> [f64; N] {
    for d in lanes.iter_mut() {
        *d = f(*d);
    }
    lanes
}

/// `f` on every pair of lanes of `a` and `b`, as [`each`].
#[inline(always)]
fn each_pair<const N: usize>(
    mut a: [f64; N],
    b: &[f64; N],
    f: impl Fn(f64, f64) -> f64,
) -> [f64; N] {
    for (a, &b) in a.iter_mut().zip(b.iter()) {
        *a = f(*a, b);
    }
    a
}

/// The product rule, `d(a·b) = da·b + a·db`, on every lane.
#[inline(always)]
fn product_lanes<const N: usize>(a: &Dual<N>, b: &Dual<N>) -> [f64; N] {
    each_pair(a.derivatives, &b.derivatives, |da, db| {
        da * b.value + a.value * db
    })
}

/// The quotient rule on every lane, given `q = a / b`: `d(a/b) = (da − q·db) / b`.
#[inline(always)]
fn quotient_lanes<const N: usize>(a: &Dual<N>, b: &Dual<N>, q: f64) -> [f64; N] {
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

    /// `f(self)` with `f(value)` given and `f'(value)` given: the chain rule.
    #[inline(always)]
    fn chain(self, value: f64, slope: f64) -> Self {
        Dual {
            value,
            derivatives: each(self.derivatives, |d| slope * d),
        }
    }
}

impl<const N: usize> Add for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        Dual {
            value: self.value + rhs.value,
            derivatives: each_pair(self.derivatives, &rhs.derivatives, |d, r| d + r),
        }
    }
}

impl<const N: usize> Sub for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, rhs: Self) -> Self {
        Dual {
            value: self.value - rhs.value,
            derivatives: each_pair(self.derivatives, &rhs.derivatives, |d, r| d - r),
        }
    }
}

impl<const N: usize> Mul for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        Dual {
            value: self.value * rhs.value,
            derivatives: product_lanes(&self, &rhs),
        }
    }
}

impl<const N: usize> Div for Dual<N> {
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

impl<const N: usize> Neg for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Dual {
            value: -self.value,
            derivatives: each(self.derivatives, |d| -d),
        }
    }
}

impl<const N: usize> Add<f64> for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn add(self, rhs: f64) -> Self {
        Dual {
            value: self.value + rhs,
            ..self
        }
    }
}

impl<const N: usize> Sub<f64> for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, rhs: f64) -> Self {
        Dual {
            value: self.value - rhs,
            ..self
        }
    }
}

impl<const N: usize> Mul<f64> for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, rhs: f64) -> Self {
        Dual {
            value: self.value * rhs,
            derivatives: each(self.derivatives, |d| d * rhs),
        }
    }
}

impl<const N: usize> Div<f64> for Dual<N> {
    type Output = Self;
    #[inline(always)]
    fn div(self, rhs: f64) -> Self {
        Dual {
            value: self.value / rhs,
            derivatives: each(self.derivatives, |d| d / rhs),
        }
    }
}

impl<const N: usize> Real for Dual<N> {
    #[inline(always)]
    fn from_f64(value: f64) -> Self {
        Dual::constant(value)
    }
    #[inline(always)]
    fn with_lanes(value: f64, lane: impl Fn(usize) -> f64) -> Option<Self> {
        // A loop rather than `core::array::from_fn`, which the compiler may leave out of line
        // (then every lane is a call: lsq-expsin's exact gradient took 1.6× as long).
        let mut derivatives = [0.0; N];
        for (l, d) in derivatives.iter_mut().enumerate() {
            *d = lane(l);
        }
        Some(Dual { value, derivatives })
    }
    #[inline(always)]
    fn value(self) -> f64 {
        self.value
    }
    #[inline(always)]
    fn exp(self) -> Self {
        let e = Real::exp(self.value);
        self.chain(e, e)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        self.chain(Real::ln(self.value), 1.0 / self.value)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        self.chain(Real::sin(self.value), Real::cos(self.value))
    }
    #[inline(always)]
    fn cos(self) -> Self {
        self.chain(Real::cos(self.value), -Real::sin(self.value))
    }
    #[inline(always)]
    fn tan(self) -> Self {
        let t = Real::tan(self.value);
        self.chain(t, 1.0 + t * t)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        self.chain(
            Real::atan(self.value),
            1.0 / (1.0 + self.value * self.value),
        )
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        // d atan2(y, x) = (x·dy − y·dx) / (x² + y²)
        let (y, xv) = (self.value, x.value);
        let r2 = xv * xv + y * y;
        Dual {
            value: Real::atan2(y, xv),
            derivatives: each_pair(self.derivatives, &x.derivatives, |d, dx| {
                (xv * d - y * dx) / r2
            }),
        }
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        let t = Real::tanh(self.value);
        self.chain(t, 1.0 - t * t)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        let s = Real::sqrt(self.value);
        self.chain(s, 0.5 / s)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        // The derivative of |x| at 0 is taken as 0, as JAX and PyTorch do.
        let sign = if self.value > 0.0 {
            1.0
        } else if self.value < 0.0 {
            -1.0
        } else {
            0.0
        };
        self.chain(Real::abs(self.value), sign)
    }
    #[inline(always)]
    fn powf(self, p: f64) -> Self {
        let value = Real::powf(self.value, p);
        self.chain(value, p * Real::powf(self.value, p - 1.0))
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
