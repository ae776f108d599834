//! [`Lanes`]: a [`Real`] that carries several values, so one call of a term's `eval` evaluates
//! it at several points. The CPU executor uses it two ways:
//! - dense windows, where a gradient evaluates each term once per variable: four perturbed
//!   variables per call ([`LANES`]), each elementary function computed once when its argument is
//!   the same in every lane (as `exp(−θ₁t)` is whenever the perturbed variables are not `θ₁`);
//! - separable and disjoint banded windows whose terms need nothing of their own
//!   ([`TERM_LANES`] terms per call, each lane one term's window): values run on
//!   lanes, and exact gradients on [`Dual`](crate::Dual)s over lanes, so that `exp` and the
//!   arithmetic take SIMD registers across terms.
//!
//! Every lane computes what the same code computes on `f64`, to the bit, given the same
//! variables (a dense window's perturbed lanes hold the moved variable in place, where the
//! one-point path moves it through `Vars::with`: see ARCHITECTURE.md on finite differences).
//!
//! Only terms that set [`Term::EVAL_IN_LANES`](crate::Term::EVAL_IN_LANES) are evaluated so:
//! [`Real::value`] of lanes is lane 0's value, so a term that branches on a variable would make
//! every lane take lane 0's branch.

use crate::math;
use crate::real::Real;
use core::ops::{Add, Div, Mul, Neg, Sub};

/// How many perturbed points a dense window's [`Lanes`] holds.
pub const LANES: usize = 4;

/// How many terms one evaluation takes side by side, one per lane: eight `f64`, one AVX-512
/// register (two AVX2 ones). At four, the compiler left `exp` scalar.
pub const TERM_LANES: usize = 8;

/// `L` values of `f64`, one per point being evaluated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lanes<const L: usize = LANES>(pub [f64; L]);

impl<const L: usize> Lanes<L> {
    /// The same value in every lane.
    #[inline(always)]
    pub const fn splat(value: f64) -> Self {
        Lanes([value; L])
    }

    #[inline(always)]
    fn map(self, f: impl Fn(f64) -> f64) -> Self {
        let mut out = self.0;
        for o in out.iter_mut() {
            *o = f(*o);
        }
        Lanes(out)
    }

    #[inline(always)]
    fn zip(self, other: Self, f: impl Fn(f64, f64) -> f64) -> Self {
        let mut out = self.0;
        for (o, &b) in out.iter_mut().zip(other.0.iter()) {
            *o = f(*o, b);
        }
        Lanes(out)
    }

    /// Whether every lane holds the same bits.
    #[inline(always)]
    fn uniform(&self) -> bool {
        let first = self.0[0].to_bits();
        self.0.iter().all(|v| v.to_bits() == first)
    }

    /// `f` in every lane, computed once when all lanes hold the same bits (same input, same
    /// output, so nothing changes but the cost).
    #[inline(always)]
    fn map_uniform(self, f: impl Fn(f64) -> f64) -> Self {
        if self.uniform() {
            Lanes::splat(f(self.0[0]))
        } else {
            self.map(f)
        }
    }
}

macro_rules! lane_ops {
    ($($op:ident $method:ident $symbol:tt),*) => {$(
        impl<const L: usize> $op for Lanes<L> {
            type Output = Self;
            #[inline(always)]
            fn $method(self, rhs: Self) -> Self {
                self.zip(rhs, |a, b| a $symbol b)
            }
        }
        impl<const L: usize> $op<f64> for Lanes<L> {
            type Output = Self;
            #[inline(always)]
            fn $method(self, rhs: f64) -> Self {
                self.map(|a| a $symbol rhs)
            }
        }
    )*};
}

lane_ops!(Add add +, Sub sub -, Mul mul *, Div div /);

impl<const L: usize> Neg for Lanes<L> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        self.map(|a| -a)
    }
}

impl<const L: usize> Real for Lanes<L> {
    #[inline(always)]
    fn from_f64(value: f64) -> Self {
        Lanes::splat(value)
    }
    /// Lane 0: see the module docs.
    #[inline(always)]
    fn value(self) -> f64 {
        self.0[0]
    }
    /// Once when the lanes agree; else in every lane at once (`math::exp_lanes`, which the
    /// compiler vectorizes where it would leave `map` scalar).
    #[inline(always)]
    fn exp(self) -> Self {
        if self.uniform() {
            Lanes::splat(Real::exp(self.0[0]))
        } else {
            Lanes(math::exp_lanes(self.0))
        }
    }
    #[inline(always)]
    fn exp_m1(self) -> Self {
        self.map_uniform(Real::exp_m1)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        self.map_uniform(Real::ln)
    }
    #[inline(always)]
    fn ln_1p(self) -> Self {
        self.map_uniform(Real::ln_1p)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        self.map_uniform(Real::sin)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        self.map_uniform(Real::cos)
    }
    #[inline(always)]
    fn tan(self) -> Self {
        self.map_uniform(Real::tan)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        self.map_uniform(Real::atan)
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        self.zip(x, Real::atan2)
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        self.map_uniform(Real::tanh)
    }
    #[inline(always)]
    fn erf(self) -> Self {
        self.map_uniform(Real::erf)
    }
    #[inline(always)]
    fn erfc(self) -> Self {
        self.map_uniform(Real::erfc)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        self.map_uniform(Real::sqrt)
    }
    #[inline(always)]
    fn cbrt(self) -> Self {
        self.map_uniform(Real::cbrt)
    }
    #[inline(always)]
    fn hypot(self, other: Self) -> Self {
        self.zip(other, Real::hypot)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self.map(Real::abs)
    }
    #[inline(always)]
    fn powf(self, p: f64) -> Self {
        self.map_uniform(|v| Real::powf(v, p))
    }
    #[inline(always)]
    fn pow(self, p: Self) -> Self {
        self.zip(p, Real::pow)
    }
    /// Lane by lane: the default picks the larger by lane 0.
    #[inline(always)]
    fn log_sum_exp(self, other: Self) -> Self {
        self.zip(other, Real::log_sum_exp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_compute_what_scalars_compute() {
        let x = Lanes([0.5, -1.25, 3.0, 1e-3]);
        let y = ((x * x + 2.0).exp() - x / 3.0).sqrt() + x.tanh() + x.abs().powf(1.5);
        for (lane, &xi) in y.0.iter().zip(&x.0) {
            let scalar: f64 = Real::sqrt(Real::exp(xi * xi + 2.0) - xi / 3.0)
                + Real::tanh(xi)
                + Real::powf(Real::abs(xi), 1.5);
            assert_eq!(lane.to_bits(), scalar.to_bits());
        }
        assert_eq!(
            Lanes::<4>::splat(1.0).exp(),
            Lanes::splat(core::f64::consts::E)
        );
    }

    /// Every function, lane by lane, is the `f64` function to the bit: lanes of either sign
    /// and order (so that a function choosing by sign or by the larger argument must choose in
    /// each lane), and uniform lanes (the computed-once path).
    #[test]
    fn every_function_is_the_scalar_one_in_each_lane() {
        // Each function once, as a pointer on f64 and on lanes.
        macro_rules! on_both {
            ($($f:expr),* $(,)?) => {
                ([$($f as fn(f64) -> f64),*], [$($f as fn(Lanes<4>) -> Lanes<4>),*])
            };
        }
        let (unary, on_lanes) = on_both![
            Real::exp,
            Real::exp_m1,
            Real::ln_1p,
            Real::sin,
            Real::cos,
            Real::tan,
            Real::atan,
            Real::tanh,
            Real::erf,
            Real::erfc,
            Real::cbrt,
            Real::abs,
            Real::sq,
            Real::gaussian,
            Real::softplus,
            Real::sigmoid,
            |v| Real::powi(v, -3),
            |v| Real::powf(v, 2.0),
        ];
        let binary: [fn(f64, f64) -> f64; 4] =
            [Real::atan2, Real::hypot, Real::pow, Real::log_sum_exp];
        let binary_lanes: [fn(Lanes<4>, Lanes<4>) -> Lanes<4>; 4] =
            [Real::atan2, Real::hypot, Real::pow, Real::log_sum_exp];
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan();
        for x in [Lanes([0.5, -1.25, 30.0, -40.0]), Lanes::splat(-0.75)] {
            for (f, g) in unary.iter().zip(&on_lanes) {
                for (lane, &xi) in g(x).0.iter().zip(&x.0) {
                    assert!(same(*lane, f(xi)), "{lane} vs {} at {xi}", f(xi));
                }
            }
            let y = Lanes([1.5, -2.0, 29.0, 0.25]);
            for (f, g) in binary.iter().zip(&binary_lanes) {
                for ((lane, &xi), &yi) in g(x, y).0.iter().zip(&x.0).zip(&y.0) {
                    assert!(
                        same(*lane, f(xi, yi)),
                        "{lane} vs {} at {xi}, {yi}",
                        f(xi, yi)
                    );
                }
            }
            let slice = Lanes::log_sum_exp_of(&[x, y, x * 0.5]);
            for (l, lane) in slice.0.iter().enumerate() {
                let scalar = f64::log_sum_exp_of(&[x.0[l], y.0[l], x.0[l] * 0.5]);
                assert_eq!(lane.to_bits(), scalar.to_bits());
            }
        }
    }
}
