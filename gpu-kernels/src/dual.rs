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
    /// `self·weight`, but 0 where `self` is 0: a direction along which an argument does not
    /// move takes nothing from it, even where its weight is infinite or NaN (`ln x` at `x ≤ 0`
    /// in the exponent's part of `x^p`).
    fn scale_nonzero(self, weight: Self) -> Self;
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
    #[inline(always)]
    fn scale_nonzero(self, weight: Self) -> Self {
        if self == 0.0 { 0.0 } else { self * weight }
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
    #[inline(always)]
    fn scale_nonzero(self, weight: Self) -> Self {
        let mut out = self.0;
        for (o, &w) in out.iter_mut().zip(weight.0.iter()) {
            *o = o.scale_nonzero(w);
        }
        Lanes(out)
    }
}

/// A value and its derivatives along `N` directions, in numbers `S` (see `DualScalar`).
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
/// stack, where these vectorize.
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

/// `erf'(x) = 2/√π · e^(−x²)`.
#[inline(always)]
pub(crate) fn erf_slope<S: DualScalar>(x: S) -> S {
    (-(x * x)).exp() * core::f64::consts::FRAC_2_SQRT_PI
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
        // (then every lane is a call).
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
    fn exp_m1(self) -> Self {
        // The slope is eˣ itself: `exp_m1(x) + 1` would be 0 below x ≈ −37.
        self.chain(self.value.exp_m1(), self.value.exp())
    }
    #[inline(always)]
    fn ln(self) -> Self {
        self.chain(self.value.ln(), S::from_f64(1.0) / self.value)
    }
    #[inline(always)]
    fn ln_1p(self) -> Self {
        self.chain(self.value.ln_1p(), S::from_f64(1.0) / (self.value + 1.0))
    }
    #[inline(always)]
    fn sin(self) -> Self {
        let (sin, cos) = self.value.sin_cos();
        self.chain(sin, cos)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        let (sin, cos) = self.value.sin_cos();
        self.chain(cos, -sin)
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
    fn erf(self) -> Self {
        self.chain(self.value.erf(), erf_slope(self.value))
    }
    #[inline(always)]
    fn erfc(self) -> Self {
        self.chain(self.value.erfc(), -erf_slope(self.value))
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        let s = self.value.sqrt();
        self.chain(s, S::from_f64(0.5) / s)
    }
    #[inline(always)]
    fn cbrt(self) -> Self {
        let c = self.value.cbrt();
        self.chain(c, S::from_f64(1.0) / (c * c * 3.0))
    }
    #[inline(always)]
    fn hypot(self, other: Self) -> Self {
        // d√(x² + y²) = (x·dx + y·dy) / h, with x/h and y/h formed first: no overflow in x·dx.
        let h = self.value.hypot(other.value);
        let (sx, sy) = (self.value / h, other.value / h);
        Dual {
            value: h,
            derivatives: each_pair(self.derivatives, &other.derivatives, |dx, dy| {
                sx * dx + sy * dy
            }),
        }
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
    /// `d(x^p) = p·x^(p−1)·dx + x^p·ln(x)·dp`, each part only along the directions its argument
    /// moves in (see `DualScalar::scale_nonzero`), and the `ln` part 0 where `x^p` is: a
    /// constant exponent gives [`powf`](Real::powf)'s derivative, with no NaN at `x ≤ 0`.
    #[inline(always)]
    fn pow(self, p: Self) -> Self {
        let (x, q) = (self.value, p.value);
        let value = x.pow(q);
        let base_slope = x.pow(q - 1.0) * q;
        let exponent_slope = value.scale_nonzero(x.ln());
        Dual {
            value,
            derivatives: each_pair(self.derivatives, &p.derivatives, |dx, dp| {
                dx.scale_nonzero(base_slope) + dp.scale_nonzero(exponent_slope)
            }),
        }
    }
    /// The larger picked lane by lane (the default picks by lane 0): the value is `S`'s, and
    /// `d ln(eᵃ + eᵇ) = e^(a − l)·da + e^(b − l)·db`.
    #[inline(always)]
    fn log_sum_exp(self, other: Self) -> Self {
        let value = self.value.log_sum_exp(other.value);
        let (wa, wb) = ((self.value - value).exp(), (other.value - value).exp());
        Dual {
            value,
            derivatives: each_pair(self.derivatives, &other.derivatives, |da, db| {
                da.scale_nonzero(wa) + db.scale_nonzero(wb)
            }),
        }
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

    /// `f` on duals seeding both arguments against central differences of `g` in each.
    fn check2(
        f: impl Fn(Num<Dual<2>>, Num<Dual<2>>) -> Num<Dual<2>>,
        g: impl Fn(f64, f64) -> f64,
        a: f64,
        b: f64,
    ) {
        let dual = f(Num(Dual::variable(a, 0)), Num(Dual::variable(b, 1))).0;
        assert_eq!(dual.value.to_bits(), g(a, b).to_bits(), "value at {a}, {b}");
        let (ha, hb) = (1e-6 * a.abs().max(1.0), 1e-6 * b.abs().max(1.0));
        let numeric = [
            (g(a + ha, b) - g(a - ha, b)) / (2.0 * ha),
            (g(a, b + hb) - g(a, b - hb)) / (2.0 * hb),
        ];
        for (d, n) in dual.derivatives.iter().zip(numeric) {
            assert!(
                (d - n).abs() <= 1e-7 * n.abs().max(1.0),
                "derivative at {a}, {b}: {:?} vs {numeric:?}",
                dual.derivatives
            );
        }
    }

    #[test]
    fn every_function_has_its_derivative() {
        for x in [0.3, 1.7, -0.8, -6.0, 12.0] {
            check(|v| v.exp(), <f64 as Real>::exp, x);
            check(|v| v.exp_m1(), <f64 as Real>::exp_m1, x);
            check(|v| v.sin(), <f64 as Real>::sin, x);
            check(|v| v.cos(), <f64 as Real>::cos, x);
            check(|v| v.tan(), <f64 as Real>::tan, x);
            check(|v| v.atan(), <f64 as Real>::atan, x);
            check(|v| v.tanh(), <f64 as Real>::tanh, x);
            check(|v| v.erf(), <f64 as Real>::erf, x);
            check(|v| v.erfc(), <f64 as Real>::erfc, x);
            check(|v| v.cbrt(), <f64 as Real>::cbrt, x);
            check(|v| v.abs(), <f64 as Real>::abs, x);
            check(|v| v.sq(), <f64 as Real>::sq, x);
            check(|v| v.powi(-3), |v| Real::powi(v, -3), x);
            check(|v| v.gaussian(), <f64 as Real>::gaussian, x);
            check(|v| v.softplus(), <f64 as Real>::softplus, x);
            check(|v| v.sigmoid(), <f64 as Real>::sigmoid, x);
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
            check(
                |v| Num::log_sum_exp_of(&[v, v * 2.0 - 1.0, Num::constant(0.5)]),
                |v| f64::log_sum_exp_of(&[v, v * 2.0 - 1.0, 0.5]),
                x,
            );
        }
        for x in [0.3, 1.7, 25.0] {
            check(|v| v.ln(), <f64 as Real>::ln, x);
            check(|v| v.ln_1p(), <f64 as Real>::ln_1p, x);
            check(|v| v.sqrt(), <f64 as Real>::sqrt, x);
            check(|v| v.powf(2.5), |v| Real::powf(v, 2.5), x);
        }
        for (a, b) in [(0.3, 1.7), (2.5, -0.6), (1.2, 0.0), (9.0, 0.5)] {
            check2(|x, p| x.powf(p), Real::pow, a, b);
            check2(|x, y| x.hypot(y), Real::hypot, a, b);
            check2(|x, y| x.hypot(y), Real::hypot, -b, a);
            check2(|x, y| x.log_sum_exp(y), Real::log_sum_exp, a, b);
            check2(|x, y| x.log_sum_exp(y), Real::log_sum_exp, b * 40.0, a);
            check2(|x, y| x.atan2(y), Real::atan2, a, b);
        }
        // softplus and sigmoid at 0, where their branch-free forms meet: ½ and ¼.
        let at_zero = |f: fn(Num<Dual<1>>) -> Num<Dual<1>>| f(Num(Dual::variable(0.0, 0))).0;
        assert_eq!(at_zero(Num::softplus).derivatives, [0.5]);
        assert_eq!(at_zero(Num::sigmoid).derivatives, [0.25]);
        // Far out, where e^(−x) overflows, sigmoid's derivative is still a number.
        assert_eq!(at_zero(|v| (v - 800.0).sigmoid()).derivatives, [0.0]);
        assert_eq!(at_zero(|v| (v + 800.0).sigmoid()).derivatives, [0.0]);
    }

    /// `x^p` with a constant `p` at `x ≤ 0` has `powf`'s derivative and no NaN from `ln x`;
    /// along a moving `p` only, at `x = 0`, its derivative is 0.
    #[test]
    fn a_constant_exponent_takes_no_log() {
        let power = |x: f64, p: f64| Num(Dual::<1>::variable(x, 0)).powf(Num::constant(p)).0;
        assert_eq!(power(-2.0, 3.0).value, -8.0);
        assert_eq!(power(-2.0, 3.0).derivatives, [12.0]);
        assert_eq!(power(0.0, 2.5).derivatives, [0.0]);
        for (x, p) in [(0.7, 2.5), (-1.5, 2.0), (3.0, -0.5)] {
            let constant = Num(Dual::<1>::variable(x, 0)).powf(p).0;
            assert_eq!(power(x, p), constant);
        }
        let moving_exponent = Num(Dual::<1>::constant(0.0))
            .powf(Num(Dual::variable(1.5, 0)))
            .0;
        assert_eq!(moving_exponent.value, 0.0);
        assert_eq!(moving_exponent.derivatives, [0.0]);
    }

    /// A dual over lanes holds, in each lane, the bits the `f64` dual would: for functions
    /// that choose by sign or by the larger argument too, with lanes that choose differently.
    #[test]
    fn duals_over_lanes_are_f64_duals_lane_by_lane() {
        type Lanes4 = Lanes<4>;
        fn term<S: DualScalar>(x: Num<Dual<2, S>>, y: Num<Dual<2, S>>) -> Num<Dual<2, S>> {
            x.softplus() * y.sigmoid()
                + x.log_sum_exp(y)
                + Num::log_sum_exp_of(&[x, y * 2.0, x - y])
                + x.abs().powf(y)
                + x.hypot(y)
                + x.erf() * y.erfc()
                + x.exp_m1() / y.ln_1p().sq()
                + x.cbrt()
        }
        let (xs, ys) = ([0.5, -1.25, 3.0, -0.2], [1.5, 0.25, -0.5, 2.0]);
        let seed = |v: [f64; 4], lane: usize| {
            let mut derivatives = [Lanes4::splat(0.0); 2];
            derivatives[lane] = Lanes4::splat(1.0);
            Num(Dual {
                value: Lanes(v),
                derivatives,
            })
        };
        let lanes = term(seed(xs, 0), seed(ys, 1)).0;
        for l in 0..4 {
            let one = term(
                Num(Dual::<2>::variable(xs[l], 0)),
                Num(Dual::<2>::variable(ys[l], 1)),
            )
            .0;
            assert_eq!(lanes.value.0[l].to_bits(), one.value.to_bits(), "lane {l}");
            for (d, e) in lanes.derivatives.iter().zip(one.derivatives) {
                assert_eq!(d.0[l].to_bits(), e.to_bits(), "lane {l}");
            }
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
