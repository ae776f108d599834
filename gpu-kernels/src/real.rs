//! The numbers term functions compute with.
//!
//! A term is written once, generic over `R: Real`, and computes with [`Num<R>`]: numbers that
//! mix freely with `f64` constants on either side (`2.0 - x`, `x * 3.0`, `t / x`) and have the
//! elementary functions as methods (`x.exp()`, `x.powf(2.5)`, `y.atan2(x)`). `R` is what each
//! number carries, chosen by whoever evaluates the term: a plain `f64` for a value, four
//! [`Lanes`](crate::Lanes) for the CPU's batched finite differences. A term never names it.
//!
//! Constants from data are plain `f64`; with [`Real`] in scope (the prelude brings it) they have
//! the same methods (`t.exp()`, `t.sin()`), computed by the same code as `Num`'s, on the CPU and
//! in the PTX alike.

use core::ops::{Add, Div, Mul, Neg, Sub};

/// What a [`Num`] is made of: arithmetic and the elementary functions. Implemented by `f64`,
/// [`Lanes`](crate::Lanes) and [`Dual`](crate::Dual); term code only ever writes `R: Real`.
///
/// The `f64` implementation calls the same code on every target (this crate's
/// [`math`](crate::math) for `exp`, `libm` for the rest), so a term evaluates to the same bits
/// on the CPU as in the PTX (which has no FMA contraction either).
pub trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + Add<f64, Output = Self>
    + Sub<f64, Output = Self>
    + Mul<f64, Output = Self>
    + Div<f64, Output = Self>
{
    /// A constant.
    fn from_f64(value: f64) -> Self;
    /// The real value, for branches (e.g. "if x₁ < 0"). Never differentiate through it.
    fn value(self) -> f64;
    /// `e^self`.
    fn exp(self) -> Self;
    /// The natural logarithm.
    fn ln(self) -> Self;
    /// The sine, in radians.
    fn sin(self) -> Self;
    /// The cosine, in radians.
    fn cos(self) -> Self;
    /// The tangent, in radians.
    fn tan(self) -> Self;
    /// The arctangent, in `[−π/2, π/2]`.
    fn atan(self) -> Self;
    /// The angle of the point `(x, self)`, in `(−π, π]`.
    fn atan2(self, x: Self) -> Self;
    /// The hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// The absolute value (differentiated as 0 at 0).
    fn abs(self) -> Self;
    /// `self^p` for a constant exponent.
    fn powf(self, p: f64) -> Self;

    /// A number whose value is `value` and whose derivative lanes are `lane(l)`, for a type
    /// that carries derivative lanes (a dual); `None` for the others. It lets a linear
    /// combination of seeded variables be formed directly (see `Vars::dot`): the derivative of
    /// `Σ wᵢ·xᵢ` along the seed of `xⱼ` is `wⱼ`, with no arithmetic on the lanes.
    #[inline(always)]
    fn with_lanes(value: f64, lane: impl Fn(usize) -> f64) -> Option<Self> {
        let _ = (value, lane);
        None
    }
}

impl Real for f64 {
    #[inline(always)]
    fn from_f64(value: f64) -> Self {
        value
    }
    #[inline(always)]
    fn value(self) -> f64 {
        self
    }
    #[inline(always)]
    fn exp(self) -> Self {
        crate::math::exp(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        libm::log(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        libm::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        libm::cos(self)
    }
    #[inline(always)]
    fn tan(self) -> Self {
        libm::tan(self)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        libm::atan(self)
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        libm::atan2(self, x)
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        libm::tanh(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        libm::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        libm::fabs(self)
    }
    #[inline(always)]
    fn powf(self, p: f64) -> Self {
        libm::pow(self, p)
    }
}

/// A number in a term's computation. See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(transparent)]
pub struct Num<R>(pub R);

impl<R: Real> Num<R> {
    /// A constant.
    #[inline(always)]
    pub fn constant(value: f64) -> Self {
        Num(R::from_f64(value))
    }

    /// The real value, for branches. Never differentiate through it.
    #[inline(always)]
    pub fn value(self) -> f64 {
        self.0.value()
    }

    /// `self²`.
    #[inline(always)]
    pub fn sq(self) -> Self {
        self * self
    }

    /// `self^n` by repeated squaring: exact for the small powers objectives use.
    #[inline(always)]
    pub fn powi(self, n: i32) -> Self {
        let mut base = if n < 0 { 1.0 / self } else { self };
        let mut e = n.unsigned_abs();
        let mut acc = Num::constant(1.0);
        while e > 0 {
            if e & 1 == 1 {
                acc = acc * base;
            }
            base = base * base;
            e >>= 1;
        }
        acc
    }

    /// The smaller of the two by value (its derivatives come with it).
    #[inline(always)]
    pub fn min(self, other: Self) -> Self {
        if other.value() < self.value() {
            other
        } else {
            self
        }
    }

    /// The larger of the two by value (its derivatives come with it).
    #[inline(always)]
    pub fn max(self, other: Self) -> Self {
        if other.value() > self.value() {
            other
        } else {
            self
        }
    }

    /// The angle of the point `(x, self)`, in `(−π, π]`.
    #[inline(always)]
    pub fn atan2(self, x: Self) -> Self {
        Num(self.0.atan2(x.0))
    }

    /// `self^p` for a constant exponent.
    #[inline(always)]
    pub fn powf(self, p: f64) -> Self {
        Num(self.0.powf(p))
    }
}

/// The one-argument elementary functions, as methods of `Num`.
macro_rules! num_functions {
    ($($(#[$doc:meta])* $name:ident),*) => {
        impl<R: Real> Num<R> {
            $(
                $(#[$doc])*
                #[inline(always)]
                pub fn $name(self) -> Self {
                    Num(self.0.$name())
                }
            )*
        }
    };
}

num_functions!(
    /// `e^self`.
    exp,
    /// The natural logarithm.
    ln,
    /// The sine, in radians.
    sin,
    /// The cosine, in radians.
    cos,
    /// The tangent, in radians.
    tan,
    /// The arctangent, in `[−π/2, π/2]`.
    atan,
    /// The hyperbolic tangent.
    tanh,
    /// The square root.
    sqrt,
    /// The absolute value (differentiated as 0 at 0).
    abs
);

/// `Num ∘ Num`, `Num ∘ f64` and `f64 ∘ Num` for one operator. A constant on the left becomes a
/// `Num` first (`c − x` is `Num::constant(c) − x`, exactly).
macro_rules! num_operator {
    ($($op:ident $method:ident),*) => {$(
        impl<R: Real> $op for Num<R> {
            type Output = Num<R>;
            #[inline(always)]
            fn $method(self, rhs: Num<R>) -> Num<R> {
                Num(self.0.$method(rhs.0))
            }
        }
        impl<R: Real> $op<f64> for Num<R> {
            type Output = Num<R>;
            #[inline(always)]
            fn $method(self, rhs: f64) -> Num<R> {
                Num(self.0.$method(rhs))
            }
        }
        impl<R: Real> $op<Num<R>> for f64 {
            type Output = Num<R>;
            #[inline(always)]
            fn $method(self, rhs: Num<R>) -> Num<R> {
                Num(R::from_f64(self).$method(rhs.0))
            }
        }
    )*};
}

num_operator!(Add add, Sub sub, Mul mul, Div div);

impl<R: Real> Neg for Num<R> {
    type Output = Num<R>;
    #[inline(always)]
    fn neg(self) -> Num<R> {
        Num(-self.0)
    }
}

impl<R: Real> From<f64> for Num<R> {
    #[inline(always)]
    fn from(value: f64) -> Self {
        Num::constant(value)
    }
}

impl<R: Real> core::iter::Sum for Num<R> {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Num::constant(0.0), |a, b| a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::{Num, Real};

    #[test]
    fn powi_matches_repeated_multiplication() {
        let x = Num(1.3_f64);
        assert_eq!(x.powi(0).0, 1.0);
        assert_eq!(x.powi(1).0, 1.3);
        assert_eq!(x.powi(3).0, 1.3 * 1.3 * 1.3);
        assert_eq!(Num(2.0_f64).powi(-2).0, 0.25);
    }

    #[test]
    fn constants_mix_on_either_side() {
        let x = Num(0.25_f64);
        assert_eq!((2.0 - x).0, 1.75);
        assert_eq!((x - 2.0).0, -1.75);
        assert_eq!((3.0 * x).0, (x * 3.0).0);
        assert_eq!((1.0 / x).0, 4.0);
        assert_eq!((x + 1.0).0, (1.0 + x).0);
        assert_eq!((-x).0, -0.25);
    }

    #[test]
    fn functions_are_libm_s_on_every_target() {
        let x = Num(0.7_f64);
        assert_eq!(x.tan().0, libm::tan(0.7));
        assert_eq!(x.tanh().0, libm::tanh(0.7));
        assert_eq!(x.atan2(Num(-0.2)).0, libm::atan2(0.7, -0.2));
        assert_eq!(x.powf(2.5).0, libm::pow(0.7, 2.5));
        assert_eq!(Num(-3.0_f64).abs().0, 3.0);
        assert_eq!(Num(2.0_f64).min(Num(-1.0)).0, -1.0);
        assert_eq!(Num(2.0_f64).max(Num(-1.0)).0, 2.0);
        // Data constants have the same functions through `Real`.
        assert_eq!(Real::exp(0.5_f64), crate::math::exp(0.5));
    }
}
